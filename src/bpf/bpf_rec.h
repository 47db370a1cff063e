/* bpf_rec.h — what tree.bpf.c and its readers (bpfsample.c) share: the
 * record written for every thread of the job's tree, the per-reader state
 * the pinned programs keep, and the names the objects are pinned under.
 * Shared by the BPF program and user space, so plain fixed-width types only. */
#ifndef JOBSCOPE_BPF_REC_H
#define JOBSCOPE_BPF_REC_H

#define BPFREC_LEADER   1u /* the thread-group leader: the sig_* and mm fields are valid */
#define BPFREC_HAVE_RSS 2u /* the mm's RSS counters could be read on this kernel */
#define BPFREC_KIDS     4u /* nchild is this thread's live children (cgroup walk) */
#define BPFREC_NIO      7 /* rchar wchar syscr syscw read_bytes write_bytes cancelled_write_bytes */

struct bpfrec {
    __u32 tgid, pid, ppid, flags;
    __u32 nchild, pad; /* live children on this thread's list (BPFREC_KIDS) */
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

/* One reader's state (map "cfg", keyed by the reader's tgid: every run has
 * its own entry, and the programs find it from the task that reads them). */
struct bpfcfg {
    __u32 root_tgid, anchor_tgid; /* the host-task walk's filter */
    __u64 start;                  /* the reader's start time (clock ticks after boot) */
    __u32 count, lost;            /* cgroup walk: records written, and without room */
};

/* What the cgroup walk writes to the iterator at its end: how many records
 * it put in the reader's array (map "outs"), how many had no room, and the
 * reading thread's live children (jobscope's own: in `run`, the job and
 * re-parented orphans). */
#define BPFEND_MAGIC 0x6a730a02u
struct bpfend {
    __u32 magic, count, lost, self_kids;
};

/* What the fork program counts for one run (map "counts", keyed by the
 * run's tgid): processes its job started, and those it could not follow
 * (the members map was full). */
struct bpfforks {
    __u64 forks, lost;
};

/* Pinned objects, one directory per build of the program (docs/bpf.md). */
#define BPFPIN_PROG_TASKS  "prog_tasks"
#define BPFPIN_PROG_CGROUP "prog_cgroup"
#define BPFPIN_MAP_CFG     "map_cfg"
#define BPFPIN_MAP_OUTS    "map_outs"

#endif
