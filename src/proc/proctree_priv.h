/* proctree_priv.h — the process tree's own structures and the pieces its
 * two files share: proctree_find.c finds the members (the pid map, the
 * readers of /proc files, the records, discovery by children files or a scan
 * of /proc); proctree.c samples them and answers the queries of proctree.h.
 * Nothing outside src/proc/proctree*.c includes it. */
#ifndef JOBSCOPE_PROCTREE_PRIV_H
#define JOBSCOPE_PROCTREE_PRIV_H

#include "proctree.h"
#include "procread.h"
#include "hostinfo.h"
#include "../event/event.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NO_FD          (-1)
#define FD_UNAVAILABLE (-2) /* cannot be opened (EACCES): don't retry */

typedef struct thr {
    pid_t tid;
    int fd, fd_sched;
} thr; /* children, schedstat */

typedef struct proc {
    pid_t pid, ppid;
    int fd_stat, fd_io, fd_status;
    uint32_t gen;      /* last sample this record was read alive */
    uint32_t snap_gen; /* last sample the reader filled it */
    uint8_t reaped;    /* jobscope reaped it: carry already done */
    char state;        /* stat's state: 'Z' a zombie (counted apart, not live) */
    uint8_t have_io, have_status, read_ok, folded;
    uint8_t walked;     /* its children files were read at least once */
    uint8_t outside;    /* read from /proc while the reader ran (counted once) */
    uint8_t signalled;  /* the last signal proctree_kill sent it (0: none) */
    int32_t kids;       /* reader: its live children, as the kernel counts them (-1: unknown) */
    uint32_t kids_seen; /* reader: how many of them it returned */
    uint64_t starttime;
    /* last values read: inclusive of reaped descendants */
    uint64_t cpu_u, cpu_s; /* ticks: utime+cutime, stime+cstime */
    uint64_t minflt, majflt;
    proc_io io;
    /* self only */
    uint64_t blkio; /* ticks */
    uint64_t nvcsw, nivcsw;
    uint64_t rss_pages, vsize, swap_kb, hwm_kb;
    uint32_t nthreads;
    uint32_t status_phase;
    /* children mode */
    thr *thr;
    int nthr, cap_thr;
    uint32_t thr_count; /* num_threads when thr[] was listed */
    /* high resolution (interval < 0.1 s): own CPU in ns from schedstat */
    int fd_sched;
    uint64_t self_ticks; /* utime+stime, own threads only */
    uint64_t cpu_ns;     /* from the reader: own CPU in ns (0: unknown) */
} proc;

/* open-addressing hash: pid -> index+1 into procs[] (0 = empty) */
typedef struct pidmap {
    pid_t *keys;
    int *vals;
    size_t cap, used;
} pidmap;

struct proctree {
    char proc[200]; /* the proc filesystem: "/proc", or a fixture */
    enum proctree_mode mode;
    pid_t root, self;
    double interval;
    int children_mode; /* 1: /proc/PID/task/TID/children, 0: scan /proc */
    int hires;         /* refine CPU percent with schedstat (ns) */
    long ticks, pagesize_kb;
    int ncpus; /* CPUs the job may use (affinity) */
    uint32_t gen;
    uint32_t status_every;
    int full_next;
    /* discovery_due: skip the walk while nothing was created */
    int fd_loadavg;
    long walk_last_pid;              /* loadavg's last pid at the last look; -1 unknown */
    int64_t (*creations)(void *ctx); /* the job's own creation count (proctree_set_creations) */
    void *creations_ctx;
    int64_t walk_creations; /* its value at the last look; -1 unknown */
    int member_gone;        /* a member vanished or became a zombie */
    int prev_from_reader;   /* the last sample came from the reader */

    proc *procs;
    int nprocs, cap;
    int *free_list; /* indices of unused slots */
    int nfree;
    pidmap map;

    /* scan mode: pids known NOT to be in the tree, keyed by (pid, inode) */
    pidmap outside; /* vals: low bits of inode */
    DIR *procdir;

    /* self children files (run mode, children mode) */
    thr *self_thr;
    int nself_thr;

    pid_t *found; /* children read from one process's files */
    int nfound, cap_found;

    int *queue; /* BFS order */
    int nqueue, cap_queue;

    tree_counters carry; /* left the tree, not folded into a live member */
    tree_counters last;  /* last reported (for clamping) */
    uint64_t carry_blkio_ticks;
    uint64_t hwm_kb;
    uint64_t total_procs;
    tree_alive alive; /* the gauges of the last sample in which a process was alive */
    double last_ts, last_cpu_s, start_ts;
    int have_last;
    tree_sample peaks; /* only the peak fields are used */
    int delayacct;

    proctree_reader reader; /* one-pass reader (BPF), or read == NULL */
    uint64_t reader_fallbacks;
    uint64_t reader_outside; /* members it did not return, read from /proc */
    int kids_missing;        /* this sample: a member has children the reader did not return */
    int self_missing;        /* this sample: so has jobscope (or the reader cannot tell) */
    pidmap awaiting;         /* vanished children of ours not reaped yet */

    pthread_mutex_t lock; /* guards members[] */
    pid_t *members;
    int nmembers, cap_members;

    char buf[8192];
};

/* proctree_find.c: the pid map (pid -> index+1, 0 when absent) */
int pidmap_get(const pidmap *m, pid_t pid);
void pidmap_del(pidmap *m, pid_t pid);
void pidmap_free(pidmap *m);
/* a member's /proc files: opened once, re-read with pread, as long as the
 * process's descriptors allow (the budget: RLIMIT_NOFILE less 128) */
void proctree_fd_budget_init(void);
int proctree_open_file(const proctree *t, pid_t pid, pid_t tid, const char *name);
ssize_t proctree_read_at(const proctree *t, int *fd, pid_t pid, pid_t tid, const char *name,
                         char *buf, size_t cap, off_t off);
int proctree_read_children_file(proctree *t, int *fd, pid_t pid, pid_t tid,
                                void (*fn)(void *, pid_t));
void proctree_close_fd(int *fd);
/* the member records (proc_vanished: it left; its counters carried) */
proc *proc_get(proctree *t, pid_t pid);
proc *proc_add(proctree *t, pid_t pid);
void proc_remove(proctree *t, proc *p);
int proc_folded(proctree *t, const proc *p, int depth);
void proc_vanished(proctree *t, proc *p, int folded);
/* discovery: children files (queue, relist of threads), a scan of /proc */
void proctree_queue_push(proctree *t, int idx);
void proctree_child_found(void *arg, pid_t pid);
void proctree_thr_relist(const proctree *t, pid_t pid, thr **tv, int *n, int *cap);
void proctree_read_children(proctree *t, pid_t pid, thr **tv, int *n, int *cap, uint32_t nthreads,
                            uint32_t *listed);
void proctree_scan_proc(proctree *t);

#endif
