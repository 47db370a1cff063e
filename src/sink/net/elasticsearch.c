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
 * item failure is retried from that item on.
 *
 * Panorama's dashboards expect a time field: every document gets
 * "@timestamp" (ISO 8601 UTC, milliseconds, from the event's ts), added in
 * front of the event's own keys.  On first contact an index template is
 * installed (POST /_index_template/jobscope-INDEX) so that the mapping does
 * not depend on the first document: ts double (ES would guess float and
 * lose sub-second precision), @timestamp date, annotations keyword, every
 * other decimal double.  A server that refuses the template is warned about
 * once; events flow anyway. */
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../delivery/publisher.h"
#include "httpc.h"
#include "../formats/sbuf.h"
#include "jsonx.h"

typedef struct es_route {
    char *prefix;
    char *index;
} es_route;

typedef struct es_ctx {
    httpc c;
    char *url; /* .../_bulk */
    char *index;
    es_route routes[32];
    int nroutes;
    char *label;
    sbuf body;
    unsigned long rejected;
    int template_done;
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

/* The event's "ts" (epoch seconds) as "@timestamp":"2019-03-18T00:42:27.355Z",
 * into out; 0 if the event has no ts. */
static size_t es_timestamp(const char *json, size_t len, char *out, size_t n)
{
    const char *p = NULL;
    for (size_t i = 0; i + 5 < len && !p; i++)
        if (!memcmp(json + i, "\"ts\":", 5)) p = json + i + 5;
    if (!p) return 0;
    char *end;
    double ts = strtod(p, &end);
    if (end == p || ts <= 0) return 0;
    long long ms = (long long)(ts * 1000.0 + 0.5);
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    return (size_t)snprintf(out, n, "\"@timestamp\":\"%s.%03dZ\",", base, (int)(ms % 1000));
}

/* Appends the _bulk body for items (action line + document line each). */
static void es_bulk_append(sbuf *b, const char *index, const char *json, size_t len)
{
    char id[33], at[64];
    es_doc_id(json, len, id);
    size_t atn = len > 2 && json[0] == '{' ? es_timestamp(json, len, at, sizeof at) : 0;
    sbuf_puts(b, "{\"index\":{\"_index\":\"");
    sbuf_puts(b, index); /* validated at open: no quotes or backslashes */
    sbuf_puts(b, "\",\"_id\":\"");
    sbuf_puts(b, id);
    sbuf_puts(b, "\"}}\n");
    if (atn) {
        sbuf_putc(b, '{');
        sbuf_put(b, at, atn);
        sbuf_put(b, json + 1, len - 1);
    } else {
        sbuf_put(b, json, len);
    }
    sbuf_putc(b, '\n');
}

/* The fields every event shares, as keyword (exact match, aggregations). */
static const char *const es_keywords[] = {
    "event",      "hostname", "site",   "wf_uuid", "wf_label", "dag_job_id",       "condor_job_id",
    "xformation", "task_id",  "job_id", "exe",     "cmd",      "monitoring_event", "xwf_id",
    "sched_id",
};

/* Installs the index template once (see the top of the file). */
static int es_install_template(es_ctx *e, double timeout, char *err, size_t errlen)
{
    sbuf b;
    memset(&b, 0, sizeof b);
    sbuf_puts(&b, "{\"index_patterns\":[\"");
    sbuf_puts(&b, e->index);
    sbuf_putc(&b, '"');
    for (int i = 0; i < e->nroutes; i++) {
        sbuf_puts(&b, ",\"");
        sbuf_puts(&b, e->routes[i].index); /* validated: no quotes */
        sbuf_putc(&b, '"');
    }
    sbuf_puts(&b, "],\"priority\":100,\"template\":{\"mappings\":{"
                  "\"dynamic_templates\":[{\"decimals\":{\"match_mapping_type\":\"double\","
                  "\"mapping\":{\"type\":\"double\"}}}],\"properties\":{"
                  "\"@timestamp\":{\"type\":\"date\"},\"ts\":{\"type\":\"double\"},"
                  "\"seq\":{\"type\":\"long\"},\"rank\":{\"type\":\"long\"}");
    for (size_t i = 0; i < sizeof es_keywords / sizeof es_keywords[0]; i++) {
        sbuf_puts(&b, ",\"");
        sbuf_puts(&b, es_keywords[i]);
        sbuf_puts(&b, "\":{\"type\":\"keyword\"}");
    }
    sbuf_puts(&b, "}}}}");
    char *url = malloc(strlen(e->url) + strlen(e->index) + 64);
    int rc = -1;
    if (url && !b.oom) {
        strcpy(url, e->url);
        char *slash = strstr(url, "/_bulk");
        if (slash) *slash = 0;
        strcat(url, "/_index_template/jobscope-");
        strcat(url, e->index);
        char why[256] = "";
        long st = httpc_post(&e->c, url, "application/json", b.p, b.len, timeout, why, sizeof why);
        if (st < 0) {
            snprintf(err, errlen, "%s", why);
        } else {
            rc = 0;
            e->template_done = 1;
            if (httpc_status_class(st) != 0)
                publisher_warn(e->c.quiet, e->label,
                               "index template not installed (%s); ts may be mapped as float", why);
        }
    }
    free(url);
    sbuf_free(&b);
    return rc;
}

static int es_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    es_ctx *e = ctx;
    int rc = httpc_probe(&e->c, e->url, timeout, err, errlen);
    if (rc == 0 && !e->template_done) rc = es_install_template(e, timeout, err, errlen);
    return rc;
}

static int es_send(void *ctx, const pub_item *it, int n, double timeout, char *err, size_t errlen)
{
    es_ctx *e = ctx;
    sbuf_reset(&e->body);
    for (int i = 0; i < n; i++)
        es_bulk_append(&e->body, es_index_for(e, it[i].name), it[i].json, it[i].len);
    if (e->body.oom) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    long st = httpc_post(&e->c, e->url, "application/x-ndjson", e->body.p, e->body.len, timeout,
                         err, errlen);
    int cls = httpc_status_class(st);
    if (cls == 1) return 0;
    if (cls == 2) {
        httpc_rejected(&e->c, &e->rejected, (unsigned long)n, e->label, err);
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
        if (!e->rejected)
            publisher_warn(e->c.quiet, e->label, "document rejected (%s); such events are skipped",
                           reason);
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
    for (int i = 0; i < e->nroutes; i++) {
        free(e->routes[i].prefix);
        free(e->routes[i].index);
    }
    free(e->url);
    free(e->index);
    free(e->label);
    free(e);
}

static int es_match(const char *url, const sink_options *o)
{
    return !strncasecmp(url, "elasticsearch://", 16) || !strncasecmp(url, "elasticsearchs://", 17);
}

static const pub_backend es_backend = {"elasticsearch", 500, es_connect, es_send, NULL, es_destroy};
static sink *es_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_elasticsearch_ops = {
    .name = "elasticsearch",
    .match = es_match,
    .open = es_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

/* Elasticsearch index names: lower case, no \ / * ? " < > | space , # : */
static int es_index_ok(const char *s)
{
    if (!*s || *s == '-' || *s == '_' || *s == '+') return 0;
    for (; *s; s++)
        if ((*s >= 'A' && *s <= 'Z') || strchr("\\/*?\"<>| ,#:", *s) || (unsigned char)*s < 0x20)
            return 0;
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
    if (!e->index[0]) {
        free(e->index);
        e->index = strdup("jobscope");
    }
    if (!u.host[0] || !es_index_ok(e->index)) {
        snprintf(err, errlen,
                 "%s: expected elasticsearch[s]://HOST[:PORT]/INDEX (index in lower case)", label);
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
        snprintf(err, errlen, "%s: unknown or bad option '%s' (use ?index.EVENT_PREFIX=INDEX)",
                 label, k);
        free(k);
        free(v);
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
