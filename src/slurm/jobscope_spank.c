/* jobscope_spank.c — the Slurm SPANK plugin (build/jobscope-spank.so): every
 * task of every job step on a node is watched by a `jobscope attach` from its
 * start to its end, with no change to the user's batch script (docs/slurm.md).
 *
 *   plugstack.conf:  optional /usr/local/lib/jobscope/jobscope-spank.so output=URL interval=10
 *   users:           sbatch --jobscope=off | --jobscope=interval=0.5,gpu
 *
 * Where it acts (slurmstepd, "remote" context, as root):
 *   slurm_spank_init         the site's settings (spank_conf.c); the --jobscope
 *                            option is registered in every context, so sbatch,
 *                            salloc and srun check it before the job starts;
 *   slurm_spank_user_init    the user's --jobscope=... (Slurm hands options
 *                            over in this phase, not in post_fork);
 *   slurm_spank_task_post_fork  for each task, once it is forked and in its
 *                            cgroups, before Slurm lets it exec: starts
 *                            `jobscope attach --exit-status-fd 3 ... PID`, a
 *                            grandchild of slurmstepd in its own session, moved
 *                            out of the step's cgroups (so Slurm neither counts
 *                            nor kills it), which waits until the task has
 *                            exec'd the user's program;
 *   slurm_spank_task_exit    slurmstepd has reaped the task: its wait status
 *                            goes down the socket, the monitor takes its final
 *                            sample at that instant and closes its end, which
 *                            this callback waits for (250 ms at most) so that
 *                            the task's cgroup, with its exact CPU total, is
 *                            still there to read;
 *   slurm_spank_exit         closes what is left (a monitor then ends "ended").
 *
 * The job is sacred: every callback returns success whatever happens (a
 * failure is one line in slurmd's log); nothing is changed in the task (its
 * environment, signals, exit status, limits); slurmstepd waits only for a
 * fork and the intermediate child's exit, never for jobscope.  Everything
 * the child needs (argv, environment, cgroup files) is prepared before the
 * fork: slurmstepd is threaded, so the child makes only async-signal-safe
 * calls until it executes jobscope.
 *
 * SPANK gives a plugin no context pointer: the per-step state below lives in
 * this slurmstepd process only (one step per slurmstepd). */
#include "spank_conf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#ifndef JOBSCOPE_BIN
#define JOBSCOPE_BIN "/usr/local/bin/jobscope"
#endif

SPANK_PLUGIN(jobscope, 1);

extern char **environ;

static spank_conf site; /* plugstack.conf's settings */
static int site_ok;     /* parsed (remote context) */
static spank_conf step; /* the site's with the user's --jobscope applied */
static int *status_fds; /* per local task: the socket to its monitor, -1 */
static int nstatus_fds;
static char self_exe[512]; /* slurmstepd: a task still showing it has not exec'd */
#define MAX_CGROUP_MOUNTS 16
static char cgroup_procs[MAX_CGROUP_MOUNTS][256]; /* the root cgroup.procs of each hierarchy */
static int ncgroup_procs;

static int check_option(int val, const char *optarg, int remote)
{
    spank_conf c;
    char err[256];
    spank_conf_defaults(&c, JOBSCOPE_BIN);
    if (spank_conf_user(&c, optarg, err, sizeof err) == 0) return 0;
    slurm_error("jobscope: %s", err);
    return -1;
}

static struct spank_option js_option = {
    "jobscope",
    "off|on|interval=S|gpu|nogpu",
    "jobscope monitoring of this job (docs/slurm.md): off, on, interval=SECONDS, gpu, nogpu "
    "(comma-separated)",
    1,
    0,
    check_option};

/* The mount point of every cgroup hierarchy, from /proc/self/mountinfo:
 * "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS". */
static void find_cgroup_mounts(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f) && ncgroup_procs < MAX_CGROUP_MOUNTS) {
        const char *dash = strstr(line, " - ");
        if (!dash || (strncmp(dash, " - cgroup ", 10) && strncmp(dash, " - cgroup2 ", 11)))
            continue;
        char mp[200];
        if (sscanf(line, "%*s %*s %*s %*s %199s", mp) != 1) continue;
        snprintf(cgroup_procs[ncgroup_procs++], sizeof cgroup_procs[0], "%s/cgroup.procs", mp);
    }
    fclose(f);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    if ((ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR) &&
        spank_option_register(sp, &js_option) != ESPANK_SUCCESS)
        slurm_error("jobscope: cannot register --jobscope");
    if (!spank_remote(sp)) return 0;
    char err[256];
    spank_conf_defaults(&site, JOBSCOPE_BIN);
    if (spank_conf_site(&site, ac, av, err, sizeof err) < 0) {
        slurm_error("jobscope: %s; no job is watched", err);
        return 0;
    }
    if (access(site.jobscope, X_OK) != 0) {
        slurm_error("jobscope: %s: %m; no job is watched (plugstack.conf: jobscope=PATH)",
                    site.jobscope);
        return 0;
    }
    site_ok = 1;
    step = site; /* until user_init applies the user's option */
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    self_exe[n > 0 ? n : 0] = 0;
    find_cgroup_mounts();
    return 0;
}

/* ---- in the child, until exec: async-signal-safe calls only ------------- */

static size_t fmt_u(char *out, unsigned long v)
{
    char t[24];
    size_t n = 0, k = 0;
    do t[n++] = (char)('0' + v % 10);
    while ((v /= 10));
    while (n) out[k++] = t[--n];
    out[k] = 0;
    return k;
}

/* Leaves the step's cgroups for the root of every hierarchy: Slurm must
 * neither count the monitor as the job's nor kill it with the step. */
static void leave_step_cgroups(void)
{
    char pid[24];
    size_t n = fmt_u(pid, (unsigned long)getpid());
    for (int i = 0; i < ncgroup_procs; i++) {
        int fd = open(cgroup_procs[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (write(fd, pid, n) < 0) { /* not ours to move: stay */
        }
        close(fd);
    }
}

/* Until the task has exec'd the user's program (at most 2 s): Slurm
 * releases the tasks only after every post_fork callback returned. */
static void wait_for_exec(pid_t task)
{
    char path[48] = "/proc/", exe[512];
    size_t k = 6 + fmt_u(path + 6, (unsigned long)task);
    memcpy(path + k, "/exe", 5);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 2000 && self_exe[0]; i++) {
        ssize_t n = readlink(path, exe, sizeof exe - 1);
        if (n < 0) return; /* gone (or a kernel thread): attach will say */
        exe[n] = 0;
        if (strcmp(exe, self_exe)) return;
        nanosleep(&ms, NULL);
    }
}

static void monitor_child(char **argv, char **envp, pid_t task, int rfd, const char *log)
{
    setsid();
    leave_step_cgroups();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    int hi = fcntl(rfd, F_DUPFD, 10);
    int in = open("/dev/null", O_RDONLY);
    int out = log[0] ? open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
    if (out < 0) out = open("/dev/null", O_WRONLY);
    if (hi < 0 || in < 0 || out < 0) _exit(125);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    dup2(hi, 3);
    fcntl(3, F_SETFD, 0);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
#endif
        for (int fd = 4; fd < 4096; fd++) close(fd);
    if (chdir("/")) { /* "/" always exists */
    }
    umask(022);
    wait_for_exec(task);
    execve(argv[0], argv, envp);
    _exit(127);
}

/* ---- the task's monitor ---------------------------------------------------- */

#define MAX_ARGS 96
#define MAX_ENV  256

static void job_env(spank_t sp, const char *var, char *out, size_t n)
{
    if (spank_getenv(sp, var, out, (int)n) != ESPANK_SUCCESS) out[0] = 0;
}

static void task_ids(spank_t sp, uint32_t stepid, spank_task_ids *t)
{
    memset(t, 0, sizeof *t);
    uint32_t job = 0, array_job = 0, array_task = 0, gtid = 0;
    spank_get_item(sp, S_JOB_ID, &job);
    snprintf(t->raw_job_id, sizeof t->raw_job_id, "%u", job);
    /* an array element has both; other jobs give 0, or their own id with
     * task NO_VAL */
    if (spank_get_item(sp, S_JOB_ARRAY_ID, &array_job) == ESPANK_SUCCESS && array_job &&
        spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &array_task) == ESPANK_SUCCESS &&
        array_task != NO_VAL) {
        snprintf(t->array_job_id, sizeof t->array_job_id, "%u", array_job);
        snprintf(t->array_task_id, sizeof t->array_task_id, "%u", array_task);
    }
    /* the unique id (SLURM_JOB_ID, what the epilog, scontrol and sacct -j
     * know); an array element's ARRAY_TASK form is in the tags */
    snprintf(t->job_id, sizeof t->job_id, "%u", job);
    if (stepid == SLURM_BATCH_SCRIPT)
        snprintf(t->step, sizeof t->step, "batch");
    else if (stepid == SLURM_EXTERN_CONT)
        snprintf(t->step, sizeof t->step, "extern");
    else if (stepid == SLURM_INTERACTIVE_STEP)
        snprintf(t->step, sizeof t->step, "interactive");
    else
        snprintf(t->step, sizeof t->step, "%u", stepid);
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &gtid) == ESPANK_SUCCESS)
        snprintf(t->task, sizeof t->task, "%u", gtid);
    job_env(sp, "SLURM_JOB_USER", t->user, sizeof t->user); /* not in the batch step's */
    uid_t uid;
    if (!t->user[0] && spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS) {
        struct passwd pw, *r = NULL;
        char pwbuf[1024];
        if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &r) == 0 && r)
            snprintf(t->user, sizeof t->user, "%s", pw.pw_name);
        else
            snprintf(t->user, sizeof t->user, "%u", (unsigned)uid);
    }
    job_env(sp, "SLURM_JOB_ACCOUNT", t->account, sizeof t->account);
    job_env(sp, "SLURM_JOB_PARTITION", t->partition, sizeof t->partition);
    job_env(sp, "SLURM_CLUSTER_NAME", t->cluster, sizeof t->cluster);
    /* the allocation as slurmstepd knows it (the environment shows less:
     * not the step's memory, nor which cores) */
    char *cores = NULL;
    uint64_t mem = 0;
    if (spank_get_item(sp, S_JOB_ALLOC_CORES, &cores) == ESPANK_SUCCESS && cores)
        snprintf(t->alloc_cores, sizeof t->alloc_cores, "%s", cores);
    if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mem) == ESPANK_SUCCESS && mem)
        snprintf(t->alloc_mem_mb, sizeof t->alloc_mem_mb, "%llu", (unsigned long long)mem);
    cores = NULL;
    mem = 0;
    if (spank_get_item(sp, S_STEP_ALLOC_CORES, &cores) == ESPANK_SUCCESS && cores)
        snprintf(t->step_cores, sizeof t->step_cores, "%s", cores);
    if (spank_get_item(sp, S_STEP_ALLOC_MEM, &mem) == ESPANK_SUCCESS && mem)
        snprintf(t->step_mem_mb, sizeof t->step_mem_mb, "%llu", (unsigned long long)mem);
}

static int env_wanted_from_job(const char *kv)
{
    static const char *const gpu[] = {"CUDA_VISIBLE_DEVICES=", "ROCR_VISIBLE_DEVICES=",
                                      "GPU_DEVICE_ORDINAL=", "HIP_VISIBLE_DEVICES="};
    if (!strncmp(kv, "SLURM_", 6)) return 1;
    for (size_t i = 0; i < sizeof gpu / sizeof gpu[0]; i++)
        if (!strncmp(kv, gpu[i], strlen(gpu[i]))) return 1;
    return 0;
}

/* The monitor's environment: a plain PATH; the node's JOBSCOPE_* settings
 * (slurmd's own environment: JOBSCOPE_SERVE_SOCKET, JOBSCOPE_SPOOL_DIR);
 * the job's SLURM_* and GPU selection variables (the allocation the views
 * read), with this task's SLURM_PROCID/SLURM_LOCALID.  Nothing else of the
 * job's: the monitor runs as root. */
static int build_env(spank_t sp, const spank_task_ids *t, int local, char **envp, char *buf,
                     size_t len)
{
    size_t used = 0;
    int n = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(buf + used, len - used, __VA_ARGS__);                                    \
        if (k_ < 0 || (size_t)k_ >= len - used || n + 1 >= MAX_ENV) return -1;                     \
        envp[n++] = buf + used;                                                                    \
        used += (size_t)k_ + 1;                                                                    \
    } while (0)
    PUT("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "JOBSCOPE_", 9)) PUT("%s", *e);
    char **jenv = NULL;
    if (spank_get_item(sp, S_JOB_ENV, &jenv) == ESPANK_SUCCESS && jenv)
        for (char **e = jenv; *e; e++)
            if (env_wanted_from_job(*e) && strncmp(*e, "SLURM_PROCID=", 13) &&
                strncmp(*e, "SLURM_LOCALID=", 14))
                PUT("%s", *e);
    if (t->task[0]) PUT("SLURM_PROCID=%s", t->task);
    PUT("SLURM_LOCALID=%d", local);
#undef PUT
    envp[n] = NULL;
    return n;
}

#define ACK_MS 250
static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int spawn_monitor(char **argv, char **envp, pid_t task, const char *log, int *wfd)
{
    int p[2]; /* a socket pair, not a pipe: send() without SIGPIPE */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0) return -1;
    pid_t mid = fork();
    if (mid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (mid == 0) { /* the intermediate child: lets the monitor go, so that
                       slurmstepd never has it as a child */
        pid_t g = fork();
        if (g == 0) monitor_child(argv, envp, task, p[0], log);
        _exit(g < 0 ? 1 : 0);
    }
    close(p[0]);
    int st = 0;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        close(p[1]);
        return -1;
    }
    *wfd = p[1];
    return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    if (!site_ok) return 0;
    step = site;
    char *optarg = NULL, err[256];
    if (spank_option_getopt(sp, &js_option, &optarg) == ESPANK_SUCCESS && optarg &&
        spank_conf_user(&step, optarg, err, sizeof err) < 0)
        slurm_error("jobscope: %s (the site's settings apply)", err);
    return 0;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
    if (!site_ok) return 0;
    uint32_t stepid = 0;
    if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS) return 0;
    const spank_conf *c = &step;
    if (stepid == SLURM_EXTERN_CONT && !c->extern_step) return 0;
    if (!c->enabled) return 0;

    int local = -1;
    pid_t pid = 0;
    uint32_t ntasks = 0;
    if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS || local < 0 || pid <= 0)
        return 0;
    if (!status_fds) {
        if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS || !ntasks)
            return 0;
        status_fds = malloc(ntasks * sizeof *status_fds);
        if (!status_fds) return 0;
        for (uint32_t i = 0; i < ntasks; i++) status_fds[i] = -1;
        nstatus_fds = (int)ntasks;
    }
    if (local >= nstatus_fds) return 0;

    static spank_task_ids ids;
    static char *argv[MAX_ARGS], argbuf[16384], *envp[MAX_ENV], envbuf[65536];
    task_ids(sp, stepid, &ids);
    if (spank_conf_argv(c, &ids, pid, 3, argv, MAX_ARGS, argbuf, sizeof argbuf) < 0 ||
        build_env(sp, &ids, local, envp, envbuf, sizeof envbuf) < 0) {
        slurm_error("jobscope: job %s step %s task %s: arguments too long, not watched", ids.job_id,
                    ids.step, ids.task);
        return 0;
    }
    double t0 = now_ms();
    if (spawn_monitor(argv, envp, pid, c->log, &status_fds[local]) < 0)
        slurm_error("jobscope: job %s step %s task %s: cannot start the monitor: %m", ids.job_id,
                    ids.step, ids.task);
    else
        slurm_debug("jobscope: job %s step %s task %s: monitor started in %.2f ms", ids.job_id,
                    ids.step, ids.task, now_ms() - t0);
    return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    int local = -1, status = 0;
    if (!status_fds || spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS || local < 0 ||
        local >= nstatus_fds || status_fds[local] < 0)
        return 0;
    if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) == ESPANK_SUCCESS) {
        char msg[24];
        size_t n = fmt_u(msg, (unsigned long)(unsigned)status & 0xffff);
        msg[n++] = '\n';
        /* a few bytes into an empty socket buffer never block; a monitor
         * that is gone is EPIPE, never a SIGPIPE for slurmstepd */
        if (send(status_fds[local], msg, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n) {
            /* until the monitor has read its final figures (it closes its
             * end then): slurmstepd removes the task's cgroups right after
             * this callback.  Bounded: a stuck monitor costs the step's end
             * ACK_MS at most, never the job's status */
            struct pollfd p = {status_fds[local], POLLIN, 0};
            char c;
            double t0 = now_ms(), deadline = t0 + ACK_MS;
            for (;;) {
                int left = (int)(deadline - now_ms());
                if (left <= 0 || poll(&p, 1, left) == 0) break;
                ssize_t r = recv(status_fds[local], &c, 1, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EINTR)) break;
            }
            slurm_debug("jobscope: task %d: the monitor's final sample took %.2f ms", local,
                        now_ms() - t0);
        }
    }
    close(status_fds[local]);
    status_fds[local] = -1;
    return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    for (int i = 0; i < nstatus_fds; i++)
        if (status_fds[i] >= 0) close(status_fds[i]);
    free(status_fds);
    status_fds = NULL;
    nstatus_fds = 0;
    return 0;
}
