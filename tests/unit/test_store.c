/* test_store.c — the embedded store (src/store/store.h, docs/store.md):
 * exact round trips through the store (duplicates, points out of order),
 * the series index (names, series_of, tag postings), store_last, reads of
 * many series, retention by age and size, settling, reopen, log rotation,
 * concurrent writers and readers, and bad input.  The codec is
 * test_codec.c, failures test_store_faults.c, older formats
 * test_store_format.c. */
#include "store_testlib.h"

static void test_round_trip_of_many_series_is_exact_across_reopen(void **st)
{
    (void)st;
    int64_t t0 = 1700000000000LL;
    store *s = open_at("rt", 0, 0);
    put_grid(s, 200, 1500, t0, 1000);         /* crosses partitions, cuts heads */
    check_grid(s, 200, 1500, t0, 1000);
    store_stats stt;
    store_stats_get(s, &stt);
    assert_int_equal(stt.series, 200);
    assert_int_equal(stt.points, 200 * 1500);
    assert_true(stt.disk_bytes > 0);
    store_close(s);
    s = open_at("rt", 0, 0);
    check_grid(s, 200, 1500, t0, 1000);
    assert_int_equal(store_maintain(s), 0);   /* settles the chunks */
    check_grid(s, 200, 1500, t0, 1000);
    store_stats settled;
    store_stats_get(s, &settled);
    assert_true(settled.chunks <= 200 * 2);   /* one per series and partition */
    /* points arriving late into settled partitions are settled in turn */
    put_grid(s, 200, 1500, t0, 1000);         /* the same points again */
    assert_int_equal(store_maintain(s), 0);
    store_stats_get(s, &stt);
    assert_int_equal(stt.chunks, settled.chunks);
    check_grid(s, 200, 1500, t0, 1000);
    store_close(s);
    s = open_at("rt", 0, 0);
    check_grid(s, 200, 1500, t0, 1000);
    /* a range read */
    uint64_t id = series_id(s, "m.counter", "j4");
    store_points p = {0};
    assert_int_equal(store_read(s, id, t0 + 10500, t0 + 20000, &p), 0);
    assert_int_equal(p.n, 10);
    assert_int_equal(p.ts[0], t0 + 11000);
    assert_true(same_double(p.val[9], gen_value(4, 20)));
    store_points_free(&p);
    store_close(s);
}

static void test_duplicates_keep_the_last_value_and_out_of_order_points_sort(void **st)
{
    (void)st;
    store *s = open_at("dup", 0, 0);
    store_tag t[] = {{"job", "a"}};
    char err[256];
    int64_t base = 1700000000000LL;
    /* in order, then points before, between and on existing ones, also in
     * older partitions, with chunks cut in between (reopen) */
    for (int round = 0; round < 3; round++) {
        store_point p[400];
        for (int i = 0; i < 400; i++) {
            int64_t ts = round == 0 ? base + i * 2000 : round == 1 ? base + i * 2000 + 1000 : base + (399 - i) * 4000;
            p[i] = (store_point){"dup.m", t, 1, ts, round * 1000.0 + i};
        }
        assert_int_equal(store_put(s, p, 400, err, sizeof err), 0);
        store_close(s);
        s = open_at("dup", 0, 0);
    }
    /* a point far in the past and far in the future */
    store_point far[] = {{"dup.m", t, 1, -86400000LL * 365 * 100, -1.5}, {"dup.m", t, 1, base * 3, 2.5}};
    assert_int_equal(store_put(s, far, 2, err, sizeof err), 0);
    uint64_t id = series_id(s, "dup.m", "a");
    for (int pass = 0; pass < 3; pass++) {
        store_points r = {0};
        assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &r), 0);
        assert_int_equal(r.n, 400 + 400 + 200 + 2);
        assert_int_equal(r.ts[0], -86400000LL * 365 * 100);
        assert_int_equal(r.ts[1001], base * 3);
        for (size_t i = 1; i < r.n; i++) assert_true(r.ts[i] > r.ts[i - 1]);
        for (int i = 0; i < 400; i++) {
            int64_t even = base + i * 2000;           /* round 0 value, overwritten by round 2 where ts%4000==0 */
            size_t k = 1 + (size_t)i * 2;
            assert_int_equal(r.ts[k], even);
            double want = (i % 2 == 0) ? 2000.0 + (399 - i / 2) : (double)i;
            if (!same_double(r.val[k], want)) fail_msg("ts %lld: %g want %g", (long long)even, r.val[k], want);
            assert_true(same_double(r.val[k + 1], 1000.0 + i));
        }
        int64_t lt;
        double lv;
        assert_int_equal(store_last(s, id, &lt, &lv), 1);
        assert_int_equal(lt, base * 3);
        assert_true(lv == 2.5);
        store_points_free(&r);
        store_maintain(s);                        /* merged chunks: same answer */
    }
    store_close(s);
}

static void test_names_and_series_of_answer_from_the_index(void **st)
{
    (void)st;
    store *s = open_at("names", 0, 0);
    char err[256];
    store_tag a[] = {{"job", "1"}, {"host", "alpha"}}, b[] = {{"host", "beta"}, {"gpu", "0"}, {"job", "2"}};
    store_point p[] = {{"kickstart.inv.online.rss", a, 2, 1000, 1}, {"kickstart.inv.online.utime", a, 2, 1000, 1},
                       {"kickstart.inv.online.rss", b, 3, 1000, 1}, {"load_average", NULL, 0, 1000, 0.5},
                       {"kickstart.inv.online.rss", a + 0, 2, 2000, 2}};
    assert_int_equal(store_put(s, p, 5, err, sizeof err), 0);
    for (int reopen = 0; reopen < 2; reopen++) {
        char **v;
        int n = store_names(s, STORE_METRICS, "kick", 10, &v);
        assert_int_equal(n, 2);
        assert_string_equal(v[0], "kickstart.inv.online.rss");
        assert_string_equal(v[1], "kickstart.inv.online.utime");
        for (int i = 0; i < n; i++) free(v[i]);
        free(v);
        n = store_names(s, STORE_METRICS, "", 1, &v);
        assert_int_equal(n, 1);
        assert_string_equal(v[0], "kickstart.inv.online.rss");
        free(v[0]);
        free(v);
        n = store_names(s, STORE_TAGKS, "", 100, &v);
        assert_int_equal(n, 3);
        assert_string_equal(v[0], "gpu");
        assert_string_equal(v[2], "job");
        for (int i = 0; i < n; i++) free(v[i]);
        free(v);
        n = store_names(s, STORE_TAGVS, "b", 100, &v);
        assert_int_equal(n, 1);
        assert_string_equal(v[0], "beta");
        free(v[0]);
        free(v);
        n = store_names(s, STORE_TAGVS, "zzz", 100, &v);
        assert_int_equal(n, 0);
        free(v);
        static found f;
        f.n = 0;
        assert_int_equal(store_series_of(s, "kickstart.inv.online.rss", collect, &f), 0);
        assert_int_equal(f.n, 2);
        int sawb = 0;
        for (int i = 0; i < f.n; i++)
            if (strcmp(f.desc[i], "kickstart.inv.online.rss gpu=0 host=beta job=2") == 0) sawb = 1;
        assert_true(sawb);                       /* tags sorted by key */
        f.n = 0;
        assert_int_equal(store_series_of(s, "kickstart.inv", collect, &f), 0);
        assert_int_equal(f.n, 0);
        store_close(s);
        s = open_at("names", 0, 0);
    }
    store_close(s);
}

static void test_last_point_of_a_series(void **st)
{
    (void)st;
    store *s = open_at("last", 0, 0);
    char err[256];
    store_tag t[] = {{"job", "x"}};
    store_point p[] = {{"l.m", t, 1, 5000, 5}, {"l.m", t, 1, 9000, 9}, {"l.m", t, 1, 7000, 7}};
    assert_int_equal(store_put(s, p, 3, err, sizeof err), 0);
    uint64_t id = series_id(s, "l.m", "x");
    int64_t ts;
    double v;
    assert_int_equal(store_last(s, id, &ts, &v), 1);
    assert_int_equal(ts, 9000);
    assert_true(v == 9);
    store_close(s);
    s = open_at("last", 0, 0);
    assert_int_equal(store_last(s, id, &ts, &v), 1);
    assert_int_equal(ts, 9000);
    store_point q = {"l.m", t, 1, 9000, 99};
    assert_int_equal(store_put(s, &q, 1, err, sizeof err), 0);
    assert_int_equal(store_last(s, id, &ts, &v), 1);
    assert_true(v == 99);
    assert_int_equal(store_last(s, 12345, &ts, &v), -1);
    store_close(s);
}

static void test_retention_by_age_drops_old_points_only(void **st)
{
    (void)st;
    int64_t now = (int64_t)time(NULL) * 1000;
    store *s = open_at("age", 0, 0);
    put_grid(s, 8, 600, now - 10LL * 86400000, 1000);       /* ten days old */
    put_grid(s, 8, 600, now - 600000, 1000);                /* the last ten minutes */
    store_close(s);
    s = open_at("age", 2 * 86400.0, 0);
    assert_int_equal(store_maintain(s), 0);
    for (int j = 0; j < 8; j++) {
        char job[16];
        snprintf(job, sizeof job, "j%d", j);
        const char *m = j % 4 == 0 ? "m.counter" : j % 4 == 1 ? "m.secs" : j % 4 == 2 ? "m.float" : "m.const";
        store_points p = {0};
        assert_int_equal(store_read(s, series_id(s, m, job), INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, 600);
        assert_int_equal(p.ts[0], now - 600000);
        store_points_free(&p);
    }
    store_stats stt;
    store_stats_get(s, &stt);
    assert_int_equal(stt.points, 8 * 600);
    store_close(s);
}

/* Format 6: a chunk's value part is kept in its row when small and as a row
 * of `vals` when large (chunks is a WITHOUT ROWID table, no index of it);
 * those rows go when their chunks are dropped. */
static void test_large_value_parts_are_rows_of_their_own_that_go_with_their_chunks(void **st)
{
    (void)st;
    int64_t now = (int64_t)time(NULL) * 1000;
    store *s = open_at("vals", 0, 0);
    put_grid(s, 8, 600, now - 10LL * 86400000, 1000); /* ten days old */
    put_grid(s, 8, 600, now - 600000, 1000);          /* the last ten minutes */
    store_close(s);
    assert_int_equal(sql_int("vals", "SELECT count(*) FROM sqlite_schema WHERE type='index' AND tbl_name='chunks'"), 0);
    long long big = sql_int("vals", "SELECT count(*) FROM chunks WHERE typeof(data)='integer'");
    assert_true(big >= 2); /* the floats' value parts, old and new */
    assert_true(big < sql_int("vals", "SELECT count(*) FROM chunks"));  /* the constants' are small */
    assert_int_equal(sql_int("vals", "SELECT count(*) FROM vals"), big);
    assert_int_equal(sql_int("vals", "SELECT count(*) FROM vals WHERE length(data) <= 512"), 0);
    assert_int_equal(sql_int("vals", "SELECT count(*) FROM chunks WHERE typeof(data)='blob' AND length(data) > 512"), 0);
    assert_int_equal(sql_int("vals", "SELECT count(*) FROM chunks c LEFT JOIN vals v ON v.id = c.data "
                                     "WHERE typeof(c.data)='integer' AND v.id IS NULL"), 0);
    s = open_at("vals", 0, 0);
    for (int j = 0; j < 8; j++) { /* read back exactly, through vals or not */
        char job[16];
        snprintf(job, sizeof job, "j%d", j);
        const char *m = j % 4 == 0 ? "m.counter" : j % 4 == 1 ? "m.secs" : j % 4 == 2 ? "m.float" : "m.const";
        store_points p = {0};
        assert_int_equal(store_read(s, series_id(s, m, job), INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, 1200);
        for (int i = 0; i < 1200; i++) {
            assert_int_equal(p.ts[i], (i < 600 ? now - 10LL * 86400000 : now - 600000) + (i % 600) * 1000);
            assert_true(same_double(p.val[i], gen_value(j, i % 600)));
        }
        store_points_free(&p);
    }
    store_close(s);
    s = open_at("vals", 2 * 86400.0, 0); /* retention drops the old half */
    assert_int_equal(store_maintain(s), 0);
    store_close(s);
    long long left = sql_int("vals", "SELECT count(*) FROM vals");
    assert_true(left >= 1 && left < big);
    assert_int_equal(sql_int("vals", "SELECT count(*) FROM chunks WHERE typeof(data)='integer'"), left);
}

/* store_read_many over a store of three partitions: the whole range (one
 * scan of the series' chunks), one partition and a range across two (the
 * key seeks a series at a time) give what store_read gives a series. */
typedef struct many_got {
    store *s;
    const uint64_t *ids;
    int64_t from, to;
    int calls, bad;
} many_got;

static void many_check(void *arg, size_t i, store_points *pts)
{
    many_got *g = arg; /* (called from every reader thread at once) */
    store_points alone = {0};
    __atomic_fetch_add(&g->calls, 1, __ATOMIC_RELAXED);
    if (store_read(g->s, g->ids[i], g->from, g->to, &alone) < 0 || alone.n != pts->n) {
        __atomic_fetch_add(&g->bad, 1, __ATOMIC_RELAXED);
    } else {
        for (size_t k = 0; k < alone.n; k++)
            if (alone.ts[k] != pts->ts[k] || !same_double(alone.val[k], pts->val[k]))
                __atomic_fetch_add(&g->bad, 1, __ATOMIC_RELAXED);
    }
    store_points_free(&alone);
}

static void test_reads_of_many_series_give_each_series_points_over_any_range(void **st)
{
    (void)st;
    const int64_t t0 = 222223LL * 7200000; /* a partition's start */
    store *s = open_at("many", 0, 0);
    put_grid(s, 300, 216, t0, 100000); /* 6 hours: three partitions */
    store_close(s);
    s = open_at("many", 0, 0); /* everything in SQLite */
    static uint64_t ids[300];
    for (int j = 0; j < 300; j++) {
        char job[16];
        snprintf(job, sizeof job, "j%d", j);
        const char *m = j % 4 == 0 ? "m.counter" : j % 4 == 1 ? "m.secs" : j % 4 == 2 ? "m.float" : "m.const";
        ids[j] = series_id(s, m, job);
        assert_true(ids[j] != 0);
    }
    const int64_t P = 7200000, ranges[][2] = {
        {INT64_MIN, INT64_MAX}, {t0, t0 + 3 * P - 1}, {t0 + P, t0 + 2 * P - 1}, {t0 + P / 2, t0 + P + P / 2}};
    for (int r = 0; r < 4; r++) {
        many_got g = {s, ids, ranges[r][0], ranges[r][1], 0, 0};
        assert_int_equal(store_read_many(s, ids, 300, g.from, g.to, many_check, &g), 0);
        assert_int_equal(g.calls, 300);
        assert_int_equal(g.bad, 0);
    }
    store_points p = {0}; /* and the points are there */
    assert_int_equal(store_read(s, ids[5], t0 + P, t0 + 2 * P - 1, &p), 0);
    assert_int_equal(p.n, 72);
    store_points_free(&p);
    store_close(s);
}

static void test_retention_by_size_keeps_the_newest_points_under_the_limit(void **st)
{
    (void)st;
    store *s = open_at("size", 0, 0);
    int64_t t0 = 1600000000000LL;
    for (int part = 0; part < 12; part++)       /* 12 partitions of random floats */
        put_grid(s, 120, 700, t0 + part * 7200000LL, 10000);
    store_close(s);
    s = open_at("size", 0, 0);
    store_maintain(s);
    store_stats big;
    store_stats_get(s, &big);
    store_close(s);
    long long limit = big.disk_bytes / 3;
    s = open_at("size", 0, limit);
    assert_int_equal(store_maintain(s), 0);
    store_stats small;
    store_stats_get(s, &small);
    fprintf(stderr, "big %lld B %llu pts, small %lld B %llu pts, limit %lld\n", big.disk_bytes, (unsigned long long)big.points, small.disk_bytes, (unsigned long long)small.points, limit);
    assert_true(small.disk_bytes <= limit);
    assert_true(small.points < big.points);
    assert_true(small.points > 0);
    /* the newest partition is intact, the oldest gone */
    store_points p = {0};
    uint64_t id = series_id(s, "m.float", "j2");
    assert_int_equal(store_read(s, id, t0 + 11 * 7200000LL, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 700);
    p.n = 0;
    assert_int_equal(store_read(s, id, INT64_MIN, t0 + 7200000LL, &p), 0);
    assert_int_equal(p.n, 0);
    store_points_free(&p);
    store_close(s);
}

/* Issue 23.5: a size limit below what the log alone takes (a /write of 2.4 M
 * points under --max-size 4M) deleted every point.  What trimming cannot
 * free (the log, SQLite's journal, other files) is not trimmed for, and the
 * newest partition is never dropped: the limit is then reported as unmet. */
static void test_size_limit_never_drops_the_newest_points(void **st)
{
    (void)st;
    logged[0] = 0;
    int64_t t0 = ((int64_t)time(NULL) * 1000 / 7200000) * 7200000; /* this partition */
    store *s = open_logged("newest", 64 << 10);
    put_grid(s, 100, 3000, t0, 1000);  /* 300,000 points, as the log grows past the limit */
    assert_int_equal(store_maintain(s), 0);
    store_stats a;
    store_stats_get(s, &a);
    assert_int_equal(a.points, 300000);
    assert_int_equal(a.dropped_points_size, 0);
    check_grid(s, 100, 3000, t0, 1000);
    assert_non_null(strstr(logged, "cannot be met"));
    store_close(s);
    s = open_logged("newest", 64 << 10);
    assert_int_equal(store_maintain(s), 0);
    check_grid(s, 100, 3000, t0, 1000);
    store_close(s);
}

/* Issue 23.5: with --max-size 60M and a 58 MB repository in the store's
 * directory, 757,792 points became 4,496: the log of a large /write and
 * other modules' files were counted as if dropping points could free them.
 * The oldest points go, about as many as make room, and the log and stats
 * say how many. */
static void test_size_limit_counts_only_what_trimming_can_free(void **st)
{
    (void)st;
    int64_t t0 = 1600000000000LL, newest = t0 + 11 * 7200000LL;
    store *s = open_at("foreign", 0, 0);
    for (int part = 0; part < 12; part++) /* 12 partitions */
        put_grid(s, 120, 700, t0 + part * 7200000LL, 10000);
    store_close(s);
    s = open_at("foreign", 0, 0);
    assert_int_equal(store_maintain(s), 0);
    store_stats big;
    store_stats_get(s, &big);
    store_close(s);
    uint64_t before = big.points - 120 * 700; /* before the newest partition */
    char path[600];
    snprintf(path, sizeof path, "%s/foreign/repo.sqlite", tmpdir); /* another module's file */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    static char junk[1 << 20];
    memset(junk, 'r', sizeof junk);
    for (int i = 0; i < 4; i++) fwrite(junk, 1, sizeof junk, f);
    fclose(f);
    /* room for the repository and about half of the points */
    long long limit = (4LL << 20) + big.disk_bytes / 2;
    logged[0] = 0;
    s = open_logged("foreign", limit);
    /* a large write into the newest partition: the log grows past the limit */
    enum { W = 100, N = 6000 };
    static char wj[W][16];
    static store_tag wt[W][1];
    static store_point wp[W];
    char err[256];
    for (int j = 0; j < W; j++) {
        snprintf(wj[j], sizeof wj[j], "w%d", j);
        wt[j][0] = (store_tag){"job", wj[j]};
    }
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < W; j++) wp[j] = (store_point){"w.fill", wt[j], 1, newest + i * 1000LL, i};
        assert_int_equal(store_put(s, wp, W, err, sizeof err), 0);
    }
    assert_int_equal(store_maintain(s), 0);
    store_stats small;
    store_stats_get(s, &small);
    long long kept = (long long)small.points - 120 * 700 - W * N, old = (long long)before;
    fprintf(stderr, "%lld of %lld older points kept under %lld bytes (%lld on disk)\n", kept, old,
            limit, small.disk_bytes);
    assert_true(kept >= old / 16);    /* not nearly everything */
    assert_true(kept <= old * 3 / 4); /* but enough to fit */
    assert_true(small.disk_bytes <= limit);
    assert_int_equal(small.dropped_points_size, (uint64_t)(old - kept));
    assert_non_null(strstr(logged, "dropped"));
    /* the oldest went, the newest partition is whole */
    store_points p = {0};
    uint64_t id = series_id(s, "m.float", "j2");
    assert_int_equal(store_read(s, id, newest, INT64_MAX, &p), 0);
    assert_int_equal(p.n, 700);
    p.n = 0;
    assert_int_equal(store_read(s, id, INT64_MIN, t0 + 7200000LL - 1, &p), 0);
    assert_int_equal(p.n, 0);
    store_points_free(&p);
    store_close(s);
}

/* The log segments of store `name` on disk. */
static int log_segments(const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "exit $(ls %s/%s/wal | wc -l)", tmpdir, name);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A segment of SEGMENT_BYTES with nseries series: the points of a grid
 * (rotations on the way) are all read back, before and after a restart,
 * and put again after it into the same series; the segments on disk after
 * the first puts are returned. */
static int grid_through_rotations(const char *name, const char *segment_bytes, int nseries)
{
    setenv("JOBSCOPE_STORE_SEGMENT_BYTES", segment_bytes, 1);
    store *s = open_at(name, 0, 0);
    unsetenv("JOBSCOPE_STORE_SEGMENT_BYTES");
    put_grid(s, nseries, 900, 1700000000000LL, 1000);
    check_grid(s, nseries, 900, 1700000000000LL, 1000);
    int segs = log_segments(name);
    store_close(s);
    s = open_at(name, 0, 0);
    check_grid(s, nseries, 900, 1700000000000LL, 1000);
    /* the same points again find their series (keys hash alike at a put
     * and at an open): none is added */
    put_grid(s, nseries, 900, 1700000000000LL, 1000);
    store_stats sst;
    store_stats_get(s, &sst);
    assert_int_equal(sst.series, nseries);
    check_grid(s, nseries, 900, 1700000000000LL, 1000);
    store_close(s);
    return segs;
}

static void test_log_rotation_with_few_series_retires_the_whole_log(void **st)
{
    (void)st;
    /* 60 series x 64 bytes fit a segment many times: every head is cut at a
     * rotation, so one segment is on disk */
    assert_int_equal(grid_through_rotations("rot", "20000", 60), 1);
}

static void test_log_rotation_with_many_series_keeps_the_segment_before(void **st)
{
    (void)st;
    /* 60 series x 64 bytes are more than a segment: heads started in the
     * segment before are not cut into tiny chunks, so it stays */
    assert_int_equal(grid_through_rotations("rot2", "2000", 60), 2);
}

/* With few series the heads hold few points each (HEAD_BUDGET shared, at
 * most HEAD_MAX a series): a segment rotates once it logged about as many
 * points as the heads hold and passed 1 MiB, well before 8 MiB, so that
 * points cut into chunks for their head's size do not stay in the log too.
 * Two series of noisy values: rotations come, one segment stays on disk,
 * and every point reads back after a restart. */
static void test_a_segment_rotates_once_the_heads_filled(void **st)
{
    (void)st;
    enum { N = 400000, B = 20000 };
    store *s = open_at("hfull", 0, 0);
    store_tag t[2][1] = {{{"job", "a"}}, {{"job", "b"}}};
    static store_point p[B];
    char err[256];
    uint64_t r = 12345;
    for (int base = 0; base < N; base += B / 2) {
        for (int i = 0; i < B; i++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            p[i] = (store_point){"hfull.m", t[i % 2], 1, 1000LL * (base + i / 2),
                                 (double)(r >> 40) / 1000.0};
        }
        assert_int_equal(store_put(s, p, B, err, sizeof err), 0);
    }
    store_stats sst;
    store_stats_get(s, &sst);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls %s/hfull/wal | grep -qv '^0000000000000001.wal$'", tmpdir);
    assert_int_equal(system(cmd), 0);       /* rotated */
    assert_int_equal(log_segments("hfull"), 1);
    store_close(s);
    s = open_at("hfull", 0, 0);
    r = 12345;
    store_points a = {0}, b = {0};
    assert_int_equal(store_read(s, series_id(s, "hfull.m", "a"), INT64_MIN, INT64_MAX, &a), 0);
    assert_int_equal(store_read(s, series_id(s, "hfull.m", "b"), INT64_MIN, INT64_MAX, &b), 0);
    assert_int_equal(a.n, N);
    assert_int_equal(b.n, N);
    for (int i = 0; i < 2 * N; i++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        store_points *q = i % 2 ? &b : &a;
        assert_true(q->ts[i / 2] == 1000LL * (i / 2) && q->val[i / 2] == (double)(r >> 40) / 1000.0);
    }
    store_points_free(&a);
    store_points_free(&b);
    store_close(s);
}

static void test_bad_points_reject_the_whole_batch(void **st)
{
    (void)st;
    store *s = open_at("bad", 0, 0);
    char err[256] = "";
    store_tag t[] = {{"job", "1"}}, dup[] = {{"job", "1"}, {"job", "2"}}, empty[] = {{"job", ""}};
    store_point ok = {"good.m", t, 1, 1000, 1};
    store_point bad[] = {{"", t, 1, 1000, 1}, {"x", t, 1, 1000, NAN}, {"x", t, 1, 1000, INFINITY},
                         {"x", dup, 2, 1000, 1}, {"x", empty, 1, 1000, 1}, {"x", t, 1, INT64_MAX, 1},
                         {NULL, t, 1, 1000, 1}, {"x", NULL, 1, 1000, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        store_point b[2] = {ok, bad[i]};
        err[0] = 0;
        assert_int_equal(store_put(s, b, 2, err, sizeof err), -1);
        assert_true(strlen(err) > 0);
    }
    char **v;
    assert_int_equal(store_names(s, STORE_METRICS, "", 10, &v), 0);
    free(v);
    assert_int_equal(store_put(s, &ok, 0, err, sizeof err), 0);
    /* a second process (or open) on the same directory is refused */
    char dir[400];
    snprintf(dir, sizeof dir, "%s/bad", tmpdir);
    store_config c = {dir, 0, 0, 0, NULL, NULL};
    assert_null(store_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "in use"));
    store_close(s);
    store_close(NULL);
    store_config none = {"/proc/self/nope/store", 0, 0, 0, NULL, NULL};
    assert_null(store_open(&none, err, sizeof err));
    assert_true(strlen(err) > 0);
}

/* --- concurrency ----------------------------------------------------------- */

typedef struct worker { store *s; int id; int fails; } worker;

static void *writer(void *arg)
{
    worker *w = arg;
    char job[16], err[256];
    snprintf(job, sizeof job, "w%d", w->id);
    store_tag t[] = {{"job", job}};
    for (int b = 0; b < 100; b++) {
        store_point p[50];
        for (int i = 0; i < 50; i++) p[i] = (store_point){"conc.m", t, 1, 1000LL * (b * 50 + i), b * 50 + i};
        if (store_put(w->s, p, 50, err, sizeof err) != 0) w->fails++;
    }
    return NULL;
}

static void *reader(void *arg)
{
    worker *w = arg;
    for (int k = 0; k < 200; k++) {
        static __thread found f;
        f.n = 0;
        store_series_of(w->s, "conc.m", collect, &f);
        for (int i = 0; i < f.n; i++) {
            store_points p = {0};
            if (store_read(w->s, f.ids[i], INT64_MIN, INT64_MAX, &p) != 0) w->fails++;
            for (size_t j = 1; j < p.n; j++) if (p.ts[j] <= p.ts[j - 1]) w->fails++;
            for (size_t j = 0; j < p.n; j++) if (p.val[j] != (double)(p.ts[j] / 1000)) w->fails++;
            store_points_free(&p);
        }
        if (k % 50 == 0) store_maintain(w->s);
    }
    return NULL;
}

static void test_concurrent_writers_and_readers(void **st)
{
    (void)st;
    store *s = open_at("conc", 0, 0);
    pthread_t th[6];
    worker w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (worker){s, i, 0};
        pthread_create(&th[i], NULL, i < 4 ? writer : reader, &w[i]);
    }
    for (int i = 0; i < 6; i++) { pthread_join(th[i], NULL); assert_int_equal(w[i].fails, 0); }
    for (int i = 0; i < 4; i++) {
        char job[16];
        snprintf(job, sizeof job, "w%d", i);
        store_points p = {0};
        assert_int_equal(store_read(s, series_id(s, "conc.m", job), INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, 5000);
        store_points_free(&p);
    }
    store_close(s);
}

/* store_series_with reads the postings of a literal tag pair: only the series
 * that have it, of the metric asked; names of tag values come from them too. */
static void test_series_with_a_tag_reads_only_the_series_that_have_it(void **st)
{
    (void)st;
    {
        /* the first series of a store, without tags (an empty key) */
        store *e = open_at("notags", 0, 0);
        char err[256];
        store_point p0 = {"bare.m", NULL, 0, 1000, 1.5};
        assert_int_equal(store_put(e, &p0, 1, err, sizeof err), 0);
        static found f0;
        f0.n = 0;
        store_series_of(e, "bare.m", collect, &f0);
        assert_int_equal(f0.n, 1);
        store_close(e);
    }
    store *s = open_at("with", 0, 0);
    put_grid(s, 200, 3, 1700000000000LL, 1000); /* jobs j0..j199, host n1 (odd) / n2 (even) */
    static found f;
    f.n = 0;
    store_tag j42[] = {{"job", "j42"}};
    assert_int_equal(store_series_with(s, "m.secs", j42, 1, collect, &f), 0);
    assert_int_equal(f.n, 0); /* j42 is an m.float series (42 % 4 == 2) */
    assert_int_equal(store_series_with(s, "m.float", j42, 1, collect, &f), 0);
    assert_int_equal(f.n, 1);
    assert_non_null(strstr(f.desc[0], "job=j42"));
    f.n = 0;
    store_tag two[] = {{"host", "n1"}, {"job", "*"}};
    assert_int_equal(store_series_with(s, "m.secs", two, 2, collect, &f), 0);
    assert_int_equal(f.n, 50); /* m.secs: j % 4 == 1, all odd: host n1 */
    for (int i = 0; i < f.n; i++) assert_non_null(strstr(f.desc[i], "host=n1"));
    f.n = 0;
    store_tag none[] = {{"host", "n9"}};
    assert_int_equal(store_series_with(s, "m.secs", none, 1, collect, &f), 0);
    assert_int_equal(f.n, 0);
    char **names;
    int n = store_names(s, STORE_TAGVS, "j19", 100, &names);
    assert_int_equal(n, 11); /* j19, j190..j199 */
    assert_string_equal(names[0], "j19");
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    n = store_names(s, STORE_TAGVS, "n", 100, &names);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    store_close(s);
}

/* settle_delay_s: a (series, partition) that got chunks within the delay is
 * left as it is by store_maintain (a bulk load is merged once, at its end);
 * with no delay, or once quiet, it is merged; the answers never change. */
static void test_settling_waits_until_a_partition_is_quiet(void **st)
{
    (void)st;
    int64_t t0 = 1700000000000LL;
    store *s = open_delayed("quiet", 3600);
    put_grid(s, 20, 1500, t0, 1000);
    /* two rounds: the heads of a past partition are cut once they got no
     * point for a round (a bulk load keeps them until it ends) */
    assert_int_equal(store_maintain(s), 0);           /* first round: looks at everything */
    assert_int_equal(store_maintain(s), 0);
    store_stats a, b;
    store_stats_get(s, &a);
    put_grid(s, 20, 1500, t0, 1000);                  /* the same points again: new chunks */
    assert_int_equal(store_maintain(s), 0);
    assert_int_equal(store_maintain(s), 0);
    store_stats_get(s, &b);
    assert_true(b.chunks > a.chunks);                 /* written a moment ago: not merged */
    check_grid(s, 20, 1500, t0, 1000);
    store_close(s);
    s = open_delayed("quiet", 0);
    put_grid(s, 20, 1500, t0, 1000);
    assert_int_equal(store_maintain(s), 0);
    assert_int_equal(store_maintain(s), 0);           /* no delay: merged at once */
    store_stats_get(s, &a);
    assert_true(a.chunks <= 20 * 2);                  /* one per series and partition */
    assert_true(a.chunks < b.chunks);
    check_grid(s, 20, 1500, t0, 1000);
    store_close(s);
    /* the timestamp parts the merged chunks no longer use are gone */
    char path[500];
    snprintf(path, sizeof path, "%s/quiet/chunks.db", tmpdir);
    sqlite3 *db;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM times),"
                     " (SELECT count(*) FROM times WHERE id NOT IN (SELECT ts_ref FROM chunks))", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_true(sqlite3_column_int(q, 0) > 0);
    assert_int_equal(sqlite3_column_int(q, 1), 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_settling_waits_until_a_partition_is_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_of_many_series_is_exact_across_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_keep_the_last_value_and_out_of_order_points_sort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_and_series_of_answer_from_the_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_point_of_a_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_age_drops_old_points_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reads_of_many_series_give_each_series_points_over_any_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_value_parts_are_rows_of_their_own_that_go_with_their_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_size_keeps_the_newest_points_under_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_limit_never_drops_the_newest_points, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_limit_counts_only_what_trimming_can_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_rotation_with_few_series_retires_the_whole_log, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_log_rotation_with_many_series_keeps_the_segment_before,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_segment_rotates_once_the_heads_filled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_points_reject_the_whole_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers_and_readers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_series_with_a_tag_reads_only_the_series_that_have_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
