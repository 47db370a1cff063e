/* alloc.c — detects the job's allocation (CPUs, memory, GPUs) and where each
 * figure came from, for the start event (see alloc.h, docs/events.md
 * "Allocation").  The rules:
 *
 *   CPUs   the batch system's figure (Slurm, HTCondor, PBS), bounded by what
 *          the kernel enforces below the host's CPUs (cgroup cpu.max quota,
 *          cpuset, affinity); without one, that kernel bound; else
 *          OMP_NUM_THREADS as a hint; else the host.
 *   memory the batch system's figure, bounded by the cgroup's memory.max
 *          (the smallest on the path to the root); else memory.max; else
 *          unknown.
 *   GPUs   the batch system's (SLURM_GPUS_ON_NODE, SLURM_STEP_GPUS,
 *          SLURM_JOB_GPUS, HTCondor's AssignedGPUs or slot ad), else the
 *          devices made visible (CUDA_VISIBLE_DEVICES, ROCR_/HIP_); else
 *          unknown.
 *
 * The figures reach the event through the metric catalogue (alloc_cpus,
 * alloc_mem, alloc_gpus); each has a `_from` string beside it. */
#include "alloc.h"
#include "../cgroup/cgroup.h"
#include "../model/metric.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define MIB (1024.0 * 1024.0)

static const char *env_get(const char *const *env, const char *key)
{
    size_t n = strlen(key);
    for (const char *const *e = env; e && *e; e++)
        if (!strncmp(*e, key, n) && (*e)[n] == '=') return (*e)[n + 1] ? *e + n + 1 : NULL;
    return NULL;
}

/* A whole positive number, the whole string; 0 otherwise. */
static double env_num(const char *const *env, const char *key)
{
    const char *v = env_get(env, key);
    if (!v) return 0;
    char *end;
    double d = strtod(v, &end);
    return (end != v && !*end && d > 0 && d < 1e12) ? d : 0;
}

/* Entries of a comma list ("0,1", "GPU-aa,GPU-bb"); "NoDevFiles", "-1"
 * and "" (nothing visible) count 0; -1 when the variable is unset. */
static int list_count(const char *const *env, const char *key)
{
    size_t n = strlen(key);
    const char *v = NULL;
    for (const char *const *e = env; e && *e; e++)
        if (!strncmp(*e, key, n) && (*e)[n] == '=') v = *e + n + 1;
    if (!v) return -1;
    if (!*v || !strcmp(v, "NoDevFiles") || !strcmp(v, "-1") || !strcmp(v, "none")) return 0;
    int c = 1;
    for (const char *p = v; *p; p++) c += *p == ',';
    return c;
}

int alloc_cpulist_count(const char *s)
{
    int n = 0;
    while (s && *s) {
        while (*s == ' ' || *s == ',' || *s == '\n') s++;
        if (!*s) break;
        char *end;
        long a = strtol(s, &end, 10);
        if (end == s || a < 0) return 0;
        long b = a;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || b < a) return 0;
        }
        n += (int)(b - a + 1);
        s = end;
        if (*s && *s != ',' && *s != '\n' && *s != ' ') return 0;
    }
    return n;
}

/* SLURM_JOB_CPUS_PER_NODE ("72(x2),36"): the entry of node index `node`. */
static double slurm_cpus_per_node(const char *v, long node)
{
    long idx = 0;
    while (v && *v) {
        char *end;
        long cpus = strtol(v, &end, 10), rep = 1;
        if (end == v) return 0;
        if (!strncmp(end, "(x", 2)) {
            rep = strtol(end + 2, &end, 10);
            if (*end == ')') end++;
        }
        if (node < idx + rep) return (double)cpus;
        idx += rep;
        v = *end == ',' ? end + 1 : end;
        if (*end != ',') break;
    }
    return 0;
}

/* A number from an HTCondor ClassAd file ("Cpus = 4"); 0 when absent or an
 * expression. */
static double ad_num(const char *path, const char *attr)
{
    FILE *f = path ? fopen(path, "re") : NULL;
    if (!f) return 0;
    char line[1024];
    double v = 0;
    size_t n = strlen(attr);
    while (fgets(line, sizeof line, f)) {
        if (strncasecmp(line, attr, n) || (line[n] != ' ' && line[n] != '=')) continue;
        char *p = strchr(line + n, '=');
        if (!p) continue;
        char *end;
        double d = strtod(p + 1, &end);
        while (isspace((unsigned char)*end)) end++;
        if (end != p + 1 && !*end && d > 0) v = d;
        break;
    }
    fclose(f);
    return v;
}

static void set(char *dst, const char *src)
{
    snprintf(dst, 64, "%s", src);
}

/* Records where v came from and returns it. */
static double found(char *from, const char *what, double v)
{
    set(from, what);
    return v;
}

/* The batch system's CPUs; 0 when none says. */
static double batch_cpus(const char *const *env, char *from)
{
    if (env_get(env, "SLURM_JOB_ID") || env_get(env, "SLURM_JOBID")) {
        int task = env_get(env, "SLURM_STEP_ID") || env_get(env, "SLURM_STEPID");
        double v;
        /* a task of an srun step gets its --cpus-per-task; the batch script
         * every CPU of the job on its node */
        if (task && (v = env_num(env, "SLURM_CPUS_PER_TASK")) > 0)
            return found(from, "SLURM_CPUS_PER_TASK", v);
        if ((v = env_num(env, "SLURM_CPUS_ON_NODE")) > 0)
            return found(from, "SLURM_CPUS_ON_NODE", v);
        const char *pn = env_get(env, "SLURM_JOB_CPUS_PER_NODE");
        if (pn && (v = slurm_cpus_per_node(pn, (long)env_num(env, "SLURM_NODEID"))) > 0)
            return found(from, "SLURM_JOB_CPUS_PER_NODE", v);
        if ((v = env_num(env, "SLURM_CPUS_PER_TASK")) > 0)
            return found(from, "SLURM_CPUS_PER_TASK", v);
    }
    double v;
    if ((v = ad_num(env_get(env, "_CONDOR_MACHINE_AD"), "Cpus")) > 0)
        return found(from, "HTCondor slot ad Cpus", v);
    if ((v = ad_num(env_get(env, "_CONDOR_JOB_AD"), "RequestCpus")) > 0)
        return found(from, "HTCondor job ad RequestCpus", v);
    if (env_get(env, "PBS_JOBID") && (v = env_num(env, "NCPUS")) > 0)
        return found(from, "PBS NCPUS", v);
    return 0;
}

static double batch_mem(const char *const *env, double cpus, char *from)
{
    double v;
    if (env_get(env, "SLURM_JOB_ID") || env_get(env, "SLURM_JOBID")) {
        if ((v = env_num(env, "SLURM_MEM_PER_NODE")) > 0)
            return found(from, "SLURM_MEM_PER_NODE", v * MIB);
        if ((v = env_num(env, "SLURM_MEM_PER_CPU")) > 0)
            return found(from, "SLURM_MEM_PER_CPU", v * MIB * cpus);
    }
    if ((v = ad_num(env_get(env, "_CONDOR_MACHINE_AD"), "Memory")) > 0)
        return found(from, "HTCondor slot ad Memory", v * MIB);
    if ((v = ad_num(env_get(env, "_CONDOR_JOB_AD"), "RequestMemory")) > 0)
        return found(from, "HTCondor job ad RequestMemory", v * MIB);
    return 0;
}

static double gpus_of(const char *const *env, char *from)
{
    int c;
    double v;
    if ((v = env_num(env, "SLURM_GPUS_ON_NODE")) > 0) return found(from, "SLURM_GPUS_ON_NODE", v);
    static const char *const lists[] = {"SLURM_STEP_GPUS",      "SLURM_JOB_GPUS",
                                        "_CONDOR_AssignedGPUs", "CUDA_VISIBLE_DEVICES",
                                        "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
        if (i == 3 && (v = ad_num(env_get(env, "_CONDOR_MACHINE_AD"), "GPUs")) > 0)
            return found(from, "HTCondor slot ad GPUs", v);
        if ((c = list_count(env, lists[i])) >= 0) return set(from, lists[i]), (double)c;
    }
    return NAN;
}

void alloc_compute(const alloc_input *in, alloc_info *out)
{
    memset(out, 0, sizeof *out);
    const char *const *env = in->env;
    double host = in->host_cpus > 0 ? in->host_cpus : 1;
    /* what the kernel lets the job run on */
    double hard = host;
    char hard_from[64] = "host";
    if (in->cpuset_cpus > 0 && in->cpuset_cpus < hard)
        hard = in->cpuset_cpus, set(hard_from, "cpuset");
    if (in->affinity_cpus > 0 && in->affinity_cpus < hard)
        hard = in->affinity_cpus, set(hard_from, "affinity");
    if (isfinite(in->cpu_quota) && in->cpu_quota > 0 && in->cpu_quota < hard)
        hard = in->cpu_quota, set(hard_from, "cgroup cpu.max");
    double v = batch_cpus(env, out->cpus_from);
    if (v > 0) {
        out->cpus = v;
        /* a bound the kernel enforces (not merely the host's size) wins */
        if (hard < v && hard < host) out->cpus = hard, set(out->cpus_from, hard_from);
    } else if (hard < host) {
        out->cpus = hard, set(out->cpus_from, hard_from);
    } else {
        const char *omp = env_get(env, "OMP_NUM_THREADS"); /* "8" or "8,4" (nested) */
        long t = omp ? strtol(omp, NULL, 10) : 0;
        if (t > 0 && t <= host)
            out->cpus = (double)t, set(out->cpus_from, "OMP_NUM_THREADS");
        else
            out->cpus = host, set(out->cpus_from, "host");
    }
    double cg = isfinite(in->cgroup_mem_max) && in->cgroup_mem_max > 0 &&
                        (!(in->host_mem > 0) || in->cgroup_mem_max < in->host_mem)
                    ? in->cgroup_mem_max
                    : NAN;
    v = batch_mem(env, out->cpus, out->mem_from);
    out->mem = NAN;
    if (v > 0) out->mem = v;
    if (isfinite(cg) && (!(v > 0) || cg < v))
        out->mem = cg, set(out->mem_from, "cgroup memory.max");
    if (!isfinite(out->mem)) out->mem_from[0] = 0;
    out->gpus = gpus_of(env, out->gpus_from);
}

/* ---- cgroups ---- */

static int read_text(const char *dir, const char *name, char *buf, size_t cap)
{
    return dir ? cg_read_file(dir, name, buf, cap) : -1;
}

/* Calls fn on dir and each ancestor up to top (both included). */
static void walk_up(const char *leaf, const char *top, void (*fn)(const char *dir, void *arg),
                    void *arg)
{
    if (!leaf) return;
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s", leaf);
    size_t tl = top ? strlen(top) : 0;
    for (int guard = 0; guard < 64; guard++) {
        fn(d, arg);
        if (!top || strlen(d) <= tl || !strcmp(d, top)) break;
        char *sl = strrchr(d, '/');
        if (!sl || sl == d) break;
        *sl = 0;
    }
}

typedef struct limits {
    double quota, mem;
} limits;

static void v2_dir(const char *dir, void *arg)
{
    limits *l = arg;
    char buf[128];
    if (read_text(dir, "cpu.max", buf, sizeof buf) > 0 && strncmp(buf, "max", 3)) {
        double q = 0, p = 0;
        if (sscanf(buf, "%lf %lf", &q, &p) == 2 && q > 0 && p > 0 &&
            (isnan(l->quota) || q / p < l->quota))
            l->quota = q / p;
    }
    if (read_text(dir, "memory.max", buf, sizeof buf) > 0 && strncmp(buf, "max", 3)) {
        double m = strtod(buf, NULL);
        if (m > 0 && (isnan(l->mem) || m < l->mem)) l->mem = m;
    }
}

static void v1_cpu(const char *dir, void *arg)
{
    limits *l = arg;
    char q[64], p[64];
    if (read_text(dir, "cpu.cfs_quota_us", q, sizeof q) > 0 &&
        read_text(dir, "cpu.cfs_period_us", p, sizeof p) > 0) {
        double qq = strtod(q, NULL), pp = strtod(p, NULL);
        if (qq > 0 && pp > 0 && (isnan(l->quota) || qq / pp < l->quota)) l->quota = qq / pp;
    }
}

static void v1_mem(const char *dir, void *arg)
{
    limits *l = arg;
    char buf[64];
    if (read_text(dir, "memory.limit_in_bytes", buf, sizeof buf) > 0) {
        double m = strtod(buf, NULL);
        if (m > 0 && m < 9e18 && (isnan(l->mem) || m < l->mem)) l->mem = m;
    }
}

void alloc_cgroup_v2(const char *leaf, const char *top, double *quota, double *mem_max, int *cpuset)
{
    limits l = {NAN, NAN};
    walk_up(leaf, top, v2_dir, &l);
    *quota = l.quota;
    *mem_max = l.mem;
    char buf[4096];
    *cpuset = read_text(leaf, "cpuset.cpus.effective", buf, sizeof buf) > 0
                  ? alloc_cpulist_count(buf)
                  : 0;
}

void alloc_cgroup_v1(const char *cpu_leaf, const char *cpu_top, const char *mem_leaf,
                     const char *mem_top, double *quota, double *mem_max)
{
    limits l = {NAN, NAN};
    walk_up(cpu_leaf, cpu_top, v1_cpu, &l);
    walk_up(mem_leaf, mem_top, v1_mem, &l);
    *quota = l.quota;
    *mem_max = l.mem;
}

/* mount + (path less the mount's root), as the cgroup layout joins them */
static int cg_join(char *out, size_t cap, const char *mnt, const char *mroot, const char *path)
{
    if (!mnt || !path) return -1;
    size_t rl = mroot ? strlen(mroot) : 0;
    if (rl > 1 && !strncmp(path, mroot, rl) && (path[rl] == '/' || path[rl] == 0)) path += rl;
    while (*path == '/') path++;
    int n = snprintf(out, cap, "%s%s%s", mnt, *path ? "/" : "", path);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void cgroup_limits(pid_t pid, alloc_input *in)
{
    char path[64], a[PATH_MAX], b[PATH_MAX];
    cg_mounts m;
    cg_procpath p;
    snprintf(path, sizeof path, pid ? "/proc/%ld/cgroup" : "/proc/self/cgroup", (long)pid);
    if (cgroup_mounts_parse(NULL, &m) < 0) return;
    if (cgroup_procpath_parse(path, &p) == 0) {
        int v = cgroup_layout_version(&m);
        if (v == 2 && !cg_join(a, sizeof a, m.v2, m.v2_root, p.v2)) {
            alloc_cgroup_v2(a, m.v2, &in->cpu_quota, &in->cgroup_mem_max, &in->cpuset_cpus);
        } else if (v == 1) {
            int okc = !cg_join(a, sizeof a, m.v1[CG_V1_CPUACCT], m.v1_root[CG_V1_CPUACCT],
                               p.v1[CG_V1_CPUACCT]);
            int okm = !cg_join(b, sizeof b, m.v1[CG_V1_MEMORY], m.v1_root[CG_V1_MEMORY],
                               p.v1[CG_V1_MEMORY]);
            alloc_cgroup_v1(okc ? a : NULL, m.v1[CG_V1_CPUACCT], okm ? b : NULL, m.v1[CG_V1_MEMORY],
                            &in->cpu_quota, &in->cgroup_mem_max);
        }
        cgroup_procpath_free(&p);
    }
    cgroup_mounts_free(&m);
}

/* /proc/PID/environ as a NULL-terminated array (one allocation); NULL when
 * unreadable. */
static char **read_environ(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (ssize_t r; buf; n += (size_t)r) {
        if (n + 1 >= cap) {
            char *g = cap < (1u << 24) ? realloc(buf, cap *= 2) : NULL;
            if (!g) break;
            buf = g;
        }
        if ((r = read(fd, buf + n, cap - n - 1)) <= 0) break;
    }
    close(fd);
    if (!buf) return NULL;
    buf[n] = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) cnt += !buf[i];
    size_t off = (cnt + 2) * sizeof(char *);
    char **v = malloc(off + n + 1);
    if (v) {
        char *text = (char *)v + off;
        memcpy(text, buf, n + 1);
        size_t k = 0;
        for (size_t i = 0; i < n && k <= cnt; i += strlen(text + i) + 1) v[k++] = text + i;
        v[k] = NULL;
    }
    free(buf);
    return v;
}

void alloc_detect(pid_t pid, alloc_info *out)
{
    alloc_input in = {
        .host_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN), .cpu_quota = NAN, .cgroup_mem_max = NAN};
    cpu_set_t cs;
    if (sched_getaffinity(pid, sizeof cs, &cs) == 0) in.affinity_cpus = CPU_COUNT(&cs);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    in.host_mem = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
    cgroup_limits(pid, &in);
    char **penv = pid ? read_environ(pid) : NULL;
    in.env = (const char *const *)(penv ? penv : environ);
    alloc_compute(&in, out);
    free(penv);
}

void alloc_add(mset *e, const alloc_info *a)
{
    mset_f64(e, M_ALLOC_CPUS, a->cpus);
    mset_put_str(e, "alloc_cpus_from", a->cpus_from);
    if (isfinite(a->mem))
        mset_u64(e, M_ALLOC_MEM, (uint64_t)a->mem);
    else
        mset_null(e, M_ALLOC_MEM);
    mset_put_str(e, "alloc_mem_from", a->mem_from[0] ? a->mem_from : NULL);
    if (isfinite(a->gpus))
        mset_u64(e, M_ALLOC_GPUS, (uint64_t)a->gpus);
    else
        mset_null(e, M_ALLOC_GPUS);
    mset_put_str(e, "alloc_gpus_from", a->gpus_from[0] ? a->gpus_from : NULL);
}
