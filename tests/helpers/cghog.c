/* cghog.c — misbehaving jobs for the cgroup and limits tests
 * (tests/integration/7x_cgroup_*.sh).  Every mode is bounded so that a
 * failing test can never run away on a shared machine.
 *
 *   cghog mem MB STEP_MB STEP_MS [HOLD]  allocate and touch MB in steps, then
 *                                  sleep HOLD seconds (default 30)
 *   cghog spin SECONDS             burn SECONDS of CPU time
 *   cghog sleep SECONDS            sleep
 *   cghog forkbomb MAX SECONDS     each process forks children until MAX processes
 *                                  were made in all (counted through a shared
 *                                  counter) or fork fails; all sleep SECONDS
 *   cghog daemon PIDFILE SECONDS   start a daemonized grandchild (double fork,
 *                                  setsid) that ignores SIGTERM and sleeps;
 *                                  writes its pid to PIDFILE, then the parent
 *                                  sleeps SECONDS
 *   cghog cache MB FILE            write MB to FILE (page cache), sleep 1 s */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

static int mode_mem(long mb, long step, long ms, double hold)
{
    static char *blocks[4096];
    int n = 0;
    for (long done = 0; done < mb && n < 4096; done += step) {
        char *p = malloc((size_t)step << 20);
        if (!p)
            return 1;
        memset(p, 1, (size_t)step << 20);
        blocks[n++] = p;
        nap(ms / 1000.0);
    }
    printf("allocated %ld MB\n", mb);
    fflush(stdout);
    nap(hold > 30 ? 30 : hold);
    while (n > 0)
        free(blocks[--n]);
    return 0;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* burns SECONDS of CPU time (not wall time: the machine may be busy),
 * giving up after 3 x SECONDS + 2 of wall time */
static int mode_spin(double secs)
{
    double end = now() + 3 * secs + 2, c0 = cpu_now();
    volatile unsigned long x = 0;
    while (now() < end && cpu_now() - c0 < secs)
        for (int i = 0; i < 100000; i++) x += i;
    return 0;
}

static int mode_forkbomb(long max, double secs)
{
    atomic_long *made = mmap(NULL, sizeof *made, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (made == MAP_FAILED)
        return 1;
    atomic_store(made, 1);
    double end = now() + secs;
    /* every process (the first and each child) keeps forking */
    while (now() < end) {
        if (atomic_fetch_add(made, 1) >= max) {
            atomic_fetch_sub(made, 1);
            break;
        }
        pid_t c = fork();
        if (c < 0) {
            atomic_fetch_sub(made, 1);
            nap(0.05);
            continue;
        }
        nap(0.01);
    }
    while (now() < end)
        nap(0.1);
    return 0;
}

static int mode_daemon(const char *pidfile, double secs)
{
    pid_t c = fork();
    if (c == 0) {
        setsid();
        if (fork() == 0) {
            signal(SIGTERM, SIG_IGN);
            FILE *f = fopen(pidfile, "w");
            if (f) {
                fprintf(f, "%ld\n", (long)getpid());
                fclose(f);
            }
            nap(60);
            _exit(0);
        }
        _exit(0);
    }
    nap(secs);
    return 0;
}

static int mode_cache(long mb, const char *file)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    static char buf[1 << 20];
    memset(buf, 'x', sizeof buf);
    for (long i = 0; i < mb; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
    close(fd);
    nap(1);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "mem"))
        return mode_mem(atol(argv[2]), atol(argv[3]), atol(argv[4]), argc > 5 ? atof(argv[5]) : 30);
    if (argc >= 3 && !strcmp(argv[1], "spin"))
        return mode_spin(atof(argv[2]) > 20 ? 20 : atof(argv[2]));
    if (argc >= 3 && !strcmp(argv[1], "sleep"))
        return nap(atof(argv[2])), 0;
    if (argc >= 4 && !strcmp(argv[1], "forkbomb"))
        return mode_forkbomb(atol(argv[2]) > 2000 ? 2000 : atol(argv[2]), atof(argv[3]) > 30 ? 30 : atof(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "daemon"))
        return mode_daemon(argv[2], atof(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "cache"))
        return mode_cache(atol(argv[2]), argv[3]);
    fprintf(stderr, "usage: see tests/helpers/cghog.c\n");
    return 2;
}
