/* The process-tree sampler on a fixture proc filesystem (proctree_new's
 * proc root): membership, and the accounting rules of proctree.h —
 * totals = carry + live inclusive values, a reaped child folded into its
 * live parent is counted once, a member that leaves without being folded
 * is carried, what jobscope reaped itself is carried exactly, and the
 * reported counters never decrease.  Fixture files are rewritten in place
 * (same inode) because the sampler keeps them open and re-reads with
 * pread, as it does /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/proctree.h"
#include "proc/tree_metrics.h"

#define TICK_US 10000ULL                /* sysconf(_SC_CLK_TCK) = 100 */

static char root[256];

typedef struct fx {
    pid_t ppid;
    char state;                         /* 0: 'S' */
    uint64_t ut, st, cut, cst, minflt, rss_pages, rchar, wbytes;
} fx;

static void put_file(pid_t pid, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%d", root, (int)pid);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%d/%s", root, (int)pid, name);
    FILE *f = fopen(path, "w");                 /* truncates: same inode */
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void put_proc(pid_t pid, const fx *x)
{
    char stat[1024];
    /* fields 1-24 as the kernel writes them, then zeros up to 52 with
     * delayacct_blkio_ticks (42) = 0 */
    int n = snprintf(stat, sizeof stat,
                     "%d (fx %d) %c %d 0 0 0 -1 0 %llu 0 0 0 %llu %llu %llu %llu 20 0 1 0 %d %llu %llu",
                     (int)pid, (int)pid, x->state ? x->state : 'S', (int)x->ppid, (unsigned long long)x->minflt,
                     (unsigned long long)x->ut, (unsigned long long)x->st,
                     (unsigned long long)x->cut, (unsigned long long)x->cst, 1000 + (int)pid,
                     (unsigned long long)(x->rss_pages * 4096 * 4), (unsigned long long)x->rss_pages);
    for (int i = 25; i <= 52; i++) n += snprintf(stat + n, sizeof stat - (size_t)n, " 0");
    snprintf(stat + n, sizeof stat - (size_t)n, "\n");
    put_file(pid, "stat", stat);
    char io[512];
    snprintf(io, sizeof io, "rchar: %llu\nwchar: 0\nsyscr: 1\nsyscw: 0\nread_bytes: 0\n"
             "write_bytes: %llu\ncancelled_write_bytes: 0\n",
             (unsigned long long)x->rchar, (unsigned long long)x->wbytes);
    put_file(pid, "io", io);
    put_file(pid, "status", "Name:\tfx\nVmHWM:\t    1000 kB\nVmSwap:\t       0 kB\n"
                            "voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t0\n");
}

/* /proc/loadavg, whose last field is the last pid handed out */
static void put_last_pid(int last)
{
    char path[512];
    snprintf(path, sizeof path, "%s/loadavg", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "0.00 0.00 0.00 1/80 %d\n", last);
    fclose(f);
}

/* The process is gone: its open files read empty, then they disappear. */
static void kill_proc(pid_t pid)
{
    const char *const names[] = { "stat", "io", "status" };
    char path[512];
    for (int i = 0; i < 3; i++) {
        put_file(pid, names[i], "");
        snprintf(path, sizeof path, "%s/%d/%s", root, (int)pid, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/%d", root, (int)pid);
    rmdir(path);
}

static int setup(void **state)
{
    snprintf(root, sizeof root, "/tmp/jobscope-proctree.XXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static tree_sample sample(proctree *t)
{
    tree_sample s;
    assert_int_equal(proctree_sample(t, &s), 0);
    return s;
}

static void the_tree_is_the_root_and_its_descendants_only(void **state)
{
    put_proc(100, &(fx){ .ppid = 1, .ut = 10, .rss_pages = 100 });
    put_proc(101, &(fx){ .ppid = 100, .ut = 20, .rss_pages = 50 });
    put_proc(102, &(fx){ .ppid = 101, .ut = 5, .rss_pages = 25 });    /* grandchild */
    put_proc(300, &(fx){ .ppid = 1, .ut = 999, .rss_pages = 999 });   /* another job */
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    assert_non_null(t);
    assert_int_equal(proctree_discovery_children(t), 0);   /* no self/task/N/children: scan */
    tree_sample s = sample(t);
    assert_int_equal(s.procs, 3);
    assert_int_equal(s.total_procs, 3);
    assert_int_equal(s.c.utime_us, 35 * TICK_US);
    assert_int_equal(s.rss_kb, (100 + 50 + 25) * 4);
    assert_true(proctree_contains(t, 102));
    assert_false(proctree_contains(t, 300));
    proctree_free(t);
}

static void a_child_reaped_by_a_live_parent_is_counted_once(void **state)
{
    put_proc(100, &(fx){ .ppid = 1, .ut = 10, .st = 5, .rchar = 1000 });
    put_proc(101, &(fx){ .ppid = 100, .ut = 20, .st = 2, .rchar = 300 });
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    tree_sample s = sample(t);
    assert_int_equal(s.c.utime_us, 30 * TICK_US);
    assert_int_equal(s.c.stime_us, 7 * TICK_US);
    /* 101 exits; 100 waits for it: the kernel folds its CPU into 100's
     * cutime/cstime and its I/O into 100's io */
    kill_proc(101);
    put_proc(100, &(fx){ .ppid = 1, .ut = 10, .st = 5, .cut = 20, .cst = 2, .rchar = 1300 });
    s = sample(t);
    assert_int_equal(s.procs, 1);
    assert_int_equal(s.c.utime_us, 30 * TICK_US);
    assert_int_equal(s.c.stime_us, 7 * TICK_US);
    assert_int_equal(s.c.rchar, 1300);
    proctree_free(t);
}

static void a_member_that_leaves_without_being_folded_is_carried(void **state)
{
    put_proc(100, &(fx){ .ppid = 1, .ut = 10, .rchar = 1000 });
    put_proc(102, &(fx){ .ppid = 100, .ut = 7, .st = 3, .rchar = 70 });
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    tree_sample s = sample(t);
    assert_int_equal(s.c.utime_us, 17 * TICK_US);
    /* 102 is re-parented to init (a daemon): still a member */
    put_proc(102, &(fx){ .ppid = 1, .ut = 8, .st = 3, .rchar = 80 });
    s = sample(t);
    assert_int_equal(s.procs, 2);
    assert_int_equal(s.c.utime_us, 18 * TICK_US);
    /* it exits; init reaps it, outside the tree: its last values stay */
    kill_proc(102);
    s = sample(t);
    assert_int_equal(s.procs, 1);
    assert_int_equal(s.c.utime_us, 18 * TICK_US);
    assert_int_equal(s.c.stime_us, 3 * TICK_US);
    assert_int_equal(s.c.rchar, 1080);
    assert_int_equal(s.total_procs, 2);
    proctree_free(t);
}

static void counters_never_decrease(void **state)
{
    put_proc(100, &(fx){ .ppid = 1, .ut = 40, .minflt = 500, .rchar = 4000 });
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    tree_sample s = sample(t);
    assert_int_equal(s.c.utime_us, 40 * TICK_US);
    put_proc(100, &(fx){ .ppid = 1, .ut = 30, .minflt = 400, .rchar = 3000 });
    s = sample(t);
    assert_int_equal(s.c.utime_us, 40 * TICK_US);
    assert_int_equal(s.c.minflt, 500);
    assert_int_equal(s.c.rchar, 4000);
    put_proc(100, &(fx){ .ppid = 1, .ut = 45, .minflt = 400, .rchar = 5000 });
    s = sample(t);
    assert_int_equal(s.c.utime_us, 45 * TICK_US);
    assert_int_equal(s.c.minflt, 500);
    assert_int_equal(s.c.rchar, 5000);
    proctree_free(t);
}

/* The kernel may settle a process's user/system split differently later
 * (cputime_adjust at reaping): each part still never decreases, and their
 * sum is the total the kernel shows, not more. */
static void a_shifting_cpu_split_keeps_the_total_true(void **state)
{
    put_proc(100, &(fx){ .ppid = 1, .ut = 10, .st = 5 });
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    tree_sample s = sample(t);
    assert_int_equal(s.c.utime_us + s.c.stime_us, 15 * TICK_US);
    put_proc(100, &(fx){ .ppid = 1, .ut = 9, .st = 7 });      /* 16 in all, split moved */
    s = sample(t);
    assert_int_equal(s.c.utime_us, 10 * TICK_US);
    assert_int_equal(s.c.stime_us, 6 * TICK_US);
    put_proc(100, &(fx){ .ppid = 1, .ut = 12, .st = 8 });
    s = sample(t);
    assert_int_equal(s.c.utime_us, 12 * TICK_US);
    assert_int_equal(s.c.stime_us, 8 * TICK_US);
    proctree_free(t);
}

/* run mode: jobscope's own children are members; what it reaped is carried
 * exactly from wait4's rusage and the zombie's io, not from /proc again */
static void what_jobscope_reaped_is_carried_exactly_once(void **state)
{
    pid_t self = getpid();
    put_proc(200, &(fx){ .ppid = self, .ut = 100, .rchar = 10 });
    put_proc(201, &(fx){ .ppid = self, .ut = 50, .rchar = 20 });       /* an orphan we adopted */
    proctree *t = proctree_new(root, PROCTREE_RUN, 200, 1.0);
    tree_sample s = sample(t);
    assert_int_equal(s.procs, 2);
    assert_int_equal(s.c.utime_us, 150 * TICK_US);
    struct rusage ru = { 0 };
    ru.ru_utime.tv_sec = 1;
    ru.ru_utime.tv_usec = 234567;              /* exact: finer than ticks */
    ru.ru_maxrss = 7777;
    proc_io io = { .rchar = 12 };
    proctree_reaped(t, 200, &ru, &io);
    kill_proc(200);
    s = sample(t);
    assert_int_equal(s.procs, 1);
    assert_int_equal(s.c.utime_us, 1234567 + 50 * TICK_US);
    assert_int_equal(s.c.rchar, 12 + 20);
    assert_int_equal(s.hwm_kb, 7777);
    proctree_free(t);
}

static void the_proc_root_is_where_delay_accounting_is_read_too(void **state)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sys", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/sys/kernel", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/sys/kernel/task_delayacct", root);
    FILE *f = fopen(path, "w");
    fputs("0\n", f);
    fclose(f);
    put_proc(100, &(fx){ .ppid = 1, .ut = 1 });
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    tree_sample s = sample(t);
    assert_int_equal(s.iowait_valid, 0);
    proctree_free(t);
    char longroot[400];                         /* too long a root is refused */
    memset(longroot, 'x', sizeof longroot - 1);
    longroot[0] = '/';
    longroot[sizeof longroot - 1] = 0;
    assert_null(proctree_new(longroot, PROCTREE_ATTACH, 1, 1));
}

/* Discovery is skipped while nothing was created on the host (loadavg's
 * last pid stands still) and no member left: the walk could find nothing. */
static void discovery_walks_only_when_a_task_was_created_or_a_member_left(void **state)
{
    put_last_pid(500);
    put_proc(100, &(fx){ .ppid = 1, .ut = 1 });
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 0.1);
    assert_int_equal(sample(t).procs, 1);
    /* a child appears but no pid was handed out: not looked for */
    put_proc(101, &(fx){ .ppid = 100, .ut = 2 });
    assert_int_equal(sample(t).procs, 1);
    /* the last pid moved: the walk finds it */
    put_last_pid(501);
    assert_int_equal(sample(t).procs, 2);
    assert_int_equal(sample(t).procs, 2);
    /* a member leaves: the sample after it walks (an orphan may have moved) */
    kill_proc(101);
    put_proc(102, &(fx){ .ppid = 100, .ut = 3 });
    assert_int_equal(sample(t).procs, 1);
    assert_int_equal(sample(t).procs, 2);
    /* a member seen as a zombie has left too (and is counted apart) */
    put_proc(102, &(fx){ .ppid = 100, .ut = 3, .state = 'Z' });
    put_proc(103, &(fx){ .ppid = 100, .ut = 4 });
    tree_sample z = sample(t);
    assert_int_equal(z.procs, 1);
    assert_int_equal(z.zombies, 1);
    z = sample(t);
    assert_int_equal(z.procs, 2);
    assert_int_equal(z.zombies, 1);
    z = sample(t);                                   /* still a zombie: walks again */
    assert_int_equal(z.procs, 2);
    assert_int_equal(z.zombies, 1);
    kill_proc(102);                                  /* reaped */
    assert_int_equal(sample(t).procs, 2);
    assert_int_equal(sample(t).zombies, 0);
    /* a full sample (the final one, every status round) always walks */
    put_proc(104, &(fx){ .ppid = 100, .ut = 5 });
    assert_int_equal(sample(t).procs, 2);
    proctree_full_next(t);
    assert_int_equal(sample(t).procs, 3);
    proctree_free(t);
}

/* Issue 21.8: the final sample, after the tree is gone, reported rss, vm
 * and procs as 0, which averages and plots took for a measurement.  The
 * sample keeps the real count (the monitor ends an attach on it); the event
 * carries the gauges of the last sample that saw a process alive. */
static void a_sample_without_a_live_process_reports_the_last_live_gauges(void **state)
{
    put_proc(100, &(fx){ .ppid = 1, .ut = 1, .rss_pages = 100 });
    put_proc(101, &(fx){ .ppid = 100, .ut = 2, .rss_pages = 50 });
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    tree_sample s = sample(t);
    assert_int_equal(s.procs, 2);
    kill_proc(101);
    kill_proc(100);
    s = sample(t);
    assert_int_equal(s.procs, 0);                    /* the truth, for the monitor */
    assert_int_equal(s.alive.procs, 2);
    assert_int_equal(s.alive.rss_kb, 150 * 4);
    mset m;
    mset_init(&m);
    tree_metrics_fill(&m, &s, 100, NULL, 0);
    assert_int_equal(m.v[M_PROCS].u, 2);              /* what the event says */
    assert_int_equal(m.v[M_RSS].u, 150 * 4);
    assert_int_equal(m.v[M_THREADS].u, 2);
    mset_free(&m);
    proctree_free(t);
}

/* ---- a one-pass reader (the BPF sampler's place) ------------------------ */

typedef struct fake_reader {
    proc_snap procs[8];
    int n, fail, reads;
} fake_reader;

static int fake_read(void *ctx, const proc_snap **out)
{
    fake_reader *f = ctx;
    f->reads++;
    if (f->fail) return -1;
    *out = f->procs;
    return f->n;
}

static proc_snap snap(pid_t pid, pid_t ppid, uint64_t ut, uint64_t cut, uint64_t rchar)
{
    proc_snap s;
    memset(&s, 0, sizeof s);
    s.pid = pid;
    s.st.ppid = ppid;
    s.st.utime = ut;
    s.st.cutime = cut;
    s.st.starttime = 1000 + (uint64_t)pid;
    s.st.num_threads = 1;
    s.st.rss = 10;
    s.io.rchar = rchar;
    return s;
}

static void a_reader_replaces_discovery_and_files_with_the_same_rules(void **state)
{
    /* the fixture has only the root; the reader knows the whole tree */
    put_proc(100, &(fx){ .ppid = 1, .ut = 1 });
    fake_reader f = { .n = 2 };
    f.procs[0] = snap(100, 1, 10, 0, 1000);
    f.procs[1] = snap(101, 100, 20, 0, 300);
    f.procs[0].st.blkio_ticks = 3;                        /* the leader's blkio delay */
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    proctree_reader r = { .name = "fake", .walk = "fake-walk", .ctx = &f, .read = fake_read };
    proctree_set_reader(t, &r);
    assert_string_equal(proctree_sampler(t), "fake");
    assert_string_equal(proctree_discovery(t), "fake-walk");
    tree_sample s = sample(t);
    assert_int_equal(s.procs, 2);
    assert_int_equal(s.c.utime_us, 30 * TICK_US);        /* the reader's figures, not the file's */
    assert_int_equal(s.c.rchar, 1300);
    assert_true(s.iowait_valid);
    assert_int_equal(s.c.iowait_us, 3 * TICK_US);
    assert_true(proctree_contains(t, 101));
    /* 101 is reaped by 100: folded into its cutime, counted once */
    f.n = 1;
    f.procs[0] = snap(100, 1, 10, 20, 1300);
    s = sample(t);
    assert_int_equal(s.procs, 1);
    assert_int_equal(s.c.utime_us, 30 * TICK_US);
    assert_int_equal(s.c.rchar, 1300);
    assert_int_equal(s.total_procs, 2);
    proctree_free(t);
}

static void a_member_the_reader_misses_is_read_from_proc_and_a_failed_read_falls_back(void **state)
{
    put_proc(100, &(fx){ .ppid = 1, .ut = 10 });
    put_proc(101, &(fx){ .ppid = 1, .ut = 7 });          /* re-parented out of the root's ancestry */
    fake_reader f = { .n = 2 };
    f.procs[0] = snap(100, 1, 10, 0, 0);
    f.procs[1] = snap(101, 100, 5, 0, 0);
    proctree *t = proctree_new(root, PROCTREE_ATTACH, 100, 1.0);
    proctree_reader r = { .name = "fake", .walk = "fake-walk", .ctx = &f, .read = fake_read };
    proctree_set_reader(t, &r);
    tree_sample s = sample(t);
    assert_int_equal(s.c.utime_us, 15 * TICK_US);
    f.n = 1;                                             /* the reader no longer returns 101 */
    s = sample(t);
    assert_int_equal(s.procs, 2);                        /* still a member, read from /proc */
    assert_int_equal(s.c.utime_us, 17 * TICK_US);
    f.fail = 1;                                          /* the reader fails: all from /proc */
    s = sample(t);
    assert_int_equal(s.procs, 2);
    assert_int_equal(s.c.utime_us, 17 * TICK_US);
    assert_int_equal(proctree_reader_fallbacks(t), 1);
    proctree_free(t);
}

static void a_child_of_ours_gone_before_its_reaping_is_counted_once(void **state)
{
    /* run mode: the reader stops returning our child (a zombie has left its
     * cgroup) before jobscope reaps it; the reaping then carries it exactly
     * and does not count a new process */
    fake_reader f = { .n = 1 };
    f.procs[0] = snap(200, getpid(), 10, 0, 0);
    proctree *t = proctree_new(root, PROCTREE_RUN, 200, 1.0);
    proctree_reader r = { .name = "fake", .walk = "fake-walk", .ctx = &f, .read = fake_read };
    proctree_set_reader(t, &r);
    tree_sample s = sample(t);
    assert_int_equal(s.total_procs, 1);
    f.n = 0;
    s = sample(t);
    assert_int_equal(s.procs, 0);
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    ru.ru_utime.tv_sec = 0;
    ru.ru_utime.tv_usec = 100000;                       /* 10 ticks */
    proctree_reaped(t, 200, &ru, NULL);
    s = sample(t);
    assert_int_equal(s.total_procs, 1);
    assert_int_equal(s.c.utime_us, 100000);
    proctree_free(t);
}

int main(void)
{
    if (sysconf(_SC_CLK_TCK) != 100) {
        fprintf(stderr, "test_proctree: CLK_TCK is not 100; expectations assume it\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_tree_is_the_root_and_its_descendants_only, setup, teardown),
        cmocka_unit_test_setup_teardown(a_child_reaped_by_a_live_parent_is_counted_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_member_that_leaves_without_being_folded_is_carried, setup, teardown),
        cmocka_unit_test_setup_teardown(counters_never_decrease, setup, teardown),
        cmocka_unit_test_setup_teardown(a_shifting_cpu_split_keeps_the_total_true, setup, teardown),
        cmocka_unit_test_setup_teardown(what_jobscope_reaped_is_carried_exactly_once, setup, teardown),
        cmocka_unit_test_setup_teardown(the_proc_root_is_where_delay_accounting_is_read_too, setup, teardown),
        cmocka_unit_test_setup_teardown(discovery_walks_only_when_a_task_was_created_or_a_member_left, setup, teardown),
        cmocka_unit_test_setup_teardown(a_sample_without_a_live_process_reports_the_last_live_gauges, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reader_replaces_discovery_and_files_with_the_same_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(a_member_the_reader_misses_is_read_from_proc_and_a_failed_read_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(a_child_of_ours_gone_before_its_reaping_is_counted_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
