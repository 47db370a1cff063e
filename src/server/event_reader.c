/* event_reader.c — the streaming reader of jobscope events (ingest.h): one
 * NDJSON line read straight from the text into an ev_view, built of the
 * pieces of json_read.c, with no tree and no allocation per event.
 *
 * It reads the shapes runs send: one object whose members are strings,
 * numbers, true/false/null and arrays, with custom tags as an object of
 * scalars and the metric catalogue's groups as arrays of flat rows
 * (kickstart.inv.online's cg_io).  Everything it reads it validates as
 * jansson would (json_read.h).  Any other line — a nested object (the
 * start event's rlimits), a key given twice (jansson keeps the first
 * position and the last value), a syntax error (jansson names it) — it
 * leaves to jansson (returns 0), so the two readers never disagree on
 * what a line holds; ingest.c turns either view into points with one rule. */
#include "ingest.h"

#include <string.h>
#include "model/metric.h"
#include "util/hash.h"

#define MAX_MEMBERS 256 /* members of one object tracked for duplicates */
#define MAX_ARRAYS  16  /* arrays kept for after the object (groups) */
#define MAX_ROW     16  /* catalogue fields of one row */

static int key_is(const char *k, size_t n, const char *lit, size_t ln)
{
    return n == ln && !memcmp(k, lit, ln);
}
#define KEY(lit) key_is(k, kn, lit, sizeof lit - 1)

/* Keys seen in one object: a key given twice sends the line to jansson. */
typedef struct keyset {
    uint64_t mask[4];
    uint64_t h[MAX_MEMBERS];
    int n;
} keyset;

/* 1 when k is new (and is now remembered), 0 when seen or too many. */
static int key_new(keyset *ks, const char *k, size_t kn)
{
    if (ks->n >= MAX_MEMBERS) return 0;
    uint64_t h = hash_bytes(k, kn);
    unsigned bit = (unsigned)(h >> 56);
    uint64_t *w = &ks->mask[bit >> 6], m = 1ull << (bit & 63);
    if (*w & m)
        for (int i = 0; i < ks->n; i++)
            if (ks->h[i] == h) return 0; /* seen, or a collision: jansson decides */
    *w |= m;
    ks->h[ks->n++] = h;
    return 1;
}

/* A member's key at *pp ('"' expected); *pp past its ':'.  -1: not read. */
static int member_key(jread *jr, const char **pp, const char **k, size_t *kn)
{
    const char *p = jread_ws(*pp, jr->end);
    if (p >= jr->end || *p != '"') return -1;
    p++;
    if (jread_string(jr, &p, k, kn) < 0) return -1;
    p = jread_ws(p, jr->end);
    if (p >= jr->end || *p != ':') return -1;
    *pp = jread_ws(p + 1, jr->end);
    return 0;
}

/* After a member: 1 another follows (',' read), 0 the object ends ('}'
 * read), -1 neither. */
static int member_next(jread *jr, const char **pp)
{
    const char *p = jread_ws(*pp, jr->end);
    if (p < jr->end && (*p == ',' || *p == '}')) {
        *pp = p + 1;
        return *p == ',';
    }
    return -1;
}

/* A number at *pp: its value (an integer's as jansson's, -0 is 0) and
 * whether it is an integer, with its text. */
static int number(jread *jr, const char **pp, double *d, int *is_int, ev_span *text)
{
    const char *s;
    size_t n;
    if (jread_number_valued(jr, pp, &s, &n, is_int, d) < 0) return -1;
    if (*is_int) {
        jread_value v = {JV_INT, s, n, *d};
        text->s = jread_int_text(&v, &text->n);
        if (*d == 0) *d = 0;
    }
    return 0;
}

/* The custom tags: an object of scalars.  -1: not read. */
static int custom_tags(jread *jr, const char **pp, ev_view *v)
{
    const char *p = *pp + 1; /* '{' */
    keyset ks;
    ks.n = 0;
    memset(ks.mask, 0, sizeof ks.mask);
    p = jread_ws(p, jr->end);
    if (p < jr->end && *p == '}') {
        *pp = p + 1;
        return 0;
    }
    for (;;) {
        const char *k;
        size_t kn;
        if (member_key(jr, &p, &k, &kn) < 0 || !key_new(&ks, k, kn)) return -1;
        if (p < jr->end && *p == '"') {
            ev_ctag *c = ev_view_ctag(v);
            p++;
            if (!c || jread_string(jr, &p, &c->v.s, &c->v.n) < 0) return -1;
            c->k = (ev_span){k, kn};
        } else if (p < jr->end && (*p == '-' || (*p >= '0' && *p <= '9'))) {
            ev_ctag *c = ev_view_ctag(v);
            int is_int;
            ev_span text;
            if (!c || number(jr, &p, &c->num, &is_int, &text) < 0) return -1;
            c->k = (ev_span){k, kn};
            c->is_num = 1;
        } else if (jread_skip(jr, &p, 2) < 0)
            return -1;
        int more = member_next(jr, &p);
        if (more < 0) return -1;
        if (!more) break;
    }
    *pp = p;
    return 0;
}

/* The rows of catalogue group g, the array [p, end) (valid JSON, read
 * already): a row's label and its catalogue fields.  -1: not read. */
static int group_rows(jread *jr, const metric_def *g, ev_span key, const char *p, ev_view *v)
{
    p = jread_ws(p + 1, jr->end); /* '[' */
    if (p < jr->end && *p == ']') return 0;
    for (;;) {
        p = jread_ws(p, jr->end);
        if (p < jr->end && *p == '{') {
            p++;
            struct {
                ev_span field;
                double v;
            } f[MAX_ROW];
            int nf = 0;
            ev_span label = {NULL, 0};
            keyset ks;
            ks.n = 0;
            memset(ks.mask, 0, sizeof ks.mask);
            const char *q = jread_ws(p, jr->end);
            int more = 1;
            if (q < jr->end && *q == '}') {
                p = q + 1;
                more = 0;
            }
            while (more) {
                const char *k;
                size_t kn;
                if (member_key(jr, &p, &k, &kn) < 0 || !key_new(&ks, k, kn)) return -1;
                if (*p == '"') {
                    const char *s;
                    size_t sn;
                    p++;
                    if (jread_string(jr, &p, &s, &sn) < 0) return -1;
                    if (key_is(k, kn, g->row_label, strlen(g->row_label))) label = (ev_span){s, sn};
                } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
                    double d;
                    int is_int;
                    ev_span text;
                    if (number(jr, &p, &d, &is_int, &text) < 0) return -1;
                    if (ev_row_field(g, k, kn)) {
                        if (nf == MAX_ROW) return -1;
                        f[nf].field = (ev_span){k, kn};
                        f[nf++].v = d;
                    }
                } else if (jread_skip(jr, &p, 3) < 0)
                    return -1;
                if ((more = member_next(jr, &p)) < 0) return -1;
            }
            for (int i = 0; label.s && i < nf; i++) {
                ev_value *e = ev_view_value(v);
                if (!e) return -1;
                e->key = key;
                e->field = f[i].field;
                e->label = label;
                e->v = f[i].v;
            }
        } else if (jread_skip(jr, &p, 2) < 0)
            return -1;
        p = jread_ws(p, jr->end);
        if (p < jr->end && *p == ',') {
            p++;
            continue;
        }
        if (p < jr->end && *p == ']') return 0;
        return -1;
    }
}

/* A string member: the view's when its key is one the rule reads. */
static void string_member(ev_view *v, const char *k, size_t kn, ev_span s)
{
    if (KEY("event"))
        v->event = s;
    else if (KEY("hostname"))
        v->hostname = s;
    else if (KEY("host"))
        v->host = s;
    else if (KEY("uuid"))
        v->uuid = s;
    else if (KEY("name"))
        v->mname = s;
    else if (KEY("id"))
        v->gpu = s;
    else
        for (int i = 0; i < EV_NANNOT; i++)
            if (key_is(k, kn, ev_annotations[i], strlen(ev_annotations[i]))) v->annot[i] = s;
}

int event_reader_read(jread *jr, const char *line, size_t len, ev_view *v)
{
    jr->body = line;
    jr->end = line + len;
    jr->err[0] = 0;
    jread_scratch_reset(jr);
    struct {
        ev_span key;
        const char *at;
    } arrays[MAX_ARRAYS];
    int narrays = 0;
    keyset ks;
    ks.n = 0;
    memset(ks.mask, 0, sizeof ks.mask);
    const char *p = jread_ws(line, jr->end);
    if (p >= jr->end || *p != '{') return 0;
    p = jread_ws(p + 1, jr->end);
    int more = 1;
    if (p < jr->end && *p == '}') {
        p++;
        more = 0;
    }
    while (more) {
        const char *k;
        size_t kn;
        if (member_key(jr, &p, &k, &kn) < 0 || !key_new(&ks, k, kn)) return 0;
        if (p >= jr->end) return 0;
        char c = *p;
        if (c == '"') {
            ev_span s;
            p++;
            if (jread_string(jr, &p, &s.s, &s.n) < 0) return 0;
            string_member(v, k, kn, s);
            ev_ctag *sm = ev_view_str(v); /* for the event hooks (server.h) */
            if (!sm) return 0;
            sm->k = (ev_span){k, kn};
            sm->v = s;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            double d;
            int is_int;
            ev_span text = {NULL, 0};
            if (number(jr, &p, &d, &is_int, &text) < 0) return 0;
            if (KEY("ts")) {
                v->has_ts = 1;
                v->ts = d;
            } else if (KEY("rank")) {
                if (is_int) v->rank = text;
            } else if (KEY("id")) {
                if (is_int) v->gpu = text;
            } else if (!ev_not_a_value(k, kn)) {
                if (KEY("value")) {
                    v->has_mvalue = 1;
                    v->mvalue = d;
                }
                ev_value *e = ev_view_value(v);
                if (!e) return 0;
                e->key = (ev_span){k, kn};
                e->v = d;
                e->itext = text;
            }
        } else if (c == '{') {
            if (!KEY("tags") || custom_tags(jr, &p, v) < 0) return 0; /* nested: jansson's */
        } else if (c == '[') {
            if (narrays == MAX_ARRAYS) return 0;
            arrays[narrays].key = (ev_span){k, kn};
            arrays[narrays++].at = p;
            if (jread_skip(jr, &p, 1) < 0) return 0;
        } else if (jread_skip(jr, &p, 1) < 0)
            return 0;
        if ((more = member_next(jr, &p)) < 0) return 0;
    }
    if (jread_ws(p, jr->end) != jr->end) return 0;
    /* the event is known now: the arrays that are its catalogue groups */
    for (int i = 0; i < narrays; i++) {
        const metric_def *g = ev_group(v->event, arrays[i].key.s, arrays[i].key.n);
        if (g && !ev_not_a_value(arrays[i].key.s, arrays[i].key.n) &&
            group_rows(jr, g, arrays[i].key, arrays[i].at, v) < 0)
            return 0;
    }
    return v->oom ? 0 : 1;
}
