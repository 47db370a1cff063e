/* event_json.c — jansson's reading of a jobscope event into an ev_view
 * (ingest.h), for the lines the streaming reader (event_reader.c) leaves:
 * nested objects flattened with '.' (four levels at most), keys given twice
 * (the first position, the last value), and every syntax error, which
 * jansson names. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include "ingest.h"
#include "util/arena.h"

#define MAX_NAME 512 /* as ingest.c: a metric name this long is not stored */

static ev_span jstr(json_t *x)
{
    return json_is_string(x) ? (ev_span){json_string_value(x), json_string_length(x)}
                             : (ev_span){NULL, 0};
}

/* An integer's text as "%lld" prints it (into the line's arena). */
static ev_span int_text(arena *a, json_t *x)
{
    char num[32];
    int n = snprintf(num, sizeof num, "%lld", (long long)json_integer_value(x));
    return (ev_span){arena_strndup(a, num, (size_t)n), (size_t)n};
}

/* Numbers at x, a member of path `key` (objects flattened with '.'). */
static void flatten(ev_view *v, arena *a, size_t evlen, ev_span key, json_t *x, int depth)
{
    if (json_is_number(x)) {
        ev_value *e = ev_view_value(v);
        if (e) {
            e->key = key;
            e->v = json_number_value(x);
        }
        return;
    }
    if (!json_is_object(x) || depth > 3) return;
    const char *k;
    json_t *c;
    json_object_foreach(x, k, c)
    {
        if (!json_is_number(c) && !json_is_object(c)) continue;
        size_t kl = strlen(k), pl = key.n + 1 + kl;
        if (evlen + 1 + pl >= MAX_NAME) continue;
        char *path = arena_alloc(a, pl + 1);
        if (!path) {
            v->oom = 1;
            return;
        }
        memcpy(path, key.s, key.n);
        path[key.n] = '.';
        memcpy(path + key.n + 1, k, kl + 1);
        flatten(v, a, evlen, (ev_span){path, pl}, c, depth + 1);
    }
}

static void json_rows(ev_view *v, const struct metric_def *g, const char *key, json_t *rows)
{
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        ev_span label = jstr(json_object_get(row, ev_group_label(g)));
        if (!label.s) continue;
        const char *fk;
        json_t *fx;
        json_object_foreach(row, fk, fx)
        {
            if (!json_is_number(fx) || !ev_row_field(g, fk, strlen(fk))) continue;
            ev_value *e = ev_view_value(v);
            if (!e) return;
            e->key = (ev_span){key, strlen(key)};
            e->field = (ev_span){fk, strlen(fk)};
            e->label = label;
            e->v = json_number_value(fx);
        }
    }
}

/* The view of a line jansson parsed; -1 when it is not an object. */
static int json_view(ev_view *v, arena *a, json_t *d)
{
    if (!json_is_object(d)) return -1;
    v->event = jstr(json_object_get(d, "event"));
    json_t *t = json_object_get(d, "ts");
    if (json_is_number(t)) {
        v->has_ts = 1;
        v->ts = json_number_value(t);
    }
    v->hostname = jstr(json_object_get(d, "hostname"));
    v->host = jstr(json_object_get(d, "host"));
    for (int i = 0; i < EV_NANNOT; i++) v->annot[i] = jstr(json_object_get(d, ev_annotations[i]));
    v->uuid = jstr(json_object_get(d, "uuid"));
    json_t *r = json_object_get(d, "rank"), *id = json_object_get(d, "id");
    if (json_is_integer(r)) v->rank = int_text(a, r);
    v->gpu = json_is_integer(id) ? int_text(a, id) : jstr(id);
    v->mname = jstr(json_object_get(d, "name"));
    json_t *mv = json_object_get(d, "value");
    if (json_is_number(mv)) {
        v->has_mvalue = 1;
        v->mvalue = json_number_value(mv);
    }
    const char *k;
    json_t *x;
    json_t *custom = json_object_get(d, "tags");
    if (json_is_object(custom)) {
        json_object_foreach(custom, k, x)
        {
            if (!json_is_string(x) && !json_is_number(x)) continue;
            ev_ctag *c = ev_view_ctag(v);
            if (!c) break;
            c->k = (ev_span){k, strlen(k)};
            c->v = jstr(x);
            c->is_num = json_is_number(x);
            c->num = c->is_num ? json_number_value(x) : 0;
        }
    }
    size_t evlen = v->event.s ? v->event.n : 0;
    json_object_foreach(d, k, x)
    {
        size_t kl = strlen(k);
        if (!ev_not_a_value(k, kl) && evlen + 1 + kl < MAX_NAME)
            flatten(v, a, evlen, (ev_span){k, kl}, x, 0);
    }
    /* then the rows of its catalogue groups */
    json_object_foreach(d, k, x)
    {
        size_t kl = strlen(k);
        const struct metric_def *g = json_is_array(x) ? ev_group(v->event, k, kl) : NULL;
        if (g && !ev_not_a_value(k, kl)) json_rows(v, g, k, x);
    }
    return 0;
}

int event_json_read(const char *p, size_t len, ev_view *v, arena *a, void **doc, char *err,
                    size_t errlen)
{
    json_error_t je;
    json_t *d = json_loadb(p, len, 0, &je);
    *doc = d;
    if (!d) {
        snprintf(err, errlen, "%s", je.text);
        return -2;
    }
    return json_view(v, a, d) < 0 ? -1 : 0;
}

void event_json_free(void *doc)
{
    json_decref(doc);
}
