/* live.c — the live per-job values behind Prometheus /metrics: the latest
 * value of every series that carries a job_id tag, kept while its job runs
 * (dropped at the job's jobscope.end event, or after 10 minutes without an
 * update: a job killed without an end record).  Written from the ingest
 * paths (server.c), read by the /metrics handler; one mutex. */
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

typedef struct live_set {
    struct live_set *next; /* hash chain */
    uint64_t h;
    char *key; /* \x01 k=v \x01 ... (sorted tags) */
    size_t keylen;
    store_tag *tags; /* sorted by key; strings owned */
    int ntags;
    const char *job_id; /* points into tags */
    live_val *vals;
    size_t nvals, capvals;
} live_set;

struct live_table {
    pthread_mutex_t lock;
    live_set **sets;      /* hash table of tag sets */
    size_t cap, nsets, n; /* n: series */
    live_name **names;    /* interned metric names */
    size_t names_cap, names_n;
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
    for (size_t i = 0; i < l->nvals; i++) name_put(p, l->vals[i].name);
    for (int i = 0; i < l->ntags; i++) {
        free((char *)l->tags[i].key);
        free((char *)l->tags[i].value);
    }
    free(l->vals);
    free(l->tags);
    free(l->key);
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

/* The set of these sorted tags (key: their \x01k=v form), created if new. */
static live_set *set_get(live_table *p, const store_tag *sorted, int ntags, const sbuf *key)
{
    if (!p->cap && rehash(p, 1024) < 0) return NULL;
    uint64_t h = hash_bytes(key->p, key->len);
    live_set *l = p->sets[h & (p->cap - 1)];
    while (l && !(l->h == h && l->keylen == key->len && !memcmp(l->key, key->p, key->len)))
        l = l->next;
    if (l) return l;
    l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->h = h;
    l->key = strndup(key->p, key->len);
    l->keylen = key->len;
    l->tags = calloc((size_t)ntags, sizeof *l->tags);
    if (!l->key || !l->tags) {
        free(l->key);
        free(l->tags);
        free(l);
        return NULL;
    }
    for (int t = 0; t < ntags; t++) {
        l->tags[t].key = strdup(sorted[t].key);
        l->tags[t].value = strdup(sorted[t].value);
        l->ntags = t + 1;
        if (!l->tags[t].key || !l->tags[t].value) {
            set_free(p, l);
            return NULL;
        }
        if (!strcmp(sorted[t].key, "job_id")) l->job_id = l->tags[t].value;
    }
    size_t b = h & (p->cap - 1);
    l->next = p->sets[b];
    p->sets[b] = l;
    p->nsets++;
    if (p->nsets > p->cap) rehash(p, p->cap * 2);
    return l;
}

void live_update(live_table *p, const store_point *pts, size_t n, int64_t now)
{
    /* The fields of one line or event share one tags array: the job, the
     * sorted tags and the set are found once per run of points with the
     * same tags; the k-th point of a run is looked for first at the k-th
     * value of the set (the fields come in the same order every time). */
    const store_tag *ptags = NULL;
    int pnt = -1;
    live_set *set = NULL;
    size_t k = 0;
    store_tag sorted[32];
    sbuf key = {0};
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < n; i++, k++) {
        const store_point *pt = &pts[i];
        if (pt->tags != ptags || pt->ntags != pnt) {
            ptags = pt->tags;
            pnt = pt->ntags;
            set = NULL;
            k = 0;
            const char *job = NULL;
            for (int t = 0; t < pt->ntags; t++)
                if (!strcmp(pt->tags[t].key, "job_id")) job = pt->tags[t].value;
            if (!job || pt->ntags > 32) continue;
            memcpy(sorted, pt->tags, (size_t)pt->ntags * sizeof *sorted);
            qsort(sorted, (size_t)pt->ntags, sizeof *sorted, tag_cmp);
            sbuf_reset(&key);
            for (int t = 0; t < pt->ntags; t++) {
                sbuf_putc(&key, '\x01');
                sbuf_puts(&key, sorted[t].key);
                sbuf_putc(&key, '=');
                sbuf_puts(&key, sorted[t].value);
            }
            if (!key.oom) set = set_get(p, sorted, pt->ntags, &key);
        }
        if (!set) continue;
        live_val *v = NULL;
        if (k < set->nvals && !strcmp(set->vals[k].name->s, pt->metric))
            v = &set->vals[k];
        else {
            for (size_t j = 0; j < set->nvals; j++)
                if (!strcmp(set->vals[j].name->s, pt->metric)) {
                    v = &set->vals[j];
                    break;
                }
        }
        if (!v) {
            if (p->n >= LIVE_MAX) continue;
            if (set->nvals == set->capvals) {
                size_t cap = set->capvals ? set->capvals * 2 : 8;
                live_val *nv = realloc(set->vals, cap * sizeof *nv);
                if (!nv) continue;
                set->vals = nv;
                set->capvals = cap;
            }
            live_name *nm = name_get(p, pt->metric);
            if (!nm) continue;
            v = &set->vals[set->nvals++];
            v->name = nm;
            p->n++;
        }
        v->value = pt->value; /* the last one handed in: batches are in time order */
        v->updated_ms = now;
    }
    pthread_mutex_unlock(&p->lock);
    sbuf_free(&key);
}

static void drop_where(live_table *p, const char *job, int64_t older_than)
{
    for (size_t i = 0; i < p->cap; i++) {
        live_set **pp = &p->sets[i];
        while (*pp) {
            live_set *l = *pp;
            if (job) {
                if (!(l->job_id && !strcmp(l->job_id, job))) {
                    pp = &l->next;
                    continue;
                }
                p->n -= l->nvals;
            } else {
                size_t o = 0;
                for (size_t j = 0; j < l->nvals; j++) {
                    if (l->vals[j].updated_ms < older_than) {
                        name_put(p, l->vals[j].name);
                        p->n--;
                    } else
                        l->vals[o++] = l->vals[j];
                }
                l->nvals = o;
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
    const char *name; /* the Prometheus name (the live_name's) */
    live_set *l;
    live_val *v;
    int counter;
} prom_row;

static int row_cmp(const void *a, const void *b)
{
    const prom_row *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (!c) c = strcmp(x->v->name->s, y->v->name->s);
    return c ? c : strcmp(x->l->key, y->l->key);
}

void live_metrics(live_table *p, sbuf *out)
{
    pthread_mutex_lock(&p->lock);
    prom_row *rows = p->n ? malloc(p->n * sizeof *rows) : NULL;
    size_t n = 0;
    for (size_t i = 0; rows && i < p->cap; i++)
        for (live_set *l = p->sets[i]; l; l = l->next)
            for (size_t j = 0; j < l->nvals && n < p->n; j++) {
                rows[n].l = l;
                rows[n].v = &l->vals[j];
                rows[n].counter = l->vals[j].name->counter;
                rows[n].name = l->vals[j].name->prom;
                n++;
            }
    if (n) qsort(rows, n, sizeof *rows, row_cmp);
    const char *last = "";
    for (size_t i = 0; i < n; i++) {
        live_set *l = rows[i].l;
        if (strcmp(rows[i].name, last)) {
            const metric_def *d = rows[i].v->name->def;
            sbuf_printf(out, "# HELP %s ", rows[i].name);
            if (d && d->help) {
                prom_text(out, d->help, 0);
                sbuf_printf(out, " (%s; ", d->unit ? d->unit : "");
            } else
                sbuf_printf(out, "%s of running jobs (",
                            rows[i].counter ? "Cumulative value" : "Latest value");
            sbuf_puts(out, "jobscope series ");
            prom_text(out, rows[i].v->name->s, 0);
            sbuf_puts(out, ")\n");
            sbuf_printf(out, "# TYPE %s %s\n", rows[i].name, rows[i].counter ? "counter" : "gauge");
            last = rows[i].name;
        }
        sbuf_puts(out, rows[i].name);
        /* Labels must be unique: of keys that sanitise alike the first is
         * kept; names starting with __ are Prometheus' own. */
        sbuf names = {0};
        sbuf_putc(out, '{');
        int first = 1;
        for (int t = 0; t < l->ntags; t++) {
            size_t at = names.len;
            label_name(&names, l->tags[t].key);
            sbuf_putc(&names, 0);
            if (names.oom) break;
            const char *nm = names.p + at;
            int dup = !strncmp(nm, "__", 2);
            for (size_t o = 0; !dup && o < at; o += strlen(names.p + o) + 1)
                dup = !strcmp(names.p + o, nm);
            if (dup) {
                names.len = at;
                continue;
            }
            if (!first) sbuf_putc(out, ',');
            first = 0;
            sbuf_puts(out, nm);
            sbuf_puts(out, "=\"");
            prom_text(out, l->tags[t].value, 1);
            sbuf_putc(out, '"');
        }
        sbuf_free(&names);
        sbuf_printf(out, "} %.17g\n", rows[i].v->value);
    }
    pthread_mutex_unlock(&p->lock);
    free(rows);
}
