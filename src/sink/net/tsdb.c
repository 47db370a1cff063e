/* tsdb.c — the time-series databases, one backend with an encoder table:
 *
 *   influx://[USER:PASS@]HOST[:PORT]/DB    (influxs:// for TLS)
 *       InfluxDB 1.x line protocol, POSTed in batches to
 *       /write?db=DB&precision=ns; VictoriaMetrics accepts the same.  Each
 *       event is one line  <event>,<tag>=<v>,... <field>=<number>,... <ns>
 *       (numbers always written as floats so a field never changes type);
 *       events without any number are skipped.
 *   opentsdb://[USER:PASS@]HOST[:PORT]     (opentsdbs:// for TLS)
 *       batches of data points POSTed to /api/put, which OpenTSDB 2.x and
 *       VictoriaMetrics (-opentsdbHTTPListenAddr) accept: each number of an
 *       event becomes metric "<event>.<field>" with the event's annotations
 *       as tags; timestamps in milliseconds.
 *   promrw://[USER:PASS@]HOST[:PORT][/PATH]  (promrws:// for TLS)
 *       Prometheus remote write (net/remote_write.c): every number of an
 *       event one sample of metric <event>_<field>, snappy-compressed
 *       protobuf POSTed to PATH (default /api/v1/write, port 9090).
 *
 * Which parts of an event become tags and fields: formats/tsconv.h.  Both
 * take `?tags=a,b` to keep only those tags (OpenTSDB refuses more than 8 by
 * default).  The formats differ only in what the table below says: scheme,
 * default port, request path, batch size, content type and encoders.
 *
 * An event with a value set (every event of the run: samples, start, end,
 * GPU, custom metrics) is encoded from the set when it is queued
 * (tsdb_encode_set, on the producer's thread); send() then only joins the
 * texts.  Those replayed from the spool (JSON only) and those whose set the
 * set path leaves to the JSON (a payload block's own JSON, tsconv.h) are
 * encoded from their JSON by send(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"
#include "../formats/sbuf.h"
#include "../formats/tsconv.h"
#include "../../model/metric.h"
#include "remote_write.h"

typedef struct tsdb_format tsdb_format;

typedef struct tsdb_ctx {
    const tsdb_format *f;
    httpc c;
    char *url;
    char *keep_tags;
    char *label;
    sbuf body;
    sbuf wire; /* the body as sent, when the format transforms it (finish) */
    unsigned long rejected;
    tsconv_ann ann; /* the job's annotations, for the set path */
    int have_ann;
} tsdb_ctx;

struct tsdb_format {
    const char *scheme; /* plain; TLS is scheme + "s" */
    const sink_ops *ops;
    pub_backend backend; /* kind, batch size, callbacks */
    int default_port;
    const char *why_no_host; /* for net_url_open (NULL: checked by request_url) */
    const char *content_type;
    /* Appends one event; returns the lines/points added. */
    int (*encode)(sbuf *b, const char *json, size_t len, const char *keep_tags);
    /* The same from the event's value set; -1: left to encode. */
    int (*encode_set)(sbuf *b, const mset *s, const tsconv_ann *a, const char *keep_tags);
    int json_array; /* the body is a JSON array: close it with ']' */
    /* Sets u->path (and x->url) for this format; -1 + err when u is wrong. */
    int (*request_url)(tsdb_ctx *x, net_url *u, int tls, char *err, size_t errlen);
    /* the body as it goes on the wire (compression), or NULL: as built */
    int (*finish)(const sbuf *body, sbuf *out);
    const char *const *headers; /* more request headers, NULL-terminated */
};

static int tsdb_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    tsdb_ctx *x = ctx;
    return httpc_probe(&x->c, x->url, timeout, err, errlen);
}

/* Producer side (publisher_set_encoder): the event from its value set. */
static int tsdb_encode_set(void *ctx, const js_event *ev, sbuf *out)
{
    tsdb_ctx *x = ctx;
    if (!x->have_ann || !ev->metrics || !x->f->encode_set) return -1;
    return x->f->encode_set(out, ev->metrics, &x->ann, x->keep_tags);
}

/* Appends an item encoded when it was queued.  Its text was made as if
 * alone in the body: a JSON array's '[' becomes ',' after other points. */
static int tsdb_join(tsdb_ctx *x, const pub_item *it)
{
    if (it->enc_n <= 0 || !it->enc_len) return 0;
    if (x->f->json_array && x->body.len && it->enc[0] == '[') {
        sbuf_putc(&x->body, ',');
        sbuf_put(&x->body, it->enc + 1, it->enc_len - 1);
    } else {
        sbuf_put(&x->body, it->enc, it->enc_len);
    }
    return it->enc_n;
}

static int tsdb_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    tsdb_ctx *x = ctx;
    sbuf_reset(&x->body);
    int added = 0;
    for (int i = 0; i < n; i++)
        added += it[i].enc ? tsdb_join(x, &it[i])
                           : x->f->encode(&x->body, it[i].json, it[i].len, x->keep_tags);
    if (!added) return n;
    if (x->f->json_array) sbuf_putc(&x->body, ']');
    const sbuf *out = &x->body;
    if (!x->body.oom && x->f->finish) {
        if (x->f->finish(&x->body, &x->wire) < 0) x->wire.oom = 1;
        out = &x->wire;
    }
    if (out->oom || x->body.oom) {
        snprintf(err, errlen,
                 x->f->finish ? "cannot compress (out of memory, or no libsnappy.so.1)"
                              : "out of memory");
        return 0;
    }
    return httpc_deliver(&x->c, x->url, x->f->content_type, out->p, out->len, n, &x->rejected,
                         x->label, timeout, err, errlen);
}

static void tsdb_destroy(void *ctx)
{
    tsdb_ctx *x = ctx;
    httpc_free(&x->c);
    sbuf_free(&x->body);
    sbuf_free(&x->wire);
    if (x->have_ann) tsconv_ann_free(&x->ann);
    free(x->url);
    free(x->keep_tags);
    free(x->label);
    free(x);
}

/* influx: /write?db=DB&precision=ns */
static int influx_url(tsdb_ctx *x, net_url *u, int tls, char *err, size_t errlen)
{
    const char *db = u->path[0] == '/' ? u->path + 1 : u->path;
    if (!u->host[0] || !db[0] || strchr(db, '/')) {
        snprintf(err, errlen, "%s: expected influx[s]://HOST[:PORT]/DATABASE", x->label);
        return -1;
    }
    char *dbdec = net_url_decode(db, strlen(db)), *dbenc = net_url_encode(dbdec);
    free(u->path);
    u->path = strdup("/write");
    char *base = net_url_http_base(u, tls, x->f->default_port);
    size_t n = strlen(base) + strlen(dbenc) + 32;
    x->url = malloc(n);
    snprintf(x->url, n, "%s?db=%s&precision=ns", base, dbenc);
    free(base);
    free(dbdec);
    free(dbenc);
    return 0;
}

/* opentsdb: PATH/api/put */
static int opentsdb_url(tsdb_ctx *x, net_url *u, int tls, char *err, size_t errlen)
{
    size_t pl = strlen(u->path);
    while (pl && u->path[pl - 1] == '/') u->path[--pl] = 0;
    char *path = malloc(pl + 16);
    snprintf(path, pl + 16, "%s/api/put", u->path);
    free(u->path);
    u->path = path;
    x->url = net_url_http_base(u, tls, x->f->default_port);
    return 0;
}

/* promrw: PATH, default /api/v1/write */
static int remote_write_url(tsdb_ctx *x, net_url *u, int tls, char *err, size_t errlen)
{
    if (!u->path[0] || !strcmp(u->path, "/")) {
        free(u->path);
        u->path = strdup("/api/v1/write");
    }
    x->url = net_url_http_base(u, tls, x->f->default_port);
    return 0;
}

static const char *const remote_write_headers[] = {
    "Content-Encoding: snappy", "X-Prometheus-Remote-Write-Version: 0.1.0", NULL};

extern const sink_ops sink_influx_ops, sink_opentsdb_ops, sink_remote_write_ops;

static const tsdb_format formats[] = {
    {"influx",
     &sink_influx_ops,
     {"influx", 1000, tsdb_connect, tsdb_send, NULL, tsdb_destroy},
     8086,
     NULL,
     "text/plain; charset=utf-8",
     tsconv_influx_line,
     tsconv_influx_set,
     0,
     influx_url,
     NULL,
     NULL},
    {"opentsdb",
     &sink_opentsdb_ops,
     {"opentsdb", 200, tsdb_connect, tsdb_send, NULL, tsdb_destroy},
     4242,
     "expected opentsdb[s]://HOST[:PORT]",
     "application/json",
     tsconv_opentsdb_points,
     tsconv_opentsdb_set,
     1,
     opentsdb_url,
     NULL,
     NULL},
    {"promrw",
     &sink_remote_write_ops,
     {"remote_write", 1000, tsdb_connect, tsdb_send, NULL, tsdb_destroy},
     9090,
     "expected promrw[s]://HOST[:PORT][/PATH]",
     "application/x-protobuf",
     remote_write_encode,
     remote_write_set,
     0,
     remote_write_url,
     remote_write_finish,
     remote_write_headers},
};

static const tsdb_format *format_of_url(const char *url, int *tls)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        size_t n = strlen(formats[i].scheme);
        if (strncasecmp(url, formats[i].scheme, n)) continue;
        if (!strncmp(url + n, "://", 3)) {
            *tls = 0;
            return &formats[i];
        }
        if ((url[n] == 's' || url[n] == 'S') && !strncmp(url + n + 1, "://", 3)) {
            *tls = 1;
            return &formats[i];
        }
    }
    return NULL;
}

static int tsdb_match_influx(const char *url, const sink_options *o)
{
    int tls;
    return format_of_url(url, &tls) == &formats[0];
}

static int tsdb_match_opentsdb(const char *url, const sink_options *o)
{
    int tls;
    return format_of_url(url, &tls) == &formats[1];
}

static int tsdb_match_remote_write(const char *url, const sink_options *o)
{
    int tls;
    return format_of_url(url, &tls) == &formats[2];
}

static sink *tsdb_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    int tls = 0;
    const tsdb_format *f = format_of_url(url, &tls);
    net_url u;
    char *label;
    if (net_url_open(&u, url, f->why_no_host, &label, err, errlen) < 0)
        return publisher_bad_url(f->ops, url, o, err, errlen);
    tsdb_ctx *x = calloc(1, sizeof *x);
    x->f = f;
    x->label = label;
    if (f->request_url(x, &u, tls, err, errlen) < 0) {
        net_url_free(&u);
        x->label = NULL;
        tsdb_destroy(x);
        free(label);
        return publisher_bad_url(f->ops, url, o, err, errlen);
    }
    x->keep_tags = net_url_query_get(u.query, "tags");
    if (httpc_init(&x->c, &u, o, err, errlen) < 0) {
        net_url_free(&u);
        tsdb_destroy(x);
        return NULL;
    }
    x->c.extra_headers = f->headers;
    net_url_free(&u);
    /* the annotations every event starts with, read once as the JSON path
     * reads them; without them (jobscope flush) every event goes that way */
    if (o && o->ann && o->ann->fragment)
        x->have_ann =
            tsconv_ann_init(&x->ann, o->ann->fragment, o->ann->fragment_len, x->keep_tags) == 0;
    sink *s = publisher_sink_create(f->ops, url, &f->backend, x, o, err, errlen);
    if (s && f->encode_set) publisher_set_encoder(publisher_of(s), tsdb_encode_set);
    return s;
}

const sink_ops sink_influx_ops = {
    .name = "influx",
    .match = tsdb_match_influx,
    .open = tsdb_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

const sink_ops sink_opentsdb_ops = {
    .name = "opentsdb",
    .match = tsdb_match_opentsdb,
    .open = tsdb_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

const sink_ops sink_remote_write_ops = {
    .name = "remote_write",
    .match = tsdb_match_remote_write,
    .open = tsdb_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};
