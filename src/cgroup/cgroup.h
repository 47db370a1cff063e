/* cgroup.h — the job's control group: find it or create it, read its
 * totals in O(1) per sample, place the job in it, remove it afterwards.
 *
 * Two readers sit behind one small interface (cgroup_ops): cgroup_v2.c for
 * the unified hierarchy (one directory) and cgroup_v1.c for the legacy
 * hierarchies (one directory per controller: memory, cpuacct, blkio, pids).
 * cgroup_layout.c finds the mounts (/proc/self/mountinfo) and a process's
 * cgroup (/proc/PID/cgroup) and picks the reader; both readers can be
 * pointed at any directory, which is how the unit tests read the fixture
 * trees in tests/fixtures/cgroup/.
 *
 * cgroup_source.c is the "cgroup" source (source.h) built on these;
 * procconn.c counts every process the job started through the netlink
 * process connector.  Field names are documented in docs/cgroups.md. */
#ifndef JOBSCOPE_CGROUP_H
#define JOBSCOPE_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

#define CG_NOLIMIT     UINT64_MAX /* "max": no limit set */
#define CG_MAX_IO_DEVS 16

/* Which figures a read produced (the kernel, the controllers mounted and
 * the version decide). */
enum {
    CG_HAVE_CPU = 1 << 0,        /* cpu_usage_us */
    CG_HAVE_CPU_SPLIT = 1 << 1,  /* cpu_user_us, cpu_system_us */
    CG_HAVE_THROTTLE = 1 << 2,   /* cpu_nr_throttled, cpu_throttled_us */
    CG_HAVE_MEM = 1 << 3,        /* mem_current, mem_max */
    CG_HAVE_MEM_PEAK = 1 << 4,   /* mem_peak */
    CG_HAVE_MEM_STAT = 1 << 5,   /* mem_anon, mem_file, mem_shmem */
    CG_HAVE_MEM_KERNEL = 1 << 6, /* mem_kernel */
    CG_HAVE_OOM = 1 << 7,        /* mem_oom (v2 only) */
    CG_HAVE_OOM_KILL = 1 << 8,   /* mem_oom_kill, mem_max_events */
    CG_HAVE_PIDS = 1 << 9,       /* pids_current, pids_max, pids_max_events */
    CG_HAVE_PIDS_PEAK = 1 << 10, /* pids_peak */
    CG_HAVE_IO = 1 << 11,        /* io_* and io[] */
    CG_HAVE_PSI = 1 << 12,       /* psi[] (v2 only) */
};

typedef struct cg_io_dev {
    unsigned major, minor;
    uint64_t rbytes, wbytes, rios, wios;
} cg_io_dev;

/* One line of a PSI file ("some" or "full"). */
typedef struct cg_psi {
    double avg10, avg60, avg300; /* percent */
    uint64_t total_us;
    int valid;
} cg_psi;

enum {
    CG_PSI_CPU_SOME,
    CG_PSI_CPU_FULL,
    CG_PSI_MEM_SOME,
    CG_PSI_MEM_FULL,
    CG_PSI_IO_SOME,
    CG_PSI_IO_FULL,
    CG_PSI_N
};

typedef struct cg_stats {
    unsigned have; /* CG_HAVE_* */
    uint64_t cpu_usage_us, cpu_user_us, cpu_system_us;
    uint64_t cpu_nr_throttled, cpu_throttled_us;
    uint64_t mem_current, mem_peak, mem_max; /* bytes; mem_max CG_NOLIMIT */
    uint64_t mem_anon, mem_file, mem_shmem, mem_kernel;
    uint64_t mem_oom, mem_oom_kill, mem_max_events; /* v1: failcnt for max */
    uint64_t pids_current, pids_peak, pids_max, pids_max_events;
    uint64_t io_rbytes, io_wbytes, io_rios, io_wios; /* summed over devices */
    int nio;
    cg_io_dev io[CG_MAX_IO_DEVS];
    cg_psi psi[CG_PSI_N];
} cg_stats;

/* v1 controllers jobscope reads, in this order everywhere. */
enum { CG_V1_MEMORY, CG_V1_CPUACCT, CG_V1_BLKIO, CG_V1_PIDS, CG_V1_N };
extern const char *const cg_v1_names[CG_V1_N];

typedef struct cgroup cgroup;

/* read_fast's skip: memory.stat may be carried over while memory.current
 * stands still (the job's processes did nothing that moves it);
 * pids.current may be carried over (the job's tasks are those it counted). */
#define CG_SKIP_MEM_STAT 1u
#define CG_SKIP_PIDS     2u
/* read_fast's skip: the caller probed the cgroup just before (probe()) and
 * found its CPU total and memory.current where the last read left them:
 * nothing of the cgroup ran and no page of it was charged or uncharged.
 * What only its own tasks move is kept as last read (CPU, memory, pids,
 * v1's I/O, counted as its tasks submit it); what the kernel moves for it
 * meanwhile is read (v2's io.stat: the writeback of its dirty pages). */
#define CG_SKIP_STILL 4u
/* With CG_SKIP_STILL, instead of read(): what may have moved from outside
 * while nothing of the cgroup ran (the limits; v2: every figure, PSI's
 * averages move). */
#define CG_STILL_LIMITS 8u

/* What cgroup_ops.probe reads. */
typedef struct cg_probe {
    uint64_t cpu;   /* the CPU total: ns (v1 cpuacct.usage), µs (v2 cpu.stat usage_usec) */
    uint64_t mem;   /* memory.current / memory.usage_in_bytes */
    uint64_t tasks; /* pids.current: also moves when a task is moved out */
} cg_probe;

/* What each reader implements. */
typedef struct cgroup_ops {
    int version;                           /* 1 or 2 */
    int (*read)(cgroup *cg, cg_stats *st); /* 0, or -1 if nothing could be read */
    /* Only the figures that move every sample (CG_FAST), in st from a read
     * before: CPU, memory.current and memory.stat, pids.current, I/O.  The
     * others (limits, peaks, events, kernel memory on v1, PSI) keep their
     * last values.  What a first file says cannot have moved is not read
     * again: the CPU split while the CPU total stands still (nothing of the
     * cgroup ran), the I/O bytes while the I/O count stands still (no
     * request completed); with CG_SKIP_MEM_STAT, memory.stat while
     * memory.current stands still (the caller knows the job was quiet);
     * with CG_SKIP_PIDS, pids.current (the caller knows no task came or
     * went). */
    int (*read_fast)(cgroup *cg, cg_stats *st, unsigned skip);
    /* The figures that move whenever anything of the cgroup runs, its
     * memory moves or a task comes or goes (cg_probe), cheap: three small
     * files; 0, or -1 (not all could be read).  The next read_fast takes
     * them from here instead of reading them again. */
    int (*probe)(cgroup *cg, cg_probe *p);
    int (*attach)(cgroup *cg, pid_t pid); /* move a process (all its threads) in */
    int (*nprocs)(cgroup *cg);            /* processes inside now, -1 on error */
    const char *(*task_dir)(cgroup *cg);  /* a directory whose cgroup holds the tasks */
    int (*kill)(cgroup *cg, int sig);     /* signal every process inside; count */
    int (*set_memory_max)(cgroup *cg, uint64_t bytes);
    int (*set_pids_max)(cgroup *cg, uint64_t n);
    int (*remove)(cgroup *cg); /* rmdir (the empty) directories */
    void (*free)(cgroup *cg);
} cgroup_ops;

struct cgroup {
    const cgroup_ops *ops;
    char *path; /* for messages and the record: v2 dir, or v1 path inside the hierarchies */
};

/* Readers on explicit directories (fixtures, or paths found below). */
cgroup *cgroup_v2_open(const char *dir);
/* dirs[CG_V1_*]: a controller's directory, or NULL when it is not mounted.
 * rel: the path inside the hierarchies, for messages. */
cgroup *cgroup_v1_open(const char *const dirs[CG_V1_N], const char *rel);

/* The mounts: where the unified hierarchy and each v1 controller are. */
typedef struct cg_mounts {
    char *v2;           /* cgroup2 mount point, or NULL */
    char *v2_root;      /* its root inside the hierarchy ("/" unless namespaced) */
    int v2_controllers; /* cgroup.controllers of the mount lists memory or cpu */
    char *v1[CG_V1_N];  /* mount point per controller, or NULL */
    char *v1_root[CG_V1_N];
} cg_mounts;

int cgroup_mounts_parse(const char *mountinfo_path, cg_mounts *m);
void cgroup_mounts_free(cg_mounts *m);

/* A process's place, from /proc/PID/cgroup. */
typedef struct cg_procpath {
    char *v2; /* the "0::" line, or NULL */
    char *v1[CG_V1_N];
} cg_procpath;

int cgroup_procpath_parse(const char *proc_cgroup_path, cg_procpath *p);
void cgroup_procpath_free(cg_procpath *p);

/* 2 when the unified hierarchy holds the controllers, 1 when v1 holds
 * memory or cpuacct, 0 when no usable cgroup fs. */
int cgroup_layout_version(const cg_mounts *m);

/* Opens the cgroup pid is in now (pid 0: jobscope itself).  NULL + errno. */
cgroup *cgroup_of_pid(pid_t pid);
/* Opens an existing cgroup: a v2 directory, a directory under one v1
 * controller mount (the same path is then used in the others), or a path
 * relative to the hierarchies' roots ("/slurm/uid_0/job_7"). */
cgroup *cgroup_open_path(const char *path);

/* Placement: creates NAME under jobscope's own cgroup (each v1 controller),
 * ready for cgroup_enter/cgroup_leave.  NULL + errno when not possible. */
typedef struct cg_child {
    cgroup *cg;   /* the new cgroup */
    cgroup *home; /* where jobscope goes back to */
    /* v2 only: the controllers could be enabled under jobscope's cgroup
     * only after moving jobscope to a leaf of its own (home); undone at
     * the end. */
    char *v2_parent;
    unsigned v2_enabled; /* bit i: controller i was enabled by us */
} cg_child;

int cgroup_create_child(const char *name, cg_child *out);
/* 1 if jobscope sits in a non-root memory cgroup (a scheduler's, a systemd
 * scope's): a cgroup for the job below it adds no memory charging the job
 * does not pay already.  0 in the root memory cgroup, where the kernel skips
 * charging, or with no memory controller (docs/cgroups.md: the default). */
int cgroup_memory_charged(void);
int cgroup_enter(cg_child *c); /* jobscope into the new cgroup (before the fork) */
int cgroup_leave(cg_child *c); /* jobscope back home (after the fork) */
/* Moves pid to where jobscope came from, if jobscope sits in the job's new
 * cgroup now (between the cgroup source's open and start): for a helper
 * forked meanwhile that is no part of the job (the --scan-output relay).
 * ctx: the monitor's (its cgroup source).  No allocation: callable in a
 * forked child.  0, or -1 with errno. */
struct monitor_ctx;
int cgroup_send_home(const struct monitor_ctx *ctx, pid_t pid);
/* Removes the new cgroup (waits up to wait_s for its processes to be gone)
 * and undoes the v2 leaf; frees everything.  0, or -1 if it stayed. */
int cgroup_child_destroy(cg_child *c, double wait_s);

/* Control files a reader reads every sample, kept open and read again with
 * pread from offset 0 (which makes the kernel generate them anew): an open
 * is a path walk and a kernfs open, several times the read itself
 * (bench/README.md, "Where a one-process sample's time goes").  A file that
 * cannot be opened is tried again every 64 reads (a controller enabled
 * later). */
#define CG_FILES_MAX 24
typedef struct cg_files {
    int fd[CG_FILES_MAX];
    unsigned short miss[CG_FILES_MAX];
} cg_files;
void cg_files_init(cg_files *f);
void cg_files_close(cg_files *f);
/* cg_read_file / cg_read_u64 through slot of f (one slot per file name). */
int cg_fread(cg_files *f, int slot, const char *dir, const char *name, char *buf, size_t cap);
int cg_fread_u64(cg_files *f, int slot, const char *dir, const char *name, uint64_t *v);

/* The common helpers the readers share (cgroup_util.c). */
int cg_read_file(const char *dir, const char *name, char *buf, size_t cap); /* length or -1 */
/* A read starts: full, from zero; else the fast figures (CG_FAST) only. */
#define CG_FAST                                                                                    \
    (CG_HAVE_CPU | CG_HAVE_CPU_SPLIT | CG_HAVE_THROTTLE | CG_HAVE_MEM | CG_HAVE_PIDS | CG_HAVE_IO)
void cg_stats_begin(cg_stats *st, int full);
int cg_read_u64(const char *dir, const char *name, uint64_t *v); /* "max" -> CG_NOLIMIT */
int cg_write_str(const char *dir, const char *name, const char *s);
int cg_keyval(const char *text, const char *key, uint64_t *v); /* "key N" lines */
int cg_parse_psi(const char *text, cg_psi *some, cg_psi *full);
int cg_count_procs(const char *dir);
int cg_kill_procs(const char *dir, int sig);

/* Netlink process connector (procconn.c): counts every process started by
 * the job, including those that lived between two samples.  Root only. */
typedef struct procconn procconn;
procconn *procconn_open(void);                                   /* NULL + errno when unavailable */
void procconn_start(procconn *pc, const pid_t *seed, int nseed); /* starts its thread */
/* How long the thread rests between drains (default 0.2 s): the count is
 * read once a sample, so up to the interval (clamped to 0.2..1 s). */
void procconn_set_rest(procconn *pc, double seconds);
void procconn_add(procconn *pc, const pid_t *pids, int n); /* counts pids not yet known */
void procconn_stop(procconn *pc);      /* reads what is queued, ends the thread */
uint64_t procconn_total(procconn *pc); /* processes ever in the job */
uint64_t procconn_lost(procconn *pc);  /* events lost (socket overrun) */
void procconn_close(procconn *pc);

/* The cg_* fields of a kickstart.inv.online sample (docs/cgroups.md), with
 * the cg_io rows, added to the sample's value set. */
struct mset;
void cgroup_sample_fields(struct mset *set, const cg_stats *st);

/* --cgroup (docs/cgroups.md) */
enum js_cgroup_mode {
    JS_CGROUP_DEFAULT = 0, /* run: own cgroup, quietly, where memory charging is already
                            * paid or a --limit wants one (cgroup_memory_charged); attach: none */
    JS_CGROUP_ON,          /* --cgroup / --cgroup=auto: run: own cgroup; attach: the pid's */
    JS_CGROUP_PATH,        /* --cgroup=PATH (attach): watch that cgroup */
    JS_CGROUP_OFF,         /* --cgroup=off, --no-cgroup */
};

/* The cgroup source's config (its part of monitor_config). */
typedef struct cgroup_config {
    enum js_cgroup_mode mode;
    const char *path; /* JS_CGROUP_PATH */
    int for_limits;   /* --limit given: a cgroup lets the kernel enforce them */
} cgroup_config;

/* The "cgroup" source (cgroup_source.c) and what it shares with the
 * limits source, which runs after it on the same sampler thread.  The
 * state is the monitor's (ctx->cgroup), not global. */
struct source_ops;
struct monitor_ctx;
extern const struct source_ops cgroup_source_ops;
/* the job's cgroup, or NULL; owned: jobscope made it */
cgroup *cgroup_source_cgroup(const struct monitor_ctx *ctx, int *owned);
/* this sample's figures, or NULL */
const cg_stats *cgroup_source_stats(const struct monitor_ctx *ctx);
/* 1: nothing of the job ran, none of its memory moved and none of its
 * tasks came or went since the last sample, so its process figures stand
 * where that sample read them (the monitor then skips the tree;
 * docs/cgroups.md, "A still job").  Only for a cgroup jobscope made for
 * the job alone, holding every task of the tree when it was last read
 * whole; three small reads (the CPU total, memory.current, pids.current).
 * 0: sample everything (also when it cannot tell).  The cgroup's own
 * figures are still read every 10 s. */
int cgroup_source_still(const struct monitor_ctx *ctx);
/* The job is spawned next (monitor.c, after every source's spawn hook):
 * the BPF process count starts following jobscope's forks here. */
void cgroup_source_spawning(const struct monitor_ctx *ctx);
/* Signals everything in the job's cgroup (only one jobscope made) and
 * notes that a limit asked for the kill: stop() then SIGKILLs what is left
 * after --kill-grace. */
void cgroup_source_kill(const struct monitor_ctx *ctx, int sig);

#endif
