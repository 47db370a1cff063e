/* kschain.c — kickstart's jobs: finding each one's executable, running the
 * side jobs (KICKSTART_SETUP, _PREJOB, _POSTJOB, _CLEANUP) and the main job,
 * with kickstart's chaining rules (kickstart.h) and what the record wants
 * of each: start, duration, pid, rusage, wait status or failure.
 *
 * The main job runs under the monitor (src/monitor): online monitoring
 * with -m, the whole tree's totals for the record's monitoring summary.
 * Side jobs are plain children, as kickstart's.  Every job gets the
 * record's stdin, stdout and stderr (kickstart shares them between jobs:
 * appended temporary files by default).  SIGINT, SIGTERM and SIGQUIT that
 * jobscope receives go to the job running now, as kickstart forwards
 * them; the monitor does it for the main job. */
#include "kickstart.h"
#include "../util/clock.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The side job running now, for the signal handler (a handler can reach
 * nothing else; the only state of this module outside ks_run). */
static volatile sig_atomic_t ks_child;

static void forward_signal(int sig)
{
    if (ks_child > 0) kill((pid_t)ks_child, sig);
}

/* ---- finding the executable ------------------------------------------------ */

static int isfile(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* As kickstart: an absolute path as it is, else the working directory,
 * else each PATH entry.  A new string, or NULL with errno. */
static char *pathfind(const char *fn)
{
    if (!*fn) return errno = ENOENT, NULL;
    if (fn[0] == '/' || isfile(fn)) return isfile(fn) ? strdup(fn) : NULL;
    int saved = errno;
    const char *path = getenv("PATH");
    if (!path) return errno = saved, NULL;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if (n) {
            char *t = malloc(n + strlen(fn) + 2);
            if (!t) return NULL;
            sprintf(t, "%.*s/%s", (int)n, p, fn);
            if (isfile(t)) return t;
            free(t);
        }
        p += n + (p[n] == ':');
    }
    return NULL;
}

static int executable(const char *path, int make_exec)
{
    if (access(path, R_OK | X_OK) == 0) return 0;
    struct stat st;
    if (!make_exec || stat(path, &st) != 0) return -1;
    mode_t add = S_IXUSR | S_IRUSR | S_IXGRP | S_IRGRP | S_IXOTH | S_IROTH;
    if (chmod(path, st.st_mode | add) != 0) return -1;
    return access(path, R_OK | X_OK);
}

void kschain_prepare(ks_run *r, ks_job *j, ks_args *argv)
{
    memset(j, 0, sizeof *j);
    j->argv = *argv;
    memset(argv, 0, sizeof *argv);
    if (j->argv.n == 0) return;
    errno = 0;
    char *found = pathfind(j->argv.v[0]);
    if (!found || executable(found, r->make_exec) != 0) {
        j->status = -127;
        j->saverr = errno ? errno : ENOENT;
        j->valid = 2;
        free(found);
    } else {
        if (!strchr(found, '/')) { /* found in the working directory: no PATH search */
            char *dot = malloc(strlen(found) + 3);
            if (dot) sprintf(dot, "./%s", found);
            free(found);
            found = dot;
        }
        free(j->argv.v[0]);
        j->argv.v[0] = found;
        j->valid = found ? 1 : 2;
    }
    ksstat_file(&j->exe, j->argv.v[0], 0, 0, 0);
}

void kschain_free(ks_job *j)
{
    ks_args_free(&j->argv);
    ksstat_free(&j->exe);
    memset(j, 0, sizeof *j);
}

/* ---- running one job --------------------------------------------------------- */

/* The job's stdin, stdout, stderr; -1 if one cannot be opened (kickstart's
 * child then exits 126).  opened[]: descriptors to close afterwards. */
static int job_stdio(ks_run *r, int fds[3], int opened[3])
{
    ks_stat *s[3] = {&r->input, &r->output, &r->error};
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        fds[i] = ksstat_job_fd(s[i], &opened[i]);
        if (fds[i] < 0) ok = 0;
    }
    return ok ? 0 : -1;
}

static void close_stdio(const int opened[3])
{
    for (int i = 0; i < 3; i++)
        if (opened[i] >= 0) close(opened[i]);
}

/* exec failed: kickstart's child says so on the job's stderr, exits 127. */
static void exec_failed(ks_job *j, int err_fd, int err)
{
    if (err_fd >= 0) dprintf(err_fd, "execv: %s\n", strerror(err));
    j->status = 127 << 8;
}

/* kickstart reports at least 1 ms of each CPU time. */
static void min_usage(struct rusage *ru)
{
    if (ru->ru_utime.tv_sec == 0 && ru->ru_utime.tv_usec < 1000) ru->ru_utime.tv_usec = 1000;
    if (ru->ru_stime.tv_sec == 0 && ru->ru_stime.tv_usec < 1000) ru->ru_stime.tv_usec = 1000;
}

static void run_side(ks_run *r, ks_job *j, kstimer *t, const sigset_t *job_mask)
{
    int fds[3], opened[3];
    gettimeofday(&j->start, NULL);
    if (job_stdio(r, fds, opened) != 0) {
        j->status = 126 << 8;
    } else {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        for (int fd = 0; fd < 3; fd++)
            if (fds[fd] != fd) posix_spawn_file_actions_adddup2(&fa, fds[fd], fd);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigmask(&attr, job_mask);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        int rc = posix_spawn(&j->pid, j->argv.v[0], &fa, &attr, j->argv.v, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) {
            j->pid = 0;
            exec_failed(j, fds[2], rc);
        } else {
            ks_child = j->pid;
            kstimer_side(t, j->pid);
            while (wait4(j->pid, &j->status, 0, &j->ru) < 0 && errno == EINTR) {}
            kstimer_side(t, 0);
            ks_child = 0;
        }
    }
    close_stdio(opened);
    min_usage(&j->ru);
    gettimeofday(&j->finish, NULL);
}

static struct timeval to_timeval(double t)
{
    struct timeval tv = {(time_t)t, (suseconds_t)((t - (double)(time_t)t) * 1e6)};
    return tv;
}

/* The monitor for the main job; without the configured outputs when they
 * cannot be opened (the job runs whatever happens to its events). */
static monitor *open_monitor(ks_run *r, monitor_config *cfg)
{
    monitor *m = monitor_new(cfg);
    if (m || cfg->noutputs == 0) return m;
    cfg->noutputs = 1;
    cfg->outputs[0] = "/dev/null";
    return monitor_new(cfg);
}

static void run_main(ks_run *r, ks_job *j, kstimer *t, const sigset_t *job_mask)
{
    int fds[3], opened[3];
    monitor_config cfg = r->mon;
    monitor *m = NULL;
    if (job_stdio(r, fds, opened) == 0) {
        cfg.argv = j->argv.v;
        cfg.set_job_stdio = 1;
        memcpy(cfg.job_stdio, fds, sizeof fds);
        cfg.result = &j->mon;
        m = open_monitor(r, &cfg);
    }
    if (!m) { /* the engine refused: the job still runs, unmonitored */
        close_stdio(opened);
        run_side(r, j, t, job_mask);
        return;
    }
    kstimer_main(t, &j->mon.pid);
    monitor_run(m);
    kstimer_main(t, NULL);
    pthread_sigmask(SIG_SETMASK, job_mask, NULL); /* the monitor left its signals blocked */
    close_stdio(opened);
    j->monitored = 1;
    j->start = to_timeval(j->mon.start_ts);
    j->finish = to_timeval(j->mon.end_ts > 0 ? j->mon.end_ts : now_epoch());
    if (j->mon.spawn_error) {
        exec_failed(j, fds[2], j->mon.spawn_error);
    } else {
        j->pid = j->mon.pid;
        j->status = j->mon.status;
        j->ru = j->mon.ru;
    }
    min_usage(&j->ru);
}

/* ---- the chain ---------------------------------------------------------------- */

static int status_code(int status)
{
    if (status < 0) return 127;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 127;
}

/* KICKSTART_NAME, or the GRIDSTART_NAME of older Pegasus. */
static const char *side_env(const char *name)
{
    char k[64];
    snprintf(k, sizeof k, "KICKSTART_%s", name);
    const char *v = getenv(k);
    if (v) return v;
    snprintf(k, sizeof k, "GRIDSTART_%s", name);
    return getenv(k);
}

/* Prepares a side job from its variable: 1 to run it, 0 none, -1 it did
 * not parse (kickstart exits 1). */
static int side_job(ks_run *r, ks_job *j, const char *name)
{
    const char *line = side_env(name);
    if (!line) return 0;
    ks_args a = {0};
    char err[256];
    if (ksparse_line(line, &a, err, sizeof err) != 0) {
        fprintf(stderr, "jobscope kickstart: %s\n", err);
        ks_args_free(&a);
        return -1;
    }
    kschain_prepare(r, j, &a);
    return j->valid == 1;
}

typedef struct chain_ctx {
    kstimer timer;
    sigset_t job_mask;
    struct sigaction saved[3];
} chain_ctx;

static const int forwarded[3] = {SIGINT, SIGTERM, SIGQUIT};

static void chain_begin(ks_run *r, chain_ctx *c)
{
    memset(c, 0, sizeof *c);
    pthread_sigmask(SIG_SETMASK, NULL, &c->job_mask);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaction(forwarded[i], &sa, &c->saved[i]);
    if (r->term_timeout > 0) kstimer_start(&c->timer, r->term_timeout, r->kill_timeout);
}

static void chain_end(chain_ctx *c)
{
    for (int i = 0; i < 3; i++) sigaction(forwarded[i], &c->saved[i], NULL);
}

/* setup, prejob, main job, postjob; result as kickstart computes it. */
static int run_stages(ks_run *r, chain_ctx *c)
{
    int result = 0, go;
    if ((go = side_job(r, &r->setup, "SETUP")) < 0) return -1;
    if (go) run_side(r, &r->setup, &c->timer, &c->job_mask);
    if (!kstimer_alarmed(&c->timer)) {
        if ((go = side_job(r, &r->prejob, "PREJOB")) < 0) return -1;
        if (go) run_side(r, &r->prejob, &c->timer, &c->job_mask);
        if (go) result = status_code(r->prejob.status);
    }
    if (result == 0 && !kstimer_alarmed(&c->timer)) {
        run_main(r, &r->main, &c->timer, &c->job_mask);
        result = status_code(r->main.status);
    } else {
        r->main.valid = 0; /* kickstart invalidates the main job's record */
    }
    if (result == 0 && !kstimer_alarmed(&c->timer)) {
        if ((go = side_job(r, &r->postjob, "POSTJOB")) < 0) return -1;
        if (go) run_side(r, &r->postjob, &c->timer, &c->job_mask);
        if (go) result = status_code(r->postjob.status);
    }
    return result;
}

int kschain_run(ks_run *r)
{
    chain_ctx c;
    chain_begin(r, &c);
    int result = run_stages(r, &c);
    kstimer_stop(&c.timer);
    r->alarmed = c.timer.alarmed;
    if (result >= 0) {
        int go = side_job(r, &r->cleanup, "CLEANUP");
        if (go > 0) run_side(r, &r->cleanup, &c.timer, &c.job_mask);
        if (go < 0) result = -1;
    }
    chain_end(&c);
    if (result < 0 && !r->main.start.tv_sec) r->main.valid = 0; /* never ran */
    if (result >= 0 && r->alarmed) result = SIGALRM;
    return result;
}
