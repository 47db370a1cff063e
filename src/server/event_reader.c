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
 * what a line holds; ingest.c turns either view into points with one rule.
 * A line written like the one before it is read by that line's shape
 * (event_reader_next, below): the text between its values compared, only
 * its values read. */
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

/* The view's field that a top-level string member of key k fills, or NULL
 * (the shape keeps it as an offset into the view: event_shape_*). */
static ev_span *string_slot(ev_view *v, const char *k, size_t kn)
{
    if (KEY("event")) return &v->event;
    if (KEY("hostname")) return &v->hostname;
    if (KEY("host")) return &v->host;
    if (KEY("uuid")) return &v->uuid;
    if (KEY("name")) return &v->mname;
    if (KEY("id")) return &v->gpu;
    for (int i = 0; i < EV_NANNOT; i++)
        if (key_is(k, kn, ev_annotations[i], strlen(ev_annotations[i]))) return &v->annot[i];
    return NULL;
}

/* What a top-level number member is to the view, by its key. */
enum { NUM_TS, NUM_RANK, NUM_ID, NUM_NONE, NUM_VALUE, NUM_MVALUE };

static int number_role(const char *k, size_t kn)
{
    if (KEY("ts")) return NUM_TS;
    if (KEY("rank")) return NUM_RANK;
    if (KEY("id")) return NUM_ID;
    if (ev_not_a_value(k, kn)) return NUM_NONE;
    return KEY("value") ? NUM_MVALUE : NUM_VALUE;
}

/* A top-level number into the view, as its role says.  -1: out of memory. */
static int number_member(ev_view *v, int role, ev_span key, double d, int is_int, ev_span text)
{
    switch (role) {
    case NUM_TS:
        v->has_ts = 1;
        v->ts = d;
        return 0;
    case NUM_RANK:
        if (is_int) v->rank = text;
        return 0;
    case NUM_ID:
        if (is_int) v->gpu = text;
        return 0;
    case NUM_NONE:
        return 0;
    case NUM_MVALUE:
        v->has_mvalue = 1;
        v->mvalue = d;
        break;
    }
    ev_value *e = ev_view_value(v);
    if (!e) return -1;
    e->key = key;
    e->v = d;
    e->itext = text;
    return 0;
}

/* A top-level string member into the view.  -1: out of memory. */
static int string_member(ev_view *v, ev_span *slot, ev_span key, ev_span s)
{
    if (slot) *slot = s;
    ev_ctag *sm = ev_view_str(v); /* for the event hooks (server.h) */
    if (!sm) return -1;
    sm->k = key;
    sm->v = s;
    return 0;
}

typedef struct ev_array {
    ev_span key;
    const char *at;
} ev_array;

/* Once the event is known: the arrays that are its catalogue groups, and
 * the answer (1 read, 0 jansson's). */
static int groups(jread *jr, ev_view *v, const ev_array *arrays, int narrays)
{
    for (int i = 0; i < narrays; i++) {
        const metric_def *g = ev_group(v->event, arrays[i].key.s, arrays[i].key.n);
        if (g && !ev_not_a_value(arrays[i].key.s, arrays[i].key.n) &&
            group_rows(jr, g, arrays[i].key, arrays[i].at, v) < 0)
            return 0;
    }
    return v->oom ? 0 : 1;
}

int event_reader_read(jread *jr, const char *line, size_t len, ev_view *v)
{
    jr->body = line;
    jr->end = line + len;
    jr->err[0] = 0;
    jread_scratch_reset(jr);
    ev_array arrays[MAX_ARRAYS];
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
            if (string_member(v, string_slot(v, k, kn), (ev_span){k, kn}, s) < 0) return 0;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            double d;
            int is_int;
            ev_span text = {NULL, 0};
            if (number(jr, &p, &d, &is_int, &text) < 0) return 0;
            if (number_member(v, number_role(k, kn), (ev_span){k, kn}, d, is_int, text) < 0)
                return 0;
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
    return groups(jr, v, arrays, narrays);
}

/* ---- a line read by the shape of the one before ----
 *
 * A run's lines, and a collector's, are written alike: the same members in
 * the same order, only their values differ.  The shape of a line read in
 * full is its text cut at its values (strings, numbers, the arrays and the
 * custom tags object), and what each value is to the view, found once from
 * its key.  The next line is compared with that text eight bytes at a time
 * and only its values are read, by the same pieces as above: a line whose
 * text between the values is the same bytes has the same members, once
 * each, in the same order.  Anything else — another member, one space
 * more, a string with an escape or a byte outside printable ASCII — is read
 * in full, and its shape learned in turn.  A stream of lines of many
 * shapes stops learning for a while after EV_SHAPE_TRIES shapes in a row
 * that no line used. */

enum { VAL_STR, VAL_NUM, VAL_ARRAY, VAL_TAGS };
#define EV_SHAPE_TRIES 8
#define EV_SHAPE_REST  64

static int shape_read(ev_shape *sh, jread *jr, const char *line, size_t len, ev_view *v)
{
    jr->body = line;
    jr->end = line + len;
    jr->err[0] = 0;
    jread_scratch_reset(jr);
    const char *p = line, *end = jr->end, *t = sh->text;
    ev_array arrays[MAX_ARRAYS];
    int narrays = 0;
    for (int i = 0; i < sh->nval; i++) {
        const ev_shape_value *sv = &sh->val[i];
        size_t n = sv->before;
        if ((size_t)(end - p) < n || !jread_same_bytes(p, t, n)) return 0;
        p += n;
        t += n;
        ev_span key = {p - sv->key_back, sv->key_len};
        if (sv->kind == VAL_STR) { /* after its opening quote (the text's) */
            const char *q = jread_plain_run(p, end);
            if (q >= end || *q != '"') return 0;
            ev_span *slot = sv->slot < 0 ? NULL : (ev_span *)((char *)v + sv->slot);
            if (string_member(v, slot, key, (ev_span){p, (size_t)(q - p)}) < 0) return 0;
            p = q; /* the closing quote begins the next text */
        } else if (sv->kind == VAL_NUM) {
            double d;
            int is_int;
            ev_span text = {NULL, 0};
            if (number(jr, &p, &d, &is_int, &text) < 0 ||
                number_member(v, sv->role, key, d, is_int, text) < 0)
                return 0;
        } else if (sv->kind == VAL_ARRAY) {
            if (p >= end || *p != '[') return 0;
            arrays[narrays].key = key;
            arrays[narrays++].at = p;
            if (jread_skip(jr, &p, 1) < 0) return 0;
        } else if (p >= end || *p != '{' || custom_tags(jr, &p, v) < 0) {
            return 0;
        }
    }
    if ((size_t)(end - p) != sh->tail || !jread_same_bytes(p, t, sh->tail)) return 0;
    return groups(jr, v, arrays, narrays);
}

/* The shape of [line, line+len), a line read in full (valid, flat enough,
 * no key given twice); sh->ok stays 0 where it has no usable shape (a key
 * with an escape, a nested object other than the custom tags, too long). */
static void shape_learn(ev_shape *sh, const char *line, size_t len)
{
    sh->ok = 0;
    jread jr;
    jread_init(&jr, line, len);
    const char *end = line + len, *p = jread_ws(line, end), *lit = line;
    size_t nt = 0;
    int nv = 0, narrays = 0;
    ev_view probe; /* where string_slot puts a string: an offset in any view */
    if (p >= end || *p != '{') goto out;
    p = jread_ws(p + 1, end);
    if (p < end && *p == '}') goto out;
    for (;;) {
        const char *k, *vs;
        size_t kn;
        if (member_key(&jr, &p, &k, &kn) < 0 || k < line || k >= end || p >= end) goto out;
        int kind;
        if (*p == '"')
            kind = VAL_STR;
        else if (*p == '-' || (*p >= '0' && *p <= '9'))
            kind = VAL_NUM;
        else if (*p == '[')
            kind = VAL_ARRAY;
        else if (*p == '{' && KEY("tags"))
            kind = VAL_TAGS;
        else if (*p == '{')
            goto out;
        else { /* true, false, null: part of the text */
            if (jread_skip(&jr, &p, 1) < 0) goto out;
            goto next;
        }
        vs = p + (kind == VAL_STR);
        size_t tn = (size_t)(vs - lit);
        if (nv == EV_SHAPE_VALUES || nt + tn > EV_SHAPE_TEXT || (size_t)(vs - k) > 0xffff ||
            tn > 0xffff || kn > 0xffff || (kind == VAL_ARRAY && narrays == MAX_ARRAYS))
            goto out;
        memcpy(sh->text + nt, lit, tn);
        nt += tn;
        ev_shape_value *sv = &sh->val[nv++];
        sv->before = (uint16_t)tn;
        sv->kind = (uint8_t)kind;
        sv->role = kind == VAL_NUM ? (uint8_t)number_role(k, kn) : 0;
        sv->key_back = (uint16_t)(vs - k);
        sv->key_len = (uint16_t)kn;
        ev_span *slot = kind == VAL_STR ? string_slot(&probe, k, kn) : NULL;
        sv->slot = slot ? (int32_t)((char *)slot - (char *)&probe) : -1;
        narrays += kind == VAL_ARRAY;
        if (kind == VAL_STR) {
            const char *s;
            size_t sn;
            p = vs;
            if (jread_string(&jr, &p, &s, &sn) < 0) goto out;
            lit = p - 1; /* the closing quote */
        } else {
            if (jread_skip(&jr, &p, 1) < 0) goto out;
            lit = p;
        }
    next:;
        int more = member_next(&jr, &p);
        if (more < 0) goto out;
        if (!more) break;
    }
    if (jread_ws(p, end) != end || nt + (size_t)(end - lit) > EV_SHAPE_TEXT ||
        (size_t)(end - lit) > 0xffff)
        goto out;
    memcpy(sh->text + nt, lit, (size_t)(end - lit));
    sh->tail = (uint16_t)(end - lit);
    sh->nval = nv;
    sh->ok = 1;
    sh->learned++;
out:
    jread_free(&jr);
}

int event_reader_next(ev_shape *sh, jread *jr, const char *line, size_t len, ev_view *v)
{
    if (sh->ok) {
        if (shape_read(sh, jr, line, len, v) == 1) {
            sh->shaped++;
            sh->unused = 0;
            return 1;
        }
        ev_view_reset(v);
    }
    int rc = event_reader_read(jr, line, len, v);
    if (rc != 1) return rc;
    if (sh->rest)
        sh->rest--;
    else if (sh->unused++ >= EV_SHAPE_TRIES) {
        sh->rest = EV_SHAPE_REST;
        sh->unused = 0;
    } else
        shape_learn(sh, line, len);
    return rc;
}
