/* tsconv_set.c — the value-set path of the time-series encoders (see
 * tsconv.h): an event that carries an mset (samples, gpu.stats) becomes the
 * same ts_point that tsconv_parse would read from its JSON -- annotations
 * (parsed once, tsconv_ann), labels, values in catalogue order, each number
 * read back from the text the JSON writer prints -- and goes through the
 * same writers (tsconv_influx_point, tsconv_opentsdb_point).  Runs on the
 * producer's thread when net/tsdb.c queues the event: no parsing, and no
 * allocation beyond the caller's reused output buffer.  Built into the
 * network plugin with tsconv.c; it does not include jansson.h, whose
 * json_null clashes with the JSON writer's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tsconv.h"
#include "sbuf.h"
#include "../../model/metric.h"

/* ---- from a value set ---------------------------------------------------- */

int tsconv_ann_init(tsconv_ann *a, const char *fragment, size_t len, const char *keep_tags)
{
    memset(a, 0, sizeof *a);
    sbuf j = {0};
    sbuf_puts(&j, "{\"event\":\"\"");
    if (len) {
        sbuf_putc(&j, ',');
        sbuf_put(&j, fragment, len);
    }
    sbuf_putc(&j, '}');
    int rc = j.oom ? -1 : tsconv_parse(&a->p, j.p, j.len, keep_tags);
    sbuf_free(&j);
    if (rc < 0) return -1;
    /* a field named like an annotation: jansson keeps one of the two, in
     * the annotation's place; the set path leaves such events to it */
    for (int id = 0; id < M_COUNT; id++)
        if (tsconv_has_key(&a->p, metric_catalogue[id].name)) {
            tsconv_ann_free(a);
            return -1;
        }
    return 0;
}

void tsconv_ann_free(tsconv_ann *a)
{
    tsconv_free(&a->p);
}

/* Room for the tag values the set path makes (integers, repaired UTF-8). */
typedef struct set_text {
    char buf[2048];
    size_t len;
} set_text;

static const char *text_put(set_text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > sizeof t->buf) return NULL;
    char *p = t->buf + t->len;
    memcpy(p, s, n);
    p[n] = 0;
    t->len += n + 1;
    return p;
}

/* A label's string as the JSON path reads it back: json_escape writes
 * U+FFFD for each byte that is not UTF-8.  NULL when there is no room. */
static const char *label_text(set_text *t, const char *v)
{
    const unsigned char *u = (const unsigned char *)v;
    size_t n = strlen(v), i = 0;
    while (i < n) {
        size_t l = u[i] < 0x80 ? 1 : json_utf8_len(u + i, n - i);
        if (!l) break;
        i += l;
    }
    if (i == n) return v;
    char out[1024];
    size_t o = 0;
    for (i = 0; i < n && o + 4 < sizeof out;) {
        size_t l = u[i] < 0x80 ? 1 : json_utf8_len(u + i, n - i);
        if (l) {
            memcpy(out + o, v + i, l);
            o += l;
            i += l;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    return i < n ? NULL : text_put(t, out, o);
}

/* As tsconv_parse's rules, for one member of the event. */
static int is_id_key(const char *k)
{
    return !strcmp(k, "rank") || !strcmp(k, "pid") || !strcmp(k, "id");
}

static void add_tag(ts_point *p, const char *k, const char *v, const char *keep_tags)
{
    if (!tsconv_listed(keep_tags, k) || p->ntags >= 64) return;
    p->tags[p->ntags].key = k;
    p->tags[p->ntags++].val = v;
}

static void add_field(ts_point *p, const char *k, double x)
{
    if (!isfinite(x) || p->nfields >= 256) return;
    p->fields[p->nfields].key = k;
    p->fields[p->nfields++].val = x;
}

/* A label as its JSON member would be read: a non-empty string is a tag
 * when tsconv_string_tag says so (never exe), an integer a tag (rank, pid,
 * id) or a number; null and "" nothing. */
static int add_label(ts_point *p, set_text *t, const mlabel *l, const tsconv_ann *a,
                     const char *keep_tags)
{
    if (!strcmp(l->key, "event") || !strcmp(l->key, "ts") || !strcmp(l->key, "seq") ||
        tsconv_has_key(&a->p, l->key))
        return -1; /* a duplicate key: left to the JSON path */
    if (l->is_num) {
        if (!is_id_key(l->key)) {
            add_field(p, l->key, (double)l->num);
            return 0;
        }
        if (!tsconv_listed(keep_tags, l->key) || p->ntags >= 64) return 0;
        char n[24];
        const char *v = text_put(t, n, (size_t)snprintf(n, sizeof n, "%lld", l->num));
        if (!v) return -1;
        add_tag(p, l->key, v, keep_tags);
        return 0;
    }
    if (!l->str || !*l->str || !tsconv_string_tag(l->key) || !tsconv_listed(keep_tags, l->key) ||
        p->ntags >= 64)
        return 0;
    const char *v = label_text(t, l->str);
    if (!v) return -1;
    add_tag(p, l->key, v, keep_tags);
    return 0;
}

/* The number the JSON path reads for value `id`: the text mset.c's
 * write_member prints, parsed back.  0: none (null, non-finite); -1: an
 * integer jansson refuses (> INT64_MAX). */
static int value_of(const mset *s, int id, double *x)
{
    const metric_def *d = &metric_catalogue[id];
    const mvalue *v = &s->v[id];
    char t[64];
    size_t n;
    if (v->null) return 0;
    if (d->decimals < 0) {
        if (v->u > (uint64_t)INT64_MAX) return -1;
        n = fmt_u64(t, v->u);
    } else {
        double f = mset_value(s, (metric_id)id);
        if (!isfinite(f)) return 0;
        n = fmt_fixed(t, f, d->decimals);
    }
    t[n] = 0;
    *x = strtod(t, NULL);
    return 1;
}

/* Fills p as tsconv_parse fills it from the event's JSON: the annotations'
 * tags and numbers, the set's labels, its visible values in catalogue order
 * (rows of groups are arrays there: left out), then the labels its source
 * writes after the values.  0, or -1 (see tsconv_influx_set). */
static int set_point(ts_point *p, set_text *t, const char *name, double ts, const mset *s,
                     const tsconv_ann *a, const char *keep_tags)
{
    if (!a->p.doc) return -1;
    p->name = name;
    p->doc = NULL;
    p->ts = 0;
    if (isfinite(ts)) {
        char b[64];
        b[fmt_fixed(b, ts, 6)] = 0;
        p->ts = strtod(b, NULL);
    }
    p->ntags = a->p.ntags;
    memcpy(p->tags, a->p.tags, sizeof p->tags[0] * (size_t)a->p.ntags);
    p->nfields = a->p.nfields;
    memcpy(p->fields, a->p.fields, sizeof p->fields[0] * (size_t)a->p.nfields);
    t->len = 0;
    for (int i = 0; i < s->nlabels; i++)
        if (s->labels[i].hidden == MLABEL_SHOWN && add_label(p, t, &s->labels[i], a, keep_tags) < 0)
            return -1;
    for (int id = 0; id < M_COUNT; id++) {
        const metric_def *d = &metric_catalogue[id];
        double x;
        int rc;
        if (!s->v[id].set || (d->flags & MF_HIDDEN) || d->group) continue;
        if ((rc = value_of(s, id, &x)) < 0) return -1;
        if (rc) add_field(p, d->name, x);
    }
    for (int i = 0; i < s->nlabels; i++)
        if (s->labels[i].hidden == MLABEL_AFTER && add_label(p, t, &s->labels[i], a, keep_tags) < 0)
            return -1;
    return 0;
}

/* The point of the set, written as a line (influx) or as data points. */
static int set_write(sbuf *b, int influx, const char *name, double ts, const mset *s,
                     const tsconv_ann *a, const char *keep_tags)
{
    ts_point p;
    set_text t;
    if (set_point(&p, &t, name, ts, s, a, keep_tags) < 0) return -1;
    if (!influx) return tsconv_opentsdb_point(b, &p);
    if (!p.nfields) return 0;
    tsconv_influx_point(b, &p);
    return 1;
}

int tsconv_influx_set(sbuf *b, const char *name, double ts, const mset *s, const tsconv_ann *a,
                      const char *keep_tags)
{
    return set_write(b, 1, name, ts, s, a, keep_tags);
}

int tsconv_opentsdb_set(sbuf *b, const char *name, double ts, const mset *s, const tsconv_ann *a,
                        const char *keep_tags)
{
    return set_write(b, 0, name, ts, s, a, keep_tags);
}
