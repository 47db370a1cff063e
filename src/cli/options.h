/* options.h — the command line of `jobscope run` and `jobscope attach`.
 *
 * options_parse() fills a js_options from argv and the environment
 * (KICKSTART_MON_URL, KICKSTART_MON_INTERVAL, ...).  A bad option is a one-
 * line error on stderr and exit status 125, the convention of env(1). */
#ifndef JOBSCOPE_OPTIONS_H
#define JOBSCOPE_OPTIONS_H

#include <stdio.h>
#include <sys/types.h>
#include "../sink/sink.h"
#include "../util/common.h"
#include "../cgroup/cgroup.h"

#define JS_MAX_OUTPUTS 16
#define JS_MAX_TAGS    64
#define JS_MAX_LIMITS  32

typedef struct js_options {
    int attach;         /* 0: run, 1: attach */
    pid_t pid;          /* attach: the pid to watch */
    int exit_status_fd; /* attach: the wait status arrives here (0: none) */
    char **argv;        /* run: the command and its arguments */
    double interval;    /* seconds, >= 0.01 */
    const char *outputs[JS_MAX_OUTPUTS];
    int noutputs;
    enum sink_format format;
    const char *job_id;
    char *tags[JS_MAX_TAGS]; /* "KEY=VALUE" */
    int ntags;
    const char *summary_path;
    int quiet, verbose;
    int wait_all; /* run: wait for every descendant, not just the main process */
    double flush_timeout;
    double kill_grace; /* seconds between SIGTERM and SIGKILL (limits) */
    /* GPU monitoring (src/gpu, docs/gpu.md) */
    int gpu;                /* -G/--gpu: 1 the job's GPUs, 2 --gpu=all (every GPU) */
    int gpu_graphics_procs; /* --gpu-graphics-procs, KICKSTART_MON_GRAPHICS_PROCS */
    int gpu_proc_util;      /* --gpu-proc-util, KICKSTART_MON_GRAPHICS_UTIL */
    int gpu_pcie;           /* --gpu-pcie, KICKSTART_MON_GRAPHICS_PCIE */
    int gpu_all_procs;      /* --gpu-all-procs: list other jobs' GPU processes too */
    enum js_cgroup_mode cgroup_mode;
    const char *cgroup_path;           /* JS_CGROUP_PATH */
    const char *sampler;               /* --sampler: "auto" (NULL), "bpf", "procfs" */
    const char *limits[JS_MAX_LIMITS]; /* --limit specs, each checked by limits_parse() */
    int nlimits;
    int measure_only;  /* limits: report, never kill */
    sink_options sink; /* passed to every sink */
    /* custom metrics and payload blocks (src/metrics, docs/metrics.md) */
    int telemetry_level; /* --telemetry-level / JOBSCOPE_TELEMETRY_LEVEL; 0: off */
    int scan_output;     /* --scan-output: job's stdout/stderr through pipes */
    int strip_payloads;  /* --strip-payloads: remove blocks from that output */
    int no_serve;        /* --no-serve: do not stream to a local jobscope serve */
    /* drop-in compatibility (docs/kickstart.md, docs/events.md) */
    int online_off;       /* -m 0 / KICKSTART_MON_INTERVAL=0: no online samples */
    int null_missing;     /* --null-missing: unset annotations and iowait are null */
    int payload_panorama; /* --payload-shape panorama */
} js_options;

/* Returns 0 on success, or an exit status (0 for --help/--version). */
int options_parse(js_options *o, int attach, int argc, char **argv, int *exit_now);

void options_usage(FILE *f);

/* "64K", "10M", "1G", "4GiB" -> bytes, -1 if bad (--spool-max): util/size.h. */
long long options_parse_size(const char *s);
/* The destination URL in FILE (-o @FILE), a new string; NULL + errno. */
char *options_read_url_file(const char *path);

#endif
