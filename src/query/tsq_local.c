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

/* --- the series of a sub-query ---------------------------------------------- */

/* A series that passed the filters: its id and tags, which point into the
 * store's index (valid while the store is open: keys never move). */
typedef struct sel {
    uint64_t *ids;
    const store_tag **tags; /* into tagpool */
    int *ntags;
    size_t n, cap;
    size_t seen;
    const tsq_sub *sub;
    const char *metric;
} sel;

static int pick(void *arg, const store_series *se)
{
    sel *w = arg;
    w->seen++;
    if (!tsq_match(w->sub, se->tags, se->ntags)) return 0;
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        uint64_t *ni = realloc(w->ids, nc * sizeof *ni);
        if (!ni) return -1;
        w->ids = ni;
        const store_tag **nt = realloc(w->tags, nc * sizeof *nt);
        if (!nt) return -1;
        w->tags = nt;
        int *nn = realloc(w->ntags, nc * sizeof *nn);
        if (!nn) return -1;
        w->ntags = nn;
        w->cap = nc;
    }
    store_tag *t = malloc((size_t)(se->ntags ? se->ntags : 1) * sizeof *t);
    if (!t) return -1;
    memcpy(t, se->tags, (size_t)se->ntags * sizeof *t);
    w->metric = se->metric;
    w->ids[w->n] = se->id;
    w->tags[w->n] = t;
    w->ntags[w->n++] = se->ntags;
    return 0;
}

static void sel_free(sel *w)
{
    for (size_t i = 0; i < w->n; i++) free((void *)w->tags[i]);
    free(w->ids);
    free(w->tags);
    free(w->ntags);
}

/* Downsampling while the points come from the store (tsq_run_local): the
 * store decodes a series' chunks one at a time straight into buckets
 * (store_read_many_ds), one point a bucket, stamped with the bucket's start
 * and holding the bucket's aggregate, computed exactly as tsq_eval's
 * downsampler does; tsq_eval then downsamples that again, which for these
 * aggregators gives back the same values (for avg and sum it sees that and
 * does not copy them), so the answer is the same without the raw points
 * ever in memory (1.2 million for the bench's query, a tenth of that in
 * buckets).  Only for the aggregators where a bucket of one value is that
 * value. */
typedef struct gather {
    store_points *pts;
    size_t raw; /* points read (atomic): the 413 limit counts them */
    int oom;
} gather;

static void keep(gather *g, size_t i, const store_points *p)
{
    store_points *o = &g->pts[i];
    o->ts = malloc(p->n * sizeof *o->ts);
    o->val = malloc(p->n * sizeof *o->val);
    if (!o->ts || !o->val) {
        store_points_free(o);
        __atomic_store_n(&g->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    memcpy(o->ts, p->ts, p->n * sizeof *o->ts);
    memcpy(o->val, p->val, p->n * sizeof *o->val);
    o->n = o->cap = p->n;
}

/* A series' points, copied as they are. */
static void take(void *arg, size_t i, store_points *p)
{
    gather *g = arg;
    __atomic_add_fetch(&g->raw, p->n, __ATOMIC_RELAXED);
    if (p->n) keep(g, i, p);
}

/* A series' buckets (of raw points), copied. */
static void take_buckets(void *arg, size_t i, store_points *b, size_t raw)
{
    gather *g = arg;
    __atomic_add_fetch(&g->raw, raw, __ATOMIC_RELAXED);
    if (b->n) keep(g, i, b);
}

/* The literal pairs among the filters (literal_or of one value): the store
 * reads only the series that have them. */
static int literal_pairs(const tsq_sub *sub, store_tag *pairs, int max)
{
    int n = 0;
    for (int i = 0; i < sub->nfilters && n < max; i++) {
        const tsq_filter *f = &sub->filters[i];
        if (f->type == TSQ_LITERAL_OR && f->filter && *f->filter && !strchr(f->filter, '|'))
            pairs[n++] = (store_tag){f->tagk, f->filter};
    }
    return n;
}

/* Stops at the first series: store_series_of returns 1 when the metric has one. */
static int any_series(void *arg, const store_series *se)
{
    (void)arg;
    (void)se;
    return 1;
}

static int fetch(store *s, const tsq_query *q, const tsq_sub *sub, tsq_set *out, tsq_error *err,
                 int predownsample)
{
    if (tsq_filters_compile((tsq_sub *)sub, err) < 0) return -1;
    ((tsq_sub *)sub)->guard = (tsq_guard *)&q->guard;
    sel w = {.sub = sub};
    store_tag pairs[64];
    int np = literal_pairs(sub, pairs, 64);
    int rc = np ? store_series_with(s, sub->metric, pairs, np, pick, &w)
                : store_series_of(s, sub->metric, pick, &w);
    if (rc < 0) {
        sel_free(&w);
        return tsq_fail(err, 500, NULL, "Unable to read the series of '%s'", sub->metric);
    }
    if (tsq_guard_error(&q->guard, err) < 0) {
        sel_free(&w);
        return -1;
    }
    if (!w.seen && store_series_of(s, sub->metric, any_series, NULL) != 1) {
        sel_free(&w);
        return tsq_fail(err, 400, NULL, "No such name for 'metrics': '%s'", sub->metric);
    }
    int64_t from, to;
    tsq_scan_range(q, sub, &from, &to);
    const tsq_agg *da = sub->ds.interval_ms > 0 && !sub->ds.all ? tsq_agg_find(sub->ds.agg) : NULL;
    int kind = !predownsample || !da    ? -1
               : da->kind == TSQ_AG_AVG ? STORE_DS_AVG
               : da->kind == TSQ_AG_SUM ? STORE_DS_SUM
               : da->kind == TSQ_AG_MIN ? STORE_DS_MIN
               : da->kind == TSQ_AG_MAX ? STORE_DS_MAX
                                        : -1;
    gather g = {calloc(w.n ? w.n : 1, sizeof *g.pts), 0, 0};
    if (!g.pts) {
        sel_free(&w);
        return tsq_fail(err, 500, NULL, "out of memory");
    }
    rc = kind >= 0 ? store_read_many_ds(s, w.ids, w.n, from, to, sub->ds.interval_ms,
                                        (store_ds_kind)kind, take_buckets, &g)
                   : store_read_many(s, w.ids, w.n, from, to, take, &g);
    rc = rc < 0 ? tsq_fail(err, 500, NULL, "Unable to read a series of '%s'", sub->metric) : 0;
    if (rc == 0 && g.oom) rc = tsq_fail(err, 500, NULL, "out of memory");
    long max_points = q->guard.max_points > 0 ? q->guard.max_points : TSQ_MAX_POINTS;
    if (rc == 0 && g.raw > (size_t)max_points)
        rc = tsq_fail(err, 413, NULL,
                      "Sorry, this query would read %zu data points (limit %ld): "
                      "narrow the time range or the filters",
                      g.raw, max_points);
    for (size_t i = 0; i < w.n && rc == 0; i++) {
        if (!g.pts[i].n) continue;
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
        tsq_series *se = &out->v[out->n];
        memset(se, 0, sizeof *se);
        int nt = w.ntags[i];
        se->metric = strdup(w.metric);
        se->tags = calloc(nt ? (size_t)nt : 1, sizeof *se->tags);
        int ok = se->metric && se->tags;
        for (int k = 0; k < nt && ok; k++) {
            se->tags[k].key = strdup(w.tags[i][k].key);
            se->tags[k].value = strdup(w.tags[i][k].value);
            se->ntags = k + 1;
            ok = se->tags[k].key && se->tags[k].value;
        }
        out->n++; /* tsq_set_free frees what it holds */
        if (!ok) {
            rc = tsq_fail(err, 500, NULL, "out of memory");
            break;
        }
        se->pts = g.pts[i];
        memset(&g.pts[i], 0, sizeof g.pts[i]); /* moved */
    }
    for (size_t i = 0; i < w.n; i++) store_points_free(&g.pts[i]);
    free(g.pts);
    sel_free(&w);
    return rc;
}

int tsq_fetch_local(store *s, const tsq_query *q, const tsq_sub *sub, tsq_set *out, tsq_error *err)
{
    return fetch(s, q, sub, out, err, 0); /* raw: peers merge them */
}

int tsq_run_local(store *s, const tsq_query *q, tsq_result *out, tsq_error *err)
{
    for (int i = 0; i < q->nsubs; i++) {
        tsq_set set = {0};
        if (fetch(s, q, &q->subs[i], &set, err, 1) < 0 ||
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
    if (store_series_with(s, metric, pairs, np, collect, &w) < 0) {
        walk_free(&w);
        return tsq_fail(err, 500, NULL, "Unable to read the series of '%s'", metric);
    }
    if (!w.seen && store_series_of(s, metric, any_series, NULL) != 1) {
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
    } else if (store_series_with(s, metric, pairs, np, collect, &w) < 0) /* the postings */
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
