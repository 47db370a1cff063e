/* opentsdb.c — `opentsdb://[USER:PASS@]HOST[:PORT]` (`opentsdbs://` for TLS):
 * POSTs batches of data points to /api/put, which OpenTSDB 2.x and
 * VictoriaMetrics (-opentsdbHTTPListenAddr) accept.  Each number of an event
 * becomes metric "<event>.<field>" with the event's annotations as tags
 * (tsconv.h); timestamps in milliseconds.  `?tags=hostname,wf_uuid,...`
 * keeps only those tags (OpenTSDB refuses more than 8 by default). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"
#include "../formats/sbuf.h"
#include "../formats/tsconv.h"

typedef struct tsdb_ctx {
    httpc  c;
    char  *url;
    char  *keep_tags;
    char  *label;
    sbuf   body;
    unsigned long rejected;
} tsdb_ctx;

static int tsdb_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    tsdb_ctx *x = ctx;
    return httpc_probe(&x->c, x->url, timeout, err, errlen);
}

static int tsdb_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    tsdb_ctx *x = ctx;
    sbuf_reset(&x->body);
    int points = 0;
    for (int i = 0; i < n; i++) points += tsconv_opentsdb_points(&x->body, it[i].json, it[i].len, x->keep_tags);
    if (!points) return n;
    sbuf_putc(&x->body, ']');
    if (x->body.oom) { snprintf(err, errlen, "out of memory"); return 0; }
    return httpc_deliver(&x->c, x->url, "application/json", x->body.p, x->body.len, n,
                         &x->rejected, x->label, timeout, err, errlen);
}

static void tsdb_disconnect(void *ctx) { (void)ctx; }

static void tsdb_destroy(void *ctx)
{
    tsdb_ctx *x = ctx;
    httpc_free(&x->c);
    sbuf_free(&x->body);
    free(x->url); free(x->keep_tags); free(x->label);
    free(x);
}

static int tsdb_match(const char *url, const sink_options *o)
{
    return !strncasecmp(url, "opentsdb://", 11) || !strncasecmp(url, "opentsdbs://", 12);
}

static const pub_backend tsdb_backend = { "opentsdb", 200, tsdb_connect, tsdb_send, tsdb_disconnect, tsdb_destroy };
static sink *tsdb_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_opentsdb_ops = {
    "opentsdb", tsdb_match, tsdb_open, publisher_sink_write, publisher_sink_flush, publisher_sink_close,
};

static sink *tsdb_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    net_url u;
    char *label;
    if (net_url_open(&u, url, "expected opentsdb[s]://HOST[:PORT]", &label, err, errlen) < 0)
        return publisher_bad_url(&sink_opentsdb_ops, url, o, err, errlen);
    tsdb_ctx *x = calloc(1, sizeof *x);
    int tls = !strcmp(u.scheme, "opentsdbs");
    size_t pl = strlen(u.path);
    while (pl && u.path[pl - 1] == '/') u.path[--pl] = 0;
    char *path = malloc(pl + 16);
    snprintf(path, pl + 16, "%s/api/put", u.path);
    free(u.path);
    u.path = path;
    x->url = net_url_http_base(&u, tls, 4242);
    x->keep_tags = net_url_query_get(u.query, "tags");
    x->label = label;
    if (httpc_init(&x->c, &u, o, err, errlen) < 0) {
        net_url_free(&u);
        tsdb_destroy(x);
        return NULL;
    }
    net_url_free(&u);
    return publisher_sink_create(&sink_opentsdb_ops, url, &tsdb_backend, x, o, err, errlen);
}
