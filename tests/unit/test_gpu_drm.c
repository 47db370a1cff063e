/* test_gpu_drm.c — the DRM backend (src/gpu/drm.c) on the fixture trees of
 * tests/fixtures/gpu/ (copied to a temporary directory so that the test can
 * advance the fdinfo counters): card enumeration, amdgpu sysfs and hwmon,
 * fdinfo memory and engine utilisation, client dedup, the job filter, xe's
 * cycle counters and engine capacity, AMD visible devices. */
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

static char tmp[64];
static double fake_now;
static double fake_clock(void) { return fake_now; }

static pid_t job[4];
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

static char root[128];

static void use_fixture(const char *name)
{
    char cmd[512];
    snprintf(root, sizeof root, "%s/%s", tmp, name);
    snprintf(cmd, sizeof cmd, "rm -rf %s && cp -a tests/fixtures/gpu/%s %s", root, name, root);
    assert_int_equal(system(cmd), 0);
}

static gpu_config cfg(void)
{
    gpu_config c;
    memset(&c, 0, sizeof c);
    c.sysfs_root = root;
    c.proc_root = root;
    return c;
}

/* Replaces "KEY:\t..." in a fixture fdinfo file. */
static void set_key(const char *rel, const char *key, const char *value)
{
    char path[256], buf[4096], out[4096] = "";
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    for (char *save, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        size_t kl = strlen(key);
        if (!strncmp(l, key, kl) && l[kl] == ':')
            snprintf(out + strlen(out), sizeof out - strlen(out), "%s:\t%s\n", key, value);
        else
            snprintf(out + strlen(out), sizeof out - strlen(out), "%s\n", l);
    }
    f = fopen(path, "w");
    fputs(out, f);
    fclose(f);
}

static int setup(void **state)
{
    snprintf(tmp, sizeof tmp, "/tmp/jobscope-drm.XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    gpu_drm_clock = fake_clock;
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_amd_devices_and_sysfs(void **state)
{
    use_fixture("amd");
    gpu_config c = cfg();
    char err[256] = "";
    gpu_backend *b = gpu_drm_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 2);            /* card0, card2; not card1 (nvidia) nor connectors */
    gpu_dev_info d;
    b->info(b, 0, &d);
    assert_int_equal(d.id, 0);
    assert_string_equal(d.vendor, "amd");
    assert_string_equal(d.driver, "amdgpu");
    assert_string_equal(d.name, "AMD Instinct MI210");
    assert_string_equal(d.uuid, "GPU-8c2f2e1b6e3a4d55");
    assert_string_equal(d.pci_bus_id, "0000:c3:00.0");
    assert_int_equal(d.total_mem, 68702699520ULL);
    assert_int_equal(d.power_limit_mw, 300000);
    assert_int_equal(d.max_gpu_clock, 1700);
    assert_int_equal(d.max_mem_clock, 1600);
    assert_int_equal(d.cuda_major, -1);
    b->info(b, 1, &d);
    assert_int_equal(d.id, 2);
    assert_string_equal(d.name, "amdgpu 1002:740F");    /* no product_name */
    assert_true(d.total_mem == GPU_NA);

    gpu_stats *s = malloc(sizeof *s);
    njob = 1;
    job[0] = 1001;
    fake_now = 100;
    b->stats(b, 0, &the_job, s);
    assert_int_equal(s->gpu_util, 73);
    assert_int_equal(s->mem_util, 12);
    assert_int_equal(s->mem_used, 4294967296ULL);
    assert_int_equal(s->bar1_used, 268435456ULL);
    assert_int_equal(s->temp, 45);
    assert_int_equal(s->power_mw, 150000);
    assert_int_equal(s->gpu_clock, 1700);
    assert_int_equal(s->mem_clock, 1600);
    /* fds 3 and 4 are one client: counted once; gtt/cpu are not device memory */
    assert_int_equal(s->nprocs, 1);
    assert_int_equal(s->procs[0].pid, 1001);
    assert_int_equal(s->procs[0].mem, 1ULL << 30);
    assert_false(s->samples_ok);             /* utilisation needs two readings */
    assert_false(s->others_known);

    /* one second later: gfx +0.5 s, compute +0.25 s */
    set_key("proc/1001/fdinfo/3", "drm-engine-gfx", "1500000000 ns");
    set_key("proc/1001/fdinfo/3", "drm-engine-compute", "2250000000 ns");
    set_key("proc/1001/fdinfo/4", "drm-engine-gfx", "1500000000 ns");
    set_key("proc/1001/fdinfo/4", "drm-engine-compute", "2250000000 ns");
    set_key("proc/1001/fdinfo/3", "drm-memory-vram", "2097152 KiB");
    set_key("proc/1001/fdinfo/4", "drm-memory-vram", "2097152 KiB");
    fake_now = 101;
    b->stats(b, 0, &the_job, s);
    assert_true(s->samples_ok);
    assert_int_equal(s->procs[0].mem, 2ULL << 30);
    assert_int_equal(s->nsamples, 1);
    assert_int_equal(s->samples[0].pid, 1001);
    assert_int_equal(s->samples[0].sm, 75);        /* gfx 50 % + compute 25 % */
    assert_int_equal(s->samples[0].dec, 0);
    assert_int_equal(s->samples[0].mem, -1);
    int found = 0;
    for (int k = 0; k < s->nengines; k++)
        if (!strcmp(s->engines[k].name, "gfx")) {
            assert_true(s->engines[k].job_util > 49.9 && s->engines[k].job_util < 50.1);
            found = 1;
        }
    assert_true(found);

    /* card2: the same process, another client; resident vram preferred */
    fake_now = 101;
    b->stats(b, 1, &the_job, s);
    assert_int_equal(s->nprocs, 1);
    assert_int_equal(s->procs[0].mem, 256ULL << 20);
    set_key("proc/1001/fdinfo/6", "drm-engine-dec", "700000000 ns");
    fake_now = 103;
    b->stats(b, 1, &the_job, s);
    assert_int_equal(s->samples[0].dec, 10);       /* 0.2 s in 2 s */
    free(s);
    b->close(b, 0);
}

static void test_other_jobs_and_all_procs(void **state)
{
    use_fixture("amd");
    gpu_config c = cfg();
    char err[256];
    gpu_stats *s = malloc(sizeof *s);
    njob = 1;
    job[0] = 1002;                                   /* now the other process is "the job" */
    gpu_backend *b = gpu_drm_open(&c, err, sizeof err);
    b->stats(b, 0, &the_job, s);
    assert_int_equal(s->nprocs, 1);
    assert_int_equal(s->procs[0].pid, 1002);
    assert_int_equal(s->procs[0].mem, 2ULL << 30);
    b->close(b, 0);

    c.all_procs = 1;                                  /* everyone, from a scan of /proc */
    b = gpu_drm_open(&c, err, sizeof err);
    b->stats(b, 0, &the_job, s);
    assert_int_equal(s->nprocs, 2);
    assert_true(s->others_known);
    free(s);
    b->close(b, 0);
}

static void test_amd_visible_devices(void **state)
{
    use_fixture("amd");
    gpu_config c = cfg();
    char err[256];
    c.amd_visible = "1";
    gpu_backend *b = gpu_drm_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ndev, 1);
    gpu_dev_info d;
    b->info(b, 0, &d);
    assert_int_equal(d.id, 2);                       /* the second AMD card */
    b->close(b, 0);
    c.amd_visible = "GPU-8c2f2e1b6e3a4d55";
    b = gpu_drm_open(&c, err, sizeof err);
    assert_non_null(b);
    b->info(b, 0, &d);
    assert_int_equal(d.id, 0);
    b->close(b, 0);
    c.amd_visible = "5";
    assert_null(gpu_drm_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "VISIBLE"));
}

static void test_xe_cycles_capacity(void **state)
{
    use_fixture("intel");
    gpu_config c = cfg();
    char err[256];
    gpu_backend *b = gpu_drm_open(&c, err, sizeof err);
    assert_non_null(b);
    gpu_dev_info d;
    b->info(b, 0, &d);
    assert_string_equal(d.vendor, "intel");
    assert_int_equal(d.max_gpu_clock, 2850);
    gpu_stats *s = malloc(sizeof *s);
    njob = 1;
    job[0] = 2001;
    fake_now = 10;
    b->stats(b, 0, &the_job, s);
    assert_int_equal(s->gpu_clock, 1200);
    assert_int_equal(s->procs[0].mem, 32ULL << 20);   /* resident vram0 */
    set_key("proc/2001/fdinfo/4", "drm-cycles-rcs", "4000");
    set_key("proc/2001/fdinfo/4", "drm-total-cycles-rcs", "20000");
    set_key("proc/2001/fdinfo/4", "drm-cycles-vcs", "5000");
    set_key("proc/2001/fdinfo/4", "drm-total-cycles-vcs", "20000");
    fake_now = 11;
    b->stats(b, 0, &the_job, s);
    assert_int_equal(s->samples[0].sm, 30);           /* 3000 of 10000 cycles */
    assert_int_equal(s->samples[0].dec, 25);          /* 5000 of 10000, two engines */
    free(s);
    b->close(b, 0);
}

static void test_no_gpu(void **state)
{
    snprintf(root, sizeof root, "%s/empty", tmp);
    gpu_config c = cfg();
    char err[256];
    assert_null(gpu_drm_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "DRM: "));
}

static void test_visible_tokens(void **state)
{
    char tok[8][96];
    assert_int_equal(gpu_visible_tokens("0, 2 ,GPU-ab", tok, 8), 3);
    assert_string_equal(tok[1], "2");
    assert_string_equal(tok[2], "GPU-ab");
    assert_int_equal(gpu_visible_tokens("all", tok, 8), -1);
    assert_int_equal(gpu_visible_tokens("", tok, 8), 0);
    assert_int_equal(gpu_visible_tokens("1,,2", tok, 8), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amd_devices_and_sysfs),
        cmocka_unit_test(test_other_jobs_and_all_procs),
        cmocka_unit_test(test_amd_visible_devices),
        cmocka_unit_test(test_xe_cycles_capacity),
        cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_visible_tokens),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
