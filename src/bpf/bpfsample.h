/* bpfsample.h — the BPF sampler (docs/bpf.md): the whole process tree of a
 * job read in one pass of a BPF task iterator (tree.bpf.c), with the numbers
 * /proc would show for each process — the same proc_stat/proc_io/
 * proc_status structs the procfs parsers fill (procread.h), utime/stime split
 * exactly as the kernel's cputime_adjust does — at a fraction of the cost of
 * opening and reading three files per process.
 *
 * Needs CAP_BPF + CAP_PERFMON (root in practice), a kernel with BTF and BPF
 * task iterators (5.8+), and a build with clang, bpftool and libbpf
 * (`jobscope --version` says whether it was built).  Without them
 * bpfsample_open() fails with a one-line reason and the caller uses /proc. */
#ifndef JOBSCOPE_BPFSAMPLE_H
#define JOBSCOPE_BPFSAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "proc/procread.h"
#include "proc/proctree.h"

/* One process, with the numbers /proc would show (procread.h). */
typedef proc_snap bpf_proc;

typedef struct bpfsample bpfsample;

/* 1 if this build has the BPF sampler. */
int bpfsample_built(void);

/* Loads the program for the tree of root; anchor: a subreaper whose other
 * descendants also belong (jobscope's own pid in `run`), or 0.  cgroup_dir:
 * the job's own cgroup (every task in it belongs; the cost then grows with
 * the job, not with the host; kernel 6.7+), or NULL to walk every task of
 * the host with an ancestry filter.  NULL and a one-line reason when BPF
 * cannot be used here. */
bpfsample *bpfsample_open(pid_t root, pid_t anchor, const char *cgroup_dir, char *err,
                          size_t errlen);

/* Reads the tree now: *out gets one entry per process, in no particular
 * order, valid until the next call.  Returns the number of processes, or -1. */
int bpfsample_read(bpfsample *b, const bpf_proc **out);
/* The entry of pid in the last read, or NULL. */
const bpf_proc *bpfsample_find(const bpfsample *b, pid_t pid);
void bpfsample_close(bpfsample *b);

/* The plugin's entry point (jobscope-bpf.so, looked up by name with dlsym
 * by src/monitor/sampler.c): opens the sampler as bpfsample_open does and
 * fills *out with a process-tree reader over it.  0, or -1 with err set. */
int jobscope_bpf_reader(pid_t root, pid_t anchor, const char *cgroup_dir, proctree_reader *out,
                        char *err, size_t errlen);

#endif
