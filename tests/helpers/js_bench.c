/* js_bench.c — microbenchmark of libjobscope: N calls of js_metric() (and
 * of js_metric_tagv() with two tags) in a tight loop on one thread, then
 * N/20 calls paced 50 us apart (each delivered: the cost of a call while the
 * monitor keeps up); prints "VARIANT calls N ns_per_call X calls_per_s Y
 * dropped D" per variant.
 *
 *   js_bench [N] */
#include <jobscope.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    js_metric("bench.warmup", 0);
    for (int variant = 0; variant < 2; variant++) {
        unsigned long d0 = js_dropped();
        double t0 = now();
        for (long i = 0; i < n; i++) {
            if (variant == 0)
                js_metric("bench.plain", (double)i * 0.5);
            else
                js_metric_tagv("bench.tagged", (double)i * 0.5, "rank", "0", "phase", "train", NULL);
        }
        double dt = now() - t0;
        printf("%s calls %ld ns_per_call %.0f calls_per_s %.0f dropped %lu\n",
               variant ? "tagged" : "plain", n, dt / n * 1e9, n / dt, js_dropped() - d0);
    }
    /* delivered calls: paced so the monitor keeps up, each call timed */
    long m = n / 20 > 0 ? n / 20 : 1;
    unsigned long d0 = js_dropped();
    double sum = 0;
    for (long i = 0; i < m; i++) {
        double t0 = now();
        js_metric("bench.paced", (double)i);
        sum += now() - t0;
        struct timespec d = { 0, 50000 };
        nanosleep(&d, NULL);
    }
    printf("paced calls %ld ns_per_call %.0f calls_per_s %.0f dropped %lu\n",
           m, sum / m * 1e9, m / sum, js_dropped() - d0);
    return 0;
}
