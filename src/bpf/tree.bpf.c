/* tree.bpf.c — the BPF sampler's kernel half (docs/bpf.md): an `iter/task`
 * program that walks every task once per read and writes one struct bpfrec
 * (bpf_rec.h) for each thread of the job's tree — stat, io and status
 * counters in one pass, with no /proc file opened.
 *
 * A task belongs to the tree when its thread group is the root's, or when a
 * proper ancestor's is the root's or the anchor's (jobscope itself in `run`:
 * orphans re-parented to the subreaper stay in).  jobscope's own threads are
 * never in it.  root_tgid and anchor_tgid are set by user space (bpfsample.c)
 * before each read.  Compiled with clang -target bpf against the kernel's BTF
 * (CO-RE), loaded through the libbpf skeleton generated at build time. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "bpf_rec.h"

char LICENSE[] SEC("license") = "GPL";

__u32 root_tgid;
__u32 anchor_tgid;

#define MAX_DEPTH 64

/* Before 6.2 the RSS counters were atomics, not per-CPU counters. */
struct mm_rss_stat___old { atomic_long_t count[4]; };
struct mm_struct___old { struct mm_rss_stat___old rss_stat; };

static __always_inline int in_tree(struct task_struct *t)
{
    __u32 tgid = t->tgid;
    if (tgid == root_tgid) return 1;
    if (anchor_tgid && tgid == anchor_tgid) return 0;
    struct task_struct *p = t;
    for (int i = 0; i < MAX_DEPTH; i++) {
        struct task_struct *pp = p->real_parent;
        if (!pp || pp == p) return 0;
        __u32 pt = pp->tgid;
        if (pt == root_tgid || (anchor_tgid && pt == anchor_tgid)) return 1;
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

static __always_inline __u64 pos(__s64 v) { return v > 0 ? (__u64)v : 0; }

SEC("iter/task")
int jobscope_tree(struct bpf_iter__task *ctx)
{
    struct seq_file *seq = ctx->meta->seq;
    struct task_struct *t = ctx->task;
    if (!t || !in_tree(t)) return 0;

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
        struct mm_struct *mm = t->mm;
        if (mm) {
            /* MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES */
            r.rss_pages = pos(rss_counter(mm, 0)) + pos(rss_counter(mm, 1)) + pos(rss_counter(mm, 3));
            r.swap_pages = pos(rss_counter(mm, 2));
            r.total_vm = mm->total_vm;
            r.hiwater_rss = mm->hiwater_rss;
            r.flags |= BPFREC_HAVE_RSS;
        }
    }
    bpf_seq_write(seq, &r, sizeof r);
    return 0;
}
