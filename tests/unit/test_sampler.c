/* test_sampler.c — auto's second decision (src/monitor/sampler.c): after
 * switching to BPF it compares what each sampler cost per process-sample
 * and goes back to procfs when BPF is the dearer one.  The first sample of
 * each is warm-up (files opened, program loaded) and not counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "monitor/sampler.h"

static void feed(sampler_cost *c, int samples, uint64_t ns, uint32_t procs)
{
    for (int i = 0; i < samples; i++) monitor_sampler_cost_add(c, ns, procs);
}

static void the_first_sample_is_warm_up_and_costs_are_per_process_sample(void **state)
{
    (void)state;
    sampler_cost c = { 0 };
    monitor_sampler_cost_add(&c, 5000000, 10);      /* opening every file */
    feed(&c, 4, 200000, 10);
    assert_int_equal(c.proc_samples, 40);
    assert_int_equal(monitor_sampler_cost_total_ns(&c), 5800000);   /* the payback counts it all */
    assert_true(monitor_sampler_cost_us(&c) > 19.99 && monitor_sampler_cost_us(&c) < 20.01);
}

static void no_verdict_before_five_counted_samples_of_bpf(void **state)
{
    (void)state;
    sampler_cost procfs = { 0 }, bpf = { 0 };
    feed(&procfs, 10, 100000, 1);
    feed(&bpf, 5, 10000000, 1);                      /* 1 warm-up + 4 */
    assert_int_equal(monitor_sampler_verdict(&procfs, &bpf), -1);
    feed(&bpf, 1, 10000000, 1);
    assert_int_equal(monitor_sampler_verdict(&procfs, &bpf), 0);
}

static void bpf_stays_when_cheaper_per_process_or_when_nothing_compares(void **state)
{
    (void)state;
    sampler_cost procfs = { 0 }, bpf = { 0 }, none = { 0 };
    feed(&procfs, 10, 1000000, 100);                 /* 10 us a process-sample */
    feed(&bpf, 6, 1500000, 1000);                    /* more a sample, 1.5 per process */
    assert_int_equal(monitor_sampler_verdict(&procfs, &bpf), 1);
    assert_int_equal(monitor_sampler_verdict(&none, &bpf), 1);
}

/* auto can switch after procfs's first sample (a slow build, a payback of
 * 0): that sample, warm-up and all, is then procfs's figure */
static void a_lone_warm_up_sample_stands_in_for_procfs(void **state)
{
    (void)state;
    sampler_cost procfs = { 0 }, bpf = { 0 };
    feed(&procfs, 1, 900000, 1);                     /* 900 us, opening files */
    assert_true(monitor_sampler_cost_us(&procfs) > 899.9 && monitor_sampler_cost_us(&procfs) < 900.1);
    feed(&bpf, 6, 12000000, 1);                      /* 12 ms: the crowded host walk */
    assert_int_equal(monitor_sampler_verdict(&procfs, &bpf), 0);
}

static void bpf_is_left_when_dearer_per_process_sample(void **state)
{
    (void)state;
    sampler_cost procfs = { 0 }, bpf = { 0 };
    feed(&procfs, 10, 42000, 1);                     /* 42 us: one process via /proc */
    feed(&bpf, 6, 10700000, 1);                      /* 10.7 ms: the host-task walk, crowded */
    assert_int_equal(monitor_sampler_verdict(&procfs, &bpf), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_first_sample_is_warm_up_and_costs_are_per_process_sample),
        cmocka_unit_test(no_verdict_before_five_counted_samples_of_bpf),
        cmocka_unit_test(bpf_stays_when_cheaper_per_process_or_when_nothing_compares),
        cmocka_unit_test(bpf_is_left_when_dearer_per_process_sample),
        cmocka_unit_test(a_lone_warm_up_sample_stands_in_for_procfs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
