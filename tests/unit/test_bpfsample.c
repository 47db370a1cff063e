/* test_bpfsample.c — the BPF sampler reads what /proc shows: for processes
 * of a tree that are stopped (so nothing moves between the two reads), every
 * field of stat, io and status that jobscope uses is equal, CPU split by the
 * kernel's own cputime_adjust included; membership follows the tree.
 * Skipped where BPF cannot be used (not built, not root, old kernel). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bpf/bpfsample.h"

static void burn_ms(int ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 100000; i++) x += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void write_bytes(const char *path, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[65536];
    memset(buf, 'x', sizeof buf);
    for (size_t done = 0; done < n; done += sizeof buf)
        if (write(fd, buf, sizeof buf) < 0) break;
    close(fd);
    unlink(path);
}

static void *thread_burn(void *arg) { burn_ms((int)(long)arg); return NULL; }
static volatile int t2_done;
static void *thread_burn_stay(void *arg)
{
    burn_ms((int)(long)arg);
    __atomic_store_n(&t2_done, 1, __ATOMIC_SEQ_CST);
    for (;;) pause();
    return NULL;
}

/* A: CPU, I/O, a reaped grandchild, a live (stopped) grandchild; then stops. */
static void child_a(void)
{
    burn_ms(60);
    write_bytes("/tmp/jobscope-bpftest-a", 1 << 20);
    pid_t g = fork();
    if (g == 0) { burn_ms(40); _exit(0); }
    waitpid(g, NULL, 0);
    pid_t live = fork();
    if (live == 0) { burn_ms(20); raise(SIGSTOP); _exit(0); }
    waitpid(live, NULL, WUNTRACED);
    raise(SIGSTOP);
    kill(live, SIGKILL);
    waitpid(live, NULL, 0);
    _exit(0);
}

/* B: threads, one of which has exited (its CPU is in the group's dead-thread totals). */
static void child_b(void)
{
    pthread_t t1, t2;
    pthread_create(&t1, NULL, thread_burn, (void *)30L);
    pthread_join(t1, NULL);
    /* join returns before the kernel releases the thread: wait until it has
     * (its CPU is then in the group's dead-thread totals) */
    for (int i = 0; i < 1000; i++) {
        struct stat sb;
        if (stat("/proc/self/task", &sb) == 0 && sb.st_nlink <= 3) break;
        usleep(1000);
    }
    pthread_create(&t2, NULL, thread_burn_stay, (void *)30L);
    burn_ms(30);
    while (!__atomic_load_n(&t2_done, __ATOMIC_SEQ_CST)) usleep(1000);
    raise(SIGSTOP);
    _exit(0);
}

static int read_file(pid_t pid, const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return (int)n;
}

/* The children run in a process group of their own, so that a failed
 * assertion never leaves stopped processes behind. */
static pid_t group;

static int kill_group(void **state)
{
    (void)state;
    if (group > 0) {
        kill(-group, SIGKILL);
        while (waitpid(-group, NULL, 0) > 0) {}
        group = 0;
    }
    return 0;
}

static void check_same_as_proc(const bpf_proc *b, int single_threaded)
{
    char buf[8192];
    proc_stat st;
    proc_io io;
    proc_status ps;
    int n = read_file(b->pid, "stat", buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal(procread_stat(buf, (size_t)n, &st), 0);
    n = read_file(b->pid, "io", buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal(procread_io(buf, (size_t)n, &io), 0);
    n = read_file(b->pid, "status", buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal(procread_status(buf, (size_t)n, &ps), 0);

    assert_int_equal(b->st.ppid, st.ppid);
    assert_int_equal(b->st.utime, st.utime);
    assert_int_equal(b->st.stime, st.stime);
    assert_int_equal(b->st.cutime, st.cutime);
    assert_int_equal(b->st.cstime, st.cstime);
    assert_int_equal(b->st.minflt, st.minflt);
    assert_int_equal(b->st.majflt, st.majflt);
    assert_int_equal(b->st.cminflt, st.cminflt);
    assert_int_equal(b->st.cmajflt, st.cmajflt);
    assert_int_equal(b->st.num_threads, st.num_threads);
    assert_int_equal(b->st.starttime, st.starttime);
    assert_int_equal(b->st.vsize, st.vsize);
    assert_int_equal(b->st.rss, st.rss);
    assert_int_equal(b->st.blkio_ticks, st.blkio_ticks);
    assert_memory_equal(&b->io, &io, sizeof io);
    assert_int_equal(b->ps.vmsize_kb, ps.vmsize_kb);
    /* status sums the per-CPU RSS deltas, which BPF cannot reach: at most
     * one counter batch (max(32, 2 * CPUs) pages) per CPU and counter apart; stat's rss
     * is the same approximate read, so it is equal above */
    long cpus = sysconf(_SC_NPROCESSORS_CONF), batch = 2 * cpus > 32 ? 2 * cpus : 32;
    long slack_kb = 3 * cpus * batch * (sysconf(_SC_PAGESIZE) / 1024);   /* file, anon, shmem */
    assert_true(llabs((long long)b->ps.vmhwm_kb - (long long)ps.vmhwm_kb) <= slack_kb);
    if (single_threaded) {          /* /proc's status counts the leader thread only */
        assert_int_equal(b->ps.nvcsw, ps.nvcsw);
        assert_int_equal(b->ps.nivcsw, ps.nivcsw);
    } else {
        assert_true(b->ps.nvcsw >= ps.nvcsw);
    }
    assert_true(b->cpu_ns >= (st.utime + st.stime) * 10000000ull);
}

static void test_bpf_sampler_reads_what_proc_shows_for_a_stopped_tree(void **state)
{
    (void)state;
    char err[256];
    bpfsample *bs = bpfsample_open(getpid(), 0, NULL, err, sizeof err);
    if (!bs) {
        fprintf(stderr, "    skip: %s\n", err);
        skip();
    }
    pid_t a = fork();
    if (a == 0) { setpgid(0, 0); child_a(); }
    setpgid(a, a);
    group = a;
    pid_t b = fork();
    if (b == 0) { setpgid(0, group); child_b(); }
    setpgid(b, group);
    int status;
    assert_int_equal(waitpid(a, &status, WUNTRACED), a);
    assert_true(WIFSTOPPED(status));
    assert_int_equal(waitpid(b, &status, WUNTRACED), b);
    assert_true(WIFSTOPPED(status));

    const bpf_proc *procs;
    int n = bpfsample_read(bs, &procs);
    /* the test itself, A, A's stopped grandchild, B */
    assert_int_equal(n, 4);
    assert_non_null(bpfsample_find(bs, getpid()));
    assert_null(bpfsample_find(bs, 1));
    const bpf_proc *pa = bpfsample_find(bs, a), *pb = bpfsample_find(bs, b);
    assert_non_null(pa);
    assert_non_null(pb);
    const bpf_proc *grandchild = NULL;
    for (int i = 0; i < n; i++)
        if (procs[i].st.ppid == a) grandchild = &procs[i];
    assert_non_null(grandchild);

    check_same_as_proc(pa, 1);
    check_same_as_proc(grandchild, 1);
    check_same_as_proc(pb, 0);
    assert_true(pa->io.wchar >= 1 << 20);
    assert_true(pa->st.cutime + pa->st.cstime >= 3);      /* the reaped grandchild's 40 ms */
    assert_int_equal(pb->st.num_threads, 2);              /* main + t2; t1 exited */
    assert_true(pb->cpu_ns >= 85000000ull);               /* 30 + 30 + 30 ms, the exited t1 included */

    bpfsample_close(bs);
}

/* A cgroup of our own for the children: v2 where the unified hierarchy is
 * usable, else the v1 memory hierarchy; "" when neither can be made. */
static char cgdir[512];

static void make_cgroup(void)
{
    char line[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    cgdir[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *path = strchr(strchr(line, ':') + 1, ':') + 1;
        char base[400];
        if (!strncmp(line, "0::", 3) && access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
            snprintf(base, sizeof base, "/sys/fs/cgroup%s", path);
        else if (strstr(line, ":memory:"))
            snprintf(base, sizeof base, "/sys/fs/cgroup/memory%s", path);
        else
            continue;
        snprintf(cgdir, sizeof cgdir, "%s/jobscope-bpftest-%d", base, (int)getpid());
        if (mkdir(cgdir, 0755) == 0) break;
        cgdir[0] = 0;
    }
    if (f) fclose(f);
}

static void join_cgroup(pid_t pid)
{
    char path[600];
    snprintf(path, sizeof path, "%s/cgroup.procs", cgdir);
    FILE *f = fopen(path, "w");
    if (f) { fprintf(f, "%d\n", (int)pid); fclose(f); }
}

static int remove_cgroup(void **state)
{
    kill_group(state);
    if (cgdir[0]) { rmdir(cgdir); cgdir[0] = 0; }
    return 0;
}

static void test_bpf_sampler_through_the_jobs_cgroup_sees_only_its_tasks(void **state)
{
    (void)state;
    char err[256];
    make_cgroup();
    if (!cgdir[0]) { fprintf(stderr, "    skip: cannot make a cgroup here\n"); skip(); }
    pid_t a = fork();
    if (a == 0) { setpgid(0, 0); raise(SIGSTOP); child_a(); }
    setpgid(a, a);
    group = a;
    int status;
    assert_int_equal(waitpid(a, &status, WUNTRACED), a);
    join_cgroup(a);                     /* before it forks: its descendants start inside */
    kill(a, SIGCONT);
    assert_int_equal(waitpid(a, &status, WUNTRACED), a);   /* child_a's own stop */
    bpfsample *bs = bpfsample_open(getpid(), getpid(), cgdir, err, sizeof err);
    if (!bs) { fprintf(stderr, "    skip: %s\n", err); skip(); }
    const bpf_proc *procs;
    int n = bpfsample_read(bs, &procs);
    assert_int_equal(n, 2);             /* A and its stopped grandchild; not this test */
    assert_null(bpfsample_find(bs, getpid()));
    const bpf_proc *pa = bpfsample_find(bs, a);
    assert_non_null(pa);
    check_same_as_proc(pa, 1);
    bpfsample_close(bs);
}

static void test_bpf_sampler_is_absent_or_refuses_a_tree_cleanly(void **state)
{
    (void)state;
    char err[256] = "";
    bpfsample *bs = bpfsample_open(getpid(), 0, NULL, err, sizeof err);
    if (bs) {
        const bpf_proc *procs;
        assert_true(bpfsample_read(bs, &procs) >= 1);
        bpfsample_close(bs);
    } else {
        assert_true(strlen(err) > 10);      /* one line saying why */
        assert_null(strchr(err, '\n'));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bpf_sampler_reads_what_proc_shows_for_a_stopped_tree, kill_group),
        cmocka_unit_test_teardown(test_bpf_sampler_through_the_jobs_cgroup_sees_only_its_tasks, remove_cgroup),
        cmocka_unit_test(test_bpf_sampler_is_absent_or_refuses_a_tree_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
