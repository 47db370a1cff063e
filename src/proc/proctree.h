/* proctree.h — the job's whole process tree, sampled from /proc.
 *
 * Membership: the root (the wrapped command, or the attached pid) and every
 * descendant, found through /proc/PID/task/TID/children where the kernel has
 * it (CONFIG_PROC_CHILDREN) or else through a scan of /proc; once a process
 * is in the tree it stays there until it exits, even if it is re-parented
 * (daemons, setsid).  The walk is skipped while no task was created on the
 * host and no member left since the last one (it could find nothing).  In
 * `run` mode jobscope is a child subreaper, so orphans come back to it and
 * are reaped by it.
 *
 * Accounting: a reaped child's CPU is folded by the kernel into its parent's
 * cutime/cstime and its I/O into the parent's /proc/PID/io.  So the tree's
 * cumulative counters are
 *     carry + sum over live members of their *inclusive* values
 * where inclusive = own + reaped descendants, and carry holds what left the
 * tree without being folded into a live member: processes jobscope reaped
 * itself (exact, from wait4 and the zombie's /proc/PID/io) and, in attach
 * mode, processes whose parent is outside the tree (last values seen).
 * Reported cumulative counters are clamped so they never decrease; CPU is
 * clamped as utime + stime, then split, so that a split the kernel settles
 * later never adds up to more than its total. */
#ifndef JOBSCOPE_PROCTREE_H
#define JOBSCOPE_PROCTREE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <pthread.h>

/* Cumulative counters, over every process that ever ran in the tree. */
typedef struct tree_counters {
    uint64_t utime_us, stime_us; /* CPU, microseconds */
    uint64_t rchar, wchar, syscr, syscw;
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
    uint64_t minflt, majflt;
    uint64_t iowait_us;     /* delay accounting (blkio), if enabled */
    uint64_t nvcsw, nivcsw; /* context switches (see docs/events.md) */
} tree_counters;

typedef struct tree_peak {
    double value, ts; /* ts: epoch seconds when reached */
} tree_peak;

/* The gauges of the tree at the last sample that saw a process of it alive
 * (equal to the sample's own while one is).  The events report them for a
 * sample that finds none alive (the final one, after the job): a gauge that
 * dropped to 0 for a tree that is gone would read as a measurement to every
 * average and plot (tree_metrics.h). */
typedef struct tree_alive {
    uint32_t procs, threads;
    uint64_t rss_kb, vm_kb, swap_kb;
} tree_alive;

/* One sample of the tree: what the kickstart.inv.online event carries. */
typedef struct tree_sample {
    double ts;                       /* epoch seconds */
    double elapsed;                  /* seconds since the job started */
    tree_counters c;                 /* cumulative, monotonic */
    double cpu_percent;              /* since the previous sample, 100 = one core */
    uint32_t procs, threads;         /* live now */
    uint32_t zombies;                /* members that exited and wait to be reaped */
    uint64_t rss_kb, vm_kb, swap_kb; /* sum over live processes */
    tree_alive alive;                /* the gauges when a process was last seen alive */
    uint64_t hwm_kb;                 /* max VmHWM / ru_maxrss of any process so far */
    uint64_t total_procs;            /* processes ever seen in the tree (lower bound) */
    int iowait_valid;                /* delay accounting is on */
    int still; /* proctree_sample_still: the figures of the sample before, not read again */
    /* peaks so far, with the time they were reached */
    tree_peak peak_rss_kb, peak_vm_kb, peak_cpu_percent, peak_procs, peak_threads;
    /* root process facts, for JoReMon-style output */
    pid_t root_pid;
    double root_start;                      /* epoch seconds the root started */
    const char *root_cmd, *root_cwd, *user; /* set once by the monitor; may be NULL */
} tree_sample;

typedef struct proctree proctree;

enum proctree_mode { PROCTREE_RUN, PROCTREE_ATTACH };

/* root: the wrapped child or the attached pid. In RUN mode the tree also
 * includes any process re-parented to jobscope.  proc_root: the proc
 * filesystem to read (NULL: "/proc"); tests point it at a fixture folder
 * of PID/stat, PID/io, PID/status files (tests/unit/test_proctree.c). */
proctree *proctree_new(const char *proc_root, enum proctree_mode mode, pid_t root, double interval);
void proctree_free(proctree *t);

/* Walks the tree and fills *out. Cheap: cached fds re-read with pread. */
int proctree_sample(proctree *t, tree_sample *out);

/* The job is still (nothing of it ran since *out was sampled: the monitor
 * knows it from the cgroup, cgroup_source_still): *out, the last sample,
 * becomes this one without reading anything — its time, a CPU rate of 0,
 * still = 1.  -1 (nothing changed) when the tree has no sample yet or the
 * next one must read every file; then call proctree_sample. */
int proctree_sample_still(proctree *t, tree_sample *out);

/* Called for every child jobscope reaps: pid, its wait4 rusage and the I/O
 * read from its zombie /proc/PID/io just before reaping (io may be NULL). */
#include "procread.h"
void proctree_reaped(proctree *t, pid_t pid, const struct rusage *ru, const struct proc_io *io);

/* The next sample reads every file (status too): use for the final one. */
void proctree_full_next(proctree *t);
/* 1 if members are found through /proc/PID/task/TID/children, 0: /proc scan. */
int proctree_discovery_children(const proctree *t);

/* A reader of the whole tree in one pass (the BPF sampler, docs/bpf.md),
 * used instead of /proc's files and discovery when installed.  read() gives
 * every process of the tree with the figures /proc would show, or -1 (that
 * sample then reads /proc).  Members the reader did not return (a process
 * re-parented out of the root's ancestry in attach mode, one that left the
 * job's cgroup) are still read from /proc until they exit, and their
 * children are looked for there, so membership stays what proctree.h
 * promises.  A partial reader (a cgroup walk) also gives each process's
 * live children as the kernel counts them (proc_snap.kids): where it
 * returned fewer, that parent's children files are read. */
typedef struct proctree_reader {
    const char *name; /* "bpf" */
    const char *walk; /* how it finds members, for the start event */
    int partial;      /* may miss members: those outside the cgroup it walks */
    void *ctx;
    int (*read)(void *ctx, const proc_snap **out);
    /* optional, partial readers: jobscope's own live children as the
     * kernel counted them at the last read (-1 unknown): where fewer came
     * back, its children files are read */
    int (*self_kids)(void *ctx);
    void (*close)(void *ctx);
} proctree_reader;

/* Where the kernel counts the processes the job creates (the pinned BPF
 * sampler's fork program, src/bpf/bpfcount.h, `run` only), fn returns that
 * count, or -1 when it cannot be trusted now: the discovery walk is then due
 * when it moved, not whenever any process of the host was created
 * (/proc/loadavg's last pid), which on a busy host is every sample. */
void proctree_set_creations(proctree *t, int64_t (*fn)(void *ctx), void *ctx);

/* Installs r (copied; closed by proctree_free). */
void proctree_set_reader(proctree *t, const proctree_reader *r);
/* Takes the reader back without closing it (*out; none: read is NULL): the
 * tree reads /proc again until one is installed. */
void proctree_take_reader(proctree *t, proctree_reader *out);
/* "procfs", or the reader's name. */
const char *proctree_sampler(const proctree *t);
/* How members are found: "children", "scan", or the reader's walk. */
const char *proctree_discovery(const proctree *t);
/* Samples the reader could not give (read from /proc instead). */
uint64_t proctree_reader_fallbacks(const proctree *t);
/* Members the reader did not return, read from /proc instead (left the
 * job's cgroup; re-parented out of the root's ancestry). */
uint64_t proctree_reader_outside(const proctree *t);

/* Is pid a live member of the tree (as of the last sample)? Thread-safe:
 * GPU and metrics threads use it to attribute their data to the job. */
int proctree_contains(proctree *t, pid_t pid);
/* Copies up to max member pids (thread-safe); returns the count. */
int proctree_pids(proctree *t, pid_t *out, int max);

/* Sends sig to every member of the last sample that is proven to be that
 * same process still (its pid may have gone to another process since):
 * each is pinned with a pidfd, then checked through the stat descriptor
 * kept open since it was found, or its start time.  sig 0 only counts them
 * (zombies are not counted).  A member is sent each signal once: called
 * again after a sample, the signal reaches only the members found since
 * (forked after the last call).  Returns the count reached.  On the
 * sampler thread (it reads the members' records); used by limits. */
int proctree_kill(proctree *t, int sig);

#endif
