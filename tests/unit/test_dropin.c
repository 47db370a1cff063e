/* test_dropin.c — the pieces of the drop-in compatibility (issue 14) that are
 * pure functions: JoReMon's RFC3339Nano timestamps (sink/joremon.c), per-rank
 * output names (cli/outpath.c) and the repair of Panorama's payload block
 * with "ts" inside the list (metrics/payload.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "sink/joremon.h"
#include "cli/outpath.h"
#include "metrics/payload.h"

static void in_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

/* Go's time.Time.MarshalJSON: RFC3339Nano, trailing zeros dropped, and no
 * dot at all for a whole second. */
static void test_joremon_timestamp_drops_trailing_zeros_like_go(void **state)
{
    (void)state;
    char b[64];
    in_tz("CET-1");                        /* UTC+1, as at CC-IN2P3 in February */
    joremon_timestamp(b, sizeof b, 1580865115.5);
    assert_string_equal(b, "2020-02-05T02:11:55.5+01:00");
    joremon_timestamp(b, sizeof b, 1580865115.0);
    assert_string_equal(b, "2020-02-05T02:11:55+01:00");
    joremon_timestamp(b, sizeof b, 1580865115.25);
    assert_string_equal(b, "2020-02-05T02:11:55.25+01:00");
    in_tz("UTC0");
    joremon_timestamp(b, sizeof b, 1580865115.125);
    assert_string_equal(b, "2020-02-05T01:11:55.125Z");
    in_tz("NST+3:30");                     /* offsets with minutes */
    joremon_timestamp(b, sizeof b, 1580865115.0);
    assert_string_equal(b, "2020-02-04T21:41:55-03:30");
}

static void test_outpath_expands_rank_host_job_pid_in_files_only(void **state)
{
    (void)state;
    char *p = outpath_expand("ev-%r-%h-%j-%p-%%-%x.jsonl", 3, "node1", "12/3", 777);
    assert_string_equal(p, "ev-3-node1-12_3-777-%-%x.jsonl");
    free(p);
    p = outpath_expand("file:///tmp/ev-%r.jsonl", 12, "h", "j", 1);
    assert_string_equal(p, "file:///tmp/ev-12.jsonl");
    free(p);
    /* a network URL keeps its percent-encoding (%2f is the vhost "/") */
    p = outpath_expand("rabbitmq://u:p@h:15672/api/exchanges/%2f/ex-%r/publish", 1, "h", "j", 1);
    assert_string_equal(p, "rabbitmq://u:p@h:15672/api/exchanges/%2f/ex-%r/publish");
    free(p);
}

typedef struct got { int n; char name[64]; double ts; char fields[512]; } got;

static void on_event(void *ctx, const char *name, double ts, const char *f, size_t n)
{
    got *g = ctx;
    g->n++;
    snprintf(g->name, sizeof g->name, "%s", name);
    g->ts = ts;
    snprintf(g->fields, sizeof g->fields, "%.*s", (int)n, f);
}

static void test_payload_with_ts_inside_the_list_is_repaired(void **state)
{
    (void)state;
    const char *blk = "{\n \"monitoring_event\": \"darshan.perf\",\n \"payload\": [\n"
                      "  {\"POSIX\": {\"total_bytes\": 403761}},\n  \"ts\": 1552878285\n ]\n}\n";
    got g = { 0 };
    const char *err = NULL;
    assert_int_equal(payload_parse(blk, strlen(blk), 1.0, on_event, NULL, &g, &err), 1);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.name, "darshan.perf");
    assert_true(g.ts == 1552878285.0);
    assert_string_equal(g.fields, "\"POSIX\":{\"total_bytes\":403761},"
                                  "\"payload_repaired\":\"moved \\\"ts\\\" out of the payload list into the block\"");
    /* what is not of that form is still refused */
    const char *bad = "{\"payload\": [ {\"a\": 1}, ]}";
    memset(&g, 0, sizeof g);
    assert_int_equal(payload_parse(bad, strlen(bad), 1.0, on_event, NULL, &g, &err), -1);
    assert_int_equal(g.n, 0);
    /* a valid block is untouched: no payload_repaired */
    const char *ok = "{\"ts\": 5, \"payload\": [ {\"a\": 1} ]}";
    memset(&g, 0, sizeof g);
    assert_int_equal(payload_parse(ok, strlen(ok), 1.0, on_event, NULL, &g, &err), 1);
    assert_string_equal(g.fields, "\"a\":1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joremon_timestamp_drops_trailing_zeros_like_go),
        cmocka_unit_test(test_outpath_expands_rank_host_job_pid_in_files_only),
        cmocka_unit_test(test_payload_with_ts_inside_the_list_is_repaired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
