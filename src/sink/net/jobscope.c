/* jobscope.c — `jobscope://HOST[:PORT]` (default port 4242) and
 * `jobscope+unix:///PATH/serve.sock`: stream events into a `jobscope serve`
 * (docs/serve.md).  Batches of events go as NDJSON to POST /api/events; the
 * server answers only once their points are durable.  It runs on the
 * publisher (memory queue + spool), so a server that is down or restarting
 * costs the job nothing and loses nothing: events wait in the spool and are
 * replayed in order.  `?token_file=FILE` sends FILE's token as
 * "Authorization: Bearer" (a server listening beyond loopback wants one).
 * `jobscope run` adds jobscope+unix://… by itself when a local server
 * answers on the well-known socket (serve_detect.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"

typedef struct js_ctx {
    httpc c;
    char *url;
    char *label;
    char *body;
    size_t cap;
    unsigned long rejected;
} js_ctx;

static int js_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    js_ctx *x = ctx;
    return httpc_probe(&x->c, x->url, timeout, err, errlen);
}

static int js_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    js_ctx *x = ctx;
    size_t need = 1;
    for (int i = 0; i < n; i++) need += it[i].len + 1;
    if (need > x->cap) {
        char *b = realloc(x->body, need);
        if (!b) {
            snprintf(err, errlen, "out of memory");
            return 0;
        }
        x->body = b;
        x->cap = need;
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        memcpy(x->body + off, it[i].json, it[i].len);
        off += it[i].len;
        x->body[off++] = '\n';
    }
    long st = httpc_post(&x->c, x->url, "application/x-ndjson", x->body, off, timeout, err, errlen);
    int cls = httpc_status_class(st);
    if (cls == 1) return 0;
    if (cls == 2) {
        /* 400 from /api/events: the parsable events were stored; count the others. */
        unsigned long failed = (unsigned long)n;
        const char *f = x->c.resp ? strstr(x->c.resp, "\"failed\":") : NULL;
        if (f) failed = strtoul(f + 9, NULL, 10);
        if (failed) httpc_rejected(&x->c, &x->rejected, failed, x->label, err);
    }
    return n;
}

static void js_disconnect(void *ctx)
{
    (void)ctx;
}

static void js_destroy(void *ctx)
{
    js_ctx *x = ctx;
    httpc_free(&x->c);
    free(x->url);
    free(x->label);
    free(x->body);
    free(x);
}

static int js_match(const char *url, const sink_options *o)
{
    (void)o;
    return !strncasecmp(url, "jobscope://", 11) || !strncasecmp(url, "jobscope+unix://", 16);
}

static const pub_backend js_backend = {"jobscope", 1000,          js_connect,
                                       js_send,    js_disconnect, js_destroy};
static sink *js_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_jobscope_ops = {
    .name = "jobscope",
    .match = js_match,
    .open = js_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

static char *read_token(const char *path, char *err, size_t errlen, const char *label)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read token_file %s", label, path);
        return NULL;
    }
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = 0;
    char *h = malloc(n + 32);
    if (h) snprintf(h, n + 32, "Authorization: Bearer %s", buf);
    memset(buf, 0, sizeof buf);
    return h;
}

static sink *js_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    net_url u;
    char *label;
    int unix_sock = !strncasecmp(url, "jobscope+unix://", 16);
    if (net_url_open(&u, url, unix_sock ? NULL : "expected jobscope://HOST[:PORT]", &label, err,
                     errlen) < 0)
        return publisher_bad_url(&sink_jobscope_ops, url, o, err, errlen);
    js_ctx *x = calloc(1, sizeof *x);
    if (!x || httpc_init(&x->c, &u, o, err, errlen) < 0) goto bad;
    x->label = label;
    if (unix_sock) {
        if (!u.path[0]) {
            snprintf(err, errlen, "%s: expected jobscope+unix:///PATH/TO/serve.sock", label);
            goto bad;
        }
        x->c.unix_socket = strdup(u.path);
        x->url = strdup("http://localhost/api/events");
    } else {
        free(u.path);
        u.path = strdup("/api/events");
        x->url = net_url_http_base(&u, 0, 4242);
    }
    char *tf = net_url_query_get(u.query, "token_file");
    if (tf) {
        x->c.bearer = read_token(tf, err, errlen, label);
        free(tf);
        if (!x->c.bearer) goto bad;
    }
    net_url_free(&u);
    return publisher_sink_create(&sink_jobscope_ops, url, &js_backend, x, o, err, errlen);
bad:
    net_url_free(&u);
    if (x) {
        x->label = NULL;
        js_destroy(x);
    }
    free(label);
    return publisher_bad_url(&sink_jobscope_ops, url, o, err, errlen);
}
