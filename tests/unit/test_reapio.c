/* proc/reapio.c: a reaped child's I/O from jobscope's own counters, for
 * users who cannot read a zombie's /proc/PID/io. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/reapio.h"

/* Under valgrind each thread switch reads and writes valgrind's own lock
 * pipe from the threads of the program, so that no snapshot of the
 * counters is exact: there the tests only run the code (for memcheck). */
static int exact_counters(void)
{
    const char *p = getenv("LD_PRELOAD");
    return !(p && strstr(p, "vgpreload"));
}

#define assert_io(a, b)                                                                            \
    do {                                                                                           \
        long long got_ = (long long)(a); /* evaluated in any case */                               \
        if (exact_counters()) assert_int_equal(got_, b);                                           \
    } while (0)

/* A child that writes `writes` blocks of `size` bytes to /dev/null. */
static pid_t writer(int writes, size_t size)
{
    pid_t c = fork();
    if (c == 0) {
        static char buf[65536];
        int fd = open("/dev/null", O_WRONLY);
        for (int i = 0; i < writes; i++)
            if (write(fd, buf, size) < 0) _exit(1);
        _exit(0);
    }
    return c;
}

/* Waits for the child to be a zombie, then reaps it between before/after. */
static int reap(reapio *r, pid_t c, proc_io *io)
{
    siginfo_t si;
    waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT);
    reapio_before(r);
    int status;
    struct rusage ru;
    assert_int_equal(wait4(c, &status, 0, &ru), c);
    return reapio_after(r, io);
}

static void a_reaped_childs_io_is_the_growth_of_our_own_counters(void **state)
{
    reapio r;
    reapio_init(&r);
    proc_io io;
    {
        int got = reap(&r, writer(16, 65536), &io);
        assert_io(got, 0);
    }
    assert_io(io.wchar, 16 * 65536);
    assert_io(io.syscw, 16);
    {
        int got = reap(&r, writer(3, 1000), &io);
        assert_io(got, 0);
    }
    assert_io(io.wchar, 3000);
    assert_io(io.syscw, 3);
    assert_io(r.inexact, 0);
}

static volatile int busy_stop;
static void *busy(void *arg)
{
    int fd = open("/dev/null", O_WRONLY);
    char b[512] = {0};
    while (!busy_stop) {
        for (int i = 0; i < 50; i++)
            if (write(fd, b, sizeof b) < 0) break;
        usleep(200);
    }
    close(fd);
    return NULL;
}

/* Another thread of ours writing all along is not counted as the child's. */
static void a_busy_thread_of_ours_is_not_the_childs(void **state)
{
    reapio r;
    reapio_init(&r);
    pthread_t th;
    busy_stop = 0;
    pthread_create(&th, NULL, busy, NULL);
    for (int k = 0; k < 20; k++) {
        proc_io io;
        int rc = reap(&r, writer(5, 4096), &io);
        assert_io(rc, 0);
        assert_io(io.wchar, 5 * 4096);
        assert_io(io.syscw, 5);
    }
    busy_stop = 1;
    pthread_join(th, NULL);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase;
static void *write_then_exit(void *arg)
{
    int fd = open("/dev/null", O_WRONLY);
    static char b[65536];
    for (int i = 0; i < 16; i++)
        if (write(fd, b, sizeof b) < 0) break;
    close(fd);
    pthread_mutex_lock(&mu);
    phase = 1;
    pthread_cond_broadcast(&cv);
    while (phase != 2) pthread_cond_wait(&cv, &mu); /* exit when told */
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* A thread of ours that exits moves its I/O into the counters a reap grows:
 * taken back, and the figure said to be inexact. */
static void a_thread_that_exits_meanwhile_is_taken_back_and_flagged(void **state)
{
    reapio r;
    reapio_init(&r);
    pthread_t th;
    phase = 0;
    pthread_create(&th, NULL, write_then_exit, NULL);
    pthread_mutex_lock(&mu);
    while (phase != 1) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    pid_t c = writer(2, 1000);
    siginfo_t si;
    waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT);
    reapio_before(&r);
    pthread_mutex_lock(&mu);
    phase = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);
    assert_int_equal(waitpid(c, NULL, 0), c);
    proc_io io;
    {
        int got = reapio_after(&r, &io);
        assert_io(got, -1);
    }
    assert_io(io.wchar, 2000);
    assert_io(r.inexact, 1);
}

/* A thread of ours that came and went between two reaps (a resolver
 * thread of libcurl): the second reap is still exact. */
static void a_thread_gone_since_the_last_reap_means_a_fresh_snapshot(void **state)
{
    reapio r;
    reapio_init(&r);
    proc_io io;
    {
        int got = reap(&r, writer(1, 10), &io);
        assert_io(got, 0);
    }
    pthread_t th;
    phase = 0;
    pthread_create(&th, NULL, write_then_exit, NULL);
    pthread_mutex_lock(&mu);
    while (phase != 1) pthread_cond_wait(&cv, &mu);
    phase = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);
    {
        int got = reap(&r, writer(4, 100), &io);
        assert_io(got, 0);
    }
    assert_io(io.wchar, 400);
    assert_io(r.inexact, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_reaped_childs_io_is_the_growth_of_our_own_counters),
        cmocka_unit_test(a_busy_thread_of_ours_is_not_the_childs),
        cmocka_unit_test(a_thread_that_exits_meanwhile_is_taken_back_and_flagged),
        cmocka_unit_test(a_thread_gone_since_the_last_reap_means_a_fresh_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
