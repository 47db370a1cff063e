/* mset.c — a sample's set of values and labels, and its text encodings
 * (see metric.h).  Fixed size, no allocation: filled on the sampler thread
 * for every sample. */
#include "metric.h"

#include <stdio.h>
#include <string.h>

void mset_clear(mset *s, double ts)
{
    memset(s, 0, sizeof *s);
    s->ts = ts;
}

void mset_u64(mset *s, metric_id id, uint64_t v)
{
    s->v[id] = (mvalue){.u = v, .d = (double)v, .set = 1};
}
void mset_f64(mset *s, metric_id id, double v)
{
    s->v[id] = (mvalue){.d = v, .set = 1};
}
void mset_null(mset *s, metric_id id)
{
    s->v[id] = (mvalue){.set = 1, .null = 1};
}
void mset_missing(mset *s, metric_id id)
{
    s->v[id] = (mvalue){.set = 1, .missing = 1};
}

static void add_label(mset *s, mlabel l)
{
    for (int i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].key, l.key)) {
            s->labels[i] = l;
            return;
        }
    if (s->nlabels < MSET_MAX_LABELS) s->labels[s->nlabels++] = l;
}

void mset_label_num(mset *s, const char *key, long long v)
{
    add_label(s, (mlabel){.key = key, .num = v, .is_num = 1});
}

void mset_label_str(mset *s, const char *key, const char *v, int hidden)
{
    add_label(s, (mlabel){.key = key, .str = v, .hidden = (uint8_t)hidden});
}

static const mlabel *find_label(const mset *s, const char *key)
{
    for (int i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].key, key)) return &s->labels[i];
    return NULL;
}

const char *mset_label(const mset *s, const char *key)
{
    const mlabel *l = find_label(s, key);
    return l && !l->is_num ? l->str : NULL;
}

long long mset_label_num_get(const mset *s, const char *key)
{
    const mlabel *l = find_label(s, key);
    return l && l->is_num ? l->num : 0;
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

static void write_member(jbuf *b, const mset *s, metric_id id)
{
    const metric_def *d = &metric_catalogue[id];
    const mvalue *v = &s->v[id];
    if (v->null)
        json_null(b, d->name);
    else if (d->decimals < 0)
        json_u64(b, d->name, v->u);
    else
        json_fixed(b, d->name, mset_value(s, id), d->decimals);
}

void mset_write_json_range(jbuf *b, const mset *s, metric_id from, metric_id to)
{
    for (int id = from; id <= (int)to; id++)
        if (s->v[id].set && !(metric_catalogue[id].flags & MF_HIDDEN))
            write_member(b, s, (metric_id)id);
}

void mset_write_labels(jbuf *b, const mset *s)
{
    for (int i = 0; i < s->nlabels; i++) {
        const mlabel *l = &s->labels[i];
        if (l->hidden) continue;
        if (l->is_num)
            json_i64(b, l->key, l->num);
        else
            json_str(b, l->key, l->str);
    }
}

void mset_write_json(jbuf *b, const mset *s)
{
    mset_write_labels(b, s);
    mset_write_json_range(b, s, 0, M_COUNT - 1);
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

/* A row's member: as write_member, the value held in the row. */
static void write_row_member(jbuf *b, const mrow *r, metric_id id)
{
    const metric_def *d = &metric_catalogue[id];
    const mvalue *v = &r->v[id - r->first];
    if (v->null)
        json_null(b, d->name);
    else if (d->decimals < 0)
        json_u64(b, d->name, v->u);
    else if (d->store == MS_F64)
        json_fixed(b, d->name, v->d, d->decimals);
    else
        json_fixed(b, d->name, (double)v->u / d->divisor, d->decimals);
}

void mset_write_json_group(jbuf *b, const mset *s, metric_id first)
{
    const metric_def *g = &metric_catalogue[first];
    json_arr_open(b, g->group);
    for (int i = 0; i < s->nrows; i++) {
        const mrow *r = &s->rows[i];
        if (r->first != first) continue;
        json_obj_open(b, NULL);
        json_str(b, g->row_label, r->label);
        for (int k = 0; k < MROW_MAX_VALUES && first + k < M_COUNT; k++) {
            const metric_def *d = &metric_catalogue[first + k];
            if (!d->group || strcmp(d->group, g->group)) break;
            if (r->v[k].set) write_row_member(b, r, (metric_id)(first + k));
        }
        json_obj_close(b);
    }
    json_arr_close(b);
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
