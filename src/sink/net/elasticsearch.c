/* elasticsearch.c — `elasticsearch://[USER:PASS@]HOST[:PORT]/INDEX`
 * (`elasticsearchs://` for TLS): batches of events through the _bulk API.
 * Each event is an `index` action into INDEX (default "jobscope"; Panorama
 * used panorama_kickstart); `?index.PREFIX=NAME` sends the events whose name
 * starts with PREFIX to index NAME instead (longest prefix wins), e.g.
 * `?index.kickstart.inv.online.gpu=panorama_gpu`.
 * The document _id is a 128-bit hash of the event's bytes, so an event
 * replayed after an outage overwrites itself instead of doubling: at-least-
 * once delivery becomes exactly-once storage.  An item refused for its
 * content (400, 409, 413, 415, 422) is reported once and skipped; any other
 * item failure is retried from that item on. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"
#include "../formats/sbuf.h"
#include "jsonx.h"

typedef struct es_route { char *prefix; char *index; } es_route;

typedef struct es_ctx {
    httpc  c;
    char  *url;         /* .../_bulk */
    char  *index;
    es_route routes[32];
    int    nroutes;
    char  *label;
    sbuf   body;
    unsigned long rejected;
} es_ctx;

/* Two independent 64-bit FNV-1a variants give the 128-bit document id. */
static void es_doc_id(const char *s, size_t n, char out[33])
{
    uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;
    for (size_t i = 0; i < n; i++) {
        a = (a ^ (unsigned char)s[i]) * 0x100000001b3ULL;
        b = (b ^ (unsigned char)s[n - 1 - i]) * 0x100000001b3ULL;
        b ^= b >> 29;
    }
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static const char *es_index_for(const es_ctx *e, const char *name)
{
    const char *best = e->index;
    size_t bl = 0;
    for (int i = 0; i < e->nroutes; i++) {
        size_t l = strlen(e->routes[i].prefix);
        if (l >= bl && !strncmp(name, e->routes[i].prefix, l)) {
            best = e->routes[i].index;
            bl = l;
        }
    }
    return best;
}

/* Appends the _bulk body for items (action line + document line each). */
static void es_bulk_append(sbuf *b, const char *index, const char *json, size_t len)
{
    char id[33];
    es_doc_id(json, len, id);
    sbuf_puts(b, "{\"index\":{\"_index\":\"");
    sbuf_puts(b, index);            /* validated at open: no quotes or backslashes */
    sbuf_puts(b, "\",\"_id\":\"");
    sbuf_puts(b, id);
    sbuf_puts(b, "\"}}\n");
    sbuf_put(b, json, len);
    sbuf_putc(b, '\n');
}

static int es_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    es_ctx *e = ctx;
    return httpc_probe(&e->c, e->url, timeout, err, errlen);
}

static int es_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    es_ctx *e = ctx;
    sbuf_reset(&e->body);
    for (int i = 0; i < n; i++) es_bulk_append(&e->body, es_index_for(e, it[i].name), it[i].json, it[i].len);
    if (e->body.oom) { snprintf(err, errlen, "out of memory"); return 0; }
    long st = httpc_post(&e->c, e->url, "application/x-ndjson", e->body.p, e->body.len, timeout, err, errlen);
    int cls = httpc_status_class(st);
    if (cls == 1) return 0;
    if (cls == 2) {
        httpc_rejected(&e->rejected, (unsigned long)n, e->label, err);
        return n;
    }
    int rejected;
    long retry;
    char reason[256] = "";
    int done = jsonx_bulk_result(e->c.resp, n, &rejected, &retry, reason, sizeof reason);
    if (done < 0) {
        snprintf(err, errlen, "the _bulk answer is not JSON");
        return 0;
    }
    if (rejected) {
        if (!e->rejected) publisher_warn(e->label, "document rejected (%s); such events are skipped", reason);
        e->rejected += (unsigned long)rejected;
    }
    if (done < n) snprintf(err, errlen, "_bulk item answered %ld", retry);
    return done;
}

static void es_destroy(void *ctx)
{
    es_ctx *e = ctx;
    httpc_free(&e->c);
    sbuf_free(&e->body);
    for (int i = 0; i < e->nroutes; i++) { free(e->routes[i].prefix); free(e->routes[i].index); }
    free(e->url); free(e->index); free(e->label);
    free(e);
}

static int es_match(const char *url, const sink_options *o)
{
    return !strncasecmp(url, "elasticsearch://", 16) || !strncasecmp(url, "elasticsearchs://", 17);
}

static const pub_backend es_backend = { "elasticsearch", 500, es_connect, es_send, NULL, es_destroy };
static sink *es_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_elasticsearch_ops = {
    "elasticsearch", es_match, es_open, publisher_sink_write, publisher_sink_flush, publisher_sink_close,
};

/* Elasticsearch index names: lower case, no \ / * ? " < > | space , # : */
static int es_index_ok(const char *s)
{
    if (!*s || *s == '-' || *s == '_' || *s == '+') return 0;
    for (; *s; s++)
        if ((*s >= 'A' && *s <= 'Z') || strchr("\\/*?\"<>| ,#:", *s) || (unsigned char)*s < 0x20) return 0;
    return 1;
}

static sink *es_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    net_url u;
    char *label;
    if (net_url_open(&u, url, NULL, &label, err, errlen) < 0)
        return publisher_bad_url(&sink_elasticsearch_ops, url, o, err, errlen);
    es_ctx *e = calloc(1, sizeof *e);
    e->label = label;
    const char *idx = u.path[0] == '/' ? u.path + 1 : u.path;
    e->index = net_url_decode(idx, strlen(idx));
    if (!e->index[0]) { free(e->index); e->index = strdup("jobscope"); }
    if (!u.host[0] || !es_index_ok(e->index)) {
        snprintf(err, errlen, "%s: expected elasticsearch[s]://HOST[:PORT]/INDEX (index in lower case)", label);
        goto bad;
    }
    size_t pos = 0;
    char *k, *v;
    while (net_url_query_next(u.query, &pos, &k, &v)) {
        if (!strncmp(k, "index.", 6) && k[6] && es_index_ok(v) && e->nroutes < 32) {
            e->routes[e->nroutes].prefix = strdup(k + 6);
            e->routes[e->nroutes++].index = v;
            free(k);
            continue;
        }
        snprintf(err, errlen, "%s: unknown or bad option '%s' (use ?index.EVENT_PREFIX=INDEX)", label, k);
        free(k); free(v);
        goto bad;
    }
    free(u.path);
    u.path = strdup("/_bulk");
    int tls = !strcmp(u.scheme, "elasticsearchs");
    e->url = net_url_http_base(&u, tls, 9200);
    if (httpc_init(&e->c, &u, o, err, errlen) < 0) goto bad;
    net_url_free(&u);
    return publisher_sink_create(&sink_elasticsearch_ops, url, &es_backend, e, o, err, errlen);
bad:
    net_url_free(&u);
    es_destroy(e);
    return publisher_bad_url(&sink_elasticsearch_ops, url, o, err, errlen);
}
