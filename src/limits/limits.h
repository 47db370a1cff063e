/* limits.h — resource limits on the job (--limit, --measure-only).
 *
 * limits.c parses the specs ("memory=4G,wall=2h", repeatable; last value
 * of a name wins); options.c calls limits_parse() on every --limit so that
 * bad syntax is exit 125 before the job starts.  limits_source.c is the
 * "limits" source (source.h): it checks every sample against the tree and
 * the cgroup figures, has the kernel enforce memory and procs through the
 * job's cgroup where jobscope made one, emits a "jobscope.limit" event per
 * limit exceeded and asks the monitor to kill the whole tree.
 * See docs/cgroups.md. */
#ifndef JOBSCOPE_LIMITS_H
#define JOBSCOPE_LIMITS_H

#include <stddef.h>

#define EV_LIMIT "jobscope.limit"

enum limit_kind { LIM_MEMORY, LIM_RSS, LIM_WALL, LIM_CPU, LIM_PROCS, LIM_DISK_WRITE, LIM_N };

typedef struct js_limits {
    unsigned set;      /* bit (1 << LIM_*) */
    double max[LIM_N]; /* bytes, seconds or a count */
} js_limits;

/* Adds the limits of one spec to *l.  0, or -1 with a one-line message
 * (without the "jobscope: " prefix) in err. */
int limits_parse(const char *spec, js_limits *l, char *err, size_t errlen);

const char *limits_name(enum limit_kind k); /* "memory", "disk-write", ... */
const char *limits_unit(enum limit_kind k); /* "bytes", "seconds", "processes" */

/* Units alone, exported for tests: "4G" -> 4294967296, "1h30m" -> 5400. */
int limits_parse_bytes(const char *s, double *out);
int limits_parse_seconds(const char *s, double *out);

/* The limits source's config (its part of monitor_config): the --limit
 * specs, each already checked by limits_parse(). */
typedef struct limits_config {
    const char *const *specs;
    int nspecs;
    int measure_only; /* report, never kill */
} limits_config;

/* The "limits" source (limits_source.c), listed in src/monitor/monitor.c. */
struct source_ops;
extern const struct source_ops limits_source_ops;

#endif
