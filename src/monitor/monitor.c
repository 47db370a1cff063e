/* monitor.c — the life of a monitored job (see monitor.h).
 *
 *   run:    block the signals we handle, become a child subreaper, spawn the
 *           command with posix_spawn (vfork-like: the job's ru_maxrss is its
 *           own), then loop: sample every interval, reap children as SIGCHLD
 *           arrives (reading each zombie's /proc/PID/io first so its I/O is
 *           exact; proc/reapio.h where that is root's), forward signals.
 *   attach: the same loop around a process that is not our child.
 *
 * Events: jobscope.start, kickstart.inv.online (first sample at once, one per
 * interval, a final one at exit), source events (GPU, metrics...), and the
 * end-of-job record jobscope.end.  Nothing here can change what the job sees:
 * stdin/stdout/stderr and the environment are passed untouched, and every
 * failure of jobscope itself leaves the job running.
 *
 * All state is in struct monitor (no globals): several monitors could run
 * in one process.  Sources are listed below with their part of the config. */
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

/* Optional sources, in the order they are called, each with its own part
 * of monitor_config. */
extern const source_ops gpu_source_ops;
static const struct source_entry {
    const source_ops *ops;
    size_t config; /* offset of its config in monitor_config */
} source_table[] = {
    /* cgroup first: its start() moves jobscope out of the job's cgroup
     * before other sources start threads that allocate (NVML init); limits
     * right after it: it reads the cgroup figures of the same sample. */
    {&cgroup_source_ops, offsetof(monitor_config, cgroup)},
    {&limits_source_ops, offsetof(monitor_config, limits)},
    {&gpu_source_ops, offsetof(monitor_config, gpu)},
    {&metrics_source_ops, offsetof(monitor_config, metrics)},
    {NULL, 0},
};

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

struct monitor {
    monitor_config opt;
    emitter em;
    proctree *tree;
    monitor_ctx ctx;
    source *sources[sizeof source_table / sizeof source_table[0]];
    int nsources;
    int sigfd;
    sigset_t orig_mask;
    pid_t root;
    int root_done; /* main process reaped (run) or gone (attach) */
    int status;    /* wait status of the main process */
    struct rusage root_ru;
    double start_ts, end_ts, start_mono;
    tree_sample last;
    mset sample_set; /* the last sample (kickstart.inv.online) in the metric model */
    mset ev;         /* the start event, the end record */
    mset scratch;    /* the end record's counters, from the last tree sample */
    uint64_t nsamples;
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
    int bpf_trial;          /* switched: measuring whether BPF is cheaper */
    int procfs_trial;       /* pinned: measuring whether procfs is cheaper (a small tree) */
    proctree_reader parked; /* pinned: the BPF reader while procfs runs, kept open */
    uint32_t chosen_procs;  /* the tree's size when auto last chose procfs */
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

/* The job's own cgroup directory, for the BPF sampler's cgroup walk: the
 * one jobscope made, or the one named by `attach --cgroup PATH` (the user
 * says every task in it is the job's); NULL when the job has none. */
static const char *job_cgroup_dir(monitor *m)
{
    int owned = 0;
    cgroup *cg = cgroup_source_cgroup(&m->ctx, &owned);
    if (!owned && !(m->opt.attach && m->opt.cgroup.mode == JS_CGROUP_PATH)) return NULL;
    return cg && cg->ops->task_dir ? cg->ops->task_dir(cg) : NULL;
}

static int error_exit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("jobscope: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return JS_EXIT_ERROR;
}

/* ---- outputs ----------------------------------------------------------- */

static int open_outputs(monitor *m, char **default_path)
{
    monitor_config *o = &m->opt;
    *default_path = NULL;
    if (o->noutputs == 0) {
        *default_path = outpath_default(m->em.ann.job_id);
        if (!*default_path) return error_exit("out of memory");
        o->outputs[o->noutputs++] = *default_path;
    }
    for (int i = 0; i < o->noutputs; i++) {
        char err[512];
        /* events-%r.jsonl: one file per MPI rank, host, job or monitor pid */
        char *path = outpath_expand(o->outputs[i], m->em.ann.rank, m->em.ann.hostname,
                                    m->em.ann.job_id, getpid());
        if (!path) return error_exit("out of memory");
        sink *s = sink_open(path, &o->sink, err, sizeof err);
        free(path);
        if (!s) return error_exit("cannot write events to %s", err);
        emitter_add_sink(&m->em, s);
    }
    for (int i = 0; i < o->nsinks; i++) emitter_add_sink(&m->em, o->sinks[i]);
    /* A local `jobscope serve` gets every event too (docs/serve.md). */
    char serve_url[160];
    if (!o->no_serve && serve_detect(serve_url, sizeof serve_url)) {
        char err[512];
        sink *s = sink_open(serve_url, &o->sink, err, sizeof err);
        if (s) emitter_add_sink(&m->em, s);
        js_log(o->sink.verbose, NULL, "streaming to the local server (%s)", serve_url + 16);
    }
    if (o->summary_path) {
        m->summary_fd = open(o->summary_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (m->summary_fd < 0)
            return error_exit("cannot write summary %s: %s", o->summary_path, strerror(errno));
    }
    return 0;
}

/* ---- events ------------------------------------------------------------ */

/* The sources' events (ctx->emit): into the job's outputs. */
static uint64_t monitor_emit(monitor_ctx *ctx, const mset *ev)
{
    monitor *m = ctx->monitor;
    return emitter_send(&m->em, ev, NULL);
}

static void emit_start(monitor *m)
{
    mset *e = &m->ev;
    mset_clear(e, EV_START, m->start_ts);
    mset_put_str(e, "version", JOBSCOPE_VERSION_STR);
    mset_put_str(e, "mode", m->opt.attach ? "attach" : "run");
    mset_label_num(e, "pid", m->root);
    mset_put_i64(e, "monitor_pid", getpid());
    mset_put_str(e, "exe", m->exe);
    if (m->opt.argv) {
        mset_open_arr(e, "argv");
        for (char *const *a = m->opt.argv; *a; a++) mset_put_str(e, NULL, *a);
        mset_close(e);
    }
    mset_put_str(e, "cmd", m->cmd);
    mset_put_str(e, "cwd", m->cwd);
    mset_put_str(e, "user", m->user);
    mset_put_i64(e, "uid", getuid());
    mset_put_fixed(e, "interval", m->opt.interval, 3);
    mset_put_str(e, "discovery", proctree_discovery(m->tree));
    mset_put_str(e, "sampler", proctree_sampler(m->tree));
    hostinfo_add(e);
    hostinfo_add_rlimits(e);
    /* what the job was given (src/proc/alloc.c), kept for the end record */
    alloc_detect(m->opt.attach ? m->root : 0, &m->alloc);
    alloc_add(e, &m->alloc);
    emitter_send(&m->em, e, NULL);
}

/* The cumulative counters (utime ... nivcsw), as in the samples. */
static void put_counters(monitor *m, mset *rec, const tree_sample *s)
{
    tree_metrics_fill(&m->scratch, s, 0, NULL, m->opt.null_missing);
    mset_copy_range(rec, &m->scratch, M_UTIME, M_NIVCSW);
}

/* The job's command line.  Right after posix_spawn returns, the new program
 * exists but the kernel may not have set its arguments yet (/proc/PID/cmdline
 * reads empty for a moment), and a job that is already over has none: wait
 * a little for them, else the argv we started it with. */
static char *job_cmdline(monitor *m)
{
    for (int i = 0; i < 100; i++) {
        char *c = hostinfo_cmdline(m->root);
        if (c && *c) return c;
        free(c);
        char path[48], st[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)m->root);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, st, sizeof st - 1) : -1;
        if (fd >= 0) close(fd);
        if (n <= 0) break;
        st[n] = 0;
        char *rp = strrchr(st, ')');
        if (!rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X') break; /* over */
        if (m->opt.attach) break; /* a process of its own making: as it is */
        usleep(200);
    }
    if (!m->opt.argv) return NULL;
    size_t len = 1;
    for (char *const *a = m->opt.argv; *a; a++) len += strlen(*a) + 1;
    char *c = malloc(len), *p = c;
    if (!c) return NULL;
    for (char *const *a = m->opt.argv; *a; a++) p += sprintf(p, "%s%s", p > c ? " " : "", *a);
    *p = 0;
    return c;
}

/* The main process may exec (a shell script's last command): name what runs
 * now, not what was started.  An exec gives the process a new address space:
 * its link is read again when the tree's size or its processes changed, and
 * every 10 s whatever happened (a readlink is a path walk and a permission
 * check: a sixth of a one-process sample, bench/README.md). */
static void refresh_exe(monitor *m, const tree_sample *s)
{
    if (m->root_done) return;
    double now = now_mono();
    if (s->vm_kb == m->exe_vm_kb && s->procs == m->exe_procs && now - m->exe_checked < 10.0) return;
    m->exe_vm_kb = s->vm_kb;
    m->exe_procs = s->procs;
    m->exe_checked = now;
    char path[48], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)m->root);
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n <= 0) return;
    buf[n] = 0;
    if (m->exe && !strcmp(m->exe, buf)) return;
    char *e = strdup(buf), *c = hostinfo_cmdline(m->root);
    if (!e) {
        free(c);
        return;
    }
    free(m->exe);
    m->exe = e;
    if (c && *c) { /* empty: the new program's arguments are not set yet */
        free(m->cmd);
        m->cmd = c;
    } else {
        free(c);
    }
}

/* When PID started, in epoch seconds: stat's starttime counts clock ticks
 * of CLOCK_BOOTTIME.  0 if unknown. */
static double process_start_epoch(pid_t pid)
{
    unsigned long long start = hostinfo_starttime(pid);
    if (!start) return 0;
    struct timespec bt;
    clock_gettime(CLOCK_BOOTTIME, &bt);
    double up = (double)bt.tv_sec + bt.tv_nsec / 1e9;
    return now_epoch() - (up - (double)start / (double)sysconf(_SC_CLK_TCK));
}

/* auto: procfs until sampling it has cost what loading BPF costs, then BPF
 * (sampler.c).  Tried once; a failure keeps procfs, said with -v. */
static void maybe_switch_sampler(monitor *m)
{
    uint64_t spent = monitor_sampler_cost_total_ns(&m->cost_procfs);
    if (spent < m->bpf_payback_ns) return;
    /* pinned (no load to earn back): procfs's cost is known after a sample
     * past its first (which opens every file), for the comparison after */
    if (m->bpf_pinned && m->cost_procfs.seen < 3) return;
    m->bpf_pending = 0;
    proctree_reader r;
    char err[512], note[512];
    if (monitor_sampler_bpf(&r, m->opt.attach ? m->root : 0, m->opt.attach ? 0 : getpid(),
                            job_cgroup_dir(m), m->bpf_pinned, err, sizeof err, note,
                            sizeof note) != 0) {
        js_log(m->opt.verbose, NULL, "sampler: staying with procfs: %s", err);
        return;
    }
    proctree_set_reader(m->tree, &r);
    m->sampler_switch_ts = now_epoch();
    m->bpf_trial = 1;
    js_log(m->opt.verbose, NULL, "sampler: procfs -> bpf after %.3f s of sampling CPU, %s",
           (double)spent / 1e9, note);
}

/* BPF -> procfs; a pinned reader is parked (open: taking it back costs
 * nothing), one loaded for the run closed. */
static void to_procfs(monitor *m, uint32_t procs)
{
    if (m->bpf_pinned) {
        proctree_take_reader(m->tree, &m->parked);
    } else {
        proctree_reader none;
        memset(&none, 0, sizeof none);
        proctree_set_reader(m->tree, &none);
    }
    m->chosen_procs = procs;
}

/* auto, after the switch: back to procfs if BPF turned out dearer.  Pinned
 * and never compared (BPF from the first sample): a small tree tries
 * procfs, whose two reads a process can cost less than the BPF walk's
 * fixed part (the iterator made, read and closed, the records copied). */
static void maybe_revert_sampler(monitor *m, uint32_t procs)
{
    int v = monitor_sampler_verdict(&m->cost_procfs, &m->cost_bpf);
    if (v < 0) return;
    m->bpf_trial = 0;
    double bpf_us = monitor_sampler_cost_us(&m->cost_bpf),
           procfs_us = monitor_sampler_cost_us(&m->cost_procfs);
    if (v == 1 && !m->cost_procfs.seen && m->bpf_pinned && procs <= MONITOR_SMALL_TREE) {
        to_procfs(m, procs);
        m->procfs_trial = 1;
        js_log(m->opt.verbose, NULL, "sampler: trying procfs (bpf: %.2f us a process-sample)",
               bpf_us);
        return;
    }
    if (v == 1) {
        js_log(m->opt.verbose, NULL, "sampler: keeping bpf: %.2f us a process-sample against %.2f",
               bpf_us, procfs_us);
        return;
    }
    to_procfs(m, procs);
    m->sampler_revert_ts = now_epoch();
    js_log(m->opt.verbose, NULL, "sampler: bpf -> procfs: %.2f us a process-sample against %.2f",
           bpf_us, procfs_us);
}

/* Pinned, procfs on trial against BPF: the cheaper stays. */
static void maybe_keep_procfs(monitor *m)
{
    int v = monitor_sampler_verdict(&m->cost_bpf, &m->cost_procfs);
    if (v < 0) return;
    m->procfs_trial = 0;
    double bpf_us = monitor_sampler_cost_us(&m->cost_bpf),
           procfs_us = monitor_sampler_cost_us(&m->cost_procfs);
    if (v == 1) {
        m->sampler_revert_ts = now_epoch();
        js_log(m->opt.verbose, NULL,
               "sampler: bpf -> procfs: %.2f us a process-sample against %.2f", procfs_us, bpf_us);
        return;
    }
    proctree_set_reader(m->tree, &m->parked);
    memset(&m->parked, 0, sizeof m->parked);
    js_log(m->opt.verbose, NULL, "sampler: keeping bpf: %.2f us a process-sample against %.2f",
           bpf_us, procfs_us);
}

/* Pinned, procfs chosen for a small tree that has since doubled: BPF is
 * measured again (its cost per process falls as the tree grows). */
static void maybe_retry_bpf(monitor *m, uint32_t procs)
{
    if (!m->parked.read || procs <= MONITOR_SMALL_TREE || procs < 2 * m->chosen_procs) return;
    proctree_set_reader(m->tree, &m->parked);
    memset(&m->parked, 0, sizeof m->parked);
    memset(&m->cost_bpf, 0, sizeof m->cost_bpf);
    m->bpf_trial = 1;
    m->sampler_switch_ts = now_epoch();
    js_log(m->opt.verbose, NULL, "sampler: procfs -> bpf: the tree grew to %u processes",
           (unsigned)procs);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sample_and_emit(monitor *m)
{
    tree_sample *s = &m->last;
    int measure = m->bpf_pending || m->bpf_trial || m->procfs_trial;
    uint64_t cpu0 = measure ? thread_cpu_ns() : 0;
    int rc = proctree_sample(m->tree, s);
    if (measure) {
        uint64_t ns = thread_cpu_ns() - cpu0;
        uint32_t procs = rc == 0 ? s->procs : 0;
        if (m->bpf_pending) {
            monitor_sampler_cost_add(&m->cost_procfs, ns, procs);
            maybe_switch_sampler(m);
        } else if (m->procfs_trial) {
            monitor_sampler_cost_add(&m->cost_procfs, ns, procs);
            maybe_keep_procfs(m);
        } else {
            monitor_sampler_cost_add(&m->cost_bpf, ns, procs);
            maybe_revert_sampler(m, procs);
        }
    } else if (m->parked.read && rc == 0) {
        maybe_retry_bpf(m, s->procs);
    }
    if (rc != 0) {
        js_log_once(&m->sample_error, m->opt.verbose, NULL, "sampling failed; will retry");
        return;
    }
    refresh_exe(m, s);
    s->root_start = m->proc_start > 0 ? m->proc_start : m->start_ts;
    s->root_cmd = m->cmd;
    s->root_cwd = m->cwd;
    s->user = m->user;
    m->nsamples++;
    mset *ev = &m->sample_set;
    tree_metrics_fill(ev, s, m->root, m->exe, m->opt.null_missing);
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->sample) m->sources[i]->ops->sample(m->sources[i], &m->ctx, s, ev);
    if (!m->opt.online_off) emitter_send(&m->em, ev, NULL);
}

static void put_peak(mset *e, const char *key, const tree_peak *p, int decimals)
{
    mset_open_obj(e, key);
    mset_put_fixed(e, "value", p->value, decimals);
    mset_put_fixed(e, "ts", p->ts, 6);
    mset_close(e);
}

static void put_rusage(mset *e, const char *key, const struct rusage *r)
{
    mset_open_obj(e, key);
    mset_put_fixed(e, "utime", (double)r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6, 6);
    mset_put_fixed(e, "stime", (double)r->ru_stime.tv_sec + r->ru_stime.tv_usec / 1e6, 6);
    mset_put_i64(e, "maxrss", r->ru_maxrss);
    mset_put_i64(e, "minflt", r->ru_minflt);
    mset_put_i64(e, "majflt", r->ru_majflt);
    mset_put_i64(e, "inblock", r->ru_inblock);
    mset_put_i64(e, "oublock", r->ru_oublock);
    mset_put_i64(e, "nvcsw", r->ru_nvcsw);
    mset_put_i64(e, "nivcsw", r->ru_nivcsw);
    mset_close(e);
}

static int exit_status(const monitor *m)
{
    if (m->opt.attach && !m->have_status) return m->stop_signal ? 128 + m->stop_signal : 0;
    if (WIFEXITED(m->status)) return WEXITSTATUS(m->status);
    if (WIFSIGNALED(m->status)) return 128 + WTERMSIG(m->status);
    return JS_EXIT_ERROR;
}

/* The CPUs the job was given (the start event's alloc_cpus), against
 * which the end record and the closing summary measure its efficiency, as
 * the views do; the CPUs jobscope may run on when nothing was detected. */
static double alloc_cpus(const monitor *m)
{
    if (m->alloc.cpus > 0) return m->alloc.cpus;
    return hostinfo_cpus_available();
}

static void emit_record(monitor *m)
{
    const tree_sample *s = &m->last;
    mset *b = &m->ev;
    double duration = m->end_ts - m->start_ts;
    mset_clear(b, EV_END, now_epoch());
    mset_label_num(b, "pid", m->root);
    mset_put_str(b, "exe", m->exe);
    mset_put_str(b, "cmd", m->cmd);
    int known = !m->opt.attach || m->have_status; /* a wait status to report */
    if (!known) {
        mset_put_str(b, "exit_type", m->stop_signal ? "detached" : "ended");
        mset_put_null(b, "exit_code");
        mset_put_null(b, "signal");
    } else if (m->kill_reason[0]) {
        mset_put_str(b, "exit_type", "limit");
    } else {
        mset_put_str(b, "exit_type", WIFSIGNALED(m->status) ? "signaled" : "exited");
    }
    if (known) {
        if (WIFEXITED(m->status))
            mset_put_i64(b, "exit_code", WEXITSTATUS(m->status));
        else
            mset_put_null(b, "exit_code");
        if (WIFSIGNALED(m->status)) {
            mset_put_i64(b, "signal", WTERMSIG(m->status));
            const char *abbrev = sigabbrev_np(WTERMSIG(m->status));
            char name[32];
            int n = snprintf(name, sizeof name, "SIG%s", abbrev ? abbrev : "UNKNOWN");
            mset_put_str(b, "signal_name", mset_copy(b, name, (size_t)n));
            mset_put_bool(b, "core_dumped", WCOREDUMP(m->status));
        } else {
            mset_put_null(b, "signal");
        }
        if (m->kill_reason[0]) mset_put_str(b, "limit", m->kill_reason);
    }
    mset_put_i64(b, "status", exit_status(m));
    mset_put_fixed(b, "start", m->start_ts, 6);
    mset_put_fixed(b, "end", m->end_ts, 6);
    mset_put_fixed(b, "duration", duration, 6);
    put_counters(m, b, s);
    double cpu = (double)(s->c.utime_us + s->c.stime_us) / 1e6;
    double cores = alloc_cpus(m);
    mset_put_fixed(b, "cpu_time", cpu, 6);
    if (cores == floor(cores))
        mset_put_i64(b, "cores", (long long)cores);
    else
        mset_put_fixed(b, "cores", cores, 2); /* a cgroup quota of 1.5 CPUs */
    mset_put_str(b, "cores_from", m->alloc.cpus_from);
    mset_put_fixed(b, "cpu_efficiency", duration > 0 ? cpu / (duration * cores) : 0.0, 4);
    mset_put_u64(b, "samples", m->nsamples);
    mset_put_u64(b, "total_procs", s->total_procs);
    mset_put_str(b, "sampler", proctree_sampler(m->tree));
    if (proctree_reader_outside(m->tree))
        mset_put_u64(b, "sampler_outside", proctree_reader_outside(m->tree));
    if (m->sampler_switch_ts > 0) mset_put_fixed(b, "sampler_since", m->sampler_switch_ts, 6);
    if (m->sampler_revert_ts > 0) mset_put_fixed(b, "sampler_reverted", m->sampler_revert_ts, 6);
    if (proctree_reader_fallbacks(m->tree))
        mset_put_u64(b, "sampler_fallbacks", proctree_reader_fallbacks(m->tree));
    mset_open_obj(b, "peaks");
    put_peak(b, "rss", &s->peak_rss_kb, 0);
    put_peak(b, "vm", &s->peak_vm_kb, 0);
    put_peak(b, "cpu_percent", &s->peak_cpu_percent, 2);
    put_peak(b, "procs", &s->peak_procs, 0);
    put_peak(b, "threads", &s->peak_threads, 0);
    mset_put_u64(b, "max_process_hwm", s->hwm_kb);
    mset_close(b);
    if (!m->opt.attach) {
        put_rusage(b, "rusage", &m->root_ru);
        struct rusage all;
        getrusage(RUSAGE_CHILDREN, &all);
        put_rusage(b, "rusage_children", &all);
    }
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->record) m->sources[i]->ops->record(m->sources[i], &m->ctx, b);
    /* reaped processes whose final I/O could not be read exactly: the I/O
     * counters above may be short (docs/events.md) */
    if (m->reapio.inexact) mset_put_u64(b, "io_incomplete", m->reapio.inexact);
    mset_put_u64(b, "events_dropped", emitter_dropped(&m->em));
    emitter_put_errors(&m->em, b, "output_errors");
    jbuf *json = &m->summary;
    emitter_send(&m->em, b, m->summary_fd >= 0 ? json : NULL);
    if (m->summary_fd >= 0) {
        /* the same document, alone in its file */
        size_t n = json->len;
        if (write(m->summary_fd, json->p, n) != (ssize_t)n || write(m->summary_fd, "\n", 1) != 1)
            js_log(m->opt.verbose, NULL, "cannot write the summary file: %s", strerror(errno));
        close(m->summary_fd);
        m->summary_fd = -1;
    }
}

static void human_size(char *out, size_t n, double bytes)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (bytes >= 1024 && i < 4) bytes /= 1024, i++;
    snprintf(out, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

static void print_summary(const monitor *m, const char *events_path)
{
    const tree_sample *s = &m->last;
    double dur = m->end_ts - m->start_ts;
    double cpu = (double)(s->c.utime_us + s->c.stime_us) / 1e6, cores = alloc_cpus(m);
    char rss[32], rd[32], wr[32], how[64];
    human_size(rss, sizeof rss, s->peak_rss_kb.value * 1024);
    human_size(rd, sizeof rd, (double)s->c.read_bytes);
    human_size(wr, sizeof wr, (double)s->c.write_bytes);
    if (m->opt.attach)
        snprintf(how, sizeof how, "ended");
    else if (WIFSIGNALED(m->status))
        snprintf(how, sizeof how, "killed by SIG%s%s", sigabbrev_np(WTERMSIG(m->status)) ?: "?",
                 m->kill_reason[0] ? " (limit)" : "");
    else
        snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(m->status));
    fprintf(stderr,
            "jobscope: %s %s after %.2f s\n"
            "jobscope:   CPU %.2f s user+sys, efficiency %.0f%% of %g core%s (%s)\n"
            "jobscope:   peak memory %s RSS, at most %u process%s at once, %llu seen\n"
            "jobscope:   disk read %s, written %s\n",
            m->opt.attach ? "process" : "job", how, dur, cpu,
            dur > 0 ? 100.0 * cpu / (dur * cores) : 0.0, cores, cores != 1 ? "s" : "",
            m->alloc.cpus > 0 ? m->alloc.cpus_from : "affinity", rss, (unsigned)s->peak_procs.value,
            s->peak_procs.value == 1 ? "" : "es", (unsigned long long)s->total_procs, rd, wr);
    if (events_path) fprintf(stderr, "jobscope:   events in %s\n", events_path);
}

/* What the caller asked to get back (monitor_result). */
static void fill_result(const monitor *m, monitor_result *r)
{
    r->status = m->status;
    r->ru = m->root_ru;
    r->start_ts = m->start_ts;
    r->end_ts = m->end_ts;
    r->last = m->last;
    r->nsamples = m->nsamples;
}

/* ---- children and signals ---------------------------------------------- */

static void reap_children(monitor *m)
{
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) break;
        pid_t pid = si.si_pid;
        /* the zombie still shows its final I/O, its reaped children's included */
        proc_io io;
        int have_io = 0;
        char path[48], buf[512];
        snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof buf - 1);
            if (n > 0) {
                buf[n] = 0;
                have_io = procread_io(buf, (size_t)n, &io) == 0;
            }
            close(fd);
        }
        /* not root: the zombie's io is root's; its I/O is what wait4 adds
         * to jobscope's own counters (proc/reapio.h) */
        if (!have_io) reapio_before(&m->reapio);
        int status;
        struct rusage ru;
        pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r != pid) break;
        if (!have_io) {
            reapio_after(&m->reapio, &io);
            have_io = 1;
        }
        proctree_reaped(m->tree, pid, &ru, have_io ? &io : NULL);
        m->last_reap_ts = now_epoch();
        if (pid == m->root) {
            m->status = status;
            m->root_ru = ru;
            m->root_done = 1;
            m->end_ts = now_epoch();
        }
    }
}

static void handle_signal(monitor *m, const struct signalfd_siginfo *si)
{
    int sig = (int)si->ssi_signo;
    if (sig == SIGCHLD) {
        if (!m->opt.attach) reap_children(m);
        return;
    }
    if (m->opt.attach) { /* attach: a signal ends the watch */
        m->stop_signal = sig;
        return;
    }
    /* A signal from the terminal (^C, ^\, hangup) already reached the job when
     * it shares our process group: forwarding it would deliver it twice. */
    if (si->ssi_code == SI_KERNEL && getpgid(m->root) == getpgrp()) return;
    if (!m->root_done) kill(m->root, sig);
}

static void monitor_request_kill(monitor_ctx *ctx, const char *reason)
{
    monitor *m = ctx->monitor;
    if (m->kill_reason[0]) return;
    snprintf(m->kill_reason, sizeof m->kill_reason, "%s", reason ? reason : "limit");
    js_log(m->opt.verbose, NULL, "stopping the job: %s", m->kill_reason);
    if (!m->root_done) kill(m->root, SIGTERM);
    proctree_kill(m->tree, SIGTERM);
    m->kill_deadline = now_mono() + m->opt.kill_grace;
}

/* Every signal the job should start with at SIG_DFL: all of them, glibc's
 * internal ones (32, 33, which its posix_spawn would leave ignored) included,
 * except those our caller had ignored (nohup): a shell gives the job the same. */
static void default_signals(sigset_t *set)
{
    sigemptyset(set);
    for (int sig = 1; sig < SIGRTMIN; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) continue;
        if (sigaddset(set, sig) != 0) /* internal to glibc: set the bit itself */
            ((unsigned long *)set)[(sig - 1) / (8 * sizeof(unsigned long))] |=
                1UL << ((sig - 1) % (8 * sizeof(unsigned long)));
    }
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) continue;
        sigaddset(set, sig);
    }
}

static int spawn_job(monitor *m)
{
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t sigdef;
    default_signals(&sigdef);
    posix_spawnattr_setsigdefault(&attr, &sigdef);
    sigset_t dflt;
    sigemptyset(&dflt);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&dflt, forwarded_signals[i]);
    sigaddset(&dflt, SIGCHLD);
    sigaddset(&dflt, SIGPIPE);
    /* the mask back as it was; dispositions as a shell gives them (above) */
    posix_spawnattr_setsigmask(&attr, &m->orig_mask);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_USEVFORK);
    /* custom metrics: JOBSCOPE_SOCKET in the job's environment and, with
     * --scan-output, pipes on its stdout/stderr; both unchanged otherwise */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int fd = 0; m->opt.set_job_stdio && fd < 3; fd++)
        if (m->opt.job_stdio[fd] != fd)
            posix_spawn_file_actions_adddup2(&fa, m->opt.job_stdio[fd], fd);
    char **env = environ;
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->spawn)
            env = m->sources[i]->ops->spawn(m->sources[i], &m->ctx, &fa, env);
    cgroup_source_spawning(&m->ctx); /* the BPF process count follows from here */
    int rc = posix_spawnp(&m->root, m->opt.argv[0], &fa, &attr, m->opt.argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (m->opt.result) {
        m->opt.result->spawn_error = rc;
        if (rc == 0) __atomic_store_n(&m->opt.result->pid, m->root, __ATOMIC_RELEASE);
    }
    if (rc == 0) return 0;
    fprintf(stderr, "jobscope: %s: %s\n", m->opt.argv[0],
            rc == ENOENT ? "command not found" : strerror(rc));
    return rc == ENOENT ? JS_EXIT_NOTFOUND : JS_EXIT_NOEXEC;
}

static void raise_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max > 65536 ? 65536 : r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

/* ---- main loop ----------------------------------------------------------- */

/* Is the job over?  The main process has ended and, with --wait-all, the
 * rest of the tree too: in run mode every descendant that outlives its
 * parent comes back to jobscope (a subreaper), so the tree is empty once
 * jobscope has no child left, known the moment it reaps the last one. */
static int tree_finished(monitor *m)
{
    if (!m->root_done) return 0;
    if (!m->opt.wait_all) return 1;
    if (m->opt.attach) return m->last.procs == 0;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD;
}

/* attach --exit-status-fd: the parent of the watched process (the Slurm
 * plugin in slurmstepd) writes its wait status as a decimal when it reaps
 * it, which ends the watch at that instant rather than at the next tick.
 * EOF without a number: the status stays unknown ("ended").  The descriptor
 * is closed only once the final figures are read (monitor_run): the writer
 * may wait for that before it removes the process's cgroup. */
static void read_exit_status(monitor *m)
{
    char buf[32];
    ssize_t n = read(m->opt.exit_status_fd, buf, sizeof buf - 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    m->status_read = 1;
    if (n > 0) {
        buf[n] = 0;
        char *end;
        long v = strtol(buf, &end, 10);
        if (end != buf && (*end == '\n' || !*end) && v >= 0 && v <= 0xffff) {
            m->status = (int)v;
            m->have_status = 1;
        }
    }
    if (!m->root_done) {
        m->root_done = 1;
        m->end_ts = now_epoch();
    }
}

static void loop(monitor *m)
{
    double interval = m->opt.interval;
    double next = m->start_mono + interval;
    for (;;) {
        double now = now_mono();
        if (m->kill_deadline > 0 && now >= m->kill_deadline && !m->killed_hard) {
            if (!m->root_done) kill(m->root, SIGKILL);
            proctree_kill(m->tree, SIGKILL);
            m->killed_hard = 1;
        }
        if (now >= next) {
            if (m->opt.attach && !m->root_done && kill(m->root, 0) != 0 && errno == ESRCH) {
                m->root_done = 1;
                m->end_ts = now_epoch();
            }
            /* reap here too, not only on SIGCHLD: a library thread that left
             * SIGCHLD unblocked would otherwise keep us waiting forever (once
             * a second is enough for that: a waitid each tick was a tenth of
             * a short interval's sample) */
            if (!m->opt.attach && now - m->reap_checked >= 1.0) {
                m->reap_checked = now;
                reap_children(m);
            }
            if (tree_finished(m) || m->stop_signal) break;
            sample_and_emit(m);
            if (m->opt.attach && !m->root_done && m->last.procs == 0) {
                m->root_done = 1;
                m->end_ts = now_epoch();
            }
            while (next <= now) next += interval; /* skip missed ticks */
            if (tree_finished(m) || m->stop_signal) break;
        }
        double wait = next - now_mono();
        if (m->kill_deadline > 0 && !m->killed_hard && m->kill_deadline - now_mono() < wait)
            wait = m->kill_deadline - now_mono();
        int timeout = wait > 0 ? (int)(wait * 1000.0 + 0.999) : 0;
        struct pollfd pfd[2] = {{m->sigfd, POLLIN, 0}, {m->opt.exit_status_fd, POLLIN, 0}};
        int with_status = m->opt.exit_status_fd > 0 && !m->status_read;
        int r = poll(pfd, with_status ? 2 : 1, timeout);
        if (r > 0 && with_status && pfd[1].revents) {
            read_exit_status(m);
            if (tree_finished(m)) break;
        }
        if (r > 0 && pfd[0].revents) {
            struct signalfd_siginfo si[8];
            ssize_t n = read(m->sigfd, si, sizeof si);
            for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof si[0]; i++)
                handle_signal(m, &si[i]);
            if (m->root_done && tree_finished(m)) break;
            if (m->stop_signal) break;
        }
    }
}

monitor *monitor_new(const monitor_config *cfg)
{
    monitor *m = calloc(1, sizeof *m);
    if (!m) {
        error_exit("out of memory");
        return NULL;
    }
    m->opt = *cfg;
    reapio_init(&m->reapio);
    m->summary_fd = -1;
    m->sigfd = -1;

    annotations ann;
    if (annotations_init(&ann, m->opt.job_id, m->opt.tags, m->opt.ntags, m->opt.null_missing) !=
        0) {
        error_exit("out of memory");
        free(m);
        return NULL;
    }
    emitter_init(&m->em, &ann);
    m->opt.sink.ann = &m->em.ann;
    m->opt.sink.quiet = m->opt.quiet;
    m->opt.sink.flush_abort = &m->flush_abort;
    if (open_outputs(m, &m->default_path) != 0) {
        emitter_close(&m->em, 0);
        free(m->default_path);
        free(m);
        return NULL;
    }
    jbuf_init(&m->summary, 64);
    mset_init(&m->sample_set);
    mset_init(&m->ev);
    mset_init(&m->scratch);

    if (m->opt.attach) {
        m->root = m->opt.pid;
        if (kill(m->root, 0) != 0 && errno == ESRCH) {
            emitter_close(&m->em, 0);
            free(m->default_path);
            jbuf_free(&m->summary);
            error_exit("no process %d", (int)m->root);
            free(m);
            return NULL;
        }
    }
    return m;
}

static void monitor_free(monitor *m)
{
    jbuf_free(&m->summary);
    mset_free(&m->sample_set);
    mset_free(&m->ev);
    mset_free(&m->scratch);
    free(m->cmd);
    free(m->cwd);
    free(m->user);
    free(m->exe);
    free(m->default_path);
    if (m->sigfd >= 0) close(m->sigfd);
    free(m);
}

int monitor_run(monitor *m)
{
    int attach = m->opt.attach, rc;

    /* Signals we handle arrive through a signalfd; block them before the
     * spawn so none is lost, and give the job the original mask back. */
    sigset_t mask;
    sigemptyset(&mask);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&mask, forwarded_signals[i]);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGPIPE); /* a closed output is an error, not death */
    pthread_sigmask(SIG_BLOCK, &mask, &m->orig_mask);
    sigdelset(&mask, SIGPIPE);
    m->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

    m->ctx.emit = monitor_emit;
    m->ctx.ann = &m->em.ann;
    m->ctx.run_mode = !attach;
    m->ctx.interval = m->opt.interval;
    m->ctx.verbose = m->opt.verbose;
    m->ctx.quiet = m->opt.quiet;
    m->ctx.kill_grace = m->opt.kill_grace;
    m->ctx.attach_pid = attach ? m->opt.pid : 0;
    m->ctx.request_kill = monitor_request_kill;
    m->ctx.monitor = m;
    for (size_t i = 0; source_table[i].ops; i++) {
        source *s =
            source_table[i].ops->open(&m->ctx, (const char *)&m->opt + source_table[i].config);
        if (s) m->sources[m->nsources++] = s;
    }

    /* the sampler (sampler.c): --sampler bpf loads before the job starts,
     * so that an impossible one stops nothing; auto may switch later */
    proctree_reader reader;
    memset(&reader, 0, sizeof reader);
    rc = 0;
    const char *want = m->opt.sampler ? m->opt.sampler : "auto";
    char err[512], note[512];
    if (!strcmp(want, "bpf")) {
        if (monitor_sampler_bpf(&reader, attach ? m->root : 0, attach ? 0 : getpid(),
                                job_cgroup_dir(m), 0, err, sizeof err, note, sizeof note) != 0) {
            error_exit("--sampler bpf: %s", err);
            rc = JS_EXIT_ERROR;
        } else {
            js_log(m->opt.verbose, NULL, "sampler: bpf %s", note);
        }
    } else if (!strcmp(want, "auto")) {
        m->bpf_pending = monitor_sampler_may_bpf();
        m->bpf_payback_ns = (uint64_t)(monitor_sampler_payback() * 1e9);
        m->bpf_pinned = m->bpf_pending && monitor_sampler_pinned();
        /* pinned: no load to earn back.  The cgroup walk follows the job:
         * BPF from the first sample.  The host-task walk follows the host:
         * it starts after procfs's first sample, to be compared with it. */
        const char *cg = m->bpf_pinned ? job_cgroup_dir(m) : NULL;
        if (cg && monitor_sampler_bpf(&reader, attach ? m->root : 0, attach ? 0 : getpid(), cg, 1,
                                      err, sizeof err, note, sizeof note) == 0) {
            m->bpf_pending = 0;
            m->bpf_trial = 1;
            js_log(m->opt.verbose, NULL, "sampler: bpf %s", note);
        } else if (m->bpf_pinned) {
            m->bpf_payback_ns = 0;
        }
    }

    m->start_ts = now_epoch();
    m->start_mono = now_mono();
    if (rc == 0 && !attach) {
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        rc = spawn_job(m);
    }
    if (rc != 0) { /* no job runs: undo what was opened */
        if (reader.close) reader.close(reader.ctx);
        for (int i = 0; i < m->nsources; i++) m->sources[i]->ops->close(m->sources[i]);
        emitter_close(&m->em, 0);
        if (m->default_path) unlink(m->default_path);
        monitor_free(m);
        return rc;
    }
    raise_fd_limit();
    m->tree = proctree_new(NULL, attach ? PROCTREE_ATTACH : PROCTREE_RUN, m->root, m->opt.interval);
    if (reader.read) proctree_set_reader(m->tree, &reader);
    m->ctx.tree = m->tree;
    m->ctx.root = m->root;
    m->ctx.start_ts = m->start_ts;
    m->cmd = job_cmdline(m);
    m->cwd = hostinfo_cwd(m->root);
    m->exe = NULL;
    {
        char path[48], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/exe", (int)m->root);
        ssize_t n = readlink(path, buf, sizeof buf - 1);
        if (n > 0) {
            buf[n] = 0;
            m->exe = strdup(buf);
        }
        m->proc_start = process_start_epoch(m->root);
        struct stat st;
        snprintf(path, sizeof path, "/proc/%d", (int)m->root);
        m->user = hostinfo_user(stat(path, &st) == 0 ? st.st_uid : getuid());
    }
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->start) m->sources[i]->ops->start(m->sources[i], &m->ctx);

    emit_start(m);
    sample_and_emit(m);
    if (!attach) reap_children(m);
    loop(m);

    if (!attach && !m->root_done) { /* unreachable in practice: be safe */
        int status;
        struct rusage ru;
        if (wait4(m->root, &status, 0, &ru) == m->root) {
            m->status = status;
            m->root_ru = ru;
            m->root_done = 1;
        }
    }
    if (!attach) reap_children(m);
    /* --wait-all: the job ended when the last process of the tree did */
    if (m->opt.wait_all && !attach && m->last_reap_ts > m->end_ts) m->end_ts = m->last_reap_ts;
    if (m->end_ts == 0 || (m->opt.wait_all && attach)) m->end_ts = now_epoch();
    proctree_full_next(m->tree);
    sample_and_emit(m);
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->stop) m->sources[i]->ops->stop(m->sources[i], &m->ctx);
    if (m->opt.exit_status_fd > 0) close(m->opt.exit_status_fd); /* the final figures are in */
    emit_record(m);
    if (m->opt.result) fill_result(m, m->opt.result);
    int status = exit_status(m);
    if (!m->opt.quiet && isatty(STDERR_FILENO)) print_summary(m, m->default_path);
    for (int i = 0; i < m->nsources; i++) m->sources[i]->ops->close(m->sources[i]);
    emitter_close(&m->em, m->opt.flush_timeout);
    if (m->parked.close) m->parked.close(m->parked.ctx);
    proctree_free(m->tree);
    monitor_free(m);
    return status;
}
