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
 * total_processes: from the pinned BPF set's fork program where the node
 * has it (src/bpf/bpfcount.h: no thread, no wake-up), else from the netlink
 * process connector (procconn.c).
 * The limits source reads the figures and the cgroup through
 * cgroup_source_*(ctx) (same sampler thread, called after this source). */
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
#include "../util/log.h"
#include "../model/metric.h"
#include "../bpf/bpfcount.h"

extern const source_ops cgroup_source_ops;

typedef struct cgsrc {
    source base;
    cg_child child;    /* run: the cgroup we made */
    cgroup *cg;        /* the cgroup read (child.cg or a foreign one) */
    int owned, inside; /* we made it; jobscope is in it now */
    int verbose, run_mode;
    cg_stats st;
    int have;         /* st is valid */
    int removed;      /* stop() removed it */
    procconn *pc;     /* total_processes through the connector, or */
    bpfcount *bc;     /* through the pinned BPF fork program */
    uint64_t bc_seen; /* attach: the sampler's total_procs when last given to bc */
    double kill_at;   /* monotonic time a limit asked for the kill; 0 = none */
    double kill_grace;
    int version;
    char path[512];
    int every_sample; /* --limit: every figure every sample (the limits read them) */
    double full_at;   /* monotonic time of the last read of every figure (0: never) */
    /* the job's activity, to know when memory.stat cannot have moved */
    uint64_t quiet_sig[7]; /* what moves it: the tree's and the cgroup's */
    double moved_at;       /* monotonic time it last moved */
    uint64_t tasks_sig[5]; /* the job's tasks when pids.current was last read */
    /* cgroup_source_still: what was last probed; the cgroup held every
     * task of the tree when it was last read whole */
    cg_probe still_probe;
    int still_known, all_inside;
    uint64_t total; /* total_processes as last given */
    int read_now;   /* again() read this sample's figures; sample() writes them */
} cgsrc;

static source *cgsrc_open(monitor_ctx *ctx, const void *config)
{
    const cgroup_config *o = config;
    cgsrc *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->verbose = ctx->verbose;
    s->run_mode = ctx->run_mode;
    s->kill_grace = ctx->kill_grace;
    s->every_sample = o->for_limits;
    int explicit = o->mode == JS_CGROUP_ON || o->mode == JS_CGROUP_PATH;

    /* by default a cgroup of its own only where it costs the job nothing:
     * jobscope already in a charged memory cgroup, or limits to enforce */
    int place = explicit || o->for_limits || cgroup_memory_charged();
    if (ctx->run_mode && o->mode != JS_CGROUP_OFF && !place)
        js_log(s->verbose, "cgroup",
               "no cgroup of its own for the job: in the root memory cgroup it "
               "would add memory charging the job does not pay now (--cgroup makes one)");
    if (ctx->run_mode && o->mode != JS_CGROUP_OFF && place) {
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
            if (explicit && !ctx->quiet)
                fprintf(
                    stderr,
                    "jobscope: --cgroup: cannot make a cgroup for the job (%s); going on without\n",
                    strerror(errno));
            else
                js_log(s->verbose, "cgroup", "no cgroup of its own for the job: %s",
                       strerror(errno));
        }
    } else if (!ctx->run_mode && explicit) {
        s->cg =
            o->mode == JS_CGROUP_PATH ? cgroup_open_path(o->path) : cgroup_of_pid(ctx->attach_pid);
        if (!s->cg)
            js_log(!ctx->quiet, "--cgroup", "cannot open the cgroup of %s: %s; going on without",
                   o->mode == JS_CGROUP_PATH ? o->path : "the process", strerror(errno));
    }
    if (s->cg) {
        s->version = s->cg->ops->version;
        snprintf(s->path, sizeof s->path, "%s", s->cg->path);
    }
    if (s->cg)
        js_log(s->verbose, "cgroup", "using v%d cgroup %s%s", s->cg->ops->version, s->cg->path,
               s->owned ? " (made for the job)" : "");

    if (geteuid() == 0 && o->mode != JS_CGROUP_OFF) {
        s->bc = bpfcount_open(ctx->run_mode);
        if (!s->bc) s->pc = procconn_open();
        if (s->bc)
            js_log(s->verbose, "cgroup", "total_processes: counted by the pinned BPF program");
        else if (s->pc)
            js_log(s->verbose, "cgroup", "total_processes: through the process connector");
        else
            js_log(s->verbose, "cgroup", "no process connector: %s", strerror(errno));
    }
    if (!s->cg && !s->pc && !s->bc) {
        free(s);
        return NULL;
    }
    s->base.ops = &cgroup_source_ops;
    ctx->cgroup = s;
    return &s->base;
}

/* The job's forks as the kernel counted them, while none was lost. */
static int64_t job_creations(void *ctx)
{
    cgsrc *s = ctx;
    return s->bc && !bpfcount_lost(s->bc) ? bpfcount_forks(s->bc) : -1;
}

static void cgsrc_start(source *src, monitor_ctx *ctx)
{
    cgsrc *s = (cgsrc *)src;
    if (s->inside) {
        if (cgroup_leave(&s->child) == 0)
            s->inside = 0;
        else
            js_log(s->verbose, "cgroup", "cannot move jobscope back out of the job's cgroup: %s",
                   strerror(errno));
    }
    if (s->pc) {
        pid_t root = ctx->root;
        procconn_set_rest(s->pc, ctx->interval);
        procconn_start(s->pc, &root, 1);
    }
    if (s->bc && s->run_mode) {
        bpfcount_started(s->bc, ctx->root);
        /* every process of the job descends from the root, followed from
         * its spawn: the count gates the tree's discovery walk */
        proctree_set_creations(ctx->tree, job_creations, s);
    }
    if (s->bc && !s->run_mode) bpfcount_add(s->bc, &ctx->root, 1);
}

static uint64_t count_total(cgsrc *s)
{
    return s->bc ? bpfcount_total(s->bc) : procconn_total(s->pc);
}

static uint64_t count_lost(cgsrc *s)
{
    return s->bc ? bpfcount_lost(s->bc) : procconn_lost(s->pc);
}

static void put_secs(mset *rec, const char *k, uint64_t us)
{
    mset_put_fixed(rec, k, (double)us / 1e6, 6);
}

/* The cg_* fields of a sample from the cgroup's figures, into the sample's
 * value set (names, units, decimals: src/model/catalogue.c), in the order
 * of the event: the scalars, the per-device cg_io rows, the pressure.
 * Also driven by the golden-output test on the fixtures. */
void cgroup_sample_fields(mset *set, const cg_stats *st)
{
    if (st->have & CG_HAVE_CPU) mset_u64(set, M_CG_CPU_USAGE, st->cpu_usage_us);
    if (st->have & CG_HAVE_CPU_SPLIT) {
        mset_u64(set, M_CG_CPU_USER, st->cpu_user_us);
        mset_u64(set, M_CG_CPU_SYSTEM, st->cpu_system_us);
    }
    if (st->have & CG_HAVE_THROTTLE) {
        mset_u64(set, M_CG_CPU_NR_THROTTLED, st->cpu_nr_throttled);
        mset_u64(set, M_CG_CPU_THROTTLED, st->cpu_throttled_us);
    }
    if (st->have & CG_HAVE_MEM) {
        mset_u64(set, M_CG_MEMORY_CURRENT, st->mem_current);
        if (st->have & CG_HAVE_MEM_PEAK) mset_u64(set, M_CG_MEMORY_PEAK, st->mem_peak);
        if (st->mem_max != CG_NOLIMIT) mset_u64(set, M_CG_MEMORY_MAX, st->mem_max);
    }
    if (st->have & CG_HAVE_MEM_STAT) {
        mset_u64(set, M_CG_MEMORY_ANON, st->mem_anon);
        mset_u64(set, M_CG_MEMORY_FILE, st->mem_file);
        mset_u64(set, M_CG_MEMORY_SHMEM, st->mem_shmem);
    }
    if (st->have & CG_HAVE_MEM_KERNEL) mset_u64(set, M_CG_MEMORY_KERNEL, st->mem_kernel);
    if (st->have & CG_HAVE_OOM) mset_u64(set, M_CG_MEMORY_OOM, st->mem_oom);
    if (st->have & CG_HAVE_OOM_KILL) {
        mset_u64(set, M_CG_MEMORY_OOM_KILL, st->mem_oom_kill);
        mset_u64(set, M_CG_MEMORY_MAX_EVENTS, st->mem_max_events);
    }
    if (st->have & CG_HAVE_PIDS) {
        mset_u64(set, M_CG_PIDS_CURRENT, st->pids_current);
        if (st->have & CG_HAVE_PIDS_PEAK) mset_u64(set, M_CG_PIDS_PEAK, st->pids_peak);
        if (st->pids_max != CG_NOLIMIT) mset_u64(set, M_CG_PIDS_MAX, st->pids_max);
        mset_u64(set, M_CG_PIDS_MAX_EVENTS, st->pids_max_events);
    }
    if (st->have & CG_HAVE_IO) {
        mset_u64(set, M_CG_IO_RBYTES, st->io_rbytes);
        mset_u64(set, M_CG_IO_WBYTES, st->io_wbytes);
        mset_u64(set, M_CG_IO_RIOS, st->io_rios);
        mset_u64(set, M_CG_IO_WIOS, st->io_wios);
    }
    if (st->have & CG_HAVE_IO) {
        for (int i = 0; i < st->nio; i++) {
            char dev[32];
            snprintf(dev, sizeof dev, "%u:%u", st->io[i].major, st->io[i].minor);
            mrow *r = mset_row(set, M_CG_IO_DEV_RBYTES, dev);
            mrow_u64(r, M_CG_IO_DEV_RBYTES, st->io[i].rbytes);
            mrow_u64(r, M_CG_IO_DEV_WBYTES, st->io[i].wbytes);
            mrow_u64(r, M_CG_IO_DEV_RIOS, st->io[i].rios);
            mrow_u64(r, M_CG_IO_DEV_WIOS, st->io[i].wios);
        }
        mset_group(set, M_CG_IO_DEV_RBYTES);
    }
    if (st->have & CG_HAVE_PSI)
        for (int i = 0; i < CG_PSI_N; i++)
            if (st->psi[i].valid) {
                mset_f64(set, (metric_id)(M_CG_PSI_CPU_SOME_AVG10 + 2 * i), st->psi[i].avg10);
                mset_u64(set, (metric_id)(M_CG_PSI_CPU_SOME_TOTAL + 2 * i), st->psi[i].total_us);
            }
}

/* What moves memory.stat's anon, file and shmem: the job's memory usage,
 * its processes' resident memory, page faults and file I/O (page cache).
 * Any change of these restarts the clock of moved_at. */
static void moved(cgsrc *s, const tree_sample *ts, double now)
{
    const uint64_t sig[7] = {s->st.mem_current, ts->rss_kb,   ts->c.rchar, ts->c.wchar,
                             ts->c.minflt,      ts->c.majflt, ts->procs};
    if (memcmp(sig, s->quiet_sig, sizeof sig)) {
        memcpy(s->quiet_sig, sig, sizeof sig);
        s->moved_at = now;
    }
}

/* memory.stat cannot have moved since it was last read: the job has been
 * quiet for 3 s (the kernel flushes the memory controller's statistics
 * every 2 s, so a read after the last change saw them whole), and the
 * cgroup holds the job alone (one jobscope made for it).  The reader
 * also wants memory.current unchanged. */
static int quiet(const cgsrc *s, const tree_sample *ts, double now)
{
    const uint64_t sig[6] = {ts->rss_kb,   ts->c.rchar,  ts->c.wchar,
                             ts->c.minflt, ts->c.majflt, ts->procs};
    return s->owned && s->moved_at > 0 && now - s->moved_at >= 3.0 &&
           !memcmp(sig, s->quiet_sig + 1, sizeof sig);
}

/* pids.current cannot have moved since it was last read: the cgroup holds
 * the job alone, whose tasks (threads of live processes, zombies not yet
 * reaped) and forks as the kernel counted them stand still.  Remembers them
 * for the next sample when they moved (pids.current is read then). */
static int same_tasks(cgsrc *s, const tree_sample *ts)
{
    int counted = s->bc || s->pc;
    const uint64_t sig[5] = {ts->threads, ts->zombies, ts->procs, ts->total_procs,
                             counted ? count_total(s) : 0};
    int same = s->owned && counted && !memcmp(sig, s->tasks_sig, sizeof sig);
    memcpy(s->tasks_sig, sig, sizeof sig);
    return same;
}

/* What a sample reads: the fork count, the cgroup's figures (those that
 * move every sample each time, the others every 10 s). */
static void cgsrc_read(cgsrc *s, monitor_ctx *ctx, const tree_sample *ts)
{
    if ((s->pc || s->bc) && !ts->still) { /* a still job forked nothing */
        /* attach: the processes that were there before we listened count
         * too (given to the BPF count only when the sampler found new ones) */
        if ((!s->run_mode || count_lost(s)) && (!s->bc || ts->total_procs != s->bc_seen)) {
            pid_t pids[4096];
            int n = proctree_pids(ctx->tree, pids, 4096);
            if (s->bc)
                bpfcount_add(s->bc, pids, n);
            else
                procconn_add(s->pc, pids, n);
            s->bc_seen = ts->total_procs;
        }
        uint64_t t = count_total(s);
        if (t < ts->total_procs) t = ts->total_procs; /* events lost: never below what /proc saw */
        s->total = t;
    }
    if (!s->cg) return;
    /* the figures that move every sample (CPU, memory.current, pids.current,
     * I/O), every sample; the others (limits, peaks, memory.stat, events,
     * PSI) every 10 s and at the end: they were most of a one-process
     * sample's cost (bench/README.md) */
    double now = now_mono();
    int full = s->every_sample || !s->have || !s->cg->ops->read_fast || now - s->full_at >= 10.0;
    unsigned skip = (quiet(s, ts, now) ? CG_SKIP_MEM_STAT : 0) |
                    (ts->still || same_tasks(s, ts) ? CG_SKIP_PIDS : 0) |
                    (ts->still ? CG_SKIP_STILL : 0);
    if (full && ts->still && s->have) /* what may move while nothing of the job runs */
        s->have = s->cg->ops->read_fast(s->cg, &s->st, skip | CG_STILL_LIMITS) == 0;
    else
        s->have = (full ? s->cg->ops->read(s->cg, &s->st)
                        : s->cg->ops->read_fast(s->cg, &s->st, skip)) == 0;
    if (full) s->full_at = now;
    if (!s->have) return;
    /* a task moved out of the cgroup runs where its figures do not count:
     * only while the cgroup holds the tree's every task (threads, zombies
     * not yet reaped) does its standing still say the tree's */
    if (!ts->still)
        s->all_inside = (s->st.have & CG_HAVE_PIDS) &&
                        s->st.pids_current == (uint64_t)ts->threads + ts->zombies;
    moved(s, ts, now);
    /* a peak read up to 10 s ago is never below what is there now */
    if ((s->st.have & CG_HAVE_MEM_PEAK) && s->st.mem_current > s->st.mem_peak)
        s->st.mem_peak = s->st.mem_current;
    if ((s->st.have & CG_HAVE_PIDS_PEAK) && s->st.pids_current > s->st.pids_peak)
        s->st.pids_peak = s->st.pids_current;
}

static void cgsrc_sample(source *src, monitor_ctx *ctx, const tree_sample *ts, mset *ev)
{
    cgsrc *s = (cgsrc *)src;
    if (s->read_now) /* again() read this sample's figures */
        s->read_now = 0;
    else
        cgsrc_read(s, ctx, ts);
    if (s->pc || s->bc) mset_u64(ev, M_TOTAL_PROCESSES, s->total);
    if (s->cg && s->have) cgroup_sample_fields(ev, &s->st);
}

/* A still job's sample: what is read while nothing of the job runs (v2's
 * io.stat each time; every 10 s the limits, or v2's every figure) found
 * every figure where the last sample left it, so its values stand. */
static int cgsrc_again(source *src, monitor_ctx *ctx, const tree_sample *ts)
{
    cgsrc *s = (cgsrc *)src;
    if (!ts->still) return 0;
    if (!s->cg) return 1; /* the fork count only: a still job forked nothing */
    if (!s->have) return 0;
    cg_stats before;
    memcpy(&before, &s->st, sizeof before);
    cgsrc_read(s, ctx, ts);
    if (s->have && !memcmp(&before, &s->st, sizeof before)) return 1;
    s->read_now = 1;
    return 0;
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

/* The last reading of counters the final read no longer finds: attached to
 * a Slurm task, its cpuacct cgroup may be removed as soon as slurmstepd has
 * reaped it, while the memory one is still there; the CPU it counted last
 * (at the final sample, after the exit) is its total. */
static void keep_lost_counters(cg_stats *now, const cg_stats *before)
{
    if ((before->have & CG_HAVE_CPU) && !(now->have & CG_HAVE_CPU)) {
        now->cpu_usage_us = before->cpu_usage_us;
        now->have |= CG_HAVE_CPU;
    }
    if ((before->have & CG_HAVE_CPU_SPLIT) && !(now->have & CG_HAVE_CPU_SPLIT)) {
        now->cpu_user_us = before->cpu_user_us;
        now->cpu_system_us = before->cpu_system_us;
        now->have |= CG_HAVE_CPU_SPLIT;
    }
}

static void cgsrc_stop(source *src, monitor_ctx *ctx)
{
    cgsrc *s = (cgsrc *)src;
    if (s->pc) procconn_stop(s->pc);
    if (!s->cg) return;
    if (s->owned && s->kill_at > 0) sweep(s);
    cg_stats st;
    if (s->cg->ops->read(s->cg, &st) == 0) {
        if (s->have) keep_lost_counters(&st, &s->st);
        s->st = st;
        s->have = 1;
    }
    if (s->owned) {
        if (s->inside) cgroup_leave(&s->child);
        reap_some(s);
        char *path = strdup(s->cg->path); /* destroy frees s->cg */
        s->removed = cgroup_child_destroy(&s->child, 0.5) == 0;
        if (!s->removed)
            js_log(s->verbose, "cgroup",
                   "cgroup %s left behind: processes still inside (try --wait-all)",
                   path ? path : "?");
        free(path);
        s->cg = NULL; /* freed by cgroup_child_destroy */
    }
}

static void cgsrc_record(source *src, monitor_ctx *ctx, mset *rec)
{
    cgsrc *s = (cgsrc *)src;
    if (s->pc || s->bc) {
        mset_put_u64(rec, "total_processes", count_total(s));
        if (count_lost(s)) mset_put_u64(rec, "total_processes_lost_events", count_lost(s));
    }
    if (!s->have) return;
    const cg_stats *st = &s->st;
    mset_open_obj(rec, "cgroup");
    mset_put_i64(rec, "version", s->version);
    mset_put_str(rec, "path", s->path);
    mset_put_bool(rec, "created", s->owned);
    if (s->owned) mset_put_bool(rec, "removed", s->removed);
    if (st->have & CG_HAVE_CPU) put_secs(rec, "cpu_usage", st->cpu_usage_us);
    if (st->have & CG_HAVE_CPU_SPLIT) {
        put_secs(rec, "cpu_user", st->cpu_user_us);
        put_secs(rec, "cpu_system", st->cpu_system_us);
    }
    if (st->have & CG_HAVE_THROTTLE) put_secs(rec, "cpu_throttled", st->cpu_throttled_us);
    if (st->have & CG_HAVE_MEM_PEAK)
        mset_put_u64(rec, "memory_peak", st->mem_peak); /* exact: kept by the kernel */
    if (st->have & CG_HAVE_MEM) {
        mset_put_u64(rec, "memory_current", st->mem_current);
        if (st->mem_max != CG_NOLIMIT) mset_put_u64(rec, "memory_max", st->mem_max);
    }
    if (st->have & CG_HAVE_MEM_STAT) {
        mset_put_u64(rec, "memory_anon", st->mem_anon);
        mset_put_u64(rec, "memory_file", st->mem_file); /* page cache still charged to the job */
        mset_put_u64(rec, "memory_shmem", st->mem_shmem);
    }
    if (st->have & CG_HAVE_MEM_KERNEL) mset_put_u64(rec, "memory_kernel", st->mem_kernel);
    if (st->have & CG_HAVE_OOM) mset_put_u64(rec, "oom", st->mem_oom);
    if (st->have & CG_HAVE_OOM_KILL) mset_put_u64(rec, "oom_kill", st->mem_oom_kill);
    if (st->have & CG_HAVE_PIDS_PEAK) mset_put_u64(rec, "pids_peak", st->pids_peak);
    if (st->have & CG_HAVE_PIDS) mset_put_u64(rec, "pids_max_events", st->pids_max_events);
    if (st->have & CG_HAVE_IO) {
        mset_put_u64(rec, "io_rbytes", st->io_rbytes);
        mset_put_u64(rec, "io_wbytes", st->io_wbytes);
    }
    if (st->have & CG_HAVE_PSI) {
        put_secs(rec, "psi_cpu_some_total", st->psi[CG_PSI_CPU_SOME].total_us);
        put_secs(rec, "psi_memory_some_total", st->psi[CG_PSI_MEM_SOME].total_us);
        put_secs(rec, "psi_memory_full_total", st->psi[CG_PSI_MEM_FULL].total_us);
        put_secs(rec, "psi_io_some_total", st->psi[CG_PSI_IO_SOME].total_us);
        put_secs(rec, "psi_io_full_total", st->psi[CG_PSI_IO_FULL].total_us);
    }
    mset_close(rec);
}

int cgroup_send_home(const monitor_ctx *ctx, pid_t pid)
{
    cgsrc *s = ctx ? ctx->cgroup : NULL;
    if (!s || !s->inside || !s->child.home) return 0; /* jobscope is not in the job's cgroup */
    return s->child.home->ops->attach(s->child.home, pid);
}

static void cgsrc_close(source *src)
{
    cgsrc *s = (cgsrc *)src;
    if (s->inside) /* the spawn failed: start() never ran */
        cgroup_leave(&s->child);
    if (s->owned && s->child.cg)
        cgroup_child_destroy(&s->child, 0);
    else if (!s->owned && s->cg)
        s->cg->ops->free(s->cg);
    procconn_close(s->pc);
    bpfcount_close(s->bc);
    free(s);
}

const source_ops cgroup_source_ops = {
    .name = "cgroup",
    .open = cgsrc_open,
    .start = cgsrc_start,
    .sample = cgsrc_sample,
    .again = cgsrc_again,
    .stop = cgsrc_stop,
    .record = cgsrc_record,
    .close = cgsrc_close,
};

cgroup *cgroup_source_cgroup(const monitor_ctx *ctx, int *owned)
{
    const cgsrc *active = ctx->cgroup;
    if (owned) *owned = active && active->owned;
    return active ? active->cg : NULL;
}

const cg_stats *cgroup_source_stats(const monitor_ctx *ctx)
{
    const cgsrc *active = ctx->cgroup;
    return active && active->cg && active->have ? &active->st : NULL;
}

int cgroup_source_still(const monitor_ctx *ctx)
{
    cgsrc *s = ctx->cgroup;
    if (!s || !s->cg || !s->owned || !s->have || s->every_sample || !s->cg->ops->probe) return 0;
    cg_probe p;
    if (s->cg->ops->probe(s->cg, &p) != 0) return s->still_known = 0;
    int still = s->still_known && s->all_inside && p.cpu == s->still_probe.cpu &&
                p.mem == s->still_probe.mem && p.tasks == s->still_probe.tasks;
    s->still_probe = p;
    s->still_known = 1;
    return still;
}

void cgroup_source_spawning(const monitor_ctx *ctx)
{
    cgsrc *active = ctx->cgroup;
    if (active && active->bc && bpfcount_spawning(active->bc) != 0) {
        /* cannot follow the job's forks: the connector would have to have
         * listened already; say nothing rather than a wrong count */
        bpfcount_close(active->bc);
        active->bc = NULL;
    }
}

void cgroup_source_kill(const monitor_ctx *ctx, int sig)
{
    cgsrc *active = ctx->cgroup;
    if (!active || !active->owned || !active->cg) return;
    if (!active->kill_at) active->kill_at = now_mono();
    active->cg->ops->kill(active->cg, sig);
}
