/* test_server_peers.c — the pure parts of the peers module (src/server/peers.c):
 * peer specifications and the merging of the answers of several nodes for
 * /api/suggest, /api/search/lookup and /api/query/last.  The fan-out itself
 * runs against real servers in tests/integration/85_serve_peers.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server/peers.h"

static void test_peer_specs(void **state)
{
    (void)state;
    char out[256], err[256];
    assert_int_equal(peers_base_url("node1", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "http://node1:4242");
    assert_int_equal(peers_base_url("node1:4343", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "http://node1:4343");
    assert_int_equal(peers_base_url("http://10.0.0.7:80", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "http://10.0.0.7:80");
    assert_int_equal(peers_base_url("[::1]:4242", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "http://[::1]:4242");
    assert_int_equal(peers_base_url("node1:0", out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad port"));
    assert_int_equal(peers_base_url("node1:42x", out, sizeof out, err, sizeof err), -1);
    assert_int_equal(peers_base_url("https://node1", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "https://node1:4242");
    assert_int_equal(peers_base_url("ftp://node1", out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "only http:// and https://"));
    assert_int_equal(peers_base_url("", out, sizeof out, err, sizeof err), -1);
    assert_int_equal(peers_base_url("no de", out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad host"));
}

static server_peer_reply rep(int status, const char *body)
{
    server_peer_reply r = { "p", status, body ? strdup(body) : NULL, body ? strlen(body) : 0 };
    return r;
}

static void free_reps(server_peer_reply *r, int n)
{
    for (int i = 0; i < n; i++) free(r[i].body);
}

static void test_suggest_is_sorted_union_cut_to_max(void **state)
{
    (void)state;
    const char *local = "[\"b.x\",\"d.y\"]";
    server_peer_reply r[3] = { rep(200, "[\"a.z\",\"b.x\",\"c\"]"), rep(0, NULL), rep(500, "{\"error\":{}}") };
    size_t len;
    char *m = peers_merge_suggest(local, strlen(local), r, 3, 25, &len);
    assert_non_null(m);
    assert_string_equal(m, "[\"a.z\",\"b.x\",\"c\",\"d.y\"]");
    assert_int_equal(len, strlen(m));
    free(m);
    m = peers_merge_suggest(local, strlen(local), r, 3, 2, &len);
    assert_string_equal(m, "[\"a.z\",\"b.x\"]");
    free(m);
    /* a local answer that is not a list is left alone */
    assert_null(peers_merge_suggest("{}", 2, r, 3, 25, &len));
    free_reps(r, 3);
}

static void test_lookup_is_union_of_distinct_series(void **state)
{
    (void)state;
    const char *local = "{\"type\":\"LOOKUP\",\"metric\":\"m\",\"limit\":25,\"totalResults\":1,"
                        "\"results\":[{\"metric\":\"m\",\"tags\":{\"host\":\"a\"},\"tsuid\":\"1\"}]}";
    server_peer_reply r[2] = {
        rep(200, "{\"results\":[{\"metric\":\"m\",\"tags\":{\"host\":\"b\"},\"tsuid\":\"1\"},"
                 "{\"metric\":\"m\",\"tags\":{\"host\":\"a\"},\"tsuid\":\"9\"}],\"totalResults\":2}"),
        rep(200, "not json"),
    };
    size_t len;
    char *m = peers_merge_lookup(local, strlen(local), r, 2, &len);
    assert_non_null(m);
    assert_non_null(strstr(m, "\"totalResults\":2"));
    assert_non_null(strstr(m, "\"host\":\"b\""));
    assert_non_null(strstr(m, "\"type\":\"LOOKUP\""));
    /* host=a is there once */
    const char *first = strstr(m, "\"host\":\"a\"");
    assert_non_null(first);
    assert_null(strstr(first + 1, "\"host\":\"a\""));
    free(m);
    free_reps(r, 2);
}

static void test_last_is_concatenation(void **state)
{
    (void)state;
    const char *local = "[{\"metric\":\"m\",\"value\":\"1\"}]";
    server_peer_reply r[2] = { rep(200, "[{\"metric\":\"m\",\"value\":\"2\"}]"), rep(200, "[]") };
    size_t len;
    char *m = peers_merge_concat(local, strlen(local), r, 2, &len);
    assert_string_equal(m, "[{\"metric\":\"m\",\"value\":\"1\"},{\"metric\":\"m\",\"value\":\"2\"}]");
    free(m);
    free_reps(r, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peer_specs),
        cmocka_unit_test(test_suggest_is_sorted_union_cut_to_max),
        cmocka_unit_test(test_lookup_is_union_of_distinct_series),
        cmocka_unit_test(test_last_is_concatenation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
