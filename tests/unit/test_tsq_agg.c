/* The 2.4 aggregators across series, each against hand-computed answers:
 * one test per aggregator over three aligned series, percentiles over five
 * values, and the interpolation rule of each family over series whose
 * timestamps differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tsq_testlib.h"

/* Three series at B+0s, B+10s, B+20s:
 *   host=a: 1, 4, 9
 *   host=b: 2, 6, 3
 *   host=c: 7, 5, 5
 * Group order is by tags (a, b, c): first = a, last = c. */
static void three_series(tsq_set *set)
{
    const int64_t t[] = { S(0), S(10), S(20) };
    add_series(set, "m", "host=a", t, (double[]){ 1, 4, 9 }, 3);
    add_series(set, "m", "host=b", t, (double[]){ 2, 6, 3 }, 3);
    add_series(set, "m", "host=c", t, (double[]){ 7, 5, 5 }, 3);
}

static void check_agg(const char *agg, double v0, double v1, double v2)
{
    tsq_set set = { 0 };
    tsq_query q;
    tsq_result r;
    tsq_error e;
    char body[256];
    three_series(&set);
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
             "\"aggregator\":\"%s\"}]}", B, S(60), agg);
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    assert_int_equal(r.n, 1);
    const int64_t T[] = { S(0), S(10), S(20) };
    const double V[] = { v0, v1, v2 };
    expect_points(&r.v[0], T, V);
    tsq_result_free(&r);
    tsq_query_free(&q);
    tsq_set_free(&set);
}

/* 1+2+7=10, 4+6+5=15, 9+3+5=17 */
static void sum_adds(void **st)        { check_agg("sum", 10, 15, 17); }
static void zimsum_adds(void **st)     { check_agg("zimsum", 10, 15, 17); }
static void pfsum_adds(void **st)      { check_agg("pfsum", 10, 15, 17); }
static void min_takes_least(void **st) { check_agg("min", 1, 4, 3); }
static void max_takes_most(void **st)  { check_agg("max", 7, 6, 9); }
static void mimmin_takes_least(void **st) { check_agg("mimmin", 1, 4, 3); }
static void mimmax_takes_most(void **st)  { check_agg("mimmax", 7, 6, 9); }
/* 10/3, 15/3, 17/3 */
static void avg_means(void **st)       { check_agg("avg", 10.0 / 3, 5, 17.0 / 3); }
/* sorted [1,2,7] [4,5,6] [3,5,9], element n/2 = 1 */
static void median_takes_middle(void **st) { check_agg("median", 2, 5, 5); }
/* 1*2*7=14, 4*6*5=120, 9*3*5=135 */
static void mult_multiplies(void **st) { check_agg("mult", 14, 120, 135); }
/* population deviation: mean 10/3 → ((7/3)²+(4/3)²+(11/3)²)/3 = 62/9;
 * mean 5 → (1+1+0)/3 = 2/3; mean 17/3 → ((10/3)²+(8/3)²+(2/3)²)/3 = 56/9 */
static void dev_is_population_deviation(void **st) { check_agg("dev", sqrt(62.0 / 9), sqrt(2.0 / 3), sqrt(56.0 / 9)); }
/* last series minus first: 7-1, 5-4, 5-9 */
static void diff_is_last_minus_first(void **st) { check_agg("diff", 6, 1, -4); }
static void count_counts_series(void **st) { check_agg("count", 3, 3, 3); }
static void first_takes_first_series(void **st) { check_agg("first", 1, 4, 9); }
static void last_takes_last_series(void **st) { check_agg("last", 7, 5, 5); }
/* 1+4+49=54, 16+36+25=77, 81+9+25=115 */
static void squaresum_adds_squares(void **st) { check_agg("squareSum", 54, 77, 115); }
/* legacy estimate, n=3: p50 pos=0.5*4=2 → sorted[1]; p75 pos=3 >= n → max */
static void p50_legacy(void **st)  { check_agg("p50", 2, 5, 5); }
static void p75_legacy(void **st)  { check_agg("p75", 7, 6, 9); }
static void p90_legacy(void **st)  { check_agg("p90", 7, 6, 9); }
static void p95_legacy(void **st)  { check_agg("p95", 7, 6, 9); }
static void p99_legacy(void **st)  { check_agg("p99", 7, 6, 9); }
static void p999_legacy(void **st) { check_agg("p999", 7, 6, 9); }
/* R-3, n=3: pos = rint(3p): 50→rint(1.5)=2, 75→rint(2.25)=2 → sorted[1];
 * 90→rint(2.7)=3 >= n → max */
static void ep50r3_(void **st)  { check_agg("ep50r3", 2, 5, 5); }
static void ep75r3_(void **st)  { check_agg("ep75r3", 2, 5, 5); }
static void ep90r3_(void **st)  { check_agg("ep90r3", 7, 6, 9); }
static void ep95r3_(void **st)  { check_agg("ep95r3", 7, 6, 9); }
static void ep99r3_(void **st)  { check_agg("ep99r3", 7, 6, 9); }
static void ep999r3_(void **st) { check_agg("ep999r3", 7, 6, 9); }
/* R-7, n=3: pos = 1 + 2p; 50 → 2 → sorted[1]; 75 → 2.5 → s1 + .5(s2-s1):
 * 2+.5*5=4.5, 5+.5*1=5.5, 5+.5*4=7; 90 → 2.8: 2+.8*5=6, 5+.8=5.8, 5+.8*4=8.2;
 * 95 → 2.9: 2+4.5=6.5, 5.9, 8.6; 99 → 2.98: 6.9, 5.98, 8.92;
 * 999 → 2.998: 6.99, 5.998, 8.992 */
static void ep50r7_(void **st)  { check_agg("ep50r7", 2, 5, 5); }
static void ep75r7_(void **st)  { check_agg("ep75r7", 4.5, 5.5, 7); }
static void ep90r7_(void **st)  { check_agg("ep90r7", 6, 5.8, 8.2); }
static void ep95r7_(void **st)  { check_agg("ep95r7", 6.5, 5.9, 8.6); }
static void ep99r7_(void **st)  { check_agg("ep99r7", 6.9, 5.98, 8.92); }
static void ep999r7_(void **st) { check_agg("ep999r7", 6.99, 5.998, 8.992); }

static void none_returns_every_series_unaggregated(void **st)
{
    tsq_set set = { 0 };
    tsq_query q;
    tsq_result r;
    tsq_error e;
    three_series(&set);
    char body[256];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
             "\"aggregator\":\"none\"}]}", B, S(60));
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    assert_int_equal(r.n, 3);
    const int64_t T[] = { S(0), S(10), S(20) };
    const double A[] = { 1, 4, 9 }, Bv[] = { 2, 6, 3 }, C[] = { 7, 5, 5 };
    expect_points(&r.v[0], T, A);
    expect_points(&r.v[1], T, Bv);
    expect_points(&r.v[2], T, C);
    assert_string_equal(out_tag(&r.v[1], "host"), "b");
    assert_int_equal(r.v[1].naggregate_tags, 0);
    tsq_result_free(&r);
    tsq_query_free(&q);
    tsq_set_free(&set);
}

/* Five series with 15, 20, 35, 40, 50 at one timestamp. */
static double pct5(const char *agg)
{
    tsq_set set = { 0 };
    tsq_query q;
    tsq_result r;
    tsq_error e;
    const double v[] = { 40, 15, 50, 35, 20 };
    const int64_t t[] = { S(5) };
    for (int i = 0; i < 5; i++) {
        char tags[32];
        snprintf(tags, sizeof tags, "host=h%d", i);
        add_series(&set, "m", tags, t, &v[i], 1);
    }
    char body[256];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
             "\"aggregator\":\"%s\"}]}", B, S(60), agg);
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.v[0].n, 1);
    double out = r.v[0].val[0];
    tsq_result_free(&r);
    tsq_query_free(&q);
    tsq_set_free(&set);
    return out;
}

static void percentiles_over_five_values(void **st)
{
    /* sorted 15 20 35 40 50, n=5 */
    assert_true(near(pct5("median"), 35));   /* sorted[5/2] */
    assert_true(near(pct5("p50"), 35));      /* legacy pos .5*6=3 → sorted[2] */
    assert_true(near(pct5("p75"), 45));      /* 4.5 → 40 + .5*(50-40) */
    assert_true(near(pct5("p90"), 50));      /* 5.4 >= 5 → max */
    assert_true(near(pct5("ep50r3"), 20));   /* rint(2.5) = 2 (half to even) → sorted[1] */
    assert_true(near(pct5("ep75r3"), 40));   /* rint(3.75) = 4 → sorted[3] */
    assert_true(near(pct5("ep90r3"), 40));   /* rint(4.5) = 4 */
    assert_true(near(pct5("ep95r3"), 50));   /* rint(4.75) = 5 >= n */
    assert_true(near(pct5("ep50r7"), 35));   /* 1+4*.5 = 3 → sorted[2] */
    assert_true(near(pct5("ep75r7"), 40));   /* 1+4*.75 = 4 → sorted[3] */
    assert_true(near(pct5("ep90r7"), 46));   /* 4.6 → 40 + .6*10 */
    assert_true(near(pct5("ep99r7"), 49.6)); /* 4.96 → 40 + .96*10 */
    assert_true(near(pct5("ep999r7"), 49.96));
}

/* Two series whose timestamps differ:
 *   host=a: B+0s 10, B+20s 30
 *   host=b: B+10s 100, B+30s 300
 * Output timestamps are the union 0, 10, 20, 30; a is active on [0, 20],
 * b on [10, 30]. */
static void check_interp(const char *agg, const double V[4])
{
    tsq_set set = { 0 };
    tsq_query q;
    tsq_result r;
    tsq_error e;
    add_series(&set, "m", "host=a", (int64_t[]){ S(0), S(20) }, (double[]){ 10, 30 }, 2);
    add_series(&set, "m", "host=b", (int64_t[]){ S(10), S(30) }, (double[]){ 100, 300 }, 2);
    char body[256];
    snprintf(body, sizeof body, "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
             "\"aggregator\":\"%s\"}]}", B, S(60), agg);
    assert_int_equal(run_query(body, &set, &q, &r, &e), 0);
    assert_int_equal(r.n, 1);
    const int64_t T[] = { S(0), S(10), S(20), S(30) };
    double W[4];
    memcpy(W, V, sizeof W);
    expect_points(&r.v[0], T, W);
    tsq_result_free(&r);
    tsq_query_free(&q);
    tsq_set_free(&set);
}

/* a at 10s: 10 + (10-0)*(30-10)/(20-0) = 20; b at 20s: 100 + 10*200/20 = 200 */
static void sum_interpolates_linearly(void **st)
{
    check_interp("sum", (double[]){ 10, 20 + 100, 30 + 200, 300 });
}
static void avg_interpolates_linearly(void **st)
{
    check_interp("avg", (double[]){ 10, (20 + 100) / 2.0, (30 + 200) / 2.0, 300 });
}
static void min_interpolates_linearly(void **st)
{
    check_interp("min", (double[]){ 10, 20, 30, 300 });
}
/* ZIM: a series between its points counts 0 */
static void zimsum_counts_missing_as_zero(void **st)
{
    check_interp("zimsum", (double[]){ 10, 0 + 100, 30 + 0, 300 });
}
static void count_counts_active_series(void **st)
{
    check_interp("count", (double[]){ 1, 2, 2, 1 });
}
static void first_is_zero_when_first_series_is_between_points(void **st)
{
    check_interp("first", (double[]){ 10, 0, 30, 300 });
}
static void last_is_zero_when_last_series_is_between_points(void **st)
{
    check_interp("last", (double[]){ 10, 100, 0, 300 });
}
/* squares with missing = 0: 100, 0+10000, 900+0, 90000 */
static void squaresum_counts_missing_as_zero(void **st)
{
    check_interp("squareSum", (double[]){ 100, 10000, 900, 90000 });
}
/* a missing series is DBL_MAX for mimmin, 4.9e-324 for mimmax: ignored */
static void mimmin_ignores_missing_series(void **st)
{
    check_interp("mimmin", (double[]){ 10, 100, 30, 300 });
}
static void mimmax_ignores_missing_series(void **st)
{
    check_interp("mimmax", (double[]){ 10, 100, 30, 300 });
}
/* PREV: a at 10s keeps 10, b at 20s keeps 100 */
static void pfsum_reuses_previous_value(void **st)
{
    check_interp("pfsum", (double[]){ 10, 10 + 100, 30 + 100, 300 });
}

static void unknown_aggregator_names_are_rejected(void **st)
{
    tsq_query q;
    tsq_error e;
    const char *body = "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\",\"aggregator\":\"Sum\"}]}";
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), -1);
    assert_int_equal(e.code, 400);
    assert_string_equal(e.message, "No such aggregation function: Sum");
    int n = 0;
    while (tsq_aggregators[n])
        n++;
    assert_int_equal(n, 35);      /* 17 named + 6 pNN + 12 epNNrN */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sum_adds), cmocka_unit_test(zimsum_adds), cmocka_unit_test(pfsum_adds),
        cmocka_unit_test(min_takes_least), cmocka_unit_test(max_takes_most),
        cmocka_unit_test(mimmin_takes_least), cmocka_unit_test(mimmax_takes_most),
        cmocka_unit_test(avg_means), cmocka_unit_test(median_takes_middle),
        cmocka_unit_test(mult_multiplies), cmocka_unit_test(dev_is_population_deviation),
        cmocka_unit_test(diff_is_last_minus_first), cmocka_unit_test(count_counts_series),
        cmocka_unit_test(first_takes_first_series), cmocka_unit_test(last_takes_last_series),
        cmocka_unit_test(squaresum_adds_squares),
        cmocka_unit_test(p50_legacy), cmocka_unit_test(p75_legacy), cmocka_unit_test(p90_legacy),
        cmocka_unit_test(p95_legacy), cmocka_unit_test(p99_legacy), cmocka_unit_test(p999_legacy),
        cmocka_unit_test(ep50r3_), cmocka_unit_test(ep75r3_), cmocka_unit_test(ep90r3_),
        cmocka_unit_test(ep95r3_), cmocka_unit_test(ep99r3_), cmocka_unit_test(ep999r3_),
        cmocka_unit_test(ep50r7_), cmocka_unit_test(ep75r7_), cmocka_unit_test(ep90r7_),
        cmocka_unit_test(ep95r7_), cmocka_unit_test(ep99r7_), cmocka_unit_test(ep999r7_),
        cmocka_unit_test(none_returns_every_series_unaggregated),
        cmocka_unit_test(percentiles_over_five_values),
        cmocka_unit_test(sum_interpolates_linearly), cmocka_unit_test(avg_interpolates_linearly),
        cmocka_unit_test(min_interpolates_linearly), cmocka_unit_test(zimsum_counts_missing_as_zero),
        cmocka_unit_test(count_counts_active_series),
        cmocka_unit_test(first_is_zero_when_first_series_is_between_points),
        cmocka_unit_test(last_is_zero_when_last_series_is_between_points),
        cmocka_unit_test(squaresum_counts_missing_as_zero),
        cmocka_unit_test(mimmin_ignores_missing_series), cmocka_unit_test(mimmax_ignores_missing_series),
        cmocka_unit_test(pfsum_reuses_previous_value),
        cmocka_unit_test(unknown_aggregator_names_are_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
