/* source.h — optional sources of numbers beside /proc (GPUs, cgroups,
 * custom metrics, limits): one small interface, one folder each.
 *
 * The monitor (src/monitor/monitor.c) calls every enabled source at the
 * same points of the job's life.  A source may run its own threads and emit
 * its own events through the context it is given (ctx->emit: an mset of
 * its own, model/metric.h); on the sampler thread it adds its values to the
 * kickstart.inv.online sample and to the end-of-job record, both value
 * sets: a source writes no text of any format, the outputs encode the sets.
 * A source that fails says so once (verbose) and stays out of the way: it
 * never harms the job.  To add one: write its ops and its config struct in
 * its folder and list both in src/monitor/monitor.c's table
 * (docs/hacking.md).
 *
 * A source sees only its own config struct (given to open()) and this
 * context: no command-line options, no globals, no outputs.  What two
 * sources share (the cgroup that limits reads) hangs off the context, one
 * per monitor. */
#ifndef JOBSCOPE_SOURCE_H
#define JOBSCOPE_SOURCE_H

#include <spawn.h>
#include <sys/types.h>
#include "event/event.h"
#include "model/metric.h"
#include "proc/proctree.h"

struct cgsrc;

typedef struct monitor_ctx {
    /* Hands an event to every output of the job: stamped with the job's
     * annotations and the next sequence number (returned).  Thread-safe,
     * never blocks; ev may be reused as soon as it returns. */
    uint64_t (*emit)(struct monitor_ctx *ctx, const mset *ev);
    const annotations *ann; /* the job's (a custom metric merges their tags) */
    proctree *tree;
    pid_t root;           /* the job's main process */
    int run_mode;         /* 1: jobscope run, 0: attach */
    double interval;      /* seconds */
    double start_ts;      /* epoch seconds */
    int verbose;          /* diagnostics on stderr */
    int quiet;            /* not even warnings */
    double kill_grace;    /* seconds between SIGTERM and SIGKILL */
    pid_t attach_pid;     /* attach: the watched pid (known before open) */
    struct cgsrc *cgroup; /* this monitor's cgroup source, or NULL (cgroup/cgroup.h) */
    /* A source that must stop the job (limits) calls this: the monitor sends
     * SIGTERM to the whole tree, SIGKILL after the grace period. */
    void (*request_kill)(struct monitor_ctx *ctx, const char *reason);
    void *monitor; /* private to the monitor (src/monitor/monitor.c) */
} monitor_ctx;

typedef struct source source;

typedef struct source_ops {
    const char *name;
    /* Returns NULL when the source is not enabled by its config or not
     * available here (after one verbose diagnostic). Called before the job
     * is spawned (run) or before the first sample (attach).  config points
     * to the source's own struct in monitor_config. */
    source *(*open)(monitor_ctx *ctx, const void *config);
    /* run: just before the spawn, add file actions (pipes) and return the
     * environment the job gets (env, or a copy with additions).  NULL hook:
     * nothing to add. */
    char **(*spawn)(source *s, monitor_ctx *ctx, posix_spawn_file_actions_t *fa, char **env);
    /* After the job has been spawned/attached: start threads. */
    void (*start)(source *s, monitor_ctx *ctx);
    /* On the sampler thread, after the tree was sampled, while the
     * kickstart.inv.online event is being built: add values to it (after
     * the tree's, in the order of the source table). */
    void (*sample)(source *s, monitor_ctx *ctx, const tree_sample *ts, mset *ev);
    /* On the sampler thread, for a sample of a still job (ts->still: the
     * tree's figures of the last sample stand; docs/cgroups.md): 1 when the
     * values this source added to the last sample stand too, after doing
     * what else its sample does (checks, reads): that set then goes out
     * again with its new time, sample() is not called.  0: they may have
     * moved; sample() is called in this sample, after every source's
     * again() (what again() did must not then be done twice).  NULL:
     * sample() always is. */
    int (*again)(source *s, monitor_ctx *ctx, const tree_sample *ts);
    /* The job ended: stop threads, emit final events (e.g. stats.max). */
    void (*stop)(source *s, monitor_ctx *ctx);
    /* Add members (usually one object) to the end-of-job record. */
    void (*record)(source *s, monitor_ctx *ctx, mset *rec);
    void (*close)(source *s);
} source_ops;

struct source {
    const source_ops *ops;
};

#endif
