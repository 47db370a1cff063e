/* ingest.c — jobscope events into points (server_ingest_event,
 * server_ingest_ndjson; ingest.h): the rule of server.h.
 *
 * Names follow the OpenTSDB output (util/series_name.h): a numeric member
 * is metric "<event>.<member>"; numbers inside objects are flattened with
 * '.' ("jobscope.start.rlimits.nofile.soft", four levels deep at most);
 * custom metrics (event jobscope.metric) are "jobscope.metric.<name>"; a
 * group of rows the metric catalogue knows (src/model: "cg_io", one row
 * per device) gives one series per row and catalogue field,
 * "<event>.<group>.<field>" (the catalogue's series name), tagged with the
 * row's label (dev=8:0), after the event's other points.  Characters outside [A-Za-z0-9-_./] become
 * '_'.
 *
 * Each line is read by the streaming reader (event_reader.c) when it has a
 * known shape, else by jansson (event_json.c); both fill an ev_view, which
 * one rule (view_points) turns into points.  Strings are interned per request, and
 * consecutive events with the same tags share one tag array, so the store
 * and the live values do their per-series work once per run of points.
 * Points go to the store in slices, with one wait for durability at the
 * end. */
#include "ingest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/metric.h"
#include "server.h"
#include "server/forward.h" /* server_ingest_in_event */
#include "util/arena.h"
#include "util/grow.h"
#include "util/intern.h"
#include "util/series_name.h"

#define MAX_EV_TAGS     32
#define MAX_NAME        512 /* a metric name this long or longer is not stored */
#define NAMES_CACHED    32  /* metric names remembered by their place in the event */
#define MAX_CACHED_NAME 64
#define SLICE_POINTS    16384 /* points handed to the store at once */

/* ---- a request's points ---- */

typedef struct line_ref {
    const char *p;
    size_t len;
    const char *job_end; /* a jobscope.end event's job (interned) */
    int has_f;           /* f: read by the streaming reader (f.m: members + m0) */
    server_event_fields f;
    size_t m0;
} line_ref;

typedef struct ingest_batch {
    store_point *pts;
    size_t n, cap, total;
    intern_table strs;     /* the request's strings, each distinct one once */
    arena tagsets;         /* its tag arrays */
    const store_tag *prev; /* the last event's tags */
    int nprev;
    line_ref *lines;
    size_t nlines, caplines;
    server_member *members; /* the lines' fields for the event hooks */
    size_t nmembers, capmembers;
    ev_view view;
    jread jr;       /* the streaming reader's scratch */
    ev_shape shape; /* ... and the shape of the line before */
    arena line;     /* jansson's paths and integers, per line */
    int oom;
    /* the metric of the last event's i-th value, by its raw name: the
     * next event mostly has the same members in the same order */
    struct {
        size_t n;
        const char *metric;
        char raw[MAX_CACHED_NAME];
    } names[NAMES_CACHED];
} ingest_batch;

/* The request's copy of s[0..n), each distinct string once. */
static const char *intern(ingest_batch *b, const char *s, size_t n)
{
    const char *c = intern_get(&b->strs, s, n);
    if (!c) b->oom = 1;
    return c;
}

/* A metric name: the request's copy of the cleaned name. */
static const char *metric_name(ingest_batch *b, const char *raw, size_t n)
{
    char clean[MAX_NAME];
    memcpy(clean, raw, n);
    clean[n] = 0;
    series_name_clean(clean);
    return intern(b, clean, n);
}

/* a[0..n) == b[0..n), a word at a time (names of 20-40 bytes: no call) */
static inline int span_eq(const char *a, const char *b, size_t n)
{
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
    }
    while (n--)
        if (*a++ != *b++) return 0;
    return 1;
}

/* metric_name of an event's i-th value, through the cache of the last
 * event's names (the same raw name is the same metric). */
static const char *metric_name_at(ingest_batch *b, size_t i, const char *raw, size_t n)
{
    if (i >= NAMES_CACHED || n > MAX_CACHED_NAME) return metric_name(b, raw, n);
    if (b->names[i].metric && b->names[i].n == n && span_eq(b->names[i].raw, raw, n))
        return b->names[i].metric;
    const char *m = metric_name(b, raw, n);
    if (m) {
        memcpy(b->names[i].raw, raw, n);
        b->names[i].n = n;
        b->names[i].metric = m;
    }
    return m;
}

/* Adds tag k=v unless there are MAX_EV_TAGS already, v is empty, or a tag
 * whose (cleaned) key is k exists; the key is cleaned, the value cut to
 * 256 bytes. */
static void add_tag(ingest_batch *b, store_tag *t, int *n, const char *k, size_t kl, const char *v,
                    size_t vl)
{
    if (*n >= MAX_EV_TAGS || !v || !vl) return;
    for (int i = 0; i < *n; i++)
        if (strlen(t[i].key) == kl && !memcmp(t[i].key, k, kl)) return;
    char buf[MAX_NAME], *key = kl < sizeof buf ? buf : malloc(kl + 1);
    if (!key) {
        b->oom = 1;
        return;
    }
    memcpy(key, k, kl);
    key[kl] = 0;
    series_name_clean(key);
    const char *ik = intern(b, key, kl), *iv = intern(b, v, vl > 256 ? 256 : vl);
    if (key != buf) free(key);
    if (ik && iv) t[(*n)++] = (store_tag){ik, iv};
}

static void add_tag_span(ingest_batch *b, store_tag *t, int *n, const char *k, ev_span v)
{
    add_tag(b, t, n, k, strlen(k), v.s, v.n);
}

/* The tag array of these tags: the last event's when they are the same. */
static const store_tag *keep_tags(ingest_batch *b, const store_tag *t, int n)
{
    if (b->prev && b->nprev == n && !memcmp(b->prev, t, (size_t)n * sizeof *t)) return b->prev;
    store_tag *k = (store_tag *)(void *)arena_alloc(&b->tagsets, (size_t)n * sizeof *t + 8);
    if (!k) {
        b->oom = 1;
        return NULL;
    }
    k = (store_tag *)(((uintptr_t)k + 7) & ~(uintptr_t)7);
    memcpy(k, t, (size_t)n * sizeof *t);
    b->prev = k;
    b->nprev = n;
    return k;
}

static void add_point(ingest_batch *b, const char *metric, const store_tag *tags, int ntags,
                      int64_t ts_ms, double v)
{
    if (!isfinite(v) || !metric || !tags) return;
    b->pts = grow_array(b->pts, &b->cap, b->n + 1, sizeof *b->pts, &b->oom);
    if (b->oom) return;
    b->pts[b->n++] = (store_point){metric, tags, ntags, ts_ms, v};
}

/* The rule: the points of one event.  -1 when it is not a jobscope event
 * (no "event" string, or a "ts" outside the years 0001-9999). */
static int view_points(ingest_batch *b, const ev_view *v, int64_t now_ms, const char **job_end)
{
    if (!v->event.s || !v->event.n) return -1;
    if (v->has_ts && !server_valid_ts_ms(v->ts * 1e3)) return -1;
    int64_t ts_ms = v->has_ts ? (int64_t)llround(v->ts * 1e3) : now_ms;

    store_tag t[MAX_EV_TAGS + 1];
    int n = 0;
    add_tag_span(b, t, &n, "host", v->hostname.s ? v->hostname : v->host);
    for (int i = 0; i < EV_NANNOT; i++) add_tag_span(b, t, &n, ev_annotations[i], v->annot[i]);
    add_tag_span(b, t, &n, "rank", v->rank);
    add_tag_span(b, t, &n, "gpu", v->gpu);
    add_tag_span(b, t, &n, "gpu_uuid", v->uuid);
    for (size_t i = 0; i < v->nctags; i++) {
        const ev_ctag *c = &v->ctags[i];
        char num[64];
        ev_span val = c->v;
        if (c->is_num) val = (ev_span){num, (size_t)snprintf(num, sizeof num, "%.17g", c->num)};
        add_tag(b, t, &n, c->k.s, c->k.n, val.s, val.n);
    }
    const store_tag *tags = keep_tags(b, t, n);

    char name[MAX_NAME];
    size_t el = v->event.n;
    const char *row_label = NULL;
    const store_tag *row_tags = NULL;
    int rn = 0;
    if (ev_span_is(v->event, "jobscope.metric")) {
        if (v->mname.s && v->has_mvalue) {
            int l =
                snprintf(name, sizeof name, "jobscope.metric.%.*s", (int)v->mname.n, v->mname.s);
            size_t len = l < 0 ? 0 : (size_t)l >= sizeof name ? sizeof name - 1 : (size_t)l;
            add_point(b, metric_name(b, name, len), tags, n, ts_ms, v->mvalue);
        }
    } else {
        for (size_t i = 0; i < v->nvals; i++) {
            const ev_value *x = &v->vals[i];
            size_t len = el + 1 + x->key.n + (x->field.s ? 1 + x->field.n : 0);
            if (len >= MAX_NAME) continue;
            memcpy(name, v->event.s, el);
            name[el] = '.';
            memcpy(name + el + 1, x->key.s, x->key.n);
            if (x->field.s) {
                name[el + 1 + x->key.n] = '.';
                memcpy(name + el + 2 + x->key.n, x->field.s, x->field.n);
            }
            const char *metric = metric_name_at(b, i, name, len);
            if (!x->label.s) {
                add_point(b, metric, tags, n, ts_ms, x->v);
                continue;
            }
            /* a row of a catalogue group: the event's tags and its label
             * (the fields of one row share them) */
            if (x->label.s != row_label) {
                const metric_def *g = ev_group(v->event, x->key.s, x->key.n);
                store_tag rt[MAX_EV_TAGS + 1];
                rn = n < MAX_EV_TAGS ? n : MAX_EV_TAGS - 1; /* the label always has room */
                memcpy(rt, t, (size_t)rn * sizeof *t);
                add_tag(b, rt, &rn, g->row_label, strlen(g->row_label), x->label.s, x->label.n);
                row_tags = keep_tags(b, rt, rn);
                row_label = x->label.s;
            }
            add_point(b, metric, row_tags, rn, ts_ms, x->v);
        }
        if (row_label) { /* the next event compares with this event's own tags */
            b->prev = tags;
            b->nprev = n;
        }
    }
    if (ev_span_is(v->event, "jobscope.end") && v->annot[0].s)
        *job_end = intern(b, v->annot[0].s, v->annot[0].n);
    return 0;
}

/* The event's fields (server.h) from the streaming reader's view: 1, or 0
 * when a span is not in the line [p, p+l) (an unescaped string) and the
 * hooks read the text themselves. */
static int keep_fields(ingest_batch *b, const ev_view *v, const char *p, size_t l, line_ref *out)
{
#define IN(x) (!(x).s || ((x).s >= p && (x).s + (x).n <= p + l))
    size_t n = v->nstrs + v->nvals + v->nctags, m0 = b->nmembers;
    b->members = grow_array(b->members, &b->capmembers, m0 + n, sizeof *b->members, &b->oom);
    if (b->oom || !IN(v->rank)) return 0;
    server_member *m = b->members + m0;
    for (size_t i = 0; i < v->nstrs; i++, m++) {
        const ev_ctag *c = &v->strs[i];
        if (!IN(c->k) || !IN(c->v)) return 0;
        *m = (server_member){c->k.s, c->v.s, c->k.n, c->v.n, 0, NULL, 0, 0};
    }
    for (size_t i = 0; i < v->nvals; i++) {
        const ev_value *x = &v->vals[i];
        if (x->field.s) continue; /* a row of a group */
        if (!IN(x->key) || !IN(x->itext)) return 0;
        *m++ = (server_member){x->key.s, NULL, x->key.n, 0, x->v, x->itext.s, x->itext.n, 0};
    }
    for (size_t i = 0; i < v->nctags; i++, m++) {
        const ev_ctag *c = &v->ctags[i];
        if (!IN(c->k) || (!c->is_num && !IN(c->v))) return 0;
        *m = (server_member){
            c->k.s, c->is_num ? NULL : c->v.s, c->k.n, c->is_num ? 0 : c->v.n, c->num, NULL, 0, 1};
    }
#undef IN
    out->f = (server_event_fields){v->has_ts, v->ts, v->rank.s,
                                   v->rank.n, NULL,  (size_t)(m - (b->members + m0))};
    out->m0 = m0;
    b->nmembers = m0 + out->f.n;
    return 1;
}

/* One line: its view by the streaming reader, else by jansson (which
 * names a syntax error), then its points.  0, or -1 when it is not an
 * event (the first error in err). */
static int line_points(ingest_batch *b, const char *p, size_t l, int64_t now_ms, unsigned flags,
                       size_t lineno, char *err, size_t errlen)
{
    ev_view *v = &b->view;
    ev_view_reset(v);
    const char *job_end = NULL;
    int rc, streamed = 0;
    if (!(flags & INGEST_JANSSON_ONLY) && event_reader_next(&b->shape, &b->jr, p, l, v) == 1) {
        rc = view_points(b, v, now_ms, &job_end);
        streamed = 1;
    } else {
        void *doc = NULL;
        char why[200] = "";
        ev_view_reset(v);
        arena_reset(&b->line);
        rc = event_json_read(p, l, v, &b->line, &doc, why, sizeof why);
        if (rc == 0) rc = view_points(b, v, now_ms, &job_end);
        if (rc == -2 && errlen) snprintf(err, errlen, "line %zu: %s", lineno, why);
        event_json_free(doc);
    }
    if (v->oom) b->oom = 1;
    if (rc == -1 && errlen)
        snprintf(err, errlen,
                 "line %zu: not a jobscope event (an object with \"event\" and a \"ts\" in "
                 "seconds within the years 0001 to 9999)",
                 lineno);
    if (rc < 0) return -1;
    b->lines = grow_array(b->lines, &b->caplines, b->nlines + 1, sizeof *b->lines, &b->oom);
    if (b->oom) return 0;
    line_ref *lr = &b->lines[b->nlines++];
    *lr = (line_ref){p, l, job_end, 0, {0}, 0};
    lr->has_f = streamed && keep_fields(b, v, p, l, lr);
    return 0;
}

/* Reads body line by line; to_store (may be NULL) takes the points every
 * SLICE_POINTS and at the end.  0, -1 out of memory, -2 store failed. */
static int read_body(ingest_batch *b, const char *body, size_t len, int64_t now_ms, unsigned flags,
                     size_t *ok, size_t *bad, char *err, size_t errlen,
                     int (*to_store)(void *arg, ingest_batch *b), void *arg)
{
    *ok = *bad = 0;
    if (errlen) err[0] = 0;
    /* room at once for what a body this long usually holds (an event of
     * about 15 members in 250 bytes), capped: grown from 64 entries, the
     * members, points and lines were copied six or seven times a request */
    size_t est = len / 16 < 65536 ? len / 16 : 65536;
    b->members = grow_array(b->members, &b->capmembers, est, sizeof *b->members, &b->oom);
    b->pts = grow_array(b->pts, &b->cap, est, sizeof *b->pts, &b->oom);
    b->lines = grow_array(b->lines, &b->caplines, est / 16, sizeof *b->lines, &b->oom);
    for (size_t off = 0; off < len && !b->oom;) {
        const char *p = body + off;
        const char *nl = memchr(p, '\n', len - off);
        size_t l = nl ? (size_t)(nl - p) : len - off;
        off += l + (nl ? 1 : 0);
        size_t a = 0;
        while (a < l && (p[a] == ' ' || p[a] == '\t' || p[a] == '\r')) a++;
        if (a == l) continue;
        if (line_points(b, p, l, now_ms, flags, *ok + *bad + 1, *bad ? NULL : err,
                        *bad ? 0 : errlen) < 0)
            (*bad)++;
        else
            (*ok)++;
        if (to_store && b->n >= SLICE_POINTS && to_store(arg, b) < 0) return -2;
    }
    if (b->oom) return -1;
    if (to_store && to_store(arg, b) < 0) return -2;
    return 0;
}

static void batch_free(ingest_batch *b)
{
    free(b->pts);
    free(b->lines);
    free(b->members);
    intern_free(&b->strs);
    arena_free(&b->tagsets);
    arena_free(&b->line);
    jread_free(&b->jr);
    ev_view_free(&b->view);
    free(b);
}

int ingest_ndjson_points(const char *body, size_t len, int64_t now_ms, unsigned flags,
                         ingest_result *res)
{
    memset(res, 0, sizeof *res);
    ingest_batch *b = calloc(1, sizeof *b);
    if (!b) return -1;
    res->b = b;
    if (read_body(b, body, len, now_ms, flags, &res->accepted, &res->failed, res->err,
                  sizeof res->err, NULL, NULL) < 0)
        return -1;
    res->pts = b->pts;
    res->n = b->n;
    return 0;
}

void ingest_result_free(ingest_result *res)
{
    if (res->b) batch_free(res->b);
    memset(res, 0, sizeof *res);
}

/* ---- into the store ---- */

/* Set while an event's points go through the points hooks: forwarders to
 * event destinations send the event itself instead (forward.h). */
static __thread int in_event;
int server_ingest_in_event(void)
{
    return in_event;
}

typedef struct store_ctx {
    server *s;
    uint64_t ticket;
    char *err;
    size_t errlen;
} store_ctx;

/* A slice to the store (durable later, at server_ingest_sync). */
static int store_slice(void *arg, ingest_batch *b)
{
    store_ctx *c = arg;
    uint64_t t = 0;
    in_event = 1;
    int rc = server_ingest_points_nowait(c->s, b->pts, b->n, &t, c->err, c->errlen);
    in_event = 0;
    if (t) c->ticket = t;
    b->total += b->n;
    b->n = 0;
    return rc;
}

int server_ingest_ndjson(server *s, const char *body, size_t len, size_t *accepted, size_t *failed,
                         char *err, size_t errlen)
{
    ingest_batch *b = calloc(1, sizeof *b);
    size_t ok = 0, bad = 0;
    char why[256] = "";
    store_ctx sc = {s, 0, why, sizeof why};
    int rc =
        b ? read_body(b, body, len, server_now_ms(), 0, &ok, &bad, err, errlen, store_slice, &sc)
          : -1;
    if (rc == 0 && server_ingest_sync(s, sc.ticket, why, sizeof why) < 0) rc = -2;
    if (rc == -1) snprintf(err, errlen, "out of memory");
    if (rc == -2) snprintf(err, errlen, "%s", why);
    int npts = b ? (int)b->total : 0;
    if (rc == 0) {
        server_stat_add(s, SERVER_STAT_EVENTS, ok);
        for (size_t i = 0; i < b->nlines; i++) {
            line_ref *lr = &b->lines[i];
            if (lr->has_f) lr->f.m = b->members + lr->m0;
            server_events_hooks(s, lr->p, lr->len, lr->has_f ? &lr->f : NULL);
            if (b->lines[i].job_end) server_live_end_job(s, b->lines[i].job_end);
        }
    }
    if (b) batch_free(b);
    if (accepted) *accepted = rc < 0 ? 0 : ok;
    if (failed) *failed = rc < 0 ? ok + bad : bad;
    return rc < 0 ? -1 : npts;
}

int server_ingest_event(server *s, const char *json, size_t len, char *err, size_t errlen)
{
    size_t ok = 0, bad = 0;
    if (memchr(json, '\n', len) && len && json[len - 1] != '\n') {
        snprintf(err, errlen, "one event expected, found several lines");
        return -1;
    }
    int n = server_ingest_ndjson(s, json, len, &ok, &bad, err, errlen);
    if (n < 0) return -1;
    if (bad || !ok) {
        if (!bad) snprintf(err, errlen, "empty event");
        return -1;
    }
    return n;
}
