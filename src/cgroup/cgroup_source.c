/* cgroup_source.c — the "cgroup" source (source.h).
 *
 * run:    open() creates jobscope-PID under jobscope's own cgroup and moves
 *         jobscope into it just before the job is spawned; start() moves
 *         jobscope back, so the job and all its descendants stay inside
 *         (no change to the spawn).  stop() reads the last figures and
 *         removes the cgroup once it is empty.
 * attach: --cgroup auto watches the PID's cgroup, --cgroup PATH that one;
 *         nothing is created or removed.
 * Every sample gets the cgroup figures as cg_* fields; the record gets a
 * "cgroup" object with the exact memory peak and the OOM kills.  With root,
 * the netlink process connector adds total_processes.
 * The limits source reads the figures and the cgroup through
 * cgroup_source_*() (same sampler thread, called after this source). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cgroup.h"
#include "../source.h"
#include "../cli/options.h"

extern const source_ops cgroup_source_ops;

typedef struct cgsrc {
    source    base;
    cg_child  child;             /* run: the cgroup we made */
    cgroup   *cg;                /* the cgroup read (child.cg or a foreign one) */
    int       owned, inside;     /* we made it; jobscope is in it now */
    int       verbose, run_mode;
    cg_stats  st;
    int       have;              /* st is valid */
    int       removed;           /* stop() removed it */
    procconn *pc;
    double    kill_at;           /* monotonic time a limit asked for the kill; 0 = none */
    double    kill_grace;
    int       version;
    char      path[512];
} cgsrc;

static cgsrc *active;            /* for the limits source */

static void diag(const cgsrc *s, const char *fmt, ...)
{
    if (!s->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("jobscope: cgroup: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static source *cgsrc_open(monitor_ctx *ctx)
{
    const js_options *o = ctx->opt;
    cgsrc *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->verbose = o->verbose;
    s->run_mode = ctx->run_mode;
    s->kill_grace = o->kill_grace;
    int explicit = o->cgroup_mode == JS_CGROUP_ON || o->cgroup_mode == JS_CGROUP_PATH;

    if (ctx->run_mode && o->cgroup_mode != JS_CGROUP_OFF) {
        char name[64];
        snprintf(name, sizeof name, "jobscope-%ld", (long)getpid());
        if (cgroup_create_child(name, &s->child) == 0) {
            if (cgroup_enter(&s->child) == 0) {
                s->cg = s->child.cg;
                s->owned = s->inside = 1;
            } else {
                int e = errno;
                cgroup_child_destroy(&s->child, 0);
                errno = e;
            }
        }
        if (!s->cg) {
            if (explicit && !o->quiet)
                fprintf(stderr, "jobscope: --cgroup: cannot make a cgroup for the job (%s); going on without\n",
                        strerror(errno));
            else
                diag(s, "no cgroup of its own for the job: %s", strerror(errno));
        }
    } else if (!ctx->run_mode && explicit) {
        s->cg = o->cgroup_mode == JS_CGROUP_PATH ? cgroup_open_path(o->cgroup_path) : cgroup_of_pid(o->pid);
        if (!s->cg && !o->quiet)
            fprintf(stderr, "jobscope: --cgroup: cannot open the cgroup of %s: %s; going on without\n",
                    o->cgroup_mode == JS_CGROUP_PATH ? o->cgroup_path : "the process", strerror(errno));
    }
    if (s->cg) {
        s->version = s->cg->ops->version;
        snprintf(s->path, sizeof s->path, "%s", s->cg->path);
    }
    if (s->cg)
        diag(s, "using v%d cgroup %s%s", s->cg->ops->version, s->cg->path, s->owned ? " (made for the job)" : "");

    if (geteuid() == 0 && o->cgroup_mode != JS_CGROUP_OFF) {
        s->pc = procconn_open();
        if (!s->pc)
            diag(s, "no process connector: %s", strerror(errno));
    }
    if (!s->cg && !s->pc) {
        free(s);
        return NULL;
    }
    s->base.ops = &cgroup_source_ops;
    active = s;
    return &s->base;
}

static void cgsrc_start(source *src, monitor_ctx *ctx)
{
    cgsrc *s = (cgsrc *)src;
    if (s->inside) {
        if (cgroup_leave(&s->child) == 0)
            s->inside = 0;
        else
            diag(s, "cannot move jobscope back out of the job's cgroup: %s", strerror(errno));
    }
    if (s->pc) {
        pid_t root = ctx->root;
        procconn_start(s->pc, &root, 1);
    }
}

static void put_secs(jbuf *b, const char *k, uint64_t us) { json_fixed(b, k, (double)us / 1e6, 6); }

static void cgsrc_sample(source *src, monitor_ctx *ctx, const tree_sample *ts, jbuf *ev)
{
    cgsrc *s = (cgsrc *)src;
    if (s->pc) {
        /* attach: the processes that were there before we listened count too */
        if (!s->run_mode || procconn_lost(s->pc)) {
            pid_t pids[4096];
            int n = proctree_pids(ctx->tree, pids, 4096);
            procconn_add(s->pc, pids, n);
        }
        uint64_t t = procconn_total(s->pc);
        if (t < ts->total_procs)
            t = ts->total_procs;     /* events lost: never below what /proc saw */
        json_u64(ev, "total_processes", t);
    }
    if (!s->cg)
        return;
    s->have = s->cg->ops->read(s->cg, &s->st) == 0;
    if (!s->have)
        return;
    const cg_stats *st = &s->st;
    if (st->have & CG_HAVE_CPU)
        put_secs(ev, "cg_cpu_usage", st->cpu_usage_us);
    if (st->have & CG_HAVE_CPU_SPLIT) {
        put_secs(ev, "cg_cpu_user", st->cpu_user_us);
        put_secs(ev, "cg_cpu_system", st->cpu_system_us);
    }
    if (st->have & CG_HAVE_THROTTLE) {
        json_u64(ev, "cg_cpu_nr_throttled", st->cpu_nr_throttled);
        put_secs(ev, "cg_cpu_throttled", st->cpu_throttled_us);
    }
    if (st->have & CG_HAVE_MEM) {
        json_u64(ev, "cg_memory_current", st->mem_current);
        if (st->have & CG_HAVE_MEM_PEAK)
            json_u64(ev, "cg_memory_peak", st->mem_peak);
        if (st->mem_max != CG_NOLIMIT)
            json_u64(ev, "cg_memory_max", st->mem_max);
    }
    if (st->have & CG_HAVE_MEM_STAT) {
        json_u64(ev, "cg_memory_anon", st->mem_anon);
        json_u64(ev, "cg_memory_file", st->mem_file);
        json_u64(ev, "cg_memory_shmem", st->mem_shmem);
    }
    if (st->have & CG_HAVE_MEM_KERNEL)
        json_u64(ev, "cg_memory_kernel", st->mem_kernel);
    if (st->have & CG_HAVE_OOM)
        json_u64(ev, "cg_memory_oom", st->mem_oom);
    if (st->have & CG_HAVE_OOM_KILL) {
        json_u64(ev, "cg_memory_oom_kill", st->mem_oom_kill);
        json_u64(ev, "cg_memory_max_events", st->mem_max_events);
    }
    if (st->have & CG_HAVE_PIDS) {
        json_u64(ev, "cg_pids_current", st->pids_current);
        if (st->have & CG_HAVE_PIDS_PEAK)
            json_u64(ev, "cg_pids_peak", st->pids_peak);
        if (st->pids_max != CG_NOLIMIT)
            json_u64(ev, "cg_pids_max", st->pids_max);
        json_u64(ev, "cg_pids_max_events", st->pids_max_events);
    }
    if (st->have & CG_HAVE_IO) {
        json_u64(ev, "cg_io_rbytes", st->io_rbytes);
        json_u64(ev, "cg_io_wbytes", st->io_wbytes);
        json_u64(ev, "cg_io_rios", st->io_rios);
        json_u64(ev, "cg_io_wios", st->io_wios);
        json_arr_open(ev, "cg_io");
        for (int i = 0; i < st->nio; i++) {
            char dev[32];
            snprintf(dev, sizeof dev, "%u:%u", st->io[i].major, st->io[i].minor);
            json_obj_open(ev, NULL);
            json_str(ev, "dev", dev);
            json_u64(ev, "rbytes", st->io[i].rbytes);
            json_u64(ev, "wbytes", st->io[i].wbytes);
            json_u64(ev, "rios", st->io[i].rios);
            json_u64(ev, "wios", st->io[i].wios);
            json_obj_close(ev);
        }
        json_arr_close(ev);
    }
    if (st->have & CG_HAVE_PSI) {
        static const char *const names[CG_PSI_N][2] = {
            { "cg_psi_cpu_some_avg10", "cg_psi_cpu_some_total" },
            { "cg_psi_cpu_full_avg10", "cg_psi_cpu_full_total" },
            { "cg_psi_memory_some_avg10", "cg_psi_memory_some_total" },
            { "cg_psi_memory_full_avg10", "cg_psi_memory_full_total" },
            { "cg_psi_io_some_avg10", "cg_psi_io_some_total" },
            { "cg_psi_io_full_avg10", "cg_psi_io_full_total" },
        };
        for (int i = 0; i < CG_PSI_N; i++)
            if (st->psi[i].valid) {
                json_fixed(ev, names[i][0], st->psi[i].avg10, 2);
                put_secs(ev, names[i][1], st->psi[i].total_us);
            }
    }
}

/* run: reap what jobscope (a subreaper) inherited, so it leaves the cgroup */
static void reap_some(const cgsrc *s)
{
    if (s->run_mode)
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
}

/* A limit killed the job: whatever is still in the cgroup (daemons that
 * ignore SIGTERM, forks the tree had not seen) gets SIGKILL once the grace
 * period is over. */
static void sweep(cgsrc *s)
{
    double deadline = s->kill_at + s->kill_grace;
    s->cg->ops->kill(s->cg, SIGTERM);
    while (now_mono() < deadline && s->cg->ops->nprocs(s->cg) > 0) {
        reap_some(s);
        usleep(20000);
    }
    for (int i = 0; i < 200 && s->cg->ops->nprocs(s->cg) > 0; i++) {
        s->cg->ops->kill(s->cg, SIGKILL);
        reap_some(s);
        usleep(10000);
    }
    reap_some(s);
}

static void cgsrc_stop(source *src, monitor_ctx *ctx)
{
    cgsrc *s = (cgsrc *)src;
    if (s->pc)
        procconn_stop(s->pc);
    if (!s->cg)
        return;
    if (s->owned && s->kill_at > 0)
        sweep(s);
    cg_stats st;
    if (s->cg->ops->read(s->cg, &st) == 0) {
        s->st = st;
        s->have = 1;
    }
    if (s->owned) {
        if (s->inside)
            cgroup_leave(&s->child);
        reap_some(s);
        char *path = strdup(s->cg->path);       /* destroy frees s->cg */
        s->removed = cgroup_child_destroy(&s->child, 0.5) == 0;
        if (!s->removed)
            diag(s, "cgroup %s left behind: processes still inside (try --wait-all)",
                 path ? path : "?");
        free(path);
        s->cg = NULL;       /* freed by cgroup_child_destroy */
    }
}

static void cgsrc_record(source *src, monitor_ctx *ctx, jbuf *rec)
{
    cgsrc *s = (cgsrc *)src;
    if (s->pc) {
        json_u64(rec, "total_processes", procconn_total(s->pc));
        if (procconn_lost(s->pc))
            json_u64(rec, "total_processes_lost_events", procconn_lost(s->pc));
    }
    if (!s->have)
        return;
    const cg_stats *st = &s->st;
    json_obj_open(rec, "cgroup");
    json_i64(rec, "version", s->version);
    json_str(rec, "path", s->path);
    json_bool(rec, "created", s->owned);
    if (s->owned)
        json_bool(rec, "removed", s->removed);
    if (st->have & CG_HAVE_CPU)
        put_secs(rec, "cpu_usage", st->cpu_usage_us);
    if (st->have & CG_HAVE_CPU_SPLIT) {
        put_secs(rec, "cpu_user", st->cpu_user_us);
        put_secs(rec, "cpu_system", st->cpu_system_us);
    }
    if (st->have & CG_HAVE_THROTTLE)
        put_secs(rec, "cpu_throttled", st->cpu_throttled_us);
    if (st->have & CG_HAVE_MEM_PEAK)
        json_u64(rec, "memory_peak", st->mem_peak);      /* exact: kept by the kernel */
    if (st->have & CG_HAVE_MEM) {
        json_u64(rec, "memory_current", st->mem_current);
        if (st->mem_max != CG_NOLIMIT)
            json_u64(rec, "memory_max", st->mem_max);
    }
    if (st->have & CG_HAVE_MEM_STAT) {
        json_u64(rec, "memory_anon", st->mem_anon);
        json_u64(rec, "memory_file", st->mem_file);     /* page cache still charged to the job */
        json_u64(rec, "memory_shmem", st->mem_shmem);
    }
    if (st->have & CG_HAVE_MEM_KERNEL)
        json_u64(rec, "memory_kernel", st->mem_kernel);
    if (st->have & CG_HAVE_OOM)
        json_u64(rec, "oom", st->mem_oom);
    if (st->have & CG_HAVE_OOM_KILL)
        json_u64(rec, "oom_kill", st->mem_oom_kill);
    if (st->have & CG_HAVE_PIDS_PEAK)
        json_u64(rec, "pids_peak", st->pids_peak);
    if (st->have & CG_HAVE_PIDS)
        json_u64(rec, "pids_max_events", st->pids_max_events);
    if (st->have & CG_HAVE_IO) {
        json_u64(rec, "io_rbytes", st->io_rbytes);
        json_u64(rec, "io_wbytes", st->io_wbytes);
    }
    if (st->have & CG_HAVE_PSI) {
        put_secs(rec, "psi_cpu_some_total", st->psi[CG_PSI_CPU_SOME].total_us);
        put_secs(rec, "psi_memory_some_total", st->psi[CG_PSI_MEM_SOME].total_us);
        put_secs(rec, "psi_memory_full_total", st->psi[CG_PSI_MEM_FULL].total_us);
        put_secs(rec, "psi_io_some_total", st->psi[CG_PSI_IO_SOME].total_us);
        put_secs(rec, "psi_io_full_total", st->psi[CG_PSI_IO_FULL].total_us);
    }
    json_obj_close(rec);
}

int cgroup_send_home(pid_t pid)
{
    cgsrc *s = active;
    if (!s || !s->inside || !s->child.home)
        return 0;                      /* jobscope is not in the job's cgroup */
    return s->child.home->ops->attach(s->child.home, pid);
}

static void cgsrc_close(source *src)
{
    cgsrc *s = (cgsrc *)src;
    if (s->inside)               /* the spawn failed: start() never ran */
        cgroup_leave(&s->child);
    if (s->owned && s->child.cg)
        cgroup_child_destroy(&s->child, 0);
    else if (!s->owned && s->cg)
        s->cg->ops->free(s->cg);
    procconn_close(s->pc);
    if (active == s)
        active = NULL;
    free(s);
}

const source_ops cgroup_source_ops = {
    .name = "cgroup",
    .open = cgsrc_open,
    .start = cgsrc_start,
    .sample = cgsrc_sample,
    .stop = cgsrc_stop,
    .record = cgsrc_record,
    .close = cgsrc_close,
};

cgroup *cgroup_source_cgroup(int *owned)
{
    if (owned)
        *owned = active && active->owned;
    return active ? active->cg : NULL;
}

const cg_stats *cgroup_source_stats(void)
{
    return active && active->cg && active->have ? &active->st : NULL;
}

void cgroup_source_kill(int sig)
{
    if (!active || !active->owned || !active->cg)
        return;
    if (!active->kill_at)
        active->kill_at = now_mono();
    active->cg->ops->kill(active->cg, sig);
}
