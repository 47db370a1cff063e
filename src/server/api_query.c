/* api_query.c — the read endpoints of the OpenTSDB API over src/query/tsq.h
 * and the store's index:
 *   /api/query (POST body, GET m=...)   tsq engine over the local store
 *   /api/query/last                     newest point of matching series
 *   /api/suggest                        sorted prefix matches, max (default 25)
 *   /api/aggregators, /api/config/filters, /api/search/lookup
 * These answer from this node's store.  With --peers, the peers module
 * (peers.c) wraps these routes: it calls them for the local answer and
 * merges the peers' (raw series before aggregation for /api/query, unions
 * for the others). */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include "api_query.h"

#define MAX_SUGGEST 10000

static void reply_tsq_error(server_response *w, const tsq_error *e)
{
    server_reply_error(w, e->code ? e->code : 400, e->message[0] ? e->message : "Bad request",
                       e->details);
}

static void reply_json(server_response *w, int status, json_t *o)
{
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!txt) {
        server_reply_error(w, 500, "Out of memory", NULL);
        return;
    }
    server_reply_take(w, status, "application/json", txt, strlen(txt));
}

/* ---- /api/query ---- */

static const char *get_param(void *arg, const char *name, int i)
{
    return server_param_n(arg, name, i);
}

/* A filled downsample makes one value per bucket whatever the data: bound
 * the buckets a request may ask for, all its sub-queries together, so one
 * request cannot make the server build gigabytes (the fuzz target found a
 * 12-year 10s-avg-nan query; issue 23 a hundred sub-queries of 499,000). */
int server_query_check_size(const tsq_query *q, tsq_error *e)
{
    double buckets = 0;
    for (int i = 0; i < q->nsubs; i++) {
        const tsq_downsample *ds = &q->subs[i].ds;
        if (ds->interval_ms <= 0 || ds->all || ds->fill == TSQ_FILL_NONE) continue;
        buckets += ((double)q->end_ms - (double)q->start_ms) / (double)ds->interval_ms + 1;
    }
    if (buckets > SERVER_MAX_FILLED_BUCKETS) {
        e->code = 400;
        snprintf(e->message, sizeof e->message,
                 "Query too large: %.0f downsampling buckets with a fill policy (at most %d in "
                 "a request)",
                 buckets, SERVER_MAX_FILLED_BUCKETS);
        snprintf(e->details, sizeof e->details,
                 "use a larger downsampling interval, a shorter time range or fill 'none'");
        return -1;
    }
    return 0;
}

static int client_gone(void *arg)
{
    return server_client_gone(arg);
}

void server_query_guard(server *s, const server_request *r, tsq_query *q)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    q->guard.max_points = SERVER_MAX_QUERY_POINTS;
    if (s->cfg.query_timeout_s > 0)
        q->guard.deadline_ns =
            (int64_t)t.tv_sec * 1000000000 + t.tv_nsec + (int64_t)(s->cfg.query_timeout_s * 1e9);
    q->guard.client_gone = client_gone;
    q->guard.client_arg = (void *)r;
}

int server_query_check_answer(const tsq_result *res, tsq_error *e)
{
    size_t pts = 0;
    for (size_t i = 0; i < res->n; i++) pts += res->v[i].n;
    if (pts <= SERVER_MAX_ANSWER_POINTS) return 0;
    e->code = 413;
    snprintf(e->message, sizeof e->message,
             "Answer too large: %zu data points (at most %d in an answer)", pts,
             SERVER_MAX_ANSWER_POINTS);
    snprintf(e->details, sizeof e->details, "downsample, or narrow the time range or the filters");
    return -1;
}

static int parse_query(const server_request *r, int64_t now, tsq_query *q, tsq_error *e)
{
    memset(q, 0, sizeof *q);
    int rc;
    if (!strcmp(r->method, "POST") && r->body_len) {
        rc = tsq_parse_json(r->body, r->body_len, now, q, e);
        const char *arrays = server_param(r, "arrays");
        if (rc == 0 && arrays && (!*arrays || !strcmp(arrays, "true"))) q->arrays = 1;
    } else {
        rc = tsq_parse_get(get_param, (void *)r, now, q, e);
    }
    if (rc == 0) rc = server_query_check_size(q, e);
    return rc;
}

/* ---- the answer cache of /api/query ----
 * Dashboards ask the same POST again and again (every refresh, every
 * viewer).  An answer is kept with the store's version of each metric the
 * query reads (store_metric_version, read before the query ran); it is
 * served again only while every one of them is unchanged, i.e. no point of
 * those metrics was written or dropped since.  The key is the body, the
 * arrays parameter and the resolved time range (relative times resolve
 * differently as the clock moves).  Small and bounded: QC_ENTRIES answers
 * of at most QC_MAX_ANSWER bytes, QC_MAX_BYTES in all; the least recently
 * used go first. */
#define QC_ENTRIES    32
#define QC_MAX_ANSWER (1u << 20)
#define QC_MAX_BYTES  (8u << 20) /* all answers together (memory bound) */
#define QC_MAX_SUBS   16

/* What an answer was computed for, beyond its key: the store's version of
 * each metric, each sub-query's scan range, and the bounds within which
 * start and end give the same answer (tsq_result.stable). */
typedef struct qc_when {
    uint64_t vers[QC_MAX_SUBS];
    int64_t scan[QC_MAX_SUBS][2];
    int nsubs;
    int64_t start_after, start_upto, end_from, end_before;
    int64_t start, end;
} qc_when;

typedef struct qc_entry {
    char *key;
    size_t keylen;
    qc_when when;
    char *txt;
    size_t len;
    uint64_t used;
} qc_entry;

struct qcache {
    pthread_mutex_t mu;
    qc_entry e[QC_ENTRIES];
    uint64_t tick;
    size_t bytes;
    unsigned long long hits, misses;
};

/* The module's state: the cache (made by query_init, freed by query_fini). */
static void qcache_free(struct qcache *c)
{
    if (!c) return;
    for (int i = 0; i < QC_ENTRIES; i++) {
        free(c->e[i].key);
        free(c->e[i].txt);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Does an answer computed at `was` hold for the query at `now`? */
static int qc_holds(const qc_when *was, const qc_when *now)
{
    if (was->nsubs != now->nsubs ||
        memcmp(was->vers, now->vers, (size_t)now->nsubs * sizeof *now->vers) ||
        memcmp(was->scan, now->scan, (size_t)now->nsubs * sizeof *now->scan))
        return 0;
    if (now->start == was->start && now->end == was->end) return 1;
    return now->start > was->start_after && now->start <= was->start_upto &&
           now->end >= was->end_from && now->end < was->end_before;
}

/* A copy of the cached answer for key at `now`, or NULL. */
static char *qc_lookup(struct qcache *c, const char *key, size_t keylen, const qc_when *now,
                       size_t *len)
{
    char *out = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < QC_ENTRIES; i++) {
        qc_entry *e = &c->e[i];
        if (!e->key || e->keylen != keylen || memcmp(e->key, key, keylen)) continue;
        if (qc_holds(&e->when, now)) {
            out = malloc(e->len + 1);
            if (out) {
                memcpy(out, e->txt, e->len + 1);
                *len = e->len;
                e->used = ++c->tick;
            }
        } else { /* stale: the data changed */
            c->bytes -= e->len;
            free(e->key);
            free(e->txt);
            memset(e, 0, sizeof *e);
        }
        break;
    }
    if (out)
        c->hits++;
    else
        c->misses++;
    pthread_mutex_unlock(&c->mu);
    return out;
}

static void qc_store(struct qcache *c, const char *key, size_t keylen, const qc_when *when,
                     const char *txt, size_t len)
{
    if (len > QC_MAX_ANSWER) return;
    char *k = malloc(keylen), *t = malloc(len + 1);
    if (!k || !t) {
        free(k);
        free(t);
        return;
    }
    memcpy(k, key, keylen);
    memcpy(t, txt, len + 1);
    pthread_mutex_lock(&c->mu);
    qc_entry *victim = &c->e[0];
    for (int i = 0; i < QC_ENTRIES; i++) {
        qc_entry *e = &c->e[i];
        if (e->key && e->keylen == keylen && !memcmp(e->key, key, keylen)) {
            victim = e;
            break;
        }
        if (!e->key) {
            if (victim->key) victim = e;
        } else if (victim->key && e->used < victim->used)
            victim = e;
    }
    if (victim->key) c->bytes -= victim->len;
    free(victim->key);
    free(victim->txt);
    memset(victim, 0, sizeof *victim);
    while (c->bytes + len > QC_MAX_BYTES) { /* the least recently used go */
        qc_entry *old = NULL;
        for (int i = 0; i < QC_ENTRIES; i++)
            if (c->e[i].key && (!old || c->e[i].used < old->used)) old = &c->e[i];
        if (!old) break;
        c->bytes -= old->len;
        free(old->key);
        free(old->txt);
        memset(old, 0, sizeof *old);
    }
    c->bytes += len;
    victim->key = k;
    victim->keylen = keylen;
    victim->when = *when;
    victim->txt = t;
    victim->len = len;
    victim->used = ++c->tick;
    pthread_mutex_unlock(&c->mu);
}

static void h_query(server *s, const server_request *r, server_response *w, void *arg)
{
    struct qcache *cache = arg;
    tsq_query q;
    tsq_error e = {0};
    if (parse_query(r, server_now_ms(), &q, &e) < 0) {
        reply_tsq_error(w, &e);
        tsq_query_free(&q);
        return;
    }
    /* the cache: POST bodies only (a GET's parameters have no single text);
     * the key is the body as sent, so "1h-ago" asked again later finds the
     * answer, which holds while the data, the scan ranges and the points
     * at the edges of the range are the same (qc_holds) */
    struct qcache *c = NULL;
    sbuf key = {0};
    qc_when when = {0};
    if (!strcmp(r->method, "POST") && r->body_len && q.nsubs <= QC_MAX_SUBS && (c = cache)) {
        sbuf_printf(&key, "%d\n", q.arrays);
        sbuf_put(&key, r->body, r->body_len);
        when.nsubs = q.nsubs;
        when.start = q.start_ms;
        when.end = q.end_ms;
        for (int i = 0; i < q.nsubs; i++) {
            when.vers[i] = store_metric_version(s->st, q.subs[i].metric);
            tsq_scan_range(&q, &q.subs[i], &when.scan[i][0], &when.scan[i][1]);
        }
        size_t len = 0;
        char *hit = key.oom ? NULL : qc_lookup(c, key.p, key.len, &when, &len);
        if (hit) {
            server_reply_take(w, 200, "application/json", hit, len);
            sbuf_free(&key);
            tsq_query_free(&q);
            return;
        }
    }
    tsq_result res = {0};
    server_query_guard(s, r, &q);
    if (tsq_run_local(s->st, &q, &res, &e) < 0 || server_query_check_answer(&res, &e) < 0) {
        reply_tsq_error(w, &e);
    } else {
        size_t len = 0;
        char *txt = tsq_result_json(&q, &res, &len);
        when.start_after = res.stable ? res.start_after : INT64_MIN;
        when.start_upto = res.stable ? res.start_upto : INT64_MAX;
        when.end_from = res.stable ? res.end_from : INT64_MIN;
        when.end_before = res.stable ? res.end_before : INT64_MAX;
        if (txt && c && !key.oom) qc_store(c, key.p, key.len, &when, txt, len);
        if (txt)
            server_reply_take(w, 200, "application/json", txt, len);
        else
            server_reply_error(w, 500, "Out of memory", NULL);
    }
    sbuf_free(&key);
    tsq_result_free(&res);
    tsq_query_free(&q);
}

/* ---- /api/query/last, /api/search/lookup (tsq_last, tsq_lookup) ---- */

static void h_last(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    tsq_error e = {0};
    size_t len = 0;
    int post = !strcmp(r->method, "POST") && r->body_len;
    char *txt = tsq_last(s->st, post ? r->body : NULL, r->body_len, get_param, (void *)r, &len, &e);
    if (txt)
        server_reply_take(w, 200, "application/json", txt, len);
    else
        reply_tsq_error(w, &e);
}

static void h_lookup(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    tsq_error e = {0};
    size_t len = 0;
    int post = !strcmp(r->method, "POST") && r->body_len;
    char *txt =
        tsq_lookup(s->st, post ? r->body : NULL, r->body_len, get_param, (void *)r, &len, &e);
    if (txt)
        server_reply_take(w, 200, "application/json", txt, len);
    else
        reply_tsq_error(w, &e);
}

/* ---- /api/suggest ---- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void h_suggest(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    const char *type = server_param(r, "type"), *q = server_param(r, "q"),
               *maxs = server_param(r, "max");
    json_t *doc = NULL;
    if (!strcmp(r->method, "POST") && r->body_len) {
        doc = json_loadb(r->body, r->body_len, 0, NULL);
        if (!json_is_object(doc)) {
            json_decref(doc);
            server_reply_error(w, 400, "Unable to parse the given JSON", NULL);
            return;
        }
        if (json_is_string(json_object_get(doc, "type")))
            type = json_string_value(json_object_get(doc, "type"));
        if (json_is_string(json_object_get(doc, "q")))
            q = json_string_value(json_object_get(doc, "q"));
    }
    long max = 25;
    if (doc && json_is_integer(json_object_get(doc, "max")))
        max = (long)json_integer_value(json_object_get(doc, "max"));
    else if (maxs) {
        char *end;
        max = strtol(maxs, &end, 10);
        if (*end || end == maxs) max = -1;
    }
    enum store_name_kind kind;
    if (!type) {
        json_decref(doc);
        server_reply_error(w, 400, "Missing 'type' parameter", "metrics, tagk or tagv");
        return;
    }
    if (!strcmp(type, "metrics"))
        kind = STORE_METRICS;
    else if (!strcmp(type, "tagk"))
        kind = STORE_TAGKS;
    else if (!strcmp(type, "tagv"))
        kind = STORE_TAGVS;
    else {
        char d[300];
        snprintf(d, sizeof d, "Invalid 'type' parameter: %.200s (metrics, tagk or tagv)", type);
        json_decref(doc);
        server_reply_error(w, 400, d, NULL);
        return;
    }
    if (max < 1 || max > MAX_SUGGEST) {
        json_decref(doc);
        server_reply_error(w, 400, "Invalid 'max' parameter", "an integer from 1 to 10000");
        return;
    }
    char **names = NULL;
    int n = store_names(s->st, kind, q ? q : "", (int)max, &names);
    if (n < 0) {
        json_decref(doc);
        server_reply_error(w, 500, "Unable to read the index", NULL);
        return;
    }
    if (n > 1) qsort(names, (size_t)n, sizeof *names, str_cmp);
    json_t *out = json_array();
    for (int i = 0; i < n; i++) {
        if ((!i || !names[i - 1] || !names[i] || strcmp(names[i], names[i - 1])) && names[i] &&
            (long)json_array_size(out) < max)
            json_array_append_new(out, json_string(names[i]));
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    json_decref(doc);
    reply_json(w, 200, out);
}

/* ---- /api/aggregators, /api/config/filters ---- */

static void h_aggregators(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)r;
    (void)arg;
    json_t *a = json_array();
    for (int i = 0; tsq_aggregators[i]; i++)
        json_array_append_new(a, json_string(tsq_aggregators[i]));
    reply_json(w, 200, a);
}

static void h_filters(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    (void)r;
    (void)arg;
    size_t len = 0;
    char *txt = tsq_config_filters_json(&len);
    if (txt)
        server_reply_take(w, 200, "application/json", txt, len);
    else
        server_reply_error(w, 500, "Out of memory", NULL);
}

static void qc_metrics(server *s, sbuf *out, void *arg)
{
    struct qcache *c = arg;
    unsigned long long h = 0, m = 0;
    if (c) {
        pthread_mutex_lock(&c->mu);
        h = c->hits;
        m = c->misses;
        pthread_mutex_unlock(&c->mu);
    }
    sbuf_printf(out,
                "# HELP jobscope_serve_query_cache_total /api/query POSTs answered from the answer "
                "cache (hit) or not (miss)\n"
                "# TYPE jobscope_serve_query_cache_total counter\n"
                "jobscope_serve_query_cache_total{result=\"hit\"} %llu\n"
                "jobscope_serve_query_cache_total{result=\"miss\"} %llu\n",
                h, m);
}

static int query_init(server *s, void **state, char *err, size_t errlen)
{
    struct qcache *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&c->mu, NULL);
    *state = c;
    static const struct {
        const char *method, *path;
        server_handler fn;
        int cached;
    } routes[] = {
        {"POST", "/api/query", h_query, 1},
        {"GET", "/api/query", h_query, 1},
        {"POST", "/api/query/last", h_last, 0},
        {"GET", "/api/query/last", h_last, 0},
        {"GET", "/api/suggest", h_suggest, 0},
        {"POST", "/api/suggest", h_suggest, 0},
        {"GET", "/api/aggregators", h_aggregators, 0},
        {"POST", "/api/aggregators", h_aggregators, 0},
        {"GET", "/api/config/filters", h_filters, 0},
        {"POST", "/api/config/filters", h_filters, 0},
        {"GET", "/api/search/lookup", h_lookup, 0},
        {"POST", "/api/search/lookup", h_lookup, 0},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (server_route(s, routes[i].method, routes[i].path, routes[i].fn,
                         routes[i].cached ? c : NULL) < 0) {
            snprintf(err, errlen, "route table full");
            return -1;
        }
    return server_on_metrics(s, qc_metrics, c) < 0 ? (snprintf(err, errlen, "too many hooks"), -1)
                                                   : 0;
}

static void query_fini(server *s, void *state)
{
    (void)s;
    qcache_free(state);
}

SERVER_MODULE(query_module, "query", query_init, query_fini)
