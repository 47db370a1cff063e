/* tsq_eval.c — the query engine: one sub-query over raw series (from the
 * local store and/or peers), in OpenTSDB 2.4's order of operations:
 *
 *   filter and group → per series: downsample (+ fill) → rate →
 *   across the group: interpolate + aggregate → keep points in [start, end]
 *
 * It follows TsdbQuery/SpanGroup/AggregationIterator/Downsampler/
 * FillingDownsampler/RateSpan: series are read over the scan range
 * (tsq_scan_range), buckets are epoch-aligned (t - t % interval), the
 * output timestamps of a group are the union of its series' timestamps,
 * and a series contributes from its first to its last point, with the
 * aggregator's interpolation in between (previous value after a rate).
 *
 * Speed: no allocation per point; one arena for all processed series, one
 * pass per group over the union of timestamps with only the series active
 * there. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/tsq_internal.h"

static long max_points(const tsq_query *q)
{
    return q->guard.max_points > 0 ? q->guard.max_points : TSQ_MAX_POINTS;
}

typedef struct pser {
    const tsq_series *s;
    int64_t *ts;
    double *v;
    size_t n;
} pser;

typedef struct ctx {
    const tsq_agg *agg, *dsagg;
    const tsq_query *q;
    const tsq_sub *sub;
    int64_t from, to;
    const char **gbk; /* group-by keys, sorted, unique */
    int ngb;
    const char **gv; /* ncand * ngb values */
    pser *ps;
    size_t nps;
} ctx;

static const char *tagv(const tsq_series *s, const char *k)
{
    for (int i = 0; i < s->ntags; i++)
        if (strcmp(s->tags[i].key, k) == 0) return s->tags[i].value;
    return NULL;
}

static int cmp_tags(const tsq_series *a, const tsq_series *b)
{
    for (int i = 0; i < a->ntags && i < b->ntags; i++) {
        int c = strcmp(a->tags[i].key, b->tags[i].key);
        if (c) return c;
        c = strcmp(a->tags[i].value, b->tags[i].value);
        if (c) return c;
    }
    return a->ntags - b->ntags;
}

static int cmp_cand(const void *pa, const void *pb, void *arg)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const ctx *c = arg;
    for (int k = 0; k < c->ngb; k++) {
        int r = strcmp(c->gv[a * (size_t)c->ngb + k], c->gv[b * (size_t)c->ngb + k]);
        if (r) return r;
    }
    return cmp_tags(c->ps[a].s, c->ps[b].s);
}

static int same_group(const ctx *c, size_t a, size_t b)
{
    if (c->agg->kind == TSQ_AG_NONE) return 0;
    for (int k = 0; k < c->ngb; k++)
        if (strcmp(c->gv[a * (size_t)c->ngb + k], c->gv[b * (size_t)c->ngb + k])) return 0;
    return 1;
}

static size_t lower_bound(const int64_t *ts, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int64_t align(int64_t t, int64_t iv)
{
    return t - t % iv;
}

/* Worst-case number of points series s yields after downsampling. */
static size_t work_cap(const ctx *c, size_t npts)
{
    const tsq_downsample *ds = &c->sub->ds;
    if (ds->all) return 1;
    if (ds->interval_ms > 0 && ds->fill != TSQ_FILL_NONE) {
        int64_t nb =
            (align(c->to, ds->interval_ms) - align(c->from, ds->interval_ms)) / ds->interval_ms;
        return (size_t)(nb > 0 ? nb : 0) + npts;
    }
    return npts;
}

/* Whether process() would give back points [lo, hi) of s unchanged: a
 * downsampling by avg or sum, no fill, no rate, and every point alone in
 * its bucket (timestamps strictly increasing and aligned to the interval),
 * where a bucket's sum 0 + v and average (0 + v) / 1 are v itself (v not
 * -0, which 0 + v makes +0).  Series the store already downsampled
 * (tsq_local.c) are such: tsq_eval points at their arrays instead of
 * copying them into its arena (fresh memory a cold query faults in). */
static int passthrough(const ctx *c, const tsq_series *s, size_t lo, size_t hi)
{
    const tsq_downsample *ds = &c->sub->ds;
    if (ds->all || ds->interval_ms <= 0 || ds->fill != TSQ_FILL_NONE || c->sub->rate ||
        (c->dsagg->kind != TSQ_AG_AVG && c->dsagg->kind != TSQ_AG_SUM))
        return 0;
    const int64_t *ts = s->pts.ts, iv = ds->interval_ms;
    const double *v = s->pts.val;
    for (size_t i = lo; i < hi; i++) /* (the next bucket's start: no division) */
        if ((i > lo && ts[i] <= ts[i - 1]) || (v[i] == 0 && signbit(v[i])) ||
            ((i == lo || ts[i] != ts[i - 1] + iv) && ts[i] % iv))
            return 0;
    return 1;
}

/* Downsample (with fill) and rate one series' points [lo, hi) into p. */
static void process(const ctx *c, const tsq_series *s, size_t lo, size_t hi, pser *p,
                    double *scratch)
{
    const tsq_downsample *ds = &c->sub->ds;
    const int64_t *ts = s->pts.ts;
    const double *v = s->pts.val;
    size_t n = 0;
    if (ds->all) {
        /* one bucket over [start, end), stamped with the query start */
        size_t a = lo, b;
        while (a < hi && ts[a] < c->q->start_ms) a++;
        for (b = a; b < hi && ts[b] < c->q->end_ms; b++)
            ;
        if (b > a) {
            p->ts[0] = c->q->start_ms;
            p->v[0] = tsq_agg_run(c->dsagg, v + a, b - a, scratch);
            n = 1;
        }
    } else if (ds->interval_ms > 0) {
        const int64_t iv = ds->interval_ms;
        const tsq_agg *da = c->dsagg;
        int fill = ds->fill != TSQ_FILL_NONE;
        double fillv = ds->fill == TSQ_FILL_ZERO ? 0.0 : NAN;
        int64_t next = align(c->from, iv), endb = align(c->to, iv);
        size_t i = lo;
        while (i < hi) {
            int64_t b = align(ts[i], iv), e = b + iv;
            size_t j = i + 1;
            while (j < hi && ts[j] < e) j++;
            double val;
            size_t cnt = j - i;
            switch (da->kind) { /* the common ones without a call */
            case TSQ_AG_AVG:
            case TSQ_AG_SUM: {
                double sum = 0;
                for (size_t k = i; k < j; k++) sum += v[k];
                val = da->kind == TSQ_AG_AVG ? sum / (double)cnt : sum;
                break;
            }
            default:
                val = tsq_agg_run(da, v + i, cnt, scratch);
            }
            if (fill) {
                if (b >= endb) break;
                while (next < b) {
                    p->ts[n] = next;
                    p->v[n++] = fillv;
                    next += iv;
                }
                if (b == next)
                    next += iv;
                else if (b < next) { /* before the first filled bucket */
                    i = j;
                    continue;
                }
            }
            p->ts[n] = b;
            p->v[n++] = val;
            i = j;
        }
        if (fill)
            while (next < endb) {
                p->ts[n] = next;
                p->v[n++] = fillv;
                next += iv;
            }
    } else {
        n = hi - lo;
        memcpy(p->ts, ts + lo, n * sizeof *ts);
        memcpy(p->v, v + lo, n * sizeof *v);
    }
    if (c->sub->rate && n > 0) {
        /* RateSpan: per pair, at the later point; the first yields none */
        const tsq_rate_options *ro = &c->sub->rate_opt;
        int64_t t0 = p->ts[0];
        double y0 = p->v[0];
        size_t m = 0;
        for (size_t i = 1; i < n; i++) {
            int64_t t1 = p->ts[i];
            double y1 = p->v[i], r;
            double dt = (double)(t1 - t0) / 1000.0;
            double diff = y1 - y0;
            if (ro->counter && diff < 0) {
                if (ro->drop_resets) {
                    t0 = t1;
                    y0 = y1;
                    continue;
                }
                diff = ro->counter_max - y0 + y1;
                r = diff / dt;
                if (ro->reset_value > 0 && r > ro->reset_value) r = 0;
            } else
                r = diff / dt;
            p->ts[m] = t1;
            p->v[m++] = r;
            t0 = t1;
            y0 = y1;
        }
        n = m;
    }
    p->n = n;
}

/* Merges sorted, duplicate-free runs into one (pairwise, O(N log runs)). */
static int64_t *union_ts(int64_t **runs, size_t *lens, size_t nruns, size_t total, size_t *out_n)
{
    int64_t *a = malloc((total ? total : 1) * sizeof *a),
            *b = malloc((total ? total : 1) * sizeof *b);
    size_t *off = malloc((nruns + 1) * sizeof *off), *len = malloc((nruns + 1) * sizeof *len);
    if (!a || !b || !off || !len) {
        free(a);
        free(b);
        free(off);
        free(len);
        return NULL;
    }
    size_t pos = 0;
    for (size_t i = 0; i < nruns; i++) {
        memcpy(a + pos, runs[i], lens[i] * sizeof *a);
        off[i] = pos;
        len[i] = lens[i];
        pos += lens[i];
    }
    size_t nr = nruns;
    while (nr > 1) {
        size_t w = 0, nn = 0;
        for (size_t r = 0; r < nr; r += 2) {
            size_t start = w;
            if (r + 1 == nr) {
                memcpy(b + w, a + off[r], len[r] * sizeof *a);
                w += len[r];
            } else {
                const int64_t *x = a + off[r], *y = a + off[r + 1];
                size_t i = 0, j = 0, nx = len[r], ny = len[r + 1];
                while (i < nx && j < ny) {
                    if (x[i] < y[j])
                        b[w++] = x[i++];
                    else if (y[j] < x[i])
                        b[w++] = y[j++];
                    else {
                        b[w++] = x[i++];
                        j++;
                    }
                }
                while (i < nx) b[w++] = x[i++];
                while (j < ny) b[w++] = y[j++];
            }
            off[nn] = start;
            len[nn++] = w - start;
        }
        int64_t *t = a;
        a = b;
        b = t;
        nr = nn;
    }
    *out_n = nr ? len[0] : 0;
    if (nr && off[0]) memmove(a, a + off[0], len[0] * sizeof *a);
    free(b);
    free(off);
    free(len);
    return a;
}

typedef struct tagacc {
    const char *k, *v;
    int discarded;
} tagacc;

static char *xstrdup(const char *s)
{
    return strdup(s ? s : "");
}

/* SpanGroup.computeTags: keys with one value across the group stay tags,
 * keys with conflicting values become aggregateTags. */
static int group_tags(tsq_out *o, pser **mem, size_t nm)
{
    size_t cap = 0;
    for (size_t i = 0; i < nm; i++) cap += (size_t)mem[i]->s->ntags;
    tagacc *acc = calloc(cap ? cap : 1, sizeof *acc);
    if (!acc) return -1;
    size_t na = 0;
    for (size_t i = 0; i < nm; i++) {
        const tsq_series *s = mem[i]->s;
        for (int t = 0; t < s->ntags; t++) {
            size_t j;
            for (j = 0; j < na && strcmp(acc[j].k, s->tags[t].key); j++)
                ;
            if (j == na) {
                acc[na].k = s->tags[t].key;
                acc[na++].v = s->tags[t].value;
            } else if (!acc[j].discarded && strcmp(acc[j].v, s->tags[t].value))
                acc[j].discarded = 1;
        }
    }
    size_t nt = 0, nd = 0;
    for (size_t j = 0; j < na; j++) acc[j].discarded ? nd++ : nt++;
    o->tags = calloc(nt ? nt : 1, sizeof *o->tags);
    o->aggregate_tags = calloc(nd ? nd : 1, sizeof *o->aggregate_tags);
    if (!o->tags || !o->aggregate_tags) {
        free(acc);
        return -1;
    }
    /* keys in sorted order (acc follows the first series' sorted keys, then
     * later series' extra keys): sort both lists */
    for (size_t j = 0; j < na; j++) {
        if (acc[j].discarded)
            o->aggregate_tags[o->naggregate_tags++] = xstrdup(acc[j].k);
        else {
            o->tags[o->ntags].key = xstrdup(acc[j].k);
            o->tags[o->ntags++].value = xstrdup(acc[j].v);
        }
    }
    for (int i = 1; i < o->ntags; i++) /* insertion sorts: few keys */
        for (int j = i; j > 0 && strcmp(o->tags[j - 1].key, o->tags[j].key) > 0; j--) {
            store_tag t = o->tags[j];
            o->tags[j] = o->tags[j - 1];
            o->tags[j - 1] = t;
        }
    for (int i = 1; i < o->naggregate_tags; i++)
        for (int j = i; j > 0 && strcmp(o->aggregate_tags[j - 1], o->aggregate_tags[j]) > 0; j--) {
            char *t = o->aggregate_tags[j];
            o->aggregate_tags[j] = o->aggregate_tags[j - 1];
            o->aggregate_tags[j - 1] = t;
        }
    free(acc);
    return 0;
}

static int identity_on_one(tsq_agg_kind k)
{
    return k != TSQ_AG_SQSUM && k != TSQ_AG_COUNT && k != TSQ_AG_DEV && k != TSQ_AG_DIFF;
}

static tsq_out *result_add(tsq_result *r)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 8;
        tsq_out *nv = realloc(r->v, nc * sizeof *nv);
        if (!nv) return NULL;
        r->v = nv;
        r->cap = nc;
    }
    tsq_out *o = &r->v[r->n++];
    memset(o, 0, sizeof *o);
    return o;
}

static int cmp_first(const void *pa, const void *pb, void *arg)
{
    pser **mem = arg;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int64_t x = mem[a]->ts[0], y = mem[b]->ts[0];
    if (x != y) return x < y ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The answer depends on [start, end] only through which processed points
 * fall inside it (the points read are those of the scan range): it stays
 * the same for any start in (largest point before start, smallest point at
 * or after it] and any end in [largest at or before end, smallest after
 * end).  The answer cache reuses it within these bounds (issue 27: a
 * "1h-ago" query asked again a second later). */
static void note_stable(tsq_result *r, const tsq_query *q, const tsq_sub *sub, const pser *p)
{
    if (!r->stable) {
        r->stable = 1;
        r->start_after = INT64_MIN;
        r->start_upto = INT64_MAX;
        r->end_from = INT64_MIN;
        r->end_before = INT64_MAX;
    }
    if (sub->ds.all) { /* one bucket stamped with the start itself */
        r->start_after = q->start_ms - 1;
        r->start_upto = q->start_ms;
    }
    size_t a = lower_bound(p->ts, p->n, q->start_ms);
    if (a > 0 && p->ts[a - 1] > r->start_after) r->start_after = p->ts[a - 1];
    if (a < p->n && p->ts[a] < r->start_upto) r->start_upto = p->ts[a];
    size_t b = q->end_ms == INT64_MAX ? p->n : lower_bound(p->ts, p->n, q->end_ms + 1);
    if (b > 0 && p->ts[b - 1] > r->end_from) r->end_from = p->ts[b - 1];
    if (b < p->n && p->ts[b] < r->end_before) r->end_before = p->ts[b];
}

/* Interpolates and aggregates one group's processed series into o. */
static int aggregate_group(const ctx *c, pser **mem, size_t nm, tsq_out *o)
{
    const int64_t st = c->q->start_ms, en = c->q->end_ms;
    const tsq_agg *agg = c->agg;
    size_t total = 0;
    int64_t **runs = malloc((nm ? nm : 1) * sizeof *runs);
    size_t *lens = malloc((nm ? nm : 1) * sizeof *lens);
    size_t *cur = calloc(nm ? nm : 1, sizeof *cur);
    double *vals = malloc((nm ? nm : 1) * 2 * sizeof *vals);
    size_t *act = malloc((nm ? nm : 1) * sizeof *act),
           *byfirst = malloc((nm ? nm : 1) * sizeof *byfirst);
    int rc = -1;
    int64_t *u = NULL;
    size_t nu = 0;
    if (!runs || !lens || !cur || !vals || !act || !byfirst) goto out;
    for (size_t k = 0; k < nm; k++) {
        size_t a = lower_bound(mem[k]->ts, mem[k]->n, st);
        size_t b = lower_bound(mem[k]->ts, mem[k]->n, en + 1);
        runs[k] = mem[k]->ts + a;
        lens[k] = b - a;
        total += b - a;
    }
    if (nm == 1) {
        nu = lens[0];
        u = malloc((nu ? nu : 1) * sizeof *u);
        if (!u) goto out;
        memcpy(u, runs[0], nu * sizeof *u);
    } else if (!(u = union_ts(runs, lens, nm, total, &nu)))
        goto out;
    o->ts = u;
    o->n = nu;
    o->val = malloc((nu ? nu : 1) * sizeof *o->val);
    o->is_null = calloc(nu ? nu : 1, 1);
    if (!o->val || !o->is_null) goto out;
    if (nm == 1) {
        const double *v = mem[0]->v + (runs[0] - mem[0]->ts);
        if (identity_on_one(agg->kind))
            memcpy(o->val, v, nu * sizeof *v);
        else
            for (size_t i = 0; i < nu; i++) o->val[i] = tsq_agg_run(agg, v + i, 1, vals);
    } else {
        /* series join the active list at their first point and leave after
         * their last; the list keeps group order (first/last/diff/mult) */
        tsq_interp ip = c->sub->rate ? TSQ_IP_PREV : agg->interp;
        size_t nb = 0, nact = 0, nextadd = 0;
        for (size_t k = 0; k < nm; k++)
            if (mem[k]->n) byfirst[nb++] = k;
        qsort_r(byfirst, nb, sizeof *byfirst, cmp_first, mem); /* by first ts, then group order */
        for (size_t i = 0; i < nu; i++) {
            const int64_t t = u[i];
            while (nextadd < nb && mem[byfirst[nextadd]]->ts[0] <= t) {
                size_t k = byfirst[nextadd++], j = nact++;
                while (j > 0 && act[j - 1] > k) {
                    act[j] = act[j - 1];
                    j--;
                }
                act[j] = k;
            }
            size_t nv = 0, w = 0;
            for (size_t a = 0; a < nact; a++) {
                size_t k = act[a];
                const pser *p = mem[k];
                if (p->ts[p->n - 1] < t) continue; /* ended: drop from the list */
                act[w++] = k;
                size_t cc = cur[k];
                while (p->ts[cc] < t) cc++;
                cur[k] = cc;
                if (p->ts[cc] == t) {
                    vals[nv++] = p->v[cc];
                    continue;
                }
                const int64_t x0 = p->ts[cc - 1], x1 = p->ts[cc];
                const double y0 = p->v[cc - 1], y1 = p->v[cc];
                switch (ip) {
                case TSQ_IP_LERP:
                    vals[nv++] = y0 + (double)(t - x0) * (y1 - y0) / (double)(x1 - x0);
                    break;
                case TSQ_IP_ZIM:
                    vals[nv++] = 0;
                    break;
                case TSQ_IP_MAX:
                    vals[nv++] = 1.7976931348623157e308;
                    break;
                case TSQ_IP_MIN:
                    vals[nv++] = 4.9e-324;
                    break;
                case TSQ_IP_PREV:
                    vals[nv++] = y0;
                    break;
                }
            }
            nact = w;
            o->val[i] = nv ? tsq_agg_run(agg, vals, nv, vals + nm) : NAN;
        }
    }
    if (c->sub->ds.fill == TSQ_FILL_NULL)
        for (size_t i = 0; i < nu; i++) o->is_null[i] = isnan(o->val[i]);
    rc = 0;
out:
    free(runs);
    free(lens);
    free(cur);
    free(vals);
    free(act);
    free(byfirst);
    return rc;
}

typedef struct mpt {
    int64_t ts;
    double v;
    size_t ord;
} mpt;

static int cmp_mpt(const void *pa, const void *pb)
{
    const mpt *a = pa, *b = pb;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* Processes the union of several copies of one series (candidates
 * which[0..n), in set order for "later wins"). */
static int process_merged(const ctx *c, const size_t *which, size_t n, const size_t *lo,
                          const size_t *hi, size_t cnt, pser *p)
{
    mpt *m = malloc((cnt ? cnt : 1) * sizeof *m);
    int64_t *ts = malloc((cnt ? cnt : 1) * sizeof *ts);
    double *v = malloc((cnt ? cnt : 1) * sizeof *v),
           *scratch = malloc((cnt ? cnt : 1) * sizeof *scratch);
    if (!m || !ts || !v || !scratch) {
        free(m);
        free(ts);
        free(v);
        free(scratch);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const tsq_series *s = c->ps[which[i]].s;
        for (size_t j = lo[which[i]]; j < hi[which[i]]; j++)
            m[k++] = (mpt){s->pts.ts[j], s->pts.val[j], which[i]};
    }
    qsort(m, k, sizeof *m, cmp_mpt);
    size_t u = 0;
    for (size_t i = 0; i < k; i++) {
        if (u && ts[u - 1] == m[i].ts) u--; /* the later copy wins */
        ts[u] = m[i].ts;
        v[u++] = m[i].v;
    }
    tsq_series tmp = *p->s;
    tmp.pts.ts = ts;
    tmp.pts.val = v;
    tmp.pts.n = tmp.pts.cap = u;
    process(c, &tmp, 0, u, p, scratch);
    free(m);
    free(ts);
    free(v);
    free(scratch);
    return 0;
}

int tsq_eval(const tsq_query *q, const tsq_sub *sub, const tsq_set *in, tsq_result *out,
             tsq_error *err)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.q = q;
    c.sub = sub;
    if (!(c.agg = tsq_agg_find(sub->aggregator)))
        return tsq_fail(err, 400, NULL, "No such aggregation function: %s", sub->aggregator);
    if ((sub->ds.interval_ms > 0 || sub->ds.all) && !(c.dsagg = tsq_agg_find(sub->ds.agg)))
        return tsq_fail(err, 400, NULL, "No such downsampling function: %s", sub->ds.agg);
    if (tsq_filters_compile((tsq_sub *)sub, err) < 0) return -1;
    ((tsq_sub *)sub)->guard = (tsq_guard *)&q->guard;
    tsq_scan_range(q, sub, &c.from, &c.to);

    size_t nin = in ? in->n : 0, ncand = 0, work = 0, maxn = 1;
    size_t *lo = malloc((nin ? nin : 1) * sizeof *lo), *hi = malloc((nin ? nin : 1) * sizeof *hi);
    size_t *idx = malloc((nin ? nin : 1) * sizeof *idx);
    c.ps = calloc(nin ? nin : 1, sizeof *c.ps);
    int rc = -1;
    int64_t *arena_ts = NULL;
    double *arena_v = NULL, *scratch = NULL;
    pser **mem = NULL;
    if (!lo || !hi || !idx || !c.ps) {
        tsq_fail(err, 500, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nin; i++) {
        const tsq_series *s = &in->v[i];
        if (!s->metric || strcmp(s->metric, sub->metric) != 0 || !tsq_match(sub, s->tags, s->ntags))
            continue;
        size_t a = lower_bound(s->pts.ts, s->pts.n, c.from);
        size_t b = lower_bound(s->pts.ts, s->pts.n, c.to + 1);
        if (b <= a) continue;
        lo[ncand] = a;
        hi[ncand] = b;
        c.ps[ncand].s = s;
        if (b - a > maxn) maxn = b - a;
        work += work_cap(&c, b - a);
        ncand++;
    }
    c.nps = ncand;
    if (tsq_guard_error(&q->guard, err) < 0) goto out;
    /* the bound is the whole request's: a hundred sub-queries share it */
    if (work + (size_t)q->guard.used > (size_t)max_points(q)) {
        tsq_fail(err, 413, NULL,
                 "Sorry, this query would process %zu data points (limit %ld): "
                 "narrow the time range or use a longer downsample interval",
                 work + (size_t)q->guard.used, max_points(q));
        goto out;
    }
    sub->guard->used += (long)work;
    /* group-by keys: the keys of group-by filters, sorted and unique */
    c.gbk = malloc((size_t)(sub->nfilters ? sub->nfilters : 1) * sizeof *c.gbk);
    if (!c.gbk) {
        tsq_fail(err, 500, NULL, "out of memory");
        goto out;
    }
    for (int f = 0; f < sub->nfilters; f++) {
        if (!sub->filters[f].group_by) continue;
        int j, dup = 0;
        for (j = 0; j < c.ngb && !dup; j++) dup = !strcmp(c.gbk[j], sub->filters[f].tagk);
        if (dup) continue;
        for (j = c.ngb; j > 0 && strcmp(c.gbk[j - 1], sub->filters[f].tagk) > 0; j--)
            c.gbk[j] = c.gbk[j - 1];
        c.gbk[j] = sub->filters[f].tagk;
        c.ngb++;
    }
    c.gv = malloc((ncand * (size_t)c.ngb + 1) * sizeof *c.gv);
    scratch = malloc(maxn * sizeof *scratch);
    mem = malloc((ncand ? ncand : 1) * sizeof *mem);
    if (!c.gv || !scratch || !mem) {
        tsq_fail(err, 500, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < ncand; i++) {
        for (int k = 0; k < c.ngb; k++) {
            const char *v = tagv(c.ps[i].s, c.gbk[k]);
            c.gv[i * (size_t)c.ngb + k] = v ? v : "";
        }
        idx[i] = i;
    }
    qsort_r(idx, ncand, sizeof *idx, cmp_cand, &c);

    /* One series (metric and tags) from several sets (nodes) is one series:
     * its points are merged, a timestamp given twice keeping the later set's
     * value.  Then each distinct series is downsampled and rated (into the
     * arena; a series that would come out as it is stays where it is). */
    size_t arena = 0;
    for (size_t a = 0; a < ncand;) {
        size_t b = a + 1, cnt = hi[idx[a]] - lo[idx[a]];
        for (; b < ncand && cmp_tags(c.ps[idx[a]].s, c.ps[idx[b]].s) == 0; b++)
            cnt += hi[idx[b]] - lo[idx[b]];
        if (b > a + 1 || !passthrough(&c, c.ps[idx[a]].s, lo[idx[a]], hi[idx[a]]))
            arena += work_cap(&c, cnt);
        else
            c.ps[idx[a]].n = SIZE_MAX; /* marks it */
        a = b;
    }
    arena_ts = malloc((arena ? arena : 1) * sizeof *arena_ts);
    arena_v = malloc((arena ? arena : 1) * sizeof *arena_v);
    if (!arena_ts || !arena_v) {
        tsq_fail(err, 500, NULL, "out of memory");
        goto out;
    }
    size_t nuniq = 0, pos = 0;
    for (size_t a = 0; a < ncand;) {
        size_t b = a + 1, cnt = hi[idx[a]] - lo[idx[a]];
        while (b < ncand && cmp_tags(c.ps[idx[a]].s, c.ps[idx[b]].s) == 0) {
            cnt += hi[idx[b]] - lo[idx[b]];
            b++;
        }
        pser *p = &c.ps[idx[a]];
        if (p->n == SIZE_MAX) { /* as it is */
            p->ts = p->s->pts.ts + lo[idx[a]];
            p->v = p->s->pts.val + lo[idx[a]];
            p->n = cnt;
        } else {
            p->ts = arena_ts + pos;
            p->v = arena_v + pos;
            if (b == a + 1)
                process(&c, p->s, lo[idx[a]], hi[idx[a]], p, scratch);
            else if (process_merged(&c, idx + a, b - a, lo, hi, cnt, p) < 0) {
                tsq_fail(err, 500, NULL, "out of memory");
                goto out;
            }
            pos += work_cap(&c, cnt);
        }
        idx[nuniq++] = idx[a];
        note_stable(out, q, sub, p);
        a = b;
    }

    for (size_t g = 0; g < nuniq;) {
        size_t e = g + 1;
        while (e < nuniq && same_group(&c, idx[g], idx[e])) e++;
        for (size_t k = g; k < e; k++) mem[k - g] = &c.ps[idx[k]];
        tsq_out *o = result_add(out);
        if (!o) {
            tsq_fail(err, 500, NULL, "out of memory");
            goto out;
        }
        o->sub_index = sub->index;
        o->metric = xstrdup(sub->metric);
        if (!o->metric || group_tags(o, mem, e - g) < 0 || aggregate_group(&c, mem, e - g, o) < 0) {
            tsq_fail(err, 500, NULL, "out of memory");
            goto out;
        }
        g = e;
    }
    rc = 0;
out:
    free(lo);
    free(hi);
    free(idx);
    free(c.ps);
    free(c.gbk);
    free(c.gv);
    free(arena_ts);
    free(arena_v);
    free(scratch);
    free(mem);
    return rc;
}

void tsq_result_free(tsq_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        tsq_out *o = &r->v[i];
        free(o->metric);
        for (int t = 0; t < o->ntags; t++) {
            free((char *)o->tags[t].key);
            free((char *)o->tags[t].value);
        }
        free(o->tags);
        for (int t = 0; t < o->naggregate_tags; t++) free(o->aggregate_tags[t]);
        free(o->aggregate_tags);
        free(o->ts);
        free(o->val);
        free(o->is_null);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

void tsq_set_free(tsq_set *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->n; i++) {
        tsq_series *s = &set->v[i];
        free(s->metric);
        for (int t = 0; t < s->ntags; t++) {
            free((char *)s->tags[t].key);
            free((char *)s->tags[t].value);
        }
        free(s->tags);
        free(s->pts.ts);
        free(s->pts.val);
    }
    free(set->v);
    memset(set, 0, sizeof *set);
}
