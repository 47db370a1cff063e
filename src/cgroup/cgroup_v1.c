/* cgroup_v1.c — reader for a cgroup of the legacy hierarchies: one
 * directory per controller.
 *   memory:  memory.usage_in_bytes (current), memory.max_usage_in_bytes
 *            (peak), memory.limit_in_bytes, memory.stat total_rss /
 *            total_cache / total_shmem, memory.kmem.usage_in_bytes,
 *            memory.oom_control oom_kill, memory.failcnt
 *   cpuacct: cpuacct.usage (ns), cpuacct.usage_user/_sys (ns) or
 *            cpuacct.stat (USER_HZ ticks)
 *   blkio:   blkio.throttle.io_service_bytes_recursive / io_serviced_recursive
 *   pids:    pids.current, pids.peak, pids.max, pids.events
 * v1 has no PSI per cgroup and no "oom" event count (only oom_kill). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cgroup.h"

const char *const cg_v1_names[CG_V1_N] = {"memory", "cpuacct", "blkio", "pids"};

/* The files read every sample: their slots in files. */
enum {
    F_CPUACCT_USAGE,
    F_CPUACCT_USAGE_USER,
    F_CPUACCT_USAGE_SYS,
    F_CPUACCT_STAT,
    F_MEMORY_USAGE_IN_BYTES,
    F_MEMORY_LIMIT_IN_BYTES,
    F_MEMORY_MAX_USAGE_IN_BYTES,
    F_MEMORY_STAT,
    F_MEMORY_KMEM_USAGE_IN_BYTES,
    F_MEMORY_OOM_CONTROL,
    F_MEMORY_FAILCNT,
    F_PIDS_CURRENT,
    F_PIDS_MAX,
    F_PIDS_PEAK,
    F_PIDS_EVENTS,
    F_BLKIO_THROTTLE_IO_SERVICE_BYTES_RECURSIVE,
    F_BLKIO_THROTTLE_IO_SERVICED_RECURSIVE
};

typedef struct cg1 {
    cgroup base;
    char *dir[CG_V1_N];
    char *rel;
    cg_files files; /* v1_read's, by F_* slot */
    /* what the last reads of the split and of the I/O bytes were read
     * with: cpuacct.usage, the io_serviced text, and the figures */
    uint64_t split_usage_ns;
    int split_known;
    char serviced[512];
    size_t serviced_len; /* 0: unknown */
    cg_stats io_last;    /* io_* and io[] of that read */
    /* what probe() read, for the next read_part (then forgotten) */
    cg_probe probe;
    int probed;
} cg1;

/* blkio.throttle.* : "MAJ:MIN Read N" ... lines; adds to dev[] by device. */
static void v1_blkio(const char *text, cg_stats *st, int ios)
{
    for (const char *line = text; line && *line;) {
        unsigned ma, mi;
        char op[16];
        unsigned long long v;
        if (sscanf(line, "%u:%u %15s %llu", &ma, &mi, op, &v) == 4 &&
            (!strcmp(op, "Read") || !strcmp(op, "Write"))) {
            int i;
            for (i = 0; i < st->nio; i++)
                if (st->io[i].major == ma && st->io[i].minor == mi) break;
            if (i == st->nio && st->nio < CG_MAX_IO_DEVS) {
                memset(&st->io[i], 0, sizeof st->io[i]);
                st->io[i].major = ma;
                st->io[i].minor = mi;
                st->nio++;
            }
            int rd = op[0] == 'R';
            uint64_t *tot =
                ios ? (rd ? &st->io_rios : &st->io_wios) : (rd ? &st->io_rbytes : &st->io_wbytes);
            *tot += v;
            if (i < st->nio) {
                cg_io_dev *d = &st->io[i];
                *(ios ? (rd ? &d->rios : &d->wios) : (rd ? &d->rbytes : &d->wbytes)) += v;
            }
        }
        line = strchr(line, '\n');
        if (line) line++;
    }
}

/* The I/O figures of the last read of both blkio files. */
static void v1_io_keep(cg1 *g, const cg_stats *st, const char *serviced, ssize_t n)
{
    g->serviced_len = n > 0 && (size_t)n < sizeof g->serviced - 1 ? (size_t)n : 0;
    if (g->serviced_len) memcpy(g->serviced, serviced, g->serviced_len);
    g->io_last.io_rbytes = st->io_rbytes;
    g->io_last.io_wbytes = st->io_wbytes;
    g->io_last.io_rios = st->io_rios;
    g->io_last.io_wios = st->io_wios;
    g->io_last.nio = st->nio;
    memcpy(g->io_last.io, st->io, sizeof st->io);
}

static void v1_io_restore(const cg1 *g, cg_stats *st)
{
    st->io_rbytes = g->io_last.io_rbytes;
    st->io_wbytes = g->io_last.io_wbytes;
    st->io_rios = g->io_last.io_rios;
    st->io_wios = g->io_last.io_wios;
    st->nio = g->io_last.nio;
    memcpy(st->io, g->io_last.io, sizeof st->io);
}

/* full: every figure; else only those that move every sample (cg_stats_begin). */
static int v1_read_part(cgroup *c, cg_stats *st, int full, unsigned skip)
{
    cg1 *g = (cg1 *)c;
    char buf[8192];
    uint64_t v;
    const char *mem = g->dir[CG_V1_MEMORY], *cpu = g->dir[CG_V1_CPUACCT];
    const char *blk = g->dir[CG_V1_BLKIO], *pids = g->dir[CG_V1_PIDS];
    /* a fast read keeps the values of the figures it does not read again */
    int had_split = !full && (st->have & CG_HAVE_CPU_SPLIT), had_pids = st->have & CG_HAVE_PIDS;
    int probed = g->probed && !full, still = probed && (skip & CG_SKIP_STILL) && st->have;
    g->probed = 0;
    if (still) {
        /* nothing of the cgroup ran, none of its memory moved: every figure
         * stands as last read (v1 counts I/O as the cgroup's own tasks
         * submit it; writeback is not charged to it), peaks and failures
         * included; only the limits can be set from outside meanwhile */
        if ((skip & CG_STILL_LIMITS) && mem && (st->have & CG_HAVE_MEM) &&
            (cg_fread_u64(&g->files, F_MEMORY_LIMIT_IN_BYTES, mem, "memory.limit_in_bytes",
                          &st->mem_max) ||
             st->mem_max >= (UINT64_C(1) << 62)))
            st->mem_max = CG_NOLIMIT;
        if ((skip & CG_STILL_LIMITS) && pids && (st->have & CG_HAVE_PIDS) &&
            cg_fread_u64(&g->files, F_PIDS_MAX, pids, "pids.max", &st->pids_max))
            st->pids_max = CG_NOLIMIT;
        return 0;
    }
    cg_stats_begin(st, full);

    if (probed) v = g->probe.cpu;
    if (cpu && (probed || !cg_fread_u64(&g->files, F_CPUACCT_USAGE, cpu, "cpuacct.usage", &v))) {
        st->cpu_usage_us = v / 1000;
        st->have |= CG_HAVE_CPU;
        uint64_t u, s;
        g->split_known &= had_split;
        if (g->split_known && v == g->split_usage_ns) {
            st->have |= CG_HAVE_CPU_SPLIT; /* nothing of the cgroup ran: user, system as read */
        } else if (!cg_fread_u64(&g->files, F_CPUACCT_USAGE_USER, cpu, "cpuacct.usage_user", &u) &&
                   !cg_fread_u64(&g->files, F_CPUACCT_USAGE_SYS, cpu, "cpuacct.usage_sys", &s)) {
            st->cpu_user_us = u / 1000;
            st->cpu_system_us = s / 1000;
            st->have |= CG_HAVE_CPU_SPLIT;
        } else if (cg_fread(&g->files, F_CPUACCT_STAT, cpu, "cpuacct.stat", buf, sizeof buf) > 0 &&
                   !cg_keyval(buf, "user", &u) && !cg_keyval(buf, "system", &s)) {
            long hz = sysconf(_SC_CLK_TCK);
            if (hz <= 0) hz = 100;
            st->cpu_user_us = u * 1000000 / (uint64_t)hz;
            st->cpu_system_us = s * 1000000 / (uint64_t)hz;
            st->have |= CG_HAVE_CPU_SPLIT;
        }
        if (st->have & CG_HAVE_CPU_SPLIT) {
            if (!g->split_known || v != g->split_usage_ns) g->split_usage_ns = v;
            g->split_known = 1;
        } else {
            g->split_known = 0;
        }
    }

    uint64_t mem_before = st->mem_current;
    if (probed) st->mem_current = g->probe.mem;
    if (mem && (probed || !cg_fread_u64(&g->files, F_MEMORY_USAGE_IN_BYTES, mem,
                                        "memory.usage_in_bytes", &st->mem_current))) {
        st->have |= CG_HAVE_MEM;
        if (!full && (skip & CG_SKIP_MEM_STAT) && (st->have & CG_HAVE_MEM_STAT) &&
            st->mem_current == mem_before) {
            /* the job was quiet and its usage stands still: as last read */
        } else if (cg_fread(&g->files, F_MEMORY_STAT, mem, "memory.stat", buf, sizeof buf) > 0 &&
                   !cg_keyval(buf, "total_rss", &st->mem_anon) &&
                   !cg_keyval(buf, "total_cache", &st->mem_file)) {
            st->have |= CG_HAVE_MEM_STAT;
            cg_keyval(buf, "total_shmem", &st->mem_shmem);
            /* v1 counts shmem in cache; v2 counts it in file as well */
        }
    }
    if (mem && full && (st->have & CG_HAVE_MEM)) {
        /* "unlimited" is PAGE_COUNTER_MAX pages, a huge number: say no limit */
        if (cg_fread_u64(&g->files, F_MEMORY_LIMIT_IN_BYTES, mem, "memory.limit_in_bytes",
                         &st->mem_max) ||
            st->mem_max >= (UINT64_C(1) << 62))
            st->mem_max = CG_NOLIMIT;
        if (!cg_fread_u64(&g->files, F_MEMORY_MAX_USAGE_IN_BYTES, mem, "memory.max_usage_in_bytes",
                          &st->mem_peak))
            st->have |= CG_HAVE_MEM_PEAK;
        if (!cg_fread_u64(&g->files, F_MEMORY_KMEM_USAGE_IN_BYTES, mem,
                          "memory.kmem.usage_in_bytes", &st->mem_kernel))
            st->have |= CG_HAVE_MEM_KERNEL;
        if (cg_fread(&g->files, F_MEMORY_OOM_CONTROL, mem, "memory.oom_control", buf, sizeof buf) >
                0 &&
            !cg_keyval(buf, "oom_kill", &st->mem_oom_kill))
            st->have |= CG_HAVE_OOM_KILL;
        cg_fread_u64(&g->files, F_MEMORY_FAILCNT, mem, "memory.failcnt", &st->mem_max_events);
    }

    if (pids && !full && (skip & CG_SKIP_PIDS) && had_pids)
        st->have |= CG_HAVE_PIDS; /* no task came or went: as last read */
    else if (pids && probed) {
        st->pids_current = g->probe.tasks;
        st->have |= CG_HAVE_PIDS;
    } else if (pids &&
               !cg_fread_u64(&g->files, F_PIDS_CURRENT, pids, "pids.current", &st->pids_current))
        st->have |= CG_HAVE_PIDS;
    if (pids && full && (st->have & CG_HAVE_PIDS)) {
        if (cg_fread_u64(&g->files, F_PIDS_MAX, pids, "pids.max", &st->pids_max))
            st->pids_max = CG_NOLIMIT;
        if (!cg_fread_u64(&g->files, F_PIDS_PEAK, pids, "pids.peak", &st->pids_peak))
            st->have |= CG_HAVE_PIDS_PEAK;
        if (cg_fread(&g->files, F_PIDS_EVENTS, pids, "pids.events", buf, sizeof buf) > 0)
            cg_keyval(buf, "max", &st->pids_max_events);
    }

    if (blk) {
        /* the requests first: while their count stands still, so do the bytes */
        char ios[sizeof g->serviced];
        ssize_t n = full ? -1
                         : cg_fread(&g->files, F_BLKIO_THROTTLE_IO_SERVICED_RECURSIVE, blk,
                                    "blkio.throttle.io_serviced_recursive", ios, sizeof ios);
        int whole = n >= 0 && (size_t)n < sizeof ios - 1; /* else it may go on */
        if (whole && g->serviced_len && (size_t)n == g->serviced_len &&
            !memcmp(ios, g->serviced, (size_t)n)) {
            st->have |= CG_HAVE_IO;
            v1_io_restore(g, st);
        } else if (cg_fread(&g->files, F_BLKIO_THROTTLE_IO_SERVICE_BYTES_RECURSIVE, blk,
                            "blkio.throttle.io_service_bytes_recursive", buf, sizeof buf) >= 0) {
            st->have |= CG_HAVE_IO;
            v1_blkio(buf, st, 0);
            if (!whole)
                n = cg_fread(&g->files, F_BLKIO_THROTTLE_IO_SERVICED_RECURSIVE, blk,
                             "blkio.throttle.io_serviced_recursive", buf, sizeof buf);
            else
                memcpy(buf, ios, (size_t)n + 1);
            if (n >= 0) v1_blkio(buf, st, 1);
            v1_io_keep(g, st, buf, n);
        }
    }
    return st->have ? 0 : -1;
}

static int v1_read(cgroup *c, cg_stats *st)
{
    return v1_read_part(c, st, 1, 0);
}

static int v1_read_fast(cgroup *c, cg_stats *st, unsigned skip)
{
    return v1_read_part(c, st, 0, skip);
}

static int v1_probe(cgroup *c, cg_probe *p)
{
    cg1 *g = (cg1 *)c;
    const char *cpu = g->dir[CG_V1_CPUACCT], *mem = g->dir[CG_V1_MEMORY];
    const char *pids = g->dir[CG_V1_PIDS];
    g->probed = cpu && mem && pids &&
                !cg_fread_u64(&g->files, F_CPUACCT_USAGE, cpu, "cpuacct.usage", &g->probe.cpu) &&
                !cg_fread_u64(&g->files, F_MEMORY_USAGE_IN_BYTES, mem, "memory.usage_in_bytes",
                              &g->probe.mem) &&
                !cg_fread_u64(&g->files, F_PIDS_CURRENT, pids, "pids.current", &g->probe.tasks);
    *p = g->probe;
    return g->probed ? 0 : -1;
}

static int v1_attach(cgroup *c, pid_t pid)
{
    cg1 *g = (cg1 *)c;
    char s[32];
    int rc = 0, any = 0;
    snprintf(s, sizeof s, "%ld", (long)pid);
    for (int i = 0; i < CG_V1_N; i++) {
        if (!g->dir[i]) continue;
        any = 1;
        if (cg_write_str(g->dir[i], "cgroup.procs", s) < 0) rc = -1;
    }
    if (!any) {
        errno = ENOENT;
        return -1;
    }
    return rc;
}

/* The first mounted controller holds the same processes as the others
 * for a cgroup jobscope created; for a foreign one prefer memory. */
static const char *v1_any(cg1 *g)
{
    for (int i = 0; i < CG_V1_N; i++)
        if (g->dir[i]) return g->dir[i];
    return NULL;
}

static const char *v1_task_dir(cgroup *c)
{
    return v1_any((cg1 *)c);
}

static int v1_nprocs(cgroup *c)
{
    const char *d = v1_any((cg1 *)c);
    return d ? cg_count_procs(d) : -1;
}

/* v1 has no cgroup.kill: signal the listed processes; the caller repeats
 * until none is left (a fork in flight is caught by the next round, and
 * the pids controller stops a fork bomb from outrunning it). */
static int v1_kill(cgroup *c, int sig)
{
    const char *d = v1_any((cg1 *)c);
    return d ? cg_kill_procs(d, sig) : -1;
}

static int v1_set_memory_max(cgroup *c, uint64_t b)
{
    cg1 *g = (cg1 *)c;
    char s[32];
    if (!g->dir[CG_V1_MEMORY]) {
        errno = ENOENT;
        return -1;
    }
    snprintf(s, sizeof s, "%lld", b == CG_NOLIMIT ? -1LL : (long long)b);
    return cg_write_str(g->dir[CG_V1_MEMORY], "memory.limit_in_bytes", s);
}

static int v1_set_pids_max(cgroup *c, uint64_t n)
{
    cg1 *g = (cg1 *)c;
    char s[32];
    if (!g->dir[CG_V1_PIDS]) {
        errno = ENOENT;
        return -1;
    }
    if (n == CG_NOLIMIT)
        strcpy(s, "max");
    else
        snprintf(s, sizeof s, "%llu", (unsigned long long)n);
    return cg_write_str(g->dir[CG_V1_PIDS], "pids.max", s);
}

static int v1_remove(cgroup *c)
{
    cg1 *g = (cg1 *)c;
    int rc = 0;
    cg_files_close(&g->files);
    for (int i = 0; i < CG_V1_N; i++)
        if (g->dir[i] && rmdir(g->dir[i]) < 0 && errno != ENOENT) rc = -1;
    return rc;
}

static void v1_free(cgroup *c)
{
    cg1 *g = (cg1 *)c;
    if (!g) return;
    cg_files_close(&g->files);
    for (int i = 0; i < CG_V1_N; i++) free(g->dir[i]);
    free(g->rel);
    free(g);
}

static const cgroup_ops v1_ops = {
    .version = 1,
    .read = v1_read,
    .read_fast = v1_read_fast,
    .probe = v1_probe,
    .attach = v1_attach,
    .nprocs = v1_nprocs,
    .task_dir = v1_task_dir,
    .kill = v1_kill,
    .set_memory_max = v1_set_memory_max,
    .set_pids_max = v1_set_pids_max,
    .remove = v1_remove,
    .free = v1_free,
};

cgroup *cgroup_v1_open(const char *const dirs[CG_V1_N], const char *rel)
{
    cg1 *g = calloc(1, sizeof *g);
    if (!g) goto nomem;
    cg_files_init(&g->files);
    for (int i = 0; i < CG_V1_N; i++)
        if (dirs[i] && !(g->dir[i] = strdup(dirs[i]))) goto nomem;
    if (!(g->rel = strdup(rel ? rel : ""))) goto nomem;
    g->base.ops = &v1_ops;
    g->base.path = g->rel;
    return &g->base;
nomem:
    v1_free(&g->base);
    errno = ENOMEM;
    return NULL;
}
