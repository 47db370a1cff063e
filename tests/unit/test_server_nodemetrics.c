/* test_server_nodemetrics.c — the node collector of `jobscope serve`
 * (src/server/nodemetrics.c) against a scripted /proc ($JOBSCOPE_PROC_ROOT)
 * and the fake NVML library (tests/fake_nvml): Dragon's metric names, tags
 * and values computed by hand from the files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "server/nodemetrics.h"

static char root[256];

static void put_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void make_proc(void)
{
    char path[512];
    snprintf(root, sizeof root, "/tmp/js-nodemetrics.XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof path, "%s/proc", root);
    mkdir(path, 0700);
    for (int pid = 1; pid <= 3; pid++) {        /* three processes, all ours */
        snprintf(path, sizeof path, "%s/proc/%d", root, pid * 100);
        mkdir(path, 0700);
    }
    snprintf(path, sizeof path, "%s/proc/self", root);   /* not a pid */
    mkdir(path, 0700);
    put_file("proc/loadavg", "1.50 0.80 0.40 2/300 12345\n");
    put_file("proc/meminfo", "MemTotal:        1000 kB\nMemFree:          100 kB\nMemAvailable:     250 kB\n");
    put_file("proc/stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\n");
    setenv("JOBSCOPE_PROC_ROOT", root, 1);
}

static void drop_proc(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static const store_point *find(const store_point *p, int n, const char *metric, const char *gpu)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(p[i].metric, metric)) continue;
        const char *g = NULL;
        for (int t = 0; t < p[i].ntags; t++)
            if (!strcmp(p[i].tags[t].key, "gpu")) g = p[i].tags[t].value;
        if ((!gpu && !g) || (gpu && g && !strcmp(gpu, g))) return &p[i];
    }
    return NULL;
}

static const char *tag(const store_point *p, const char *key)
{
    for (int t = 0; t < p->ntags; t++)
        if (!strcmp(p->tags[t].key, key)) return p->tags[t].value;
    return NULL;
}

static void test_node_metrics_from_proc_without_gpu(void **state)
{
    (void)state;
    make_proc();
    node_config c = { .interval_s = 0, .host = "n1", .no_gpu = 1 };
    char err[256];
    node_collector *nc = node_collector_start(&c, NULL, NULL, err, sizeof err);
    assert_non_null(nc);
    put_file("proc/stat", "cpu  200 0 200 1000 0 0 0 0 0 0\n");   /* busy +200 of +400 */
    store_point pts[64];
    int n = node_collector_sample(nc, pts, 64);
    assert_int_equal(n, 4);
    const store_point *p = find(pts, n, "load_average", NULL);
    assert_non_null(p);
    assert_true(p->value == 1.5);
    assert_string_equal(tag(p, "host"), "n1");
    assert_int_equal(p->ntags, 1);
    assert_non_null(p = find(pts, n, "used_RAM", NULL));
    assert_true(p->value == 75.0);
    assert_non_null(p = find(pts, n, "cpu_percent", NULL));
    assert_true(p->value == 50.0);
    assert_non_null(p = find(pts, n, "num_running_processes", NULL));
    assert_true(p->value == 3.0);
    assert_true(p->ts_ms > 1700000000000LL);
    /* no change in /proc/stat: no cpu_percent (no division by zero) */
    n = node_collector_sample(nc, pts, 64);
    assert_null(find(pts, n, "cpu_percent", NULL));
    assert_int_equal(n, 3);
    node_collector_stop(nc);
    drop_proc();
}

static void test_node_metrics_per_gpu_from_nvml(void **state)
{
    (void)state;
    make_proc();
    char cwd[1024], lib[1400], script[400];
    assert_non_null(getcwd(cwd, sizeof cwd));
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    snprintf(lib, sizeof lib, "%s/%s/fake-nvml/libnvidia-ml.so.1", cwd, build);
    if (access(lib, R_OK) != 0) {
        fprintf(stderr, "missing %s: run 'make fake-nvml'\n", lib);
        fail();
    }
    snprintf(script, sizeof script, "%s/nvml.script", root);
    put_file("nvml.script", "devices 2\nutil 0 40 10\nutil 1 70 20\nproc 0 1 1073741824 50 5 0 0\n");
    setenv("JOBSCOPE_NVML_LIBRARY", lib, 1);
    setenv("FAKE_NVML_SCRIPT", script, 1);
    setenv("JOBSCOPE_SYSFS_ROOT", root, 1);          /* no DRM device */
    unsetenv("CUDA_VISIBLE_DEVICES");
    node_config c = { .interval_s = 0, .host = "gpunode" };
    char err[256];
    node_collector *nc = node_collector_start(&c, NULL, NULL, err, sizeof err);
    assert_non_null(nc);
    assert_int_equal(node_collector_gpus(nc), 2);
    store_point pts[64];
    int n = node_collector_sample(nc, pts, 64);
    const store_point *p;
    assert_non_null(p = find(pts, n, "DeviceUtilization", "0"));
    assert_true(p->value == 40);
    assert_string_equal(tag(p, "host"), "gpunode");
    assert_int_equal(p->ntags, 2);
    assert_non_null(p = find(pts, n, "DeviceUtilization", "1"));
    assert_true(p->value == 70);
    /* (512 MiB driver + 1 GiB process) / 80 GiB = 1.875 % -> 1.88 */
    assert_non_null(p = find(pts, n, "DeviceMemoryUtilization", "0"));
    assert_true(fabs(p->value - 1.88) < 1e-9);
    assert_non_null(p = find(pts, n, "DeviceMemoryUtilization", "1"));
    assert_true(fabs(p->value - 0.63) < 1e-9);     /* 512 MiB / 80 GiB = 0.625 % */
    assert_non_null(p = find(pts, n, "DevicePowerUsage", "0"));
    assert_true(p->value == 100.0);                 /* mW -> W */
    assert_non_null(p = find(pts, n, "DevicePowerUsage", "1"));
    assert_true(p->value == 101.0);
    node_collector_stop(nc);
    drop_proc();
}

struct sink_count { int calls; int points; int gpu_points; };
static int count_ingest(void *arg, const store_point *pts, size_t n)
{
    struct sink_count *s = arg;
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_RELEASE);
    s->points += (int)n;
    for (size_t i = 0; i < n; i++)
        if (!strncmp(pts[i].metric, "Device", 6)) s->gpu_points++;
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void test_node_metrics_thread_ingests_every_interval(void **state)
{
    (void)state;
    make_proc();
    node_config c = { .interval_s = 0.05, .host = "n1", .no_gpu = 1 };
    struct sink_count sc = {0};
    char err[256];
    double t0 = now_s();
    node_collector *nc = node_collector_start(&c, count_ingest, &sc, err, sizeof err);
    assert_non_null(nc);
    /* until 4 samples arrived (10 s at most: valgrind is slow) */
    while (__atomic_load_n(&sc.calls, __ATOMIC_ACQUIRE) < 4 && now_s() - t0 < 10) usleep(10000);
    node_collector_stop(nc);
    double elapsed = now_s() - t0;
    drop_proc();
    assert_true(sc.calls >= 4);
    /* never faster than the interval, never a burst */
    assert_true(elapsed >= 4 * 0.05 - 0.005);
    assert_true(sc.calls <= elapsed / 0.05 + 1);
    assert_int_equal(sc.gpu_points, 0);
    assert_true(sc.points >= 3 * sc.calls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_metrics_from_proc_without_gpu),
        cmocka_unit_test(test_node_metrics_per_gpu_from_nvml),
        cmocka_unit_test(test_node_metrics_thread_ingests_every_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
