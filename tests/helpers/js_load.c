/* js_load.c — a libjobscope client for the tests: PROCS processes (fork) x
 * THREADS threads each send COUNT metrics "load.value" (value = i, tags
 * proc/thread), optionally pausing PAUSE_US every 64 calls so the monitor
 * keeps up.  Also sends one "load.level3" metric at level 3 per thread.
 * Prints "sent N dropped D" (totals of all processes) on stdout.
 *
 *   js_load PROCS THREADS COUNT [PAUSE_US] */
#include <jobscope.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int nthreads, count, pause_us, proc_id;
static unsigned long *shared;       /* [0] sent, [1] dropped (all processes) */

static void *worker(void *arg)
{
    long t = (long)arg;
    char ps[16], ts[16];
    snprintf(ps, sizeof ps, "%d", proc_id);
    snprintf(ts, sizeof ts, "%ld", t);
    unsigned long sent = 0;
    for (int i = 0; i < count; i++) {
        js_metric_tagv("load.value", (double)i, "proc", ps, "thread", ts, NULL);
        sent++;
        if (pause_us && i % 64 == 63) {
            struct timespec d = { 0, pause_us * 1000L };
            nanosleep(&d, NULL);
        }
    }
    js_metric_level("load.level3", 3.0, 3);
    __atomic_fetch_add(&shared[0], sent, __ATOMIC_SEQ_CST);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: js_load PROCS THREADS COUNT [PAUSE_US]\n");
        return 2;
    }
    int procs = atoi(argv[1]);
    nthreads = atoi(argv[2]);
    count = atoi(argv[3]);
    pause_us = argc > 4 ? atoi(argv[4]) : 0;
    shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    js_metric("load.start", 1);        /* the parent connects first: children share it */
    __atomic_fetch_add(&shared[0], 1, __ATOMIC_SEQ_CST);
    for (int p = 0; p < procs; p++) {
        pid_t pid = fork();
        if (pid == 0) {
            proc_id = p;
            pthread_t th[64];
            for (long t = 0; t < nthreads && t < 64; t++)
                pthread_create(&th[t], NULL, worker, (void *)t);
            for (int t = 0; t < nthreads && t < 64; t++)
                pthread_join(th[t], NULL);
            __atomic_fetch_add(&shared[1], js_dropped(), __ATOMIC_SEQ_CST);
            _exit(0);
        }
    }
    while (wait(NULL) > 0) {}
    printf("sent %lu dropped %lu\n", shared[0], shared[1] + js_dropped());
    return 0;
}
