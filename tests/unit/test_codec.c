/* test_codec.c — the store's chunk codec (src/store/codec.c, docs/store.md):
 * exact round trips of every kind of series (integers, decimals, floats,
 * irregular and huge timestamps), compact counters, packed timestamp grids,
 * and corrupt or cut chunks refused. */
#include "store_testlib.h"

/* --- the codec ------------------------------------------------------------ */

static void roundtrip(const int64_t *ts, const double *v, size_t n)
{
    for (int z = 0; z <= 3; z += 3) {
        store_buf b = {0};
        assert_int_equal(store_chunk_encode(ts, v, n, z, &b), 0);
        int64_t *ots = NULL;
        double *ov = NULL;
        size_t on = 0, cap = 0;
        assert_int_equal(store_chunk_decode(b.p, b.n, &ots, &ov, &on, &cap), 0);
        assert_int_equal(on, n);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(ots[i], ts[i]);
            if (!same_double(ov[i], v[i])) fail_msg("value %zu: %.17g != %.17g", i, ov[i], v[i]);
        }
        free(ots);
        free(ov);
        store_buf_free(&b);
    }
}

static void test_codec_exact_for_every_kind_of_series(void **st)
{
    (void)st;
    enum { N = 3000 };
    static int64_t ts[N];
    static double v[N];
    srand(7);
    /* regular 1 s timestamps, a cumulative integer counter */
    for (int i = 0; i < N; i++) { ts[i] = 1700000000000LL + i * 1000LL; v[i] = i ? v[i - 1] + rand() % 5000 : 0; }
    roundtrip(ts, v, N);
    /* irregular timestamps (jitter), seconds with 3 decimals */
    for (int i = 0; i < N; i++) { ts[i] = 1700000000000LL + i * 1000LL + rand() % 37; v[i] = (i * 1.001 + rand() % 1000) / 1000.0; v[i] = round(v[i] * 1000) / 1000; }
    roundtrip(ts, v, N);
    /* arbitrary floats, negative values, tiny and huge magnitudes */
    for (int i = 0; i < N; i++) { ts[i] = -5000000LL + i * 977LL; v[i] = (rand() - RAND_MAX / 2) / 3.0e7 * pow(10, rand() % 30 - 15); }
    roundtrip(ts, v, N);
    /* huge timestamp jumps and extremes; integers at the edge of exactness */
    int64_t lim = STORE_TS_LIMIT - 1;
    int64_t jts[] = {-lim, -lim + 1, -1, 0, 1, 2, 1000, lim / 2, lim - 1, lim};
    double jv[] = {9007199254740992.0, -9007199254740992.0, 9007199254740993.0 * 4, -0.0, 0.0,
                   DBL_MAX, -DBL_MAX, DBL_MIN, 5e-324, 0.1};
    roundtrip(jts, jv, 10);
    /* constants and a single point */
    for (int i = 0; i < N; i++) { ts[i] = i * 1000LL; v[i] = 42.5; }
    roundtrip(ts, v, N);
    roundtrip(ts, v, 1);
    /* decimals needing many digits, and mixed integer/float */
    for (int i = 0; i < N; i++) { ts[i] = i * 10LL; v[i] = i % 3 ? i * 0.000000001 : (double)i; }
    roundtrip(ts, v, N);
    for (int i = 0; i < N; i++) v[i] = i % 2 ? 1.0 / 3.0 : -i;
    roundtrip(ts, v, N);
}

static void test_codec_is_compact_for_regular_counters(void **st)
{
    (void)st;
    enum { N = 3600 };
    static int64_t ts[N];
    static double v[N];
    for (int i = 0; i < N; i++) { ts[i] = 1700000000000LL + i * 1000LL; v[i] = 7.0; }
    store_buf b = {0};
    store_chunk_encode(ts, v, N, 3, &b);
    assert_true(b.n < 32);                  /* a constant at a regular interval */
    for (int i = 0; i < N; i++) v[i] = i * 4096.0;
    store_chunk_encode(ts, v, N, 3, &b);
    assert_true(b.n < 32);                  /* a steady counter */
    store_buf_free(&b);
}

static void test_codec_rejects_corrupt_chunks(void **st)
{
    (void)st;
    int64_t ts[] = {1, 2, 3, 50};
    double v[] = {1.5, 2.25, 3, 1e300};
    store_buf b = {0};
    store_chunk_encode(ts, v, 4, 0, &b);
    int64_t *ots = NULL;
    double *ov = NULL;
    size_t on = 0, cap = 0;
    for (size_t cut = 0; cut < b.n; cut++)
        assert_int_equal(store_chunk_decode(b.p, cut, &ots, &ov, &on, &cap), -1);
    uint8_t bad[] = {9, 1, 2, 3};
    assert_int_equal(store_chunk_decode(bad, sizeof bad, &ots, &ov, &on, &cap), -1);
    free(ots);
    free(ov);
    store_buf_free(&b);
}

/* A gauge such as rss (kB, changing now and then by a few hundred: tokens
 * of one and two bytes, runs between them) decodes exactly, and a chunk
 * cut anywhere, also inside a two-byte token, is rejected. */
static void test_codec_reads_a_gauge_exactly_and_rejects_it_cut(void **st)
{
    (void)st;
    enum { N = 600 };
    static int64_t ts[N];
    static double v[N];
    srand(11);
    for (int i = 0; i < N; i++) {
        ts[i] = 1700000000000LL + i * 1000LL;
        v[i] = i == 0 ? 250000 : rand() % 3 ? v[i - 1] : v[i - 1] + rand() % 8000 - 4000;
    }
    roundtrip(ts, v, N);
    store_buf b = {0};
    assert_int_equal(store_chunk_encode(ts, v, N, 0, &b), 0);
    int64_t *ots = NULL;
    double *ov = NULL;
    size_t on = 0, cap = 0;
    for (size_t cut = 0; cut < b.n; cut++)
        assert_int_equal(store_chunk_decode(b.p, cut, &ots, &ov, &on, &cap), -1);
    assert_int_equal(store_chunk_decode(b.p, b.n, &ots, &ov, &on, &cap), 0);
    assert_int_equal(on, N);
    for (int i = 0; i < N; i++) assert_memory_equal(&ov[i], &v[i], sizeof v[i]);
    free(ots);
    free(ov);
    store_buf_free(&b);
}

/* Timestamps a few ms off a regular interval (jobscope's samples) are kept
 * as a grid with packed residuals, plain: smaller than zstd made of the
 * tokens, and read without zstd. */
static void test_codec_packs_jittered_timestamps_without_zstd(void **st)
{
    (void)st;
    enum { N = 3600 };
    static int64_t ts[N], back[N];
    srand(11);
    for (int i = 0; i < N; i++) ts[i] = 1795860000000LL + i * 1000LL + rand() % 4;
    ts[0] = 1795860000000LL + 3; /* the last 3 ms earlier than the first: the step rounds to 1 s */
    ts[N - 1] = 1795860000000LL + (N - 1) * 1000LL;
    store_buf b = {0};
    assert_int_equal(store_ts_encode(ts, N, 9, &b), 0);
    assert_int_equal(b.p[0], 1);            /* plain */
    assert_int_equal(b.p[3], 4);            /* after varint n (2 bytes): the packed grid */
    assert_true(b.n < 920);                 /* 2 bits a timestamp; zstd of the tokens: ~1280 */
    store_buf vb = {0};
    static double v[N];
    assert_int_equal(store_val_encode(v, N, 9, &vb), 0);
    int64_t *ots = NULL;
    double *ov = NULL;
    size_t on = 0, cap = 0;
    assert_int_equal(store_parts_decode(b.p, b.n, vb.p, vb.n, &ots, &ov, &on, &cap), 0);
    assert_int_equal(on, N);
    memcpy(back, ots, sizeof back);
    assert_memory_equal(back, ts, sizeof ts);
    /* residuals up to 255 apart still pack (8 bits each); 256 apart do not */
    for (int i = 0; i < N; i++) ts[i] = 1795860000000LL + i * 1000LL + rand() % 256;
    assert_int_equal(store_ts_encode(ts, N, 9, &b), 0);
    assert_int_equal(b.p[3], 4);
    on = 0;
    assert_int_equal(store_parts_decode(b.p, b.n, vb.p, vb.n, &ots, &ov, &on, &cap), 0);
    assert_memory_equal(ots, ts, sizeof ts);
    ts[7] = 1795860000000LL + 7 * 1000LL + 300;
    assert_int_equal(store_ts_encode(ts, N, 9, &b), 0);
    assert_true(b.p[0] != 1 || b.p[3] != 4);
    on = 0;
    assert_int_equal(store_parts_decode(b.p, b.n, vb.p, vb.n, &ots, &ov, &on, &cap), 0);
    assert_memory_equal(ots, ts, sizeof ts);
    /* every width of residual (0 to 8 bits) at lengths around the 8 bytes
     * the decoder loads at a time */
    const int lens[] = {3, 4, 9, 17, 25, 29, 33, 57, 64, 65, 66, 100, 1001};
    int packed = 0;
    for (int w = 0; w <= 8; w++)
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
            int n = lens[l];
            for (int i = 0; i < n; i++)
                ts[i] = 1795860000000LL + i * 1000LL + (w ? rand() % (1 << w) : 0);
            ts[n - 1] = 1795860000000LL + (n - 1) * 1000LL; /* (the step stays 1 s) */
            store_buf tb = {0}, wb = {0};
            assert_int_equal(store_ts_encode(ts, (size_t)n, 9, &tb), 0);
            assert_int_equal(store_val_encode(v, (size_t)n, 9, &wb), 0);
            if (tb.p[0] == 1 && tb.p[n >= 128 ? 3 : 2] == 4) { /* packed (else: fewer bytes so) */
                packed++;
                on = 0;
                assert_int_equal(store_parts_decode(tb.p, tb.n, wb.p, wb.n, &ots, &ov, &on, &cap),
                                 0);
                assert_int_equal(on, n);
                assert_memory_equal(ots, ts, (size_t)n * sizeof *ts);
            }
            store_buf_free(&tb);
            store_buf_free(&wb);
        }
    assert_true(packed >= 9 * 8);
    /* more than 8 bits a residual is corrupt, and so is a packed part cut short */
    for (int i = 0; i < N; i++) ts[i] = 1795860000000LL + i * 1000LL + rand() % 4;
    assert_int_equal(store_ts_encode(ts, N, 9, &b), 0);
    size_t pos = 4; /* kind, varint n, mode: then step, x0, lo, bits */
    uint64_t skip;
    for (int k = 0; k < 3; k++) assert_int_equal(store_get_varint(b.p, b.n, &pos, &skip), 0);
    assert_int_equal(b.p[pos], 2);
    b.p[pos] = 9;
    on = 0;
    assert_int_equal(store_parts_decode(b.p, b.n, vb.p, vb.n, &ots, &ov, &on, &cap), -1);
    b.p[pos] = 2;
    assert_int_equal(store_parts_decode(b.p, b.n - 1, vb.p, vb.n, &ots, &ov, &on, &cap), -1);
    free(ots);
    free(ov);
    store_buf_free(&b);
    store_buf_free(&vb);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_exact_for_every_kind_of_series),
        cmocka_unit_test(test_codec_is_compact_for_regular_counters),
        cmocka_unit_test(test_codec_rejects_corrupt_chunks),
        cmocka_unit_test(test_codec_reads_a_gauge_exactly_and_rejects_it_cut),
        cmocka_unit_test(test_codec_packs_jittered_timestamps_without_zstd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
