/* source.h — optional sources of numbers beside /proc (GPUs, cgroups,
 * custom metrics, limits): one small interface, one folder each.
 *
 * The monitor loop (cli/monitor.c) calls every enabled source at the same
 * points of the job's life.  A source may run its own threads and emit its
 * own events through ctx->em; on the sampler thread it may add fields to the
 * kickstart.inv.online event and to the end-of-job record.  A source that
 * fails says so once (verbose) and stays out of the way: it never harms the
 * job.  To add one: write its ops and its config struct in its folder and
 * list both in src/monitor/monitor.c's table (docs/hacking.md).
 *
 * A source sees only its own config struct (given to open()) and this
 * context: no command-line options, no globals.  What two sources share
 * (the cgroup that limits reads) hangs off the context, one per monitor. */
#ifndef JOBSCOPE_SOURCE_H
#define JOBSCOPE_SOURCE_H

#include <spawn.h>
#include <sys/types.h>
#include "event/event.h"
#include "proc/proctree.h"

struct cgsrc;
struct mset;

typedef struct monitor_ctx {
    emitter *em;
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
    struct mset *sample;  /* the sample being built: sources' hooks add their values */
    /* A source that must stop the job (limits) calls this: the monitor sends
     * SIGTERM to the whole tree, SIGKILL after the grace period. */
    void (*request_kill)(struct monitor_ctx *ctx, const char *reason);
    void *monitor; /* private to src/monitor/monitor.c */
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
     * kickstart.inv.online event is being built: add fields to it. */
    void (*sample)(source *s, monitor_ctx *ctx, const tree_sample *ts, jbuf *ev);
    /* The job ended: stop threads, emit final events (e.g. stats.max). */
    void (*stop)(source *s, monitor_ctx *ctx);
    /* Add fields (usually one object) to the end-of-job record. */
    void (*record)(source *s, monitor_ctx *ctx, jbuf *rec);
    void (*close)(source *s);
} source_ops;

struct source {
    const source_ops *ops;
};

#endif
