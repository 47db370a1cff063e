/* test_metrics_wire.c — parsing of custom-metric messages (src/metrics/wire.c):
 * what the clients send is accepted, everything else is classified. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "metrics/wire.h"

static int parse(const char *s, wire_metric *m)
{
    const char *pl;
    size_t pll;
    return wire_parse(s, strlen(s), m, &pl, &pll);
}

static void test_good(void **state)
{
    wire_metric m;
    assert_int_equal(parse("M1\tloss\t0.13\t1700000000.5\t2\t42\t7\tphase=train\trank=3", &m),
                     WIRE_METRIC);
    assert_int_equal(m.name_len, 4);
    assert_memory_equal(m.name, "loss", 4);
    assert_true(m.value == 0.13);
    assert_true(m.ts == 1700000000.5);
    assert_int_equal(m.level, 2);
    assert_int_equal(m.pid, 42);
    assert_int_equal(m.lost, 7);
    assert_int_equal(m.ntags, 2);
    assert_memory_equal(m.tags[1].k, "rank", 4);
    assert_int_equal(m.tags[1].vlen, 1);
    /* empty ts, hex float, exponent, empty tag value */
    assert_int_equal(parse("M1\ta.b:c/d-e_f\t-1e-3\t\t1\t0\t0\tk=", &m), WIRE_METRIC);
    assert_true(m.ts == 0 && m.value == -1e-3 && m.tags[0].vlen == 0);
    assert_int_equal(parse("M1\tx\t0x1.8p1\t\t1\t1\t0", &m), WIRE_METRIC);
    assert_true(m.value == 3.0);
}

/* issue 16.12: a repeated tag key used to give the event duplicate keys */
static void test_a_repeated_tag_keeps_its_last_value_once(void **state)
{
    wire_metric m;
    assert_int_equal(parse("M1\tloss\t1\t\t1\t42\t0\tk=a\tj=x\tk=b", &m), WIRE_METRIC);
    assert_int_equal(m.ntags, 2);
    assert_memory_equal(m.tags[0].k, "k", 1);
    assert_int_equal(m.tags[0].vlen, 1);
    assert_memory_equal(m.tags[0].v, "b", 1);
    assert_memory_equal(m.tags[1].k, "j", 1);
}

static void test_payload(void **state)
{
    wire_metric m;
    const char *pl;
    size_t pll;
    const char *s = "P1\t{\"payload\":[]}";
    assert_int_equal(wire_parse(s, strlen(s), &m, &pl, &pll), WIRE_PAYLOAD);
    assert_int_equal(pll, 14);
    assert_memory_equal(pl, "{\"payload\":[]}", 14);
}

static void test_bad(void **state)
{
    wire_metric m;
    assert_int_equal(parse("", &m), WIRE_BAD_FORMAT);
    assert_int_equal(parse("hello world", &m), WIRE_BAD_FORMAT);
    assert_int_equal(parse("M1\tloss\t1\t\t1\t0", &m), WIRE_BAD_FORMAT); /* 6 fields */
    assert_int_equal(parse("M2\tloss\t1\t\t1\t0\t0", &m), WIRE_BAD_FORMAT);
    assert_int_equal(parse("M1\t\t1\t\t1\t0\t0", &m), WIRE_BAD_NAME);
    assert_int_equal(parse("M1\tbad name\t1\t\t1\t0\t0", &m), WIRE_BAD_NAME);
    assert_int_equal(parse("M1\tna\xc3\xa9me\t1\t\t1\t0\t0", &m), WIRE_BAD_NAME);
    char longname[200];
    memset(longname, 'a', sizeof longname);
    memcpy(longname, "M1\t", 3);
    strcpy(longname + 3 + 129, "\t1\t\t1\t0\t0");
    assert_int_equal(parse(longname, &m), WIRE_BAD_NAME);
    assert_int_equal(parse("M1\tx\tnan\t\t1\t0\t0", &m), WIRE_BAD_VALUE);
    assert_int_equal(parse("M1\tx\tinf\t\t1\t0\t0", &m), WIRE_BAD_VALUE);
    assert_int_equal(parse("M1\tx\t1e999\t\t1\t0\t0", &m), WIRE_BAD_VALUE);
    assert_int_equal(parse("M1\tx\t12abc\t\t1\t0\t0", &m), WIRE_BAD_VALUE);
    assert_int_equal(parse("M1\tx\t\t\t1\t0\t0", &m), WIRE_BAD_VALUE);
    assert_int_equal(parse("M1\tx\t 1\t\t1\t0\t0", &m), WIRE_BAD_VALUE);
    assert_int_equal(parse("M1\tx\t1\t\t0\t0\t0", &m), WIRE_BAD_LEVEL);
    assert_int_equal(parse("M1\tx\t1\t\t256\t0\t0", &m), WIRE_BAD_LEVEL);
    assert_int_equal(parse("M1\tx\t1\t\t-1\t0\t0", &m), WIRE_BAD_LEVEL);
    assert_int_equal(parse("M1\tx\t1\t\t1.5\t0\t0", &m), WIRE_BAD_LEVEL);
    assert_int_equal(parse("M1\tx\t1\tyesterday\t1\t0\t0", &m), WIRE_BAD_FORMAT);
    assert_int_equal(parse("M1\tx\t1\t\t1\tpid\t0", &m), WIRE_BAD_FORMAT);
    assert_int_equal(parse("M1\tx\t1\t\t1\t0\t0\tnoequals", &m), WIRE_BAD_TAG);
    assert_int_equal(parse("M1\tx\t1\t\t1\t0\t0\t=v", &m), WIRE_BAD_TAG);
    assert_int_equal(parse("M1\tx\t1\t\t1\t0\t0\tk\n=v", &m), WIRE_BAD_TAG);
    char many[512] = "M1\tx\t1\t\t1\t0\t0";
    for (int i = 0; i < 17; i++) strcat(many, "\tk=v");
    assert_int_equal(parse(many, &m), WIRE_BAD_TAG);
    /* a message cut anywhere is never accepted as something else silently */
    const char *good = "M1\tloss\t0.5\t\t1\t1\t0";
    for (size_t n = 0; n < strlen(good) - 1; n++) {
        const char *pl;
        size_t pll;
        int r = wire_parse(good, n, &m, &pl, &pll);
        assert_true(r != WIRE_PAYLOAD);
        if (r == WIRE_METRIC) assert_true(n >= strlen(good) - 1);
    }
}

/* 27.7: one rule for tag values, the clients' and the listener's: at most
 * 256 bytes, no control character; UTF-8 is fine. */
static void test_a_tag_value_with_a_control_character_is_a_bad_tag(void **state)
{
    wire_metric m;
    assert_false(wire_tagval_ok("a\033b", 3));
    assert_false(wire_tagval_ok("a\tb", 3));
    assert_false(wire_tagval_ok("a\x7f", 2));
    assert_true(wire_tagval_ok("caf\xc3\xa9 au lait", 13));
    char big[300];
    memset(big, 'x', sizeof big);
    assert_true(wire_tagval_ok(big, 256));
    assert_false(wire_tagval_ok(big, 257));
    assert_int_equal(parse("M1\tx\t1\t\t1\t0\t0\tk=a\033b", &m), WIRE_BAD_TAG);
    assert_int_equal(parse("M1\tx\t1\t\t1\t0\t0\tk=caf\xc3\xa9", &m), WIRE_METRIC);
}

static void test_format_roundtrip(void **state)
{
    char buf[256];
    char *tags[] = {"host=n1", "rank=0"};
    size_t n = wire_format(buf, sizeof buf, "loss", 0.1 + 0.2, 1700000000.25, 3, 99, 2, tags, 2);
    assert_true(n > 0);
    wire_metric m;
    const char *pl;
    size_t pll;
    assert_int_equal(wire_parse(buf, n, &m, &pl, &pll), WIRE_METRIC);
    assert_true(m.value == 0.1 + 0.2); /* %.17g round-trips */
    assert_true(m.ts == 1700000000.25 && m.level == 3 && m.pid == 99 && m.lost == 2);
    assert_int_equal(m.ntags, 2);
    assert_int_equal(wire_format(buf, 20, "loss", 1, 0, 1, 1, 0, tags, 2), 0); /* too small */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_a_repeated_tag_keeps_its_last_value_once),
        cmocka_unit_test(test_payload),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_a_tag_value_with_a_control_character_is_a_bad_tag),
        cmocka_unit_test(test_format_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
