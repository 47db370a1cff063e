/* cgroup_v2.c — reader for a cgroup of the unified hierarchy (one
 * directory): cpu.stat, memory.{current,peak,max,stat,events}, io.stat,
 * pids.{current,peak,max,events} and the {cpu,memory,io}.pressure files.
 * A file that is missing (controller not enabled, older kernel) just
 * leaves its CG_HAVE_* bit clear. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cgroup.h"

/* The files read every sample: their slots in files. */
enum {
    F_CPU_STAT,
    F_MEMORY_CURRENT,
    F_MEMORY_MAX,
    F_MEMORY_PEAK,
    F_MEMORY_STAT,
    F_MEMORY_EVENTS,
    F_PIDS_CURRENT,
    F_PIDS_MAX,
    F_PIDS_PEAK,
    F_PIDS_EVENTS,
    F_IO_STAT,
    F_PSI /* 3 files */
};

typedef struct cg2 {
    cgroup base;
    char *dir;
    cg_files files; /* v2_read's, by F_* slot */
    /* what probe() read, for the next read_part (then forgotten): cpu.stat
     * whole (its split and throttling too), memory.current */
    char probe_cpu[1024];
    cg_probe probe;
    int probed;
} cg2;

/* full: every figure; else only those that move every sample (cg_stats_begin). */
static int v2_read_part(cgroup *c, cg_stats *st, int full, unsigned skip)
{
    cg2 *g = (cg2 *)c;
    char buf[8192];
    uint64_t v;
    int had_pids = st->have & CG_HAVE_PIDS; /* a fast read may keep it */
    if (skip & CG_STILL_LIMITS) full = 1;   /* PSI's averages move while nothing runs */
    int probed = g->probed && !full, still = probed && (skip & CG_SKIP_STILL);
    g->probed = 0;
    if (still) {
        /* nothing of the cgroup ran, none of its memory moved: what its
         * tasks move stands as last read; its I/O may not (the kernel's
         * writeback of its dirty pages is charged to it) */
        skip |= CG_SKIP_MEM_STAT | CG_SKIP_PIDS;
    }
    cg_stats_begin(st, full);

    if (probed) memcpy(buf, g->probe_cpu, sizeof g->probe_cpu);
    if (probed || cg_fread(&g->files, F_CPU_STAT, g->dir, "cpu.stat", buf, sizeof buf) > 0) {
        if (!cg_keyval(buf, "usage_usec", &st->cpu_usage_us)) st->have |= CG_HAVE_CPU;
        if (!cg_keyval(buf, "user_usec", &st->cpu_user_us) &&
            !cg_keyval(buf, "system_usec", &st->cpu_system_us))
            st->have |= CG_HAVE_CPU_SPLIT;
        if (!cg_keyval(buf, "nr_throttled", &st->cpu_nr_throttled) &&
            !cg_keyval(buf, "throttled_usec", &st->cpu_throttled_us))
            st->have |= CG_HAVE_THROTTLE;
    }

    uint64_t mem_before = st->mem_current;
    if (probed) st->mem_current = g->probe.mem;
    if (probed ||
        !cg_fread_u64(&g->files, F_MEMORY_CURRENT, g->dir, "memory.current", &st->mem_current))
        st->have |= CG_HAVE_MEM;
    /* the job was quiet and its usage stands still: memory.stat as last read */
    int keep_stat = !full && (skip & CG_SKIP_MEM_STAT) && (st->have & CG_HAVE_MEM) &&
                    (st->have & CG_HAVE_MEM_STAT) && st->mem_current == mem_before;
    if (full && (st->have & CG_HAVE_MEM)) {
        if (cg_fread_u64(&g->files, F_MEMORY_MAX, g->dir, "memory.max", &st->mem_max))
            st->mem_max = CG_NOLIMIT;
        if (!cg_fread_u64(&g->files, F_MEMORY_PEAK, g->dir, "memory.peak", &st->mem_peak))
            st->have |= CG_HAVE_MEM_PEAK;
    }
    if (!keep_stat) {
        st->have &= ~(unsigned)(CG_HAVE_MEM_STAT | CG_HAVE_MEM_KERNEL); /* read every sample */
        st->mem_kernel = 0;
    }
    if (!keep_stat &&
        cg_fread(&g->files, F_MEMORY_STAT, g->dir, "memory.stat", buf, sizeof buf) > 0 &&
        !cg_keyval(buf, "anon", &st->mem_anon) && !cg_keyval(buf, "file", &st->mem_file)) {
        st->have |= CG_HAVE_MEM_STAT;
        cg_keyval(buf, "shmem", &st->mem_shmem);
        if (!cg_keyval(buf, "kernel", &st->mem_kernel)) {
            st->have |= CG_HAVE_MEM_KERNEL;
        } else { /* before 5.18: the sum of the kernel parts */
            static const char *const parts[] = {"kernel_stack", "pagetables", "percpu", "sock",
                                                "slab"};
            int any = 0;
            for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
                if (!cg_keyval(buf, parts[i], &v)) {
                    st->mem_kernel += v;
                    any = 1;
                }
            if (any) st->have |= CG_HAVE_MEM_KERNEL;
        }
    }
    if (full &&
        cg_fread(&g->files, F_MEMORY_EVENTS, g->dir, "memory.events", buf, sizeof buf) > 0) {
        if (!cg_keyval(buf, "oom", &st->mem_oom)) st->have |= CG_HAVE_OOM;
        if (!cg_keyval(buf, "oom_kill", &st->mem_oom_kill)) st->have |= CG_HAVE_OOM_KILL;
        cg_keyval(buf, "max", &st->mem_max_events);
    }

    if (!full && (skip & CG_SKIP_PIDS) && had_pids)
        st->have |= CG_HAVE_PIDS; /* no task came or went: as last read */
    else if (probed) {
        st->pids_current = g->probe.tasks;
        st->have |= CG_HAVE_PIDS;
    } else if (!cg_fread_u64(&g->files, F_PIDS_CURRENT, g->dir, "pids.current", &st->pids_current))
        st->have |= CG_HAVE_PIDS;
    if (full && (st->have & CG_HAVE_PIDS)) {
        if (cg_fread_u64(&g->files, F_PIDS_MAX, g->dir, "pids.max", &st->pids_max))
            st->pids_max = CG_NOLIMIT;
        if (!cg_fread_u64(&g->files, F_PIDS_PEAK, g->dir, "pids.peak", &st->pids_peak))
            st->have |= CG_HAVE_PIDS_PEAK;
        if (cg_fread(&g->files, F_PIDS_EVENTS, g->dir, "pids.events", buf, sizeof buf) > 0)
            cg_keyval(buf, "max", &st->pids_max_events);
    }

    /* io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N" */
    if (cg_fread(&g->files, F_IO_STAT, g->dir, "io.stat", buf, sizeof buf) >= 0) {
        st->have |= CG_HAVE_IO;
        for (char *line = buf; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = 0;
            unsigned ma, mi;
            if (sscanf(line, "%u:%u", &ma, &mi) == 2) {
                cg_io_dev d = {ma, mi, 0, 0, 0, 0};
                char *q;
                if ((q = strstr(line, "rbytes="))) d.rbytes = strtoull(q + 7, NULL, 10);
                if ((q = strstr(line, "wbytes="))) d.wbytes = strtoull(q + 7, NULL, 10);
                if ((q = strstr(line, "rios="))) d.rios = strtoull(q + 5, NULL, 10);
                if ((q = strstr(line, "wios="))) d.wios = strtoull(q + 5, NULL, 10);
                st->io_rbytes += d.rbytes;
                st->io_wbytes += d.wbytes;
                st->io_rios += d.rios;
                st->io_wios += d.wios;
                if (st->nio < CG_MAX_IO_DEVS) st->io[st->nio++] = d;
            }
            line = nl ? nl + 1 : NULL;
        }
    }

    static const char *const psi_files[] = {"cpu.pressure", "memory.pressure", "io.pressure"};
    for (int i = 0; full && i < 3; i++)
        if (cg_fread(&g->files, F_PSI + i, g->dir, psi_files[i], buf, sizeof buf) > 0 &&
            !cg_parse_psi(buf, &st->psi[2 * i], &st->psi[2 * i + 1]))
            st->have |= CG_HAVE_PSI;

    return st->have ? 0 : -1;
}

static int v2_read(cgroup *c, cg_stats *st)
{
    return v2_read_part(c, st, 1, 0);
}

static int v2_read_fast(cgroup *c, cg_stats *st, unsigned skip)
{
    return v2_read_part(c, st, 0, skip);
}

static int v2_probe(cgroup *c, cg_probe *p)
{
    cg2 *g = (cg2 *)c;
    g->probed =
        cg_fread(&g->files, F_CPU_STAT, g->dir, "cpu.stat", g->probe_cpu, sizeof g->probe_cpu) >
            0 &&
        !cg_keyval(g->probe_cpu, "usage_usec", &g->probe.cpu) &&
        !cg_fread_u64(&g->files, F_MEMORY_CURRENT, g->dir, "memory.current", &g->probe.mem) &&
        !cg_fread_u64(&g->files, F_PIDS_CURRENT, g->dir, "pids.current", &g->probe.tasks);
    *p = g->probe;
    return g->probed ? 0 : -1;
}

static int v2_attach(cgroup *c, pid_t pid)
{
    char s[32];
    snprintf(s, sizeof s, "%ld", (long)pid);
    return cg_write_str(((cg2 *)c)->dir, "cgroup.procs", s);
}

static const char *v2_task_dir(cgroup *c)
{
    return ((cg2 *)c)->dir;
}
static int v2_nprocs(cgroup *c)
{
    return cg_count_procs(((cg2 *)c)->dir);
}

/* cgroup.kill (5.14+) kills everything at once, forks included; otherwise
 * signal what cgroup.procs lists. */
static int v2_kill(cgroup *c, int sig)
{
    cg2 *g = (cg2 *)c;
    int n = cg_kill_procs(g->dir, sig);
    if (sig == SIGKILL) cg_write_str(g->dir, "cgroup.kill", "1");
    return n;
}

static int v2_set_u64(const char *dir, const char *file, uint64_t v)
{
    char s[32];
    if (v == CG_NOLIMIT)
        strcpy(s, "max");
    else
        snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return cg_write_str(dir, file, s);
}

static int v2_set_memory_max(cgroup *c, uint64_t b)
{
    return v2_set_u64(((cg2 *)c)->dir, "memory.max", b);
}
static int v2_set_pids_max(cgroup *c, uint64_t n)
{
    return v2_set_u64(((cg2 *)c)->dir, "pids.max", n);
}

static int v2_remove(cgroup *c)
{
    cg_files_close(&((cg2 *)c)->files);
    return rmdir(((cg2 *)c)->dir);
}

static void v2_free(cgroup *c)
{
    cg2 *g = (cg2 *)c;
    if (!g) return;
    cg_files_close(&g->files);
    free(g->dir);
    free(g);
}

static const cgroup_ops v2_ops = {
    .version = 2,
    .read = v2_read,
    .read_fast = v2_read_fast,
    .probe = v2_probe,
    .attach = v2_attach,
    .nprocs = v2_nprocs,
    .task_dir = v2_task_dir,
    .kill = v2_kill,
    .set_memory_max = v2_set_memory_max,
    .set_pids_max = v2_set_pids_max,
    .remove = v2_remove,
    .free = v2_free,
};

cgroup *cgroup_v2_open(const char *dir)
{
    cg2 *g = calloc(1, sizeof *g);
    if (!g || !(g->dir = strdup(dir))) {
        free(g);
        errno = ENOMEM;
        return NULL;
    }
    cg_files_init(&g->files);
    g->base.ops = &v2_ops;
    g->base.path = g->dir;
    return &g->base;
}
