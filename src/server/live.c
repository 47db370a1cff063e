/* live.c — the live per-job values behind Prometheus /metrics: the latest
 * value of every series that carries a job_id tag, kept while its job runs
 * (dropped at the job's jobscope.end event, or after 10 minutes without an
 * update: a job killed without an end record).  Written from the ingest
 * paths (server.c), read by the /metrics handler; one mutex.
 *
 * Bounded: at most LIVE_MAX series, and a tag set exists only with at least
 * one of them, so a site collector's million jobs cost the table LIVE_MAX
 * series, not a million sets.  The points of series that found the table
 * full are counted (jobscope_serve_live_left_out_points_total). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include "live.h"
#include "model/metric.h"
#include "util/hash.h"

/* Two levels, so that a line of 30 fields costs one tag-set lookup and 30
 * look-ups in a small array that stays in cache: a tag set (the tags of a
 * job's rank, sorted) holds the latest value of each of its metrics, whose
 * names are interned (counted references) so that they compare by pointer. */
typedef struct live_name {
    struct live_name *next;
    uint64_t h;
    size_t refs;
    /* from the metric catalogue, once per name: the field whose HELP this
     * series shows, whether it is a counter, its Prometheus name */
    const metric_def *def;
    int counter;
    char *prom;
    char s[];
} live_name;

typedef struct live_val {
    live_name *name;
    double value;
    int64_t updated_ms;
} live_val;

/* One allocation a set (about 100 bytes for a set of one series with two
 * tags): the header, the key (its sorted tags as key NUL value NUL ...,
 * padded to 8 bytes), then room for capvals values. */
typedef struct live_set {
    struct live_set *next; /* hash chain */
    uint64_t h;
    uint32_t keylen;
    uint16_t job_at; /* offset of the job_id value in the key */
    uint16_t nvals, capvals;
    /* then the values, at set_vals(): the key starts aligned for them (at
     * offset 26 they were misaligned: UBSan under fuzz_serve_api) */
    _Alignas(live_val) char key[];
} live_set;

#define KEY_ROOM(len) (((size_t)(len) + 7) & ~(size_t)7)

static inline live_val *set_vals(live_set *l)
{
    return (live_val *)(l->key + KEY_ROOM(l->keylen));
}

/* The set's tags (pointers into its key), in key order; their count. */
static int set_tags(const live_set *l, store_tag *tags, int max)
{
    int n = 0;
    for (const char *p = l->key, *end = l->key + l->keylen; p < end && n < max; n++) {
        tags[n].key = p;
        p += strlen(p) + 1;
        tags[n].value = p;
        p += strlen(p) + 1;
    }
    return n;
}

struct live_table {
    pthread_mutex_t lock;
    live_set **sets;      /* hash table of tag sets */
    size_t cap, nsets, n; /* n: series */
    live_name **names;    /* interned metric names */
    size_t names_cap, names_n;
    unsigned long long left_out; /* points of series that found the table full */
};
static int tag_cmp(const void *a, const void *b)
{
    return strcmp(((const store_tag *)a)->key, ((const store_tag *)b)->key);
}

static int name_describe(live_name *e);

/* The interned name (a reference taken), NULL on OOM. */
static live_name *name_get(live_table *p, const char *m)
{
    size_t len = strlen(m);
    uint64_t h = hash_bytes(m, len);
    if (p->names_n >= p->names_cap) {
        size_t cap = p->names_cap ? p->names_cap * 2 : 256;
        live_name **t = calloc(cap, sizeof *t);
        if (!t) return NULL;
        for (size_t i = 0; i < p->names_cap; i++)
            for (live_name *e = p->names[i], *next; e; e = next) {
                next = e->next;
                e->next = t[e->h & (cap - 1)];
                t[e->h & (cap - 1)] = e;
            }
        free(p->names);
        p->names = t;
        p->names_cap = cap;
    }
    live_name **slot = &p->names[h & (p->names_cap - 1)];
    for (live_name *e = *slot; e; e = e->next)
        if (e->h == h && !strcmp(e->s, m)) {
            e->refs++;
            return e;
        }
    live_name *e = malloc(sizeof *e + len + 1);
    if (!e) return NULL;
    memcpy(e->s, m, len + 1);
    if (name_describe(e) < 0) {
        free(e);
        return NULL;
    }
    e->h = h;
    e->refs = 1;
    e->next = *slot;
    *slot = e;
    p->names_n++;
    return e;
}

static void name_put(live_table *p, live_name *n)
{
    if (--n->refs) return;
    live_name **pp = &p->names[n->h & (p->names_cap - 1)];
    while (*pp != n) pp = &(*pp)->next;
    *pp = n->next;
    free(n->prom);
    free(n);
    p->names_n--;
}

static void set_free(live_table *p, live_set *l)
{
    live_val *v = set_vals(l);
    for (size_t i = 0; i < l->nvals; i++) name_put(p, v[i].name);
    free(l);
}

static int rehash(live_table *p, size_t cap)
{
    live_set **t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < p->cap; i++) {
        for (live_set *l = p->sets[i], *next; l; l = next) {
            next = l->next;
            size_t h = l->h & (cap - 1);
            l->next = t[h];
            t[h] = l;
        }
    }
    free(p->sets);
    p->sets = t;
    p->cap = cap;
    return 0;
}

/* The set whose key (sorted tags, key NUL value NUL ...) is key[0..len),
 * hashing to h; NULL when there is none.  *at: where the set's pointer is
 * (a set that grows moves). */
static live_set *set_find(live_table *p, const char *key, size_t len, uint64_t h, live_set ***at)
{
    if (!p->cap) return NULL;
    live_set **pp = &p->sets[h & (p->cap - 1)];
    while (*pp && !((*pp)->h == h && (*pp)->keylen == len && !memcmp((*pp)->key, key, len)))
        pp = &(*pp)->next;
    *at = pp;
    return *pp;
}

/* A new empty set with room for one value, in the table; NULL out of memory. */
static live_set *set_new(live_table *p, const char *key, size_t len, size_t job_at, uint64_t h)
{
    if (!p->cap && rehash(p, 1024) < 0) return NULL;
    live_set *l = malloc(sizeof *l + KEY_ROOM(len) + sizeof(live_val));
    if (!l) return NULL;
    l->h = h;
    l->keylen = (uint32_t)len;
    l->job_at = (uint16_t)job_at;
    l->nvals = 0;
    l->capvals = 1;
    memcpy(l->key, key, len);
    size_t b = h & (p->cap - 1);
    l->next = p->sets[b];
    p->sets[b] = l;
    p->nsets++;
    if (p->nsets > p->cap) rehash(p, p->cap * 2);
    return l;
}

/* The set *at with room for one more value (moved when it grew); NULL out
 * of memory (the set stays as it was). */
static live_set *set_grow(live_set **at)
{
    live_set *l = *at;
    if (l->nvals < l->capvals) return l;
    size_t cap = (size_t)l->capvals * 2;
    if (cap > 0xffff) return NULL;
    live_set *n = realloc(l, sizeof *l + KEY_ROOM(l->keylen) + cap * sizeof(live_val));
    if (!n) return NULL;
    n->capvals = (uint16_t)cap;
    *at = n;
    return n;
}

/* Unlinks and frees a set that holds no value. */
static void set_drop_empty(live_table *p, live_set **at)
{
    live_set *l = *at;
    *at = l->next;
    free(l);
    p->nsets--;
}

void live_update(live_table *p, const store_point *pts, size_t n, int64_t now)
{
    /* The fields of one line or event share one tags array: the job, the
     * sorted tags and the set are found once per run of points with the
     * same tags; the k-th point of a run is looked for first at the k-th
     * value of the set (the fields come in the same order every time). */
    const store_tag *ptags = NULL;
    int pnt = -1;
    live_set *set = NULL, **at = NULL;
    size_t k = 0, job_at = 0;
    uint64_t h = 0;
    store_tag sorted[32];
    sbuf key = {0};
    unsigned long long left_out = 0;
    /* the hashes of recent metric names, by pointer (a batch names few
     * metrics, many times; its strings do not change during the call): a
     * set's values are told apart by hash before any strcmp */
    struct {
        const char *m;
        uint64_t h;
    } mc[16] = {{0}};
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < n; i++, k++) {
        const store_point *pt = &pts[i];
        if (pt->tags != ptags || pt->ntags != pnt) {
            ptags = pt->tags;
            pnt = pt->ntags;
            set = NULL;
            key.len = 0;
            k = 0;
            const char *job = NULL;
            for (int t = 0; t < pt->ntags; t++)
                if (!strcmp(pt->tags[t].key, "job_id")) job = pt->tags[t].value;
            if (!job || pt->ntags > 32) continue;
            memcpy(sorted, pt->tags, (size_t)pt->ntags * sizeof *sorted);
            qsort(sorted, (size_t)pt->ntags, sizeof *sorted, tag_cmp);
            sbuf_reset(&key);
            for (int t = 0; t < pt->ntags; t++) {
                sbuf_put(&key, sorted[t].key, strlen(sorted[t].key) + 1);
                if (sorted[t].value == job) job_at = key.len;
                sbuf_put(&key, sorted[t].value, strlen(sorted[t].value) + 1);
            }
            if (key.oom || key.len > 0xffff) {
                key.len = 0;
                continue;
            }
            h = hash_bytes(key.p, key.len);
            set = set_find(p, key.p, key.len, h, &at);
        }
        if (!key.len) continue;
        live_val *v = NULL;
        if (set) {
            size_t c = ((uintptr_t)pt->metric >> 3) & 15;
            if (mc[c].m != pt->metric) {
                mc[c].m = pt->metric;
                mc[c].h = hash_bytes(pt->metric, strlen(pt->metric));
            }
            uint64_t mh = mc[c].h;
            live_val *vals = set_vals(set);
            if (k < set->nvals && vals[k].name->h == mh && !strcmp(vals[k].name->s, pt->metric))
                v = &vals[k];
            else {
                for (size_t j = 0; j < set->nvals; j++)
                    if (vals[j].name->h == mh && !strcmp(vals[j].name->s, pt->metric)) {
                        v = &vals[j];
                        break;
                    }
            }
        }
        if (!v) {
            /* a new series: only while the table has room (a new set too) */
            if (p->n >= LIVE_MAX) {
                left_out++;
                continue;
            }
            if (!set) {
                if (!(set = set_new(p, key.p, key.len, job_at, h))) continue;
                set_find(p, key.p, key.len, h, &at);
            }
            live_name *nm = name_get(p, pt->metric);
            live_set *g = nm ? set_grow(at) : NULL;
            if (!g) {
                if (nm) name_put(p, nm);
                if (!set->nvals) {
                    set_drop_empty(p, at);
                    set = NULL;
                }
                continue;
            }
            set = g;
            v = &set_vals(set)[set->nvals++];
            v->name = nm;
            p->n++;
        }
        v->value = pt->value; /* the last one handed in: batches are in time order */
        v->updated_ms = now;
    }
    p->left_out += left_out;
    pthread_mutex_unlock(&p->lock);
    sbuf_free(&key);
}

static void drop_where(live_table *p, const char *job, int64_t older_than)
{
    for (size_t i = 0; i < p->cap; i++) {
        live_set **pp = &p->sets[i];
        while (*pp) {
            live_set *l = *pp;
            live_val *vals = set_vals(l);
            if (job) {
                if (strcmp(l->key + l->job_at, job)) {
                    pp = &l->next;
                    continue;
                }
                p->n -= l->nvals;
            } else {
                size_t o = 0;
                for (size_t j = 0; j < l->nvals; j++) {
                    if (vals[j].updated_ms < older_than) {
                        name_put(p, vals[j].name);
                        p->n--;
                    } else
                        vals[o++] = vals[j];
                }
                l->nvals = (uint16_t)o;
                if (o) {
                    pp = &l->next;
                    continue;
                }
            }
            *pp = l->next;
            set_free(p, l);
            p->nsets--;
        }
    }
}

void live_end_job(live_table *p, const char *job_id)
{
    pthread_mutex_lock(&p->lock);
    drop_where(p, job_id, 0);
    pthread_mutex_unlock(&p->lock);
}

void live_expire(live_table *p, int64_t older_than_ms)
{
    pthread_mutex_lock(&p->lock);
    drop_where(p, NULL, older_than_ms);
    pthread_mutex_unlock(&p->lock);
}

live_table *live_new(void)
{
    live_table *p = calloc(1, sizeof *p);
    if (p) pthread_mutex_init(&p->lock, NULL);
    return p;
}

void live_free(live_table *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->cap; i++)
        for (live_set *l = p->sets[i], *next; l; l = next) {
            next = l->next;
            set_free(p, l);
        }
    free(p->sets);
    free(p->names);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

size_t live_count(live_table *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->n;
    pthread_mutex_unlock(&p->lock);
    return n;
}

live_stats live_get_stats(live_table *p)
{
    pthread_mutex_lock(&p->lock);
    live_stats st = {p->n, p->nsets, p->left_out};
    pthread_mutex_unlock(&p->lock);
    return st;
}

/* ---- Prometheus text format ---- */

/* Prometheus' text format is UTF-8: a byte that does not start a valid
 * sequence becomes U+FFFD; backslash, quote (in label values) and newline
 * are escaped. */
static void prom_text(sbuf *b, const char *v, int quote)
{
    const unsigned char *p = (const unsigned char *)v;
    while (*p) {
        unsigned c = *p;
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = n > 0;
        for (size_t k = 1; ok && k < n; k++) ok = (p[k] & 0xc0) == 0x80;
        if (ok && n == 2) ok = c >= 0xc2; /* overlong */
        if (ok && n == 3) ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0);
        if (ok && n == 4)
            ok = c <= 0xf4 && !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
        if (!ok) {
            sbuf_puts(b, "\xef\xbf\xbd");
            p++;
            continue;
        }
        if (c == '\\')
            sbuf_puts(b, "\\\\");
        else if (c == '"' && quote)
            sbuf_puts(b, "\\\"");
        else if (c == '\n')
            sbuf_puts(b, "\\n");
        else
            sbuf_put(b, (const char *)p, n);
        p += n;
    }
}

/* jobscope_<metric with [^a-z0-9_] as _>[_total]; lower case (promtool
 * wants snake_case); a gauge may not end like a histogram/counter part. */
static void prom_name(char *out, size_t len, const char *metric, int counter)
{
    size_t o = (size_t)snprintf(out, len, "jobscope_");
    for (const char *m = metric; *m && o + 16 < len; m++) {
        char c = *m;
        if (isupper((unsigned char)c)) {
            if (m != metric && islower((unsigned char)m[-1]) && out[o - 1] != '_') out[o++] = '_';
            c = (char)tolower((unsigned char)c);
        }
        if (!isalnum((unsigned char)c)) c = '_';
        if (c == '_' && out[o - 1] == '_') continue;
        out[o++] = c;
    }
    while (o > 9 && out[o - 1] == '_') o--;
    out[o] = 0;
    static const char *const bad[] = {"_total", "_count",   "_sum", "_bucket",
                                      "_info",  "_created", NULL};
    if (counter) {
        snprintf(out + o, len - o, "_total");
        return;
    }
    for (int i = 0; bad[i]; i++) {
        size_t bl = strlen(bad[i]);
        if (o >= bl && !strcmp(out + o - bl, bad[i])) {
            snprintf(out + o, len - o, "_value");
            return;
        }
    }
}

/* What the metric catalogue (src/model) says of a series, once per name:
 * a series EVENT.FIELD (or EVENT.GROUP.FIELD, a row of a group) of a
 * catalogue field of that event is a counter or a gauge as the catalogue
 * says (utime, read_bytes, cg_cpu_usage... are counters), any other series
 * a gauge; HELP is the help text of the field metric_lookup() finds.  A
 * group's rows are a family of their own, named with the label of a row
 * (jobscope_kickstart_inv_online_cg_io_dev_rbytes_total{dev="8:0"}), apart
 * from the event's total (..._cg_io_rbytes_total). */
static int name_describe(live_name *e)
{
    const char *m = e->s;
    const metric_def *d = metric_lookup(m);
    size_t el = d ? strlen(d->event) : 0;
    int of_event = d && !strncmp(m, d->event, el) && m[el] == '.';
    e->def = d;
    e->counter = of_event && d->kind == METRIC_COUNTER;
    char name[256], family[600];
    if (of_event && d->group)
        snprintf(family, sizeof family, "%s.%s.%s.%s", d->event, d->group, d->row_label, d->name);
    else
        snprintf(family, sizeof family, "%s", m);
    prom_name(name, sizeof name, family, e->counter);
    e->prom = strdup(name);
    return e->prom ? 0 : -1;
}

static void label_name(sbuf *b, const char *k)
{
    if (isdigit((unsigned char)*k)) sbuf_putc(b, '_');
    for (; *k; k++) sbuf_putc(b, isalnum((unsigned char)*k) ? *k : '_');
}

typedef struct prom_row {
    live_set *l;
    live_val *v;
} prom_row;

static int row_cmp(const void *a, const void *b)
{
    const prom_row *x = a, *y = b;
    int c = strcmp(x->v->name->prom, y->v->name->prom);
    if (!c) c = strcmp(x->v->name->s, y->v->name->s);
    if (c) return c;
    uint32_t lx = x->l->keylen, ly = y->l->keylen;
    c = memcmp(x->l->key, y->l->key, lx < ly ? lx : ly);
    return c ? c : (lx > ly) - (lx < ly);
}

void live_metrics(live_table *p, sbuf *out)
{
    pthread_mutex_lock(&p->lock);
    sbuf_printf(out,
                "# HELP jobscope_serve_live_left_out_points_total Points of job series not shown "
                "below: the table of live series was full (%d series)\n"
                "# TYPE jobscope_serve_live_left_out_points_total counter\n"
                "jobscope_serve_live_left_out_points_total %llu\n",
                LIVE_MAX, p->left_out);
    prom_row *rows = p->n ? malloc(p->n * sizeof *rows) : NULL;
    size_t n = 0;
    for (size_t i = 0; rows && i < p->cap; i++)
        for (live_set *l = p->sets[i]; l; l = l->next)
            for (size_t j = 0; j < l->nvals && n < p->n; j++) {
                rows[n].l = l;
                rows[n].v = &set_vals(l)[j];
                n++;
            }
    if (n) qsort(rows, n, sizeof *rows, row_cmp);
    const char *last = "";
    store_tag tags[32];
    for (size_t i = 0; i < n; i++) {
        live_set *l = rows[i].l;
        const live_name *nm = rows[i].v->name;
        if (strcmp(nm->prom, last)) {
            const metric_def *d = nm->def;
            sbuf_printf(out, "# HELP %s ", nm->prom);
            if (d && d->help) {
                prom_text(out, d->help, 0);
                sbuf_printf(out, " (%s; ", d->unit ? d->unit : "");
            } else
                sbuf_printf(out, "%s of running jobs (",
                            nm->counter ? "Cumulative value" : "Latest value");
            sbuf_puts(out, "jobscope series ");
            prom_text(out, nm->s, 0);
            sbuf_puts(out, ")\n");
            sbuf_printf(out, "# TYPE %s %s\n", nm->prom, nm->counter ? "counter" : "gauge");
            last = nm->prom;
        }
        sbuf_puts(out, nm->prom);
        /* Labels must be unique: of keys that sanitise alike the first is
         * kept; names starting with __ are Prometheus' own. */
        sbuf names = {0};
        sbuf_putc(out, '{');
        int first = 1, ntags = set_tags(l, tags, 32);
        for (int t = 0; t < ntags; t++) {
            size_t at = names.len;
            label_name(&names, tags[t].key);
            sbuf_putc(&names, 0);
            if (names.oom) break;
            const char *lbl = names.p + at;
            int dup = !strncmp(lbl, "__", 2);
            for (size_t o = 0; !dup && o < at; o += strlen(names.p + o) + 1)
                dup = !strcmp(names.p + o, lbl);
            if (dup) {
                names.len = at;
                continue;
            }
            if (!first) sbuf_putc(out, ',');
            first = 0;
            sbuf_puts(out, lbl);
            sbuf_puts(out, "=\"");
            prom_text(out, tags[t].value, 1);
            sbuf_putc(out, '"');
        }
        sbuf_free(&names);
        sbuf_printf(out, "} %.17g\n", rows[i].v->value);
    }
    pthread_mutex_unlock(&p->lock);
    free(rows);
}
