/* monitor.h — the engine: spawn or find the job, sample it every interval,
 * forward signals, reap, and write the end-of-job record.
 *
 * No command line here: cli/run.c turns `jobscope run/attach` options into
 * a monitor_config; any other front end (a test, the server's agent) can do
 * the same.  Each source gets only its own part of the config.
 *
 *   monitor *m = monitor_new(&cfg);     NULL: one line said why (exit 125)
 *   int status = monitor_run(m);        the job's exit status; frees m
 *
 * The status is the job's (128+N if killed by signal N) or 125/126/127 for
 * jobscope's own errors (util/common.h). */
#ifndef JOBSCOPE_MONITOR_H
#define JOBSCOPE_MONITOR_H

#include <sys/resource.h>
#include <sys/types.h>
#include "../event/json.h"
#include "../model/metric.h"
#include "../proc/proctree.h"
#include "../sink/sink.h"
#include "../cgroup/cgroup.h"
#include "../gpu/gpu.h"
#include "../limits/limits.h"
#include "../metrics/listener.h"

#define MONITOR_MAX_OUTPUTS 16

/* What a run did, for a front end that writes a record of its own
 * (src/kickstart): `pid` is stored as soon as the job is spawned (another
 * thread may read it with __atomic_load_n to signal the job), the rest
 * when monitor_run returns. */
typedef struct monitor_result {
    pid_t pid;               /* the job's main process; 0 until spawned */
    int spawn_error;         /* errno of a spawn that failed, else 0 */
    int status;              /* its wait status */
    struct rusage ru;        /* its resource usage (wait4) */
    double start_ts, end_ts; /* epoch seconds */
    tree_sample last;        /* the tree's final sample */
    uint64_t nsamples;
} monitor_result;

typedef struct monitor_config {
    int attach;         /* 0: run, 1: attach */
    pid_t pid;          /* attach: the pid to watch */
    int exit_status_fd; /* attach: its wait status is written here by its parent (0: none, else >=
                           3) */
    char **argv;        /* run: the command and its arguments */
    double interval;    /* seconds */
    const char *outputs[MONITOR_MAX_OUTPUTS]; /* none: JOB_ID.jsonl */
    int noutputs;
    /* Outputs the caller opened itself (a front end's own, a test's), after
     * those of `outputs`; the monitor closes them with the others. */
    sink *sinks[MONITOR_MAX_OUTPUTS];
    int nsinks;
    sink_options sink;  /* passed to every sink */
    const char *job_id; /* NULL: from the environment */
    char *const *tags;  /* "KEY=VALUE" */
    int ntags;
    const char *summary_path;
    int quiet, verbose;
    int wait_all;          /* run: wait for every descendant */
    double flush_timeout;  /* seconds, at the end */
    double flush_interval; /* file outputs: the most a line waits to be written (s) */
    double kill_grace;     /* seconds between SIGTERM and SIGKILL */
    int online_off;        /* -m 0: no online samples (the record still comes) */
    int null_missing;      /* --null-missing: iowait null when not measured */
    int no_serve;          /* --no-serve: do not stream to a local jobscope serve */
    const char *sampler;   /* "auto" or NULL, "bpf", "procfs" (sampler.c) */
    int set_job_stdio;     /* run: the job's fds 0, 1, 2 are job_stdio[] */
    int job_stdio[3];
    monitor_result *result; /* filled for the caller; NULL: not wanted */
    /* each source's own config */
    cgroup_config cgroup;
    limits_config limits;
    gpu_source_config gpu;
    metrics_config metrics;
} monitor_config;

typedef struct monitor monitor;

/* Opens the outputs (and checks the attached pid): NULL after one line on
 * stderr when that fails.  cfg is copied; its strings must outlive m. */
monitor *monitor_new(const monitor_config *cfg);
/* Runs the job to its end; returns its exit status and frees m. */
int monitor_run(monitor *m);

#endif
