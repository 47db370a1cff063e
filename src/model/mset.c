/* mset.c — an event in the metric model: its values (by catalogue id) and
 * its members in order, and the JSON writer that prints it (see metric.h).
 * Filled on the sampler thread for every sample: the member list and the
 * string copies are reused from one event to the next, so steady state
 * allocates nothing. */
#include "metric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mset_init(mset *s)
{
    memset(s, 0, sizeof *s);
}

void mset_free(mset *s)
{
    free(s->items);
    arena_free(&s->text);
    memset(s, 0, sizeof *s);
}

void mset_clear(mset *s, const char *event, double ts)
{
    /* only the values that were set: each has its member */
    for (int i = 0; i < s->nitems; i++)
        if (s->items[i].kind == MI_VALUE) memset(&s->v[s->items[i].id], 0, sizeof s->v[0]);
    s->nitems = 0;
    s->nrows = 0;
    s->depth = 0;
    s->open_arr = 0;
    s->oom = 0;
    s->frame = MSET_ANNOTATED;
    s->event = event;
    s->ts = ts;
    arena_reset(&s->text);
}

/* Room for one more member; NULL (and oom) when there is none. */
static mitem *push(mset *s, enum mitem_kind kind, const char *key)
{
    if (s->nitems == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        mitem *n = realloc(s->items, sizeof *n * (size_t)cap);
        if (!n) {
            s->oom = 1;
            return NULL;
        }
        s->items = n;
        s->cap = cap;
    }
    mitem *it = &s->items[s->nitems++];
    memset(it, 0, sizeof *it);
    it->kind = (uint8_t)kind;
    it->key = key;
    return it;
}

/* ---- catalogue values --------------------------------------------------- */

static void set_value(mset *s, metric_id id, mvalue v)
{
    if (!s->v[id].set) {
        mitem *it = push(s, MI_VALUE, NULL);
        if (!it) return;
        it->id = (uint16_t)id;
    }
    s->v[id] = v;
}

void mset_u64(mset *s, metric_id id, uint64_t v)
{
    set_value(s, id, (mvalue){.u = v, .d = (double)v, .set = 1});
}
void mset_f64(mset *s, metric_id id, double v)
{
    set_value(s, id, (mvalue){.d = v, .set = 1});
}
void mset_null(mset *s, metric_id id)
{
    set_value(s, id, (mvalue){.set = 1, .null = 1});
}
void mset_missing(mset *s, metric_id id)
{
    set_value(s, id, (mvalue){.set = 1, .missing = 1});
}

void mset_copy_range(mset *s, const mset *src, metric_id from, metric_id to)
{
    for (int id = from; id <= (int)to; id++)
        if (src->v[id].set) set_value(s, (metric_id)id, src->v[id]);
}

void mset_group(mset *s, metric_id first)
{
    mitem *it = push(s, MI_GROUP, NULL);
    if (it) it->id = (uint16_t)first;
}

mrow *mset_row(mset *s, metric_id first, const char *label)
{
    if (s->nrows >= MSET_MAX_ROWS) return NULL;
    mrow *r = &s->rows[s->nrows++];
    memset(r, 0, sizeof *r);
    r->first = first;
    snprintf(r->label, sizeof r->label, "%s", label);
    return r;
}

void mrow_u64(mrow *r, metric_id id, uint64_t v)
{
    if (r && id >= r->first && id - r->first < MROW_MAX_VALUES)
        r->v[id - r->first] = (mvalue){.u = v, .d = (double)v, .set = 1};
}

int mset_has(const mset *s, metric_id id)
{
    return s->v[id].set && !s->v[id].null;
}
uint64_t mset_raw(const mset *s, metric_id id)
{
    return mset_has(s, id) ? s->v[id].u : 0;
}

double mset_get(const mset *s, metric_id id)
{
    if (!mset_has(s, id)) return 0;
    return metric_catalogue[id].store == MS_U64 ? (double)s->v[id].u : s->v[id].d;
}

double mset_value(const mset *s, metric_id id)
{
    const metric_def *d = &metric_catalogue[id];
    if (!mset_has(s, id)) return 0;
    if (d->store == MS_F64) return s->v[id].d;
    return d->divisor != 1 ? (double)s->v[id].u / d->divisor : (double)s->v[id].u;
}

/* ---- labels ------------------------------------------------------------- */

/* The top-level string or integer member named key, or NULL. */
static mitem *find_label(const mset *s, const char *key)
{
    int depth = 0;
    for (int i = 0; i < s->nitems; i++) {
        mitem *it = &s->items[i];
        if (it->kind == MI_OBJ || it->kind == MI_ARR)
            depth++;
        else if (it->kind == MI_END)
            depth--;
        else if (!depth && (it->kind == MI_STR || it->kind == MI_I64) && it->key &&
                 !strcmp(it->key, key))
            return it;
    }
    return NULL;
}

void mset_label_num(mset *s, const char *key, long long v)
{
    mitem *it = find_label(s, key);
    if (!it && !(it = push(s, MI_I64, key))) return;
    it->kind = MI_I64;
    it->aux = 0;
    it->i = v;
}

void mset_label_str(mset *s, const char *key, const char *v, int hidden)
{
    mitem *it = find_label(s, key);
    if (!it && !(it = push(s, MI_STR, key))) return;
    it->kind = MI_STR;
    it->aux = (uint8_t)hidden;
    it->s = v;
}

const char *mset_label(const mset *s, const char *key)
{
    const mitem *it = find_label(s, key);
    return it && it->kind == MI_STR ? it->s : NULL;
}

long long mset_label_num_get(const mset *s, const char *key)
{
    const mitem *it = find_label(s, key);
    return it && it->kind == MI_I64 ? it->i : 0;
}

/* ---- other members ------------------------------------------------------ */

void mset_put_str(mset *s, const char *key, const char *v)
{
    mitem *it = push(s, MI_STR, key);
    if (it) it->s = v;
}
void mset_put_strn(mset *s, const char *key, const char *v, size_t n)
{
    char *c = arena_alloc(&s->text, n + 1);
    if (!c) {
        s->oom = 1;
        return;
    }
    memcpy(c, v, n);
    c[n] = 0;
    mitem *it = push(s, MI_STR, key);
    if (!it) return;
    it->s = c;
    it->n = (uint32_t)n;
    it->aux = MSTR_LEN;
}
void mset_put_i64(mset *s, const char *key, int64_t v)
{
    mitem *it = push(s, MI_I64, key);
    if (it) it->i = v;
}
void mset_put_u64(mset *s, const char *key, uint64_t v)
{
    mitem *it = push(s, MI_U64, key);
    if (it) it->u = v;
}
void mset_put_fixed(mset *s, const char *key, double v, int decimals)
{
    mitem *it = push(s, MI_FIXED, key);
    if (!it) return;
    it->d = v;
    it->aux = (uint8_t)(decimals < 0 ? 0 : decimals);
}
void mset_put_num(mset *s, const char *key, double v)
{
    mitem *it = push(s, MI_NUM, key);
    if (it) it->d = v;
}
void mset_put_bool(mset *s, const char *key, int v)
{
    mitem *it = push(s, MI_BOOL, key);
    if (it) it->i = v != 0;
}
void mset_put_null(mset *s, const char *key)
{
    push(s, MI_NULL, key);
}

static void open_(mset *s, enum mitem_kind kind, const char *key)
{
    if (!push(s, kind, key)) return;
    if (s->depth < 32 && kind == MI_ARR)
        s->open_arr |= 1u << s->depth;
    else if (s->depth < 32)
        s->open_arr &= ~(1u << s->depth);
    s->depth++;
}
void mset_open_obj(mset *s, const char *key)
{
    open_(s, MI_OBJ, key);
}
void mset_open_arr(mset *s, const char *key)
{
    open_(s, MI_ARR, key);
}
void mset_close(mset *s)
{
    if (s->depth <= 0) return;
    mitem *it = push(s, MI_END, NULL);
    if (!it) return;
    s->depth--;
    it->aux = s->depth < 32 && (s->open_arr >> s->depth & 1u);
}

void mset_put_raw(mset *s, const char *json, size_t n)
{
    mitem *it = push(s, MI_RAW, NULL);
    if (!it) return;
    it->s = json;
    it->n = (uint32_t)n;
}

const char *mset_copy(mset *s, const char *p, size_t n)
{
    const char *c = arena_strndup(&s->text, p, n);
    if (!c) s->oom = 1;
    return c;
}

/* ---- JSON --------------------------------------------------------------- */

static void write_value(jbuf *b, const char *key, const metric_def *d, const mvalue *v)
{
    if (v->null)
        jw_null(b, key);
    else if (d->decimals < 0)
        jw_u64(b, key, v->u);
    else if (d->store == MS_F64)
        jw_fixed(b, key, v->d, d->decimals);
    else
        jw_fixed(b, key, d->divisor != 1 ? (double)v->u / d->divisor : (double)v->u, d->decimals);
}

/* "GROUP":[{LABEL:..,fields..}, ...], every row (none: an empty array). */
static void write_group(jbuf *b, const mset *s, metric_id first)
{
    const metric_def *g = &metric_catalogue[first];
    jw_arr_open(b, g->group);
    for (int i = 0; i < s->nrows; i++) {
        const mrow *r = &s->rows[i];
        if (r->first != first) continue;
        jw_obj_open(b, NULL);
        jw_str(b, g->row_label, r->label);
        for (int k = 0; k < MROW_MAX_VALUES && first + k < M_COUNT; k++) {
            const metric_def *d = &metric_catalogue[first + k];
            if (!d->group || strcmp(d->group, g->group)) break;
            if (r->v[k].set) write_value(b, d->name, d, &r->v[k]);
        }
        jw_obj_close(b);
    }
    jw_arr_close(b);
}

void mset_write_json(jbuf *b, const mset *s)
{
    for (int i = 0; i < s->nitems; i++) {
        const mitem *it = &s->items[i];
        switch (it->kind) {
        case MI_VALUE: {
            const metric_def *d = &metric_catalogue[it->id];
            if (!(d->flags & MF_HIDDEN)) write_value(b, d->name, d, &s->v[it->id]);
            break;
        }
        case MI_GROUP:
            write_group(b, s, (metric_id)it->id);
            break;
        case MI_STR:
            if (it->aux & MLABEL_HIDDEN)
                break;
            else if (it->aux & MSTR_LEN)
                jw_strn(b, it->key, it->s, it->n);
            else
                jw_str(b, it->key, it->s);
            break;
        case MI_I64:
            jw_i64(b, it->key, it->i);
            break;
        case MI_U64:
            jw_u64(b, it->key, it->u);
            break;
        case MI_FIXED:
            jw_fixed(b, it->key, it->d, it->aux);
            break;
        case MI_NUM:
            jw_num(b, it->key, it->d);
            break;
        case MI_BOOL:
            jw_bool(b, it->key, (int)it->i);
            break;
        case MI_NULL:
            jw_null(b, it->key);
            break;
        case MI_OBJ:
            jw_obj_open(b, it->key);
            break;
        case MI_ARR:
            jw_arr_open(b, it->key);
            break;
        case MI_END:
            if (it->aux)
                jw_arr_close(b);
            else
                jw_obj_close(b);
            break;
        case MI_RAW:
            if (!it->n) break;
            if (b->comma) jbuf_putc(b, ',');
            jbuf_put(b, it->s, it->n);
            b->comma = 1;
            break;
        }
    }
}

int mset_number_text(const mset *s, const mitem *it, char *t)
{
    switch (it->kind) {
    case MI_VALUE: {
        const metric_def *d = &metric_catalogue[it->id];
        const mvalue *v = &s->v[it->id];
        if (v->null) return 0;
        if (d->decimals < 0) return (int)fmt_u64(t, v->u);
        double x = mset_value(s, (metric_id)it->id);
        return isfinite(x) ? (int)fmt_fixed(t, x, d->decimals) : 0;
    }
    case MI_I64:
        return (int)fmt_i64(t, it->i);
    case MI_U64:
        return (int)fmt_u64(t, it->u);
    case MI_FIXED:
        return isfinite(it->d) ? (int)fmt_fixed(t, it->d, it->aux) : 0;
    case MI_NUM:
        return isfinite(it->d) ? (int)fmt_num(t, it->d) : 0;
    default:
        return -1;
    }
}

void mset_write_cell(jbuf *b, const mset *s, metric_id id)
{
    const metric_def *d = &metric_catalogue[id];
    char t[64];
    if (!mset_has(s, id) || s->v[id].missing) return;
    if (d->decimals < 0)
        jbuf_put(b, t, fmt_u64(t, s->v[id].u));
    else
        jbuf_put(b, t, fmt_fixed(t, mset_value(s, id), d->decimals));
}
