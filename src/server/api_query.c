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

/* TEMPORARY, until the query branch (src/query) is merged: see server_priv.h. */
#pragma weak tsq_parse_json
#pragma weak tsq_parse_get
#pragma weak tsq_query_free
#pragma weak tsq_fetch_local
#pragma weak tsq_set_free
#pragma weak tsq_eval
#pragma weak tsq_result_free
#pragma weak tsq_result_json
#pragma weak tsq_set_json
#pragma weak tsq_set_parse
#pragma weak tsq_aggregators

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

static int no_engine(server *s, server_response *w)
{
    if (tsq_parse_json && s->st) return 0;
    server_reply_error(w, 501, "Queries are not available in this build", "src/query or src/store missing");
    return 1;
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
    if (no_engine(s, w)) return;
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

/* ---- metric{k=v,k=*} specs (last, lookup) ---- */

typedef struct spec {
    char  metric[512];
    char  keys[32][256], vals[32][256];
    int   n;
} spec;

static int parse_spec(const char *s, spec *sp, char *why, size_t wl)
{
    memset(sp, 0, sizeof *sp);
    const char *br = strchr(s, '{');
    size_t ml = br ? (size_t)(br - s) : strlen(s);
    if (ml >= sizeof sp->metric) { snprintf(why, wl, "metric name too long"); return -1; }
    memcpy(sp->metric, s, ml);
    if (!br) return 0;
    const char *end = strchr(br, '}');
    if (!end || end[1]) { snprintf(why, wl, "expected METRIC{TAGK=TAGV,...}"); return -1; }
    for (const char *p = br + 1; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *te = comma ? comma : end;
        const char *eq = memchr(p, '=', (size_t)(te - p));
        if (!eq || eq == p || sp->n >= 32 || (size_t)(eq - p) >= 256 || (size_t)(te - eq - 1) >= 256) {
            snprintf(why, wl, "bad tag in '%s' (expected TAGK=TAGV or TAGK=*)", s);
            return -1;
        }
        snprintf(sp->keys[sp->n], 256, "%.*s", (int)(eq - p), p);
        snprintf(sp->vals[sp->n], 256, "%.*s", (int)(te - eq - 1), eq + 1);
        if (!sp->vals[sp->n][0]) strcpy(sp->vals[sp->n], "*");
        sp->n++;
        p = te + (comma ? 1 : 0);
    }
    return 0;
}

static int spec_match(const spec *sp, const store_tag *tags, int ntags)
{
    for (int i = 0; i < sp->n; i++) {
        int ok = 0;
        for (int t = 0; t < ntags && !ok; t++)
            if (!strcmp(tags[t].key, sp->keys[i]))
                ok = !strcmp(sp->vals[i], "*") || !strcmp(sp->vals[i], tags[t].value);
        if (!ok) return 0;
    }
    return 1;
}

static json_t *tags_json(const store_tag *tags, int ntags)
{
    json_t *o = json_object();
    for (int t = 0; t < ntags; t++) json_object_set_new(o, tags[t].key, json_string(tags[t].value));
    return o;
}

/* ---- /api/query/last ---- */

struct last_walk { server *s; const spec *sp; json_t *out; };

static int last_cb(void *arg, const store_series *se)
{
    struct last_walk *lw = arg;
    if (!spec_match(lw->sp, se->tags, se->ntags)) return 0;
    int64_t ts;
    double v;
    if (store_last(lw->s->st, se->id, &ts, &v) != 1) return 0;
    char num[64], id[32];
    snprintf(num, sizeof num, "%.17g", v);
    snprintf(id, sizeof id, "%016" PRIx64, se->id);
    json_t *o = json_object();
    json_object_set_new(o, "metric", json_string(se->metric));
    json_object_set_new(o, "timestamp", json_integer(ts));
    json_object_set_new(o, "value", json_string(num));
    json_object_set_new(o, "tags", tags_json(se->tags, se->ntags));
    json_object_set_new(o, "tsuid", json_string(id));
    json_array_append_new(lw->out, o);
    return json_array_size(lw->out) >= MAX_LOOKUP;
}

static void h_last(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    if (!s->st) return;
    json_t *out = json_array();
    char why[256];
    spec sp;
    int nspecs = 0;
    if (!strcmp(r->method, "POST") && r->body_len) {
        json_error_t je;
        json_t *doc = json_loadb(r->body, r->body_len, 0, &je);
        json_t *qs = json_object_get(doc, "queries");
        if (!json_is_array(qs)) {
            json_decref(doc); json_decref(out);
            server_reply_error(w, 400, "Missing 'queries'", doc ? "expected {\"queries\": [{\"metric\": ..., \"tags\": {...}}]}" : je.text);
            return;
        }
        size_t i;
        json_t *qq;
        json_array_foreach(qs, i, qq) {
            json_t *m = json_object_get(qq, "metric");
            if (!json_is_string(m)) {
                json_decref(doc); json_decref(out);
                server_reply_error(w, 400, "Missing 'metric' in a query", NULL);
                return;
            }
            memset(&sp, 0, sizeof sp);
            snprintf(sp.metric, sizeof sp.metric, "%s", json_string_value(m));
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(qq, "tags"), k, v) {
                if (sp.n >= 32 || !json_is_string(v)) continue;
                snprintf(sp.keys[sp.n], 256, "%s", k);
                snprintf(sp.vals[sp.n], 256, "%s", json_string_value(v));
                sp.n++;
            }
            struct last_walk lw = { s, &sp, out };
            store_series_of(s->st, sp.metric, last_cb, &lw);
            nspecs++;
        }
        json_decref(doc);
    } else {
        const char *ts;
        for (int i = 0; (ts = server_param_n(r, "timeseries", i)); i++) {
            if (parse_spec(ts, &sp, why, sizeof why) < 0) {
                json_decref(out);
                server_reply_error(w, 400, "Invalid 'timeseries' parameter", why);
                return;
            }
            struct last_walk lw = { s, &sp, out };
            store_series_of(s->st, sp.metric, last_cb, &lw);
            nspecs++;
        }
    }
    if (!nspecs) {
        json_decref(out);
        server_reply_error(w, 400, "Missing 'timeseries' parameter (or a POST body with 'queries')", NULL);
        return;
    }
    /* Peers: union. */
    char *qs = server_query_string(r), *pq = NULL, warn[512] = "";
    server_peer_reply *rep = NULL;
    int np = asprintf(&pq, "/api/query/last%s%s", *qs ? "?" : "", qs) < 0 ? 0
             : server_fanout(s, r, pq, r->body, r->body_len, &rep, warn, sizeof warn);
    for (int k = 0; k < np; k++) {
        json_t *a = rep[k].status == 200 ? json_loadb(rep[k].body, rep[k].len, 0, NULL) : NULL;
        if (json_is_array(a)) json_array_extend(out, a);
        json_decref(a);
    }
    server_peer_replies_free(rep, np);
    free(pq);
    free(qs);
    reply_json(w, 200, out);
    warn_header(s, w, "/api/query/last", warn);
}

/* ---- /api/suggest ---- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void h_suggest(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    if (!s->st) return;
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
    if (!tsq_aggregators) { no_engine(s, w); return; }
    json_t *a = json_array();
    for (int i = 0; tsq_aggregators[i]; i++) json_array_append_new(a, json_string(tsq_aggregators[i]));
    reply_json(w, 200, a);
}

static void h_filters(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s; (void)r; (void)arg;
    static const char *const f[][3] = {
        { "literal_or", "host=literal_or(web01|web02)",
          "Accepts one or more exact values and matches if the series contains any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case sensitive." },
        { "iliteral_or", "host=iliteral_or(web01|web02)",
          "Accepts one or more exact values and matches if the series contains any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case insensitive." },
        { "not_literal_or", "host=not_literal_or(web01|web02)",
          "Accepts one or more exact values and matches if the series does NOT contain any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case sensitive." },
        { "not_iliteral_or", "host=not_iliteral_or(web01|web02)",
          "Accepts one or more exact values and matches if the series does NOT contain any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case insensitive." },
        { "wildcard", "host=wildcard(web*), host=wildcard(*.example.com)",
          "Performs pre, post and in-fix glob matching of values. The globs are case sensitive and multiple wildcards can be used. The wildcard character is the * (asterisk)." },
        { "iwildcard", "host=iwildcard(web*), host=iwildcard(*.example.com)",
          "Performs pre, post and in-fix glob matching of values. The globs are case insensitive and multiple wildcards can be used. The wildcard character is the * (asterisk)." },
        { "regexp", "host=regexp(.*)",
          "Provides full, POSIX compliant regular expression using the built in Java Pattern class. Note that an expression containing curly braces {} will not parse properly in URLs. If the pattern is not a valid regular expression then an exception will be raised." },
        { "not_key", "host=not_key()",
          "Skips any time series with the given tag key, regardless of the value. This can be useful for situations where a metric has inconsistent tag sets. NOTE: The filter value must be null or an empty string." },
    };
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        json_object_set_new(o, f[i][0], json_pack("{s:s,s:s}", "examples", f[i][1], "description", f[i][2]));
    reply_json(w, 200, o);
}

/* ---- /api/search/lookup ---- */

struct lookup_walk { const spec *sp; json_t *res; long total; };

static int lookup_cb(void *arg, const store_series *se)
{
    struct lookup_walk *lw = arg;
    if (!spec_match(lw->sp, se->tags, se->ntags)) return 0;
    char id[32];
    snprintf(id, sizeof id, "%016" PRIx64, se->id);
    json_array_append_new(lw->res, json_pack("{s:s,s:o,s:s}", "metric", se->metric, "tags",
                                             tags_json(se->tags, se->ntags), "tsuid", id));
    lw->total++;
    return json_array_size(lw->res) >= MAX_LOOKUP;
}

static void h_lookup(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    if (!s->st) return;
    spec sp;
    char why[256];
    long limit = 25;
    if (!strcmp(r->method, "POST") && r->body_len) {
        json_t *doc = json_loadb(r->body, r->body_len, 0, NULL);
        if (!json_is_object(doc)) {
            json_decref(doc);
            server_reply_error(w, 400, "Unable to parse the given JSON", NULL);
            return;
        }
        memset(&sp, 0, sizeof sp);
        json_t *m = json_object_get(doc, "metric");
        if (json_is_string(m)) snprintf(sp.metric, sizeof sp.metric, "%s", json_string_value(m));
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(doc, "tags"), i, t) {
            json_t *k = json_object_get(t, "key"), *v = json_object_get(t, "value");
            if (!json_is_string(k) || sp.n >= 32) continue;
            snprintf(sp.keys[sp.n], 256, "%s", json_string_value(k));
            snprintf(sp.vals[sp.n], 256, "%s", json_is_string(v) && json_string_length(v) ? json_string_value(v) : "*");
            sp.n++;
        }
        if (json_is_integer(json_object_get(doc, "limit"))) limit = (long)json_integer_value(json_object_get(doc, "limit"));
        json_decref(doc);
    } else {
        const char *m = server_param(r, "m"), *ls = server_param(r, "limit");
        if (!m) { server_reply_error(w, 400, "Missing 'm' parameter", "expected m=METRIC{TAGK=*}"); return; }
        if (parse_spec(m, &sp, why, sizeof why) < 0) { server_reply_error(w, 400, "Invalid 'm' parameter", why); return; }
        if (ls) {
            char *end;
            limit = strtol(ls, &end, 10);
            if (*end || end == ls) limit = -1;
        }
    }
    if (limit < 1 || limit > MAX_LOOKUP) { server_reply_error(w, 400, "Invalid 'limit' parameter", "1 to 100000"); return; }
    int64_t t0 = server_now_ms();
    json_t *res = json_array();
    struct lookup_walk lw = { &sp, res, 0 };
    if (sp.metric[0] && strcmp(sp.metric, "*")) {
        store_series_of(s->st, sp.metric, lookup_cb, &lw);
    } else {
        char **names = NULL;
        int n = store_names(s->st, STORE_METRICS, "", MAX_LOOKUP, &names);
        for (int i = 0; i < n; i++) {
            if (json_array_size(res) < MAX_LOOKUP) store_series_of(s->st, names[i], lookup_cb, &lw);
            free(names[i]);
        }
        free(names);
    }
    /* Peers: union by metric + tags. */
    char *qs = server_query_string(r), *pq = NULL, warn[512] = "";
    server_peer_reply *rep = NULL;
    int np = asprintf(&pq, "/api/search/lookup%s%s", *qs ? "?" : "", qs) < 0 ? 0
             : server_fanout(s, r, pq, r->body, r->body_len, &rep, warn, sizeof warn);
    if (np) {
        json_t *seen = json_object();
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
            json_t *a = rep[p].status == 200 ? json_loadb(rep[p].body, rep[p].len, 0, NULL) : NULL;
            json_array_foreach(json_object_get(a, "results"), i, v) {
                json_t *key = json_pack("[O,O]", json_object_get(v, "metric"), json_object_get(v, "tags"));
                char *k = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
                json_decref(key);
                if (k && !json_object_get(seen, k)) {
                    json_object_set_new(seen, k, json_true());
                    json_array_append(res, v);
                    lw.total++;
                }
                free(k);
            }
            json_decref(a);
        }
        json_decref(seen);
    }
    server_peer_replies_free(rep, np);
    free(pq);
    free(qs);
    long total = (long)json_array_size(res);
    while ((long)json_array_size(res) > limit) json_array_remove(res, json_array_size(res) - 1);
    json_t *tags = json_array();
    for (int i = 0; i < sp.n; i++) json_array_append_new(tags, json_pack("{s:s,s:s}", "key", sp.keys[i], "value", sp.vals[i]));
    json_t *o = json_pack("{s:s,s:s,s:o,s:i,s:I,s:o,s:i,s:I}", "type", "LOOKUP", "metric",
                          sp.metric[0] ? sp.metric : "*", "tags", tags, "limit", (int)limit, "time",
                          (json_int_t)(server_now_ms() - t0), "results", res, "startIndex", 0,
                          "totalResults", (json_int_t)total);
    reply_json(w, 200, o);
    warn_header(s, w, "/api/search/lookup", warn);
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
