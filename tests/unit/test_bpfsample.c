/* test_bpfsample.c — the BPF sampler reads what /proc shows: for processes
 * of a tree that are stopped (so nothing moves between the two reads), every
 * field of stat, io and status that jobscope uses is equal, CPU split by the
 * kernel's own cputime_adjust included; membership follows the tree, or the
 * job's cgroup and its sub-cgroups, with each process's live children
 * counted so that members which left the cgroup can be found.  Runs that
 * share the programs (loaded once, as when pinned) see their own trees
 * only, and a run killed without closing leaves its entry for the next to
 * remove.  Skipped where BPF cannot be used (not built, not root, old
 * kernel). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
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
#include "bpf/bpfsys.h"

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

static char subdir[600]; /* a sub-cgroup of cgdir, when made */

/* rmdir of a cgroup whose killed tasks are still leaving */
static void rmdir_wait(const char *d)
{
    for (int i = 0; i < 200 && rmdir(d) != 0 && errno == EBUSY; i++) usleep(5000);
}

static int remove_cgroup(void **state)
{
    kill_group(state);
    if (subdir[0]) { rmdir_wait(subdir); subdir[0] = 0; }
    if (cgdir[0]) { rmdir_wait(cgdir); cgdir[0] = 0; }
    return 0;
}

static void move_to(const char *dir, pid_t pid)
{
    char path[700];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%d\n", (int)pid);
    assert_int_equal(fclose(f), 0);
}

/* C: three children that stop, then C stops. */
static void child_c(void)
{
    for (int i = 0; i < 3; i++) {
        pid_t k = fork();
        if (k == 0) { raise(SIGSTOP); _exit(0); }
        waitpid(k, NULL, WUNTRACED);
    }
    raise(SIGSTOP);
    _exit(0);
}

static void test_the_cgroup_walk_takes_sub_cgroups_and_counts_children_that_left(void **state)
{
    (void)state;
    char err[256];
    make_cgroup();
    if (!cgdir[0]) { fprintf(stderr, "    skip: cannot make a cgroup here\n"); skip(); }
    snprintf(subdir, sizeof subdir, "%s/sub", cgdir);
    assert_int_equal(mkdir(subdir, 0755), 0);
    pid_t c = fork();
    if (c == 0) { setpgid(0, 0); raise(SIGSTOP); child_c(); }
    setpgid(c, c);
    group = c;
    int status;
    assert_int_equal(waitpid(c, &status, WUNTRACED), c);
    join_cgroup(c);
    kill(c, SIGCONT);
    assert_int_equal(waitpid(c, &status, WUNTRACED), c); /* its children made and stopped */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)c, (int)c);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int k[3];
    assert_int_equal(fscanf(f, "%d %d %d", &k[0], &k[1], &k[2]), 3);
    fclose(f);
    move_to(subdir, k[1]); /* a nested job's cgroup */
    char parent[600];
    snprintf(parent, sizeof parent, "%s", cgdir);
    *strrchr(parent, '/') = 0;
    move_to(parent, k[2]); /* out of the job's cgroup */

    bpfsample *bs = bpfsample_open(c, 0, cgdir, err, sizeof err);
    if (!bs) { fprintf(stderr, "    skip: %s\n", err); skip(); }
    const bpf_proc *procs;
    assert_int_equal(bpfsample_read(bs, &procs), 3);   /* C, k0, and k1 in the sub-cgroup */
    assert_non_null(bpfsample_find(bs, k[0]));
    assert_non_null(bpfsample_find(bs, k[1]));
    assert_null(bpfsample_find(bs, k[2]));
    const bpf_proc *pc = bpfsample_find(bs, c);
    assert_non_null(pc);
    assert_int_equal(pc->kids, 3);                       /* k2 counted: it is looked for */
    assert_int_equal(bpfsample_find(bs, k[0])->kids, 0);
    bpfsample_close(bs);
    move_to(cgdir, k[2]); /* so that the cgroups can go */
}

/* The programs loaded for this process alone (not pinned), or skip. */
static void load_or_skip(bpfset *set)
{
    char err[256], note[256];
    if (bpfpin_load(set, 0, err, sizeof err, note, sizeof note) != 0) {
        fprintf(stderr, "    skip: %s\n", err);
        skip();
    }
}

/* In a forked child: a sampler of its own tree (itself) on the programs
 * the parent loaded, as a second run on a node's pinned set. */
static bpfsample *open_shared(const bpfset *set, char *err, size_t errlen)
{
    bpfset mine = *set;
    for (int i = 0; i < BPFSET_N; i++) mine.fd[i] = mine.fd[i] >= 0 ? dup(mine.fd[i]) : -1;
    return bpfsample_open_set(&mine, getpid(), 0, NULL, err, errlen);
}

/* Two runs at once on the same loaded programs, as two jobscopes on a node
 * with the pinned sampler: each reads its own tree, through its own entry. */
static void test_runs_sharing_the_programs_see_only_their_own_trees(void **state)
{
    (void)state;
    char err[256];
    bpfset set;
    load_or_skip(&set);
    pid_t a = fork(); /* the tree of the first run: A, stopped */
    if (a == 0) { setpgid(0, 0); raise(SIGSTOP); _exit(0); }
    setpgid(a, a);
    group = a;
    int status;
    assert_int_equal(waitpid(a, &status, WUNTRACED), a);
    int go[2], done[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(done), 0);
    pid_t other = fork(); /* the second run, with a tree of its own (itself) */
    if (other == 0) {
        bpfsample *b = open_shared(&set, err, sizeof err);
        char c = b ? 'y' : 'n';
        if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1 || !b) _exit(2);
        const bpf_proc *v;
        int n = bpfsample_read(b, &v);
        int ok = n == 1 && v[0].pid == getpid() && !bpfsample_find(b, a);
        bpfsample_close(b);
        _exit(ok ? 0 : 1);
    }
    bpfsample *bs = bpfsample_open_set(&set, a, 0, NULL, err, sizeof err);
    assert_non_null(bs);
    char c;
    assert_int_equal(read(done[0], &c, 1), 1);
    assert_int_equal(c, 'y');                            /* both open now */
    const bpf_proc *v;
    assert_int_equal(bpfsample_read(bs, &v), 1);
    assert_int_equal(v[0].pid, a);
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_int_equal(waitpid(other, &status, 0), other);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);            /* and the other saw only its own */
    assert_int_equal(bpfsample_read(bs, &v), 1);         /* still ours after it closed */
    assert_int_equal(v[0].pid, a);
    bpfsample_close(bs);
    close(go[0]);
    close(go[1]);
    close(done[0]);
    close(done[1]);
}

/* A run killed without closing (kill -9) leaves its entry in the shared
 * maps; the next run to open removes it. */
static void test_a_run_that_died_unclosed_is_swept_by_the_next(void **state)
{
    (void)state;
    char err[256];
    bpfset set;
    load_or_skip(&set);
    int cfg = dup(set.fd[BPFSET_CFG]);
    pid_t dead = fork();
    if (dead == 0) {
        _exit(open_shared(&set, err, sizeof err) ? 0 : 1); /* no close */
    }
    int status;
    assert_int_equal(waitpid(dead, &status, 0), dead);
    assert_int_equal(WEXITSTATUS(status), 0);
    uint32_t key = (uint32_t)dead;
    unsigned char value[64];
    assert_int_equal(bpfsys_map_lookup(cfg, &key, value), 0); /* left behind */
    bpfsample *bs = bpfsample_open_set(&set, getpid(), 0, NULL, err, sizeof err);
    assert_non_null(bs);
    assert_int_equal(bpfsys_map_lookup(cfg, &key, value), -1); /* swept */
    bpfsample_close(bs);
    key = (uint32_t)getpid();
    assert_int_equal(bpfsys_map_lookup(cfg, &key, value), -1); /* ours removed on close */
    close(cfg);
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
    /* the plugin that loads the programs is in the build directory, one up */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0 && !getenv("JOBSCOPE_PLUGIN_DIR")) {
        exe[n] = 0;
        for (int up = 0; up < 2 && strrchr(exe, '/'); up++) *strrchr(exe, '/') = 0;
        setenv("JOBSCOPE_PLUGIN_DIR", exe, 1);
    }
    setenv("JOBSCOPE_BPF_PIN_DIR", "off", 0); /* whatever this node has pinned */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bpf_sampler_reads_what_proc_shows_for_a_stopped_tree, kill_group),
        cmocka_unit_test_teardown(test_bpf_sampler_through_the_jobs_cgroup_sees_only_its_tasks, remove_cgroup),
        cmocka_unit_test(test_bpf_sampler_is_absent_or_refuses_a_tree_cleanly),
        cmocka_unit_test_teardown(test_the_cgroup_walk_takes_sub_cgroups_and_counts_children_that_left, remove_cgroup),
        cmocka_unit_test_teardown(test_runs_sharing_the_programs_see_only_their_own_trees, kill_group),
        cmocka_unit_test(test_a_run_that_died_unclosed_is_swept_by_the_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
