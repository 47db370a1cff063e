/* sampler.h — picks the process-tree sampler for the engine (sampler.c):
 * procfs, or the BPF plugin installed as the proctree's reader. */
#ifndef JOBSCOPE_SAMPLER_H
#define JOBSCOPE_SAMPLER_H

#include <stddef.h>
#include <sys/types.h>
#include "../proc/proctree.h"

/* Loads the BPF sampler for a tree: root, the job (0 in run mode before it
 * is spawned); anchor, jobscope's pid in run mode (its descendants,
 * re-parented orphans included, are the tree), 0 in attach mode;
 * cgroup_dir, the job's own cgroup or NULL (then, and on kernels before
 * 6.7, every task of the host is walked with an ancestry filter).  0 with
 * *out ready for proctree_set_reader; -1 with a one-line reason in err. */
int monitor_sampler_bpf(proctree_reader *out, pid_t root, pid_t anchor,
                        const char *cgroup_dir, char *err, size_t errlen);
/* 1 if auto may try BPF here: root, and the plugin was built. */
int monitor_sampler_may_bpf(void);
/* Seconds of procfs sampling CPU after which auto loads BPF (0.1, or
 * $JOBSCOPE_BPF_PAYBACK). */
double monitor_sampler_payback(void);

#endif
