/* The job's allocation (src/proc/alloc.c): the batch system's figures
 * (Slurm, HTCondor, PBS) bounded by what the kernel enforces (cgroup quota,
 * cpuset, affinity, memory.max), the hints and the host's figures where
 * nothing else says, each with its source; cgroup limits are the smallest
 * on the path to the root; the start event's fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/alloc.h"

#define GIB (1024.0 * 1024 * 1024)

static alloc_info run(const char *const *env, int host, int affinity, int cpuset, double quota,
                      double memmax)
{
    alloc_input in = {.env = env,
                      .host_cpus = host,
                      .affinity_cpus = affinity,
                      .cpuset_cpus = cpuset,
                      .cpu_quota = quota,
                      .cgroup_mem_max = memmax,
                      .host_mem = 64 * GIB};
    alloc_info a;
    alloc_compute(&in, &a);
    return a;
}

static void without_a_batch_system_the_host_is_the_allocation(void **state)
{
    const char *env[] = {"HOME=/root", NULL};
    alloc_info a = run(env, 8, 8, 0, NAN, NAN);
    assert_true(a.cpus == 8);
    assert_string_equal(a.cpus_from, "host");
    assert_true(isnan(a.mem) && !a.mem_from[0]);
    assert_true(isnan(a.gpus) && !a.gpus_from[0]);
}

static void the_kernels_bound_applies_when_below_the_host(void **state)
{
    const char *env[] = {NULL};
    alloc_info a = run(env, 8, 8, 4, NAN, NAN);
    assert_true(a.cpus == 4);
    assert_string_equal(a.cpus_from, "cpuset");
    a = run(env, 8, 2, 4, NAN, NAN);
    assert_true(a.cpus == 2);
    assert_string_equal(a.cpus_from, "affinity");
    a = run(env, 8, 8, 0, 1.5, 3 * GIB);
    assert_true(a.cpus == 1.5);
    assert_string_equal(a.cpus_from, "cgroup cpu.max");
    assert_true(a.mem == 3 * GIB);
    assert_string_equal(a.mem_from, "cgroup memory.max");
    /* a memory.max at or above the host's memory is no limit */
    a = run(env, 8, 8, 0, NAN, 128 * GIB);
    assert_true(isnan(a.mem));
}

static void omp_num_threads_is_a_hint_only_without_a_bound(void **state)
{
    const char *env[] = {"OMP_NUM_THREADS=3,2", NULL};
    alloc_info a = run(env, 8, 8, 0, NAN, NAN);
    assert_true(a.cpus == 3);
    assert_string_equal(a.cpus_from, "OMP_NUM_THREADS");
    a = run(env, 8, 4, 0, NAN, NAN); /* the cpuset says more than a hint */
    assert_true(a.cpus == 4);
    const char *big[] = {"OMP_NUM_THREADS=64", NULL}; /* more than the host: ignored */
    a = run(big, 8, 8, 0, NAN, NAN);
    assert_string_equal(a.cpus_from, "host");
}

static void slurm_tasks_get_cpus_per_task_and_the_batch_script_its_node(void **state)
{
    const char *task[] = {"SLURM_JOB_ID=77",          "SLURM_STEP_ID=0",
                          "SLURM_CPUS_PER_TASK=2",    "SLURM_CPUS_ON_NODE=8",
                          "SLURM_MEM_PER_CPU=1000",   "SLURM_GPUS_ON_NODE=1",
                          "CUDA_VISIBLE_DEVICES=0,1", NULL};
    alloc_info a = run(task, 16, 16, 8, NAN, NAN);
    assert_true(a.cpus == 2);
    assert_string_equal(a.cpus_from, "SLURM_CPUS_PER_TASK");
    assert_true(a.mem == 2 * 1000 * 1048576.0); /* per CPU x CPUs */
    /* more than the host has: Slurm's figure stands (the host's size is no bound) */
    a = run(task, 1, 1, 0, NAN, NAN);
    assert_true(a.cpus == 2);
    assert_string_equal(a.cpus_from, "SLURM_CPUS_PER_TASK");
    assert_string_equal(a.mem_from, "SLURM_MEM_PER_CPU");
    assert_true(a.gpus == 1);
    assert_string_equal(a.gpus_from, "SLURM_GPUS_ON_NODE");
    const char *batch[] = {"SLURM_JOB_ID=77", "SLURM_CPUS_PER_TASK=2", "SLURM_CPUS_ON_NODE=8",
                           "SLURM_MEM_PER_NODE=4096", NULL};
    a = run(batch, 16, 16, 8, NAN, 2 * GIB);
    assert_true(a.cpus == 8);
    assert_string_equal(a.cpus_from, "SLURM_CPUS_ON_NODE");
    /* the cgroup's memory.max is smaller than what Slurm says: it wins */
    assert_true(a.mem == 2 * GIB);
    assert_string_equal(a.mem_from, "cgroup memory.max");
    /* bounded by the affinity the task was bound to */
    a = run(batch, 16, 3, 0, NAN, NAN);
    assert_true(a.cpus == 3);
    assert_string_equal(a.cpus_from, "affinity");
}

static void slurm_job_cpus_per_node_is_read_for_this_node(void **state)
{
    const char *env[] = {"SLURM_JOBID=5", "SLURM_JOB_CPUS_PER_NODE=4(x2),6,2", "SLURM_NODEID=2",
                         NULL};
    alloc_info a = run(env, 32, 32, 0, NAN, NAN);
    assert_true(a.cpus == 6);
    assert_string_equal(a.cpus_from, "SLURM_JOB_CPUS_PER_NODE");
    const char *first[] = {"SLURM_JOBID=5", "SLURM_JOB_CPUS_PER_NODE=4(x2),6,2", NULL};
    a = run(first, 32, 32, 0, NAN, NAN);
    assert_true(a.cpus == 4);
}

static void htcondor_slot_ad_gives_cpus_memory_and_gpus(void **state)
{
    char dir[] = "/tmp/jobscope-alloc-XXXXXX", ad[300], env1[320], job[300], env2[320];
    assert_non_null(mkdtemp(dir));
    snprintf(ad, sizeof ad, "%s/.machine.ad", dir);
    snprintf(job, sizeof job, "%s/.job.ad", dir);
    FILE *f = fopen(ad, "w");
    fputs("Name = \"slot1_1@wn\"\nCpus = 3\nMemory = 2048\nGPUs = 1\n", f);
    fclose(f);
    f = fopen(job, "w");
    fputs("ClusterId = 12\nRequestCpus = ifThenElse(x, 1, 2)\nRequestMemory = 512\n", f);
    fclose(f);
    snprintf(env1, sizeof env1, "_CONDOR_MACHINE_AD=%s", ad);
    snprintf(env2, sizeof env2, "_CONDOR_JOB_AD=%s", job);
    const char *env[] = {env1, env2, "_CONDOR_AssignedGPUs=CUDA0", NULL};
    alloc_info a = run(env, 16, 16, 0, NAN, NAN);
    assert_true(a.cpus == 3);
    assert_string_equal(a.cpus_from, "HTCondor slot ad Cpus");
    assert_true(a.mem == 2048 * 1048576.0);
    assert_string_equal(a.mem_from, "HTCondor slot ad Memory");
    assert_true(a.gpus == 1);
    assert_string_equal(a.gpus_from, "_CONDOR_AssignedGPUs");
    /* the job ad alone: an expression is no figure, a number is */
    const char *jobonly[] = {env2, NULL};
    a = run(jobonly, 16, 16, 0, NAN, NAN);
    assert_string_equal(a.cpus_from, "host");
    assert_true(a.mem == 512 * 1048576.0);
    assert_string_equal(a.mem_from, "HTCondor job ad RequestMemory");
    unlink(ad);
    unlink(job);
    rmdir(dir);
}

static void visible_devices_count_gpus_and_none_means_zero(void **state)
{
    const char *e1[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    assert_true(run(e1, 4, 4, 0, NAN, NAN).gpus == 0);
    const char *e2[] = {"CUDA_VISIBLE_DEVICES=NoDevFiles", NULL};
    assert_true(run(e2, 4, 4, 0, NAN, NAN).gpus == 0);
    const char *e3[] = {"ROCR_VISIBLE_DEVICES=GPU-aa,GPU-bb,GPU-cc", NULL};
    alloc_info a = run(e3, 4, 4, 0, NAN, NAN);
    assert_true(a.gpus == 3);
    assert_string_equal(a.gpus_from, "ROCR_VISIBLE_DEVICES");
}

static void cpu_lists_count_ranges_and_reject_garbage(void **state)
{
    assert_int_equal(alloc_cpulist_count("0-3,8,10-11\n"), 7);
    assert_int_equal(alloc_cpulist_count("5"), 1);
    assert_int_equal(alloc_cpulist_count(""), 0);
    assert_int_equal(alloc_cpulist_count("3-1"), 0);
    assert_int_equal(alloc_cpulist_count("a-b"), 0);
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void cgroup_limits_are_the_smallest_on_the_path_to_the_root(void **state)
{
    char top[] = "/tmp/jobscope-cg-XXXXXX", mid[300], leaf[320];
    assert_non_null(mkdtemp(top));
    snprintf(mid, sizeof mid, "%s/job_7", top);
    snprintf(leaf, sizeof leaf, "%s/step_0", mid);
    mkdir(mid, 0755);
    mkdir(leaf, 0755);
    put(top, "cpu.max", "max 100000\n");
    put(top, "memory.max", "1073741824\n");
    put(mid, "cpu.max", "200000 100000\n");
    put(mid, "memory.max", "max\n");
    put(leaf, "cpu.max", "300000 100000\n");
    put(leaf, "cpuset.cpus.effective", "0-2,5\n");
    double q, m;
    int cs;
    alloc_cgroup_v2(leaf, top, &q, &m, &cs);
    assert_true(q == 2.0);
    assert_true(m == 1073741824.0);
    assert_int_equal(cs, 4);
    /* v1: cfs quota and memory.limit_in_bytes, "unlimited" is a huge number */
    put(leaf, "cpu.cfs_quota_us", "150000\n");
    put(leaf, "cpu.cfs_period_us", "100000\n");
    put(mid, "cpu.cfs_quota_us", "-1\n");
    put(mid, "cpu.cfs_period_us", "100000\n");
    put(leaf, "memory.limit_in_bytes", "9223372036854771712\n");
    put(mid, "memory.limit_in_bytes", "536870912\n");
    alloc_cgroup_v1(leaf, top, leaf, top, &q, &m);
    assert_true(q == 1.5);
    assert_true(m == 536870912.0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    assert_int_equal(system(cmd), 0);
}

static void the_start_event_gets_each_figure_and_its_source(void **state)
{
    alloc_info a = {.cpus = 1.5, .mem = 2 * GIB, .gpus = NAN};
    strcpy(a.cpus_from, "cgroup cpu.max");
    strcpy(a.mem_from, "SLURM_MEM_PER_NODE");
    mset e;
    mset_init(&e);
    mset_clear(&e, "jobscope.start", 0);
    alloc_add(&e, &a);
    jbuf b;
    jbuf_init(&b, 256);
    jw_obj_open(&b, NULL);
    mset_write_json(&b, &e);
    jw_obj_close(&b);
    jbuf_putc(&b, 0);
    mset_free(&e);
    assert_string_equal(b.p, "{\"alloc_cpus\":1.50,\"alloc_cpus_from\":\"cgroup cpu.max\","
                             "\"alloc_mem\":2147483648,\"alloc_mem_from\":\"SLURM_MEM_PER_NODE\","
                             "\"alloc_gpus\":null,\"alloc_gpus_from\":null}");
    jbuf_free(&b);
}

static void detection_on_this_host_names_a_source(void **state)
{
    alloc_info a;
    alloc_detect(0, &a);
    assert_true(a.cpus > 0);
    assert_true(a.cpus_from[0] != 0);
    alloc_info b;
    alloc_detect(getpid(), &b); /* through /proc/PID/environ */
    assert_true(b.cpus == a.cpus);
    assert_string_equal(b.cpus_from, a.cpus_from);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(without_a_batch_system_the_host_is_the_allocation),
        cmocka_unit_test(the_kernels_bound_applies_when_below_the_host),
        cmocka_unit_test(omp_num_threads_is_a_hint_only_without_a_bound),
        cmocka_unit_test(slurm_tasks_get_cpus_per_task_and_the_batch_script_its_node),
        cmocka_unit_test(slurm_job_cpus_per_node_is_read_for_this_node),
        cmocka_unit_test(htcondor_slot_ad_gives_cpus_memory_and_gpus),
        cmocka_unit_test(visible_devices_count_gpus_and_none_means_zero),
        cmocka_unit_test(cpu_lists_count_ranges_and_reject_garbage),
        cmocka_unit_test(cgroup_limits_are_the_smallest_on_the_path_to_the_root),
        cmocka_unit_test(the_start_event_gets_each_figure_and_its_source),
        cmocka_unit_test(detection_on_this_host_names_a_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
