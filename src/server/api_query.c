/* api_query.c — the read endpoints of the OpenTSDB API over src/query/tsq.h
 * and the store's index:
 *   /api/query (POST body, GET m=...)   tsq engine; ?raw=1&sub=I answers the
 *                                       raw series of sub-query I (peers)
 *   /api/query/last                     newest point of matching series
 *   /api/suggest                        sorted prefix matches, max (default 25)
 *   /api/aggregators, /api/config/filters, /api/search/lookup
 * With --peers (server_fanout) every answer covers the peers too: queries
 * merge the peers' raw series before aggregation (a group spanning nodes is
 * aggregated once), suggest/lookup/last are unions.  A peer that fails or
 * misses the deadline leaves a partial answer and an X-Jobscope-Warning
 * header (also logged). */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server_priv.h"
#include "query/tsq.h"


#define MAX_SUGGEST 10000
#define MAX_LOOKUP  100000

static void reply_tsq_error(server_response *w, const tsq_error *e)
{
    server_reply_error(w, e->code ? e->code : 400, e->message[0] ? e->message : "Bad request", e->details);
}

static void warn_header(server *s, server_response *w, const char *path, const char *warn)
{
    if (!warn[0]) return;
    server_add_header(w, "X-Jobscope-Warning", warn);
    server_log(s, "%s: partial answer: %s", path, warn);
}


static void reply_json(server_response *w, int status, json_t *o)
{
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!txt) { server_reply_error(w, 500, "Out of memory", NULL); return; }
    server_reply_take(w, status, "application/json", txt, strlen(txt));
}

/* ---- /api/query ---- */

static const char *get_param(void *arg, const char *name, int i)
{
    return server_param_n(arg, name, i);
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
    return rc;
}

/* The local raw series of one sub-query: an unknown metric is no error
 * here (another node may have it). */
static int fetch_local(server *s, const tsq_query *q, const tsq_sub *sub, tsq_set *set, tsq_error *e)
{
    tsq_error le = {0};
    if (tsq_fetch_local(s->st, q, sub, set, &le) < 0) {
        *e = le;
        return -1;
    }
    return 0;
}

/* ?raw=1&sub=I[&now=MS]: the raw series of sub-query I, for a peer. */
static void query_raw(server *s, const server_request *r, server_response *w)
{
    const char *nows = server_param(r, "now"), *subs = server_param(r, "sub");
    int64_t now = nows ? strtoll(nows, NULL, 10) : server_now_ms();
    tsq_query q;
    tsq_error e = {0};
    if (parse_query(r, now, &q, &e) < 0) { reply_tsq_error(w, &e); tsq_query_free(&q); return; }
    int i = subs ? atoi(subs) : 0;
    if (i < 0 || i >= q.nsubs) {
        server_reply_error(w, 400, "Invalid sub-query index", subs);
        tsq_query_free(&q);
        return;
    }
    tsq_set set = {0};
    if (fetch_local(s, &q, &q.subs[i], &set, &e) < 0 && e.code != 400) {
        reply_tsq_error(w, &e);
    } else {
        size_t len = 0;
        char *txt = tsq_set_json(&set, &len);
        if (txt) server_reply_take(w, 200, "application/json", txt, len);
        else server_reply_error(w, 500, "Out of memory", NULL);
    }
    tsq_set_free(&set);
    tsq_query_free(&q);
}

static void h_query(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    const char *raw = server_param(r, "raw");
    if (raw && strcmp(raw, "0") && strcmp(raw, "false")) { query_raw(s, r, w); return; }
    int64_t now = server_now_ms();
    tsq_query q;
    tsq_error e = {0};
    if (parse_query(r, now, &q, &e) < 0) {
        reply_tsq_error(w, &e);
        tsq_query_free(&q);
        return;
    }
    tsq_result res = {0};
    char warn[1024] = "";
    char *qs = server_query_string(r);
    for (int i = 0; i < q.nsubs; i++) {
        tsq_set set = {0};
        tsq_error le = {0};
        int local_rc = fetch_local(s, &q, &q.subs[i], &set, &le);
        if (local_rc < 0 && le.code != 400) { e = le; tsq_set_free(&set); goto fail; }
        /* The peers' raw series of the same sub-query, merged before eval. */
        char *pq = NULL;
        if (asprintf(&pq, "/api/query?%s%sraw=1&sub=%d&now=%" PRId64, qs, *qs ? "&" : "", i, now) < 0) pq = NULL;
        server_peer_reply *rep = NULL;
        char pw[512] = "";
        int np = pq ? server_fanout(s, r, pq, r->body, r->body_len, &rep, pw, sizeof pw) : 0;
        free(pq);
        if (pw[0] && !warn[0]) snprintf(warn, sizeof warn, "%s", pw);
        for (int k = 0; k < np; k++)
            if (rep[k].status == 200 && rep[k].body && tsq_set_parse(rep[k].body, rep[k].len, &set) < 0 &&
                !warn[0])
                snprintf(warn, sizeof warn, "peer %s: unreadable answer", rep[k].peer);
        server_peer_replies_free(rep, np);
        if (local_rc < 0 && set.n == 0) { e = le; tsq_set_free(&set); goto fail; }
        if (tsq_eval(&q, &q.subs[i], &set, &res, &e) < 0) { tsq_set_free(&set); goto fail; }
        tsq_set_free(&set);
    }
    size_t len = 0;
    char *txt = tsq_result_json(&q, &res, &len);
    if (txt) server_reply_take(w, 200, "application/json", txt, len);
    else server_reply_error(w, 500, "Out of memory", NULL);
    warn_header(s, w, "/api/query", warn);
    goto out;
fail:
    reply_tsq_error(w, &e);
    warn_header(s, w, "/api/query", warn);
out:
    free(qs);
    tsq_result_free(&res);
    tsq_query_free(&q);
}

/* ---- /api/query/last, /api/search/lookup: tsq_last/tsq_lookup + peers ---- */

/* The peers' answers to the same request, as parsed JSON (NULL entries for
 * failures); returns their number. */
static int peer_json(server *s, const server_request *r, const char *path, json_t ***out, char *warn, size_t wl)
{
    char *qs = server_query_string(r), *pq = NULL;
    server_peer_reply *rep = NULL;
    int np = 0;
    *out = NULL;
    if (asprintf(&pq, "%s%s%s", path, *qs ? "?" : "", qs) >= 0)
        np = server_fanout(s, r, pq, r->body, r->body_len, &rep, warn, wl);
    free(pq);
    free(qs);
    if (np > 0) {
        *out = calloc((size_t)np, sizeof **out);
        for (int k = 0; *out && k < np; k++)
            (*out)[k] = rep[k].status == 200 && rep[k].body ? json_loadb(rep[k].body, rep[k].len, 0, NULL) : NULL;
    }
    server_peer_replies_free(rep, np);
    return *out ? np : 0;
}

static void peer_json_free(json_t **v, int n)
{
    for (int i = 0; i < n; i++) json_decref(v[i]);
    free(v);
}

static int any_answer(json_t **v, int n)
{
    for (int i = 0; i < n; i++) if (v[i]) return 1;
    return 0;
}

static void h_last(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    tsq_error e = {0};
    size_t len = 0;
    int post = !strcmp(r->method, "POST") && r->body_len;
    char *txt = tsq_last(s->st, post ? r->body : NULL, r->body_len, get_param, (void *)r, &len, &e);
    char warn[512] = "";
    json_t **peers = NULL;
    int np = peer_json(s, r, "/api/query/last", &peers, warn, sizeof warn);
    if (!txt && !(e.code == 400 && strstr(e.message, "No such name") && any_answer(peers, np))) {
        peer_json_free(peers, np);
        reply_tsq_error(w, &e);
        warn_header(s, w, "/api/query/last", warn);
        return;
    }
    if (!np) {
        server_reply_take(w, 200, "application/json", txt, len);
        return;
    }
    json_t *out = txt ? json_loads(txt, 0, NULL) : json_array();
    free(txt);
    for (int k = 0; k < np; k++) if (json_is_array(peers[k])) json_array_extend(out, peers[k]);
    peer_json_free(peers, np);
    reply_json(w, 200, out);
    warn_header(s, w, "/api/query/last", warn);
}

static void h_lookup(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    tsq_error e = {0};
    size_t len = 0;
    int post = !strcmp(r->method, "POST") && r->body_len;
    char *txt = tsq_lookup(s->st, post ? r->body : NULL, r->body_len, get_param, (void *)r, &len, &e);
    if (!txt) {
        reply_tsq_error(w, &e);
        return;
    }
    char warn[512] = "";
    json_t **peers = NULL;
    int np = peer_json(s, r, "/api/search/lookup", &peers, warn, sizeof warn);
    if (!np) {
        server_reply_take(w, 200, "application/json", txt, len);
        return;
    }
    /* Union by metric + tags; totalResults counts the union. */
    json_t *o = json_loads(txt, 0, NULL);
    free(txt);
    json_t *res = json_object_get(o, "results"), *seen = json_object();
    long limit = json_is_integer(json_object_get(o, "limit")) ? (long)json_integer_value(json_object_get(o, "limit")) : 25;
    json_int_t total = json_is_integer(json_object_get(o, "totalResults")) ? json_integer_value(json_object_get(o, "totalResults")) : 0;
    size_t i;
    json_t *v;
    json_array_foreach(res, i, v) {
        json_t *key = json_pack("[O,O]", json_object_get(v, "metric"), json_object_get(v, "tags"));
        char *k = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        json_decref(key);
        if (k) json_object_set_new(seen, k, json_true());
        free(k);
    }
    for (int p = 0; p < np; p++) {
        json_array_foreach(json_object_get(peers[p], "results"), i, v) {
            json_t *key = json_pack("[O,O]", json_object_get(v, "metric"), json_object_get(v, "tags"));
            char *k = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
            json_decref(key);
            if (k && !json_object_get(seen, k)) {
                json_object_set_new(seen, k, json_true());
                if ((long)json_array_size(res) < limit) json_array_append(res, v);
                total++;
            }
            free(k);
        }
    }
    json_decref(seen);
    peer_json_free(peers, np);
    json_object_set_new(o, "totalResults", json_integer(total));
    reply_json(w, 200, o);
    warn_header(s, w, "/api/search/lookup", warn);
}

/* ---- /api/suggest ---- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void h_suggest(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    const char *type = server_param(r, "type"), *q = server_param(r, "q"), *maxs = server_param(r, "max");
    json_t *doc = NULL;
    if (!strcmp(r->method, "POST") && r->body_len) {
        doc = json_loadb(r->body, r->body_len, 0, NULL);
        if (!json_is_object(doc)) {
            json_decref(doc);
            server_reply_error(w, 400, "Unable to parse the given JSON", NULL);
            return;
        }
        if (json_is_string(json_object_get(doc, "type"))) type = json_string_value(json_object_get(doc, "type"));
        if (json_is_string(json_object_get(doc, "q"))) q = json_string_value(json_object_get(doc, "q"));
    }
    long max = 25;
    if (doc && json_is_integer(json_object_get(doc, "max"))) max = (long)json_integer_value(json_object_get(doc, "max"));
    else if (maxs) {
        char *end;
        max = strtol(maxs, &end, 10);
        if (*end || end == maxs) max = -1;
    }
    enum store_name_kind kind;
    if (!type) { json_decref(doc); server_reply_error(w, 400, "Missing 'type' parameter", "metrics, tagk or tagv"); return; }
    if (!strcmp(type, "metrics")) kind = STORE_METRICS;
    else if (!strcmp(type, "tagk")) kind = STORE_TAGKS;
    else if (!strcmp(type, "tagv")) kind = STORE_TAGVS;
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
    /* Peers: union, sorted, unique, at most max. */
    char *qs = server_query_string(r), *pq = NULL, warn[512] = "";
    server_peer_reply *rep = NULL;
    int np = asprintf(&pq, "/api/suggest%s%s", *qs ? "?" : "", qs) < 0 ? 0
             : server_fanout(s, r, pq, r->body, r->body_len, &rep, warn, sizeof warn);
    for (int k = 0; k < np; k++) {
        json_t *a = rep[k].status == 200 ? json_loadb(rep[k].body, rep[k].len, 0, NULL) : NULL;
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) {
            if (!json_is_string(v)) continue;
            char **nn = realloc(names, (size_t)(n + 1) * sizeof *nn);
            if (!nn) break;
            names = nn;
            names[n++] = strdup(json_string_value(v));
        }
        json_decref(a);
    }
    server_peer_replies_free(rep, np);
    free(pq);
    free(qs);
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
    warn_header(s, w, "/api/suggest", warn);
}

/* ---- /api/aggregators, /api/config/filters ---- */

static void h_aggregators(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)r; (void)arg;
    json_t *a = json_array();
    for (int i = 0; tsq_aggregators[i]; i++) json_array_append_new(a, json_string(tsq_aggregators[i]));
    reply_json(w, 200, a);
}

static void h_filters(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s; (void)r; (void)arg;
    size_t len = 0;
    char *txt = tsq_config_filters_json(&len);
    if (txt) server_reply_take(w, 200, "application/json", txt, len);
    else server_reply_error(w, 500, "Out of memory", NULL);
}

void server_api_query_init(server *s)
{
    server_route(s, "POST", "/api/query", h_query, NULL);
    server_route(s, "GET", "/api/query", h_query, NULL);
    server_route(s, "POST", "/api/query/last", h_last, NULL);
    server_route(s, "GET", "/api/query/last", h_last, NULL);
    server_route(s, "GET", "/api/suggest", h_suggest, NULL);
    server_route(s, "POST", "/api/suggest", h_suggest, NULL);
    server_route(s, "GET", "/api/aggregators", h_aggregators, NULL);
    server_route(s, "POST", "/api/aggregators", h_aggregators, NULL);
    server_route(s, "GET", "/api/config/filters", h_filters, NULL);
    server_route(s, "POST", "/api/config/filters", h_filters, NULL);
    server_route(s, "GET", "/api/search/lookup", h_lookup, NULL);
    server_route(s, "POST", "/api/search/lookup", h_lookup, NULL);
}
