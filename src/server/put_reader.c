/* put_reader.c — the streaming reader of OpenTSDB /api/put bodies (one data
 * point or an array of them; put_reader.h).  It walks the text once and
 * hands each data point to the caller as spans of the body (strings are
 * unescaped into a small scratch buffer only when they hold an escape), so
 * a 32 MiB body costs its points, not a tree of JSON values (issue 23: a
 * jansson tree of a 32 MiB put held 700 MB; issue 25: 170k points per
 * core-second with jansson).
 *
 * It is built of the pieces of json_read.c, which accept exactly what
 * jansson accepts (RFC 8259, UTF-8 strings, integers that fit in 64 bits,
 * nesting up to 2048), so the
 * answers and errors of /api/put are those of the tree-building reader it
 * replaces: a syntax error anywhere refuses the whole body, a bad data
 * point only itself.
 *
 * A client's serializer writes every point alike, so each point is first
 * read by the shape of the one before (put_reader.h): the text between its
 * values compared, only the values read, in their usual forms; a point not
 * written alike is read in full, and gives the next one its shape. */
#include "put_reader.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* p (just after an opening quote) past the string when it is g's: the same
 * bytes and then the closing quote (g has no quote, backslash or control
 * byte, so the string ends there and holds no escape); else NULL.  g's text
 * is followed by its closing quote too (a span of the body, or a literal
 * written with it), so the n + 1 bytes are compared in one go, eight at a
 * time (a call to memcmp cost more than the compare for these few bytes). */
static inline const char *guessed(const char *p, const char *end, const put_guess *g)
{
    if (!g->s || (size_t)(end - p) <= g->n || !jread_same_bytes(p, g->s, g->n + 1)) return NULL;
    return p + g->n + 1;
}

/* Remembers a string read from the text as the next point's guess (a
 * string unescaped into the scratch arena is not a span of the text). */
static inline void guess(const put_reader *r, put_guess *g, const char *s, size_t n)
{
    if (s >= r->jr.body && s < r->jr.end) {
        g->s = s;
        g->n = n;
    } else
        g->s = NULL;
}

/* A string member's value at p, the guess first. */
static int guessed_scalar(put_reader *r, const char **pp, jread_value *v, put_guess *g)
{
    const char *p = *pp, *q;
    if (p < r->jr.end && *p == '"' && (q = guessed(p + 1, r->jr.end, g))) {
        memset(v, 0, sizeof *v);
        v->kind = JV_STRING;
        v->s = p + 1;
        v->n = g->n;
        *pp = q;
        return 0;
    }
    if (jread_scalar(&r->jr, pp, v) < 0) return -1;
    if (v->kind == JV_STRING) guess(r, g, v->s, v->n);
    return 0;
}

/* The place among the recent metrics whose string is the one at p (just
 * after its opening quote), or -1: the one after the last one first (a
 * cycle), then the last one (a run of one metric), then the others, but
 * not after misses in a row, so that a body of ever new metrics pays two
 * compares a point. */
static int metric_ring_find(const put_reader *r, const char *p)
{
    int n = r->mused;
    if (!n) return -1;
    int next = r->mlast + 1 < n ? r->mlast + 1 : 0;
    int tries = r->mmiss >= 4 && n > 2 ? 2 : n; /* each place once */
    for (int i = 0; i < tries; i++) {
        int at = i == 0 ? next : i == 1 ? r->mlast : (next + i - 1) % n;
        if (guessed(p, r->jr.end, &r->metric[at])) return at;
    }
    return -1;
}

/* dp's metric is the one at place at. */
static void metric_ring_hit(put_reader *r, int at, put_point_text *dp)
{
    r->mlast = dp->metric_slot = at;
    r->mmiss = 0;
    dp->metric_gen = r->metric_gen[at];
}

/* dp's metric v was not among the recent ones: kept in the next place
 * when it is a span of the text (an unescaped string). */
static void metric_ring_add(put_reader *r, const jread_value *v, put_point_text *dp)
{
    r->mmiss++;
    if (v->kind != JV_STRING || v->s < r->jr.body || v->s >= r->jr.end) return;
    int at = r->mnext;
    r->mnext = (at + 1) % PUT_READER_METRICS;
    if (r->mused < PUT_READER_METRICS) r->mused++;
    r->metric[at] = (put_guess){v->s, v->n};
    r->mlast = dp->metric_slot = at;
    dp->metric_gen = ++r->metric_gen[at];
}

/* The metric at p: first among the recent ones, else read and kept in the
 * next place.  dp gets its place and generation. */
static int metric_scalar(put_reader *r, const char **pp, jread_value *v, put_point_text *dp)
{
    const char *p = *pp;
    int at;
    dp->metric_slot = -1;
    if (p < r->jr.end && *p == '"' && (at = metric_ring_find(r, p + 1)) >= 0) {
        memset(v, 0, sizeof *v);
        v->kind = JV_STRING;
        v->s = p + 1;
        v->n = r->metric[at].n;
        *pp = p + 1 + v->n + 1;
        metric_ring_hit(r, at, dp);
        return 0;
    }
    if (jread_scalar(&r->jr, pp, v) < 0) return -1;
    metric_ring_add(r, v, dp);
    return 0;
}

/* --- the shape of a point (put_reader.h) ----------------------------------- */

/* Notes a value of the point being read in full: its field, where it
 * starts and ends in the text (simple: a string read without an escape,
 * or a number; else the point has no shape). */
static void learn(put_reader *r, int field, const jread_value *v, int simple)
{
    put_shape *l = &r->learning;
    if (l->n < 0) return;
    if (!simple || l->n >= PUT_SHAPE_VALUES) {
        l->n = -1;
        return;
    }
    l->part[l->n] = (put_shape_part){v->s, 0, field, v->s + v->n};
    l->n++;
}

/* Whether v is a string that is a span of the text (no escape undone). */
static int text_string(const put_reader *r, const jread_value *v)
{
    return v->kind == JV_STRING && v->s >= r->jr.body && v->s < r->jr.end;
}

/* The point just read in full, dp, gives the shape of the next one (or
 * none when it was not simple). */
static void learned(put_reader *r, const put_point_text *dp)
{
    put_shape *l = &r->learning;
    if (l->n <= 0 || dp->not_object) {
        r->shape.n = 0;
        return;
    }
    const char *prev = dp->text;
    for (int i = 0; i < l->n; i++) {
        const char *start = l->part[i].lit;
        l->part[i].lit = prev;
        l->part[i].litn = (size_t)(start - prev);
        prev = l->part[i].end;
    }
    l->tail = prev;
    l->tailn = (size_t)(dp->text + dp->len - prev);
    l->ntags = dp->ntags;
    r->shape = *l;
}

/* The point at p read by the shape of the one before: the end of its text,
 * or NULL when it is not written alike (then nothing of the reader has
 * changed and no error is recorded: the point is read in full).  The text
 * between the values is compared; the values are read as the full reading
 * reads them (a string must be plain: printable ASCII, no escape). */
static const char *shape_read(put_reader *r, const char *p, put_point_text *dp)
{
    const put_shape *sh = &r->shape;
    const char *end = r->jr.end, *p0 = p;
    int mat = -2; /* the metric's place among the recent ones, -1 new, -2 none */
    for (int i = 0; i < sh->n; i++) {
        const put_shape_part *pt = &sh->part[i];
        if ((size_t)(end - p) < pt->litn || !jread_same_bytes(p, pt->lit, pt->litn)) return NULL;
        p += pt->litn;
        const char *q;
        if (pt->field == PUT_SHAPE_TIMESTAMP || pt->field == PUT_SHAPE_VALUE) {
            jread_value *v = pt->field == PUT_SHAPE_VALUE ? &dp->value : &dp->timestamp;
            q = p;
            if (!jread_number_usual(&q, end, v)) return NULL; /* read in full */
            if (v->kind == JV_INT && v->d == 0) v->d = 0;     /* as jread_scalar: "-0" is 0 */
        } else {
            int at = pt->field == PUT_SHAPE_METRIC ? metric_ring_find(r, p) : -1;
            if (at >= 0)
                q = p + r->metric[at].n;
            else if ((q = jread_plain_run(p, end)) >= end || *q != '"')
                return NULL;
            jread_value v = {JV_STRING, p, (size_t)(q - p), 0};
            if (pt->field == PUT_SHAPE_METRIC) {
                dp->metric = v;
                mat = at;
            } else {
                dp->tags[pt->field].k = sh->tag_k[pt->field];
                dp->tags[pt->field].kl = sh->tag_kl[pt->field];
                dp->tags[pt->field].v = v;
            }
        }
        p = q;
    }
    if ((size_t)(end - p) < sh->tailn || !jread_same_bytes(p, sh->tail, sh->tailn)) return NULL;
    p += sh->tailn;
    if (mat >= 0)
        metric_ring_hit(r, mat, dp);
    else if (mat == -1)
        metric_ring_add(r, &dp->metric, dp);
    dp->has_tags = sh->has_tags;
    dp->ntags = sh->ntags;
    dp->len = (size_t)(p - p0);
    r->shaped++;
    return p;
}

/* The members a data point knows, read without a scan when written plainly. */
enum { K_OTHER, K_METRIC, K_TIMESTAMP, K_VALUE, K_TAGS };
static const put_guess known_keys[] = {
    {NULL, 0}, {"metric\"", 6}, {"timestamp\"", 9}, {"value\"", 5}, {"tags\"", 4}};

static int member_key(put_reader *r, const char **pp, const char **k, size_t *kl)
{
    const char *p = *pp, *q = NULL;
    int id = p >= r->jr.end ? K_OTHER
             : *p == 'm'    ? K_METRIC
             : *p == 'v'    ? K_VALUE
             : *p == 't'    ? K_TIMESTAMP
                            : K_OTHER;
    if (id && !(q = guessed(p, r->jr.end, &known_keys[id])) && id == K_TIMESTAMP)
        q = guessed(p, r->jr.end, &known_keys[id = K_TAGS]);
    if (q) {
        *k = known_keys[id].s;
        *kl = known_keys[id].n;
        *pp = q;
        return id;
    }
    if (jread_string(&r->jr, pp, k, kl) < 0) return -1;
    for (id = K_METRIC; id <= K_TAGS; id++)
        if (*kl == known_keys[id].n && !memcmp(*k, known_keys[id].s, *kl)) return id;
    return K_OTHER;
}

/* The members of a tags object into dp->tags (later duplicates replace
 * earlier ones, as jansson's object does). */
static int tags(put_reader *r, const char **pp, put_point_text *dp)
{
    const char *p = jread_ws(*pp, r->jr.end), *end = r->jr.end;
    p++; /* '{' */
    p = jread_ws(p, end);
    dp->has_tags = 1;
    dp->tags_not_object = 0; /* a later "tags" replaces an earlier one, as in jansson */
    if (p < end && *p == '}') {
        *pp = p + 1;
        return 0;
    }
    for (;;) {
        p = jread_ws(p, end);
        if (p >= end || *p != '"') return jread_fail(&r->jr, p, "string or '}' expected");
        p++;
        const char *k, *q;
        size_t kl;
        int at = dp->ntags;
        put_guess *gk = at < PUT_READER_GUESS ? &r->tag_k[at] : NULL;
        if (gk && (q = guessed(p, end, gk))) {
            k = p;
            kl = gk->n;
            p = q;
        } else {
            if (jread_string(&r->jr, &p, &k, &kl) < 0) return -1;
            if (gk) guess(r, gk, k, kl);
        }
        p = jread_ws(p, end);
        if (p >= end || *p != ':') return jread_fail(&r->jr, p, "':' expected");
        p = jread_ws(p + 1, end);
        /* the value straight into the slot it will have if its key is new
         * (a copy through a local was a stall: a 32-byte load of what was
         * just stored in parts) */
        jread_value spare, *v = at < PUT_READER_MAX_TAGS ? &dp->tags[at].v : &spare;
        if (at < PUT_READER_GUESS ? guessed_scalar(r, &p, v, &r->tag_v[at]) < 0
                                  : jread_scalar(&r->jr, &p, v) < 0)
            return -1;
        int i;
        for (i = 0; i < dp->ntags && i < PUT_READER_MAX_TAGS; i++)
            if (dp->tags[i].kl == kl && jread_same_bytes(dp->tags[i].k, k, kl)) break;
        if (i < dp->ntags) {
            dp->tags[i].v = *v;
            r->learning.n = -1; /* a duplicate key: no shape */
        } else {
            int simple = at < PUT_READER_GUESS && k >= r->jr.body && k < end && text_string(r, v);
            if (simple) {
                r->learning.tag_k[at] = k;
                r->learning.tag_kl[at] = kl;
            }
            learn(r, at, v, simple);
            if (dp->ntags < PUT_READER_MAX_TAGS) {
                dp->tags[dp->ntags].k = k;
                dp->tags[dp->ntags].kl = kl;
            }
            dp->ntags++; /* counted beyond the array: "Too many tags" */
        }
        p = jread_ws(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}') {
            *pp = p + 1;
            return 0;
        }
        return jread_fail(&r->jr, p, "',' or '}' expected");
    }
}

/* dp emptied for the element at p: the fields before the tags, one by one
 * (the tags' 3 KB are read only up to ntags: clearing them cost a tenth of
 * the reading; a memset of the 130 bytes before them, a `rep stos`, still
 * 2%). */
static inline void point_start(put_point_text *dp, const char *p)
{
    static const jread_value none = {0};
    dp->text = p;
    dp->len = 0;
    dp->not_object = dp->has_tags = dp->tags_not_object = 0;
    dp->metric = dp->timestamp = dp->value = none;
    dp->metric_slot = -1;
    dp->ntags = 0;
}

/* One element of the body: a data point object, or any other value (which
 * the caller answers "Data point is not an object"). */
static int element(put_reader *r, const char **pp, put_point_text *dp)
{
    const char *p = jread_ws(*pp, r->jr.end), *end = r->jr.end;
    point_start(dp, p);
    r->learning.n = 0;
    r->learning.has_tags = 0;
    r->seen = 0;
    if (p >= end) return jread_fail(&r->jr, p, "premature end of input");
    if (*p != '{') {
        if (jread_skip(&r->jr, &p, 1) < 0) return -1;
        dp->not_object = 1;
        dp->len = (size_t)(p - dp->text);
        *pp = p;
        learned(r, dp);
        return 0;
    }
    p = jread_ws(p + 1, end);
    if (p < end && *p == '}') {
        p++;
    } else
        for (;;) {
            p = jread_ws(p, end);
            if (p >= end || *p != '"') return jread_fail(&r->jr, p, "string or '}' expected");
            p++;
            const char *k;
            size_t kl;
            int key = member_key(r, &p, &k, &kl);
            if (key < 0) return -1;
            if (key == K_OTHER || (r->seen & 1u << key)) r->learning.n = -1;
            r->seen |= 1u << key;
            p = jread_ws(p, end);
            if (p >= end || *p != ':') return jread_fail(&r->jr, p, "':' expected");
            p = jread_ws(p + 1, end);
            if (key == K_TAGS && p < end && *p == '{') {
                dp->ntags = 0;
                r->learning.has_tags = 1;
                if (tags(r, &p, dp) < 0) return -1;
            } else {
                jread_value other, *v = key == K_METRIC      ? &dp->metric
                                        : key == K_TIMESTAMP ? &dp->timestamp
                                        : key == K_VALUE     ? &dp->value
                                                             : &other;
                if (key == K_METRIC ? metric_scalar(r, &p, v, dp) < 0
                                    : jread_scalar(&r->jr, &p, v) < 0)
                    return -1;
                if (key == K_METRIC) learn(r, PUT_SHAPE_METRIC, v, text_string(r, v));
                if (key == K_TIMESTAMP || key == K_VALUE)
                    learn(r, key == K_VALUE ? PUT_SHAPE_VALUE : PUT_SHAPE_TIMESTAMP, v,
                          v->kind == JV_INT || v->kind == JV_REAL);
                if (key == K_TAGS) {
                    r->learning.n = -1;
                    dp->has_tags = v->kind != JV_NONE;
                    dp->tags_not_object = 1;
                    dp->ntags = 0;
                }
            }
            p = jread_ws(p, end);
            if (p < end && *p == ',') {
                p++;
                continue;
            }
            if (p < end && *p == '}') {
                p++;
                break;
            }
            return jread_fail(&r->jr, p, "',' or '}' expected");
        }
    dp->len = (size_t)(p - dp->text);
    *pp = p;
    learned(r, dp);
    return 0;
}

int put_reader_start(put_reader *r, const char *body, size_t len)
{
    memset(r, 0, sizeof *r);
    jread_init(&r->jr, body, len);
    const char *p = jread_ws(body, r->jr.end);
    if (p >= r->jr.end) return jread_fail(&r->jr, p, "'[' or '{' expected near end of file");
    if (*p == '[') {
        r->array = 1;
        p = jread_ws(p + 1, r->jr.end);
        if (p < r->jr.end && *p == ']') {
            r->done = 1;
            p = jread_ws(p + 1, r->jr.end);
            if (p < r->jr.end) return jread_fail(&r->jr, p, "end of file expected");
        }
    } else if (*p != '{') {
        /* a scalar: valid JSON but not a data point nor an array */
        const char *q = p;
        if (jread_skip(&r->jr, &q, 0) < 0) return -1;
        q = jread_ws(q, r->jr.end);
        if (q < r->jr.end) return jread_fail(&r->jr, q, "end of file expected");
        r->not_points = 1;
        return 0;
    }
    r->pos = p;
    return 0;
}

int put_reader_next(put_reader *r, put_point_text *dp)
{
    if (r->done || r->not_points) return 0;
    const char *p = r->pos, *q = NULL;
    jread_scratch_reset(
        &r->jr);      /* the previous point's unescaped strings are not needed any more */
    if (r->shape.n) { /* first as one written like the point before */
        p = jread_ws(p, r->jr.end);
        point_start(dp, p);
        if (p < r->jr.end && *p == '{') q = shape_read(r, p, dp);
    }
    if (q)
        p = q;
    else if (element(r, &p, dp) < 0)
        return -1;
    p = jread_ws(p, r->jr.end);
    if (r->array) {
        if (p < r->jr.end && *p == ',') {
            p++;
            if (jread_ws(p, r->jr.end) < r->jr.end && *jread_ws(p, r->jr.end) == ']')
                return jread_fail(&r->jr, jread_ws(p, r->jr.end), "unexpected token");
        } else if (p < r->jr.end && *p == ']') {
            r->done = 1;
            p = jread_ws(p + 1, r->jr.end);
        } else
            return jread_fail(&r->jr, p, "',' or ']' expected");
    } else
        r->done = 1;
    if (r->done && p < r->jr.end) return jread_fail(&r->jr, p, "end of file expected");
    r->pos = p;
    r->count++;
    return 1;
}

/* Validates the whole body's syntax without keeping anything. */
int put_reader_check(const char *body, size_t len, char *err, size_t errlen)
{
    put_reader r;
    put_point_text dp;
    int rc = put_reader_start(&r, body, len);
    while (rc == 0 && (rc = put_reader_next(&r, &dp)) > 0) rc = 0;
    if (rc < 0 && errlen) snprintf(err, errlen, "%s", r.jr.err);
    put_reader_free(&r);
    return rc < 0 ? -1 : 0;
}

void put_reader_free(put_reader *r)
{
    jread_free(&r->jr);
}
