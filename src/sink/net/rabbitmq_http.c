/* rabbitmq_http.c — `rabbitmq://USER:PASS@HOST:PORT/api/exchanges/VHOST/EXCHANGE/publish`
 * (and `rabbitmqs://` for TLS): RabbitMQ's management HTTP API, the way
 * pegasus-kickstart publishes, so existing Panorama deployments work as they
 * are.  The scheme becomes http(s), user and password become HTTP Basic
 * auth, and each event is one POST of
 *   {"properties":{"delivery_mode":2,"content_type":"application/json"},
 *    "routing_key":"<event name>","payload":"<base64 of the event JSON>",
 *    "payload_encoding":"base64"}
 * (kickstart sent empty properties; delivery_mode 2 keeps the message across
 * a broker restart).  `?routing_key=KEY` replaces the event name.  The broker
 * answers {"routed":true|false}; an unroutable event (no queue bound) is
 * reported once, like AMQP without the mandatory flag. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"
#include "jsonx.h"

typedef struct rmq_ctx {
    httpc c;
    char *url;
    char *routing_key; /* NULL: the event name */
    char *label;
    char *b64;
    size_t b64cap;
    int warned_unrouted;
    unsigned long rejected;
} rmq_ctx;

static size_t b64_encode(const char *in, size_t n, char *out)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = (const unsigned char *)in;
    char *o = out;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        *o++ = t[v >> 18];
        *o++ = t[(v >> 12) & 63];
        *o++ = t[(v >> 6) & 63];
        *o++ = t[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0);
        *o++ = t[v >> 18];
        *o++ = t[(v >> 12) & 63];
        *o++ = i + 1 < n ? t[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    return (size_t)(o - out);
}

static int rmq_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    rmq_ctx *r = ctx;
    return httpc_probe(&r->c, r->url, timeout, err, errlen);
}

static int rmq_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    rmq_ctx *r = ctx;
    for (int i = 0; i < n; i++) {
        size_t need = (it[i].len + 2) / 3 * 4 + 1;
        if (need > r->b64cap) {
            char *b = realloc(r->b64, need);
            if (!b) {
                snprintf(err, errlen, "out of memory");
                return i;
            }
            r->b64 = b;
            r->b64cap = need;
        }
        size_t bl = b64_encode(it[i].json, it[i].len, r->b64);
        char *body = jsonx_rabbitmq_body(r->routing_key ? r->routing_key : it[i].name, r->b64, bl);
        if (!body) { /* not UTF-8: retrying would not help */
            if (!r->rejected)
                publisher_warn(r->c.quiet, r->label,
                               "cannot encode an event (routing key not UTF-8?); skipped");
            r->rejected++;
            continue;
        }
        long st =
            httpc_post(&r->c, r->url, "application/json", body, strlen(body), timeout, err, errlen);
        free(body);
        int cls = httpc_status_class(st);
        if (cls == 1) return i;
        if (cls == 2) {
            if (!r->rejected)
                publisher_warn(r->c.quiet, r->label,
                               "rejected by the broker (%s); such events are skipped", err);
            r->rejected++;
        } else if (r->c.resp && strstr(r->c.resp, "\"routed\":false") && !r->warned_unrouted) {
            publisher_warn(
                r->c.quiet, r->label,
                "the broker routed an event to no queue (is a queue bound to the exchange?)");
            r->warned_unrouted = 1;
        }
    }
    return n;
}

static void rmq_destroy(void *ctx)
{
    rmq_ctx *r = ctx;
    httpc_free(&r->c);
    free(r->url);
    free(r->routing_key);
    free(r->label);
    free(r->b64);
    free(r);
}

static int rmq_match(const char *url, const sink_options *o)
{
    return !strncasecmp(url, "rabbitmq://", 11) || !strncasecmp(url, "rabbitmqs://", 12);
}

static const pub_backend rmq_backend = {"rabbitmq", 64, rmq_connect, rmq_send, NULL, rmq_destroy};
static sink *rmq_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_rabbitmq_http_ops = {
    .name = "rabbitmq",
    .match = rmq_match,
    .open = rmq_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

static sink *rmq_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    net_url u;
    char *label;
    if (net_url_open(&u, url, NULL, &label, err, errlen) < 0)
        return publisher_bad_url(&sink_rabbitmq_http_ops, url, o, err, errlen);
    size_t pl = strlen(u.path);
    if (!u.host[0] || strncmp(u.path, "/api/exchanges/", 15) || pl < 24 ||
        strcmp(u.path + pl - 8, "/publish")) {
        snprintf(
            err, errlen,
            "%s: expected rabbitmq[s]://USER:PASS@HOST:PORT/api/exchanges/VHOST/EXCHANGE/publish",
            label);
        net_url_free(&u);
        free(label);
        return publisher_bad_url(&sink_rabbitmq_http_ops, url, o, err, errlen);
    }
    rmq_ctx *r = calloc(1, sizeof *r);
    int tls = !strcmp(u.scheme, "rabbitmqs");
    r->url = net_url_http_base(&u, tls, tls ? 15671 : 15672);
    r->routing_key = net_url_query_get(u.query, "routing_key");
    r->label = label;
    if (httpc_init(&r->c, &u, o, err, errlen) < 0) {
        net_url_free(&u);
        rmq_destroy(r);
        return NULL;
    }
    net_url_free(&u);
    return publisher_sink_create(&sink_rabbitmq_http_ops, url, &rmq_backend, r, o, err, errlen);
}
