/* tree.bpf.c — the BPF sampler's kernel half (docs/bpf.md): two iterator
 * programs that write one struct bpfrec (bpf_rec.h) for each thread of the
 * job's tree — stat, io and status counters in one pass, with no /proc file
 * opened.
 *
 * Loaded once per node and pinned (bpfload.c), shared by every run: a run
 * keeps its own state in the maps, keyed by its own tgid, and the programs
 * find it from the task that reads them (bpf_get_current_pid_tgid), so one
 * run can neither read nor move another's sampling.
 *
 *   jobscope_tasks  (iter/task): every task of the host, filtered by
 *     ancestry: the root's thread group, and every task with the root or the
 *     anchor (jobscope in `run`: re-parented orphans stay in) among its
 *     ancestors; jobscope's own threads never.  The reader's cfg entry holds
 *     root and anchor.  Records go to the iterator's seq_file.
 *   jobscope_cgroup (iter/cgroup, kernel 6.7+): every task of the job's
 *     cgroup and of its sub-cgroups (a nested job's), so the cost follows the
 *     job.  A job writes more than the iterator's 32 KiB seq_file holds, so
 *     records go into the reader's own array (map outs), and the walk ends
 *     with a struct bpfend saying how many.  Each record also counts the
 *     thread's live children: user space compares that with the children it
 *     got, to find members that left the cgroup (they are read from /proc).
 *
 *   jobscope_fork, jobscope_exit (tp_btf on sched_process_fork/exit, attached
 *     while the set is pinned): the count of processes each run's job ever
 *     started (total_processes), short-lived ones included, without the
 *     netlink process connector's per-event wake-ups and copies: a fork
 *     whose parent is a member of a run's job makes the child a member of
 *     it and counts it; a process leaves the members map when its last
 *     thread exits.  Each costs one hash lookup per fork or exit on the host.
 *
 * Compiled with clang -target bpf against the kernel's BTF (CO-RE). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "bpf_rec.h"

char LICENSE[] SEC("license") = "GPL";

#define MAX_READERS 4096 /* runs at once on one node */

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MAX_READERS);
    __type(key, __u32);
    __type(value, struct bpfcfg);
} cfg SEC(".maps");

/* The reader's record array: each run makes its own (any size) and puts it
 * here under its tgid. */
struct out_array {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_INNER_MAP);
    __uint(max_entries, 1);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, sizeof(struct bpfrec));
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
    __uint(max_entries, MAX_READERS);
    __type(key, __u32);
    __array(values, struct out_array);
} outs SEC(".maps");

/* The job each live member process belongs to: tgid -> the run's tgid.
 * Seeded by each run (its root, or in `attach` the processes it sees),
 * grown by jobscope_fork. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1 << 18);
    __type(key, __u32);
    __type(value, __u32);
} members SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MAX_READERS);
    __type(key, __u32);
    __type(value, struct bpfforks);
} counts SEC(".maps");

#define MAX_DEPTH    64
#define MAX_CHILDREN 4096 /* per thread, counted */
#define PF_EXITING_  0x00000004

/* Before 6.2 the RSS counters were atomics, not per-CPU counters. */
struct mm_rss_stat___old {
    atomic_long_t count[4];
};
struct mm_struct___old {
    struct mm_rss_stat___old rss_stat;
};

static __always_inline __u32 reader_tgid(void)
{
    return (__u32)(bpf_get_current_pid_tgid() >> 32);
}

static __always_inline int in_tree(struct task_struct *t, __u32 root_tgid, __u32 anchor_tgid)
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

/* The figures of one task into r (every field written). */
static __always_inline void fill(struct bpfrec *r, struct task_struct *t)
{
    __builtin_memset(r, 0, sizeof *r);
    r->tgid = t->tgid;
    r->pid = t->pid;
    r->ppid = t->real_parent->tgid;
    r->utime = t->utime;
    r->stime = t->stime;
    r->sum_exec_runtime = t->se.sum_exec_runtime;
    r->min_flt = t->min_flt;
    r->maj_flt = t->maj_flt;
    r->nvcsw = t->nvcsw;
    r->nivcsw = t->nivcsw;
    read_io(r->io, &t->ioac);
    bpf_probe_read_kernel_str(r->comm, sizeof r->comm, t->comm);

    if (r->pid == r->tgid) {
        r->flags |= BPFREC_LEADER;
        struct signal_struct *sig = t->signal;
        r->start_boottime = t->start_boottime;
        r->sig_utime = sig->utime;
        r->sig_stime = sig->stime;
        r->sig_sum_sched_runtime = sig->sum_sched_runtime;
        r->sig_cutime = sig->cutime;
        r->sig_cstime = sig->cstime;
        r->sig_min_flt = sig->min_flt;
        r->sig_maj_flt = sig->maj_flt;
        r->sig_cmin_flt = sig->cmin_flt;
        r->sig_cmaj_flt = sig->cmaj_flt;
        r->sig_nvcsw = sig->nvcsw;
        r->sig_nivcsw = sig->nivcsw;
        read_io(r->sig_io, &sig->ioac);
        r->prev_utime = sig->prev_cputime.utime;
        r->prev_stime = sig->prev_cputime.stime;
        r->nr_threads = sig->nr_threads;
        /* /proc/PID/stat's delayacct_blkio_ticks: the leader's own */
        struct task_delay_info *d = t->delays;
        if (d) r->blkio_delay = d->blkio_delay;
        struct mm_struct *mm = t->mm;
        if (mm) {
            /* MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES */
            r->rss_pages =
                pos(rss_counter(mm, 0)) + pos(rss_counter(mm, 1)) + pos(rss_counter(mm, 3));
            r->swap_pages = pos(rss_counter(mm, 2));
            r->total_vm = mm->total_vm;
            r->hiwater_rss = mm->hiwater_rss;
            r->flags |= BPFREC_HAVE_RSS;
        }
    }
}

/* Counting a thread's live children: its `children` list, walked with
 * probe reads under the iterator's RCU read lock, as the kernel's own
 * /proc/PID/task/TID/children does (a list changing meanwhile can give a
 * count one off for one sample: user space then reads that parent's
 * children file, nothing is lost).  Zombies and exiting children are not
 * counted: the cgroup walk skips them too. */
struct kids {
    __u64 pos, head;
    __u32 n;
};

static long kids_step(__u32 i, void *data)
{
    struct kids *k = data;
    if (!k->pos || k->pos == k->head) return 1;
    __u64 task = k->pos - bpf_core_field_offset(struct task_struct, sibling);
    int exit_state = 1;
    unsigned int flags = PF_EXITING_;
    bpf_probe_read_kernel(&exit_state, sizeof exit_state,
                          (void *)(task + bpf_core_field_offset(struct task_struct, exit_state)));
    bpf_probe_read_kernel(&flags, sizeof flags,
                          (void *)(task + bpf_core_field_offset(struct task_struct, flags)));
    if (!exit_state && !(flags & PF_EXITING_)) k->n++;
    if (bpf_probe_read_kernel(&k->pos, sizeof k->pos, (void *)k->pos)) return 1; /* sibling.next */
    return 0;
}

static __always_inline __u32 live_children(struct task_struct *t)
{
    struct kids k = {};
    if (bpf_probe_read_kernel(&k.pos, sizeof k.pos, &t->children.next) || !k.pos) return 0;
    /* the head's address: the first entry's prev (itself when empty) */
    if (bpf_probe_read_kernel(&k.head, sizeof k.head, (void *)(k.pos + sizeof(void *)))) return 0;
    bpf_loop(MAX_CHILDREN, kids_step, &k, 0);
    return k.n;
}

/* Every task on the host, filtered by ancestry: for a job without a cgroup
 * of its own (cost grows with the host's task count). */
SEC("iter/task")
int jobscope_tasks(struct bpf_iter__task *ctx)
{
    struct task_struct *t = ctx->task;
    if (!t) return 0;
    __u32 me = reader_tgid();
    struct bpfcfg *c = bpf_map_lookup_elem(&cfg, &me);
    if (!c || !in_tree(t, c->root_tgid, c->anchor_tgid)) return 0;
    struct bpfrec r;
    fill(&r, t);
    bpf_seq_write(ctx->meta->seq, &r, sizeof r);
    return 0;
}

/* The tasks of the job's cgroup and its descendants (the css_task
 * iterator, kernel 6.7+): cost grows with the job, and daemons that left
 * the process tree but not the cgroup stay in.  jobscope's own threads are
 * left out. */
extern int bpf_iter_css_task_new(struct bpf_iter_css_task *it, struct cgroup_subsys_state *css,
                                 unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_css_task_next(struct bpf_iter_css_task *it) __weak __ksym;
extern void bpf_iter_css_task_destroy(struct bpf_iter_css_task *it) __weak __ksym;

SEC("iter/cgroup")
int jobscope_cgroup(struct bpf_iter__cgroup *ctx)
{
    __u32 me = reader_tgid();
    struct bpfcfg *c = bpf_map_lookup_elem(&cfg, &me);
    if (!c) return 0;
    struct cgroup *cgrp = ctx->cgroup;
    if (!cgrp) { /* after the last cgroup: the count */
        struct bpfend e = {BPFEND_MAGIC, c->count, c->lost,
                           live_children(bpf_get_current_task_btf())};
        bpf_seq_write(ctx->meta->seq, &e, sizeof e);
        return 0;
    }
    if (ctx->meta->seq_num == 0) { /* a new read */
        c->count = 0;
        c->lost = 0;
    }
    void *out = bpf_map_lookup_elem(&outs, &me);
    if (!out) return 0;
    struct bpf_iter_css_task it;
    struct task_struct *t;
    bpf_iter_css_task_new(&it, &cgrp->self, 0);
    while ((t = bpf_iter_css_task_next(&it))) {
        if (t->tgid == me) continue;
        __u32 idx = c->count;
        struct bpfrec *r = bpf_map_lookup_elem(out, &idx);
        if (!r) {
            c->lost++;
            continue;
        }
        fill(r, t);
        r->nchild = live_children(t);
        r->flags |= BPFREC_KIDS;
        c->count = idx + 1;
    }
    bpf_iter_css_task_destroy(&it);
    return 0;
}

#define E2BIG_ 7

SEC("tp_btf/sched_process_fork")
int BPF_PROG(jobscope_fork, struct task_struct *parent, struct task_struct *child)
{
    if (child->pid != child->tgid) return 0; /* a new thread, not a process */
    __u32 pt = parent->tgid;
    __u32 *run = bpf_map_lookup_elem(&members, &pt);
    if (!run) return 0;
    __u32 r = *run, ct = child->tgid;
    struct bpfforks *n = bpf_map_lookup_elem(&counts, &r);
    if (!n) return 0; /* that run has ended */
    long rc = bpf_map_update_elem(&members, &ct, &r, BPF_NOEXIST);
    if (rc == 0)
        __sync_fetch_and_add(&n->forks, 1);
    else if (rc == -E2BIG_)
        __sync_fetch_and_add(&n->lost, 1);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(jobscope_exit, struct task_struct *p)
{
    if (p->signal->live.counter) return 0; /* other threads live on */
    __u32 t = p->tgid;
    bpf_map_delete_elem(&members, &t);
    return 0;
}
