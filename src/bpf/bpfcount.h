/* bpfcount.h — the count of processes a job ever started (total_processes,
 * docs/cgroups.md) from the pinned BPF set's fork and exit programs
 * (tree.bpf.c): exact, short-lived processes included, with no thread and
 * no wake-up in jobscope (the netlink process connector, procconn.c, wakes
 * and copies for every fork and exit on the host: ~0.4 ms of CPU a second
 * on a busy one).  Root, and only where the set is pinned: it is never
 * loaded for this.
 *
 * The run's processes are members of its job (map members, tgid -> the
 * run's tgid); the kernel makes the child of every fork of a member a
 * member and counts it.  A process can be a member of one run only: a job
 * nested in another jobscope's (`jobscope run -- jobscope run ...`) gets
 * NULL from open and counts through the connector. */
#ifndef JOBSCOPE_BPFCOUNT_H
#define JOBSCOPE_BPFCOUNT_H

#include <stdint.h>
#include <sys/types.h>

typedef struct bpfcount bpfcount;

/* Opens the count (run: before the job is spawned, so that the job's first
 * forks are never missed).  NULL + errno when the pinned set with the fork
 * program is not there, or this process is a member of another run's job
 * (EEXIST: a nested job). */
bpfcount *bpfcount_open(int run_mode);
/* run: the job is spawned next: jobscope itself is a member until
 * bpfcount_started, so that the fork of the job is counted and makes it a
 * member (jobscope's other children, forked before, are not: a relay of
 * --scan-output).  0, or -1. */
int bpfcount_spawning(bpfcount *c);
/* run: the job was spawned as root; jobscope stops being a member. */
void bpfcount_started(bpfcount *c, pid_t root);
/* Makes these processes members (attach: what the sampler saw; after lost
 * events), counting those that were not. */
void bpfcount_add(bpfcount *c, const pid_t *pids, int n);
uint64_t bpfcount_total(bpfcount *c);
uint64_t bpfcount_lost(bpfcount *c); /* forks not followed: the members map was full */
/* Forks of the job's processes the kernel counted so far (-1: none
 * counted here): the process tree's discovery gate (proctree.h). */
int64_t bpfcount_forks(bpfcount *c);
void bpfcount_close(bpfcount *c);

#endif
