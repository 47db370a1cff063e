/* bench_cpu.c — the "cpu" workload: a single-threaded CPU-bound job of
 * fixed work.  Run bare and under each monitor; the wall-time ratio is the
 * monitor's interference.
 *   bench_cpu --calibrate        prints bench_burn iterations per CPU second
 *   bench_cpu ITERATIONS         burns exactly that many iterations */
#include "bench.h"

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--calibrate") == 0) {
        printf("%.0f\n", bench_calibrate());
        return 0;
    }
    if (argc != 2) { fprintf(stderr, "usage: bench_cpu ITERATIONS | --calibrate\n"); return 2; }
    double t0 = bench_mono();
    bench_burn(strtoull(argv[1], NULL, 10));
    bench_truth("root", 0, bench_mono() - t0);
    return 0;
}
