/* sampler.h — picks the process-tree sampler for the engine (sampler.c):
 * procfs, or the BPF plugin installed as the proctree's reader. */
#ifndef JOBSCOPE_SAMPLER_H
#define JOBSCOPE_SAMPLER_H

#include <stddef.h>
#include <sys/types.h>
#include "../proc/proctree.h"

/* Opens the BPF sampler for a tree: root, the job (0 in run mode before it
 * is spawned); anchor, jobscope's pid in run mode (its descendants,
 * re-parented orphans included, are the tree), 0 in attach mode;
 * cgroup_dir, the job's own cgroup or NULL (then, and on kernels before
 * 6.7, every task of the host is walked with an ancestry filter).  The
 * pinned sampler when there is one; else, unless pinned_only, a fresh load,
 * pinned for later runs.  0 with *out ready for proctree_set_reader and how
 * it came in how (pinned, loaded and pinned, or loaded and why not pinned);
 * -1 with a one-line reason in err. */
int monitor_sampler_bpf(proctree_reader *out, pid_t root, pid_t anchor, const char *cgroup_dir,
                        int pinned_only, char *err, size_t errlen, char *how, size_t howlen);
/* 1 if auto may try BPF here: root, and the sampler was built. */
int monitor_sampler_may_bpf(void);
/* 1 if the sampler is pinned on this node (auto then uses it from the
 * start: opening it costs a few bpf(2) calls). */
int monitor_sampler_pinned(void);
/* Seconds of procfs sampling CPU after which auto loads BPF (0.1, or
 * $JOBSCOPE_BPF_PAYBACK). */
double monitor_sampler_payback(void);

/* What a sampler costs the sampling thread: CPU per process-sample over the
 * samples after its first (which opens files, or warms the program up); the
 * first stands in while it is the only one. */
typedef struct sampler_cost {
    uint64_t ns, proc_samples;
    uint64_t first_ns, first_procs;
    uint32_t seen;
} sampler_cost;
void monitor_sampler_cost_add(sampler_cost *c, uint64_t ns, uint32_t procs);
/* After auto switched from one sampler to the other (`was` to `now`): 1
 * keep `now`, 0 go back (it costs more per process-sample than `was` did:
 * BPF's host-task walk on a crowded host, BPF's fixed part on a job of a
 * few processes), -1 not known yet (fewer than 6 samples of `now`). */
int monitor_sampler_verdict(const sampler_cost *was, const sampler_cost *now);
/* Pinned, BPF from the first sample: a tree of at most this many processes
 * also tries procfs (two reads a process), and the cheaper stays. */
#define MONITOR_SMALL_TREE 16
double monitor_sampler_cost_us(const sampler_cost *c);
/* All the CPU measured, the first sample included (auto's payback). */
uint64_t monitor_sampler_cost_total_ns(const sampler_cost *c);

#endif
