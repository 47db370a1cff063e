/* bench_floor.c — the "floor": the bare kernel cost of sampling a process
 * tree.  Finds ROOTPID's tree once (a scan of /proc: this kernel may lack
 * /proc/PID/task/TID/children), opens /proc/PID/stat and /proc/PID/io of
 * each member, prints "ready NPROCS", then every INTERVAL seconds only
 * pread()s every open file, until killed.  No parsing, no discovery, no
 * output: any monitor must do at least this.
 *   bench_floor ROOTPID INTERVAL */
#include "bench.h"
#include <dirent.h>

#define MAXP 65536

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: bench_floor ROOTPID INTERVAL\n"); return 2; }
    int root = atoi(argv[1]);
    double interval = atof(argv[2]);
    static int ppid[MAXP * 8], member[MAXP * 8];
    static int fds[MAXP * 2];
    int pids[MAXP], np = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    char path[64], buf[4096];
    while (d && (e = readdir(d))) {
        int p = atoi(e->d_name);
        if (p <= 0 || p >= MAXP * 8) continue;
        snprintf(path, sizeof path, "/proc/%d/stat", p);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r <= 0) continue;
        buf[r] = 0;
        char *q = strrchr(buf, ')');
        int pp = 0;
        if (q) sscanf(q + 2, "%*c %d", &pp);
        ppid[p] = pp;
        if (np < MAXP) pids[np++] = p;
    }
    if (d) closedir(d);
    member[root] = 1;
    for (int changed = 1; changed; ) {           /* transitive closure */
        changed = 0;
        for (int i = 0; i < np; i++)
            if (!member[pids[i]] && ppid[pids[i]] > 0 && member[ppid[pids[i]]])
                member[pids[i]] = changed = 1;
    }
    int nf = 0, nprocs = 0;
    for (int i = 0; i < np; i++) {
        if (!member[pids[i]]) continue;
        nprocs++;
        snprintf(path, sizeof path, "/proc/%d/stat", pids[i]);
        fds[nf++] = open(path, O_RDONLY);
        snprintf(path, sizeof path, "/proc/%d/io", pids[i]);
        fds[nf++] = open(path, O_RDONLY);
    }
    printf("ready %d\n", nprocs);
    fflush(stdout);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long step = (long)(interval * 1e9);
    for (;;) {
        for (int i = 0; i < nf; i++)
            if (fds[i] >= 0 && pread(fds[i], buf, sizeof buf, 0) < 0) { /* gone */ }
        next.tv_nsec += step % 1000000000L;
        next.tv_sec += step / 1000000000L + next.tv_nsec / 1000000000L;
        next.tv_nsec %= 1000000000L;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
}
