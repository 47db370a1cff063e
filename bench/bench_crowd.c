/* bench_crowd.c — a crowded host: N idle threads in one process, unrelated
 * to the job.  Prints "ready" once all N exist, then sleeps until killed.
 * The "crowd" workload of bench/run samples a small job with and without
 * it, to show which sampler's cost follows the host instead of the job.
 *   bench_crowd N */
#include "bench.h"
#include <pthread.h>

static void *idle_thread(void *arg) { (void)arg; for (;;) pause(); return NULL; }

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: bench_crowd N\n"); return 2; }
    int n = atoi(argv[1]);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 16384);
    for (int i = 0; i < n; i++) {
        pthread_t t;
        int e = pthread_create(&t, &a, idle_thread, NULL);
        if (e) { fprintf(stderr, "bench_crowd: thread %d: %s\n", i, strerror(e)); return 1; }
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;) pause();
}
