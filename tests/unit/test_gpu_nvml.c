/* test_gpu_nvml.c — the NVML backend (src/gpu/nvml.c) against the scripted
 * fake library build/fake-nvml/libnvidia-ml.so.1 (tests/fake_nvml): device
 * counts, visible-device selection, unsupported calls, the job filter,
 * per-process samples, broken libraries. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu/gpu.h"

static char dir[64], script[128], logpath[128], lib[512];

static void write_script(const char *text)
{
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    unlink(logpath);
}

static int count_calls(const char *fn, int dev)
{
    FILE *f = fopen(logpath, "r");
    if (!f) return 0;
    char line[160], want[120];
    snprintf(want, sizeof want, "%s %d\n", fn, dev);
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (!strcmp(line, want)) n++;
    fclose(f);
    return n;
}

static pid_t job[8];
static int njob;
static int fake_contains(void *arg, pid_t pid)
{
    for (int i = 0; i < njob; i++)
        if (job[i] == pid) return 1;
    return 0;
}
static int fake_pids(void *arg, pid_t *out, int max)
{
    int n = njob < max ? njob : max;
    memcpy(out, job, (size_t)n * sizeof *out);
    return n;
}
static const gpu_job the_job = { fake_contains, fake_pids, NULL };

static gpu_config cfg(void)
{
    gpu_config c;
    memset(&c, 0, sizeof c);
    c.nvml_library = lib;
    c.sysfs_root = c.proc_root = "";
    return c;
}

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/jobscope-nvml.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(script, sizeof script, "%s/script", dir);
    snprintf(logpath, sizeof logpath, "%s/log", dir);
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    char cwd[256];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(lib, sizeof lib, "%s/%s/fake-nvml/libnvidia-ml.so.1", cwd, build);
    if (access(lib, R_OK)) {
        fprintf(stderr, "missing %s: run 'make fake-nvml'\n", lib);
        return -1;
    }
    setenv("FAKE_NVML_SCRIPT", script, 1);
    setenv("FAKE_NVML_LOG", logpath, 1);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_zero_devices(void **state)
{
    write_script("devices 0\n");
    gpu_config c = cfg();
    char err[256] = "";
    gpu_backend *b = gpu_nvml_open(&c, err, sizeof err);
    assert_null(b);
    assert_non_null(strstr(err, "no NVIDIA GPU"));
}

static void test_one_device_env(void **state)
{
    write_script("devices 1\nname 0 NVIDIA H100 80GB HBM3\ndriver 555.42.02\ncuda 12050\n");
    gpu_config c = cfg();
    char err[256] = "";
    gpu_backend *b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 1);
    assert_string_equal(b->driver_version, "555.42.02");
    assert_true(b->cuda_version > 12.49 && b->cuda_version < 12.51);
    gpu_dev_info d;
    assert_int_equal(b->info(b, 0, &d), 0);
    assert_string_equal(d.name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(d.vendor, "nvidia");
    assert_string_equal(d.uuid, "GPU-fa4e0000-1111-2222-3333-000000000000");
    assert_string_equal(d.pci_bus_id, "00000000:10:00.0");
    assert_string_equal(d.compute_mode, "Default");
    assert_int_equal(d.cuda_major, 9);
    assert_int_equal(d.total_bar1, 128ULL << 30);     /* really queried */
    assert_int_equal(d.total_mem, 80ULL << 30);
    assert_int_equal(d.power_limit_mw, 700000);
    assert_int_equal(d.max_mem_clock, 2619);
    assert_int_equal(d.mig_mode, 0);
    b->close(b, 0);
}

static void test_eight_devices_and_visible(void **state)
{
    write_script("devices 8\n");
    gpu_config c = cfg();
    char err[256];
    gpu_backend *b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 8);
    b->close(b, 0);

    /* indices and a UUID; CUDA stops at the first entry it cannot use */
    c.cuda_visible = "5, GPU-fa4e0002-1111-2222-3333-000000000002,9,1";
    b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 2);
    gpu_dev_info d;
    b->info(b, 0, &d);
    assert_int_equal(d.id, 5);
    b->info(b, 1, &d);
    assert_int_equal(d.id, 2);
    b->close(b, 0);

    /* a unique UUID prefix, without "GPU-" too */
    c.cuda_visible = "fa4e0007";
    b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    b->info(b, 0, &d);
    assert_int_equal(d.id, 7);
    b->close(b, 0);

    /* selects nothing */
    c.cuda_visible = "";
    assert_null(gpu_nvml_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "selects none"));
    c.cuda_visible = "void";
    assert_null(gpu_nvml_open(&c, err, sizeof err));

    /* --gpu=all ignores the list */
    c.all_devices = 1;
    b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 8);
    b->close(b, 0);

    /* NVIDIA_VISIBLE_DEVICES=3,4 in a container: NVML shows 2 GPUs, 0 and 1 */
    write_script("devices 2\n");
    c = cfg();
    c.cuda_visible = "3,4";
    c.visible_is_nvidia = 1;
    b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 2);
    b->close(b, 0);
}

static void test_mig_uuid(void **state)
{
    write_script("devices 4\nmig 2 MIG-4a1b2c3d-0000-1111-2222-333344445555\n");
    gpu_config c = cfg();
    c.cuda_visible = "MIG-4a1b2c3d-0000-1111-2222-333344445555";
    char err[256];
    gpu_backend *b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 1);
    gpu_dev_info d;
    b->info(b, 0, &d);
    assert_int_equal(d.id, 2);
    assert_int_equal(d.mig_mode, 1);
    assert_string_equal(d.mig_uuid, "MIG-4a1b2c3d-0000-1111-2222-333344445555");
    b->close(b, 0);
    /* the old form names its parent GPU */
    c.cuda_visible = "MIG-GPU-fa4e0003-1111-2222-3333-000000000003/1/0";
    b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    b->info(b, 0, &d);
    assert_int_equal(d.id, 3);
    b->close(b, 0);
}

static void test_unsupported_skipped(void **state)
{
    write_script("devices 2\n"
                 "unsupported * nvmlDeviceGetPowerUsage\n"
                 "unsupported 1 nvmlDeviceGetTemperature\n"
                 "error 0 nvmlDeviceGetBAR1MemoryInfo 15\n");
    gpu_config c = cfg();
    char err[256];
    gpu_backend *b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    gpu_stats *s = malloc(sizeof *s);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 2; i++) {
            assert_int_equal(b->stats(b, i, &the_job, s), 0);
            assert_true(s->power_mw == GPU_NA);
            if (i == 1) assert_true(s->temp == GPU_NA);
            else assert_int_equal(s->temp, 40);
            if (i == 0) assert_true(s->bar1_used == GPU_NA);   /* failed this time... */
            assert_int_equal(s->sm_clock, 1410);                /* the rest is there */
            assert_true(s->mem_used != GPU_NA);
        }
    /* NOT_SUPPORTED: asked once per device; another error: asked every time */
    assert_int_equal(count_calls("nvmlDeviceGetPowerUsage", 0), 1);
    assert_int_equal(count_calls("nvmlDeviceGetPowerUsage", 1), 1);
    assert_int_equal(count_calls("nvmlDeviceGetTemperature", 1), 1);
    assert_int_equal(count_calls("nvmlDeviceGetTemperature", 0), 3);
    assert_int_equal(count_calls("nvmlDeviceGetBAR1MemoryInfo", 0), 3);
    /* PCIe only when asked for */
    assert_int_equal(count_calls("nvmlDeviceGetPcieThroughput", 0), 0);
    free(s);
    b->close(b, 0);
}

static void test_job_filter_and_samples(void **state)
{
    write_script("devices 1\n"
                 "proc 0 4242 1048576 30 5 1 2\n"
                 "proc 0 777 2097152 60 6 0 0\n"
                 "gproc 0 4243 4096\n"
                 "proc 0 4243 8192\n");
    njob = 2;
    job[0] = 4242;
    job[1] = 4243;
    gpu_config c = cfg();
    c.graphics_procs = 1;
    c.pcie = 1;
    char err[256];
    gpu_backend *b = gpu_nvml_open(&c, err, sizeof err);
    assert_non_null(b);
    gpu_stats *s = malloc(sizeof *s);
    usleep(2000);          /* samples are newer than the open */
    b->stats(b, 0, &the_job, s);
    assert_int_equal(s->nprocs, 3);                   /* 4242, 4243 (compute), 4243 (graphics) */
    for (int k = 0; k < s->nprocs; k++) assert_true(s->procs[k].pid != 777);
    assert_int_equal(s->other_procs, 1);
    assert_true(s->others_known);
    assert_true(s->samples_ok);
    assert_int_equal(s->nsamples, 1);                 /* 777's sample is not the job's */
    assert_int_equal(s->samples[0].pid, 4242);
    assert_int_equal(s->samples[0].sm, 30);
    assert_int_equal(s->samples[0].dec, 2);
    assert_int_equal(s->pcie_tx, 1000);
    assert_int_equal(s->pcie_rx, 2000);
    /* the next call asks only for newer samples */
    b->stats(b, 0, &the_job, s);
    assert_true(s->nsamples <= 1);
    /* --gpu-all-procs: everyone */
    b->close(b, 0);
    c.all_procs = 1;
    b = gpu_nvml_open(&c, err, sizeof err);
    usleep(2000);
    b->stats(b, 0, &the_job, s);
    assert_int_equal(s->nprocs, 4);
    assert_int_equal(s->nsamples, 2);
    free(s);
    b->close(b, 0);
}

static void test_broken_libraries(void **state)
{
    gpu_config c = cfg();
    char err[256];
    write_script("init_error 9\n");
    assert_null(gpu_nvml_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "Driver Not Loaded"));

    char garbage[160];
    snprintf(garbage, sizeof garbage, "%s/libnvidia-ml.so.1", dir);
    FILE *f = fopen(garbage, "w");
    fputs("this is not an ELF file\n", f);
    fclose(f);
    c.nvml_library = garbage;
    assert_null(gpu_nvml_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "NVML: "));

    c.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    assert_null(gpu_nvml_open(&c, err, sizeof err));

    c.nvml_library = "libm.so.6";            /* loads, but is no NVML */
    assert_null(gpu_nvml_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "not a usable NVML"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_devices),
        cmocka_unit_test(test_one_device_env),
        cmocka_unit_test(test_eight_devices_and_visible),
        cmocka_unit_test(test_mig_uuid),
        cmocka_unit_test(test_unsupported_skipped),
        cmocka_unit_test(test_job_filter_and_samples),
        cmocka_unit_test(test_broken_libraries),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
