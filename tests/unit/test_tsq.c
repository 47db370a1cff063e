/* The query engine's rules other than the aggregators (test_tsq_agg.c):
 * downsampling and every fill policy, 0all, rate and its counter options,
 * the order of operations, group-by and aggregateTags, explicitTags, each
 * filter type, the deprecated tags map, time parsing, the GET m= form,
 * every error case, Grafana's two request shapes and the JSON answers,
 * and the raw-series exchange between peers.  Expected numbers are worked
 * out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>

#include "tsq_testlib.h"
#include "query/tsq_internal.h"
#include <time.h>

static tsq_set set;
static tsq_query q;
static tsq_result r;
static tsq_error e;

static int teardown(void **st)
{
    tsq_result_free(&r);
    tsq_query_free(&q);
    tsq_set_free(&set);
    return 0;
}

/* one sub-query of metric m, start B, end B+end_s, with extra JSON fields */
static int run1(int end_s, const char *fields)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\"%s%s}]}",
             B, S(end_s), *fields ? "," : "", fields);
    return run_query(body, &set, &q, &r, &e);
}

static char *answer(void)
{
    size_t len;
    char *j = tsq_result_json(&q, &r, &len);
    assert_non_null(j);
    assert_int_equal(strlen(j), len);
    return j;
}

/* ---------------------------------------------------------- downsampling */

/* B+0s 1, B+3s 2, B+7s 6, B+12s 4, B+25s 10 */
static void five_points(void)
{
    add_series(&set, "m", "host=a", (int64_t[]){ S(0), S(3), S(7), S(12), S(25) },
               (double[]){ 1, 2, 6, 4, 10 }, 5);
}

/* buckets [0,10): 1,2,6 → 3; [10,20): 4; [20,30): 10 */
static void downsample_avg_uses_epoch_aligned_buckets(void **st)
{
    five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg\""), 0);
    const int64_t T[] = { S(0), S(10), S(20) };
    const double V[] = { 3, 4, 10 };
    expect_points(&r.v[0], T, V);
}

static void downsample_sum_count_max_first_last(void **st)
{
    five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-sum\""), 0);
    const int64_t T[] = { S(0), S(10), S(20) };
    expect_points(&r.v[0], T, ((double[]){ 9, 4, 10 }));          /* 1+2+6 */
    teardown(NULL); five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-count\""), 0);
    expect_points(&r.v[0], T, ((double[]){ 3, 1, 1 }));
    teardown(NULL); five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-max\""), 0);
    expect_points(&r.v[0], T, ((double[]){ 6, 4, 10 }));
    teardown(NULL); five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-first\""), 0);
    expect_points(&r.v[0], T, ((double[]){ 1, 4, 10 }));
    teardown(NULL); five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-last\""), 0);
    expect_points(&r.v[0], T, ((double[]){ 6, 4, 10 }));
    teardown(NULL); five_points();
    /* 1m bucket: all five; dev of 1,2,6,4,10: mean 23/5=4.6, squares
     * 12.96+6.76+1.96+0.36+29.16 = 51.2, /5 = 10.24 → 3.2 */
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"1m-dev\""), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(0) }), ((double[]){ 3.2 }));
}

/* only buckets with ts in [start, end] are returned: start B+10s drops the
 * [0,10) bucket; end B+20s keeps bucket 20, which holds B+25s (OpenTSDB
 * reads the whole last bucket) */
static void downsample_returns_buckets_inside_the_range(void **st)
{
    five_points();
    char body[512];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
             "\"aggregator\":\"sum\",\"downsample\":\"10s-avg\"}]}", S(10), S(20));
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20) }), ((double[]){ 4, 10 }));
}

/* B+0s 1, B+25s 10, end B+40s: buckets 0..40 */
static void gap_series(void)
{
    add_series(&set, "m", "host=a", (int64_t[]){ S(0), S(25) }, (double[]){ 1, 10 }, 2);
}

static void fill_none_omits_empty_buckets(void **st)
{
    gap_series();
    assert_int_equal(run1(40, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg-none\""), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(20) }), ((double[]){ 1, 10 }));
}

static void fill_zero_writes_zero(void **st)
{
    gap_series();
    assert_int_equal(run1(40, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg-zero\""), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(10), S(20), S(30), S(40) }), ((double[]){ 1, 0, 10, 0, 0 }));
}

static void fill_nan_is_serialised_as_the_string_nan(void **st)
{
    gap_series();
    assert_int_equal(run1(40, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg-nan\""), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(10), S(20), S(30), S(40) }),
                  ((double[]){ 1, NAN, 10, NAN, NAN }));
    char *j = answer();
    assert_non_null(strstr(j, "\"dps\":{\"1699999200\":1,\"1699999210\":\"NaN\",\"1699999220\":10,"
                              "\"1699999230\":\"NaN\",\"1699999240\":\"NaN\"}"));
    free(j);
}

static void fill_null_is_serialised_as_null(void **st)
{
    gap_series();
    assert_int_equal(run1(40, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg-null\""), 0);
    char *j = answer();
    assert_non_null(strstr(j, "\"dps\":{\"1699999200\":1,\"1699999210\":null,\"1699999220\":10,"
                              "\"1699999230\":null,\"1699999240\":null}"));
    assert_null(strstr(j, "NaN"));
    free(j);
}

/* fill across a group: a bucket empty in every series stays NaN after sum
 * (sum skips NaN, all-NaN gives NaN); one present value wins */
static void fill_nan_survives_aggregation_only_where_all_are_empty(void **st)
{
    gap_series();
    add_series(&set, "m", "host=b", (int64_t[]){ S(11) }, (double[]){ 5 }, 1);
    assert_int_equal(run1(40, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg-nan\""), 0);
    assert_int_equal(r.n, 1);
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(10), S(20), S(30), S(40) }),
                  ((double[]){ 1, 5, 10, NAN, NAN }));
}

/* 0all: one bucket over [start, end), stamped start: 1+2+6+4+10 = 23 */
static void zero_all_is_one_bucket_over_the_range(void **st)
{
    five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"0all-sum\""), 0);
    expect_points(&r.v[0], ((int64_t[]){ B }), ((double[]){ 23 }));
    teardown(NULL); five_points();
    /* end B+12s excludes the point at 12 and after: 1+2+6 = 9 */
    char body[512];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
             "\"aggregator\":\"sum\",\"downsample\":\"0all-sum\"}]}", B, S(12));
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    expect_points(&r.v[0], ((int64_t[]){ B }), ((double[]){ 9 }));
}

/* group of two downsampled series: a [0,10) avg 3, [10,20) 4, [20,30) 10;
 * b: B+5s 7, B+15s 9 → 7, 9; sum: 10, 13, 10 + b interpolated?  b ends at
 * 10, so at 20 only a: 10 */
static void downsampling_happens_before_aggregation(void **st)
{
    five_points();
    add_series(&set, "m", "host=b", (int64_t[]){ S(5), S(15) }, (double[]){ 7, 9 }, 2);
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg\""), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(10), S(20) }), ((double[]){ 3 + 7, 4 + 9, 10 }));
}

/* Series that are already one point a bucket (what the store hands over
 * when it downsamples while reading, or a peer's raw points on the grid)
 * are used as they are, not copied: the answer is byte for byte the one of
 * the same series given twice (merged, then downsampled as any other),
 * whatever breaks the pattern: -0 (a bucket of it sums to +0), a point off
 * the grid, two points in one bucket, a gap. */
static void series_already_downsampled_answer_as_any_other(void **st)
{
    const int64_t grid[] = { S(0), S(10), S(20), S(40), S(50) };
    const double v[] = { 1.5, -0.0, NAN, 1e300, -7 };
    const int64_t off[] = { S(0), S(10), S(23), S(30) };
    const int64_t two[] = { S(0), S(10), S(14), S(20) };
    const char *specs[] = { "10s-avg", "10s-sum", "10s-max", "10s-avg-zero", "20s-sum" };
    const char *aggs[] = { "sum", "avg", "min", "none", "dev" };
    for (size_t k = 0; k < sizeof specs / sizeof *specs; k++)
        for (size_t a = 0; a < sizeof aggs / sizeof *aggs; a++)
            for (int rate = 0; rate < 2; rate++) {
                char *j[2];
                for (int twice = 0; twice < 2; twice++) {
                    for (int c = 0; c <= twice; c++) {
                        add_series(&set, "m", "host=a", grid, v, 5);
                        add_series(&set, "m", "host=b", grid, v + 2, 3); /* no -0 */
                        add_series(&set, "m", "host=c", off, v + 1, 4);
                        add_series(&set, "m", "host=d", two, v + 1, 4);
                    }
                    char f[256];
                    snprintf(f, sizeof f, "\"aggregator\":\"%s\",\"downsample\":\"%s\",\"rate\":%s",
                             aggs[a], specs[k], rate ? "true" : "false");
                    assert_int_equal(run1(60, f), 0);
                    j[twice] = answer();
                    tsq_result_free(&r);
                    tsq_query_free(&q);
                    tsq_set_free(&set);
                }
                if (strcmp(j[0], j[1]))
                    fail_msg("%s %s rate=%d:\n%s\n%s", specs[k], aggs[a], rate, j[0], j[1]);
                free(j[0]);
                free(j[1]);
            }
}

/* ------------------------------------------------------------------ rate */

/* B+0s 10, B+10s 30, B+20s 20, B+30s 50 */
static void counter_series(void)
{
    add_series(&set, "m", "host=a", (int64_t[]){ S(0), S(10), S(20), S(30) },
               (double[]){ 10, 30, 20, 50 }, 4);
}

/* (30-10)/10 = 2 at 10, (20-30)/10 = -1 at 20, (50-20)/10 = 3 at 30 */
static void rate_is_per_second_and_the_first_point_yields_none(void **st)
{
    counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20), S(30) }), ((double[]){ 2, -1, 3 }));
}

/* counter with counterMax 100: a drop is a wrap: (100 - 30 + 20)/10 = 9 */
static void rate_counter_wraps_at_counter_max(void **st)
{
    counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true,"
                              "\"rateOptions\":{\"counter\":true,\"counterMax\":100}"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20), S(30) }), ((double[]){ 2, 9, 3 }));
}

/* the default counterMax is Long.MAX_VALUE: (9223372036854775807 - 30 + 20)/10 */
static void rate_counter_default_max_is_long_max(void **st)
{
    counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true,\"rateOptions\":{\"counter\":true}"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20), S(30) }),
                  ((double[]){ 2, (9223372036854775807.0 - 30 + 20) / 10, 3 }));
}

/* resetValue 5: the wrap rate 9 > 5 becomes 0; ordinary rates stay */
static void rate_above_reset_value_becomes_zero(void **st)
{
    counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true,"
                              "\"rateOptions\":{\"counter\":true,\"counterMax\":100,\"resetValue\":5}"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20), S(30) }), ((double[]){ 2, 0, 3 }));
}

/* dropResets: the drop yields no point; the next rate is from the reset
 * point: (50-20)/10 = 3 */
static void rate_drop_resets_skips_the_reset(void **st)
{
    counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true,"
                              "\"rateOptions\":{\"counter\":true,\"dropResets\":true}"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(30) }), ((double[]){ 2, 3 }));
}

/* Grafana's browser sends counterMax/resetValue as numbers or leaves them
 * out, and asks for dropResets when neither is set; "" means the default */
static void rate_options_as_grafana_sends_them(void **st)
{
    counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true,\"rateOptions\":{\"counter\":true,"
                              "\"counterMax\":\"\",\"resetValue\":\"\",\"dropResets\":true}"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(30) }), ((double[]){ 2, 3 }));
    teardown(NULL); counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true,\"rateOptions\":{\"counter\":true,"
                              "\"counterMax\":\"100\"}"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20), S(30) }), ((double[]){ 2, 9, 3 }));
}

/* rate without counter keeps negative rates even with a reset value */
static void rate_without_counter_ignores_reset_value(void **st)
{
    counter_series();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true,"
                              "\"rateOptions\":{\"counter\":false,\"resetValue\":1}"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20), S(30) }), ((double[]){ 2, -1, 3 }));
}

/* rate after downsampling: five_points' 10s-avg 3, 4, 10 at 0, 10, 20 →
 * (4-3)/10 = 0.1 at 10, (10-4)/10 = 0.6 at 20 */
static void rate_comes_after_downsampling(void **st)
{
    five_points();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"downsample\":\"10s-avg\",\"rate\":true"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20) }), ((double[]){ 0.1, 0.6 }));
}

/* rate before aggregation: a 0,10,20 → rates at 10, 20: 1, 1;
 * b 5, 15 → rate at 15: 2; sum with previous-value interpolation:
 * 10: a 1 (b not started) = 1; 15: a prev 1 + 2 = 3; 20: a 1 (b ended) = 1 */
static void rate_comes_before_aggregation(void **st)
{
    add_series(&set, "m", "host=a", (int64_t[]){ S(0), S(10), S(20) }, (double[]){ 0, 10, 20 }, 3);
    add_series(&set, "m", "host=b", (int64_t[]){ S(5), S(15) }, (double[]){ 0, 20 }, 2);
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"rate\":true"), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(15), S(20) }), ((double[]){ 1, 3, 1 }));
}

/* the point before start feeds the first rate (OpenTSDB scans from the hour) */
static void rate_uses_the_point_before_start(void **st)
{
    counter_series();
    char body[512];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
             "\"aggregator\":\"sum\",\"rate\":true}]}", S(5), S(60));
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    expect_points(&r.v[0], ((int64_t[]){ S(10), S(20), S(30) }), ((double[]){ 2, -1, 3 }));
}

/* ------------------------------------------------------------- grouping */

static void four_hosts(void)
{
    const int64_t t[] = { S(0) };
    add_series(&set, "m", "dc=x,host=a", t, (double[]){ 1 }, 1);
    add_series(&set, "m", "dc=x,host=b", t, (double[]){ 2 }, 1);
    add_series(&set, "m", "dc=y,host=c", t, (double[]){ 4 }, 1);
    add_series(&set, "m", "dc=y,gpu=0,host=d", t, (double[]){ 8 }, 1);
}

static void group_by_splits_and_reports_aggregate_tags(void **st)
{
    four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"dc\","
                              "\"filter\":\"*\",\"groupBy\":true}]"), 0);
    assert_int_equal(r.n, 2);
    /* dc=x: 1+2, host differs → aggregateTags */
    assert_string_equal(out_tag(&r.v[0], "dc"), "x");
    assert_null(out_tag(&r.v[0], "host"));
    assert_int_equal(r.v[0].naggregate_tags, 1);
    assert_string_equal(r.v[0].aggregate_tags[0], "host");
    expect_points(&r.v[0], ((int64_t[]){ S(0) }), ((double[]){ 3 }));
    /* dc=y: 4+8; gpu only in one series with one value: stays a tag */
    assert_string_equal(out_tag(&r.v[1], "dc"), "y");
    assert_string_equal(out_tag(&r.v[1], "gpu"), "0");
    assert_int_equal(r.v[1].naggregate_tags, 1);
    expect_points(&r.v[1], ((int64_t[]){ S(0) }), ((double[]){ 12 }));
}

static void without_group_by_everything_is_one_series(void **st)
{
    four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\""), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.v[0].ntags, 1);          /* gpu: one value only */
    assert_int_equal(r.v[0].naggregate_tags, 2);
    assert_string_equal(r.v[0].aggregate_tags[0], "dc");
    assert_string_equal(r.v[0].aggregate_tags[1], "host");
    expect_points(&r.v[0], ((int64_t[]){ S(0) }), ((double[]){ 15 }));
}

/* a filter without groupBy filters but does not split */
static void a_plain_filter_does_not_group(void **st)
{
    four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"host\","
                              "\"filter\":\"a|c\",\"groupBy\":false}]"), 0);
    assert_int_equal(r.n, 1);
    expect_points(&r.v[0], ((int64_t[]){ S(0) }), ((double[]){ 5 }));
}

/* the deprecated tags map: host=* groups by host; dc=x is a literal */
static void tags_map_becomes_group_by_filters(void **st)
{
    four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"tags\":{\"host\":\"*\",\"dc\":\"x\"}"), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(out_tag(&r.v[0], "host"), "a");
    assert_string_equal(out_tag(&r.v[1], "host"), "b");
    teardown(NULL); four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"tags\":{\"host\":\"a|d\"}"), 0);
    assert_int_equal(r.n, 2);                       /* literal_or, grouped */
    expect_points(&r.v[1], ((int64_t[]){ S(0) }), ((double[]){ 8 }));
    /* with "filters" too, the one given last replaces the other */
    teardown(NULL); four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"host\","
                              "\"filter\":\"c\"}],\"tags\":{\"host\":\"a|b\"}"), 0);
    assert_int_equal(r.n, 2);                       /* a and b, grouped */
    expect_points(&r.v[0], ((int64_t[]){ S(0) }), ((double[]){ 1 }));
    teardown(NULL); four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"tags\":{\"host\":\"a|b\"},\"filters\":[{\"type\":"
                              "\"literal_or\",\"tagk\":\"host\",\"filter\":\"c\"}]"), 0);
    assert_int_equal(r.n, 1);                       /* c only */
    expect_points(&r.v[0], ((int64_t[]){ S(0) }), ((double[]){ 4 }));
}

/* explicitTags: only series whose keys are exactly the filtered keys */
static void explicit_tags_require_exactly_the_filtered_keys(void **st)
{
    four_hosts();
    assert_int_equal(run1(60, "\"aggregator\":\"sum\",\"explicitTags\":true,\"filters\":["
                              "{\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"*\"},"
                              "{\"type\":\"wildcard\",\"tagk\":\"dc\",\"filter\":\"*\"}]"), 0);
    assert_int_equal(r.n, 1);
    expect_points(&r.v[0], ((int64_t[]){ S(0) }), ((double[]){ 1 + 2 + 4 }));   /* not gpu's 8 */
}

/* a series with no point in the scan range is not part of the answer;
 * one with points only just outside [start, end] gives an empty dps */
static void series_outside_the_range(void **st)
{
    add_series(&set, "m", "host=a", (int64_t[]){ S(-4000) }, (double[]){ 1 }, 1);
    add_series(&set, "m", "host=b", (int64_t[]){ S(100) }, (double[]){ 2 }, 1);
    add_series(&set, "m", "host=c", (int64_t[]){ S(30) }, (double[]){ 3 }, 1);
    add_series(&set, "other", "host=c", (int64_t[]){ S(30) }, (double[]){ 3 }, 1);
    assert_int_equal(run1(60, "\"aggregator\":\"none\""), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(out_tag(&r.v[0], "host"), "b");
    assert_int_equal(r.v[0].n, 0);
    expect_points(&r.v[1], ((int64_t[]){ S(30) }), ((double[]){ 3 }));
}

/* -------------------------------------------------------------- filters */

static int matches(const char *type, const char *filter, const char *tags)
{
    tsq_sub sub;
    memset(&sub, 0, sizeof sub);
    tsq_filter f = { 0 };
    f.tagk = (char *)"host";
    f.filter = (char *)filter;
    if (strcmp(type, "literal_or") == 0) f.type = TSQ_LITERAL_OR;
    else if (strcmp(type, "iliteral_or") == 0) f.type = TSQ_ILITERAL_OR;
    else if (strcmp(type, "not_literal_or") == 0) f.type = TSQ_NOT_LITERAL_OR;
    else if (strcmp(type, "not_iliteral_or") == 0) f.type = TSQ_NOT_ILITERAL_OR;
    else if (strcmp(type, "wildcard") == 0) f.type = TSQ_WILDCARD;
    else if (strcmp(type, "iwildcard") == 0) f.type = TSQ_IWILDCARD;
    else if (strcmp(type, "regexp") == 0) f.type = TSQ_REGEXP;
    else f.type = TSQ_NOT_KEY;
    sub.filters = &f;
    sub.nfilters = 1;
    tsq_set one = { 0 };
    add_series(&one, "m", tags, (int64_t[]){ 0 }, (double[]){ 0 }, 1);
    int m = tsq_match(&sub, one.v[0].tags, one.v[0].ntags);
    tsq_set_free(&one);
    /* free the compiled part only */
    f.tagk = strdup("host");
    f.filter = strdup(filter);
    tsq_filter_free(&f);
    return m;
}

static void literal_or_matches_listed_values_case_sensitively(void **st)
{
    assert_true(matches("literal_or", "web01|web02", "host=web02"));
    assert_false(matches("literal_or", "web01|web02", "host=WEB02"));
    assert_false(matches("literal_or", "web01", "dc=web01"));     /* key missing */
}
static void iliteral_or_ignores_case(void **st)
{
    assert_true(matches("iliteral_or", "Web01|web02", "host=WEB01"));
    assert_false(matches("iliteral_or", "web01", "host=web03"));
}
static void not_literal_or_excludes_listed_values(void **st)
{
    assert_true(matches("not_literal_or", "web01", "host=web02"));
    assert_false(matches("not_literal_or", "web01|web02", "host=web02"));
    assert_true(matches("not_literal_or", "web01", "host=WEB01"));
    assert_false(matches("not_literal_or", "web01", "dc=x"));      /* key must exist */
}
static void not_iliteral_or_excludes_ignoring_case(void **st)
{
    assert_false(matches("not_iliteral_or", "web01", "host=WEB01"));
    assert_true(matches("not_iliteral_or", "web01", "host=web02"));
}
static void wildcard_globs_case_sensitively(void **st)
{
    assert_true(matches("wildcard", "web*", "host=web01"));
    assert_false(matches("wildcard", "web*", "host=WEB01"));
    assert_true(matches("wildcard", "*.example.com", "host=a.example.com"));
    assert_false(matches("wildcard", "*.example.com", "host=a.example.org"));
    assert_true(matches("wildcard", "web*.example*", "host=web1.example.com"));
    assert_true(matches("wildcard", "*", "host=anything"));
    assert_false(matches("wildcard", "*", "dc=x"));
}
static void iwildcard_globs_ignoring_case(void **st)
{
    assert_true(matches("iwildcard", "WEB*", "host=web01"));
    assert_false(matches("iwildcard", "db*", "host=web01"));
    char longv[700] = "host=";                  /* long values are not truncated */
    memset(longv + 5, 'a', 600);
    strcpy(longv + 605, "WEB");
    assert_true(matches("iwildcard", "*web", longv));
    assert_false(matches("iwildcard", "*weba", longv));
    assert_true(matches("iliteral_or", longv + 5, longv));
}
static void regexp_finds_a_match_anywhere(void **st)
{
    assert_true(matches("regexp", "^web[0-9]+$", "host=web42"));
    assert_false(matches("regexp", "^web[0-9]+$", "host=web4x"));
    assert_true(matches("regexp", "eb4", "host=web42"));           /* find(), not matches() */
}
static void not_key_rejects_series_with_the_key(void **st)
{
    assert_true(matches("not_key", "", "dc=x"));
    assert_false(matches("not_key", "", "dc=x,host=a"));
}

static void bad_filters_are_400s(void **st)
{
    const char *cases[][2] = {
        { "{\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"web\"}", "Filter must contain an asterisk" },
        { "{\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":\"(\"}", "Invalid regular expression" },
        { "{\"type\":\"nope\",\"tagk\":\"host\",\"filter\":\"x\"}", "Could not find a filter plugin of type: nope" },
        { "{\"type\":\"not_key\",\"tagk\":\"host\",\"filter\":\"x\"}", "The filter must be empty" },
        { "{\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"\"}", "Filter cannot be null or empty" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[512];
        snprintf(body, sizeof body, "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
                 "\"filters\":[%s]}]}", cases[i][0]);
        assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), -1);
        assert_int_equal(e.code, 400);
        if (!strstr(e.message, cases[i][1]))
            fail_msg("case %zu: message '%s'", i, e.message);
    }
}

/* ----------------------------------------------------------------- time */

static void times_parse_like_opentsdb(void **st)
{
    int64_t t, now = 1700000000000LL;
    assert_int_equal(tsq_parse_time("now", now, &t), 0);            assert_true(t == now);
    assert_int_equal(tsq_parse_time("1h-ago", now, &t), 0);         assert_true(t == now - 3600000);
    assert_int_equal(tsq_parse_time("30s-ago", now, &t), 0);        assert_true(t == now - 30000);
    assert_int_equal(tsq_parse_time("2w-ago", now, &t), 0);         assert_true(t == now - 14 * 86400000LL);
    assert_int_equal(tsq_parse_time("1n-ago", now, &t), 0);         assert_true(t == now - 30 * 86400000LL);
    assert_int_equal(tsq_parse_time("1y-ago", now, &t), 0);         assert_true(t == now - 365 * 86400000LL);
    assert_int_equal(tsq_parse_time("500ms-ago", now, &t), 0);      assert_true(t == now - 500);
    /* up to 10 digits: seconds; more: milliseconds */
    assert_int_equal(tsq_parse_time("1700000000", now, &t), 0);     assert_true(t == 1700000000000LL);
    assert_int_equal(tsq_parse_time("1700000000123", now, &t), 0);  assert_true(t == 1700000000123LL);
    assert_int_equal(tsq_parse_time("1700000000.5", now, &t), 0);   assert_true(t == 1700000000500LL);
    assert_int_equal(tsq_parse_time("1700000000.123", now, &t), 0); assert_true(t == 1700000000123LL);
    assert_int_equal(tsq_parse_time("42", now, &t), 0);             assert_true(t == 42000);
    /* absolute dates in the server's zone (UTC here): 2023/11/14-22:13:20 = 1700000000 */
    setenv("TZ", "UTC", 1);
    tzset();
    assert_int_equal(tsq_parse_time("2023/11/14-22:13:20", now, &t), 0); assert_true(t == 1700000000000LL);
    assert_int_equal(tsq_parse_time("2023/11/14 22:13:20", now, &t), 0); assert_true(t == 1700000000000LL);
    assert_int_equal(tsq_parse_time("2023/11/14-22:13", now, &t), 0);    assert_true(t == 1699999980000LL);
    assert_int_equal(tsq_parse_time("2023/11/14", now, &t), 0);          assert_true(t == 1699920000000LL);
    /* rejected */
    assert_int_equal(tsq_parse_time("", now, &t), -1);
    assert_int_equal(tsq_parse_time("yesterday", now, &t), -1);
    assert_int_equal(tsq_parse_time("-5", now, &t), -1);
    assert_int_equal(tsq_parse_time("1h", now, &t), -1);
    assert_int_equal(tsq_parse_time("0h-ago", now, &t), -1);
    assert_int_equal(tsq_parse_time("1x-ago", now, &t), -1);
    assert_int_equal(tsq_parse_time("2023/13/01", now, &t), -1);
    assert_int_equal(tsq_parse_time("1700000000.1234", now, &t), -1);
}

static void a_missing_end_means_now(void **st)
{
    const char *body = "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\"}]}";
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), 0);
    assert_true(q.start_ms == B - 3600000 && q.end_ms == B);
}

/* --------------------------------------------------------------- errors */

static void expect_error(const char *body, int code, const char *message)
{
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), -1);
    assert_int_equal(e.code, code);
    if (strcmp(e.message, message) != 0)
        fail_msg("message '%s', want '%s'", e.message, message);
}

static void end_before_start_is_a_400(void **st)
{
    expect_error("{\"start\":1700000100,\"end\":1700000000,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\"}]}",
                 400, "End time [1700000000000] must be greater than the start time [1700000100000]");
    expect_error("{\"start\":1700000000,\"end\":1700000000,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\"}]}",
                 400, "End time [1700000000000] must be greater than the start time [1700000000000]");
}

static void bad_aggregator_is_a_400(void **st)
{
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"average\"}]}",
                 400, "No such aggregation function: average");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\"}]}", 400, "Missing the aggregation function");
}

static void bad_downsample_is_a_400(void **st)
{
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\",\"downsample\":\"10s\"}]}",
                 400, "Invalid downsampling specifier '10s': must provide at least interval and function");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\",\"downsample\":\"10s-foo\"}]}",
                 400, "No such downsampling function: foo");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\",\"downsample\":\"10x-avg\"}]}",
                 400, "Invalid duration (suffix): 10x");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\",\"downsample\":\"10s-none\"}]}",
                 400, "cannot use the NONE aggregator for downsampling");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\",\"downsample\":\"10s-avg-foo\"}]}",
                 400, "Unrecognized fill policy: foo");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\",\"downsample\":\"10s-avg-zero-x\"}]}",
                 400, "Invalid downsampling specifier '10s-avg-zero-x': must consist of interval, function, and optional fill policy");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\",\"downsample\":\"0s-avg\"}]}",
                 400, "Zero or negative duration: 0s");
}

/* a fill over a long range is bounded: beyond the guard's max_points, a 413 */
static void too_many_points_is_a_413(void **st)
{
    gap_series();
    test_max_points = 1000;
    /* 1s buckets over an hour-aligned scan of [B, B+2h] = 3 h: 10800 > 1000 */
    int rc = run1(7200, "\"aggregator\":\"sum\",\"downsample\":\"1s-avg-zero\"");
    test_max_points = 0;
    assert_int_equal(rc, -1);
    assert_int_equal(e.code, 413);
    teardown(NULL); gap_series();
    assert_int_equal(run1(7200, "\"aggregator\":\"sum\",\"downsample\":\"1s-avg-zero\""), 0);
    assert_int_equal(r.v[0].n, 7201);
}

static void malformed_requests_are_400s(void **st)
{
    expect_error("{\"start\":", 400, "Unable to parse the given JSON");
    expect_error("[1,2]", 400, "Unable to parse the given JSON");
    expect_error("{\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\"}]}", 400, "Missing start time");
    expect_error("{\"start\":\"1h-ago\"}", 400, "Missing queries");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[]}", 400, "Missing queries");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"aggregator\":\"sum\"}]}", 400,
                 "Missing the metric or tsuids, provide at least one");
    expect_error("{\"start\":\"1h-ago\",\"queries\":[{\"aggregator\":\"sum\",\"tsuids\":[\"000001\"]}]}", 400,
                 "tsuid queries are not supported: give the metric and filters");
    expect_error("{\"start\":\"soon\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\"}]}", 400,
                 "Invalid time: soon. For input string: \"soon\"");
    assert_int_equal(tsq_parse_json("", 0, B, &q, &e), -1);
    assert_int_equal(e.code, 400);
}

static void error_bodies_are_opentsdbs(void **st)
{
    tsq_error err = { .code = 400 };
    snprintf(err.message, sizeof err.message, "No such name for 'metrics': 'foo'");
    size_t len;
    char *j = tsq_error_json(&err, &len);
    assert_string_equal(j, "{\"error\":{\"code\":400,\"message\":\"No such name for 'metrics': 'foo'\"}}");
    free(j);
    snprintf(err.details, sizeof err.details, "a \"quoted\"\nline");
    j = tsq_error_json(&err, &len);
    assert_string_equal(j, "{\"error\":{\"code\":400,\"message\":\"No such name for 'metrics': 'foo'\","
                           "\"details\":\"a \\\"quoted\\\"\\u000aline\"}}");
    free(j);
}

/* ---------------------------------------------------------- GET m= form */

typedef struct params { const char *k[8], *v[8]; int n; } params;

static const char *param(void *arg, const char *name, int i)
{
    params *p = arg;
    for (int j = 0; j < p->n; j++)
        if (!strcmp(p->k[j], name) && i-- == 0)
            return p->v[j];
    return NULL;
}

static void m_form_parses_every_part(void **st)
{
    params p = { { "start", "m", "end", "ms", "show_query", "arrays" },
                 { "1h-ago", "sum:10s-avg:rate{counter,,1000}:metric{host=*}{filt=wildcard(x*)}",
                   "30m-ago", "", "true", "true" }, 6 };
    assert_int_equal(tsq_parse_get(param, &p, B, &q, &e), 0);
    assert_true(q.start_ms == B - 3600000 && q.end_ms == B - 1800000);
    assert_true(q.ms_resolution && q.show_query && q.arrays);
    assert_int_equal(q.nsubs, 1);
    tsq_sub *s = &q.subs[0];
    assert_string_equal(s->aggregator, "sum");
    assert_string_equal(s->metric, "metric");
    assert_true(s->ds.interval_ms == 10000 && !s->ds.all && s->ds.fill == TSQ_FILL_NONE);
    assert_string_equal(s->ds.agg, "avg");
    assert_true(s->rate && s->rate_opt.counter && !s->rate_opt.drop_resets);
    assert_true(s->rate_opt.counter_max == 9223372036854775807.0);
    assert_true(s->rate_opt.reset_value == 1000);
    assert_int_equal(s->nfilters, 2);
    int gb = -1, fl = -1;
    for (int i = 0; i < 2; i++)
        if (!strcmp(s->filters[i].tagk, "host")) gb = i; else fl = i;
    assert_true(gb >= 0 && fl >= 0);
    assert_int_equal(s->filters[gb].type, TSQ_WILDCARD);
    assert_string_equal(s->filters[gb].filter, "*");
    assert_true(s->filters[gb].group_by);
    assert_int_equal(s->filters[fl].type, TSQ_WILDCARD);
    assert_string_equal(s->filters[fl].filter, "x*");
    assert_false(s->filters[fl].group_by);
    assert_non_null(s->echo_json);
    assert_non_null(strstr(s->echo_json, "\"index\":0"));
}

static void m_form_literals_counters_and_errors(void **st)
{
    params p = { { "start", "m", "m" }, { "1h-ago", "max:rate{dropcounter,100}:m{host=a|b}",
                                          "avg:m{dc=x}{host=web*}" }, 3 };
    assert_int_equal(tsq_parse_get(param, &p, B, &q, &e), 0);
    assert_int_equal(q.nsubs, 2);
    assert_true(q.subs[0].rate_opt.counter && q.subs[0].rate_opt.drop_resets);
    assert_true(q.subs[0].rate_opt.counter_max == 100);
    assert_int_equal(q.subs[0].filters[0].type, TSQ_LITERAL_OR);
    assert_string_equal(q.subs[0].filters[0].filter, "a|b");
    assert_true(q.subs[0].filters[0].group_by);
    assert_int_equal(q.subs[1].index, 1);
    int i = strcmp(q.subs[1].filters[0].tagk, "host") == 0 ? 0 : 1;
    assert_int_equal(q.subs[1].filters[i].type, TSQ_IWILDCARD);  /* web* shortcut */
    assert_false(q.subs[1].filters[i].group_by);
    tsq_query_free(&q);

    params bad[] = {
        { { "m" }, { "sum:m" }, 1 },
        { { "start" }, { "1h-ago" }, 1 },
        { { "start", "m" }, { "1h-ago", "m" }, 2 },
        { { "start", "m" }, { "1h-ago", "sum:1:2:3:4:m" }, 2 },
        { { "start", "m" }, { "1h-ago", "sum:m{host=a" }, 2 },
        { { "start", "m" }, { "1h-ago", "sum:rate{counter,x}:m" }, 2 },
        { { "start", "m" }, { "1h-ago", "foo:m" }, 2 },
    };
    const char *msg[] = {
        "Missing parameter <code>start</code>", "Missing sub queries",
        "Invalid parameter m=m (not enough :-separated parts)",
        "Invalid parameter m=sum:1:2:3:4:m (too many :-separated parts)",
        "Missing '}' at the end of: m{host=a",
        "Max value of counter was not a number, received 'x'",
        "No such aggregation function: foo",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(tsq_parse_get(param, &bad[k], B, &q, &e), -1);
        assert_int_equal(e.code, 400);
        if (strcmp(e.message, msg[k]))
            fail_msg("case %zu: '%s'", k, e.message);
    }
}

/* ------------------------------------------------------- JSON answers */

/* Grafana's browser path: ms times, msResolution, showQuery, one query per
 * target, matched by query.index */
static void grafana_browser_request(void **st)
{
    add_series(&set, "kickstart.rss", "host=n1,job=1", (int64_t[]){ S(1), S(11) }, (double[]){ 1.5e6, 1.6e6 }, 2);
    add_series(&set, "kickstart.rss", "host=n1,job=2", (int64_t[]){ S(2), S(12) }, (double[]){ 2e6, 2e6 }, 2);
    add_series(&set, "cpu", "host=n1", (int64_t[]){ S(3) }, (double[]){ 0.25 }, 1);
    char body[1024];
    snprintf(body, sizeof body,
             "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"cpu\",\"aggregator\":\"avg\","
             "\"downsample\":\"10s-avg\",\"rate\":false,\"filters\":[],\"explicitTags\":false},"
             "{\"metric\":\"kickstart.rss\",\"aggregator\":\"sum\",\"downsample\":\"10s-avg\",\"rate\":false,"
             "\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"*\",\"groupBy\":true}],"
             "\"explicitTags\":false}],\"msResolution\":true,\"globalAnnotations\":true,\"showQuery\":true}",
             B, S(300));
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    char *j = answer();
    json_error_t je;
    json_t *a = json_loads(j, 0, &je);
    assert_non_null(a);
    assert_int_equal(json_array_size(a), 2);
    json_t *rss = json_array_get(a, 1);
    assert_string_equal(json_string_value(json_object_get(rss, "metric")), "kickstart.rss");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rss, "query"), "index")), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(rss, "tags"), "host")), "n1");
    assert_string_equal(json_string_value(json_array_get(json_object_get(rss, "aggregateTags"), 0)), "job");
    /* ms keys; 10s buckets: 1.5e6+2e6, 1.6e6+2e6 */
    json_t *dps = json_object_get(rss, "dps");
    assert_int_equal(json_object_size(dps), 2);
    assert_true(json_number_value(json_object_get(dps, "1699999200000")) == 3.5e6);
    assert_true(json_number_value(json_object_get(dps, "1699999210000")) == 3.6e6);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(a, 0), "query"), "index")), 0);
    json_decref(a);
    free(j);
}

/* Grafana's server path: seconds, no flags, ?arrays=true; strict decoding:
 * integer-second keys, string tag values, no "NaN" */
static void grafana_server_request(void **st)
{
    add_series(&set, "m", "gpu=0,host=n1", (int64_t[]){ S(1), S(2) + 500, S(3) }, (double[]){ 1, 2, 3 }, 3);
    char body[512];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
             "\"downsample\":\"1s-avg\"}]}", B_S, B_S + 60);
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    char *j = answer();
    assert_string_equal(j, "[{\"metric\":\"m\",\"tags\":{\"gpu\":\"0\",\"host\":\"n1\"},\"aggregateTags\":[],"
                           "\"dps\":{\"1699999201\":1,\"1699999202\":2,\"1699999203\":3}}]");
    free(j);
    q.arrays = 1;
    j = answer();
    assert_string_equal(j, "[{\"metric\":\"m\",\"tags\":{\"gpu\":\"0\",\"host\":\"n1\"},\"aggregateTags\":[],"
                           "\"dps\":[[1699999201,1],[1699999202,2],[1699999203,3]]}]");
    free(j);
}

/* without msResolution, points within one second share a key: the last is
 * written (what any JSON reader would keep of repeated keys) */
static void seconds_keys_are_unique(void **st)
{
    add_series(&set, "m", "host=a", (int64_t[]){ S(1), S(1) + 400, S(2) }, (double[]){ 1, 2.25, 3 }, 3);
    assert_int_equal(run1(60, "\"aggregator\":\"sum\""), 0);
    char *j = answer();
    assert_non_null(strstr(j, "\"dps\":{\"1699999201\":2.25,\"1699999202\":3}"));
    free(j);
    q.ms_resolution = 1;
    j = answer();
    assert_non_null(strstr(j, "\"dps\":{\"1699999201000\":1,\"1699999201400\":2.25,\"1699999202000\":3}"));
    free(j);
}

static void numbers_are_written_exactly(void **st)
{
    const double v[] = { 0.1, 1e20, -3, 1.0 / 3, 1.1, 123.456, -0.001, 1e-7, 0.30000000000000004, 2.5e15,
                         -1234567.125, 5e-324, 1.7976931348623157e308, 1e15 - 0.5 };
    const char *want[] = { "0.1", "1e+20", "-3", "0.333333333333333", "1.1", "123.456", "-0.001", "1e-07",
                           "0.30000000000000004", "2.5e+15", "-1234567.125", "4.94065645841247e-324",
                           "1.7976931348623157e+308", "999999999999999.5" };
    int64_t t[14];
    for (int i = 0; i < 14; i++)
        t[i] = S(i + 1);
    add_series(&set, "m", "host=a", t, v, 14);
    assert_int_equal(run1(60, "\"aggregator\":\"sum\""), 0);
    char *j = answer();
    json_t *a = json_loads(j, 0, NULL);
    json_t *dps = json_object_get(json_array_get(a, 0), "dps");
    for (int i = 0; i < 14; i++) {
        char key[16], frag[64];
        snprintf(key, sizeof key, "%lld", B_S + i + 1);
        if (json_number_value(json_object_get(dps, key)) != v[i])
            fail_msg("%s: %.17g read back as %.17g", key, v[i], json_number_value(json_object_get(dps, key)));
        snprintf(frag, sizeof frag, "\"%s\":%s", key, want[i]);
        if (i != 3 && !strstr(j, frag))         /* 1/3 needs 16 digits; only round-trips */
            fail_msg("missing %s in %s", frag, j);
    }
    json_decref(a);
    free(j);
}

static void raw_series_round_trip_between_peers(void **st)
{
    add_series(&set, "m", "host=a,job=x\"y\\z\u00e9\n", (int64_t[]){ S(1), S(2), S(4) }, (double[]){ 0.1, -7, NAN }, 3);
    add_series(&set, "n", "", (int64_t[]){ S(3) }, (double[]){ 1e-300 }, 1);
    size_t len;
    char *j = tsq_set_json(&set, &len);
    /* timestamps as the first and then differences */
    assert_non_null(strstr(j, "\"dt\":[1699999201000,1000,2000],\"v\":[0.1,-7,null]"));
    tsq_set back = { 0 };
    assert_int_equal(tsq_set_parse(j, len, &back), 0);
    assert_int_equal(back.n, 2);
    assert_string_equal(back.v[0].metric, "m");
    assert_int_equal(back.v[0].ntags, 2);
    assert_string_equal(back.v[0].tags[1].key, "job");
    assert_string_equal(back.v[0].tags[1].value, "x\"y\\z\u00e9\n");
    assert_int_equal(back.v[0].pts.n, 3);
    assert_true(back.v[0].pts.ts[2] == S(4) && back.v[0].pts.val[0] == 0.1 && back.v[0].pts.val[1] == -7);
    assert_true(isnan(back.v[0].pts.val[2]));
    assert_true(back.v[1].pts.val[0] == 1e-300 && back.v[1].ntags == 0);
    tsq_set_free(&back);
    free(j);
    /* \u escapes, surrogate pairs, whitespace */
    const char *u = " { \"series\" : [ { \"v\":[1.5e3] , \"dt\":[5], \"tags\":{\"k\":\"\\u00e9\\ud83d\\ude00\"},"
                    "\"metric\":\"a\\/b\"} ] } ";
    assert_int_equal(tsq_set_parse(u, strlen(u), &back), 0);
    assert_string_equal(back.v[0].metric, "a/b");
    assert_string_equal(back.v[0].tags[0].value, "\u00e9\U0001F600");
    assert_true(back.v[0].pts.ts[0] == 5 && back.v[0].pts.val[0] == 1500);
    tsq_set_free(&back);
    const char *bad[] = {
        "{\"series\":[{\"metric\":1}]}", "nope", "{\"series\":[]} x",
        "{\"series\":[{\"metric\":\"m\",\"tags\":{},\"dt\":[1,0],\"v\":[1,2]}]}",       /* not increasing */
        "{\"series\":[{\"metric\":\"m\",\"tags\":{},\"dt\":[1,1],\"v\":[1]}]}",         /* lengths differ */
        "{\"series\":[{\"metric\":\"m\",\"tags\":{\"a\":1},\"dt\":[],\"v\":[]}]}",
        "{\"series\":[{\"metric\":\"m\",\"tags\":{\"a\":\"\\u0000\"},\"dt\":[],\"v\":[]}]}",
        "{\"series\":[{\"metric\":\"m\",\"tags\":{\"a\":\"x\",\"a\":\"y\"},\"dt\":[],\"v\":[]}]}",
        "{\"series\":[{\"metric\":\"m\",\"tags\":{},\"dt\":[1],\"v\":[1e999]}]}",
        "{\"series\":[{\"metric\":\"m\",\"tags\":{},\"dt\":[1],\"v\":[1],\"x\":2}]}",
        "{\"series\":[{\"metric\":\"m\",\"tags\":{},\"dt\":[1],\"v\":[1]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (tsq_set_parse(bad[i], strlen(bad[i]), &back) != -1)
            fail_msg("accepted %s", bad[i]);
        tsq_set_free(&back);
    }
    /* every prefix of a valid answer is rejected, never read past its end */
    for (size_t cut = 0; cut < len - 1; cut++) {
        j = tsq_set_json(&set, &len);
        char *part = malloc(cut ? cut : 1);
        memcpy(part, j, cut);
        assert_int_equal(tsq_set_parse(part, cut, &back), -1);
        tsq_set_free(&back);
        free(part);
        free(j);
    }
}

/* a group spanning two nodes' sets is aggregated once */
static void sets_from_peers_merge_before_aggregation(void **st)
{
    tsq_set peer = { 0 };
    add_series(&set, "m", "host=n1", (int64_t[]){ S(0), S(20) }, (double[]){ 10, 30 }, 2);
    add_series(&peer, "m", "host=n2", (int64_t[]){ S(10) }, (double[]){ 100 }, 1);
    size_t len;
    char *j = tsq_set_json(&peer, &len);
    assert_int_equal(tsq_set_parse(j, len, &set), 0);
    free(j);
    tsq_set_free(&peer);
    assert_int_equal(run1(60, "\"aggregator\":\"avg\""), 0);
    assert_int_equal(r.n, 1);
    /* 0: 10; 10: n1 lerp 20 and n2 100 → 60; 20: 30 */
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(10), S(20) }), ((double[]){ 10, 60, 30 }));
}

/* the same series on two nodes is one series, not two to add up: its
 * points merge, a timestamp in both keeping the later set's value */
static void one_series_from_two_nodes_is_merged(void **st)
{
    add_series(&set, "m", "host=a", (int64_t[]){ S(0), S(10) }, (double[]){ 1, 2 }, 2);
    add_series(&set, "m", "host=b", (int64_t[]){ S(0) }, (double[]){ 100 }, 1);
    add_series(&set, "m", "host=a", (int64_t[]){ S(10), S(20) }, (double[]){ 5, 3 }, 2);
    assert_int_equal(run1(60, "\"aggregator\":\"none\""), 0);
    assert_int_equal(r.n, 2);
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(10), S(20) }), ((double[]){ 1, 5, 3 }));
    expect_points(&r.v[1], ((int64_t[]){ S(0) }), ((double[]){ 100 }));
}

/* Mutated requests (bytes flipped, cut, duplicated) never crash or hang:
 * each is either a 400/413 or a query that evaluates and serialises. */
static void parsers_survive_mutated_requests(void **st)
{
    const char *seeds[] = {
        "{\"start\":1699999200,\"end\":1699999260,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
        "\"downsample\":\"10s-avg-nan\",\"rate\":true,\"rateOptions\":{\"counter\":true,\"counterMax\":100,"
        "\"resetValue\":5},\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"*\","
        "\"groupBy\":true},{\"type\":\"regexp\",\"tagk\":\"dc\",\"filter\":\"^x\"}]}],\"showQuery\":true}",
        "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"p99\",\"downsample\":\"0all-dev\","
        "\"tags\":{\"host\":\"a|b\",\"dc\":\"literal_or(x)\"},\"explicitTags\":true}],\"msResolution\":true}",
    };
    add_series(&set, "m", "dc=x,host=a", (int64_t[]){ S(0), S(10), S(20) }, (double[]){ 1, 0.5, 7 }, 3);
    add_series(&set, "m", "dc=x,host=b", (int64_t[]){ S(5), S(15) }, (double[]){ 3, 9 }, 2);
    unsigned seed = 12345;
    for (int it = 0; it < 5000; it++) {
        const char *src = seeds[it % 2];
        size_t n = strlen(src);
        char buf[1024];
        memcpy(buf, src, n);
        int edits = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 4;
        for (int k = 0; k < edits; k++) {
            seed = seed * 1103515245 + 12345;
            size_t at = (seed >> 8) % n;
            switch ((seed >> 4) % 3) {
            case 0: {
                static const char alphabet[] = " {}[]\":,-0123456789aznx*|()";
                buf[at] = alphabet[(seed >> 12) % (sizeof alphabet - 1)];
                break;
            }
            case 1: n = at + 1; break;
            case 2: if (n + 8 < sizeof buf) { memmove(buf + at + 8, buf + at, n - at); n += 8; } break;
            }
        }
        memset(&r, 0, sizeof r);
        if (tsq_parse_json(buf, n, B + 60000, &q, &e) < 0) {
            assert_true(e.code == 400 || e.code == 413);
            continue;
        }
        for (int i = 0; i < q.nsubs; i++)
            if (tsq_eval(&q, &q.subs[i], &set, &r, &e) < 0)
                assert_true(e.code == 400 || e.code == 413);
        size_t len;
        free(tsq_result_json(&q, &r, &len));
        tsq_result_free(&r);
        tsq_query_free(&q);
    }
}

static void config_filters_lists_every_type(void **st)
{
    size_t len;
    char *j = tsq_config_filters_json(&len);
    json_t *o = json_loads(j, 0, NULL);
    assert_int_equal(json_object_size(o), 8);
    const char *types[] = { "literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or",
                            "wildcard", "iwildcard", "regexp", "not_key" };
    for (int i = 0; i < 8; i++) {
        json_t *t = json_object_get(o, types[i]);
        assert_non_null(t);
        assert_true(json_is_string(json_object_get(t, "examples")));
        assert_true(json_is_string(json_object_get(t, "description")));
    }
    json_decref(o);
    free(j);
}

#define T(f) cmocka_unit_test_teardown(f, teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(downsample_avg_uses_epoch_aligned_buckets), T(downsample_sum_count_max_first_last),
        T(downsample_returns_buckets_inside_the_range),
        T(fill_none_omits_empty_buckets), T(fill_zero_writes_zero), T(fill_nan_is_serialised_as_the_string_nan),
        T(fill_null_is_serialised_as_null), T(fill_nan_survives_aggregation_only_where_all_are_empty),
        T(zero_all_is_one_bucket_over_the_range), T(downsampling_happens_before_aggregation),
        T(series_already_downsampled_answer_as_any_other),
        T(rate_is_per_second_and_the_first_point_yields_none), T(rate_counter_wraps_at_counter_max),
        T(rate_counter_default_max_is_long_max), T(rate_above_reset_value_becomes_zero),
        T(rate_drop_resets_skips_the_reset), T(rate_without_counter_ignores_reset_value),
        T(rate_options_as_grafana_sends_them),
        T(rate_comes_after_downsampling), T(rate_comes_before_aggregation), T(rate_uses_the_point_before_start),
        T(group_by_splits_and_reports_aggregate_tags), T(without_group_by_everything_is_one_series),
        T(a_plain_filter_does_not_group), T(tags_map_becomes_group_by_filters),
        T(explicit_tags_require_exactly_the_filtered_keys), T(series_outside_the_range),
        T(literal_or_matches_listed_values_case_sensitively), T(iliteral_or_ignores_case),
        T(not_literal_or_excludes_listed_values), T(not_iliteral_or_excludes_ignoring_case),
        T(wildcard_globs_case_sensitively), T(iwildcard_globs_ignoring_case),
        T(regexp_finds_a_match_anywhere), T(not_key_rejects_series_with_the_key), T(bad_filters_are_400s),
        T(times_parse_like_opentsdb), T(a_missing_end_means_now),
        T(end_before_start_is_a_400), T(bad_aggregator_is_a_400), T(bad_downsample_is_a_400),
        T(too_many_points_is_a_413), T(malformed_requests_are_400s), T(error_bodies_are_opentsdbs),
        T(m_form_parses_every_part), T(m_form_literals_counters_and_errors),
        T(grafana_browser_request), T(grafana_server_request), T(seconds_keys_are_unique),
        T(numbers_are_written_exactly), T(raw_series_round_trip_between_peers),
        T(sets_from_peers_merge_before_aggregation), T(one_series_from_two_nodes_is_merged),
        T(parsers_survive_mutated_requests), T(config_filters_lists_every_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
