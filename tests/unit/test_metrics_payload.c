/* test_metrics_payload.c — the payload-block scanner (src/metrics/payload.c):
 * markers split across reads at every position, binary bytes around blocks,
 * a block without END, a block over the cap, stripping, and block parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics/payload.h"

typedef struct rec {
    char *out;
    size_t olen, ocap;
    char blocks[8][256];
    size_t blens[8];
    int nblocks;
    char errors[8][64];
    size_t esize[8];
    int nerrors;
} rec;

static void r_out(void *ctx, const char *p, size_t n)
{
    rec *r = ctx;
    if (r->olen + n > r->ocap) {
        r->ocap = (r->olen + n) * 2 + 64;
        r->out = realloc(r->out, r->ocap);
    }
    memcpy(r->out + r->olen, p, n);
    r->olen += n;
}
static void r_block(void *ctx, const char *p, size_t n)
{
    rec *r = ctx;
    if (r->nblocks < 8) {
        size_t k = n < 255 ? n : 255;
        memcpy(r->blocks[r->nblocks], p, k);
        r->blocks[r->nblocks][k] = 0;
        r->blens[r->nblocks++] = n;
    }
}
static void r_error(void *ctx, const char *reason, size_t size)
{
    rec *r = ctx;
    if (r->nerrors < 8) {
        snprintf(r->errors[r->nerrors], 64, "%s", reason);
        r->esize[r->nerrors++] = size;
    }
}

static payload_scanner *mk(rec *r, int strip, size_t cap)
{
    memset(r, 0, sizeof *r);
    payload_cbs cb = {r_out, r_block, r_error, r};
    return payload_new(strip, cap, &cb);
}

/* feeds s in pieces of the given sizes (cycled) */
static void feed_split(payload_scanner *sc, const char *s, size_t n, size_t step)
{
    for (size_t i = 0; i < n; i += step) payload_feed(sc, s + i, i + step <= n ? step : n - i);
}

static const char DOC[] = "hello\n@@@MONITORING_PAYLOAD - START@@@\n{\"payload\":[{\"a\":1}]}\n"
                          "@@@MONITORING_PAYLOAD - END@@@\nbye @@ @@@ @@@MON\n";

static void test_split_everywhere(void **state)
{
    size_t n = sizeof DOC - 1;
    for (int strip = 0; strip <= 1; strip++)
        for (size_t step = 1; step <= n; step++) {
            rec r;
            payload_scanner *sc = mk(&r, strip, 0);
            feed_split(sc, DOC, n, step);
            payload_finish(sc);
            assert_int_equal(r.nblocks, 1);
            assert_string_equal(r.blocks[0], "\n{\"payload\":[{\"a\":1}]}\n");
            assert_int_equal(r.nerrors, 0);
            if (strip) {
                const char want[] = "hello\nbye @@ @@@ @@@MON\n";
                assert_int_equal(r.olen, sizeof want - 1);
                assert_memory_equal(r.out, want, r.olen);
            } else {
                assert_int_equal(r.olen, n);
                assert_memory_equal(r.out, DOC, n);
            }
            payload_free(sc);
            free(r.out);
        }
}

/* also the case where the split falls between two writes of the job, with
 * the two markers in different chunks and a run of '@' before START */
static void test_two_writes_and_at_runs(void **state)
{
    rec r;
    payload_scanner *sc = mk(&r, 1, 0);
    const char *a = "x@@@@@MONITORING_PAYLOAD - STA";
    const char *b = "RT@@@{\"payload\":[]}@@@@MONITORING_PAYLOAD - END@@@y";
    payload_feed(sc, a, strlen(a));
    payload_feed(sc, b, strlen(b));
    payload_finish(sc);
    assert_int_equal(r.nblocks, 1);
    assert_string_equal(r.blocks[0], "{\"payload\":[]}@");
    assert_int_equal(r.olen, 4);
    assert_memory_equal(r.out, "x@@y", 4);
    payload_free(sc);
    free(r.out);
}

static void test_binary_passthrough(void **state)
{
    size_t n = 300000;
    unsigned char *data = malloc(n);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
        if (i % 997 == 0) data[i] = '@';
    }
    /* embed a block in the middle of binary noise */
    const char blk[] =
        "@@@MONITORING_PAYLOAD - START@@@{\"payload\":[{\"b\":2}]}@@@MONITORING_PAYLOAD - END@@@\n";
    memcpy(data + 150000, blk, sizeof blk - 1);
    for (int strip = 0; strip <= 1; strip++) {
        rec r;
        payload_scanner *sc = mk(&r, strip, 0);
        feed_split(sc, (char *)data, n, 4093);
        payload_finish(sc);
        assert_true(r.nblocks >= 1);
        int found = 0;
        for (int i = 0; i < r.nblocks; i++)
            found |= !strcmp(r.blocks[i], "{\"payload\":[{\"b\":2}]}");
        assert_true(found);
        if (!strip) {
            assert_int_equal(r.olen, n);
            assert_memory_equal(r.out, data, n);
        } else {
            assert_int_equal(r.olen, n - (sizeof blk - 1));
            assert_memory_equal(r.out, data, 150000);
            assert_memory_equal(r.out + 150000, data + 150000 + sizeof blk - 1,
                                n - 150000 - (sizeof blk - 1));
        }
        payload_free(sc);
        free(r.out);
    }
    free(data);
}

static void test_no_end(void **state)
{
    for (int strip = 0; strip <= 1; strip++) {
        rec r;
        payload_scanner *sc = mk(&r, strip, 0);
        const char *s =
            "a\n@@@MONITORING_PAYLOAD - START@@@\n{\"payload\":[{\"x\":1}]}\nrest of output\n";
        payload_feed(sc, s, strlen(s));
        if (strip) assert_true(payload_held(sc) > 0); /* held while the block may still end */
        payload_finish(sc);
        assert_int_equal(r.nblocks, 0);
        assert_int_equal(r.nerrors, 1);
        assert_non_null(strstr(r.errors[0], "without END"));
        assert_int_equal(r.olen, strlen(s)); /* nothing lost, even when stripping */
        assert_memory_equal(r.out, s, r.olen);
        payload_free(sc);
        free(r.out);
    }
}

static void test_huge_block_capped(void **state)
{
    size_t cap = 1024 * 1024;
    for (int strip = 0; strip <= 1; strip++) {
        rec r;
        payload_scanner *sc = mk(&r, strip, cap);
        size_t total = 0;
        const char *st = PAYLOAD_START;
        payload_feed(sc, st, strlen(st));
        total += strlen(st);
        char chunk[65536];
        memset(chunk, 'z', sizeof chunk);
        for (int i = 0; i < 40; i++) { /* 2.5 MiB of content */
            payload_feed(sc, chunk, sizeof chunk);
            total += sizeof chunk;
            assert_true(payload_held(sc) <= cap + 64); /* memory stays bounded */
        }
        const char *en = PAYLOAD_END "tail";
        payload_feed(sc, en, strlen(en));
        total += strlen(en);
        payload_finish(sc);
        assert_int_equal(r.nblocks, 0);
        assert_int_equal(r.nerrors, 1);
        assert_non_null(strstr(r.errors[0], "too large"));
        assert_int_equal(r.olen, total); /* passed on in full */
        assert_memory_equal(r.out + r.olen - 4, "tail", 4);
        payload_free(sc);
        free(r.out);
    }
}

static void test_flush_releases_partial_marker(void **state)
{
    rec r;
    payload_scanner *sc = mk(&r, 1, 0);
    payload_feed(sc, "prompt> @@@MON", 14);
    assert_int_equal(r.olen, 8);
    assert_int_equal(payload_held(sc), 6);
    payload_flush(sc); /* the stream went quiet */
    assert_int_equal(r.olen, 14);
    assert_memory_equal(r.out, "prompt> @@@MON", 14);
    payload_free(sc);
    free(r.out);
}

static void test_abandon_open_block(void **state)
{
    rec r;
    payload_scanner *sc = mk(&r, 1, 0);
    const char *a = "x" PAYLOAD_START "{\"payload\":";
    payload_feed(sc, a, strlen(a));
    assert_int_equal(r.olen, 1);
    payload_abandon(sc, "too long");
    assert_int_equal(r.nerrors, 1);
    assert_int_equal(r.olen, strlen(a)); /* given back */
    assert_int_equal(payload_held(sc), 0);
    const char *b = "[]}" PAYLOAD_END "y"; /* the rest passes through too */
    payload_feed(sc, b, strlen(b));
    payload_finish(sc);
    assert_int_equal(r.nblocks, 0);
    assert_int_equal(r.olen, strlen(a) + strlen(b));
    assert_int_equal(r.nerrors, 1);
    payload_free(sc);
    free(r.out);
}

/* ---- block parsing ---- */

typedef struct evrec {
    int n;
    char name[8][64];
    double ts[8];
    char fields[8][256];
} evrec;
static void ev_cb(void *ctx, const char *name, double ts, const char *f, size_t n)
{
    evrec *e = ctx;
    if (e->n < 8) {
        snprintf(e->name[e->n], 64, "%s", name);
        e->ts[e->n] = ts;
        snprintf(e->fields[e->n], 256, "%.*s", (int)n, f);
        e->n++;
    }
}
static int reserved_host(void *ctx, const char *k, size_t n)
{
    return n == 8 && !memcmp(k, "hostname", 8);
}

static void test_parse_block(void **state)
{
    evrec e = {0};
    const char *err = NULL;
    const char *j =
        "\n{\n  \"monitoring_event\": \"darshan.perf\",\n  \"ts\": 1552878285,\n"
        "  \"payload\": [ { \"a\" : [1, 2.5, \"x y\"], \"ts\": 1552878290, \"hostname\": \"h\","
        " \"event\": \"e\", \"s\": \"q\\\" \\u00e9 \u00e9\" }, {} ] }\n";
    int n = payload_parse(j, strlen(j), 99, ev_cb, reserved_host, &e, &err);
    assert_int_equal(n, 2);
    assert_string_equal(e.name[0], "darshan.perf");
    assert_true(e.ts[0] == 1552878290);
    assert_true(e.ts[1] == 1552878285);
    assert_string_equal(e.fields[0], "\"a\":[1,2.5,\"x y\"],\"s\":\"q\\\" \\u00e9 \u00e9\"");
    assert_string_equal(e.fields[1], "");
}

/* issue 16.12: reserved keys written with escapes ("\u0065vent") were
 * emitted verbatim, so the line had duplicate keys and readers took the
 * spoofed values; equal decoded keys in one item made duplicates too */
static void test_escaped_reserved_keys_are_not_spoofed(void **state)
{
    evrec e = {0};
    const char *err = NULL;
    const char *j =
        "{\"ts\":7,\"payload\":[{\"\\u0065vent\":\"spoofed\",\"hostn\\u0061me\":\"evil\","
        "\"t\\u0073\":-1,\"s\\u0065q\":5,\"a\":1,\"b\":true,\"\\u0061\":2}]}";
    assert_int_equal(payload_parse(j, strlen(j), 99, ev_cb, reserved_host, &e, &err), 1);
    assert_true(e.ts[0] == 7);
    assert_string_equal(e.fields[0], "\"b\":true,\"\\u0061\":2"); /* the last "a" wins */
}

static void test_parse_defaults_and_errors(void **state)
{
    evrec e = {0};
    const char *err = NULL;
    const char *j = "{\"payload\":[{\"k\":true}]}";
    assert_int_equal(payload_parse(j, strlen(j), 42.5, ev_cb, NULL, &e, &err), 1);
    assert_string_equal(e.name[0], "monitoring.additional");
    assert_true(e.ts[0] == 42.5);
    const char *bad[] = {
        "",
        "[]",
        "{\"payload\": 3}",
        "{\"payload\": [1]}",
        "{\"x\":1}",
        "{\"payload\":[]} trailing",
        "{\"payload\":[{\"a\":01}]}",
        "{\"payload\":[{\"a\":\"\x01\"}]}",
        "{\"payload\":[{\"a\":\"\xff\"}]}",
        "{\"monitoring_event\":\"bad name\",\"payload\":[]}",
        "{\"ts\":\"now\",\"payload\":[]}",
        "{\"payload\":[{\"a\":1,}]}",
        "{\"payload\":[{\"a\" 1}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.n = 0;
        err = NULL;
        assert_int_equal(payload_parse(bad[i], strlen(bad[i]), 1, ev_cb, NULL, &e, &err), -1);
        assert_non_null(err);
        assert_int_equal(e.n, 0); /* all or nothing */
    }
    /* nesting is bounded */
    char deep[400];
    size_t k = 0;
    k += (size_t)sprintf(deep, "{\"payload\":[{\"a\":");
    for (int i = 0; i < 100; i++) deep[k++] = '[';
    for (int i = 0; i < 100; i++) deep[k++] = ']';
    k += (size_t)sprintf(deep + k, "}]}");
    assert_int_equal(payload_parse(deep, k, 1, ev_cb, NULL, &e, &err), -1);
}

/* 27.8: "ts":1e999 gave "ts":null.  A timestamp is epoch seconds in
 * [1, 1e11) as on the wire: a block's that is not makes the block
 * malformed, an item's that is not is passed over for the block's. */
static void test_a_timestamp_out_of_range_is_no_timestamp(void **state)
{
    evrec e = {0};
    const char *err = NULL;
    const char *bad[] = {"{\"ts\":1e999,\"payload\":[{\"a\":1}]}",
                         "{\"ts\":-5,\"payload\":[{\"a\":1}]}",
                         "{\"ts\":1e11,\"payload\":[{\"a\":1}]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        assert_int_equal(payload_parse(bad[i], strlen(bad[i]), 1, ev_cb, NULL, &e, &err), -1);
        assert_non_null(strstr(err, "epoch seconds"));
    }
    assert_int_equal(e.n, 0);
    const char *j = "{\"ts\":1700000000,\"payload\":[{\"ts\":1e999,\"a\":1},{\"ts\":0.5},"
                    "{\"ts\":1700000001.25}]}";
    assert_int_equal(payload_parse(j, strlen(j), 99, ev_cb, NULL, &e, &err), 3);
    assert_true(e.ts[0] == 1700000000);
    assert_true(e.ts[1] == 1700000000);
    assert_true(e.ts[2] == 1700000001.25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_everywhere),
        cmocka_unit_test(test_two_writes_and_at_runs),
        cmocka_unit_test(test_binary_passthrough),
        cmocka_unit_test(test_no_end),
        cmocka_unit_test(test_huge_block_capped),
        cmocka_unit_test(test_flush_releases_partial_marker),
        cmocka_unit_test(test_abandon_open_block),
        cmocka_unit_test(test_parse_block),
        cmocka_unit_test(test_escaped_reserved_keys_are_not_spoofed),
        cmocka_unit_test(test_parse_defaults_and_errors),
        cmocka_unit_test(test_a_timestamp_out_of_range_is_no_timestamp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
