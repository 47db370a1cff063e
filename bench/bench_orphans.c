/* bench_orphans.c — the "orphans" workload: K children that daemonize
 * (double fork + setsid) and keep working after their parent has exited:
 * each daemon waits until it is re-parented, then burns ITERS iterations and
 * writes BYTES to a file it then unlinks.  The job's main process waits until every
 * daemon is done (a pipe reaching EOF), then exits.  Every daemon and the
 * main process append their truth to $BENCH_TRUTH; a monitor that follows
 * the whole job attributes 100% of the daemons' CPU and bytes to it.
 *   bench_orphans K ITERS BYTES */
#include "bench.h"
#include <sys/wait.h>

int main(int argc, char **argv)
{
    if (argc != 4) { fprintf(stderr, "usage: bench_orphans K ITERS BYTES\n"); return 2; }
    int k = atoi(argv[1]);
    uint64_t iters = strtoull(argv[2], NULL, 10), bytes = strtoull(argv[3], NULL, 10);
    double t0 = bench_mono();
    int pfd[2];
    if (pipe(pfd) != 0) { perror("pipe"); return 1; }
    for (int i = 0; i < k; i++) {
        pid_t c = fork();
        if (c < 0) { perror("fork"); return 1; }
        if (c == 0) {
            close(pfd[0]);
            pid_t mid = getpid();
            pid_t d = fork();
            if (d != 0) _exit(d < 0);
            /* the daemon */
            setsid();
            while (getppid() == mid) usleep(1000);   /* until orphaned */
            double d0 = bench_mono();
            bench_burn(iters);
            uint64_t w = bench_write_file(bytes);
            bench_truth("daemon", w, bench_mono() - d0);
            close(pfd[1]);
            _exit(0);
        }
        waitpid(c, NULL, 0);                     /* the intermediate exits at once */
    }
    close(pfd[1]);
    char ch;
    while (read(pfd[0], &ch, 1) > 0 || errno == EINTR) { }
    bench_truth("root", 0, bench_mono() - t0);
    return 0;
}
