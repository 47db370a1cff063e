/* event_view.c — the view of a jobscope event (ingest.h) that both readers
 * fill (event_reader.c streaming, event_json.c with jansson) and ingest.c
 * turns into points: its arrays, and the metric catalogue's groups of rows
 * (src/model) that decide which arrays of an event are rows of series. */
#include <stdlib.h>
#include <string.h>
#include "ingest.h"
#include "model/metric.h"
#include "util/grow.h"

const char *const ev_annotations[EV_NANNOT] = {
    "job_id", "site", "wf_uuid", "wf_label", "dag_job_id", "condor_job_id", "xformation", "task_id",
};

void ev_view_reset(ev_view *v)
{
    ev_ctag *ct = v->ctags, *strs = v->strs;
    ev_value *vals = v->vals;
    size_t cc = v->capctags, cv = v->capvals, cs = v->capstrs;
    memset(v, 0, sizeof *v);
    v->ctags = ct;
    v->vals = vals;
    v->strs = strs;
    v->capctags = cc;
    v->capvals = cv;
    v->capstrs = cs;
}

void ev_view_free(ev_view *v)
{
    free(v->ctags);
    free(v->vals);
    free(v->strs);
    memset(v, 0, sizeof *v);
}

ev_value *ev_view_value(ev_view *v)
{
    v->vals = grow_array(v->vals, &v->capvals, v->nvals + 1, sizeof *v->vals, &v->oom);
    if (v->oom) return NULL;
    ev_value *x = &v->vals[v->nvals++];
    memset(x, 0, sizeof *x);
    return x;
}

ev_ctag *ev_view_ctag(ev_view *v)
{
    v->ctags = grow_array(v->ctags, &v->capctags, v->nctags + 1, sizeof *v->ctags, &v->oom);
    if (v->oom) return NULL;
    ev_ctag *x = &v->ctags[v->nctags++];
    memset(x, 0, sizeof *x);
    return x;
}

ev_ctag *ev_view_str(ev_view *v)
{
    v->strs = grow_array(v->strs, &v->capstrs, v->nstrs + 1, sizeof *v->strs, &v->oom);
    if (v->oom) return NULL;
    ev_ctag *x = &v->strs[v->nstrs++];
    memset(x, 0, sizeof *x);
    return x;
}

int ev_span_is(ev_span s, const char *lit)
{
    size_t l = strlen(lit);
    return s.s && s.n == l && !memcmp(s.s, lit, l);
}

int ev_not_a_value(const char *k, size_t n)
{
    switch (n) {
    case 2:
        return (k[0] == 't' && k[1] == 's') || (k[0] == 'i' && k[1] == 'd');
    case 3:
        return !memcmp(k, "seq", 3);
    case 4:
        return !memcmp(k, "rank", 4) || !memcmp(k, "tags", 4);
    case 5:
        return !memcmp(k, "batch", 5);
    }
    return 0;
}

/* ---- the metric catalogue's groups of rows ---- */

const metric_def *ev_group(ev_span event, const char *key, size_t klen)
{
    if (!event.s) return NULL;
    for (int i = 0; i < M_COUNT; i++) {
        const metric_def *d = &metric_catalogue[i];
        if (d->group && strlen(d->group) == klen && !memcmp(d->group, key, klen) &&
            ev_span_is(event, d->event))
            return d;
    }
    return NULL;
}

const char *ev_group_label(const metric_def *g)
{
    return g->row_label;
}

const metric_def *ev_row_field(const metric_def *g, const char *name, size_t n)
{
    for (int i = 0; i < M_COUNT; i++) {
        const metric_def *d = &metric_catalogue[i];
        if (d->group == g->group && d->event == g->event && strlen(d->name) == n &&
            !memcmp(d->name, name, n))
            return d;
    }
    return NULL;
}
