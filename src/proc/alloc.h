/* alloc.h — what the job was given: CPUs, memory and GPUs of its allocation,
 * and where each figure came from, detected where the job runs (the start
 * event's `alloc_*` fields, docs/events.md).
 *
 * Views measure CPU efficiency and memory use against these figures, as
 * seff and Princeton's jobstats do, instead of against the whole host.  The
 * sources, strongest first: the batch system's variables (Slurm's
 * SLURM_CPUS_PER_TASK, SLURM_CPUS_ON_NODE, SLURM_JOB_CPUS_PER_NODE,
 * SLURM_MEM_PER_NODE/_PER_CPU, SLURM_GPUS_ON_NODE...; HTCondor's slot and
 * job ads in $_CONDOR_MACHINE_AD / $_CONDOR_JOB_AD and _CONDOR_AssignedGPUs;
 * PBS's NCPUS), bounded by what the kernel enforces (cgroup cpu.max, the
 * cpuset and the affinity mask, cgroup memory.max); then OMP_NUM_THREADS as
 * a hint; else the host.  The Slurm SPANK plugin relies on this detection:
 * it runs every step under jobscope and adds nothing of its own. */
#ifndef JOBSCOPE_ALLOC_H
#define JOBSCOPE_ALLOC_H

#include <sys/types.h>
#include "../model/metric.h"

typedef struct alloc_info {
    double cpus; /* > 0, may be fractional (cpu.max) */
    char cpus_from[64];
    double mem; /* bytes; NAN when nothing says */
    char mem_from[64];
    double gpus; /* NAN when nothing says */
    char gpus_from[64];
} alloc_info;

/* What the detection looks at, so that tests can give it. */
typedef struct alloc_input {
    const char *const *env; /* "KEY=VALUE", NULL-terminated (the job's environment) */
    int host_cpus;          /* CPUs online */
    int affinity_cpus;      /* the affinity mask's CPUs; 0 unknown */
    int cpuset_cpus;        /* the cgroup's cpuset.cpus.effective; 0 unknown */
    double cpu_quota;       /* cgroup cpu.max quota / period, in CPUs; NAN none */
    double cgroup_mem_max;  /* the smallest memory.max on the cgroup's path; NAN none */
    double host_mem;        /* bytes */
} alloc_input;

/* Decides from in (pure but for reading HTCondor's ad files named in env). */
void alloc_compute(const alloc_input *in, alloc_info *out);

/* The limits of a cgroup v2 directory and its ancestors up to (and with)
 * top: the smallest cpu.max quota in CPUs and memory.max in bytes (NAN when
 * none), the leaf's cpuset.cpus.effective count (0 unknown).  v1: pass the
 * cpu and memory hierarchies' directories (cpu.cfs_quota_us,
 * memory.limit_in_bytes); NULL skips one. */
void alloc_cgroup_v2(const char *leaf, const char *top, double *quota, double *mem_max,
                     int *cpuset);
void alloc_cgroup_v1(const char *cpu_leaf, const char *cpu_top, const char *mem_leaf,
                     const char *mem_top, double *quota, double *mem_max);

/* Detects the allocation of process pid (0: jobscope itself, whose
 * environment the job inherits unchanged) on this host. */
void alloc_detect(pid_t pid, alloc_info *out);

/* Adds alloc_cpus, alloc_cpus_from, alloc_mem, alloc_mem_from,
 * alloc_gpus, alloc_gpus_from (null when unknown) to an event; the strings
 * are a's: it must live until the event is sent. */
void alloc_add(mset *e, const alloc_info *a);

/* "0-3,8,10-11" -> 7; 0 for an empty or bad list. */
int alloc_cpulist_count(const char *s);

#endif
