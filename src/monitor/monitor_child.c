/* monitor_child.c — the job's process (see monitor_priv.h): spawned as a
 * shell would (every signal at its default but those the caller ignored,
 * the caller's mask, stdio and environment as they are but for what a
 * source adds), its tree's zombies reaped with their final I/O read first,
 * signals forwarded to it (or ending an attach), and the stop a limit
 * requests (SIGTERM, then the tree after --kill-grace). */
#include "monitor_priv.h"

/* The signals forwarded to the job (the rest of the signalfd's are
 * SIGCHLD and, blocked only, SIGPIPE). */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void monitor_forwarded_signals(sigset_t *set)
{
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(set, forwarded_signals[i]);
}

void monitor_reap_children(monitor *m)
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

void monitor_handle_signal(monitor *m, const struct signalfd_siginfo *si)
{
    int sig = (int)si->ssi_signo;
    if (sig == SIGCHLD) {
        if (!m->opt.attach) monitor_reap_children(m);
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

void monitor_request_kill(monitor_ctx *ctx, const char *reason)
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

int monitor_spawn_job(monitor *m)
{
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t sigdef;
    default_signals(&sigdef);
    posix_spawnattr_setsigdefault(&attr, &sigdef);
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

void monitor_raise_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max > 65536 ? 65536 : r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}
