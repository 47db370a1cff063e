/* bpfsample.h — the BPF sampler (docs/bpf.md): the whole process tree of a
 * job read in one pass of a BPF iterator (tree.bpf.c), with the numbers
 * /proc would show for each process — the same proc_stat/proc_io/
 * proc_status structs the procfs parsers fill (procread.h), utime/stime split
 * exactly as the kernel's cputime_adjust does — at a fraction of the cost of
 * opening and reading three files per process.
 *
 * The programs are loaded once per node and pinned (bpfpin.h); a run opens
 * them and keeps its own state in their maps: its filter, and for the cgroup
 * walk its own record array.  Needs root, a kernel with BTF and task
 * iterators (5.8+; the cgroup walk 6.7+), and a build with clang, bpftool
 * and libbpf (`jobscope --version` says whether it was built).  Without
 * them bpfsample_open() fails with a one-line reason and the caller uses
 * /proc.  One sampler per process at a time (the maps are keyed by tgid). */
#ifndef JOBSCOPE_BPFSAMPLE_H
#define JOBSCOPE_BPFSAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "proc/procread.h"
#include "proc/proctree.h"
#include "bpfpin.h"

/* One process, with the numbers /proc would show (procread.h). */
typedef proc_snap bpf_proc;

typedef struct bpfsample bpfsample;

/* 1 if this build has the BPF sampler. */
int bpfsample_built(void);

/* Opens the sampler for the tree of root; anchor: a subreaper whose other
 * descendants also belong (jobscope's own pid in `run`), or 0.  cgroup_dir:
 * the job's own cgroup (every task in it and in its sub-cgroups belongs;
 * the cost then grows with the job, not with the host; kernel 6.7+), or
 * NULL to walk every task of the host with an ancestry filter.  The
 * programs come from the pinned set, else from a fresh load (published for
 * later runs).  NULL and a one-line reason when BPF cannot be used here. */
bpfsample *bpfsample_open(pid_t root, pid_t anchor, const char *cgroup_dir, char *err,
                          size_t errlen);
/* The same on a set already open (taken over, closed with the sampler). */
bpfsample *bpfsample_open_set(bpfset *set, pid_t root, pid_t anchor, const char *cgroup_dir,
                              char *err, size_t errlen);
/* 1 if it walks a cgroup (members that left it are not in its reads). */
int bpfsample_cgroup_walk(const bpfsample *b);

/* Reads the tree now: *out gets one entry per process, in no particular
 * order, valid until the next call.  Returns the number of processes, or -1
 * (the cgroup walk's array was too small: it is bigger for the next read). */
int bpfsample_read(bpfsample *b, const bpf_proc **out);
/* The cgroup walk: the live children of the thread that read last (in
 * `run`, jobscope's: the job and re-parented orphans), -1 unknown. */
int bpfsample_self_kids(const bpfsample *b);
/* The entry of pid in the last read, or NULL. */
const bpf_proc *bpfsample_find(const bpfsample *b, pid_t pid);
void bpfsample_close(bpfsample *b);

/* A process-tree reader (proctree.h) over an open sampler (taken over). */
void bpfsample_reader(bpfsample *b, proctree_reader *out);

#endif
