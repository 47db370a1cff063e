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
 * All state is in struct monitor (monitor_priv.h; no globals): several
 * monitors could run in one process.  Sources are listed below with their
 * part of the config.  `--sampler auto`'s choices are monitor_auto.c's, the
 * end record and the closing summary monitor_record.c's, the job's process
 * (spawning, reaping, signals) monitor_child.c's. */
#include "monitor_priv.h"

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
_Static_assert(sizeof source_table / sizeof source_table[0] <= MONITOR_SOURCES,
               "struct monitor has room for every source");

/* The job's own cgroup directory, for the BPF sampler's cgroup walk: the
 * one jobscope made, or the one named by `attach --cgroup PATH` (the user
 * says every task in it is the job's); NULL when the job has none. */
const char *monitor_job_cgroup_dir(monitor *m)
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
void monitor_put_counters(monitor *m, mset *rec, const tree_sample *s)
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

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The sample's value set: the tree's figures, then every source's. */
static void emit_sample(monitor *m, const tree_sample *s)
{
    mset *ev = &m->sample_set;
    tree_metrics_fill(ev, s, m->root, m->exe, m->opt.null_missing);
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->sample) m->sources[i]->ops->sample(m->sources[i], &m->ctx, s, ev);
    m->sample_whole = !ev->oom;
    if (!m->opt.online_off) emitter_send(&m->em, ev, NULL);
}

/* A still job's sample: when every source's values stand too (its
 * again()), the last sample's set goes out again with its new time, elapsed
 * and CPU rate, its JSON line re-used (emitter_send_again); else built anew. */
static void emit_still(monitor *m, const tree_sample *s)
{
    mset *ev = &m->sample_set;
    int stand = m->sample_whole;
    for (int i = 0; i < m->nsources; i++) {
        source *src = m->sources[i];
        if (src->ops->sample && !(src->ops->again && src->ops->again(src, &m->ctx, s))) stand = 0;
    }
    if (!stand) {
        emit_sample(m, s);
        return;
    }
    const mvalue *cpu = &ev->v[M_CPU_PERCENT];
    int same_line = cpu->set && !cpu->null && cpu->d == s->cpu_percent;
    ev->ts = s->ts;
    mset_f64(ev, M_ELAPSED, s->elapsed);
    mset_f64(ev, M_CPU_PERCENT, s->cpu_percent);
    if (m->opt.online_off) return;
    if (same_line)
        emitter_send_again(&m->em, ev);
    else
        emitter_send(&m->em, ev, NULL);
}

static void sample_and_emit(monitor *m)
{
    tree_sample *s = &m->last;
    int measure = m->bpf_pending || m->bpf_trial || m->procfs_trial;
    /* nothing of the job ran, none of its memory moved and no task came or
     * went since the last sample (its cgroup says so in three small
     * reads): that sample's figures stand; the tree, the fork count and the
     * other cgroup files are not read (docs/cgroups.md, "A still job").  A
     * still sample costs neither sampler anything: `auto` measures others. */
    if (m->last_ok && cgroup_source_still(&m->ctx) && proctree_sample_still(m->tree, s) == 0) {
        m->nsamples++;
        m->nstill++;
        emit_still(m, s);
        return;
    }
    uint64_t cpu0 = measure ? thread_cpu_ns() : 0;
    int rc = proctree_sample(m->tree, s);
    m->last_ok = rc == 0;
    if (measure) {
        uint64_t ns = thread_cpu_ns() - cpu0;
        uint32_t procs = rc == 0 ? s->procs : 0;
        if (m->bpf_pending) {
            monitor_sampler_cost_add(&m->cost_procfs, ns, procs);
            monitor_auto_switch(m);
        } else if (m->procfs_trial) {
            monitor_sampler_cost_add(&m->cost_procfs, ns, procs);
            monitor_auto_keep_procfs(m);
        } else {
            monitor_sampler_cost_add(&m->cost_bpf, ns, procs);
            monitor_auto_revert(m, procs);
        }
    } else if (m->parked.read && rc == 0) {
        monitor_auto_retry_bpf(m, s->procs);
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
    emit_sample(m, s);
}

/* ---- main loop ----------------------------------------------------------- */

#define KILL_WAIT_S 5.0

/* Is the job over?  The main process has ended and, with --wait-all, the
 * rest of the tree too: in run mode every descendant that outlives its
 * parent comes back to jobscope (a subreaper), so the tree is empty once
 * jobscope has no child left, known the moment it reaps the last one. */
static int tree_finished(monitor *m)
{
    if (!m->root_done) return 0;
    /* a job stopped by a limit is stopped whole: in run mode the watch goes
     * on until the last of its processes is gone (they all come back to
     * jobscope), so that those forked after the SIGTERM get it too, and the
     * SIGKILL after the grace; at most KILL_WAIT_S after that SIGKILL (a
     * process stuck in the kernel is not waited for forever) */
    int stopping = m->kill_reason[0] && !m->opt.attach &&
                   !(m->killed_hard && now_mono() >= m->kill_deadline + KILL_WAIT_S);
    if (!m->opt.wait_all && !stopping) return 1;
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

/* attach --exit-status-fd: the watched process can be seen gone (at a
 * tick, from kill(0) or an empty tree) in the moment between its reaper's
 * wait and the reaper writing the status: slurmstepd reaps the task, then
 * runs the plugin's task_exit.  The watch then waits for the status (or the
 * writer's EOF), EXIT_STATUS_WAIT_MS at most, so that the end record has
 * the real exit code, as it has when the status comes first.  A signal to
 * jobscope ends the wait. */
#define EXIT_STATUS_WAIT_MS 5000
static void await_exit_status(monitor *m)
{
    if (!m->opt.attach || m->opt.exit_status_fd <= 0 || m->status_read || m->stop_signal) return;
    double deadline = now_mono() + EXIT_STATUS_WAIT_MS / 1000.0;
    while (!m->status_read && !m->stop_signal) {
        double left = deadline - now_mono();
        if (left <= 0) break;
        struct pollfd pfd[2] = {{m->opt.exit_status_fd, POLLIN, 0}, {m->sigfd, POLLIN, 0}};
        int r = poll(pfd, 2, (int)(left * 1000.0 + 0.999));
        if (r < 0 && errno != EINTR) break;
        if (r > 0 && pfd[0].revents) read_exit_status(m);
        if (r > 0 && pfd[1].revents) {
            struct signalfd_siginfo si[8];
            ssize_t n = read(m->sigfd, si, sizeof si);
            for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof si[0]; i++)
                monitor_handle_signal(m, &si[i]);
        }
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
             * a short interval's sample; not while the job is still: a child
             * that exits runs, so the next sample is not still) */
            if (!m->opt.attach && now - m->reap_checked >= 1.0 && !m->last.still) {
                m->reap_checked = now;
                monitor_reap_children(m);
            }
            if (tree_finished(m) || m->stop_signal) break;
            sample_and_emit(m);
            /* a job being stopped: the members this sample found first
             * (forked since) get the signal the others got */
            if (m->kill_reason[0] && m->kill_deadline > 0)
                proctree_kill(m->tree, m->killed_hard ? SIGKILL : SIGTERM);
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
        int with_status = m->opt.exit_status_fd > 0 && !m->status_read;
        if (!with_status) {
            /* only signals to wait for: sigtimedwait takes them as the
             * signalfd would, a few microseconds a tick cheaper than poll */
            if (wait < 0) wait = 0;
            struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            siginfo_t info;
            int sig = sigtimedwait(&m->sigs, &info, &ts);
            if (sig > 0) {
                struct signalfd_siginfo si = {.ssi_signo = (uint32_t)sig, .ssi_code = info.si_code};
                monitor_handle_signal(m, &si);
                if (m->root_done && tree_finished(m)) break;
                if (m->stop_signal) break;
            }
            continue;
        }
        int timeout = wait > 0 ? (int)(wait * 1000.0 + 0.999) : 0;
        struct pollfd pfd[2] = {{m->sigfd, POLLIN, 0}, {m->opt.exit_status_fd, POLLIN, 0}};
        int r = poll(pfd, with_status ? 2 : 1, timeout);
        if (r > 0 && with_status && pfd[1].revents) {
            read_exit_status(m);
            if (tree_finished(m)) break;
        }
        if (r > 0 && pfd[0].revents) {
            struct signalfd_siginfo si[8];
            ssize_t n = read(m->sigfd, si, sizeof si);
            for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof si[0]; i++)
                monitor_handle_signal(m, &si[i]);
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
    monitor_forwarded_signals(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGPIPE); /* a closed output is an error, not death */
    pthread_sigmask(SIG_BLOCK, &mask, &m->orig_mask);
    sigdelset(&mask, SIGPIPE);
    m->sigs = mask;
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
                                monitor_job_cgroup_dir(m), 0, err, sizeof err, note,
                                sizeof note) != 0) {
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
        const char *cg = m->bpf_pinned ? monitor_job_cgroup_dir(m) : NULL;
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
        rc = monitor_spawn_job(m);
    }
    if (rc != 0) { /* no job runs: undo what was opened */
        if (reader.close) reader.close(reader.ctx);
        for (int i = 0; i < m->nsources; i++) m->sources[i]->ops->close(m->sources[i]);
        emitter_close(&m->em, 0);
        if (m->default_path) unlink(m->default_path);
        monitor_free(m);
        return rc;
    }
    monitor_raise_fd_limit();
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
    if (!attach) monitor_reap_children(m);
    loop(m);
    await_exit_status(m);

    if (!attach && !m->root_done) { /* unreachable in practice: be safe */
        int status;
        struct rusage ru;
        if (wait4(m->root, &status, 0, &ru) == m->root) {
            m->status = status;
            m->root_ru = ru;
            m->root_done = 1;
        }
    }
    if (!attach) monitor_reap_children(m);
    /* --wait-all: the job ended when the last process of the tree did */
    if (m->opt.wait_all && !attach && m->last_reap_ts > m->end_ts) m->end_ts = m->last_reap_ts;
    if (m->end_ts == 0 || (m->opt.wait_all && attach)) m->end_ts = now_epoch();
    proctree_full_next(m->tree);
    sample_and_emit(m);
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->stop) m->sources[i]->ops->stop(m->sources[i], &m->ctx);
    if (m->opt.exit_status_fd > 0) close(m->opt.exit_status_fd); /* the final figures are in */
    monitor_emit_record(m);
    if (m->opt.result) monitor_fill_result(m, m->opt.result);
    int status = monitor_exit_status(m);
    if (!m->opt.quiet && isatty(STDERR_FILENO)) monitor_print_summary(m, m->default_path);
    for (int i = 0; i < m->nsources; i++) m->sources[i]->ops->close(m->sources[i]);
    emitter_close(&m->em, m->opt.flush_timeout);
    monitor_auto_end(m);
    if (m->parked.close) m->parked.close(m->parked.ctx);
    proctree_free(m->tree);
    monitor_free(m);
    return status;
}
