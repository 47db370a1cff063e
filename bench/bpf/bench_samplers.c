/* bench_samplers.c — the BPF sampler against the procfs floor, in one
 * process and one run (bench/README.md, issue 15): for the tree of ROOTPID,
 * PASSES alternating rounds of
 *   floor: pread() of /proc/PID/stat and /proc/PID/io of every member, fds
 *          kept open, no parsing (what any /proc monitor pays at least);
 *   bpf:   one bpfsample_read() — every stat/io/status figure of every
 *          member, parsed and folded, discovery included;
 * and prints the CPU time (user + system, getrusage) per process-sample of
 * each and their ratio.  With CGROUP_DIR (the tree's own cgroup) the BPF side
 * uses the cgroup's task iterator instead of walking every task of the host.
 *   bench_samplers ROOTPID [PASSES [CGROUP_DIR]] */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "bpf/bpfsample.h"

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: bench_samplers ROOTPID [PASSES]\n"); return 2; }
    pid_t root = atoi(argv[1]);
    int passes = argc > 2 ? atoi(argv[2]) : 50;
    const char *cgdir = argc > 3 ? argv[3] : NULL;
    char err[256], exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0 && !getenv("JOBSCOPE_PLUGIN_DIR")) { /* BUILD/bench/ -> BUILD/jobscope-bpf.so */
        exe[len] = 0;
        for (int up = 0; up < 2 && strrchr(exe, '/'); up++) *strrchr(exe, '/') = 0;
        setenv("JOBSCOPE_PLUGIN_DIR", exe, 1);
    }
    bpfsample *b = bpfsample_open(root, 0, cgdir, err, sizeof err);
    if (!b) { printf("bpf: n/a (%s)\n", err); return 0; }
    const bpf_proc *procs;
    int n = bpfsample_read(b, &procs);
    if (n <= 0) { printf("bpf: read failed\n"); return 1; }
    int *fds = malloc(sizeof *fds * 2 * (size_t)n), nf = 0;
    char path[64], buf[4096];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "/proc/%d/stat", (int)procs[i].pid);
        fds[nf++] = open(path, O_RDONLY);
        snprintf(path, sizeof path, "/proc/%d/io", (int)procs[i].pid);
        fds[nf++] = open(path, O_RDONLY);
    }
    double t_floor = 0, t_bpf = 0;
    for (int p = 0; p < passes; p++) {
        double t0 = cpu_s();
        for (int i = 0; i < nf; i++)
            if (fds[i] >= 0 && pread(fds[i], buf, sizeof buf, 0) < 0) { /* gone */ }
        double t1 = cpu_s();
        if (bpfsample_read(b, &procs) != n) fprintf(stderr, "the tree changed during the run\n");
        double t2 = cpu_s();
        t_floor += t1 - t0;
        t_bpf += t2 - t1;
    }
    double us_floor = t_floor / passes / n * 1e6, us_bpf = t_bpf / passes / n * 1e6;
    printf("tree of %d processes, %d passes each, bpf through %s\n", n, passes,
           cgdir ? "the cgroup's task iterator" : "every task of the host");
    printf("floor (pread stat+io): %.2f us per process-sample\n", us_floor);
    printf("bpf (whole sample):    %.2f us per process-sample  = %.2fx the floor\n", us_bpf, us_bpf / us_floor);
    bpfsample_close(b);
    return 0;
}
