/* test_server_ingest.c — jobscope events into points (src/server/ingest.h):
 * the streaming reader gives exactly the points (and errors) jansson's
 * reading gives, line by line, on real events and on tens of thousands of
 * mutations of them; it is the reader of the events runs send; and the
 * metric catalogue decides what a field becomes: every catalogue field,
 * sent in its event, is stored under the catalogue's series name, is
 * answered by the query API, and is exposed by /metrics as the catalogue's
 * counter or gauge with its help text — a new field is one catalogue line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "model/metric.h"
#include "server/ingest.h"
#include "server/server.h"

/* Real lines of a run (jobscope run, trimmed), and a group's rows. */
static const char *const corpus[] = {
    "{\"event\":\"jobscope.start\",\"ts\":1795632457.618057,\"hostname\":\"vm\",\"site\":\"\","
    "\"wf_uuid\":\"\",\"rank\":0,\"job_id\":\"vm-5367\",\"version\":\"0.1.0\",\"pid\":5370,"
    "\"argv\":[\"sh\",\"-c\",\"sleep 0.3\"],\"interval\":0.100,\"cpus_online\":2,"
    "\"rlimits\":{\"as\":{\"soft\":null,\"hard\":null},\"core\":{\"soft\":0,\"hard\":null},"
    "\"nofile\":{\"soft\":20000,\"hard\":20000}},\"seq\":1}",
    "{\"event\":\"kickstart.inv.online\",\"ts\":1795632457.718640,\"hostname\":\"vm\",\"site\":"
    "\"\","
    "\"wf_uuid\":\"\",\"wf_label\":\"\",\"dag_job_id\":\"\",\"condor_job_id\":\"\",\"xformation\":"
    "\"\","
    "\"task_id\":\"\",\"rank\":0,\"job_id\":\"vm-5367\",\"pid\":5370,\"exe\":\"/usr/bin/dash\","
    "\"elapsed\":0.097,\"utime\":0.000,\"stime\":0.000,\"iowait\":0.000,\"bread\":0,\"bwrite\":0,"
    "\"rchar\":52446732,\"wchar\":52428896,\"syscr\":78,\"syscw\":53,\"read_bytes\":0,"
    "\"write_bytes\":0,\"cancelled_write_bytes\":0,\"minflt\":479,\"majflt\":0,\"nvcsw\":2,"
    "\"nivcsw\":1,\"vm\":5512,\"rss\":3288,\"swap\":0,\"procs\":2,\"threads\":2,"
    "\"cpu_percent\":0.00,\"max_hwm\":1832,\"total_procs\":3,\"bsend\":0,\"brecv\":0,"
    "\"total_processes\":3,\"cg_cpu_usage\":0.005009,\"cg_memory_current\":921600,"
    "\"cg_io_rbytes\":4097000,\"cg_io\":[{\"dev\":\"254:0\",\"rbytes\":4096000,\"wbytes\":8192000,"
    "\"rios\":100,\"wios\":200},{\"dev\":\"253:0\",\"rbytes\":1000,\"wbytes\":2000,\"rios\":1,"
    "\"wios\":2}],\"seq\":3}",
    "{\"event\":\"kickstart.inv.online.gpu.stats\",\"ts\":1700000001,\"hostname\":\"n1\","
    "\"job_id\":\"j1\",\"wf_label\":\"w\",\"site\":\"s\",\"dag_job_id\":\"d\",\"condor_job_id\":"
    "\"c\","
    "\"xformation\":\"x\",\"task_id\":\"t\",\"wf_uuid\":\"u\",\"rank\":0,\"id\":1,\"uuid\":\"GPU-"
    "x\",\"name\":\"A100\",\"temp\":41,"
    "\"power_usage\":60000,\"gpu_utilization\":9,\"job_sm_util\":null,\"job_util_source\":\"none\","
    "\"procs\":[{\"pid\":1,\"mem\":2}],\"seq\":4}",
    "{\"event\":\"jobscope.metric\",\"ts\":1700000001.5,\"hostname\":\"n1\",\"job_id\":\"j1\","
    "\"rank\":0,\"name\":\"loss\",\"value\":0.5,\"level\":1,\"tags\":{\"phase\":\"train\","
    "\"epoch\":3,\"lr\":0.001,\"ok\":true,\"deep\":{\"x\":1}}}",
    "{\"event\":\"jobscope.end\",\"ts\":1795632457.927291,\"hostname\":\"vm\",\"rank\":0,"
    "\"job_id\":\"vm-5367\",\"exit_code\":0,\"signal\":null,\"duration\":0.308702,"
    "\"peaks\":{\"rss\":{\"value\":3288,\"ts\":1795632457.718640},\"max_process_hwm\":2900},"
    "\"metrics\":{\"dropped\":{\"malformed\":0,\"deeper\":{\"still\":{\"too\":{\"deep\":1}}}}},"
    "\"seq\":7}",
    /* shapes at the edges of the rule */
    "{\"event\":\"e\",\"ts\":\"later\",\"host\":\"h\",\"id\":\"gpu-a\",\"rank\":2.5,\"x\":-0,"
    "\"y\":-0.0,\"z\":1e-320,\"big\":9007199254740993,\"e\\u0301\":1,\"a b\":2}",
    "{\"event\":\"e\",\"ts\":1,\"x\":1,\"x\":2,\"hostname\":\"a\",\"hostname\":\"b\"}",
    "{\"event\":\"e\",\"ts\":1e14,\"x\":1}",
    "{\"event\":\"\",\"x\":1}",
    "{\"x\":1}",
    "[1,2]",
    "17",
    "{\"event\":\"e\",\"x\":1,}",
    "{\"event\":\"e\",\"s\":\"\\u0000\"}",
    "{\"event\":\"e\",\"n\":123456789012345678901234}",
    /* integers at 64 bits' edge: 18 digits never overflow, 19 may */
    "{\"event\":\"e\",\"a\":999999999999999999,\"b\":-999999999999999999,"
    "\"c\":9223372036854775807,\"d\":-9223372036854775808,\"e\":-0}",
    "{\"event\":\"e\",\"n\":9223372036854775808}",
    "{\"event\":\"e\",\"n\":-9223372036854775809}",
    "{\"event\":\"e\",\"n\":-0000000000000000001}",
    "{\"event\":\"e\",\"r\":1e400}",
    "  {\"event\" : \"e\" , \"ts\" : 1700000000 , \"v\" : 3 }  \r",
    "{\"event\":\"kickstart.inv.online\",\"ts\":1,\"job_id\":\"j\",\"cg_io\":[{\"rbytes\":1},7,"
    "{\"dev\":8,\"rbytes\":2},{\"dev\":\"8:0\",\"rbytes\":3,\"other\":4,\"rbytes\":5}]}",
    "{\"event\":\"kickstart.inv.online\",\"ts\":1,\"job_id\":\"j\",\"cg_io\":[{\"dev\":\"8:0\","
    "\"rbytes\":3,\"nested\":{\"a\":[1,{}]},\"wios\":1.5}],\"tags\":{\"dev\":\"custom\"}}",
    "{\"event\":\"e\",\"ts\":1,\"tags\":{\"t1\":\"a\",\"t1\":\"b\"},\"v\":1}",
    "{\"event\":\"e\",\"ts\":1,\"tags\":[1],\"batch\":3,\"seq\":4,\"v\":1}",
};
#define NCORPUS (sizeof corpus / sizeof corpus[0])

static void same_points(const char *body, size_t len)
{
    ingest_result a, b;
    assert_int_equal(ingest_ndjson_points(body, len, 1234, 0, &a), 0);
    assert_int_equal(ingest_ndjson_points(body, len, 1234, INGEST_JANSSON_ONLY, &b), 0);
    if (a.accepted != b.accepted || a.failed != b.failed || strcmp(a.err, b.err) || a.n != b.n)
        fail_msg("%.300s\nstreaming: %zu/%zu %zu points '%s'\njansson:   %zu/%zu %zu points '%s'",
                 body, a.accepted, a.failed, a.n, a.err, b.accepted, b.failed, b.n, b.err);
    for (size_t i = 0; i < a.n; i++) {
        const store_point *x = &a.pts[i], *y = &b.pts[i];
        int same = !strcmp(x->metric, y->metric) && x->ntags == y->ntags && x->ts_ms == y->ts_ms &&
                   !memcmp(&x->value, &y->value, sizeof x->value);
        for (int t = 0; same && t < x->ntags; t++)
            same = !strcmp(x->tags[t].key, y->tags[t].key) &&
                   !strcmp(x->tags[t].value, y->tags[t].value);
        if (!same)
            fail_msg("%.300s\npoint %zu: %s=%.17g (%d tags) against %s=%.17g (%d tags)", body, i,
                     x->metric, x->value, x->ntags, y->metric, y->value, y->ntags);
    }
    ingest_result_free(&a);
    ingest_result_free(&b);
}

static void the_streaming_reader_gives_the_points_and_errors_jansson_gives(void **st)
{
    (void)st;
    char body[65536] = "";
    for (size_t i = 0; i < NCORPUS; i++) {
        same_points(corpus[i], strlen(corpus[i]));
        strcat(body, corpus[i]);
        strcat(body, "\n\n");
    }
    same_points(body, strlen(body)); /* a whole body: shared tags, line numbers */

    /* mutations of the real lines: a byte replaced, dropped or doubled */
    static const char pick[] = "{}[]\",:.-+eE0123456789 \\u\tntf";
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char line[4096];
    for (int it = 0; it < 30000; it++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const char *src = corpus[(seed >> 33) % 5];
        size_t n = strlen(src), at = (size_t)(seed >> 20) % n;
        memcpy(line, src, n + 1);
        int op = (int)((seed >> 8) % 3);
        if (op == 0)
            line[at] = pick[(seed >> 40) % (sizeof pick - 1)];
        else if (op == 1)
            memmove(line + at, line + at + 1, n - at);
        else {
            memmove(line + at + 1, line + at, n - at + 1);
            n++;
        }
        same_points(line, strlen(line));
    }
}

/* An event's values are named by their own names, whatever the event
 * before had at the same places (the names of the last event are kept). */
static void each_value_is_named_by_its_own_event_and_key(void **st)
{
    (void)st;
    const char *body = "{\"event\":\"e\",\"ts\":1,\"a\":1,\"b\":2}\n"
                       "{\"event\":\"e\",\"ts\":1,\"a\":3,\"b\":4}\n"
                       "{\"event\":\"e\",\"ts\":1,\"b\":5,\"a\":6}\n"
                       "{\"event\":\"f\",\"ts\":1,\"b\":7,\"ab\":8}\n"
                       "{\"event\":\"e\",\"ts\":1,\"a b\":9,\"a:b\":10}\n";
    const char *want[] = {"e.a", "e.b", "e.a",  "e.b",   "e.b",
                          "e.a", "f.b", "f.ab", "e.a_b", "e.a_b"};
    for (unsigned flags = 0; flags <= INGEST_JANSSON_ONLY; flags += INGEST_JANSSON_ONLY) {
        ingest_result r;
        assert_int_equal(ingest_ndjson_points(body, strlen(body), 1234, flags, &r), 0);
        assert_int_equal(r.n, 10);
        for (size_t i = 0; i < r.n; i++) {
            assert_string_equal(r.pts[i].metric, want[i]);
            assert_true(r.pts[i].value == (double)(i + 1));
        }
        ingest_result_free(&r);
    }
}

/* An event's tags are its own, whatever the event before had at the same
 * places (the tags of the last event are kept). */
static void each_point_is_tagged_by_its_own_event(void **st)
{
    (void)st;
    const char *body =
        "{\"event\":\"e\",\"ts\":1,\"hostname\":\"n1\",\"job_id\":\"j\",\"a\":1}\n"
        "{\"event\":\"e\",\"ts\":1,\"hostname\":\"n1\",\"job_id\":\"j\",\"a\":2}\n"
        "{\"event\":\"e\",\"ts\":1,\"hostname\":\"n2\",\"job_id\":\"j\",\"a\":3}\n"
        "{\"event\":\"e\",\"ts\":1,\"site\":\"n2\",\"a\":4}\n"
        "{\"event\":\"e\",\"ts\":1,\"site\":\"n2\",\"tags\":{\"k:x\":\"j\"},\"a\":5}\n"
        "{\"event\":\"e\",\"ts\":1,\"site\":\"n2\",\"tags\":{\"k x\":\"j\"},\"a\":6}\n";
    const char *want[] = {"host=n1,job_id=j", "host=n1,job_id=j", "host=n2,job_id=j",
                          "site=n2",          "site=n2,k_x=j",    "site=n2,k_x=j"};
    for (unsigned flags = 0; flags <= INGEST_JANSSON_ONLY; flags += INGEST_JANSSON_ONLY) {
        ingest_result r;
        assert_int_equal(ingest_ndjson_points(body, strlen(body), 1234, flags, &r), 0);
        assert_int_equal(r.n, 6);
        for (size_t i = 0; i < r.n; i++) {
            char tags[256] = "";
            size_t o = 0;
            for (int t = 0; t < r.pts[i].ntags; t++)
                o += (size_t)snprintf(tags + o, sizeof tags - o, "%s%s=%s", t ? "," : "",
                                      r.pts[i].tags[t].key, r.pts[i].tags[t].value);
            assert_string_equal(tags, want[i]);
        }
        ingest_result_free(&r);
    }
}

static void events_of_the_known_shapes_are_read_without_jansson(void **st)
{
    (void)st;
    jread jr;
    jread_init(&jr, "", 0);
    ev_view v = {0};
    for (size_t i = 1; i <= 3; i++) { /* the sample, gpu.stats and a custom metric */
        ev_view_reset(&v);
        assert_int_equal(event_reader_read(&jr, corpus[i], strlen(corpus[i]), &v), 1);
    }
    assert_int_equal(v.nctags, 3); /* phase, epoch, lr: strings and numbers */
    ev_view_reset(&v);
    /* nested objects and keys given twice are jansson's */
    assert_int_equal(event_reader_read(&jr, corpus[0], strlen(corpus[0]), &v), 0);
    ev_view_reset(&v);
    assert_int_equal(event_reader_read(&jr, corpus[6], strlen(corpus[6]), &v), 0);
    ev_view_free(&v);
    jread_free(&jr);
}

/* ---- a line read by the shape of the one before ---- */

static int same_span(ev_span a, ev_span b)
{
    return a.n == b.n && (a.n == 0 || !memcmp(a.s, b.s, a.n));
}

/* The two views hold the same: every field, value, custom tag and string
 * member, in the same order. */
static void same_view(const char *line, const ev_view *a, const ev_view *b)
{
    int same = same_span(a->event, b->event) && a->has_ts == b->has_ts &&
               !memcmp(&a->ts, &b->ts, sizeof a->ts) && same_span(a->hostname, b->hostname) &&
               same_span(a->host, b->host) && same_span(a->uuid, b->uuid) &&
               same_span(a->job_id, b->job_id) && same_span(a->rank, b->rank) &&
               same_span(a->gpu, b->gpu) && same_span(a->mname, b->mname) &&
               a->has_mvalue == b->has_mvalue && !memcmp(&a->mvalue, &b->mvalue, 8) &&
               a->nvals == b->nvals && a->nctags == b->nctags && a->nstrs == b->nstrs;
    for (int i = 0; same && i < EV_NANNOT; i++) same = same_span(a->annot[i], b->annot[i]);
    for (size_t i = 0; same && i < a->nvals; i++)
        same = same_span(a->vals[i].key, b->vals[i].key) &&
               same_span(a->vals[i].field, b->vals[i].field) &&
               same_span(a->vals[i].label, b->vals[i].label) &&
               same_span(a->vals[i].itext, b->vals[i].itext) &&
               !memcmp(&a->vals[i].v, &b->vals[i].v, 8);
    for (size_t i = 0; same && i < a->nctags; i++)
        same = same_span(a->ctags[i].k, b->ctags[i].k) && same_span(a->ctags[i].v, b->ctags[i].v) &&
               a->ctags[i].is_num == b->ctags[i].is_num &&
               !memcmp(&a->ctags[i].num, &b->ctags[i].num, 8);
    for (size_t i = 0; same && i < a->nstrs; i++)
        same = same_span(a->strs[i].k, b->strs[i].k) && same_span(a->strs[i].v, b->strs[i].v);
    if (!same) fail_msg("%.400s\nthe shape's view differs from the full reading's", line);
}

/* Lines as clients write them, one shape each: flat, with a catalogue
 * group's rows, with literals and an array, with custom tags. */
static const char *const shaped[] = {
    "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927842, \"hostname\": \"node001\", "
    "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3333333333333335, \"stime\": "
    "1.0, \"rchar\": 35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, "
    "\"load\": 1.25}",
    "{\"event\":\"kickstart.inv.online\",\"ts\":1795632457.718640,\"hostname\":\"vm\",\"site\":"
    "\"\",\"rank\":0,\"job_id\":\"vm-5367\",\"pid\":5370,\"exe\":\"/usr/bin/dash\",\"rss\":3288,"
    "\"cg_io\":[{\"dev\":\"254:0\",\"rbytes\":4096000,\"wbytes\":8192000,\"rios\":100,"
    "\"wios\":200},{\"dev\":\"253:0\",\"rbytes\":1000,\"wbytes\":2000}],\"id\":3,\"seq\":3}",
    "{\"event\":\"kickstart.inv.online.gpu.stats\",\"ts\":1700000001,\"hostname\":\"n1\","
    "\"id\":1,\"uuid\":\"GPU-x\",\"name\":\"A100\",\"temp\":41,\"job_sm_util\":null,\"on\":true,"
    "\"procs\":[{\"pid\":1,\"mem\":2}],\"seq\":4}",
    "{\"event\":\"jobscope.metric\",\"ts\":1700000001.5,\"hostname\":\"n1\",\"job_id\":\"j1\","
    "\"rank\":0,\"name\":\"loss\",\"value\":0.5,\"level\":1,\"tags\":{\"phase\":\"train\","
    "\"epoch\":3,\"lr\":0.001,\"ok\":true}}",
};
#define NSHAPED (sizeof shaped / sizeof shaped[0])

/* Reads line after the shape's line: the answer and the view are the full
 * reading's; returns whether the shape read it. */
static int read_after(const char *first, const char *line, ev_view *va, ev_view *vb)
{
    ev_shape *sh = calloc(1, sizeof *sh);
    jread ja, jb;
    jread_init(&ja, "", 0);
    jread_init(&jb, "", 0);
    ev_view_reset(va);
    assert_int_equal(event_reader_next(sh, &ja, first, strlen(first), va), 1);
    ev_view_reset(va);
    ev_view_reset(vb);
    size_t n = strlen(line);
    int ra = event_reader_next(sh, &ja, line, n, va), rb = event_reader_read(&jb, line, n, vb);
    if (ra != rb) fail_msg("%.400s\nread %d after a shape, %d in full", line, ra, rb);
    if (ra == 1) same_view(line, va, vb);
    int by_shape = sh->shaped == 1;
    jread_free(&ja);
    jread_free(&jb);
    free(sh);
    return by_shape;
}

static void a_line_written_like_the_one_before_is_read_by_its_shape(void **st)
{
    (void)st;
    ev_view va = {0}, vb = {0};
    /* each line again, and with other values of the same forms */
    for (size_t i = 0; i < NSHAPED; i++) assert_true(read_after(shaped[i], shaped[i], &va, &vb));
    assert_true(read_after(shaped[0],
                           "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927843.25, "
                           "\"hostname\": \"node002\", \"job_id\": \"j17\", \"rss\": -0, \"vm\": "
                           "1e3, \"utime\": 1234567890123456789.5, \"stime\": -0.0, \"rchar\": "
                           "9007199254740993, \"wchar\": 0, \"threads\": 4.5, \"procs\": 2, "
                           "\"iowait\": 0.5E-2, \"load\": 1.25}",
                           &va, &vb));
    /* read in full: a string with an escape or a byte outside ASCII,
     * another member, one space more, a value of another kind */
    static const char *const in_full[] = {
        "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927842, \"hostname\": \"node\\u0031\", "
        "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3, \"stime\": 1.0, \"rchar\": "
        "35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, \"load\": 1.25}",
        "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927842, \"hostname\": \"n\xc3\xa9\", "
        "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3, \"stime\": 1.0, \"rchar\": "
        "35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, \"load\": 1.25}",
        "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927842, \"hostname\": \"node001\", "
        "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3, \"stime\": 1.0, \"rchar\": "
        "35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, \"load\": 1.25, "
        "\"gpus\": 1}",
        "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927842, \"hostname\": \"node001\", "
        "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3, \"stime\": 1.0, \"rchar\": "
        "35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, \"load\":  1.25}",
        "{\"event\": \"kickstart.inv.online\", \"ts\": \"1795927842\", \"hostname\": \"node001\", "
        "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3, \"stime\": 1.0, \"rchar\": "
        "35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, \"load\": 1.25}",
        "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927842, \"hostname\": \"node001\", "
        "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3, \"stime\": 1.0, \"rchar\": "
        "35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, \"load\": 1.25} ",
        "{\"event\": \"kickstart.inv.online\", \"ts\": 1795927842, \"hostname\": \"node001\", "
        "\"job_id\": \"j0\", \"rss\": 7, \"vm\": 14, \"utime\": 2.3, \"stime\": 1.0, \"rchar\": "
        "35, \"wchar\": 21, \"threads\": 4, \"procs\": 2, \"iowait\": 0.5, \"load\": 1.25",
    };
    for (size_t i = 0; i < sizeof in_full / sizeof *in_full; i++)
        assert_false(read_after(shaped[0], in_full[i], &va, &vb));
    /* a group's rows, custom tags and arrays of other lengths and values */
    assert_true(read_after(shaped[1],
                           "{\"event\":\"kickstart.inv.online\",\"ts\":1795632458,\"hostname\":"
                           "\"vm\",\"site\":\"x\",\"rank\":1,\"job_id\":\"vm-5367\",\"pid\":5370,"
                           "\"exe\":\"/usr/bin/dash\",\"rss\":3300,\"cg_io\":[{\"dev\":\"8:0\","
                           "\"rbytes\":1}],\"id\":5,\"seq\":4}",
                           &va, &vb));
    assert_int_equal(va.nvals, 3); /* pid, rss, the one row's rbytes */
    assert_true(same_span(va.gpu, (ev_span){"5", 1}));
    assert_true(read_after(shaped[3],
                           "{\"event\":\"jobscope.metric\",\"ts\":1700000002,\"hostname\":\"n1\","
                           "\"job_id\":\"j1\",\"rank\":1.5,\"name\":\"acc\",\"value\":-0,"
                           "\"level\":2,\"tags\":{\"phase\":\"eval\"}}",
                           &va, &vb));
    assert_false(read_after(shaped[3],
                            "{\"event\":\"jobscope.metric\",\"ts\":1700000002,\"hostname\":\"n1\","
                            "\"job_id\":\"j1\",\"rank\":1,\"name\":\"acc\",\"value\":1,"
                            "\"level\":2,\"tags\":{\"phase\":\"eval\",\"phase\":\"x\"}}",
                            &va, &vb));

    /* every line a byte from a shaped one: replaced (often by a digit, so
     * that the shape reads many), dropped or doubled */
    static const char pick[] = "{}[]\",:.-+eE0123456789 \\u\tntf\x01\xc3";
    uint64_t seed = 0x2545f4914f6cdd1dull;
    char line[4096];
    int by_shape = 0, n = 0;
    for (int it = 0; it < 20000; it++, n++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const char *src = shaped[(seed >> 33) % NSHAPED];
        size_t len = strlen(src), at = (size_t)(seed >> 20) % len;
        memcpy(line, src, len + 1);
        int op = (int)((seed >> 8) % 4);
        if (op == 0)
            line[at] = pick[(seed >> 40) % (sizeof pick - 1)];
        else if (op == 1)
            memmove(line + at, line + at + 1, len - at);
        else if (op == 2) {
            memmove(line + at + 1, line + at, len - at + 1);
        } else if (line[at] >= '0' && line[at] <= '9')
            line[at] = (char)('0' + (seed >> 40) % 10);
        by_shape += read_after(src, line, &va, &vb);
    }
    /* a digit changed reads by the shape: a quarter of the lines or so */
    if (by_shape < n / 10) fail_msg("only %d of %d lines read by their shape", by_shape, n);
    ev_view_free(&va);
    ev_view_free(&vb);

    /* bodies of a shape's lines, with others among them: the points and
     * the errors are jansson's */
    char body[65536] = "";
    for (int k = 0; k < 40; k++) {
        strcat(body, shaped[k % 7 == 3 ? 3 : 0]);
        strcat(body, k % 11 == 5 ? " \n" : "\n");
        if (k % 13 == 7) strcat(body, "{\"event\":\"e\",\"ts\":1,\"x\":1,\"x\":2}\n");
    }
    same_points(body, strlen(body));
}

/* The reading pieces' fast paths (json_read.c): a number valued in one
 * pass is the number jread_number and jread_number_value give, span,
 * kind, value and error alike; a string read eight bytes at a time is
 * accepted, refused and unescaped as jansson does, whatever byte sits at
 * whatever offset. */
static void numbers_and_strings_read_fast_read_as_before(void **st)
{
    (void)st;
    static const char nalpha[] = "-0123456789.eE+9x";
    unsigned seed = 12345;
    char text[64];
    /* around the fast path's edges: 2^53, 18 and 19 digits, 22 decimals */
    static const char *const edges[] = {"9007199254740992",
                                        "9007199254740993",
                                        "-9007199254740993",
                                        "900719925474099.3",
                                        "0.9007199254740993",
                                        "0.9007199254740992",
                                        "999999999999999999",
                                        "1000000000000000000",
                                        "9223372036854775808",
                                        "0.0000000000000000001",
                                        "1.2345678901234567890",
                                        "333.3333333333333",
                                        "-0",
                                        "-0.0",
                                        "0.1"};
    size_t nedges = sizeof edges / sizeof *edges;
    for (size_t k = 0; k < 200000 + nedges; k++) {
        size_t len = 1 + (seed = seed * 1103515245u + 12345u) % 24;
        if (k < nedges) {
            len = strlen(edges[k]);
            memcpy(text, edges[k], len);
        } else
            for (size_t i = 0; i < len; i++) {
                seed = seed * 1103515245u + 12345u;
                /* mostly digits, so that long valid numbers are common */
                text[i] = (seed >> 16) % 3 ? (char)('0' + (seed >> 8) % 10)
                                           : nalpha[(seed >> 8) % (sizeof nalpha - 1)];
            }
        text[len] = 0;
        jread a, b;
        jread_init(&a, text, len);
        jread_init(&b, text, len);
        const char *pa = text, *pb = text, *sa = NULL, *sb = NULL;
        size_t na = 0, nb = 0;
        int ia = -1, ib = -1;
        double da = 0, db = 0;
        int ra = jread_number_valued(&a, &pa, &sa, &na, &ia, &da);
        int rb = jread_number(&b, &pb, &sb, &nb, &ib);
        if (rb == 0 && jread_number_value(sb, nb, &db) < 0) rb = -2;
        if (ra != rb || strcmp(a.err, b.err))
            fail_msg("'%s': %d '%s' against %d '%s'", text, ra, a.err, rb, b.err);
        if (ra == 0 && (pa != pb || sa != sb || na != nb || ia != ib || memcmp(&da, &db, 8)))
            fail_msg("'%s': %.*s %d %.17g against %.*s %d %.17g", text, (int)na, sa, ia, da,
                     (int)nb, sb, ib, db);
        jread_free(&a);
        jread_free(&b);
    }
    static const char *const salpha[] = {"a",        "Z",       "\"",   "\\",       "\\n",
                                         "\\u00e9",  "\x01",    "\x7f", "\xc3\xa9", "\xff",
                                         "\xe2\x82", "\\u0000", " ",    "/"};
    char str[256];
    for (int k = 0; k < 100000; k++) {
        size_t o = 0;
        str[o++] = '"';
        size_t parts = (seed = seed * 1103515245u + 12345u) % 30;
        for (size_t i = 0; i < parts; i++) {
            seed = seed * 1103515245u + 12345u;
            /* plain bytes mostly, the others rarely, at any offset */
            const char *x = (seed >> 16) % 8 ? "a" : salpha[(seed >> 8) % 14];
            o += (size_t)snprintf(str + o, sizeof str - o, "%s", x);
        }
        str[o++] = '"';
        str[o] = 0;
        jread r;
        jread_init(&r, str, o);
        const char *p = str + 1, *sv = NULL;
        size_t sn = 0;
        int ok = jread_string(&r, &p, &sv, &sn) == 0 && p == str + o;
        json_error_t je;
        json_t *j = json_loadb(str, o, JSON_DECODE_ANY, &je);
        if (ok != (j != NULL)) fail_msg("'%s': read %d, jansson %s", str, ok, j ? "ok" : je.text);
        if (ok && (sn != json_string_length(j) || memcmp(sv, json_string_value(j), sn)))
            fail_msg("'%s': read '%.*s', jansson '%s'", str, (int)sn, sv, json_string_value(j));
        json_decref(j);
        jread_free(&r);
    }
}

/* A decimal of up to 19 significant digits and 21 decimals (the 17 digits
 * of a float printed whole, as Python's json writes 1/3) is valued exactly
 * without strtod: the double strtod gives, to the bit, ties to even
 * included. */
static void a_long_decimal_is_valued_as_strtod_values_it(void **st)
{
    (void)st;
    uint64_t seed = 0x853c49e6748fea9bull;
    char text[64];
    int n = 0;
    for (int k = 0; k < 600000; k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = seed >> 11;
        size_t o = 0;
        if (r % 5 == 0) text[o++] = '-';
        if (k % 3 == 0) {
            /* at a tie between two doubles past 2^53 (2^53 + an odd
             * number, written with a decimal: ".0"), or a little either
             * side of it (".4", ".6") */
            uint64_t odd = (1ull << 53) + 2 * ((r >> 8) % (1ull << 40)) + 1;
            unsigned tenth = (unsigned)((r >> 3) % 3);
            o += (size_t)snprintf(text + o, sizeof text - o, "%llu.%u", (unsigned long long)odd,
                                  tenth == 0   ? 0
                                  : tenth == 1 ? 4
                                               : 6);
        } else {
            int ni = (int)((r >> 4) % 21), nf = (int)((r >> 9) % 23);
            for (int i = 0; i < ni; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                text[o++] = (char)('0' + (i == 0 && (seed >> 60) < 4 ? 0 : (seed >> 33) % 10));
            }
            if (nf || !ni) {
                text[o++] = '.';
                for (int i = 0; i < nf; i++) {
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    text[o++] = (char)('0' + (seed >> 33) % 10);
                }
            }
        }
        text[o] = 0;
        char *end;
        double want = strtod(text, &end), got;
        if (*end || end == text) continue;
        n++;
        if (jread_number_value(text, o, &got) != 0 || memcmp(&got, &want, sizeof got))
            fail_msg("'%s': %.17g against strtod's %.17g", text, got, want);
    }
    assert_true(n > 500000);
}

/* ---- the event hooks get what the streaming reader read ---- */

/* The fields of the events of a body, one a line: "-" for none. */
static void fields_text(server *s, const char *json, size_t len, const server_event_fields *f,
                        void *arg)
{
    (void)s, (void)json, (void)len;
    sbuf *o = arg;
    if (!f) {
        sbuf_printf(o, "-\n");
        return;
    }
    if (f->has_ts) sbuf_printf(o, "ts=%g ", f->ts);
    if (f->rank) sbuf_printf(o, "rank=%.*s ", (int)f->rankn, f->rank);
    for (size_t i = 0; i < f->n; i++) {
        const server_member *m = &f->m[i];
        sbuf_printf(o, "%s%.*s=", m->tag ? "tags." : "", (int)m->kn, m->k);
        if (m->s)
            sbuf_printf(o, "'%.*s' ", (int)m->n, m->s);
        else if (m->itext)
            sbuf_printf(o, "%g(%.*s) ", m->v, (int)m->in, m->itext);
        else
            sbuf_printf(o, "%g ", m->v);
    }
    sbuf_printf(o, "\n");
}

static void event_hooks_get_the_members_the_streaming_reader_read(void **st)
{
    (void)st;
    char dir[] = "/tmp/test_server_ingest.XXXXXX";
    assert_non_null(mkdtemp(dir));
    server_config c;
    server_config_defaults(&c);
    free(c.store_dir);
    c.store_dir = strdup(dir);
    char err[256] = "";
    static const server_module *const modules[] = {&core_module, &ingest_module, NULL};
    server *s = server_create(&c, modules, err, sizeof err);
    if (!s) fail_msg("server_create: %s", err);
    sbuf got = {0};
    server_on_event(s, fields_text, &got);
    const char *body =
        /* strings, integers (their text), reals, -0, the tags; not true,
         * null, arrays, a group's rows, seq */
        "{\"event\":\"kickstart.inv.online\",\"ts\":1700000000.5,\"hostname\":\"n1\","
        "\"rank\":2,\"pid\":-0,\"exe\":\"/bin/x\",\"rss\":12,\"utime\":1.25,\"ok\":true,"
        "\"no\":null,\"argv\":[\"a\"],\"cg_io\":[{\"dev\":\"8:0\",\"rbytes\":1}],\"seq\":3,"
        "\"tags\":{\"slurm_step\":\"0\",\"n\":4,\"b\":false},\"JobID\":\"\"}\n"
        /* a real rank is no rank */
        "{\"event\":\"e\",\"ts\":7,\"rank\":1.5,\"v\":1e2}\n"
        /* an escaped string: the hooks read the text */
        "{\"event\":\"e\",\"ts\":7,\"exe\":\"\\/bin\"}\n"
        /* a nested object: read by jansson, no fields */
        "{\"event\":\"e\",\"ts\":7,\"batch\":{\"job_id\":\"1\"}}\n";
    size_t ok = 0, bad = 0;
    assert_true(server_ingest_ndjson(s, body, strlen(body), &ok, &bad, err, sizeof err) >= 0);
    assert_int_equal(ok, 4);
    assert_string_equal(got.p ? got.p : "",
                        "ts=1.7e+09 rank=2 event='kickstart.inv.online' hostname='n1' exe='/bin/x' "
                        "JobID='' pid=0(0) rss=12(12) utime=1.25 tags.slurm_step='0' tags.n=4 \n"
                        "ts=7 event='e' v=100 \n"
                        "-\n"
                        "-\n");
    free(got.p);
    server_destroy(s);
    server_config_free(&c);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- the catalogue decides ---- */

typedef struct found {
    char tags[4096];
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

/* The catalogue's series name of d: EVENT.NAME, or EVENT.GROUP.NAME. */
static void series_name(const metric_def *d, char *out, size_t len)
{
    if (d->group)
        snprintf(out, len, "%s.%s.%s", d->event, d->group, d->name);
    else
        snprintf(out, len, "%s.%s", d->event, d->name);
}

static void every_catalogue_field_is_stored_queried_and_exposed_as_the_catalogue_says(void **st)
{
    (void)st;
    char dir[] = "/tmp/test_server_ingest.XXXXXX";
    assert_non_null(mkdtemp(dir));
    server_config c;
    server_config_defaults(&c);
    free(c.store_dir);
    c.store_dir = strdup(dir);
    char err[256] = "";
    static const server_module *const modules[] = {&core_module, &ingest_module, &query_module,
                                                   NULL};
    server *s = server_create(&c, modules, err, sizeof err);
    if (!s) fail_msg("server_create: %s", err);

    /* one event per catalogue event carrying every field of the
     * catalogue, each with its own value; a group's fields in two rows */
    sbuf body = {0};
    const char *events[M_COUNT];
    int nev = 0;
    for (int i = 0; i < M_COUNT; i++) {
        int seen = 0;
        for (int e = 0; e < nev; e++) seen |= !strcmp(events[e], metric_catalogue[i].event);
        if (!seen) events[nev++] = metric_catalogue[i].event;
    }
    for (int e = 0; e < nev; e++) {
        sbuf_printf(&body,
                    "{\"event\":\"%s\",\"ts\":1700000000,\"hostname\":\"n1\",\"job_id\":\"j1\"",
                    events[e]);
        const char *group = NULL;
        for (int i = 0; i < M_COUNT; i++) {
            const metric_def *d = &metric_catalogue[i];
            if (strcmp(d->event, events[e])) continue;
            if (d->group)
                group = d->group;
            else
                sbuf_printf(&body, ",\"%s\":%d", d->name, 1000 + i);
        }
        if (group) { /* cg_io: [{"dev":"8:0",...},{"dev":"8:16",...}] */
            sbuf_printf(&body, ",\"%s\":[", group);
            for (int row = 0; row < 2; row++) {
                sbuf_printf(&body, "%s{", row ? "," : "");
                int first = 1;
                for (int i = 0; i < M_COUNT; i++) {
                    const metric_def *d = &metric_catalogue[i];
                    if (!d->group || strcmp(d->group, group) || strcmp(d->event, events[e]))
                        continue;
                    if (first) sbuf_printf(&body, "\"%s\":\"8:%d\",", d->row_label, row * 16);
                    sbuf_printf(&body, "%s\"%s\":%d", first ? "" : ",", d->name,
                                2000 + 100 * row + i);
                    first = 0;
                }
                sbuf_putc(&body, '}');
            }
            sbuf_putc(&body, ']');
        }
        sbuf_puts(&body, "}\n");
    }
    size_t ok = 0, bad = 0;
    assert_true(server_ingest_ndjson(s, body.p, body.len, &ok, &bad, err, sizeof err) > 0);
    assert_int_equal((int)ok, nev);
    assert_int_equal((int)bad, 0);

    sbuf prom = {0};
    server_live_metrics(s, &prom);
    for (int i = 0; i < M_COUNT; i++) {
        const metric_def *d = &metric_catalogue[i];
        char name[256];
        series_name(d, name, sizeof name);
        /* the store: the catalogue's series name, a row's label as a tag */
        found f = {{0}, 0};
        store_series_of(s->st, name, collect, &f);
        if (d->group) {
            char want[128];
            snprintf(want, sizeof want, "%s=8:0,host=n1,job_id=j1;%s=8:16,host=n1,job_id=j1",
                     d->row_label, d->row_label);
            if (f.n != 2 || strcmp(f.tags, want)) fail_msg("%s: %d series %s", name, f.n, f.tags);
        } else if (f.n != 1)
            fail_msg("%s: %d series", name, f.n);

        /* the query API answers it */
        char q[512];
        snprintf(q, sizeof q,
                 "{\"start\":1699999999,\"end\":1700000001,\"queries\":[{\"metric\":\"%s\","
                 "\"aggregator\":\"sum\"}]}",
                 name);
        server_request r = {
            .method = "POST", .path = "/api/query", .body = q, .body_len = strlen(q)};
        server_response w = {.status = 200};
        server_dispatch(s, &r, &w);
        char val[32];
        snprintf(val, sizeof val, "\"1700000000\":%d", d->group ? 2000 + i + 2100 + i : 1000 + i);
        if (w.status != 200 || !w.body || !strstr(w.body, val))
            fail_msg("%s: /api/query %d %.200s (want %s)", name, w.status, w.body, val);
        free(w.body);

        /* /metrics: the catalogue's kind and help */
        char prom_series[600], *o = prom_series;
        o += sprintf(o, "jobscope_");
        for (const char *m = name; *m; m++) *o++ = *m == '.' ? '_' : *m;
        *o = 0;
        if (d->group) /* a row's family is named with its label: ..._cg_io_dev_rbytes */
            snprintf(prom_series, sizeof prom_series, "jobscope_%s_%s_%s_%s", d->event, d->group,
                     d->row_label, d->name);
        for (o = prom_series; *o; o++)
            if (*o == '.') *o = '_';
        char type[700], help[700];
        snprintf(type, sizeof type, "# TYPE %s%s %s\n", prom_series,
                 d->kind == METRIC_COUNTER ? "_total" : "", metric_kind_name(d->kind));
        snprintf(help, sizeof help, "# HELP %s%s %s (%s; ", prom_series,
                 d->kind == METRIC_COUNTER ? "_total" : "", d->help, d->unit);
        if (!strstr(prom.p, type)) fail_msg("/metrics lacks '%s'", type);
        if (!strstr(prom.p, help)) fail_msg("/metrics lacks '%s'", help);
    }
    sbuf_free(&prom);
    sbuf_free(&body);
    server_destroy(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_streaming_reader_gives_the_points_and_errors_jansson_gives),
        cmocka_unit_test(each_value_is_named_by_its_own_event_and_key),
        cmocka_unit_test(each_point_is_tagged_by_its_own_event),
        cmocka_unit_test(events_of_the_known_shapes_are_read_without_jansson),
        cmocka_unit_test(numbers_and_strings_read_fast_read_as_before),
        cmocka_unit_test(a_line_written_like_the_one_before_is_read_by_its_shape),
        cmocka_unit_test(a_long_decimal_is_valued_as_strtod_values_it),
        cmocka_unit_test(event_hooks_get_the_members_the_streaming_reader_read),
        cmocka_unit_test(every_catalogue_field_is_stored_queried_and_exposed_as_the_catalogue_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
