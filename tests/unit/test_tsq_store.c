/* The query engine against a real store (src/store): tsq_fetch_local reads
 * only matching series over the scan range, tsq_run_local answers a whole
 * query, an unknown metric is OpenTSDB's 400, and /api/query/last and
 * /api/search/lookup (tsq_last, tsq_lookup) answer from the index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <unistd.h>

#include "tsq_testlib.h"
#include "store/store.h"

static char dir[256];
static store *st_;

static int setup(void **st)
{
    snprintf(dir, sizeof dir, "/tmp/jobscope-tsq-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char err[256];
    store_config c = {dir, 0, 0, 0, NULL, NULL};
    st_ = store_open(&c, err, sizeof err);
    assert_non_null(st_);
    /* m{host=a,dc=x}: B+0s..B+50s every 10 s: 0,1,2,3,4,5
     * m{host=b,dc=x}: same times: 10,20,...,60
     * m{host=c,dc=y}: B+5s 100
     * other{host=a}: B+0s 7 */
    store_point p[20];
    int n = 0;
    store_tag ta[] = { { "host", "a" }, { "dc", "x" } }, tb[] = { { "dc", "x" }, { "host", "b" } },
              tc[] = { { "host", "c" }, { "dc", "y" } }, to[] = { { "host", "a" } };
    for (int i = 0; i < 6; i++) {
        p[n++] = (store_point){ "m", ta, 2, S(i * 10), i };
        p[n++] = (store_point){ "m", tb, 2, S(i * 10), (i + 1) * 10 };
    }
    p[n++] = (store_point){ "m", tc, 2, S(5), 100 };
    p[n++] = (store_point){ "other", to, 1, S(0), 7 };
    assert_int_equal(store_put(st_, p, (size_t)n, err, sizeof err), 0);
    return 0;
}

static int teardown(void **st)
{
    store_close(st_);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static void fetch_reads_only_matching_series(void **st)
{
    tsq_query q;
    tsq_error e;
    tsq_set set = { 0 };
    const char *body = "{\"start\":1699999200,\"end\":1699999260,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
                       "\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"dc\",\"filter\":\"x\",\"groupBy\":false}]}]}";
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), 0);
    assert_int_equal(tsq_fetch_local(st_, &q, &q.subs[0], &set, &e), 0);
    assert_int_equal(set.n, 2);
    for (size_t i = 0; i < set.n; i++) {
        assert_string_equal(set.v[i].metric, "m");
        assert_int_equal(set.v[i].pts.n, 6);
        assert_string_equal(set.v[i].tags[0].key, "dc");       /* sorted by key */
    }
    tsq_set_free(&set);
    tsq_query_free(&q);
}

/* sum over dc=x at each 10 s: i + 10(i+1) = 10, 21, 32, 43, 54, 65;
 * grouped by dc: dc=y alone is 100 at 5 s */
static void run_local_answers_a_whole_query(void **st)
{
    tsq_query q;
    tsq_error e;
    tsq_result r = { 0 };
    const char *body = "{\"start\":1699999200,\"end\":1699999260,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
                       "\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"dc\",\"filter\":\"*\",\"groupBy\":true}]},"
                       "{\"metric\":\"other\",\"aggregator\":\"max\",\"downsample\":\"1m-max\"}]}";
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), 0);
    assert_int_equal(tsq_run_local(st_, &q, &r, &e), 0);
    assert_int_equal(r.n, 3);
    expect_points(&r.v[0], ((int64_t[]){ S(0), S(10), S(20), S(30), S(40), S(50) }),
                  ((double[]){ 10, 21, 32, 43, 54, 65 }));
    assert_string_equal(out_tag(&r.v[0], "dc"), "x");
    assert_string_equal(r.v[0].aggregate_tags[0], "host");
    expect_points(&r.v[1], ((int64_t[]){ S(5) }), ((double[]){ 100 }));
    assert_string_equal(out_tag(&r.v[1], "host"), "c");
    assert_int_equal(r.v[2].sub_index, 1);
    expect_points(&r.v[2], ((int64_t[]){ S(0) }), ((double[]){ 7 }));
    tsq_result_free(&r);
    tsq_query_free(&q);
}

static void unknown_metric_is_opentsdbs_400(void **st)
{
    tsq_query q;
    tsq_error e;
    tsq_result r = { 0 };
    const char *body = "{\"start\":1699999200,\"queries\":[{\"metric\":\"foo\",\"aggregator\":\"sum\"}]}";
    assert_int_equal(tsq_parse_json(body, strlen(body), B + 60000, &q, &e), 0);
    assert_int_equal(tsq_run_local(st_, &q, &r, &e), -1);
    assert_int_equal(e.code, 400);
    assert_string_equal(e.message, "No such name for 'metrics': 'foo'");
    size_t len;
    char *j = tsq_error_json(&e, &len);
    assert_string_equal(j, "{\"error\":{\"code\":400,\"message\":\"No such name for 'metrics': 'foo'\"}}");
    free(j);
    tsq_result_free(&r);
    tsq_query_free(&q);
}

/* a known metric with no series matching, or no points in range: [] */
static void known_metric_without_matches_is_empty(void **st)
{
    tsq_query q;
    tsq_error e;
    tsq_result r = { 0 };
    const char *body = "{\"start\":1699999200,\"end\":1699999260,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
                       "\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"zz\"}]}]}";
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), 0);
    assert_int_equal(tsq_run_local(st_, &q, &r, &e), 0);
    assert_int_equal(r.n, 0);
    size_t len;
    char *j = tsq_result_json(&q, &r, &len);
    assert_string_equal(j, "[]");
    free(j);
    tsq_query_free(&q);
}

/* 100 series are read on several threads: each gets its own points */
static void many_series_are_read_in_parallel_intact(void **st)
{
    char err[256];
    store_point p[100 * 20];
    store_tag tags[100][1];
    char vals[100][16];
    size_t n = 0;
    for (int s = 0; s < 100; s++) {
        snprintf(vals[s], sizeof vals[s], "%03d", s);
        tags[s][0] = (store_tag){ "job", vals[s] };
        for (int i = 0; i < 20; i++)
            p[n++] = (store_point){ "many", tags[s], 1, S(i), s * 1000 + i };
    }
    assert_int_equal(store_put(st_, p, n, err, sizeof err), 0);
    tsq_query q;
    tsq_error e;
    tsq_set set = { 0 };
    const char *body = "{\"start\":1699999200,\"end\":1699999260,\"queries\":[{\"metric\":\"many\",\"aggregator\":\"none\"}]}";
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), 0);
    assert_int_equal(tsq_fetch_local(st_, &q, &q.subs[0], &set, &e), 0);
    assert_int_equal(set.n, 100);
    for (size_t i = 0; i < set.n; i++) {
        int s = atoi(set.v[i].tags[0].value);
        assert_int_equal(set.v[i].pts.n, 20);
        for (int k = 0; k < 20; k++)
            assert_true(set.v[i].pts.ts[k] == S(k) && set.v[i].pts.val[k] == s * 1000 + k);
    }
    tsq_set_free(&set);
    tsq_query_free(&q);
}

/* tsq_run_local downsamples while it reads (one point a bucket instead of
 * the raw points); the answers are bit for bit those of the raw path
 * (tsq_fetch_local + tsq_eval) for every aggregator, fill and rate, with
 * series whose timestamps differ (interpolation) and points out of order. */
static void downsampling_while_reading_gives_the_same_answers(void **st)
{
    char err[256];
    enum { NS = 40, NP = 300 };
    static store_point p[NS * NP];
    static store_tag tags[NS][2];
    static char jobs[NS][16];
    size_t n = 0;
    for (int s = 0; s < NS; s++) {
        snprintf(jobs[s], sizeof jobs[s], "j%02d", s);
        tags[s][0] = (store_tag){ "job", jobs[s] };
        tags[s][1] = (store_tag){ "host", s % 3 ? "h1" : "h2" };
        for (int i = NP - 1; i >= 0; i--) /* newest first: out of order */
            p[n++] = (store_point){ "ds", tags[s], 2, S(i) + (s * 37 + i * 11) % 900,
                                    s % 2 ? i * 1.25 + s : sin(i * 0.1 + s) * 1e3 };
    }
    assert_int_equal(store_put(st_, p, n, err, sizeof err), 0);
    const char *specs[] = { "10s-avg", "10s-sum", "7s-min", "30s-max", "10s-avg-zero", "10s-max-nan",
                            "1m-avg", "3s-sum-null" };
    const char *aggs[] = { "sum", "avg", "max", "min", "zimsum", "mimmax" };
    for (size_t k = 0; k < sizeof specs / sizeof *specs; k++)
        for (size_t a = 0; a < sizeof aggs / sizeof *aggs; a++)
            for (int rate = 0; rate < 2; rate++) {
                char body[600];
                snprintf(body, sizeof body,
                         "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"ds\",\"aggregator\":\"%s\","
                         "\"downsample\":\"%s\",\"rate\":%s,\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"host\","
                         "\"filter\":\"*\",\"groupBy\":true}]}]}",
                         (long long)(S(20) / 1000), (long long)(S(250) / 1000), aggs[a], specs[k],
                         rate ? "true" : "false");
                tsq_query q;
                tsq_error e;
                assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), 0);
                tsq_result pre = { 0 }, raw = { 0 };
                tsq_set set = { 0 };
                assert_int_equal(tsq_run_local(st_, &q, &pre, &e), 0);
                assert_int_equal(tsq_fetch_local(st_, &q, &q.subs[0], &set, &e), 0);
                assert_int_equal(tsq_eval(&q, &q.subs[0], &set, &raw, &e), 0);
                size_t la, lb;
                char *ja = tsq_result_json(&q, &pre, &la), *jb = tsq_result_json(&q, &raw, &lb);
                if (la != lb || memcmp(ja, jb, la) != 0)
                    fail_msg("%s %s rate=%d:\n%s\n%s", specs[k], aggs[a], rate, ja, jb);
                assert_true(pre.n == 2);
                free(ja);
                free(jb);
                tsq_result_free(&pre);
                tsq_result_free(&raw);
                tsq_set_free(&set);
                tsq_query_free(&q);
            }
}

/* Reads metric's NS series (each made after `others` series of another
 * metric, so that they are every (others+1)th id) with store_read_many:
 * the same points as one read a series, memory and SQLite merged, a point
 * written twice once. */
static void read_many_intact(const char *metric, int others)
{
    char err[256];
    enum { NS = 3000 };
    static store_point p[NS * 4];
    static store_tag tags[NS][1];
    static char vals[NS][16];
    size_t n = 0;
    for (int s = 0; s < NS; s++) {
        snprintf(vals[s], sizeof vals[s], "%04d", s);
        tags[s][0] = (store_tag){ "job", vals[s] };
        for (int o = 0; o < others; o++) { /* series of another metric first */
            char on[24];
            snprintf(on, sizeof on, "other%d", o);
            store_point q = { on, tags[s], 1, S(0), o };
            assert_int_equal(store_put(st_, &q, 1, err, sizeof err), 0);
        }
        for (int i = 0; i < 3; i++) p[n++] = (store_point){ metric, tags[s], 1, S(i), s + i };
        if (others) { /* created now, after the others */
            assert_int_equal(store_put(st_, p + n - 3, 3, err, sizeof err), 0);
            n -= 3;
        }
    }
    assert_int_equal(store_put(st_, p, n, err, sizeof err), 0);
    store_maintain(st_); /* some in SQLite */
    n = 0;
    for (int s = 0; s < NS; s += 2) { /* and some in memory, one of them again */
        p[n++] = (store_point){ metric, tags[s], 1, S(3), s + 3 };
        p[n++] = (store_point){ metric, tags[s], 1, S(1), -1 };
    }
    assert_int_equal(store_put(st_, p, n, err, sizeof err), 0);
    tsq_query q;
    tsq_error e;
    tsq_set set = { 0 };
    char body[256];
    snprintf(body, sizeof body, "{\"start\":1699999200,\"end\":1699999260,\"queries\":[{\"metric\":\"%s\",\"aggregator\":\"none\"}]}", metric);
    assert_int_equal(tsq_parse_json(body, strlen(body), B, &q, &e), 0);
    assert_int_equal(tsq_fetch_local(st_, &q, &q.subs[0], &set, &e), 0);
    assert_int_equal(set.n, NS);
    for (size_t i = 0; i < set.n; i++) {
        int s = atoi(set.v[i].tags[0].value);
        assert_int_equal(set.v[i].pts.n, s % 2 ? 3 : 4);
        for (int k = 0; k < (int)set.v[i].pts.n; k++)
            assert_true(set.v[i].pts.ts[k] == S(k) &&
                        set.v[i].pts.val[k] == (s % 2 == 0 && k == 1 ? -1 : s + k));
    }
    tsq_set_free(&set);
    tsq_query_free(&q);
}

/* A set of series that fills its id range is read in one scan of the store. */
static void a_large_set_is_read_in_one_scan_intact(void **st)
{
    read_many_intact("scan", 0);
}

/* A set of series spread over their id range (a field of jobscope's
 * samples: every 30th series) is read a series at a time, a unit of them
 * in one read transaction: the same points. */
static void a_large_sparse_set_is_read_intact(void **st)
{
    read_many_intact("sparse", 5);
}

typedef struct params { const char *k[4], *v[4]; int n; } params;

static const char *param(void *arg, const char *name, int i)
{
    params *p = arg;
    for (int j = 0; j < p->n; j++)
        if (!strcmp(p->k[j], name) && i-- == 0)
            return p->v[j];
    return NULL;
}

static void last_gives_the_newest_point_per_series(void **st)
{
    tsq_error e;
    size_t len;
    params p = { { "timeseries", "resolve" }, { "m{host=a}", "true" }, 2 };
    char *j = tsq_last(st_, NULL, 0, param, &p, &len, &e);
    assert_non_null(j);
    json_t *a = json_loads(j, 0, NULL);
    assert_int_equal(json_array_size(a), 1);
    json_t *o = json_array_get(a, 0);
    assert_true(json_integer_value(json_object_get(o, "timestamp")) == S(50));
    assert_string_equal(json_string_value(json_object_get(o, "value")), "5");
    assert_string_equal(json_string_value(json_object_get(o, "metric")), "m");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "tags"), "dc")), "x");
    assert_true(json_is_string(json_object_get(o, "tsuid")));
    json_decref(a);
    free(j);
    /* POST, without resolve: no metric or tags; two series of dc=x */
    const char *body = "{\"queries\":[{\"metric\":\"m\",\"tags\":{\"dc\":\"x\"}}]}";
    j = tsq_last(st_, body, strlen(body), NULL, NULL, &len, &e);
    a = json_loads(j, 0, NULL);
    assert_int_equal(json_array_size(a), 2);
    assert_null(json_object_get(json_array_get(a, 0), "metric"));
    json_decref(a);
    free(j);
    params bad = { { "timeseries" }, { "nope" }, 1 };
    assert_null(tsq_last(st_, NULL, 0, param, &bad, &len, &e));
    assert_int_equal(e.code, 400);
    assert_string_equal(e.message, "No such name for 'metrics': 'nope'");
}

static void lookup_lists_series_of_a_metric(void **st)
{
    tsq_error e;
    size_t len;
    params p = { { "m", "limit" }, { "m{dc=*}", "2" }, 2 };
    char *j = tsq_lookup(st_, NULL, 0, param, &p, &len, &e);
    assert_non_null(j);
    json_t *o = json_loads(j, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(o, "type")), "LOOKUP");
    assert_string_equal(json_string_value(json_object_get(o, "metric")), "m");
    assert_int_equal(json_integer_value(json_object_get(o, "limit")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "totalResults")), 3);
    json_t *res = json_object_get(o, "results");
    assert_int_equal(json_array_size(res), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(res, 0), "metric")), "m");
    assert_true(json_is_string(json_object_get(json_object_get(json_array_get(res, 0), "tags"), "host")));
    json_decref(o);
    free(j);
    /* a value: host=a in every metric */
    params p2 = { { "m" }, { "{host=a}" }, 1 };
    j = tsq_lookup(st_, NULL, 0, param, &p2, &len, &e);
    o = json_loads(j, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(o, "totalResults")), 2);    /* m and other */
    json_decref(o);
    free(j);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(fetch_reads_only_matching_series), T(run_local_answers_a_whole_query),
        T(unknown_metric_is_opentsdbs_400), T(known_metric_without_matches_is_empty),
        T(last_gives_the_newest_point_per_series), T(lookup_lists_series_of_a_metric),
        T(many_series_are_read_in_parallel_intact),
        T(downsampling_while_reading_gives_the_same_answers),
        T(a_large_set_is_read_in_one_scan_intact), T(a_large_sparse_set_is_read_intact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
