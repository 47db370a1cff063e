/* test_limits.c — the --limit parser: names, units (K/M/G/T, s/m/h/d),
 * lists, repetition and every kind of bad input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "limits/limits.h"

static double bytes(const char *s)
{
    double v = -1;
    return limits_parse_bytes(s, &v) == 0 ? v : -1;
}

static double secs(const char *s)
{
    double v = -1;
    return limits_parse_seconds(s, &v) == 0 ? v : -1;
}

static void test_bytes(void **state)
{
    (void)state;
    assert_true(bytes("100") == 100);
    assert_true(bytes("1K") == 1024);
    assert_true(bytes("1k") == 1024);
    assert_true(bytes("512M") == 512.0 * 1048576);
    assert_true(bytes("4G") == 4294967296.0);
    assert_true(bytes("4GB") == 4294967296.0);
    assert_true(bytes("4GiB") == 4294967296.0);
    assert_true(bytes("1.5G") == 1.5 * 1073741824);
    assert_true(bytes("2T") == 2.0 * 1099511627776.0);
    assert_true(bytes("10B") == 10);
    assert_true(bytes("0") == -1);
    assert_true(bytes("0.1") == -1);       /* rounds down to 0 bytes */
    assert_true(bytes("") == -1);
    assert_true(bytes("G") == -1);
    assert_true(bytes("4X") == -1);
    assert_true(bytes("4GG") == -1);
    assert_true(bytes("-4G") == -1);
    assert_true(bytes("4 G") == -1);
    assert_true(bytes("1e9") == -1);
    assert_true(bytes("0x10") == -1);
    assert_true(bytes("99999P") == -1);    /* beyond 2^63 */
}

static void test_seconds(void **state)
{
    (void)state;
    assert_true(secs("90") == 90);
    assert_true(secs("30s") == 30);
    assert_true(secs("15m") == 900);
    assert_true(secs("2h") == 7200);
    assert_true(secs("1d") == 86400);
    assert_true(secs("1.5h") == 5400);
    assert_true(secs("1h30m") == 5400);
    assert_true(secs("0.5") == 0.5);
    assert_true(secs("1h30") == -1);
    assert_true(secs("0") == -1);
    assert_true(secs("2w") == -1);
    assert_true(secs("h") == -1);
    assert_true(secs("") == -1);
    assert_true(secs("-5") == -1);
    assert_true(secs("5 s") == -1);
}

static void test_specs(void **state)
{
    (void)state;
    js_limits l;
    char err[256];
    memset(&l, 0, sizeof l);
    assert_int_equal(limits_parse("memory=4G,wall=2h", &l, err, sizeof err), 0);
    assert_int_equal(l.set, (1u << LIM_MEMORY) | (1u << LIM_WALL));
    assert_true(l.max[LIM_MEMORY] == 4294967296.0);
    assert_true(l.max[LIM_WALL] == 7200);
    /* repeatable: adds, and the last value of a name wins */
    assert_int_equal(limits_parse("rss=1G", &l, err, sizeof err), 0);
    assert_int_equal(limits_parse("cpu=10m,procs=64,disk-write=2G,memory=1G", &l, err, sizeof err), 0);
    assert_int_equal(l.set, (1u << LIM_N) - 1);
    assert_true(l.max[LIM_MEMORY] == 1073741824.0);
    assert_true(l.max[LIM_CPU] == 600);
    assert_true(l.max[LIM_PROCS] == 64);
    assert_true(l.max[LIM_DISK_WRITE] == 2147483648.0);
    assert_string_equal(limits_name(LIM_DISK_WRITE), "disk-write");
    assert_string_equal(limits_unit(LIM_CPU), "seconds");
}

static void bad(const char *spec, const char *needle)
{
    js_limits l;
    char err[256] = "";
    memset(&l, 0, sizeof l);
    assert_int_equal(limits_parse(spec, &l, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("'%s': message '%s' lacks '%s'", spec, err, needle);
    assert_null(strchr(err, '\n'));
}

static void test_errors(void **state)
{
    (void)state;
    bad("memory", "not NAME=VALUE");
    bad("mem=4G", "unknown limit 'mem'");
    bad("memory=4Q", "bad value '4Q' for memory");
    bad("memory=", "bad value '' for memory");
    bad("wall=2w", "bad value '2w' for wall");
    bad("procs=1.5", "bad value '1.5' for procs");
    bad("procs=0", "bad value '0' for procs");
    bad("procs=-3", "for procs");
    bad("cpu=abc", "for cpu");
    bad("", "empty limit");
    bad("memory=1G,", "empty item");
    bad("memory=1G,,wall=1h", "empty item");
    bad("memory=1G,wall", "not NAME=VALUE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_specs),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
