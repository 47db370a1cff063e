/* influx.c — `influx://[USER:PASS@]HOST[:PORT]/DB` (`influxs://` for TLS):
 * InfluxDB 1.x line protocol, POSTed in batches to /write?db=DB&precision=ns.
 * VictoriaMetrics accepts the same requests.  Each event is one line:
 *   <event>,<tag>=<v>,... <field>=<number>,... <ts in ns>
 * (tsconv.h says which parts of an event become tags and fields; numbers are
 * always written as floats so a field never changes type).  `?tags=a,b`
 * keeps only those tags.  Events without any number are skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"
#include "../formats/sbuf.h"
#include "../formats/tsconv.h"

typedef struct influx_ctx {
    httpc  c;
    char  *url;
    char  *keep_tags;
    char  *label;
    sbuf   body;
    unsigned long rejected;
} influx_ctx;

static int influx_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    influx_ctx *x = ctx;
    return httpc_probe(&x->c, x->url, timeout, err, errlen);
}

static int influx_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    influx_ctx *x = ctx;
    sbuf_reset(&x->body);
    int lines = 0;
    for (int i = 0; i < n; i++) lines += tsconv_influx_line(&x->body, it[i].json, it[i].len, x->keep_tags);
    if (x->body.oom) { snprintf(err, errlen, "out of memory"); return 0; }
    if (!lines) return n;
    return httpc_deliver(&x->c, x->url, "text/plain; charset=utf-8", x->body.p, x->body.len, n,
                         &x->rejected, x->label, timeout, err, errlen);
}

static void influx_disconnect(void *ctx) { (void)ctx; }

static void influx_destroy(void *ctx)
{
    influx_ctx *x = ctx;
    httpc_free(&x->c);
    sbuf_free(&x->body);
    free(x->url); free(x->keep_tags); free(x->label);
    free(x);
}

static int influx_match(const char *url, const sink_options *o)
{
    return !strncasecmp(url, "influx://", 9) || !strncasecmp(url, "influxs://", 10);
}

static const pub_backend influx_backend = { "influx", 1000, influx_connect, influx_send, influx_disconnect, influx_destroy };
static sink *influx_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_influx_ops = {
    "influx", influx_match, influx_open, publisher_sink_write, publisher_sink_flush, publisher_sink_close,
};

static sink *influx_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    net_url u;
    char *label;
    if (net_url_open(&u, url, NULL, &label, err, errlen) < 0)
        return publisher_bad_url(&sink_influx_ops, url, o, err, errlen);
    const char *db = u.path[0] == '/' ? u.path + 1 : u.path;
    if (!u.host[0] || !db[0] || strchr(db, '/')) {
        snprintf(err, errlen, "%s: expected influx[s]://HOST[:PORT]/DATABASE", label);
        net_url_free(&u);
        free(label);
        return publisher_bad_url(&sink_influx_ops, url, o, err, errlen);
    }
    influx_ctx *x = calloc(1, sizeof *x);
    int tls = !strcmp(u.scheme, "influxs");
    char *dbdec = net_url_decode(db, strlen(db)), *dbenc = net_url_encode(dbdec);
    free(u.path);
    u.path = strdup("/write");
    char *base = net_url_http_base(&u, tls, 8086);
    size_t n = strlen(base) + strlen(dbenc) + 32;
    x->url = malloc(n);
    snprintf(x->url, n, "%s?db=%s&precision=ns", base, dbenc);
    free(base); free(dbdec); free(dbenc);
    x->keep_tags = net_url_query_get(u.query, "tags");
    x->label = label;
    if (httpc_init(&x->c, &u, o, err, errlen) < 0) {
        net_url_free(&u);
        influx_destroy(x);
        return NULL;
    }
    net_url_free(&u);
    return publisher_sink_create(&sink_influx_ops, url, &influx_backend, x, o, err, errlen);
}
