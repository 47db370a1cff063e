/* bench_forkstorm.c — the "forkstorm" workload: COUNT short-lived children
 * (PAR at a time), each burning ITERS iterations (~5 ms of CPU) and writing
 * exactly BYTES with write(2) to a file it then unlinks (counted in wchar and write_bytes, no disk load).
 * At the end it appends the truth to $BENCH_TRUTH: its own CPU plus its
 * reaped children's (getrusage), and the bytes the children wrote.
 *   bench_forkstorm COUNT ITERS BYTES PAR */
#include "bench.h"
#include <sys/wait.h>

int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: bench_forkstorm COUNT ITERS BYTES PAR\n"); return 2; }
    long count = atol(argv[1]), par = atol(argv[4]);
    uint64_t iters = strtoull(argv[2], NULL, 10), bytes = strtoull(argv[3], NULL, 10);
    double t0 = bench_mono();
    long started = 0, running = 0, failed = 0;
    while (started < count || running > 0) {
        while (started < count && running < par) {
            pid_t p = fork();
            if (p == 0) {
                bench_burn(iters);
                uint64_t w = bench_write_file(bytes);
                _exit(w == bytes ? 0 : 1);
            }
            if (p < 0) { perror("fork"); sleep(1); continue; }
            started++; running++;
        }
        int st;
        if (wait(&st) > 0) {
            running--;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
        } else if (errno == ECHILD) running = 0;
    }
    bench_truth("root", (uint64_t)(count - failed) * bytes, bench_mono() - t0);
    return failed ? 1 : 0;
}
