/* test_publish.c — unit tests of the publishing pieces that need no server:
 * URL parsing, redaction of secrets, the spool file format, the time-series
 * encoders.  (The servers are exercised by tests/integration/4x_publish_*.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sink/sink.h"
#include "sink/url.h"
#include "sink/delivery/spool.h"
#include "sink/formats/sbuf.h"
#include "sink/formats/tsconv.h"
#include "sink/net/remote_write.h"
#include "event/event.h"
#include "model/metric.h"
#include <math.h>

int sink_amqp_parse_path(const char *path, char **vhost, char **exchange);

static void url_full(void **st)
{
    net_url u;
    char err[128];
    assert_int_equal(net_url_parse(&u, "AMQP://us%40r:p%3Ass@broker.example:5673/%2f/monitoring?routing_key=a.b#frag",
                                   err, sizeof err), 0);
    assert_string_equal(u.scheme, "amqp");
    assert_string_equal(u.user, "us@r");
    assert_string_equal(u.pass, "p:ss");
    assert_string_equal(u.host, "broker.example");
    assert_int_equal(u.port, 5673);
    assert_string_equal(u.path, "/%2f/monitoring");
    assert_string_equal(u.query, "routing_key=a.b");
    assert_string_equal(u.fragment, "frag");
    char *v, *e;
    assert_int_equal(sink_amqp_parse_path(u.path, &v, &e), 0);
    assert_string_equal(v, "/");
    assert_string_equal(e, "monitoring");
    free(v); free(e);
    net_url_free(&u);
}

static void url_ipv6_and_defaults(void **st)
{
    net_url u;
    char err[128];
    assert_int_equal(net_url_parse(&u, "influx://[::1]:8086/db", err, sizeof err), 0);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 8086);
    char *b = net_url_http_base(&u, 0, 80);
    assert_string_equal(b, "http://[::1]:8086/db");
    free(b);
    net_url_free(&u);
    assert_int_equal(net_url_parse(&u, "opentsdb://tsdb", err, sizeof err), 0);
    assert_null(u.user);
    assert_null(u.pass);
    assert_int_equal(u.port, 0);
    assert_string_equal(u.path, "");
    b = net_url_http_base(&u, 1, 4242);
    assert_string_equal(b, "https://tsdb:4242");
    free(b);
    net_url_free(&u);
}

static void url_errors_never_echo_the_password(void **st)
{
    net_url u;
    char err[128];
    assert_int_equal(net_url_parse(&u, "amqp://u:hunter2@host:99999/v/e", err, sizeof err), -1);
    assert_null(strstr(err, "hunter2"));
    assert_int_equal(net_url_parse(&u, "no-scheme-here", err, sizeof err), -1);
    assert_int_equal(net_url_parse(&u, "amqp://u:p@host:/v/e", err, sizeof err), -1);
    assert_int_equal(net_url_parse(&u, "amqp://[::1/v/e", err, sizeof err), -1);
    char *v, *e;
    assert_int_equal(sink_amqp_parse_path("/onlyvhost", &v, &e), -1);
    assert_int_equal(sink_amqp_parse_path("/a/b/c", &v, &e), -1);
}

static void url_query(void **st)
{
    char *v = net_url_query_get("a=1&index.kickstart.inv=x%20y&b", "index.kickstart.inv");
    assert_string_equal(v, "x y");
    free(v);
    assert_null(net_url_query_get("a=1", "b"));
    v = net_url_query_get("a=1&b", "b");
    assert_string_equal(v, "");
    free(v);
    char *enc = net_url_encode("a/b c");
    assert_string_equal(enc, "a%2Fb%20c");
    free(enc);
}

static void redact(void **st)
{
    static const char *const cases[][2] = {
        { "amqp://user:s3cret@host/%2f/ex", "amqp://user:***@host/%2f/ex" },
        { "amqp://user@host/%2f/ex", "amqp://user@host/%2f/ex" },
        { "rabbitmq://u:p@ss@h:15672/api/exchanges/%2f/e/publish", "rabbitmq://u:***@h:15672/api/exchanges/%2f/e/publish" },
        { "http://h/ingest?site=a&token=abc&api_key=k#ndjson", "http://h/ingest?site=a&token=***&api_key=***#ndjson" },
        { "amqp://h/v/e?routing_key=a.b", "amqp://h/v/e?routing_key=a.b" },
        { "https://u:pw@h/x?Password=1", "https://u:***@h/x?Password=***" },
        { "events.jsonl", "events.jsonl" },
        { "http://h/p#x?token=1", "http://h/p#x?token=1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = sink_redact_url(cases[i][0]);
        assert_string_equal(r, cases[i][1]);
        free(r);
    }
}

/* issue 16.10: a password holding '/', '#' or '?' ended the authority early,
 * so the rest of it leaked into messages and the spool header */
static void passwords_with_delimiters_are_still_passwords(void **st)
{
    static const char *const cases[][2] = {
        { "amqp://user:pa/ss@host/vhost/ex", "amqp://user:***@host/vhost/ex" },
        { "http://u:a#b@h:8080/x", "http://u:***@h:8080/x" },
        { "http://u:wh?at@h/x?site=1", "http://u:***@h/x?site=1" },
        { "http://u:x/y?z#w@h/p?apikey=K&a=b", "http://u:***@h/p?apikey=***&a=b" },
        { "http://h:8080/x?mail=a@b.org", "http://h:8080/x?mail=a@b.org" },   /* no userinfo */
        { "http://h/x?mail=a@b.org", "http://h/x?mail=a@b.org" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = sink_redact_url(cases[i][0]);
        assert_string_equal(r, cases[i][1]);
        free(r);
    }
    net_url u;
    char err[128];
    assert_int_equal(net_url_parse(&u, "amqp://user:pa/s#s?@broker:5673/%2f/ex", err, sizeof err), 0);
    assert_string_equal(u.user, "user");
    assert_string_equal(u.pass, "pa/s#s?");
    assert_string_equal(u.host, "broker");
    assert_int_equal(u.port, 5673);
    assert_string_equal(u.path, "/%2f/ex");
    net_url_free(&u);
    assert_int_equal(net_url_parse(&u, "http://h:8080/x?mail=a@b.org", err, sizeof err), 0);
    assert_null(u.user);
    assert_string_equal(u.host, "h");
    net_url_free(&u);
}

static char *tmpdir(void)
{
    char *d = strdup("/tmp/jobscope-unit-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static void spool_roundtrip_offsets_and_torn_tail(void **st)
{
    char *dir = tmpdir(), path[256], err[256], *label = NULL, *buf = NULL;
    size_t cap = 0;
    snprintf(path, sizeof path, "%s/a.spool", dir);
    spool s;
    assert_int_equal(spool_create(&s, path, "amqp://u:***@h/v/e", err, sizeof err), 0);
    assert_int_equal(spool_append(&s, 1, "jobscope.start", "{\"seq\":1}", 9), 0);
    assert_int_equal(spool_append(&s, 2, "kick\tstart\n", "{\"a\":\"x\ny\",\"seq\":2}", 20), 0);
    assert_int_equal(spool_append(&s, 3, "jobscope.end", "{\"seq\":3}", 9), 0);
    assert_int_equal(s.pending, 3);
    pub_item it[4];
    off_t ends[4];
    assert_int_equal(spool_read(&s, 2, it, ends, &buf, &cap), 2);
    assert_int_equal(it[0].seq, 1);
    assert_string_equal(it[0].name, "jobscope.start");
    assert_memory_equal(it[0].json, "{\"seq\":1}", 9);
    assert_string_equal(it[1].name, "kick_start_");         /* no tab or newline in a name */
    assert_memory_equal(it[1].json, "{\"a\":\"x y\",\"seq\":2}", 20);   /* nor a raw newline in JSON */
    assert_int_equal(spool_consume(&s, ends[1], 2), 0);
    assert_int_equal(spool_close(&s), 0);                  /* one left: kept */

    /* a crash in the middle of a write leaves a line without its newline */
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(write(fd, "4\tx\t{\"se", 8) == 8);
    close(fd);
    FILE *f = fopen(path, "r");
    char head[64];
    assert_non_null(fgets(head, sizeof head, f));
    fclose(f);
    assert_memory_equal(head, "JSSPOOL1 000000000000000", 24);   /* offset after 2 records */

    assert_int_equal(spool_open(&s, path, &label, err, sizeof err), 0);
    assert_string_equal(label, "amqp://u:***@h/v/e");
    assert_int_equal(s.pending, 1);
    spool other;                                            /* locked while in use */
    assert_int_equal(spool_open(&other, path, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "in use"));
    assert_int_equal(spool_read(&s, 4, it, ends, &buf, &cap), 1);
    assert_int_equal(it[0].seq, 3);
    assert_int_equal(spool_consume(&s, ends[0], 1), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, s.header_len);            /* cut back to its header */
    assert_int_equal(spool_close(&s), 1);                  /* empty: removed */
    assert_int_equal(stat(path, &sb), -1);

    assert_int_equal(spool_open(&s, "/etc/hostname", NULL, err, sizeof err), -1);
    free(label); free(buf);
    rmdir(dir);
    free(dir);
}

/* issue 16.7: malformed lines used to be skipped by recursion: quadratic,
 * and a stack overflow (SIGSEGV) at some 400k lines.  Now one pass, counted,
 * the good records delivered. */
static void spool_skips_many_malformed_lines_in_one_pass(void **st)
{
    char *dir = tmpdir(), path[256], err[256], *buf = NULL;
    size_t cap = 0;
    snprintf(path, sizeof path, "%s/bad.spool", dir);
    spool s;
    assert_int_equal(spool_create(&s, path, "http://h/", err, sizeof err), 0);
    assert_int_equal(spool_append(&s, 1, "a", "{\"seq\":1}", 9), 0);
    spool_close(&s);
    /* 500,000 broken lines (no tabs), then one good record */
    enum { BAD = 500000 };
    char *junk = malloc(2 * BAD);
    for (int i = 0; i < BAD; i++) { junk[2 * i] = 'x'; junk[2 * i + 1] = '\n'; }
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(write(fd, junk, 2 * BAD) == 2 * BAD);
    assert_true(write(fd, "2\tb\t{\"seq\":2}\n", 14) == 14);
    close(fd);
    free(junk);
    alarm(5);                                    /* one pass: milliseconds; quadratic: 10 s */
    assert_int_equal(spool_open(&s, path, NULL, err, sizeof err), 0);
    pub_item it[4];
    off_t ends[4];
    assert_int_equal(spool_read(&s, 4, it, ends, &buf, &cap), 2);
    assert_int_equal(it[0].seq, 1);
    assert_int_equal(it[1].seq, 2);
    assert_int_equal(s.skipped, BAD);
    assert_int_equal(spool_consume(&s, ends[1], 2), 0);
    assert_int_equal(s.pending, 0);
    assert_int_equal(spool_close(&s), 1);
    /* broken lines first: skipped without a recursion per line */
    assert_int_equal(spool_create(&s, path, "http://h/", err, sizeof err), 0);
    close(s.fd);                                 /* keep the empty file */
    free(s.path);
    junk = malloc(2 * BAD);
    for (int i = 0; i < BAD; i++) { junk[2 * i] = 'y'; junk[2 * i + 1] = '\n'; }
    fd = open(path, O_WRONLY | O_APPEND);
    assert_true(write(fd, junk, 2 * BAD) == 2 * BAD);
    assert_true(write(fd, "3\tc\t{\"seq\":3}\n", 14) == 14);
    close(fd);
    free(junk);
    assert_int_equal(spool_open(&s, path, NULL, err, sizeof err), 0);
    assert_int_equal(spool_read(&s, 4, it, ends, &buf, &cap), 1);
    assert_int_equal(it[0].seq, 3);
    assert_int_equal(s.skipped, BAD);
    assert_int_equal(spool_consume(&s, ends[0], 1), 0);
    assert_int_equal(s.pending, 0);
    assert_int_equal(spool_close(&s), 1);
    alarm(0);
    free(buf);
    rmdir(dir);
    free(dir);
}

static const char EV[] =
    "{\"event\":\"kickstart.inv.online\",\"ts\":1700000000.123456,\"hostname\":\"node 1\",\"site\":\"\","
    "\"wf_uuid\":null,\"rank\":3,\"pid\":42,\"utime\":1.5,\"rss\":2048,\"ok\":true,\"list\":[1],\"seq\":7}";

static void influx_line(void **st)
{
    sbuf b = { 0 };
    assert_int_equal(tsconv_influx_line(&b, EV, strlen(EV), NULL), 1);
    assert_string_equal(b.p, "kickstart.inv.online,hostname=node\\ 1,rank=3,pid=42 utime=1.5,rss=2048.0 "
                             "1700000000123456000\n");
    sbuf_reset(&b);
    assert_int_equal(tsconv_influx_line(&b, EV, strlen(EV), "hostname"), 1);
    assert_string_equal(b.p, "kickstart.inv.online,hostname=node\\ 1 utime=1.5,rss=2048.0 1700000000123456000\n");
    sbuf_reset(&b);
    assert_int_equal(tsconv_influx_line(&b, "{\"event\":\"x\",\"s\":\"a\"}", 22, NULL), 0);   /* no numbers */
    assert_int_equal(tsconv_influx_line(&b, "not json", 8, NULL), 0);
    sbuf_free(&b);
}

static void opentsdb_points(void **st)
{
    sbuf b = { 0 };
    assert_int_equal(tsconv_opentsdb_points(&b, EV, strlen(EV), NULL), 2);
    sbuf_putc(&b, ']');
    assert_string_equal(b.p,
        "[{\"metric\":\"kickstart.inv.online.utime\",\"timestamp\":1700000000123,\"value\":1.5,"
        "\"tags\":{\"hostname\":\"node_1\",\"rank\":\"3\",\"pid\":\"42\"}},"
        "{\"metric\":\"kickstart.inv.online.rss\",\"timestamp\":1700000000123,\"value\":2048,"
        "\"tags\":{\"hostname\":\"node_1\",\"rank\":\"3\",\"pid\":\"42\"}}]");
    sbuf_free(&b);
}

/* 27.11: tags are the job's annotations, the names of what is measured and
 * the --tag / metric "tags"; exe, cmd, version, cwd, kernel are not (one
 * series per command line), and --tag's object is no longer dropped. */
static void time_series_tags_are_the_annotations_and_the_tags_never_the_command(void **st)
{
    static const char ev[] =
        "{\"event\":\"jobscope.start\",\"ts\":1700000000,\"hostname\":\"n1\",\"job_id\":\"j1\","
        "\"site\":\"s\",\"rank\":0,\"tags\":{\"team\":\"hpc\",\"n\":3},\"version\":\"0.1.0\","
        "\"mode\":\"run\",\"pid\":7,\"exe\":\"/bin/sh\",\"cmd\":\"sh -c 'x 1'\","
        "\"cwd\":\"/home/u\",\"kernel\":\"6.1\",\"name\":\"loss\",\"interval\":1.0,\"seq\":1}";
    sbuf b = {0};
    assert_int_equal(tsconv_influx_line(&b, ev, strlen(ev), NULL), 1);
    assert_string_equal(b.p, "jobscope.start,hostname=n1,job_id=j1,site=s,rank=0,team=hpc,pid=7,"
                             "name=loss interval=1.0 1700000000000000000\n");
    sbuf_free(&b);
}

/* ---- the value-set path of the time-series encoders ----------------------- */

static const char ANN[] = "\"hostname\":\"node 1\",\"site\":\"\",\"wf_uuid\":null,\"rank\":3,"
                          "\"job_id\":\"j,1\",\"tags\":{\"a\":\"b\",\"team\":\"hpc\"}";

/* The job's annotations as ANN has them (its "tags" object last). */
static annotations ann_of_ANN(void)
{
    annotations a;
    memset(&a, 0, sizeof a);
    a.fragment = (char *)ANN;
    a.fragment_len = strlen(ANN);
    a.tags_at = (size_t)(strstr(ANN, ",\"tags\":") - ANN);
    return a;
}

/* Both paths, both formats and remote write, several tag lists: the same
 * bytes, and something written. */
static void assert_same_both_ways(const mset *s)
{
    static const char *const keeps[] = { NULL, "pid", "exe,job_util_source,team", "hostname,rank,id,a" };
    annotations ann = ann_of_ANN();
    jbuf j;
    jbuf_init(&j, 1024);
    event_write_json(&j, &ann, s, 9);
    for (size_t k = 0; k < sizeof keeps / sizeof keeps[0]; k++) {
        tsconv_ann a;
        assert_int_equal(tsconv_ann_init(&a, ANN, strlen(ANN), keeps[k]), 0);
        for (int f = 0; f < 3; f++) {
            sbuf js = { 0 }, ss = { 0 };
            int nj = f == 2 ? remote_write_encode(&js, j.p, j.len, keeps[k])
                     : f    ? tsconv_opentsdb_points(&js, j.p, j.len, keeps[k])
                            : tsconv_influx_line(&js, j.p, j.len, keeps[k]);
            int ns = f == 2 ? remote_write_set(&ss, s, &a, keeps[k])
                     : f    ? tsconv_opentsdb_set(&ss, s, &a, keeps[k])
                            : tsconv_influx_set(&ss, s, &a, keeps[k]);
            assert_true(nj > 0);
            assert_int_equal(ns, nj);
            assert_int_equal(ss.len, js.len);
            assert_memory_equal(ss.p, js.p, js.len);
            sbuf_free(&js);
            sbuf_free(&ss);
        }
        tsconv_ann_free(&a);
    }
    jbuf_free(&j);
}

static void the_set_path_writes_what_the_json_path_writes(void **st)
{
    mset s;
    mset_init(&s);
    mset_clear(&s, "ev.x", 1700000000.1234565);
    mset_label_num(&s, "pid", 4242);
    mset_label_str(&s, "exe", "/opt/a b,c=d\"q\\\x01/\xff\xc3(/\xe2\x82\xac", MLABEL_SHOWN);
    mset_label_str(&s, "cmd", "hidden", MLABEL_HIDDEN);
    mset_label_str(&s, "empty", "", MLABEL_SHOWN);
    mset_label_str(&s, "nothing", NULL, MLABEL_SHOWN);
    mset_label_num(&s, "level", -7);                      /* not an id: a number */
    mset_f64(&s, M_ELAPSED, 1.0000005);                   /* rounded by the text (3 decimals): 1.000 */
    mset_u64(&s, M_UTIME, 1234567);                       /* microseconds: 1.235 */
    mset_null(&s, M_IOWAIT);                              /* null: left out */
    mset_missing(&s, M_BREAD);                            /* written 0 */
    mset_u64(&s, M_RSS, 9007199254740993ull);             /* > 2^53: as jansson reads it */
    mset_f64(&s, M_CPU_PERCENT, NAN);                     /* null in JSON: left out */
    mset_f64(&s, M_ROOT_START, 5);                        /* hidden: left out */
    mset_u64(&s, M_CG_MEMORY_CURRENT, 0);
    mrow *r = mset_row(&s, M_CG_IO_DEV_RBYTES, "8:0");    /* rows: arrays, left out */
    mrow_u64(r, M_CG_IO_DEV_RBYTES, 5);
    mset_group(&s, M_CG_IO_DEV_RBYTES);
    mset_f64(&s, M_CG_PSI_CPU_SOME_AVG10, -0.0001);        /* prints 0.00 */
    mset_f64(&s, M_GPU_UTIL, 1e300);                      /* exponent form */
    mset_label_str(&s, "job_util_source", "process", MLABEL_SHOWN); /* after the values */
    assert_same_both_ways(&s);
    s.ts = NAN;                                           /* ts null: 0 */
    assert_same_both_ways(&s);
    mset_free(&s);
}

/* The other events of a run: objects, arrays, strings, numbers of every
 * kind, a custom metric's own "tags" beside the annotations'. */
static void the_set_path_reads_every_kind_of_member_as_the_json_path_does(void **st)
{
    mset s;
    mset_init(&s);
    /* an end record's shape */
    mset_clear(&s, "jobscope.end", 1700000001.5);
    mset_label_num(&s, "pid", 7);
    mset_put_str(&s, "exe", "/bin/sh");
    mset_put_str(&s, "name", "a name");                   /* a tag by its key */
    mset_put_null(&s, "signal");
    mset_put_i64(&s, "exit_code", -3);
    mset_put_u64(&s, "samples", 12);
    mset_put_fixed(&s, "duration", 4.75, 6);
    mset_put_fixed(&s, "cores", 2, 0);                    /* an integer for jansson */
    mset_put_fixed(&s, "id", 3.5, 1);                     /* a real id: %.17g */
    mset_put_num(&s, "value", 1e21);
    mset_put_bool(&s, "core_dumped", 1);
    mset_copy_range(&s, &s, M_UTIME, M_NIVCSW);
    mset_u64(&s, M_UTIME, 2500000);
    mset_open_obj(&s, "peaks");
    mset_put_fixed(&s, "rss", 1, 0);                      /* nested: left out */
    mset_open_arr(&s, "x");
    mset_put_i64(&s, NULL, 1);
    mset_close(&s);
    mset_close(&s);
    mset_open_obj(&s, "cgroup");
    mset_put_str(&s, "hostname", "nested, not twice");
    mset_close(&s);
    mset_put_u64(&s, "events_dropped", 0);
    assert_same_both_ways(&s);
    /* a custom metric: no annotation "tags"; its own, with theirs in it */
    mset_clear(&s, "jobscope.metric", 1700000002);
    s.frame = MSET_UNTAGGED;
    mset_put_strn(&s, "name", "loss\xff", 5);
    mset_put_num(&s, "value", 0.125);
    mset_open_obj(&s, "tags");
    mset_put_str(&s, "team", "hpc");
    mset_put_str(&s, "hostname", "already a tag");        /* the first one stays */
    mset_put_str(&s, "empty", "");
    mset_put_i64(&s, "n", 3);                             /* not a string: no tag */
    mset_put_strn(&s, "phase", "tr\xc3" "ain", 6);
    mset_close(&s);
    mset_put_i64(&s, "level", 1);
    mset_put_i64(&s, "pid", 4243);
    assert_same_both_ways(&s);
    /* an event with no annotations at all */
    s.frame = MSET_BARE;
    assert_same_both_ways(&s);
    mset_free(&s);
}

/* A field is one catalogue line: every field of the sample event that the
 * catalogue describes reaches the JSON event, Influx and OpenTSDB with no
 * code of its own in any writer (a writer that listed fields by hand would
 * miss a new one here). */
static void every_catalogue_field_of_the_sample_reaches_every_encoder(void **st)
{
    (void)st;
    tsconv_ann a;
    assert_int_equal(tsconv_ann_init(&a, ANN, strlen(ANN), NULL), 0);
    mset s;
    mset_init(&s);
    mset_clear(&s, EV_SAMPLE, 1700000000.5);
    s.frame = MSET_BARE;
    int n = 0;
    for (int id = 0; id < M_COUNT; id++) {
        const metric_def *d = &metric_catalogue[id];
        if (strcmp(d->event, EV_SAMPLE) || d->group || (d->flags & MF_HIDDEN)) continue;
        if (d->store == MS_F64)
            mset_f64(&s, (metric_id)id, 1.5 + id);
        else
            mset_u64(&s, (metric_id)id, 1000u + (unsigned)id);
        n++;
    }
    assert_true(n >= 25);
    jbuf j;
    jbuf_init(&j, 4096);
    mset_write_json(&j, &s);
    sbuf influx = {0}, tsdb = {0};
    assert_int_equal(tsconv_influx_set(&influx, &s, &a, NULL), 1);
    assert_true(tsconv_opentsdb_set(&tsdb, &s, &a, NULL) >= n);
    jbuf_putc(&j, 0);
    sbuf_putc(&influx, 0);
    sbuf_putc(&tsdb, 0);
    for (int id = 0; id < M_COUNT; id++) {
        const metric_def *d = &metric_catalogue[id];
        if (strcmp(d->event, EV_SAMPLE) || d->group || (d->flags & MF_HIDDEN)) continue;
        char key[128];
        snprintf(key, sizeof key, "\"%s\":", d->name);
        if (!strstr(j.p, key)) fail_msg("JSON lacks %s: %s", d->name, j.p);
        snprintf(key, sizeof key, "%s=", d->name);
        if (!strstr(influx.p, key)) fail_msg("Influx lacks %s: %s", d->name, influx.p);
        snprintf(key, sizeof key, "\"%s.%s\"", EV_SAMPLE, d->name);
        if (!strstr(tsdb.p, key)) fail_msg("OpenTSDB lacks %s: %s", d->name, tsdb.p);
    }
    jbuf_free(&j);
    sbuf_free(&influx);
    sbuf_free(&tsdb);
    tsconv_ann_free(&a);
    mset_free(&s);
}

static void the_set_path_leaves_to_the_json_path_what_it_reads_otherwise(void **st)
{
    tsconv_ann a;
    assert_int_equal(tsconv_ann_init(&a, ANN, strlen(ANN), NULL), 0);
    annotations ann = ann_of_ANN();
    sbuf b = { 0 };
    mset s;
    mset_init(&s);
    mset_clear(&s, "ev.x", 1);
    mset_u64(&s, M_RSS, 1);
    assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), 1);
    sbuf_reset(&b);
    mset_label_str(&s, "hostname", "twice", MLABEL_SHOWN);   /* an annotation's key */
    assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), -1);
    assert_int_equal(tsconv_opentsdb_set(&b, &s, &a, NULL), -1);
    assert_int_equal(b.len, 0);
    const char *twice[] = { "rss", "tags", "seq", "x" };       /* a value's, a frame's, its own */
    for (int i = 0; i < 4; i++) {
        mset_clear(&s, "ev.x", 1);
        mset_u64(&s, M_RSS, 1);
        mset_put_i64(&s, "x", 1);
        mset_put_i64(&s, twice[i], 2);
        assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), -1);
    }
    mset_clear(&s, "ev.x", 1);                              /* a tag twice in "tags" */
    s.frame = MSET_UNTAGGED;
    mset_open_obj(&s, "tags");
    mset_put_str(&s, "k", "1");
    mset_put_str(&s, "k", "2");
    mset_close(&s);
    mset_put_i64(&s, "v", 1);
    assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), -1);
    mset_clear(&s, "ev.x", 1);
    mset_u64(&s, M_RSS, UINT64_MAX);                          /* jansson refuses the JSON */
    assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), -1);
    jbuf j;
    jbuf_init(&j, 256);
    event_write_json(&j, &ann, &s, 9);
    assert_int_equal(tsconv_influx_line(&b, j.p, j.len, NULL), 0);
    mset_clear(&s, "ev.x", 1);                                /* so is \u0000 */
    mset_put_strn(&s, "excerpt", "a\0b", 3);
    mset_put_i64(&s, "size", 3);
    assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), -1);
    event_write_json(&j, &ann, &s, 9);
    assert_int_equal(tsconv_influx_line(&b, j.p, j.len, NULL), 0);
    jbuf_free(&j);
    mset_clear(&s, "ev.x", 1);                                /* the job's own JSON */
    mset_put_raw(&s, "\"v\":1", 5);
    assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), -1);
    mset_clear(&s, "ev.x", 1);                                /* no numbers: nothing */
    assert_int_equal(tsconv_influx_set(&b, &s, &a, NULL), 0);
    assert_int_equal(tsconv_opentsdb_set(&b, &s, &a, NULL), 0);
    assert_int_equal(b.len, 0);
    tsconv_ann_free(&a);
    /* annotations named like a field: the set path is off */
    assert_int_equal(tsconv_ann_init(&a, "\"rss\":1", 7, NULL), -1);
    sbuf_free(&b);
    mset_free(&s);
}

/* The frame around the members: the annotations, all of them, without
 * their "tags", or none. */
static void an_event_is_framed_with_the_annotations_its_set_asks_for(void **st)
{
    annotations ann = ann_of_ANN();
    mset s;
    mset_init(&s);
    mset_clear(&s, "ev.x", 1.5);
    mset_put_i64(&s, "v", 1);
    jbuf j;
    jbuf_init(&j, 256);
    event_write_json(&j, &ann, &s, 7);
    assert_string_equal(j.p, "{\"event\":\"ev.x\",\"ts\":1.500000,\"hostname\":\"node 1\",\"site\":\"\","
                             "\"wf_uuid\":null,\"rank\":3,\"job_id\":\"j,1\",\"tags\":{\"a\":\"b\","
                             "\"team\":\"hpc\"},\"v\":1,\"seq\":7}");
    s.frame = MSET_UNTAGGED;
    event_write_json(&j, &ann, &s, 8);
    assert_string_equal(j.p, "{\"event\":\"ev.x\",\"ts\":1.500000,\"hostname\":\"node 1\",\"site\":\"\","
                             "\"wf_uuid\":null,\"rank\":3,\"job_id\":\"j,1\",\"v\":1,\"seq\":8}");
    s.frame = MSET_BARE;
    event_write_json(&j, &ann, &s, 9);
    assert_string_equal(j.p, "{\"event\":\"ev.x\",\"ts\":1.500000,\"v\":1,\"seq\":9}");
    jbuf_free(&j);
    mset_free(&s);
}

/* A still job's sample goes out as the last line with its ts, elapsed and
 * seq put in: byte for byte what writing it whole gives, whatever the
 * frame, the widths of the new numbers, an "elapsed" among the tags, or an
 * event name written escaped;
 * a line of another shape is left alone (and written whole). */
static void a_restamped_line_is_the_line_written_whole(void **st)
{
    static const char tagged[] = "\"hostname\":\"n\",\"job_id\":\"j\",\"tags\":{\"elapsed\":\"5\",\"x\":\"y\"}";
    annotations anns[2] = {ann_of_ANN(), ann_of_ANN()};
    anns[1].fragment = (char *)tagged;
    anns[1].fragment_len = strlen(tagged);
    anns[1].tags_at = (size_t)(strstr(tagged, ",\"tags\":") - tagged);
    static const double stamps[][2] = {{9.9999996, 9.9996}, {10.5, 10.0}, {1795895905.145829, 99.999},
                                       {1795895906.5, 100.001}, {0.0, 0.0}};
    mset s;
    mset_init(&s);
    jbuf b, tmp, whole;
    jbuf_init(&b, 64);
    jbuf_init(&tmp, 64);
    jbuf_init(&whole, 64);
    /* a name written escaped: "ts" is not where the name's length puts it */
    static const char *names[] = {"kickstart.inv.online", "ev.\"ts\":1,\\"};
    for (int a = 0; a < 4; a++)
        for (int frame = MSET_ANNOTATED; frame <= MSET_BARE; frame++) {
            mset_clear(&s, names[a / 2], stamps[0][0]);
            s.frame = frame;
            mset_label_num(&s, "pid", 42);
            mset_label_str(&s, "exe", "/bin/\"elapsed\":1,", 0);
            mset_label_str(&s, "cmd", "hidden", 1);
            mset_f64(&s, M_ELAPSED, stamps[0][1]);
            mset_u64(&s, M_RSS, 1234);
            mset_f64(&s, M_CPU_PERCENT, 0);
            mset_row(&s, M_CG_IO_RBYTES, "8:0");
            mset_open_obj(&s, "elapsed");
            mset_put_i64(&s, "seq", 3);
            mset_close(&s);
            event_write_json(&b, &anns[a % 2], &s, 9);
            size_t hint = a % 2 ? 3 : 0; /* a stale hint is only a miss */
            for (size_t k = 1; k < sizeof stamps / sizeof stamps[0]; k++) {
                uint64_t seq = k == 1 ? 10 : 99 + k;
                s.ts = stamps[k][0];
                mset_f64(&s, M_ELAPSED, stamps[k][1]);
                assert_int_equal(event_restamp_json(&b, &tmp, &anns[a % 2], &s, seq, &hint), 0);
                event_write_json(&whole, &anns[a % 2], &s, seq);
                assert_string_equal(b.p, whole.p);
                assert_int_equal(b.len, whole.len);
            }
        }
    /* not a line of this shape: nothing is touched */
    mset_clear(&s, "ev.x", 1.5);
    mset_open_obj(&s, "o");
    mset_close(&s);
    mset_f64(&s, M_ELAPSED, 1);
    event_write_json(&b, &anns[0], &s, 9);
    char *before = strdup(b.p);
    size_t hint = 0;
    assert_int_equal(event_restamp_json(&b, &tmp, &anns[0], &s, 10, &hint), -1); /* an object first */
    mset_clear(&s, "ev.x", 1.5);
    mset_null(&s, M_ELAPSED);
    assert_int_equal(event_restamp_json(&b, &tmp, &anns[0], &s, 10, &hint), -1); /* elapsed unknown */
    mset_clear(&s, "ev.x", 1.5);
    mset_u64(&s, M_RSS, 1);
    assert_int_equal(event_restamp_json(&b, &tmp, &anns[0], &s, 10, &hint), -1); /* no elapsed */
    assert_string_equal(b.p, before);
    free(before);
    jbuf_free(&b);
    jbuf_free(&tmp);
    jbuf_free(&whole);
    mset_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(url_full),
        cmocka_unit_test(a_restamped_line_is_the_line_written_whole),
        cmocka_unit_test(url_ipv6_and_defaults),
        cmocka_unit_test(url_errors_never_echo_the_password),
        cmocka_unit_test(url_query),
        cmocka_unit_test(redact),
        cmocka_unit_test(passwords_with_delimiters_are_still_passwords),
        cmocka_unit_test(spool_roundtrip_offsets_and_torn_tail),
        cmocka_unit_test(spool_skips_many_malformed_lines_in_one_pass),
        cmocka_unit_test(influx_line),
        cmocka_unit_test(opentsdb_points),
        cmocka_unit_test(time_series_tags_are_the_annotations_and_the_tags_never_the_command),
        cmocka_unit_test(the_set_path_writes_what_the_json_path_writes),
        cmocka_unit_test(the_set_path_reads_every_kind_of_member_as_the_json_path_does),
        cmocka_unit_test(the_set_path_leaves_to_the_json_path_what_it_reads_otherwise),
        cmocka_unit_test(every_catalogue_field_of_the_sample_reaches_every_encoder),
        cmocka_unit_test(an_event_is_framed_with_the_annotations_its_set_asks_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
