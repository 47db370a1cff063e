/* test_cgroup.c — the cgroup readers on the fixture trees of both layouts
 * (tests/fixtures/cgroup/{v1,v2}), the mountinfo and /proc/PID/cgroup
 * parsers, and a read of the machine's own cgroup. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "cgroup/cgroup.h"

static char fx[1024];

static const char *fixture(const char *rel)
{
    static char buf[4][1200];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", fx, rel);
    return b;
}

static void test_v2_fixture(void **state)
{
    (void)state;
    cgroup *cg = cgroup_v2_open(fixture("v2/job"));
    assert_non_null(cg);
    assert_int_equal(cg->ops->version, 2);
    cg_stats st;
    assert_int_equal(cg->ops->read(cg, &st), 0);
    assert_true(st.have & CG_HAVE_CPU);
    assert_true(st.have & CG_HAVE_CPU_SPLIT);
    assert_int_equal(st.cpu_usage_us, 3500000);
    assert_int_equal(st.cpu_user_us, 3000000);
    assert_int_equal(st.cpu_system_us, 500000);
    assert_int_equal(st.cpu_nr_throttled, 4);
    assert_int_equal(st.cpu_throttled_us, 120000);
    assert_int_equal(st.mem_current, 209715200);
    assert_true(st.have & CG_HAVE_MEM_PEAK);
    assert_int_equal(st.mem_peak, 314572800);
    assert_int_equal(st.mem_max, 536870912);
    assert_int_equal(st.mem_anon, 125829120);
    assert_int_equal(st.mem_file, 73400320);
    assert_int_equal(st.mem_shmem, 2097152);
    assert_int_equal(st.mem_kernel, 8388608);
    assert_true(st.have & CG_HAVE_OOM);
    assert_int_equal(st.mem_oom, 1);
    assert_int_equal(st.mem_oom_kill, 1);
    assert_int_equal(st.mem_max_events, 11);
    assert_int_equal(st.pids_current, 6);
    assert_int_equal(st.pids_peak, 15);
    assert_true(st.pids_max == CG_NOLIMIT);
    assert_int_equal(st.pids_max_events, 0);
    assert_true(st.have & CG_HAVE_IO);
    assert_int_equal(st.nio, 2);
    assert_int_equal(st.io[0].major, 254);
    assert_int_equal(st.io[0].minor, 0);
    assert_int_equal(st.io[0].wbytes, 8192000);
    assert_int_equal(st.io[1].major, 253);
    assert_int_equal(st.io_rbytes, 4097000);
    assert_int_equal(st.io_wbytes, 8194000);
    assert_int_equal(st.io_rios, 101);
    assert_int_equal(st.io_wios, 202);
    assert_true(st.have & CG_HAVE_PSI);
    assert_true(st.psi[CG_PSI_MEM_SOME].valid);
    assert_true(st.psi[CG_PSI_MEM_SOME].avg10 > 12.24 && st.psi[CG_PSI_MEM_SOME].avg10 < 12.26);
    assert_int_equal(st.psi[CG_PSI_MEM_FULL].total_us, 6543210);
    assert_int_equal(st.psi[CG_PSI_CPU_SOME].total_us, 1234567);
    assert_int_equal(st.psi[CG_PSI_IO_FULL].total_us, 111);
    assert_int_equal(cg->ops->nprocs(cg), 1);
    cg->ops->free(cg);
}

static void test_v2_missing_files(void **state)
{
    (void)state;
    /* a directory with no controller files: nothing to read */
    cgroup *cg = cgroup_v2_open(fixture("v1/pids"));
    cg_stats st;
    assert_int_equal(cg->ops->read(cg, &st), -1);
    assert_int_equal(st.have, 0);
    cg->ops->free(cg);
}

static void test_v1_fixture(void **state)
{
    (void)state;
    const char *dirs[CG_V1_N] = {
        [CG_V1_MEMORY] = fixture("v1/memory/job"), [CG_V1_CPUACCT] = fixture("v1/cpuacct/job"),
        [CG_V1_BLKIO] = fixture("v1/blkio/job"), [CG_V1_PIDS] = fixture("v1/pids/job"),
    };
    cgroup *cg = cgroup_v1_open(dirs, "/job");
    assert_non_null(cg);
    assert_int_equal(cg->ops->version, 1);
    assert_string_equal(cg->path, "/job");
    cg_stats st;
    assert_int_equal(cg->ops->read(cg, &st), 0);
    assert_int_equal(st.cpu_usage_us, 2500000);
    assert_true(st.have & CG_HAVE_CPU_SPLIT);
    assert_int_equal(st.cpu_user_us, 2000000);     /* usage_user, ns -> us */
    assert_int_equal(st.cpu_system_us, 500000);
    assert_int_equal(st.mem_current, 104857600);
    assert_int_equal(st.mem_peak, 157286400);
    assert_int_equal(st.mem_max, 268435456);
    assert_int_equal(st.mem_anon, 39845888);
    assert_int_equal(st.mem_file, 62914560);
    assert_int_equal(st.mem_shmem, 1048576);
    assert_int_equal(st.mem_kernel, 2097152);
    assert_false(st.have & CG_HAVE_OOM);          /* v1 has no oom count */
    assert_true(st.have & CG_HAVE_OOM_KILL);
    assert_int_equal(st.mem_oom_kill, 2);
    assert_int_equal(st.mem_max_events, 3);
    assert_int_equal(st.pids_current, 5);
    assert_int_equal(st.pids_peak, 12);
    assert_int_equal(st.pids_max, 64);
    assert_int_equal(st.pids_max_events, 7);
    assert_int_equal(st.nio, 2);
    assert_int_equal(st.io_rbytes, 4097000);
    assert_int_equal(st.io_wbytes, 8194000);
    assert_int_equal(st.io_rios, 101);
    assert_int_equal(st.io_wios, 202);
    assert_int_equal(st.io[0].rios, 100);
    assert_false(st.have & CG_HAVE_PSI);
    assert_int_equal(cg->ops->nprocs(cg), 1);
    cg->ops->free(cg);
}

static void test_v1_partial(void **state)
{
    (void)state;
    /* only cpuacct mounted; cpuacct.stat ticks when usage_user is missing */
    char tmp[] = "/tmp/jscg.XXXXXX";
    assert_non_null(mkdtemp(tmp));
    FILE *f;
    char p[256];
    snprintf(p, sizeof p, "%s/cpuacct.usage", tmp);
    f = fopen(p, "w"); fputs("1000000000\n", f); fclose(f);
    snprintf(p, sizeof p, "%s/cpuacct.stat", tmp);
    f = fopen(p, "w"); fputs("user 30\nsystem 20\n", f); fclose(f);
    const char *dirs[CG_V1_N] = { [CG_V1_CPUACCT] = tmp };
    cgroup *cg = cgroup_v1_open(dirs, "/x");
    cg_stats st;
    assert_int_equal(cg->ops->read(cg, &st), 0);
    long hz = sysconf(_SC_CLK_TCK);
    assert_int_equal(st.cpu_usage_us, 1000000);
    assert_int_equal(st.cpu_user_us, 30 * 1000000 / hz);
    assert_int_equal(st.cpu_system_us, 20 * 1000000 / hz);
    assert_false(st.have & CG_HAVE_MEM);
    assert_true(st.mem_max == CG_NOLIMIT);
    cg->ops->free(cg);
    snprintf(p, sizeof p, "rm -rf %s", tmp);
    assert_int_equal(system(p), 0);
}

/* A copy of a fixture tree to change files in. */
static char *copy_fixture(const char *rel)
{
    static char tmpl[] = "/tmp/jobscope-cgtest.XXXXXX";
    char *d = strdup(tmpl);
    assert_non_null(mkdtemp(d));
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s/'", fixture(rel), d);
    assert_int_equal(system(cmd), 0);
    return d;
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void remove_tree(char *d)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

/* A fast read leaves unread what the first file of a pair says cannot have
 * moved: the CPU split while cpuacct.usage stands still, the I/O bytes
 * while the requests' count does, memory.stat (when asked) while the
 * usage does; the next change reads them again, and a full read always. */
static void v1_fast_reads_skip_only_what_cannot_have_moved(void **state)
{
    (void)state;
    char *t = copy_fixture("v1");
    char mem[2048], cpu[2048], blk[2048], pid[2048];
    snprintf(mem, sizeof mem, "%s/v1/memory/job", t);
    snprintf(cpu, sizeof cpu, "%s/v1/cpuacct/job", t);
    snprintf(blk, sizeof blk, "%s/v1/blkio/job", t);
    snprintf(pid, sizeof pid, "%s/v1/pids/job", t);
    const char *dirs[CG_V1_N] = {
        [CG_V1_MEMORY] = mem, [CG_V1_CPUACCT] = cpu, [CG_V1_BLKIO] = blk, [CG_V1_PIDS] = pid};
    cgroup *cg = cgroup_v1_open(dirs, "/job");
    assert_non_null(cg);
    cg_stats st;
    assert_int_equal(cg->ops->read(cg, &st), 0);
    /* files that could only move with their first one, moved alone */
    put(cpu, "cpuacct.usage_user", "9000000000\n");
    put(blk, "blkio.throttle.io_service_bytes_recursive", "254:0 Read 7\n254:0 Write 9\nTotal 16\n");
    put(mem, "memory.stat", "total_rss 1\ntotal_cache 2\ntotal_shmem 0\n");
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_MEM_STAT), 0);
    assert_true(st.have & CG_HAVE_CPU_SPLIT);
    assert_int_equal(st.cpu_user_us, 2000000);   /* as last read */
    assert_int_equal(st.io_rbytes, 4097000);
    assert_int_equal(st.nio, 2);
    assert_int_equal(st.io[1].wios, 2);
    assert_true(st.have & CG_HAVE_MEM_STAT);
    assert_int_equal(st.mem_anon, 39845888);
    /* memory.stat is read when not asked to skip it */
    assert_int_equal(cg->ops->read_fast(cg, &st, 0), 0);
    assert_int_equal(st.mem_anon, 1);
    put(mem, "memory.stat", "total_rss 3\ntotal_cache 4\ntotal_shmem 0\n");
    /* the first ones move: the others are read */
    put(cpu, "cpuacct.usage", "9500000000\n");
    put(blk, "blkio.throttle.io_serviced_recursive", "254:0 Read 1\n254:0 Write 1\nTotal 2\n");
    put(mem, "memory.usage_in_bytes", "4096\n");
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_MEM_STAT), 0);
    assert_int_equal(st.cpu_usage_us, 9500000);
    assert_int_equal(st.cpu_user_us, 9000000);
    assert_int_equal(st.nio, 1);
    assert_int_equal(st.io_rbytes, 7);
    assert_int_equal(st.io_wios, 1);
    assert_int_equal(st.mem_anon, 3);
    /* a full read reads everything */
    put(cpu, "cpuacct.usage_sys", "1000\n");
    assert_int_equal(cg->ops->read(cg, &st), 0);
    assert_int_equal(st.cpu_system_us, 1);
    cg->ops->free(cg);
    remove_tree(t);
}

static void v2_fast_reads_carry_memory_stat_only_while_the_usage_stands_still(void **state)
{
    (void)state;
    char *t = copy_fixture("v2");
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/v2/job", t);
    cgroup *cg = cgroup_v2_open(dir);
    cg_stats st;
    assert_int_equal(cg->ops->read(cg, &st), 0);
    uint64_t anon = st.mem_anon;
    put(dir, "memory.stat", "anon 1\nfile 2\nshmem 0\nkernel 5\n");
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_MEM_STAT), 0);
    assert_int_equal(st.mem_anon, anon);
    assert_true(st.have & CG_HAVE_MEM_STAT);
    assert_true(st.have & CG_HAVE_MEM_KERNEL);
    put(dir, "memory.current", "8192\n");
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_MEM_STAT), 0);
    assert_int_equal(st.mem_anon, 1);
    assert_int_equal(st.mem_kernel, 5);
    put(dir, "memory.stat", "anon 3\nfile 2\nshmem 0\nkernel 5\n");
    assert_int_equal(cg->ops->read_fast(cg, &st, 0), 0);
    assert_int_equal(st.mem_anon, 3);
    cg->ops->free(cg);
    remove_tree(t);
}

/* probe() reads the three figures that move whenever anything of the
 * cgroup runs, its memory moves or a task comes or goes (a task moved out
 * takes nothing of the CPU or memory counts with it); a read after a probe that found them where
 * they were (CG_SKIP_STILL) keeps every figure as last read, whatever the
 * other files say now (v1 counts I/O as the cgroup's own tasks submit
 * it); CG_STILL_LIMITS reads the limits, which can be set from outside;
 * after a probe that found them moved, a fast read takes the probed
 * values and reads the rest. */
static void v1_a_still_read_keeps_every_figure_but_the_limits(void **state)
{
    (void)state;
    char *t = copy_fixture("v1");
    char mem[2048], cpu[2048], blk[2048], pid[2048];
    snprintf(mem, sizeof mem, "%s/v1/memory/job", t);
    snprintf(cpu, sizeof cpu, "%s/v1/cpuacct/job", t);
    snprintf(blk, sizeof blk, "%s/v1/blkio/job", t);
    snprintf(pid, sizeof pid, "%s/v1/pids/job", t);
    const char *dirs[CG_V1_N] = {
        [CG_V1_MEMORY] = mem, [CG_V1_CPUACCT] = cpu, [CG_V1_BLKIO] = blk, [CG_V1_PIDS] = pid};
    cgroup *cg = cgroup_v1_open(dirs, "/job");
    assert_non_null(cg);
    cg_stats st, before;
    assert_int_equal(cg->ops->read(cg, &st), 0);
    before = st;
    cg_probe p;
    assert_int_equal(cg->ops->probe(cg, &p), 0);
    assert_int_equal(p.cpu, 2500000000u); /* ns */
    assert_int_equal(p.mem, 104857600u);
    assert_int_equal(p.tasks, 5);
    /* what only the cgroup's tasks move, moved behind its back */
    put(mem, "memory.stat", "total_rss 1\ntotal_cache 2\ntotal_shmem 0\n");
    put(pid, "pids.current", "9\n");
    put(blk, "blkio.throttle.io_serviced_recursive", "254:0 Read 1\n254:0 Write 1\nTotal 2\n");
    put(mem, "memory.limit_in_bytes", "1048576\n");
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_STILL), 0);
    assert_memory_equal(&st, &before, sizeof st);
    /* the limits, on their schedule */
    assert_int_equal(cg->ops->probe(cg, &p), 0);
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_STILL | CG_STILL_LIMITS), 0);
    assert_int_equal(st.mem_max, 1048576);
    assert_int_equal(st.mem_anon, before.mem_anon);
    assert_int_equal(st.pids_current, before.pids_current);
    /* without a probe first, CG_SKIP_STILL means nothing: all is read */
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_STILL), 0);
    assert_int_equal(st.pids_current, 9);
    assert_int_equal(st.mem_anon, 1);
    /* a probe that found the job ran: the fast read takes its figures */
    put(cpu, "cpuacct.usage", "2600000000\n");
    put(pid, "pids.current", "4\n"); /* a task moved out: no CPU, no memory */
    assert_int_equal(cg->ops->probe(cg, &p), 0);
    assert_int_equal(p.cpu, 2600000000u);
    assert_int_equal(p.tasks, 4);
    put(cpu, "cpuacct.usage", "2700000000\n"); /* after the probe: read next time */
    assert_int_equal(cg->ops->read_fast(cg, &st, 0), 0);
    assert_int_equal(st.cpu_usage_us, 2600000);
    assert_int_equal(st.pids_current, 4);
    assert_int_equal(cg->ops->read_fast(cg, &st, 0), 0);
    assert_int_equal(st.cpu_usage_us, 2700000);
    cg->ops->free(cg);
    remove_tree(t);
}

/* v2: a still read keeps memory.stat and pids.current but reads io.stat
 * (the kernel's writeback of the cgroup's dirty pages is charged to it
 * while none of its tasks runs); CG_STILL_LIMITS is a whole read (PSI's
 * averages move while nothing runs). */
static void v2_a_still_read_still_reads_the_writeback(void **state)
{
    (void)state;
    char *t = copy_fixture("v2");
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/v2/job", t);
    cgroup *cg = cgroup_v2_open(dir);
    cg_stats st;
    assert_int_equal(cg->ops->read(cg, &st), 0);
    uint64_t anon = st.mem_anon;
    cg_probe p;
    assert_int_equal(cg->ops->probe(cg, &p), 0);
    assert_int_equal(p.cpu, 3500000); /* µs */
    assert_int_equal(p.mem, 209715200u);
    put(dir, "memory.stat", "anon 1\nfile 2\nshmem 0\nkernel 5\n");
    put(dir, "pids.current", "9\n");
    put(dir, "io.stat", "254:0 rbytes=1 wbytes=999 rios=1 wios=9 dbytes=0 dios=0\n");
    put(dir, "memory.max", "1048576\n");
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_STILL), 0);
    assert_int_equal(st.mem_anon, anon);
    assert_int_not_equal(st.pids_current, 9);
    assert_int_equal(st.io_wbytes, 999);
    assert_int_not_equal(st.mem_max, 1048576);
    assert_int_equal(cg->ops->probe(cg, &p), 0);
    assert_int_equal(cg->ops->read_fast(cg, &st, CG_SKIP_STILL | CG_STILL_LIMITS), 0);
    assert_int_equal(st.mem_max, 1048576);
    assert_int_equal(st.mem_anon, 1);
    assert_int_equal(st.pids_current, 9);
    cg->ops->free(cg);
    remove_tree(t);
}

static void test_mounts_hybrid(void **state)
{
    (void)state;
    cg_mounts m;
    assert_int_equal(cgroup_mounts_parse(fixture("mountinfo.hybrid"), &m), 0);
    assert_string_equal(m.v2, "/sys/fs/cgroup/unified");
    assert_string_equal(m.v1[CG_V1_MEMORY], "/sys/fs/cgroup/memory");
    assert_string_equal(m.v1[CG_V1_CPUACCT], "/sys/fs/cgroup/cpu,cpuacct");
    assert_string_equal(m.v1[CG_V1_BLKIO], "/sys/fs/cgroup/blkio");
    assert_string_equal(m.v1[CG_V1_PIDS], "/sys/fs/cgroup/pids");
    /* "cpuset" must not be taken for "cpu..." nor "cpu" for "cpuacct" */
    m.v2_controllers = 0;
    assert_int_equal(cgroup_layout_version(&m), 1);
    cgroup_mounts_free(&m);

    cg_procpath p;
    assert_int_equal(cgroup_procpath_parse(fixture("cgroup.hybrid"), &p), 0);
    assert_string_equal(p.v2, "/");
    assert_string_equal(p.v1[CG_V1_MEMORY], "/slurm/job_7/step_0");
    assert_string_equal(p.v1[CG_V1_CPUACCT], "/slurm/job_7");
    assert_string_equal(p.v1[CG_V1_PIDS], "/slurm/job_7");
    cgroup_procpath_free(&p);
}

static void test_mounts_v2(void **state)
{
    (void)state;
    cg_mounts m;
    assert_int_equal(cgroup_mounts_parse(fixture("mountinfo.v2"), &m), 0);
    assert_string_equal(m.v2, "/sys/fs/cgroup");
    for (int i = 0; i < CG_V1_N; i++)
        assert_null(m.v1[i]);
    m.v2_controllers = 1;      /* as the real root's cgroup.controllers would say */
    assert_int_equal(cgroup_layout_version(&m), 2);
    m.v2_controllers = 0;
    assert_int_equal(cgroup_layout_version(&m), 0);
    cgroup_mounts_free(&m);
    cg_procpath p;
    assert_int_equal(cgroup_procpath_parse(fixture("cgroup.v2"), &p), 0);
    assert_string_equal(p.v2, "/system.slice/condor.service/job_42");
    assert_null(p.v1[CG_V1_MEMORY]);
    cgroup_procpath_free(&p);
}

static void test_helpers(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(cg_keyval("anon 5\nanon_thp 7\nfile 9\n", "anon_thp", &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(cg_keyval("anon_thp 7\nanon 5\n", "anon", &v), 0);
    assert_int_equal(v, 5);
    assert_int_equal(cg_keyval("anon 5\n", "file", &v), -1);
    assert_int_equal(cg_keyval("max max\n", "max", &v), 0);
    assert_true(v == CG_NOLIMIT);
    /* a number: the largest there is; one past it refused, not wrapped */
    assert_int_equal(cg_keyval("usage_usec 18446744073709551615\n", "usage_usec", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(cg_keyval("usage_usec 18446744073709551616\n", "usage_usec", &v), -1);
    assert_int_equal(cg_keyval("usage_usec 0123\n", "usage_usec", &v), 0);
    assert_true(v == 123);
    assert_int_equal(cg_keyval("usage_usec -1\n", "usage_usec", &v), -1);
    cg_psi s, f;
    assert_int_equal(cg_parse_psi("some avg10=0.10 avg60=0.20 avg300=0.30 total=42\n", &s, &f), 0);
    assert_true(s.valid && !f.valid);
    assert_int_equal(s.total_us, 42);
    assert_int_equal(cg_parse_psi("garbage\n", &s, &f), -1);
}

/* The machine's own cgroup, whatever its layout: the figures must be there
 * and plausible (skipped where no cgroup fs is mounted). */
static void test_real_self(void **state)
{
    (void)state;
    cgroup *cg = cgroup_of_pid(0);
    if (!cg) {
        print_message("no cgroup fs here: skipped\n");
        skip();
    }
    cg_stats st;
    int rc = cg->ops->read(cg, &st);
    print_message("own cgroup v%d %s: have=%#x mem=%llu cpu=%llu us\n", cg->ops->version, cg->path,
                  st.have, (unsigned long long)st.mem_current, (unsigned long long)st.cpu_usage_us);
    assert_int_equal(rc, 0);
    if (st.have & CG_HAVE_CPU)
        assert_true(st.cpu_usage_us > 0);
    assert_true(cg->ops->nprocs(cg) >= 1 || cg->ops->nprocs(cg) == -1);
    cg->ops->free(cg);
}

int main(void)
{
    const char *root = getenv("ROOT");
    snprintf(fx, sizeof fx, "%s/tests/fixtures/cgroup", root ? root : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2_fixture),
        cmocka_unit_test(test_v2_missing_files),
        cmocka_unit_test(test_v1_fixture),
        cmocka_unit_test(test_v1_partial),
        cmocka_unit_test(v1_fast_reads_skip_only_what_cannot_have_moved),
        cmocka_unit_test(v2_fast_reads_carry_memory_stat_only_while_the_usage_stands_still),
        cmocka_unit_test(v1_a_still_read_keeps_every_figure_but_the_limits),
        cmocka_unit_test(v2_a_still_read_still_reads_the_writeback),
        cmocka_unit_test(test_mounts_hybrid),
        cmocka_unit_test(test_mounts_v2),
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_real_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
