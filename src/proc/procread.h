/* procread.h — parsers for /proc/PID/{stat,io,status} text, with no
 * allocation and no stdio: the sampler's inner loop.  Each returns 0 when the
 * text had the expected shape, -1 otherwise (a vanished or odd process). */
#ifndef JOBSCOPE_PROCREAD_H
#define JOBSCOPE_PROCREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct proc_stat {
    pid_t ppid;
    char state;
    uint64_t minflt, cminflt, majflt, cmajflt;
    uint64_t utime, stime, cutime, cstime; /* clock ticks */
    uint64_t num_threads, starttime;       /* starttime: ticks after boot */
    uint64_t vsize;                        /* bytes */
    uint64_t rss;                          /* pages */
    uint64_t blkio_ticks;                  /* delayacct_blkio_ticks */
} proc_stat;

typedef struct proc_io {
    uint64_t rchar, wchar, syscr, syscw;
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
} proc_io;

typedef struct proc_status {
    uint64_t vmsize_kb, vmrss_kb, vmswap_kb, vmhwm_kb;
    uint64_t nvcsw, nivcsw;
    uint32_t uid;
} proc_status;

/* One process as a one-pass reader of the whole tree (the BPF sampler,
 * src/bpf) hands it over: the figures the three files above would show. */
typedef struct proc_snap {
    pid_t pid;
    proc_stat st;    /* as /proc/PID/stat: ticks, pages, bytes */
    proc_io io;      /* as /proc/PID/io (dead threads and reaped children included) */
    proc_status ps;  /* kB; nvcsw/nivcsw of every thread, dead ones included */
    uint64_t cpu_ns; /* own CPU of live and dead threads, ns (sum_exec_runtime) */
    uint32_t nthreads_seen;
    int32_t kids; /* live children the kernel lists for it, -1 unknown (a reader's check) */
    char comm[16];
} proc_snap;

int procread_stat(const char *buf, size_t n, proc_stat *out);
int procread_io(const char *buf, size_t n, proc_io *out);
int procread_status(const char *buf, size_t n, proc_status *out);
/* Parses "12 345 6789 " (a children file); calls fn for each pid. Returns count. */
int procread_pids(const char *buf, size_t n, void (*fn)(void *arg, pid_t pid), void *arg);

#endif
