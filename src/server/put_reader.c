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
 * point only itself. */
#include "put_reader.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int key_is(const char *s, size_t n, const char *k)
{
    return strlen(k) == n && !memcmp(s, k, n);
}

/* The members of a tags object into dp->tags (later duplicates replace
 * earlier ones, as jansson's object does). */
static int tags(put_reader *r, const char **pp, put_point_text *dp)
{
    const char *p = jread_ws(*pp, r->jr.end), *end = r->jr.end;
    p++; /* '{' */
    p = jread_ws(p, end);
    dp->has_tags = 1;
    if (p < end && *p == '}') {
        *pp = p + 1;
        return 0;
    }
    for (;;) {
        p = jread_ws(p, end);
        if (p >= end || *p != '"') return jread_fail(&r->jr, p, "string or '}' expected");
        p++;
        const char *k;
        size_t kl;
        if (jread_string(&r->jr, &p, &k, &kl) < 0) return -1;
        p = jread_ws(p, end);
        if (p >= end || *p != ':') return jread_fail(&r->jr, p, "':' expected");
        p++;
        jread_value v;
        if (jread_scalar(&r->jr, &p, &v) < 0) return -1;
        int i;
        for (i = 0; i < dp->ntags && i < PUT_READER_MAX_TAGS; i++)
            if (dp->tags[i].kl == kl && !memcmp(dp->tags[i].k, k, kl)) break;
        if (i < dp->ntags) {
            dp->tags[i].v = v;
        } else {
            if (dp->ntags < PUT_READER_MAX_TAGS) {
                dp->tags[dp->ntags].k = k;
                dp->tags[dp->ntags].kl = kl;
                dp->tags[dp->ntags].v = v;
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

/* One element of the body: a data point object, or any other value (which
 * the caller answers "Data point is not an object"). */
static int element(put_reader *r, const char **pp, put_point_text *dp)
{
    const char *p = jread_ws(*pp, r->jr.end), *end = r->jr.end;
    /* the fields before the tags (the tags' 3 KB are read only up to
     * ntags: clearing them cost a tenth of the reading) */
    memset(dp, 0, offsetof(put_point_text, tags));
    dp->ntags = 0;
    dp->text = p;
    if (p >= end) return jread_fail(&r->jr, p, "premature end of input");
    if (*p != '{') {
        if (jread_skip(&r->jr, &p, 1) < 0) return -1;
        dp->not_object = 1;
        dp->len = (size_t)(p - dp->text);
        *pp = p;
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
            if (jread_string(&r->jr, &p, &k, &kl) < 0) return -1;
            p = jread_ws(p, end);
            if (p >= end || *p != ':') return jread_fail(&r->jr, p, "':' expected");
            p = jread_ws(p + 1, end);
            if (key_is(k, kl, "tags") && p < end && *p == '{') {
                dp->ntags = 0;
                if (tags(r, &p, dp) < 0) return -1;
            } else {
                jread_value v;
                if (jread_scalar(&r->jr, &p, &v) < 0) return -1;
                if (key_is(k, kl, "metric"))
                    dp->metric = v;
                else if (key_is(k, kl, "timestamp"))
                    dp->timestamp = v;
                else if (key_is(k, kl, "value"))
                    dp->value = v;
                else if (key_is(k, kl, "tags")) {
                    dp->has_tags = v.kind != JV_NONE;
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
    const char *p = r->pos;
    jread_scratch_reset(
        &r->jr); /* the previous point's unescaped strings are not needed any more */
    if (element(r, &p, dp) < 0) return -1;
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
