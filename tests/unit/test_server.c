/* test_server.c — the server core without HTTP: option parsers, the config
 * file, events turned into points (names, tags, values), the hooks and the
 * live per-job values behind /metrics (src/server/server.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "server/server.h"
#include "server/lineproto.h"
#include "server/live.h"

static void parse_durations_and_sizes(void **st)
{
    (void)st;
    double d;
    long long n;
    assert_int_equal(server_parse_duration("30d", &d), 0);
    assert_true(d == 30 * 86400);
    assert_int_equal(server_parse_duration("1.5h", &d), 0);
    assert_true(d == 5400);
    assert_int_equal(server_parse_duration("250ms", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(server_parse_duration("12", &d), 0);
    assert_true(d == 12);
    assert_int_equal(server_parse_duration("-1s", &d), -1);
    assert_int_equal(server_parse_duration("3 parsecs", &d), -1);
    assert_int_equal(server_parse_duration("", &d), -1);
    assert_int_equal(server_parse_size("10G", &n), 0);
    assert_true(n == 10LL << 30);
    assert_int_equal(server_parse_size("512MiB", &n), 0);
    assert_true(n == 512LL << 20);
    assert_int_equal(server_parse_size("4096", &n), 0);
    assert_true(n == 4096);
    assert_int_equal(server_parse_size("1X", &n), -1);
    assert_int_equal(server_parse_size("1e30T", &n), -1);
}

static void config_file_lines_and_errors(void **st)
{
    (void)st;
    char path[] = "/tmp/test_server_conf.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "# comment\n\nlisten = 0.0.0.0:5000\nstore='/data/js'\nretention = 2w\n"
                       "peers = a:1, b:2\npeers = c:3\nforward = influx://x/db\nbody-limit = 1M\n";
    assert_int_equal(write(fd, text, strlen(text)), (int)strlen(text));
    close(fd);
    server_config c;
    char err[256];
    server_config_defaults(&c);
    assert_string_equal(c.listen, "127.0.0.1:4242");
    assert_int_equal(server_config_load(&c, path, err, sizeof err), 0);
    assert_string_equal(c.listen, "0.0.0.0:5000");
    assert_true(c.listen_given);
    assert_string_equal(c.store_dir, "/data/js");
    assert_true(c.retention_s == 14 * 86400);
    assert_int_equal(c.peers.n, 3);
    assert_string_equal(c.peers.v[2], "c:3");
    assert_int_equal(c.forward.n, 1);
    assert_int_equal((int)c.body_limit, 1 << 20);
    server_config_free(&c);

    FILE *f = fopen(path, "w");
    fputs("listen = 127.0.0.1:1\nthreads = lots\n", f);
    fclose(f);
    server_config_defaults(&c);
    assert_int_equal(server_config_load(&c, path, err, sizeof err), -1);
    char want[300];
    snprintf(want, sizeof want, "%s:2: threads 'lots'", path);
    assert_non_null(strstr(err, want));
    server_config_free(&c);
    unlink(path);
}

/* ---- a server without listeners over a temporary store ---- */

typedef struct seen {
    int events, points;
    char last_event[256];
} seen;

static void on_event(server *s, const char *json, size_t len, const server_event_fields *f,
                     void *arg)
{
    (void)s, (void)f;
    seen *x = arg;
    x->events++;
    snprintf(x->last_event, sizeof x->last_event, "%.*s", (int)len, json);
}

static void on_points(server *s, const store_point *pts, size_t n, void *arg)
{
    (void)s;
    (void)pts;
    ((seen *)arg)->points += (int)n;
}

typedef struct found {
    char tags[1024];
    int n;
} found;

static int collect(void *arg, const store_series *se)
{
    found *f = arg;
    size_t o = strlen(f->tags);
    for (int i = 0; i < se->ntags; i++)
        o += (size_t)snprintf(f->tags + o, sizeof f->tags - o, "%s%s=%s",
                              i ? "," : (f->n ? ";" : ""), se->tags[i].key, se->tags[i].value);
    f->n++;
    return 0;
}

static char tmpdir[64];

static server *make_server(seen *x)
{
    strcpy(tmpdir, "/tmp/test_server.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    server_config c;
    server_config_defaults(&c);
    free(c.store_dir);
    c.store_dir = strdup(tmpdir);
    char err[256] = "";
    static const server_module *const modules[] = {&core_module, &ingest_module, &query_module,
                                                   NULL};
    server *s = server_create(&c, modules, err, sizeof err);
    if (!s) fail_msg("server_create: %s", err);
    server_on_event(s, on_event, x);
    server_on_points(s, on_points, x);
    return s;
}

static void drop_server(server *s)
{
    server_destroy(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    assert_int_equal(system(cmd), 0);
}

static void events_become_points_with_string_tags(void **st)
{
    (void)st;
    seen x = {0};
    server *s = make_server(&x);
    char err[256];
    const char *ev =
        "{\"event\":\"kickstart.inv.online\",\"ts\":1700000000.25,\"hostname\":\"n1\",\"site\":"
        "null,"
        "\"wf_uuid\":\"w1\",\"rank\":2,\"job_id\":\"j1\",\"pid\":7,\"rss\":100,\"utime\":1.5,"
        "\"exe\":\"/bin/x\",\"ok\":true,\"cg_io\":[1],\"tags\":{\"team\":\"a\"},\"seq\":3}";
    /* pid, rss, utime: three numbers (ts, seq, rank are not values) */
    assert_int_equal(server_ingest_event(s, ev, strlen(ev), err, sizeof err), 3);
    assert_int_equal(x.events, 1);
    assert_int_equal(x.points, 3);
    assert_string_equal(x.last_event, ev);
    found f = {0};
    store_series_of(s->st, "kickstart.inv.online.rss", collect, &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.tags, "host=n1,job_id=j1,rank=2,team=a,wf_uuid=w1");
    char **names = NULL;
    int n = store_names(s->st, STORE_METRICS, "kickstart.inv.online.", 100, &names);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "kickstart.inv.online.pid");
    assert_string_equal(names[1], "kickstart.inv.online.rss");
    assert_string_equal(names[2], "kickstart.inv.online.utime");
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);

    /* custom metrics, GPU tags, nested numbers */
    const char *m =
        "{\"event\":\"jobscope.metric\",\"ts\":1700000001,\"hostname\":\"n1\",\"job_id\":\"j1\","
        "\"rank\":0,\"name\":\"loss\",\"value\":0.5,\"level\":1,\"tags\":{\"phase\":\"train\"}}\n"
        "{\"event\":\"kickstart.inv.online.gpu.stats\",\"ts\":1700000001,\"hostname\":\"n1\","
        "\"job_id\":\"j1\",\"rank\":0,\"id\":1,\"uuid\":\"GPU-x\",\"gpu_utilization\":9}\n"
        "{\"event\":\"jobscope.start\",\"ts\":1700000000,\"hostname\":\"n1\",\"job_id\":\"j1\","
        "\"rlimits\":{\"nofile\":{\"soft\":1024,\"hard\":null}}}\n"
        "not json\n\n";
    size_t ok = 0, bad = 0;
    assert_int_equal(server_ingest_ndjson(s, m, strlen(m), &ok, &bad, err, sizeof err), 3);
    assert_int_equal((int)ok, 3);
    assert_int_equal((int)bad, 1);
    assert_non_null(strstr(err, "line 4"));
    memset(&f, 0, sizeof f);
    store_series_of(s->st, "jobscope.metric.loss", collect, &f);
    assert_string_equal(f.tags, "host=n1,job_id=j1,phase=train,rank=0");
    memset(&f, 0, sizeof f);
    store_series_of(s->st, "kickstart.inv.online.gpu.stats.gpu_utilization", collect, &f);
    assert_string_equal(f.tags, "gpu=1,gpu_uuid=GPU-x,host=n1,job_id=j1,rank=0");
    memset(&f, 0, sizeof f);
    store_series_of(s->st, "jobscope.start.rlimits.nofile.soft", collect, &f);
    assert_int_equal(f.n, 1);

    /* not an event */
    assert_int_equal(server_ingest_event(s, "{\"x\":1}", 7, err, sizeof err), -1);
    assert_int_equal(server_ingest_event(s, "[1]", 3, err, sizeof err), -1);
    drop_server(s);
}

static void live_values_follow_running_jobs(void **st)
{
    (void)st;
    seen x = {0};
    server *s = make_server(&x);
    char err[256];
    const char *ev = "{\"event\":\"kickstart.inv.online\",\"ts\":1700000000,\"hostname\":\"n1\","
                     "\"job_id\":\"j1\","
                     "\"rank\":0,\"rss\":100,\"read_bytes\":5,\"deviceUtilization\":3}\n"
                     "{\"event\":\"kickstart.inv.online\",\"ts\":1700000001,\"hostname\":\"n1\","
                     "\"job_id\":\"j1\","
                     "\"rank\":0,\"rss\":200,\"read_bytes\":9,\"deviceUtilization\":4}\n"
                     "{\"event\":\"kickstart.inv.online\",\"ts\":1700000001,\"hostname\":\"n2\","
                     "\"job_id\":\"j2\","
                     "\"rank\":0,\"rss\":7}\n";
    size_t ok, bad;
    assert_true(server_ingest_ndjson(s, ev, strlen(ev), &ok, &bad, err, sizeof err) > 0);
    sbuf b = {0};
    server_live_metrics(s, &b);
    assert_non_null(strstr(b.p, "# TYPE jobscope_kickstart_inv_online_rss gauge\n"));
    assert_non_null(strstr(
        b.p, "jobscope_kickstart_inv_online_rss{host=\"n1\",job_id=\"j1\",rank=\"0\"} 200\n"));
    assert_non_null(strstr(b.p, "# TYPE jobscope_kickstart_inv_online_read_bytes_total counter\n"));
    assert_non_null(strstr(b.p, "jobscope_kickstart_inv_online_read_bytes_total{host=\"n1\",job_id="
                                "\"j1\",rank=\"0\"} 9\n"));
    assert_non_null(strstr(b.p, "jobscope_kickstart_inv_online_device_utilization{"));
    assert_non_null(strstr(b.p, "job_id=\"j2\""));
    /* one TYPE line per family even with two jobs */
    const char *t1 = strstr(b.p, "# TYPE jobscope_kickstart_inv_online_rss ");
    assert_null(strstr(t1 + 1, "# TYPE jobscope_kickstart_inv_online_rss "));
    sbuf_free(&b);
    const char *end = "{\"event\":\"jobscope.end\",\"ts\":1700000002,\"hostname\":\"n1\",\"job_"
                      "id\":\"j1\",\"rank\":0,\"exitcode\":0}";
    assert_true(server_ingest_event(s, end, strlen(end), err, sizeof err) >= 0);
    server_live_metrics(s, &b);
    assert_null(strstr(b.p, "job_id=\"j1\""));
    assert_non_null(strstr(b.p, "job_id=\"j2\""));
    sbuf_free(&b);
    /* expiry of series not updated */
    server_live_expire(s, server_now_ms() + 1);
    server_live_metrics(s, &b);
    assert_true(b.len == 0 || !strstr(b.p, "job_id"));
    sbuf_free(&b);
    drop_server(s);
}

/* A site collector's million jobs: the live table keeps at most 200,000
 * series (docs/serve.md "Limits"), sets included, counts the points it left
 * out, and still updates the series it holds and takes new ones once a job
 * ended and made room. */
static void live_values_are_bounded_and_count_what_they_leave_out(void **st)
{
    (void)st;
    live_table *p = live_new();
    assert_non_null(p);
    enum { N = 250000, B = 5000 };
    static char ids[N][16];
    store_tag(*tags)[2] = calloc(B, sizeof *tags);
    store_point *pts = calloc(B, sizeof *pts);
    assert_non_null(tags);
    assert_non_null(pts);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < N; i += B) {
            for (int k = 0; k < B; k++) {
                snprintf(ids[i + k], sizeof ids[i + k], "j%d", i + k);
                tags[k][0] = (store_tag){"host", "n1"};
                tags[k][1] = (store_tag){"job_id", ids[i + k]};
                pts[k] =
                    (store_point){"kickstart.inv.online.rss", tags[k], 2, 1700000000000, round + 1};
            }
            live_update(p, pts, B, 1700000000000);
        }
    live_stats ls = live_get_stats(p);
    assert_int_equal(ls.series, 200000);
    assert_int_equal(ls.sets, 200000); /* no set without a series */
    assert_int_equal(ls.left_out, 2 * (N - 200000));
    sbuf b = {0};
    live_metrics(p, &b);
    assert_non_null(strstr(b.p, "\njobscope_serve_live_left_out_points_total 100000\n"));
    /* the second round updated what the table holds */
    assert_non_null(strstr(b.p, "{host=\"n1\",job_id=\"j0\"} 2\n"));
    assert_non_null(strstr(b.p, "{host=\"n1\",job_id=\"j199999\"} 2\n"));
    assert_null(strstr(b.p, "job_id=\"j200000\""));
    sbuf_free(&b);
    /* a job that ends makes room for one that was left out */
    live_end_job(p, "j7");
    snprintf(ids[0], sizeof ids[0], "j200000");
    pts[0] = (store_point){"kickstart.inv.online.rss", tags[0], 2, 1700000000000, 3};
    tags[0][1].value = ids[0];
    live_update(p, pts, 1, 1700000000000);
    assert_int_equal(live_count(p), 200000);
    live_metrics(p, &b);
    assert_non_null(strstr(b.p, "{host=\"n1\",job_id=\"j200000\"} 3\n"));
    assert_null(strstr(b.p, "job_id=\"j7\""));
    sbuf_free(&b);
    free(tags);
    free(pts);
    live_free(p);
}

/* The points /api/put hands on, as "metric|k=v,...|value|shared" lines
 * (shared: the same tags array as the point before). */
static void put_points_text(server *s, const store_point *pts, size_t n, void *arg)
{
    (void)s;
    sbuf *o = arg;
    for (size_t i = 0; i < n; i++) {
        sbuf_printf(o, "%s|", pts[i].metric);
        for (int t = 0; t < pts[i].ntags; t++)
            sbuf_printf(o, "%s%s=%s", t ? "," : "", pts[i].tags[t].key, pts[i].tags[t].value);
        sbuf_printf(o, "|%g|%d\n", pts[i].value, i && pts[i].tags == pts[i - 1].tags);
    }
}

/* POST /api/put: a point whose tags read as the point's before it shares
 * that point's tags (the store and the live values key the set once per
 * run); any difference — order, count, a value, a number's text, a key
 * given twice, an escape, a point refused in between — keeps every point
 * with its own tags, in the store as in the hooks. */
static void put_points_with_the_tags_of_the_point_before_share_them(void **st)
{
    (void)st;
    seen x = {0};
    server *s = make_server(&x);
    sbuf got = {0};
    server_on_points(s, put_points_text, &got);
    const char *body = "[{\"metric\":\"p.a\",\"timestamp\":1700000000,\"value\":1,\"tags\":{"
                       "\"host\":\"a\",\"dc\":\"x\"}},"
                       "{\"metric\":\"p.b\",\"timestamp\":1700000000,\"value\":2,\"tags\":{"
                       "\"host\":\"a\",\"dc\":\"x\"}},"
                       "{\"metric\":\"p.a\",\"timestamp\":1700000001,\"value\":3,\"tags\":{\"dc\":"
                       "\"x\",\"host\":\"a\"}},"
                       "{\"metric\":\"p.a\",\"timestamp\":1700000001,\"value\":4,\"tags\":{\"dc\":"
                       "\"x\",\"host\":\"a b\"}},"
                       "{\"metric\":\"p.b\",\"timestamp\":1700000001,\"value\":5,\"tags\":{\"dc\":"
                       "\"x\",\"host\":\"a\"}},"
                       "{\"metric\":\"p.a\",\"timestamp\":1700000002,\"value\":6,\"tags\":{\"dc\":"
                       "\"x\",\"host\":\"a\","
                       "\"rack\":\"r1\"}},"
                       "{\"metric\":\"p.a\",\"timestamp\":1700000002,\"value\":7,\"tags\":{\"dc\":"
                       "\"x\",\"host\":\"a\"}},"
                       "{\"metric\":\"p.a\",\"timestamp\":1700000003,\"value\":8,\"tags\":{\"dc\":"
                       "\"x\",\"host\":5}},"
                       "{\"metric\":\"p.b\",\"timestamp\":1700000003,\"value\":9,\"tags\":{\"dc\":"
                       "\"x\",\"host\":\"5\"}},"
                       "{\"metric\":\"p.b\",\"timestamp\":1700000003,\"value\":10,\"tags\":{\"dc\":"
                       "\"x\",\"host\":5.5}},"
                       "{\"metric\":\"p.a\",\"timestamp\":1700000004,\"value\":11,\"tags\":{\"dc\":"
                       "\"y\",\"host\":\"5\"}},"
                       "{\"metric\":\"p.a\",\"timestamp\":1700000005,\"value\":12,\"tags\":{\"dc\":"
                       "\"y\",\"dc\":\"z\","
                       "\"host\":\"5\"}},"
                       "{\"metric\":\"p.b\",\"timestamp\":1700000005,\"value\":13,\"tags\":{\"dc\":"
                       "\"\\u007a\",\"host\":\"5\"}}"
                       "]";
    server_request r = {
        .method = "POST", .path = "/api/put", .body = body, .body_len = strlen(body)};
    server_response w = {.status = 200};
    server_dispatch(s, &r, &w);
    assert_int_equal(w.status, 400); /* the fourth point: "a b" is not a tag value */
    assert_non_null(strstr(w.body, "1 of 13 data points"));
    free(w.body);
    assert_string_equal(got.p, "p.a|host=a,dc=x|1|0\n"
                               "p.b|host=a,dc=x|2|1\n"
                               "p.a|dc=x,host=a|3|0\n"
                               "p.b|dc=x,host=a|5|1\n"
                               "p.a|dc=x,host=a,rack=r1|6|0\n"
                               "p.a|dc=x,host=a|7|0\n"
                               "p.a|dc=x,host=5|8|0\n"
                               "p.b|dc=x,host=5|9|1\n"
                               "p.b|dc=x,host=5.5|10|0\n"
                               "p.a|dc=y,host=5|11|0\n"
                               "p.a|dc=z,host=5|12|0\n"
                               "p.b|dc=z,host=5|13|1\n");
    found f = {"", 0};
    store_series_of(s->st, "p.a", collect, &f);
    assert_int_equal(f.n, 5);
    found g = {"", 0};
    store_series_of(s->st, "p.b", collect, &g);
    assert_int_equal(g.n, 4);
    assert_non_null(strstr(g.tags, "dc=x,host=a"));
    assert_non_null(strstr(g.tags, "dc=x,host=5.5"));
    sbuf_free(&got);
    drop_server(s);
}

/* POST /write's parser (lineproto.c): names, escapes, value kinds, the
 * host tag of a line without tags, precision, and bad lines dropped whole. */
static void line_protocol_lines_become_points(void **st)
{
    (void)st;
    const char *body =
        "cpu,host=a,dc=x\\ y usage=1.25,n=3i,up=t,flag=FALSE,s=\"a \\\" b\" 1700000000123\n"
        "# a comment\n"
        "\n"
        "m\\,x v=1 5000000\n" /* ',' is not allowed in a metric name */
        "m\\em v=-0.1,w=12345678901234567890 5000000\n"
        "disk free=2u\n"
        "bad,host=a v=nope 1\n"
        "bad2,host=a v=1,x.y!=2 1\n";
    lp_batch b = {0};
    size_t lines = 0, bad = 0;
    char first[192] = "";
    assert_int_equal(lineproto_parse(&b, body, strlen(body), 1000000 /* ms */, 42, "node7",
                                     1u << 20, &lines, &bad, first, sizeof first),
                     0);
    assert_int_equal(lines, 6);
    assert_int_equal(bad, 3);
    assert_string_equal(first, "line 4: invalid measurement or field name");
    assert_int_equal(b.n, 7);
    const char *names[] = {"cpu.usage", "cpu.n", "cpu.up",   "cpu.flag",
                           "mem.v",     "mem.w", "disk.free"};
    const double vals[] = {1.25, 3, 1, 0, -0.1, 12345678901234567890.0, 2};
    for (size_t i = 0; i < 7; i++) {
        assert_string_equal(b.pts[i].metric, names[i]);
        assert_true(b.pts[i].value == vals[i]);
    }
    assert_true(b.pts[0].ts_ms == 1700000000123LL);
    assert_true(b.pts[4].ts_ms == 5000000LL);
    assert_true(b.pts[6].ts_ms == 42); /* no timestamp: now */
    assert_int_equal(b.pts[0].ntags, 2);
    assert_ptr_equal(b.pts[0].tags, b.pts[3].tags); /* one tag set per line */
    assert_string_equal(b.pts[0].tags[1].key, "dc");
    assert_string_equal(b.pts[0].tags[1].value, "x y");
    assert_int_equal(b.pts[6].ntags, 1);
    assert_string_equal(b.pts[6].tags[0].key, "host");
    assert_string_equal(b.pts[6].tags[0].value, "node7");
    lineproto_free(&b);

    /* the exact conversion agrees with strtod on decimals of every length */
    char line[64];
    for (int k = 0; k < 2000; k++) {
        snprintf(line, sizeof line, "x v=%d.%0*d", k * 7919 % 100000, 1 + k % 15, k * 104729);
        char *eq = strchr(line, '=') + 1;
        double want = strtod(eq, NULL);
        lp_batch c = {0};
        lines = bad = 0;
        assert_int_equal(lineproto_parse(&c, line, strlen(line), 1, 0, "h", 1u << 20, &lines, &bad,
                                         first, sizeof first),
                         0);
        assert_int_equal(c.n, 1);
        assert_true(c.pts[0].value == want);
        lineproto_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_durations_and_sizes),
        cmocka_unit_test(config_file_lines_and_errors),
        cmocka_unit_test(events_become_points_with_string_tags),
        cmocka_unit_test(live_values_follow_running_jobs),
        cmocka_unit_test(live_values_are_bounded_and_count_what_they_leave_out),
        cmocka_unit_test(line_protocol_lines_become_points),
        cmocka_unit_test(put_points_with_the_tags_of_the_point_before_share_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
