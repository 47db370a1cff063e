/* http.c — `http://…` and `https://…`: POST each event as JSON
 * (Content-Type: application/json, as pegasus-kickstart does), or, with the
 * URL fragment `#ndjson` (or `#batch=N`), batches of up to N events as
 * newline-delimited JSON (application/x-ndjson).  The fragment is jobscope's:
 * it is never sent; the query string is the receiver's and is kept.
 * A 2xx answer is delivery; 400, 409, 413, 415 and 422 reject the event for
 * good (counted, reported once); anything else is retried (httpc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"

typedef struct http_ctx {
    httpc c;
    char *url; /* what we POST to: no user info, no fragment */
    int batch; /* 0: one event per request */
    char *body;
    size_t cap;
    unsigned long rejected;
    char *label;
} http_ctx;

static int http_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    http_ctx *h = ctx;
    return httpc_probe(&h->c, h->url, timeout, err, errlen);
}

static int http_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    http_ctx *h = ctx;
    if (!h->batch) {
        for (int i = 0; i < n; i++) {
            long st = httpc_post(&h->c, h->url, "application/json", it[i].json, it[i].len, timeout,
                                 err, errlen);
            int cls = httpc_status_class(st);
            if (cls == 1) return i;
            if (cls == 2) httpc_rejected(&h->c, &h->rejected, 1, h->label, err);
        }
        return n;
    }
    size_t need = 0;
    for (int i = 0; i < n; i++) need += it[i].len + 1;
    if (need > h->cap) {
        char *b = realloc(h->body, need);
        if (!b) {
            snprintf(err, errlen, "out of memory");
            return 0;
        }
        h->body = b;
        h->cap = need;
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        memcpy(h->body + off, it[i].json, it[i].len);
        off += it[i].len;
        h->body[off++] = '\n';
    }
    return httpc_deliver(&h->c, h->url, "application/x-ndjson", h->body, off, n, &h->rejected,
                         h->label, timeout, err, errlen);
}

static void http_destroy(void *ctx)
{
    http_ctx *h = ctx;
    httpc_free(&h->c);
    free(h->url);
    free(h->body);
    free(h->label);
    free(h);
}

static int http_match(const char *url, const sink_options *o)
{
    return !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
}

static const pub_backend http_single = {"http", 64, http_connect, http_send, NULL, http_destroy};
static const pub_backend http_batched = {"http", 500, http_connect, http_send, NULL, http_destroy};

static sink *http_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_http_ops = {
    .name = "http",
    .match = http_match,
    .open = http_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

static sink *http_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    net_url u;
    char *label;
    if (net_url_open(&u, url, "no host in URL", &label, err, errlen) < 0)
        return publisher_bad_url(&sink_http_ops, url, o, err, errlen);
    http_ctx *h = calloc(1, sizeof *h);
    int batch = 0;
    if (u.fragment) {
        if (!strcmp(u.fragment, "ndjson"))
            batch = 500;
        else if (!strncmp(u.fragment, "batch=", 6))
            batch = atoi(u.fragment + 6);
        if (batch <= 0 || batch > 100000) {
            snprintf(err, errlen, "%s: unknown option #%s (use #ndjson or #batch=N)", label,
                     u.fragment);
            goto bad;
        }
    }
    int tls = !strcmp(u.scheme, "https");
    char *base = net_url_http_base(&u, tls, tls ? 443 : 80);
    size_t n = strlen(base) + (u.query ? strlen(u.query) : 0) + 3;
    h->url = malloc(n);
    snprintf(h->url, n, "%s%s%s", base, u.query ? "?" : "", u.query ? u.query : "");
    free(base);
    if (httpc_init(&h->c, &u, o, err, errlen) < 0) goto bad;
    h->batch = batch;
    h->label = label;
    net_url_free(&u);
    pub_backend be = batch ? http_batched : http_single; /* copied by the publisher */
    if (batch) be.max_batch = batch;
    return publisher_sink_create(&sink_http_ops, url, &be, h, o, err, errlen);
bad:
    net_url_free(&u);
    free(h->url);
    free(h);
    free(label);
    return publisher_bad_url(&sink_http_ops, url, o, err, errlen);
}
