/* tsq_local.c — the query engine against the local store (store.h): the
 * raw series of a sub-query (tsq_fetch_local), whole queries
 * (tsq_run_local), /api/query/last (tsq_last) and /api/search/lookup
 * (tsq_lookup).  Kept apart from the engine so that the engine's unit
 * tests link without a store. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "query/tsq_internal.h"

typedef struct hit {
    uint64_t id;
    char *metric;
    store_tag *tags;
    int ntags;
} hit;

typedef struct walk {
    const tsq_sub *sub;    /* filters, or NULL */
    const store_tag *want; /* last/lookup pairs ("*" = any), or NULL */
    int nwant;
    size_t seen;
    hit *h;
    size_t n, cap;
    size_t limit; /* stop collecting beyond (lookup); 0 = all */
    size_t total;
} walk;

static void hit_free(hit *h)
{
    free(h->metric);
    for (int t = 0; t < h->ntags; t++) {
        free((char *)h->tags[t].key);
        free((char *)h->tags[t].value);
    }
    free(h->tags);
}

static int pairs_match(const walk *w, const store_series *se)
{
    for (int i = 0; i < w->nwant; i++) {
        const char *k = w->want[i].key, *v = w->want[i].value;
        int ok = 0;
        for (int t = 0; t < se->ntags && !ok; t++)
            ok = (!strcmp(k, "*") || !strcmp(k, se->tags[t].key)) &&
                 (!strcmp(v, "*") || !strcmp(v, se->tags[t].value));
        if (!ok) return 0;
    }
    return 1;
}

static int collect(void *arg, const store_series *se)
{
    walk *w = arg;
    w->seen++;
    if (w->sub && !tsq_match(w->sub, se->tags, se->ntags)) return 0;
    if (w->want && !pairs_match(w, se)) return 0;
    w->total++;
    if (w->limit && w->n >= w->limit) return 0;
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        hit *nh = realloc(w->h, nc * sizeof *nh);
        if (!nh) return -1;
        w->h = nh;
        w->cap = nc;
    }
    hit *h = &w->h[w->n];
    memset(h, 0, sizeof *h);
    h->id = se->id;
    h->metric = strdup(se->metric);
    h->tags = calloc(se->ntags ? (size_t)se->ntags : 1, sizeof *h->tags);
    w->n++;
    if (!h->metric || !h->tags) return -1;
    for (int t = 0; t < se->ntags; t++) {
        h->tags[t].key = strdup(se->tags[t].key);
        h->tags[t].value = strdup(se->tags[t].value);
        h->ntags++;
        if (!h->tags[t].key || !h->tags[t].value) return -1;
    }
    return 0;
}

static void walk_free(walk *w)
{
    for (size_t i = 0; i < w->n; i++) hit_free(&w->h[i]);
    free(w->h);
}

/* The points of many series are read by a few threads (the store allows
 * concurrent readers): most of a big query's time is decoding chunks. */
typedef struct reader {
    store *s;
    const hit *h;
    size_t n;
    store_points *pts;
    int64_t from, to;
    size_t next; /* atomically taken */
    int failed;
} reader;

static void *read_some(void *arg)
{
    reader *r = arg;
    for (;;) {
        size_t i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
        if (i >= r->n) break;
        if (store_read(r->s, r->h[i].id, r->from, r->to, &r->pts[i]) < 0)
            __atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void read_all(reader *r)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = r->n / 16; /* a thread per 16 series at least */
    if (nt > (size_t)(cpus > 1 ? cpus : 1)) nt = (size_t)(cpus > 1 ? cpus : 1);
    if (nt > 8) nt = 8;
    pthread_t th[8];
    size_t started = 0;
    for (size_t i = 1; i < nt; i++) /* this thread is one of them */
        if (pthread_create(&th[started], NULL, read_some, r) == 0) started++;
    read_some(r);
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
}

int tsq_fetch_local(store *s, const tsq_query *q, const tsq_sub *sub, tsq_set *out, tsq_error *err)
{
    if (tsq_filters_compile((tsq_sub *)sub, err) < 0) return -1;
    ((tsq_sub *)sub)->guard = (tsq_guard *)&q->guard;
    walk w = {.sub = sub};
    if (store_series_of(s, sub->metric, collect, &w) < 0) {
        walk_free(&w);
        return tsq_fail(err, 500, NULL, "Unable to read the series of '%s'", sub->metric);
    }
    if (tsq_guard_error(&q->guard, err) < 0) {
        walk_free(&w);
        return -1;
    }
    if (!w.seen) {
        walk_free(&w);
        return tsq_fail(err, 400, NULL, "No such name for 'metrics': '%s'", sub->metric);
    }
    int64_t from, to;
    tsq_scan_range(q, sub, &from, &to);
    store_points *pts = calloc(w.n ? w.n : 1, sizeof *pts);
    if (!pts) {
        walk_free(&w);
        return tsq_fail(err, 500, NULL, "out of memory");
    }
    reader rd = {.s = s, .h = w.h, .n = w.n, .pts = pts, .from = from, .to = to};
    read_all(&rd);
    int rc = 0;
    size_t total = 0;
    for (size_t i = 0; i < w.n; i++) total += pts[i].n;
    if (rd.failed)
        rc = tsq_fail(err, 500, NULL, "Unable to read a series of '%s'", sub->metric);
    else if (total > (size_t)(q->guard.max_points > 0 ? q->guard.max_points : TSQ_MAX_POINTS))
        rc = tsq_fail(err, 413, NULL,
                      "Sorry, this query would read %zu data points (limit %ld): "
                      "narrow the time range or the filters",
                      total, q->guard.max_points > 0 ? q->guard.max_points : TSQ_MAX_POINTS);
    for (size_t i = 0; i < w.n && rc == 0; i++) {
        if (!pts[i].n) continue;
        if (out->n == out->cap) {
            size_t nc = out->cap ? out->cap * 2 : 64;
            tsq_series *nv = realloc(out->v, nc * sizeof *nv);
            if (!nv) {
                rc = tsq_fail(err, 500, NULL, "out of memory");
                break;
            }
            out->v = nv;
            out->cap = nc;
        }
        tsq_series *se = &out->v[out->n++];
        se->metric = w.h[i].metric;
        se->tags = w.h[i].tags;
        se->ntags = w.h[i].ntags;
        se->pts = pts[i];
        memset(&pts[i], 0, sizeof pts[i]); /* moved */
        w.h[i].metric = NULL;
        w.h[i].tags = NULL;
        w.h[i].ntags = 0;
    }
    for (size_t i = 0; i < w.n; i++) store_points_free(&pts[i]);
    free(pts);
    walk_free(&w);
    return rc;
}

int tsq_run_local(store *s, const tsq_query *q, tsq_result *out, tsq_error *err)
{
    for (int i = 0; i < q->nsubs; i++) {
        tsq_set set = {0};
        if (tsq_fetch_local(s, q, &q->subs[i], &set, err) < 0 ||
            tsq_eval(q, &q->subs[i], &set, out, err) < 0) {
            tsq_set_free(&set);
            return -1;
        }
        tsq_set_free(&set);
    }
    return 0;
}

/* --------------------------------------------------------------- helpers */

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static json_t *tags_obj(const store_tag *tags, int n)
{
    json_t *o = json_object();
    for (int i = 0; i < n; i++) json_object_set_new(o, tags[i].key, json_string(tags[i].value));
    return o;
}

static char *dump(json_t *v, size_t *out_len, tsq_error *err)
{
    char *r = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(v);
    if (!r) {
        tsq_fail(err, 500, NULL, "out of memory");
        return NULL;
    }
    if (out_len) *out_len = strlen(r);
    return r;
}

/* "metric{k=v,k2=v2}" → metric and pairs (strings point into buf) */
static int parse_series_spec(char *buf, char **metric, store_tag *pairs, int max, int *n,
                             tsq_error *err)
{
    *n = 0;
    char *c = strchr(buf, '{');
    *metric = buf;
    if (!c) return 0;
    size_t l = strlen(buf);
    if (buf[l - 1] != '}') return tsq_fail(err, 400, NULL, "Missing '}' at the end of: %s", buf);
    *c = 0;
    buf[l - 1] = 0;
    for (char *p = c + 1, *next; p && *p; p = next) {
        next = strchr(p, ',');
        if (next) *next++ = 0;
        char *eq = strchr(p, '=');
        if (!eq || eq == p || !eq[1]) return tsq_fail(err, 400, NULL, "invalid tag: %s", p);
        if (*n >= max) return tsq_fail(err, 400, NULL, "Too many tags in: %s", *metric);
        *eq = 0;
        pairs[*n].key = p;
        pairs[(*n)++].value = eq + 1;
    }
    return 0;
}

/* ---------------------------------------------------- /api/query/last */

#define MAX_PAIRS 64

static int last_one(store *s, const char *metric, const store_tag *pairs, int np, int resolve,
                    int64_t back_scan_h, json_t *arr, tsq_error *err)
{
    walk w = {.want = pairs, .nwant = np};
    if (store_series_of(s, metric, collect, &w) < 0) {
        walk_free(&w);
        return tsq_fail(err, 500, NULL, "Unable to read the series of '%s'", metric);
    }
    if (!w.seen) {
        walk_free(&w);
        return tsq_fail(err, 400, NULL, "No such name for 'metrics': '%s'", metric);
    }
    int64_t cutoff = back_scan_h > 0 ? now_ms() - back_scan_h * 3600000 : INT64_MIN;
    for (size_t i = 0; i < w.n; i++) {
        int64_t ts;
        double v;
        if (store_last(s, w.h[i].id, &ts, &v) != 1 || ts < cutoff) continue;
        char num[40], id[24];
        tsq_fmt_double(num, sizeof num, v);
        snprintf(id, sizeof id, "%016" PRIX64, w.h[i].id);
        json_t *o = json_object();
        if (resolve) json_object_set_new(o, "metric", json_string(w.h[i].metric));
        json_object_set_new(o, "timestamp", json_integer(ts));
        json_object_set_new(o, "value", json_string(num));
        if (resolve) json_object_set_new(o, "tags", tags_obj(w.h[i].tags, w.h[i].ntags));
        json_object_set_new(o, "tsuid", json_string(id));
        json_array_append_new(arr, o);
    }
    walk_free(&w);
    return 0;
}

char *tsq_last(store *s, const char *body, size_t len, tsq_param_fn get, void *arg, size_t *out_len,
               tsq_error *err)
{
    json_t *arr = json_array();
    int resolve = 0, nq = 0;
    int64_t back = 0;
    if (body) {
        json_error_t je;
        json_t *root = json_loadb(body, len, 0, &je);
        json_t *qs = root ? json_object_get(root, "queries") : NULL;
        if (!json_is_object(root)) {
            json_decref(root);
            json_decref(arr);
            tsq_fail(err, 400, je.text, "Unable to parse the given JSON");
            return NULL;
        }
        json_t *v = json_object_get(root, "resolveNames");
        resolve =
            json_is_true(v) || (json_is_string(v) && !strcasecmp(json_string_value(v), "true"));
        v = json_object_get(root, "backScan");
        back = json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
        size_t i;
        json_t *jq;
        json_array_foreach(qs, i, jq)
        {
            json_t *m = json_object_get(jq, "metric"), *tags = json_object_get(jq, "tags");
            if (!json_is_string(m)) {
                json_decref(root);
                json_decref(arr);
                tsq_fail(err, 400, NULL,
                         json_object_get(jq, "tsuids")
                             ? "tsuid queries are not supported; give the metric and tags"
                             : "Missing metric");
                return NULL;
            }
            store_tag pairs[MAX_PAIRS];
            int np = 0;
            const char *k;
            json_t *tv;
            json_object_foreach(tags, k, tv)
            {
                if (np < MAX_PAIRS && json_is_string(tv)) {
                    pairs[np].key = k;
                    pairs[np++].value = json_string_value(tv);
                }
            }
            if (last_one(s, json_string_value(m), pairs, np, resolve, back, arr, err) < 0) {
                json_decref(root);
                json_decref(arr);
                return NULL;
            }
            nq++;
        }
        json_decref(root);
    } else {
        const char *r = get(arg, "resolve", 0), *b = get(arg, "back_scan", 0);
        resolve = r && strcasecmp(r, "false") != 0;
        if (b) {
            char *e;
            back = strtoll(b, &e, 10);
            if (*e) {
                json_decref(arr);
                tsq_fail(err, 400, NULL, "Unable to parse back_scan parameter");
                return NULL;
            }
        }
        for (int i = 0;; i++) {
            const char *spec = get(arg, "timeseries", i);
            if (!spec) break;
            char *buf = strdup(spec), *metric;
            store_tag pairs[MAX_PAIRS];
            int np;
            if (!buf || parse_series_spec(buf, &metric, pairs, MAX_PAIRS, &np, err) < 0 ||
                last_one(s, metric, pairs, np, resolve, back, arr, err) < 0) {
                if (!buf) tsq_fail(err, 500, NULL, "out of memory");
                free(buf);
                json_decref(arr);
                return NULL;
            }
            free(buf);
            nq++;
        }
    }
    if (!nq) {
        json_decref(arr);
        tsq_fail(err, 400, NULL, "Missing sub queries");
        return NULL;
    }
    return dump(arr, out_len, err);
}

/* ---------------------------------------------------- /api/search/lookup */

char *tsq_lookup(store *s, const char *body, size_t len, tsq_param_fn get, void *arg,
                 size_t *out_len, tsq_error *err)
{
    int64_t t0 = now_ms();
    store_tag pairs[MAX_PAIRS];
    int np = 0;
    long limit = 25;
    char *buf = NULL, *metric = NULL;
    json_t *root = NULL;
    if (body) {
        json_error_t je;
        root = json_loadb(body, len, 0, &je);
        if (!json_is_object(root)) {
            json_decref(root);
            tsq_fail(err, 400, je.text, "Unable to parse the given JSON");
            return NULL;
        }
        json_t *m = json_object_get(root, "metric"), *tags = json_object_get(root, "tags"),
               *l = json_object_get(root, "limit");
        metric = json_is_string(m) ? (char *)json_string_value(m) : "";
        if (json_is_integer(l)) limit = (long)json_integer_value(l);
        size_t i;
        json_t *p;
        json_array_foreach(tags, i, p)
        {
            json_t *k = json_object_get(p, "key"), *v = json_object_get(p, "value");
            if (np < MAX_PAIRS) {
                pairs[np].key = json_is_string(k) ? json_string_value(k) : "*";
                pairs[np++].value = json_is_string(v) ? json_string_value(v) : "*";
            }
        }
    } else {
        const char *m = get(arg, "m", 0), *l = get(arg, "limit", 0);
        if (!m) {
            tsq_fail(err, 400, NULL, "Missing the 'm' parameter");
            return NULL;
        }
        if (l) {
            char *e;
            limit = strtol(l, &e, 10);
            if (*e) {
                tsq_fail(err, 400, NULL, "Unable to convert 'limit' to a valid number");
                return NULL;
            }
        }
        buf = strdup(m);
        if (!buf || parse_series_spec(buf, &metric, pairs, MAX_PAIRS, &np, err) < 0) {
            if (!buf) tsq_fail(err, 500, NULL, "out of memory");
            free(buf);
            return NULL;
        }
    }
    if (limit <= 0) limit = 25;
    walk w = {.want = pairs, .nwant = np, .limit = (size_t)limit};
    int rc = 0;
    if (!*metric || !strcmp(metric, "*")) {
        char **names = NULL;
        int nn = store_names(s, STORE_METRICS, "", 1 << 30, &names);
        for (int i = 0; i < nn; i++) {
            if (rc == 0 && store_series_of(s, names[i], collect, &w) < 0) rc = -1;
            free(names[i]);
        }
        free(names);
        if (nn < 0) rc = -1;
    } else if (store_series_of(s, metric, collect, &w) < 0)
        rc = -1;
    json_t *o = NULL;
    if (rc == 0) {
        json_t *tl = json_array(), *res = json_array();
        for (int i = 0; i < np; i++)
            json_array_append_new(
                tl, json_pack("{s:s,s:s}", "key", pairs[i].key, "value", pairs[i].value));
        for (size_t i = 0; i < w.n; i++) {
            char id[24];
            snprintf(id, sizeof id, "%016" PRIX64, w.h[i].id);
            json_array_append_new(res,
                                  json_pack("{s:s,s:s,s:o}", "tsuid", id, "metric", w.h[i].metric,
                                            "tags", tags_obj(w.h[i].tags, w.h[i].ntags)));
        }
        o = json_pack("{s:s,s:s,s:o,s:i,s:I,s:o,s:i,s:I}", "type", "LOOKUP", "metric",
                      *metric ? metric : "*", "tags", tl, "limit", (int)limit, "time",
                      (json_int_t)(now_ms() - t0), "results", res, "startIndex", 0, "totalResults",
                      (json_int_t)w.total);
    }
    walk_free(&w);
    free(buf);
    json_decref(root);
    if (!o) {
        tsq_fail(err, 500, NULL, "Unable to read the series index");
        return NULL;
    }
    return dump(o, out_len, err);
}
