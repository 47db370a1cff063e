/* Downsampling while decoding (store_read_many_ds, src/store/store_read.c):
 * the buckets of every series are bit for bit those of the rule applied to
 * what store_read_many gives (a bucket starts at t - t % iv and takes the
 * points before start + iv; sum and average added in time order from 0,
 * min and max compared), and the point counts are the same, whatever the
 * chunks look like: buckets spanning chunk boundaries, gaps, chunks in
 * SQLite and in memory, chunks that overlap or a point written twice (the
 * newest value wins), the range cutting a bucket, negative timestamps, and
 * each way of reading many series (one scan, sparse ids, a few series). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/store.h"

static char dir[256];
static store *st_;

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/jobscope-ds-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char err[256];
    /* chunks stay as they were written (no merging of a partition's chunks) */
    store_config c = {dir, 0, 0, 1e9, NULL, NULL};
    st_ = store_open(&c, err, sizeof err);
    assert_non_null(st_);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    store_close(st_);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

enum { MAXS = 200 };

/* What store_read_many gives, per series. */
typedef struct raw {
    store_points p[MAXS];
} raw;

static void take_raw(void *arg, size_t i, store_points *p)
{
    raw *r = arg;
    r->p[i].ts = malloc((p->n ? p->n : 1) * sizeof *p->ts);
    r->p[i].val = malloc((p->n ? p->n : 1) * sizeof *p->val);
    if (p->n) { /* (no arrays when no points) */
        memcpy(r->p[i].ts, p->ts, p->n * sizeof *p->ts);
        memcpy(r->p[i].val, p->val, p->n * sizeof *p->val);
    }
    r->p[i].n = p->n;
}

typedef struct got {
    store_points b[MAXS];
    size_t raw[MAXS];
    int calls[MAXS];
} got;

static void take_buckets(void *arg, size_t i, store_points *b, size_t n)
{
    got *g = arg;
    g->b[i].ts = malloc((b->n ? b->n : 1) * sizeof *b->ts);
    g->b[i].val = malloc((b->n ? b->n : 1) * sizeof *b->val);
    if (b->n) { /* (no arrays when no buckets) */
        memcpy(g->b[i].ts, b->ts, b->n * sizeof *b->ts);
        memcpy(g->b[i].val, b->val, b->n * sizeof *b->val);
    }
    g->b[i].n = b->n;
    g->raw[i] = n;
    g->calls[i]++;
}

/* The rule, on a series' points. */
static size_t rule(const store_points *p, int64_t iv, store_ds_kind kind, int64_t *ts, double *val)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n;) {
        int64_t b = p->ts[i] - p->ts[i] % iv;
        double acc = kind == STORE_DS_MIN ? INFINITY : kind == STORE_DS_MAX ? -INFINITY : 0;
        size_t j = i;
        for (; j < p->n && p->ts[j] < b + iv; j++) {
            double v = p->val[j];
            if (kind == STORE_DS_MIN)
                acc = v < acc ? v : acc;
            else if (kind == STORE_DS_MAX)
                acc = v > acc ? v : acc;
            else
                acc += v;
        }
        if (kind == STORE_DS_AVG) acc /= (double)(j - i);
        ts[n] = b;
        val[n++] = acc;
        i = j;
    }
    return n;
}

/* Every series of ids read both ways over [from, to] for each interval and
 * kind: the same buckets, bit for bit. */
static void same_as_the_rule(const uint64_t *ids, size_t n, int64_t from, int64_t to)
{
    static raw r;
    memset(&r, 0, sizeof r);
    assert_int_equal(store_read_many(st_, ids, n, from, to, take_raw, &r), 0);
    const int64_t ivs[] = {1000, 7000, 10000, 60000, 3600000};
    for (size_t v = 0; v < sizeof ivs / sizeof *ivs; v++)
        for (int kind = STORE_DS_SUM; kind <= STORE_DS_MAX; kind++) {
            static got g;
            memset(&g, 0, sizeof g);
            assert_int_equal(store_read_many_ds(st_, ids, n, from, to, ivs[v], (store_ds_kind)kind,
                                                take_buckets, &g),
                             0);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(g.calls[i], 1);
                assert_int_equal(g.raw[i], r.p[i].n);
                int64_t *ts = malloc((r.p[i].n + 1) * sizeof *ts);
                double *val = malloc((r.p[i].n + 1) * sizeof *val);
                size_t m = rule(&r.p[i], ivs[v], (store_ds_kind)kind, ts, val);
                if (g.b[i].n != m)
                    fail_msg("series %zu, interval %lld, kind %d: %zu buckets, the rule %zu", i,
                             (long long)ivs[v], kind, g.b[i].n, m);
                for (size_t k = 0; k < m; k++)
                    if (g.b[i].ts[k] != ts[k] || memcmp(&g.b[i].val[k], &val[k], sizeof val[k]))
                        fail_msg("series %zu, interval %lld, kind %d, bucket %zu: %lld %a, the "
                                 "rule %lld %a",
                                 i, (long long)ivs[v], kind, k, (long long)g.b[i].ts[k],
                                 g.b[i].val[k], (long long)ts[k], val[k]);
                free(ts);
                free(val);
                store_points_free(&g.b[i]);
            }
        }
    for (size_t i = 0; i < n; i++) store_points_free(&r.p[i]);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const int64_t B = 1700000000000LL; /* an hour's start */

/* ns series of metric (made after `others` series of another metric each,
 * so that they are every (others+1)th id), their times jittered, with
 * gaps, in three rounds: the first in one partition, the second two
 * partitions later (which cuts the first one's head into a chunk, then
 * flushed to SQLite), the third back in the first partition (a chunk of its
 * own, in memory): it overlaps the first round in some series (points
 * between its points, one rewritten), writes one of its points again in
 * others, and in the rest follows it within a second (buckets across the
 * chunk boundary). */
static void write_series(const char *metric, int ns, int others, int64_t base)
{
    char err[256];
    static store_tag tags[MAXS][1];
    static char vals[MAXS][16];
    static store_point p[4000];
    for (int s = 0; s < ns; s++) {
        snprintf(vals[s], sizeof vals[s], "%s%03d", metric, s);
        tags[s][0] = (store_tag){"job", vals[s]};
        for (int o = 0; o < others; o++) {
            char on[32];
            snprintf(on, sizeof on, "%s-other%d", metric, o);
            store_point q = {on, tags[s], 1, base, o};
            assert_int_equal(store_put(st_, &q, 1, err, sizeof err), 0);
        }
    }
    static int64_t last0[MAXS], first0[MAXS];
    for (int round = 0; round < 3; round++) {
        for (int s = 0; s < ns; s++) {
            size_t n = 0;
            int64_t t0 = base + (int64_t)(next() % 5000);
            if (round == 1) t0 += 4 * 3600 * 1000;
            if (round == 2)
                t0 = s % 3 == 0   ? first0[s] + 333 /* between round 0's points */
                     : s % 3 == 1 ? last0[s] - 20000
                                  : last0[s] + 1 + (int64_t)(next() % 1000);
            for (int i = 0; i < 300; i++) {
                int64_t t =
                    t0 + i * (round == 2 && s % 3 == 0 ? 777 : 1000) + (int64_t)(next() % 4);
                if (i % 97 > 80) continue;                        /* a gap */
                if (round == 2 && s % 3 == 1 && i < 20) continue; /* (one point again below) */
                double v = s % 4 == 0   ? (double)(next() % 2000) * 4
                           : s % 4 == 1 ? (double)(int64_t)(next() % 100000) / 1000
                           : s % 4 == 2 ? sin((double)i) * 1e6
                                        : -(double)(next() % 1000);
                p[n++] = (store_point){metric, tags[s], 1, t, v};
                if (round == 0) {
                    if (i == 0) first0[s] = t;
                    last0[s] = t;
                }
            }
            if (round == 2 && s % 3 == 1) /* round 0's last point again, another value */
                p[n++] = (store_point){metric, tags[s], 1, last0[s], -12345.5};
            assert_int_equal(store_put(st_, p, n, err, sizeof err), 0);
        }
        if (round < 2) store_maintain(st_); /* into SQLite; the last round stays in memory */
    }
}

static int first_id(void *arg, const store_series *se)
{
    *(uint64_t *)arg = se->id;
    return 1;
}

static uint64_t id_of(const char *metric, int s)
{
    char v[16];
    snprintf(v, sizeof v, "%s%03d", metric, s);
    store_tag t = {"job", v};
    uint64_t id = 0;
    assert_int_equal(store_series_with(st_, metric, &t, 1, first_id, &id), 1);
    return id;
}

static void buckets_are_the_rules(const char *metric, int ns, int others, int64_t base)
{
    static uint64_t ids[MAXS];
    write_series(metric, ns, others, base);
    for (int s = 0; s < ns; s++) ids[s] = id_of(metric, s);
    same_as_the_rule(ids, (size_t)ns, base, base + 5 * 3600000 - 1);
    /* a range that cuts buckets at both ends */
    same_as_the_rule(ids, (size_t)ns, base + 12345, base + 700001);
    /* once flushed: every chunk in SQLite */
    store_maintain(st_);
    same_as_the_rule(ids, (size_t)ns, base + 4321, base + 5 * 3600000 - 1);
}

/* Enough series in their id range: one scan of the chunks table. */
static void one_scan_gives_the_rules_buckets(void **st)
{
    (void)st;
    buckets_are_the_rules("scan", 100, 0, B);
}

/* Every sixth id: a series at a time in one transaction. */
static void sparse_ids_give_the_rules_buckets(void **st)
{
    (void)st;
    buckets_are_the_rules("sparse", 60, 5, B);
}

/* A few series: each read whole, then folded. */
static void a_few_series_give_the_rules_buckets(void **st)
{
    (void)st;
    buckets_are_the_rules("few", 5, 0, B);
}

/* Before 1970: t - t % iv rounds towards zero there (the engine's rule). */
static void negative_timestamps_give_the_rules_buckets(void **st)
{
    (void)st;
    buckets_are_the_rules("neg", 40, 0, -7200000 + 1234);
}

/* Nothing in range: no buckets, no points; bad arguments: -1. */
static void empty_and_bad_reads(void **st)
{
    (void)st;
    static uint64_t ids[MAXS];
    write_series("e", 20, 0, B);
    for (int s = 0; s < 20; s++) ids[s] = id_of("e", s);
    static got g;
    memset(&g, 0, sizeof g);
    assert_int_equal(store_read_many_ds(st_, ids, 20, B + 7200000, B + 9000000, 10000, STORE_DS_AVG,
                                        take_buckets, &g),
                     0);
    for (int s = 0; s < 20; s++) {
        assert_int_equal(g.calls[s], 1);
        assert_int_equal(g.b[s].n, 0);
        assert_int_equal(g.raw[s], 0);
        store_points_free(&g.b[s]);
    }
    assert_int_equal(
        store_read_many_ds(st_, ids, 20, B, B + 1000, 0, STORE_DS_AVG, take_buckets, &g), -1);
    assert_int_equal(
        store_read_many_ds(st_, ids, 20, B, B + 1000, 1000, (store_ds_kind)9, take_buckets, &g),
        -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_scan_gives_the_rules_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(sparse_ids_give_the_rules_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(a_few_series_give_the_rules_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(negative_timestamps_give_the_rules_buckets, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(empty_and_bad_reads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
