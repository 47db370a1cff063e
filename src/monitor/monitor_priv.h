/* monitor_priv.h — struct monitor (all of a monitored job's state; no
 * globals) and what its three files share: monitor.c runs the job and its
 * loop, monitor_auto.c makes --sampler auto's choices, monitor_record.c
 * writes the end-of-job record and the closing summary.  Nothing outside
 * src/monitor/monitor*.c includes it. */
#ifndef JOBSCOPE_MONITOR_PRIV_H
#define JOBSCOPE_MONITOR_PRIV_H

#include "monitor.h"
#include "../util/common.h"
#include "../util/log.h"
#include "../util/serve_detect.h"
#include "../event/event.h"
#include "../metrics/listener.h"
#include "../proc/alloc.h"
#include "../proc/hostinfo.h"
#include "../proc/proctree.h"
#include "../proc/reapio.h"
#include "../proc/tree_metrics.h"
#include "../source.h"
#include "../cgroup/cgroup.h"
#include "../limits/limits.h"
#include "../util/outpath.h"
#include "emitter.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Room for the sources of monitor.c's source_table (checked there). */
#define MONITOR_SOURCES 5

struct monitor {
    monitor_config opt;
    emitter em;
    proctree *tree;
    monitor_ctx ctx;
    source *sources[MONITOR_SOURCES];
    int nsources;
    int sigfd;
    sigset_t sigs; /* what sigfd reads: the loop waits for them (sigtimedwait) */
    sigset_t orig_mask;
    pid_t root;
    int root_done; /* main process reaped (run) or gone (attach) */
    int status;    /* wait status of the main process */
    struct rusage root_ru;
    double start_ts, end_ts, start_mono;
    tree_sample last;
    mset sample_set;  /* the last sample (kickstart.inv.online) in the metric model */
    int sample_whole; /* sample_set holds the last sample whole (emit_still) */
    mset ev;          /* the start event, the end record */
    mset scratch;     /* the end record's counters, from the last tree sample */
    uint64_t nsamples;
    uint64_t nstill; /* of them, samples of a still job (cgroup_source_still) */
    int last_ok;     /* the last tree sample succeeded: a still one may repeat it */
    char *cmd, *cwd, *user, *exe;
    double proc_start; /* epoch seconds the main process started (JoReMon's ClockTime) */
    int stop_signal;   /* attach: interrupted by this signal */
    int have_status;   /* attach: the wait status came on opt.exit_status_fd */
    int status_read;   /* ... and that descriptor said all it will */
    /* limits */
    char kill_reason[128];
    double kill_deadline; /* monotonic; 0 = none */
    int killed_hard;
    int summary_fd;
    jbuf summary;          /* the end record's JSON, for --summary */
    log_once sample_error; /* sampling failures, reported once */
    char *default_path;    /* JOB_ID.jsonl when no output was given */
    int flush_abort;       /* a signal ended the end-of-job flush (sink_options) */
    /* --sampler auto (sampler.c) */
    int bpf_pending; /* may still switch from procfs to BPF */
    int bpf_pinned;  /* the sampler is pinned on this node: no load to pay */
    uint64_t bpf_payback_ns;
    double sampler_switch_ts;
    int bpf_trial;             /* switched: measuring whether BPF is cheaper */
    int procfs_trial;          /* pinned: measuring whether procfs is cheaper (a small tree) */
    proctree_reader parked;    /* pinned: the BPF reader while procfs runs, kept open */
    struct auto_load *loading; /* BPF loading on a thread while procfs samples */
    uint32_t chosen_procs;     /* the tree's size when auto last chose procfs */
    sampler_cost cost_procfs, cost_bpf;
    double sampler_revert_ts;
    /* refresh_exe: the tree when the main process's link was last read */
    uint64_t exe_vm_kb;
    uint32_t exe_procs;
    double exe_checked;
    reapio reapio;       /* reaped children's I/O when their zombies are unreadable */
    double last_reap_ts; /* when jobscope last reaped a child (--wait-all's end) */
    double reap_checked; /* monotonic time of the last look for children to reap */
    alloc_info alloc;    /* what the job was given: the end record's cores (start event) */
};

const char *monitor_job_cgroup_dir(monitor *m);
void monitor_put_counters(monitor *m, mset *rec, const tree_sample *s);
void monitor_auto_switch(monitor *m);
void monitor_auto_revert(monitor *m, uint32_t procs);
void monitor_auto_keep_procfs(monitor *m);
void monitor_auto_retry_bpf(monitor *m, uint32_t procs);
void monitor_auto_end(monitor *m);
int monitor_exit_status(const monitor *m);
void monitor_emit_record(monitor *m);
void monitor_print_summary(const monitor *m, const char *events_path);
void monitor_fill_result(const monitor *m, monitor_result *r);
/* The job's process (monitor_child.c): the signals forwarded to it added to
 * set; spawning it (0, or the exit status after a line on stderr); reaping
 * what has ended of its tree; one signal from the signalfd; a limit's stop
 * (monitor_ctx.request_kill); the open-file limit raised for large trees. */
void monitor_forwarded_signals(sigset_t *set);
int monitor_spawn_job(monitor *m);
void monitor_reap_children(monitor *m);
void monitor_handle_signal(monitor *m, const struct signalfd_siginfo *si);
void monitor_request_kill(monitor_ctx *ctx, const char *reason);
void monitor_raise_fd_limit(void);

#endif
