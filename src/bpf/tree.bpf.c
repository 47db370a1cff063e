/* tree.bpf.c — the BPF sampler's kernel half (docs/bpf.md): an `iter/task`
 * program that walks every task once per read and writes one struct bpfrec
 * (bpf_rec.h) for each thread of the job's tree — stat, io and status
 * counters in one pass, with no /proc file opened.
 *
 * A task belongs to the tree when its thread group is the root's, or when a
 * proper ancestor's is the root's or the anchor's (jobscope itself in `run`:
 * orphans re-parented to the subreaper stay in).  jobscope's own threads are
 * never in it.  root_tgid and anchor_tgid are set by user space (bpfsample.c)
 * before each read; the cgroup variant takes every task of the job's own
 * cgroup instead.  Compiled with clang -target bpf against the kernel's BTF
 * (CO-RE), loaded through the libbpf skeleton generated at build time. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "bpf_rec.h"

char LICENSE[] SEC("license") = "GPL";

__u32 root_tgid;
__u32 anchor_tgid;
__u64 lost; /* records the ring buffer had no room for (cgroup program) */

/* The cgroup program writes all of a job's tasks in one invocation: more
 * than the iterator's seq_file buffer (32 KiB) holds, so its records go
 * through a ring buffer that user space drains after each read. */
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 8 << 20);
} records SEC(".maps");

#define MAX_DEPTH 64

/* Before 6.2 the RSS counters were atomics, not per-CPU counters. */
struct mm_rss_stat___old {
    atomic_long_t count[4];
};
struct mm_struct___old {
    struct mm_rss_stat___old rss_stat;
};

static __always_inline int in_tree(struct task_struct *t)
{
    __u32 tgid = t->tgid;
    if (root_tgid && tgid == root_tgid) return 1; /* 0: none (run, before the spawn) */
    if (anchor_tgid && tgid == anchor_tgid) return 0;
    struct task_struct *p = t;
    for (int i = 0; i < MAX_DEPTH; i++) {
        struct task_struct *pp = p->real_parent;
        if (!pp || pp == p) return 0;
        __u32 pt = pp->tgid;
        if ((root_tgid && pt == root_tgid) || (anchor_tgid && pt == anchor_tgid)) return 1;
        if (pt <= 1) return 0;
        p = pp;
    }
    return 0;
}

static __always_inline void read_io(__u64 *out, struct task_io_accounting *a)
{
    out[0] = a->rchar;
    out[1] = a->wchar;
    out[2] = a->syscr;
    out[3] = a->syscw;
    out[4] = a->read_bytes;
    out[5] = a->write_bytes;
    out[6] = a->cancelled_write_bytes;
}

static __always_inline __s64 rss_counter(struct mm_struct *mm, int i)
{
    if (bpf_core_field_exists(((struct mm_struct___old *)0)->rss_stat.count)) {
        struct mm_struct___old *o = (void *)mm;
        return BPF_CORE_READ(o, rss_stat.count[i].counter);
    }
    return mm->rss_stat[i].count;
}

static __always_inline __u64 pos(__s64 v)
{
    return v > 0 ? (__u64)v : 0;
}

/* Writes the record of one task of the tree: to the iterator's seq_file, or
 * (seq NULL) to the ring buffer. */
static __always_inline void emit(struct seq_file *seq, struct task_struct *t)
{
    struct bpfrec r = {};
    r.tgid = t->tgid;
    r.pid = t->pid;
    r.ppid = t->real_parent->tgid;
    r.utime = t->utime;
    r.stime = t->stime;
    r.sum_exec_runtime = t->se.sum_exec_runtime;
    r.min_flt = t->min_flt;
    r.maj_flt = t->maj_flt;
    r.nvcsw = t->nvcsw;
    r.nivcsw = t->nivcsw;
    read_io(r.io, &t->ioac);
    bpf_probe_read_kernel_str(r.comm, sizeof r.comm, t->comm);

    if (r.pid == r.tgid) {
        r.flags |= BPFREC_LEADER;
        struct signal_struct *sig = t->signal;
        r.start_boottime = t->start_boottime;
        r.sig_utime = sig->utime;
        r.sig_stime = sig->stime;
        r.sig_sum_sched_runtime = sig->sum_sched_runtime;
        r.sig_cutime = sig->cutime;
        r.sig_cstime = sig->cstime;
        r.sig_min_flt = sig->min_flt;
        r.sig_maj_flt = sig->maj_flt;
        r.sig_cmin_flt = sig->cmin_flt;
        r.sig_cmaj_flt = sig->cmaj_flt;
        r.sig_nvcsw = sig->nvcsw;
        r.sig_nivcsw = sig->nivcsw;
        read_io(r.sig_io, &sig->ioac);
        r.prev_utime = sig->prev_cputime.utime;
        r.prev_stime = sig->prev_cputime.stime;
        r.nr_threads = sig->nr_threads;
        /* /proc/PID/stat's delayacct_blkio_ticks: the leader's own */
        struct task_delay_info *d = t->delays;
        if (d) r.blkio_delay = d->blkio_delay;
        struct mm_struct *mm = t->mm;
        if (mm) {
            /* MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES */
            r.rss_pages =
                pos(rss_counter(mm, 0)) + pos(rss_counter(mm, 1)) + pos(rss_counter(mm, 3));
            r.swap_pages = pos(rss_counter(mm, 2));
            r.total_vm = mm->total_vm;
            r.hiwater_rss = mm->hiwater_rss;
            r.flags |= BPFREC_HAVE_RSS;
        }
    }
    if (seq)
        bpf_seq_write(seq, &r, sizeof r);
    else if (bpf_ringbuf_output(&records, &r, sizeof r, 0))
        __sync_fetch_and_add(&lost, 1);
}

/* Every task on the host, filtered by ancestry: for a job without a cgroup
 * of its own (cost grows with the host's task count). */
SEC("iter/task")
int jobscope_tree(struct bpf_iter__task *ctx)
{
    struct task_struct *t = ctx->task;
    if (t && in_tree(t)) emit(ctx->meta->seq, t);
    return 0;
}

/* The tasks of the job's own cgroup only (the css_task iterator, kernel
 * 6.7+): cost grows with the job, and daemons that left the process tree
 * but not the cgroup stay in.  jobscope's own threads are left out. */
extern int bpf_iter_css_task_new(struct bpf_iter_css_task *it, struct cgroup_subsys_state *css,
                                 unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_css_task_next(struct bpf_iter_css_task *it) __weak __ksym;
extern void bpf_iter_css_task_destroy(struct bpf_iter_css_task *it) __weak __ksym;

SEC("iter/cgroup")
int jobscope_cgroup(struct bpf_iter__cgroup *ctx)
{
    struct cgroup *cgrp = ctx->cgroup;
    if (!cgrp) return 0;
    struct bpf_iter_css_task it;
    struct task_struct *t;
    bpf_iter_css_task_new(&it, &cgrp->self, 0);
    while ((t = bpf_iter_css_task_next(&it))) {
        if (anchor_tgid && t->tgid == anchor_tgid) continue;
        emit(NULL, t);
    }
    bpf_iter_css_task_destroy(&it);
    return 0;
}
