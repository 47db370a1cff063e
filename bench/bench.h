/* bench.h — small helpers shared by the benchmark workloads (the bench_*.c files):
 * a CPU burner with a fixed amount of work, an exact 1 MiB-style writer,
 * and the "truth" record each workload appends to $BENCH_TRUTH so the
 * harness (bench/run) can compare what each monitor reports against what
 * really happened.  Header-only: every workload is one .c file. */
#ifndef BENCH_H
#define BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Fixed work: the same iteration count costs the same CPU on a given core,
 * whatever else runs, so wall-time ratios measure interference only. */
static inline uint64_t bench_burn(uint64_t iters)
{
    volatile uint64_t x = 88172645463325252ull;
    uint64_t v = x;
    for (uint64_t i = 0; i < iters; i++) {
        v ^= v << 13; v ^= v >> 7; v ^= v << 17;
    }
    x = v;
    return x;
}

static inline double bench_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double bench_cputime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Iterations of bench_burn per CPU second on this machine. */
static inline double bench_calibrate(void)
{
    uint64_t n = 1u << 16;
    for (;;) {
        double t0 = bench_cputime();
        bench_burn(n);
        double dt = bench_cputime() - t0;
        if (dt > 0.2) return n / dt;
        n *= 2;
    }
}

/* Writes exactly total bytes with write(2) to fd, in 64 KiB calls.
 * Returns the bytes written (total unless an error). */
static inline uint64_t bench_write(int fd, uint64_t total)
{
    static char buf[65536];
    uint64_t done = 0;
    while (done < total) {
        size_t n = total - done < sizeof buf ? total - done : sizeof buf;
        ssize_t w = write(fd, buf, n);
        if (w < 0) { if (errno == EINTR) continue; break; }
        done += (uint64_t)w;
    }
    return done;
}

static inline uint64_t bench_tv_us(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* Writes bytes to a fresh file in $BENCH_DIR (default: the current
 * directory), then unlinks it: the bytes show in wchar *and* write_bytes
 * (pages dirtied), yet nothing reaches the disk.  Returns bytes written. */
static inline uint64_t bench_write_file(uint64_t bytes)
{
    const char *dir = getenv("BENCH_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/bench-w.%d", dir && *dir ? dir : ".", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return 0;
    uint64_t w = bench_write(fd, bytes);
    unlink(path);
    close(fd);
    return w;
}

/* Appends one JSON line to $BENCH_TRUTH (if set): who, this process's own
 * CPU, its reaped children's CPU, the bytes it (and its children, as given)
 * wrote, and wall seconds.  O_APPEND: several processes may write. */
static inline void bench_truth(const char *who, uint64_t wbytes, double wall)
{
    const char *path = getenv("BENCH_TRUTH");
    if (!path || !*path) return;
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    char line[512];
    int len = snprintf(line, sizeof line,
        "{\"who\":\"%s\",\"pid\":%d,\"cpu_us\":%llu,\"child_cpu_us\":%llu,"
        "\"wbytes\":%llu,\"wall\":%.6f}\n", who, (int)getpid(),
        (unsigned long long)(bench_tv_us(self.ru_utime) + bench_tv_us(self.ru_stime)),
        (unsigned long long)(bench_tv_us(kids.ru_utime) + bench_tv_us(kids.ru_stime)),
        (unsigned long long)wbytes, wall);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) { if (write(fd, line, (size_t)len) < 0) { /* best effort */ } close(fd); }
}

#endif
