/* workload.c — process trees with known resource usage, for the tests.
 *
 *   workload burn MS                     burn MS of CPU
 *   workload write BYTES PATH            write BYTES to PATH (fsync'd)
 *   workload forkstorm N MS BYTES DIR    N children in sequence, each burns MS
 *                                        and writes BYTES to DIR/f.I
 *   workload threadfork MS               a non-main thread forks a child that burns MS
 *   workload threads N MS                N threads that each burn MS of their own CPU
 *   workload grow MB HOLD_MS             touch MB of memory, 8 MB every 50 ms, then
 *                                        hold it for HOLD_MS
 *   workload daemon MS BYTES PATH        double-fork + setsid a daemon that burns MS,
 *                                        writes BYTES to PATH, then the parent exits
 *   workload fanout N SECONDS            N children that all exist together for SECONDS
 *                                        (they wait on a pipe the parent closes), then wait
 *   workload chain DEPTH SECONDS         a chain of DEPTH nested processes that sleep
 *   workload crowd N FILE                N idle threads (a crowded host), then "ready"
 *                                        in FILE; waits until killed
 *   workload catch FILE                  catch INT TERM HUP QUIT USR1 USR2 for 0.5 s after
 *                                        the first; write "SIGNO COUNT", exit 100+SIGNO
 *   workload report FILE                 (after any of the above, as last argument
 *                                        pair) write "utime stime" of self+children
 *
 * Several commands can follow each other: workload burn 50 write 1000 x report r */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void burn(double ms)
{
    double end = cpu_now() + ms / 1000.0;
    volatile unsigned long x = 0;
    while (cpu_now() < end)
        for (int i = 0; i < 10000; i++) x += (unsigned long)i * 2654435761u;
}

static void write_bytes(long bytes, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); exit(2); }
    static char buf[65536];
    memset(buf, 'x', sizeof buf);
    while (bytes > 0) {
        long n = bytes < (long)sizeof buf ? bytes : (long)sizeof buf;
        ssize_t w = write(fd, buf, (size_t)n);
        if (w <= 0) { perror("write"); exit(2); }
        bytes -= w;
    }
    fsync(fd);
    close(fd);
}

static volatile sig_atomic_t caught_sig, caught_count;
static void on_signal(int sig) { caught_sig = sig; caught_count++; }

static void *idle_main(void *arg) { for (;;) pause(); return arg; }

static void *burn_thread(void *arg)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    double end = (double)t.tv_sec + (double)t.tv_nsec * 1e-9 + *(double *)arg / 1000.0, now;
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 10000; i++) x += (unsigned long)i * 2654435761u;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        now = (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
    } while (now < end);
    return NULL;
}

static double thread_ms;
static void *thread_main(void *arg)
{
    pid_t p = fork();
    if (p == 0) { burn(thread_ms); _exit(0); }
    waitpid(p, NULL, 0);
    return arg;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *c = argv[i];
        if (!strcmp(c, "burn") && i + 1 < argc) {
            burn(atof(argv[++i]));
        } else if (!strcmp(c, "write") && i + 2 < argc) {
            write_bytes(atol(argv[i + 1]), argv[i + 2]);
            i += 2;
        } else if (!strcmp(c, "forkstorm") && i + 4 < argc) {
            int n = atoi(argv[i + 1]);
            double ms = atof(argv[i + 2]);
            long bytes = atol(argv[i + 3]);
            const char *dir = argv[i + 4];
            i += 4;
            for (int k = 0; k < n; k++) {
                pid_t p = fork();
                if (p == 0) {
                    char path[4096];
                    snprintf(path, sizeof path, "%s/f.%d", dir, k % 8);
                    burn(ms);
                    if (bytes) write_bytes(bytes, path);
                    _exit(0);
                }
                if (p < 0) { perror("fork"); return 2; }
                if (k % 2) while (waitpid(-1, NULL, 0) > 0) {}   /* at most 2 at once */
            }
            while (waitpid(-1, NULL, 0) > 0) {}
        } else if (!strcmp(c, "threads") && i + 2 < argc) {
            int n = atoi(argv[i + 1]);
            double ms = atof(argv[i + 2]);
            pthread_t th[64];
            if (n < 1 || n > 64) return 2;
            for (int k = 0; k < n; k++) pthread_create(&th[k], NULL, burn_thread, &ms);
            for (int k = 0; k < n; k++) pthread_join(th[k], NULL);
            i += 2;
        } else if (!strcmp(c, "grow") && i + 2 < argc) {
            long mb = atol(argv[i + 1]);
            struct timespec step = {0, 50000000};
            for (long got = 0; got < mb; got += 8) {
                long n = (mb - got < 8 ? mb - got : 8) << 20;
                char *p = malloc((size_t)n);
                if (!p) return 2;
                memset(p, 1, (size_t)n); /* kept: freed at exit */
                nanosleep(&step, NULL);
            }
            long hold = atol(argv[i + 2]);
            struct timespec h = {hold / 1000, (hold % 1000) * 1000000};
            nanosleep(&h, NULL);
            i += 2;
        } else if (!strcmp(c, "threadfork") && i + 1 < argc) {
            thread_ms = atof(argv[++i]);
            pthread_t th;
            pthread_create(&th, NULL, thread_main, NULL);
            pthread_join(th, NULL);
        } else if (!strcmp(c, "daemon") && i + 3 < argc) {
            double ms = atof(argv[i + 1]);
            long bytes = atol(argv[i + 2]);
            const char *path = argv[i + 3];
            i += 3;
            pid_t p = fork();
            if (p == 0) {
                setsid();
                if (fork() == 0) {
                    usleep(200000);            /* the parent is gone by now */
                    burn(ms);
                    write_bytes(bytes, path);
                    _exit(0);
                }
                _exit(0);
            }
            waitpid(p, NULL, 0);
        } else if (!strcmp(c, "fanout") && i + 2 < argc) {
            int n = atoi(argv[i + 1]);
            double secs = atof(argv[i + 2]);
            i += 2;
            /* a fixed sleep per child raced a slow fork loop (ASan, a loaded
             * machine): the first children were gone before the last came */
            int gate[2];
            if (pipe(gate) < 0) return 2;
            for (int k = 0; k < n; k++)
                if (fork() == 0) {
                    char b;
                    close(gate[1]);
                    while (read(gate[0], &b, 1) < 0) {}
                    _exit(0);
                }
            close(gate[0]);
            usleep((useconds_t)(secs * 1e6));
            close(gate[1]);
            while (waitpid(-1, NULL, 0) > 0) {}
        } else if (!strcmp(c, "chain") && i + 2 < argc) {
            int depth = atoi(argv[i + 1]);
            double secs = atof(argv[i + 2]);
            i += 2;
            for (int d = 0; d < depth; d++) {
                pid_t p = fork();
                if (p != 0) { waitpid(p, NULL, 0); _exit(0); }
            }
            usleep((useconds_t)(secs * 1e6));
            _exit(0);
        } else if (!strcmp(c, "crowd") && i + 2 < argc) {
            int n = atoi(argv[i + 1]);
            const char *path = argv[i + 2];
            i += 2;
            pthread_attr_t a;
            pthread_attr_init(&a);
            pthread_attr_setstacksize(&a, 16384);
            for (int k = 0; k < n; k++) {
                pthread_t t;
                if (pthread_create(&t, &a, idle_main, NULL) != 0) { perror("pthread_create"); return 2; }
            }
            FILE *f = fopen(path, "w");
            if (!f) return 2;
            fputs("ready\n", f);
            fclose(f);
            for (;;) pause();
        } else if (!strcmp(c, "report") && i + 1 < argc) {
            struct rusage s, ch;
            getrusage(RUSAGE_SELF, &s);
            getrusage(RUSAGE_CHILDREN, &ch);
            FILE *f = fopen(argv[++i], "w");
            if (!f) return 2;
            fprintf(f, "%.6f %.6f\n",
                    s.ru_utime.tv_sec + s.ru_utime.tv_usec / 1e6 + ch.ru_utime.tv_sec + ch.ru_utime.tv_usec / 1e6,
                    s.ru_stime.tv_sec + s.ru_stime.tv_usec / 1e6 + ch.ru_stime.tv_sec + ch.ru_stime.tv_usec / 1e6);
            fclose(f);
        } else if (!strcmp(c, "catch") && i + 1 < argc) {
            const char *path = argv[++i];
            int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
            for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) signal(sigs[k], on_signal);
            for (int k = 0; k < 2000 && !caught_count; k++) usleep(10000);
            usleep(500000);                       /* count duplicates */
            FILE *f = fopen(path, "w");
            if (f) { fprintf(f, "%d %d\n", (int)caught_sig, (int)caught_count); fclose(f); }
            return 100 + caught_sig;
        } else if (!strcmp(c, "sleep") && i + 1 < argc) {
            usleep((useconds_t)(atof(argv[++i]) * 1e6));
        } else if (!strcmp(c, "exit") && i + 1 < argc) {
            return atoi(argv[++i]);
        } else {
            fprintf(stderr, "workload: bad command '%s'\n", c);
            return 2;
        }
    }
    return 0;
}
