/* bpf_rec.h — the record tree.bpf.c writes for every thread of the job's
 * tree, read by bpfsample.c.  Shared by the BPF program and user space, so
 * plain fixed-width types only. */
#ifndef JOBSCOPE_BPF_REC_H
#define JOBSCOPE_BPF_REC_H

#define BPFREC_LEADER   1u /* the thread-group leader: the sig_* and mm fields are valid */
#define BPFREC_HAVE_RSS 2u /* the mm's RSS counters could be read on this kernel */
#define BPFREC_NIO      7 /* rchar wchar syscr syscw read_bytes write_bytes cancelled_write_bytes */

struct bpfrec {
    __u32 tgid, pid, ppid, flags;
    /* this thread */
    __u64 utime, stime, sum_exec_runtime; /* ns (utime/stime tick-sampled) */
    __u64 min_flt, maj_flt, nvcsw, nivcsw;
    __u64 io[BPFREC_NIO];
    /* the thread group (leader only): dead threads and reaped children */
    __u64 start_boottime; /* ns */
    __u64 sig_utime, sig_stime, sig_sum_sched_runtime, sig_cutime, sig_cstime;
    __u64 sig_min_flt, sig_maj_flt, sig_cmin_flt, sig_cmaj_flt;
    __u64 sig_nvcsw, sig_nivcsw;
    __u64 sig_io[BPFREC_NIO];
    __u64 prev_utime, prev_stime; /* the kernel's cputime_adjust state */
    __u64 nr_threads;
    __u64 rss_pages, swap_pages, total_vm, hiwater_rss;
    __u64 blkio_delay; /* ns, delay accounting (0: off) */
    char comm[16];
};

#endif
