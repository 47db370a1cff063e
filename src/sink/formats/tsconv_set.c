/* tsconv_set.c — the value-set path of the time-series encoders (see
 * tsconv.h): an event's mset becomes the same ts_point that tsconv_parse
 * would read from its JSON text -- the annotations (parsed once,
 * tsconv_ann), then the set's members in order, each number read back from
 * the text the JSON writer prints -- and goes through the same writers
 * (tsconv_influx_point, tsconv_opentsdb_point, remote_write_point).  Runs on
 * the producer's thread when net/tsdb.c queues the event: no parsing, and
 * no allocation beyond the caller's reused output buffer.  Built into the
 * network plugin with tsconv.c; it needs no jansson. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tsconv.h"
#include "sbuf.h"
#include "../../model/metric.h"

/* ---- the annotations ----------------------------------------------------- */

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

/* ---- strings ------------------------------------------------------------- */

static const char *text_put(tsconv_text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > sizeof t->buf) return NULL;
    char *p = t->buf + t->len;
    memcpy(p, s, n);
    p[n] = 0;
    t->len += n + 1;
    return p;
}

/* A string as the JSON path reads it back: jw_escape writes U+FFFD for
 * each byte that is not UTF-8.  NULL when there is no room. */
static const char *utf8_text(tsconv_text *t, const char *v)
{
    const unsigned char *u = (const unsigned char *)v;
    size_t n = strlen(v), i = 0;
    while (i < n) {
        size_t l = u[i] < 0x80 ? 1 : jw_utf8_len(u + i, n - i);
        if (!l) break;
        i += l;
    }
    if (i == n) return v;
    char out[1024];
    size_t o = 0;
    for (i = 0; i < n && o + 4 < sizeof out;) {
        size_t l = u[i] < 0x80 ? 1 : jw_utf8_len(u + i, n - i);
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

/* ---- the point ----------------------------------------------------------- */

static int is_id_key(const char *k)
{
    return !strcmp(k, "rank") || !strcmp(k, "pid") || !strcmp(k, "id");
}

static int has_tag(const ts_point *p, const char *k)
{
    for (int i = 0; i < p->ntags; i++)
        if (!strcmp(p->tags[i].key, k)) return 1;
    return 0;
}

/* A non-empty string as tag k, as tsconv.c's add_string_tag: unless listed
 * out or already there.  -1: no room for its text. */
static int string_tag(ts_point *p, tsconv_text *t, const char *k, const char *v,
                      const char *keep_tags)
{
    if (!v || !*v) return 0;
    const char *key = utf8_text(t, k), *val;
    if (!key) return -1;
    if (!tsconv_listed(keep_tags, key) || p->ntags >= 64 || has_tag(p, key)) return 0;
    if (!(val = utf8_text(t, v))) return -1;
    p->tags[p->ntags].key = key;
    p->tags[p->ntags++].val = val;
    return 0;
}

/* A top-level number, as tsconv_parse reads its text: rank, pid and id are
 * tags (an integer as %lld, a real as %.17g), others fields.  -1: the JSON
 * path would read it otherwise (an integer jansson refuses). */
static int number(ts_point *p, tsconv_text *t, const mset *s, const mitem *it, const char *k,
                  const char *keep_tags)
{
    char txt[64];
    int n = mset_number_text(s, it, txt);
    if (n <= 0) return 0; /* null */
    txt[n] = 0;
    int real = strpbrk(txt, ".eEni") != NULL;
    if (!real) { /* an integer for jansson: within int64, or the document is refused */
        char *end;
        errno = 0;
        long long v = strtoll(txt, &end, 10);
        if (errno || *end) return -1;
        (void)v;
    }
    double x = strtod(txt, NULL);
    if (is_id_key(k)) {
        if (!tsconv_listed(keep_tags, k) || p->ntags >= 64) return 0;
        char buf[64];
        int l = real ? snprintf(buf, sizeof buf, "%.17g", x)
                     : snprintf(buf, sizeof buf, "%lld", strtoll(txt, NULL, 10));
        const char *v = text_put(t, buf, (size_t)l);
        if (!v) return -1;
        p->tags[p->ntags].key = k;
        p->tags[p->ntags++].val = v;
        return 0;
    }
    if (isfinite(x) && p->nfields < 256) {
        p->fields[p->nfields].key = k;
        p->fields[p->nfields++].val = x;
    }
    return 0;
}

/* The key of a top-level member as its JSON has it (NULL: not written). */
static const char *member_key(const mitem *it)
{
    if (it->kind == MI_VALUE) {
        const metric_def *d = &metric_catalogue[it->id];
        return d->flags & MF_HIDDEN ? NULL : d->name;
    }
    if (it->kind == MI_GROUP) return metric_catalogue[it->id].group;
    if (it->kind == MI_STR && (it->aux & MLABEL_HIDDEN)) return NULL;
    return it->key;
}

/* Is a top-level key of the event there twice (jansson keeps one of the
 * two, in the first one's place)?  Against the frame's members, and the
 * set's own: the catalogue's values are distinct by id, the frame was
 * checked against the catalogue once (tsconv_ann_init), so only the other
 * members are compared. */
static int twice(const mset *s, const tsconv_ann *a, int upto, const char *k)
{
    if (!strcmp(k, "event") || !strcmp(k, "ts") || !strcmp(k, "seq")) return 1;
    if (s->frame != MSET_BARE && tsconv_has_key(&a->p, k) &&
        !(s->frame == MSET_UNTAGGED && !strcmp(k, "tags")))
        return 1;
    /* a catalogue field's name that the event carries as a value */
    const metric_def *d = metric_lookup(k);
    if (d && !d->group && !strcmp(d->name, k) && s->v[d - metric_catalogue].set &&
        !(d->flags & MF_HIDDEN))
        return 1;
    int depth = 0;
    for (int i = 0; i < upto; i++) {
        const mitem *it = &s->items[i];
        const char *o = depth || it->kind == MI_END || it->kind == MI_VALUE ? NULL : member_key(it);
        if (o && !strcmp(o, k)) return 1;
        if (it->kind == MI_OBJ || it->kind == MI_ARR) depth++;
        if (it->kind == MI_END) depth--;
    }
    return 0;
}

/* The members of the event's own "tags" object (items[i] opens it): its
 * strings are tags.  Returns the index of its end, or -1. */
static int tags_object(ts_point *p, tsconv_text *t, const mset *s, int i, const char *keep_tags)
{
    int depth = 0, start = i + 1;
    for (i = start; i < s->nitems; i++) {
        const mitem *it = &s->items[i];
        if (it->kind == MI_END && depth-- == 0) return i;
        if (it->kind == MI_OBJ || it->kind == MI_ARR) depth++;
        if (depth || it->kind == MI_END) continue;
        for (int j = start; j < i; j++) /* a key twice: jansson keeps the last */
            if (s->items[j].key && it->key && !strcmp(s->items[j].key, it->key)) return -1;
        if (it->kind == MI_STR && !(it->aux & MLABEL_HIDDEN) &&
            string_tag(p, t, it->key, it->s, keep_tags) < 0)
            return -1;
    }
    return -1;
}

int tsconv_set_point(ts_point *p, tsconv_text *t, const mset *s, const tsconv_ann *a,
                     const char *keep_tags)
{
    if (!a->p.doc || s->oom) return -1;
    p->name = s->event;
    p->doc = NULL;
    p->ts = 0;
    if (isfinite(s->ts)) {
        char b[64];
        b[fmt_fixed(b, s->ts, 6)] = 0;
        p->ts = strtod(b, NULL);
    }
    p->ntags = s->frame == MSET_BARE ? 0 : s->frame == MSET_UNTAGGED ? a->p.tags_from : a->p.ntags;
    memcpy(p->tags, a->p.tags, sizeof p->tags[0] * (size_t)p->ntags);
    p->nfields = s->frame == MSET_BARE ? 0 : a->p.nfields;
    memcpy(p->fields, a->p.fields, sizeof p->fields[0] * (size_t)p->nfields);
    p->tags_from = p->ntags;
    t->len = 0;
    int depth = 0;
    for (int i = 0; i < s->nitems; i++) {
        const mitem *it = &s->items[i];
        if (it->kind == MI_RAW) return -1; /* JSON text of its own: read as such */
        if (it->kind == MI_STR && (it->aux & MSTR_LEN) && memchr(it->s, 0, it->n))
            return -1; /* \u0000: jansson refuses the document */
        if (it->kind == MI_END) {
            depth--;
            continue;
        }
        if (depth) {
            if (it->kind == MI_OBJ || it->kind == MI_ARR) depth++;
            continue;
        }
        const char *k = member_key(it);
        if (it->kind != MI_VALUE && k && twice(s, a, i, k)) return -1;
        switch (it->kind) {
        case MI_OBJ:
            if (!strcmp(k, "tags")) {
                p->tags_from = p->ntags;
                if ((i = tags_object(p, t, s, i, keep_tags)) < 0) return -1;
                continue;
            }
            depth++;
            break;
        case MI_ARR:
            depth++;
            break;
        case MI_STR:
            if (k && tsconv_string_tag(k) && string_tag(p, t, k, it->s, keep_tags) < 0) return -1;
            break;
        case MI_VALUE:
            if (k && number(p, t, s, it, k, keep_tags) < 0) return -1;
            break;
        case MI_I64:
        case MI_U64:
        case MI_FIXED:
        case MI_NUM:
            if (number(p, t, s, it, k, keep_tags) < 0) return -1;
            break;
        default: /* booleans, null, the rows of a group: left out */
            break;
        }
    }
    return 0;
}

/* The point of the set, written as a line (influx) or as data points. */
static int set_write(sbuf *b, int influx, const mset *s, const tsconv_ann *a, const char *keep_tags)
{
    ts_point p;
    tsconv_text t;
    if (tsconv_set_point(&p, &t, s, a, keep_tags) < 0) return -1;
    if (!influx) return tsconv_opentsdb_point(b, &p);
    if (!p.nfields) return 0;
    tsconv_influx_point(b, &p);
    return 1;
}

int tsconv_influx_set(sbuf *b, const mset *s, const tsconv_ann *a, const char *keep_tags)
{
    return set_write(b, 1, s, a, keep_tags);
}

int tsconv_opentsdb_set(sbuf *b, const mset *s, const tsconv_ann *a, const char *keep_tags)
{
    return set_write(b, 0, s, a, keep_tags);
}
