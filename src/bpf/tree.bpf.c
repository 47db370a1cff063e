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
    __u32 tgid = BPF_CORE_READ(t, tgid);
    if (tgid == root_tgid) return 1;
    if (anchor_tgid && tgid == anchor_tgid) return 0;
    struct task_struct *p = t;
    for (int i = 0; i < MAX_DEPTH; i++) {
        struct task_struct *pp = BPF_CORE_READ(p, real_parent);
        if (!pp || pp == p) return 0;
        __u32 pt = BPF_CORE_READ(pp, tgid);
        if (pt == root_tgid || (anchor_tgid && pt == anchor_tgid)) return 1;
        if (pt <= 1) return 0;
        p = pp;
    }
    return 0;
}

static __always_inline void read_io(__u64 *out, struct task_io_accounting *a)
{
    out[0] = BPF_CORE_READ(a, rchar);
    out[1] = BPF_CORE_READ(a, wchar);
    out[2] = BPF_CORE_READ(a, syscr);
    out[3] = BPF_CORE_READ(a, syscw);
    out[4] = BPF_CORE_READ(a, read_bytes);
    out[5] = BPF_CORE_READ(a, write_bytes);
    out[6] = BPF_CORE_READ(a, cancelled_write_bytes);
}

static __always_inline __s64 rss_counter(struct mm_struct *mm, int i)
{
    if (bpf_core_field_exists(((struct mm_struct___old *)0)->rss_stat.count)) {
        struct mm_struct___old *o = (void *)mm;
        return BPF_CORE_READ(o, rss_stat.count[i].counter);
    }
    return BPF_CORE_READ(mm, rss_stat[i].count);
}

static __always_inline __u64 pos(__s64 v) { return v > 0 ? (__u64)v : 0; }

SEC("iter/task")
int jobscope_tree(struct bpf_iter__task *ctx)
{
    struct seq_file *seq = ctx->meta->seq;
    struct task_struct *t = ctx->task;
    if (!t || !in_tree(t)) return 0;

    struct bpfrec r = {};
    r.tgid = BPF_CORE_READ(t, tgid);
    r.pid = BPF_CORE_READ(t, pid);
    r.ppid = BPF_CORE_READ(t, real_parent, tgid);
    r.utime = BPF_CORE_READ(t, utime);
    r.stime = BPF_CORE_READ(t, stime);
    r.sum_exec_runtime = BPF_CORE_READ(t, se.sum_exec_runtime);
    r.min_flt = BPF_CORE_READ(t, min_flt);
    r.maj_flt = BPF_CORE_READ(t, maj_flt);
    r.nvcsw = BPF_CORE_READ(t, nvcsw);
    r.nivcsw = BPF_CORE_READ(t, nivcsw);
    read_io(r.io, &t->ioac);
    BPF_CORE_READ_STR_INTO(&r.comm, t, comm);

    if (r.pid == r.tgid) {
        r.flags |= BPFREC_LEADER;
        struct signal_struct *sig = BPF_CORE_READ(t, signal);
        r.start_boottime = BPF_CORE_READ(t, start_boottime);
        r.sig_utime = BPF_CORE_READ(sig, utime);
        r.sig_stime = BPF_CORE_READ(sig, stime);
        r.sig_sum_sched_runtime = BPF_CORE_READ(sig, sum_sched_runtime);
        r.sig_cutime = BPF_CORE_READ(sig, cutime);
        r.sig_cstime = BPF_CORE_READ(sig, cstime);
        r.sig_min_flt = BPF_CORE_READ(sig, min_flt);
        r.sig_maj_flt = BPF_CORE_READ(sig, maj_flt);
        r.sig_cmin_flt = BPF_CORE_READ(sig, cmin_flt);
        r.sig_cmaj_flt = BPF_CORE_READ(sig, cmaj_flt);
        r.sig_nvcsw = BPF_CORE_READ(sig, nvcsw);
        r.sig_nivcsw = BPF_CORE_READ(sig, nivcsw);
        read_io(r.sig_io, &sig->ioac);
        r.prev_utime = BPF_CORE_READ(sig, prev_cputime.utime);
        r.prev_stime = BPF_CORE_READ(sig, prev_cputime.stime);
        r.nr_threads = BPF_CORE_READ(sig, nr_threads);
        struct mm_struct *mm = BPF_CORE_READ(t, mm);
        if (mm) {
            /* MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES */
            r.rss_pages = pos(rss_counter(mm, 0)) + pos(rss_counter(mm, 1)) + pos(rss_counter(mm, 3));
            r.swap_pages = pos(rss_counter(mm, 2));
            r.total_vm = BPF_CORE_READ(mm, total_vm);
            r.hiwater_rss = BPF_CORE_READ(mm, hiwater_rss);
            r.flags |= BPFREC_HAVE_RSS;
        }
    }
    bpf_seq_write(seq, &r, sizeof r);
    return 0;
}
