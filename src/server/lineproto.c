/* lineproto.c — the Influx line protocol of POST /write, parsed in place
 * into one batch of store points (lineproto_parse; the handler is in
 * api_ingest.c).
 *
 *   measurement[,k=v...] f=v[,f=v...] [timestamp]
 *
 * Each numeric field becomes a point of metric "<measurement>.<field>";
 * string fields are skipped, booleans are 0/1, a trailing i/u is an integer;
 * a line without tags is tagged host=<this host>.  A bad line is dropped
 * whole and counted; the others are kept.
 *
 * This is the hot path of HTTP ingest (docs/serve.md, bench/README.md), so
 * it allocates per request, never per point: tag strings of a line are
 * copied once into an arena and shared by the line's fields (store_put and
 * the live table see the same tags pointer and do their per-tag-set work
 * once a line), and metric names are interned in a per-request table that
 * also remembers whether the name is valid.  Numbers of the usual form
 * (digits, one dot, at most 15 digits after it) are converted exactly
 * without strtod: a mantissa below 2^53 divided by an exact power of ten is
 * the correctly rounded value, as strtod's. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "lineproto.h"
#include "server.h" /* server_valid_ts_ms */
#include "util/arena.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/series_name.h"

#define LP_MAX_TAGS   64
#define LP_MAX_FIELDS 256

/* Character classes: bit 1 ends a measurement or tag value (',' ' '),
 * bit 2 ends a key ('=' ',' ' '); NUL ends both (as strchr's terminator did). */
static const unsigned char lp_class[256] = {
    [0] = 3, [','] = 3, [' '] = 3, ['='] = 2, ['\\'] = 4,
};

/* The batch's copy of n bytes (kept over slices); sets b->oom on failure. */
static char *lp_alloc(lp_batch *b, size_t n)
{
    char *p = arena_alloc(&b->arena, n);
    if (!p) b->oom = 1;
    return p;
}

/* Reads up to an unescaped character of class `stop`, unescaping into out
 * (at most cap-1 bytes kept, as the protocol's names are short).  Returns
 * the bytes consumed. */
static size_t lp_token(const char *p, const char *end, unsigned stop, char *out, size_t cap,
                       size_t *olen)
{
    const char *q = p;
    size_t o = 0;
    while (q < end) {
        unsigned c = lp_class[(unsigned char)*q];
        if (c & stop) break;
        if (c & 4 && q + 1 < end) {
            if (o + 1 < cap) out[o++] = q[1];
            q += 2;
            continue;
        }
        if (o + 1 < cap) out[o++] = *q;
        q++;
    }
    out[o] = 0;
    *olen = o;
    return (size_t)(q - p);
}

/* The request's copy of a metric name (NULL on OOM); *valid tells whether
 * it passes series_name_valid.  Each distinct name is copied and checked once. */
static const char *lp_name(lp_batch *b, const char *s, size_t n, int *valid)
{
    if ((b->nnames + 1) * 2 >= b->capnames) {
        size_t cap = b->capnames ? b->capnames * 2 : 256;
        lp_name_ent *t = calloc(cap, sizeof *t);
        if (!t) {
            b->oom = 1;
            return NULL;
        }
        for (size_t i = 0; i < b->capnames; i++) {
            if (!b->names[i].s) continue;
            size_t j = b->names[i].h & (cap - 1);
            while (t[j].s) j = (j + 1) & (cap - 1);
            t[j] = b->names[i];
        }
        free(b->names);
        b->names = t;
        b->capnames = cap;
    }
    uint64_t h = hash_bytes(s, n);
    size_t j = h & (b->capnames - 1);
    for (; b->names[j].s; j = (j + 1) & (b->capnames - 1)) {
        lp_name_ent *e = &b->names[j];
        if (e->h == h && e->len == n && !memcmp(e->s, s, n)) {
            *valid = e->valid;
            return e->s;
        }
    }
    char *c = lp_alloc(b, n + 1);
    if (!c) return NULL;
    memcpy(c, s, n);
    c[n] = 0;
    b->names[j] = (lp_name_ent){c, n, h, series_name_valid(s, n)};
    b->nnames++;
    *valid = b->names[j].valid;
    return c;
}

static const double pow10_tab[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* [+-]digits[.digits] exactly, or -1 to let strtod decide. */
static int lp_fast_number(const char *s, size_t n, double *v)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d < 10) {
            if (m > (1ull << 53) / 10) return -1;
            m = m * 10 + d;
            digits++;
            if (frac >= 0) frac++;
        } else if (s[i] == '.' && frac < 0) {
            frac = 0;
        } else
            return -1;
    }
    if (!digits || m > (1ull << 53) || frac > 15) return -1;
    double x = (double)m;
    if (frac > 0) x /= pow10_tab[frac];
    *v = neg ? -x : x;
    return 0;
}

/* One line into the batch; NULL or the reason it was refused (then the
 * caller drops what it added). */
static const char *lp_line(lp_batch *b, const char *p, const char *end, int64_t mult_ns,
                           int64_t now_ms, const char *host)
{
    char name[1100], key[512], val[1024];
    size_t ml, kl, vl;
    size_t i = lp_token(p, end, 1, name, 512, &ml);
    if (!ml) return "missing measurement";
    size_t tag0 = b->ntags;
    int ntags = 0;
    while (p + i < end && p[i] == ',') {
        i++;
        i += lp_token(p + i, end, 2, key, sizeof key, &kl);
        if (p + i >= end || p[i] != '=') return "bad tag (expected key=value)";
        i++;
        i += lp_token(p + i, end, 1, val, sizeof val, &vl);
        if (!kl || !vl) return "empty tag key or value";
        /* the rule of /api/put (series_name_valid): never cut and merged */
        if (kl > SERIES_NAME_MAX || vl > SERIES_NAME_MAX) return "tag key or value over 256 bytes";
        if (ntags >= LP_MAX_TAGS) return "too many tags";
        char *kv = lp_alloc(b, kl + vl + 2);
        b->tags = grow_array(b->tags, &b->captags, b->ntags + 1, sizeof *b->tags, &b->oom);
        if (b->oom) return "out of memory";
        memcpy(kv, key, kl + 1);
        memcpy(kv + kl + 1, val, vl + 1);
        b->tags[b->ntags++] = (store_tag){kv, kv + kl + 1};
        ntags++;
    }
    if (p + i >= end || p[i] != ' ') return "missing fields";
    while (p + i < end && p[i] == ' ') i++;
    if (!ntags) {
        b->tags = grow_array(b->tags, &b->captags, b->ntags + 1, sizeof *b->tags, &b->oom);
        if (b->oom) return "out of memory";
        b->tags[b->ntags++] = (store_tag){"host", host};
        ntags = 1;
    }
    /* "<measurement>." stays in name; each field's key is appended after it */
    name[ml] = '.';
    size_t pre = ml + 1;
    size_t first = b->n;
    int nf = 0, bad_name = 0;
    for (;;) {
        i += lp_token(p + i, end, 2, key, sizeof key, &kl);
        if (p + i >= end || p[i] != '=' || !kl) return "bad field (expected key=value)";
        i++;
        if (p + i < end && p[i] == '"') {
            i++;
            while (p + i < end && p[i] != '"') i += (p[i] == '\\') ? 2 : 1;
            if (p + i >= end) return "unterminated string field";
            i++;
        } else {
            double v;
            const char *vs = p + i;
            size_t raw = 0;
            while (vs + raw < end && !(lp_class[(unsigned char)vs[raw]] & 5)) raw++;
            if (vs + raw < end && lp_class[(unsigned char)vs[raw]] & 4) {
                /* an escape: the slow way */
                i += lp_token(p + i, end, 1, val, sizeof val, &vl);
                vs = val;
            } else {
                i += raw;
                vl = raw < sizeof val ? raw : sizeof val - 1;
            }
            size_t nl = vl;
            if (nl && (vs[nl - 1] == 'i' || vs[nl - 1] == 'u')) nl--;
            if (lp_fast_number(vs, nl, &v) < 0) {
                if (vs != val) {
                    memcpy(val, vs, vl);
                    val[vl] = 0;
                    vs = val;
                }
                if ((vl == 1 && (val[0] == 't' || val[0] == 'T')) || !strcasecmp(val, "true"))
                    v = 1;
                else if ((vl == 1 && (val[0] == 'f' || val[0] == 'F')) || !strcasecmp(val, "false"))
                    v = 0;
                else {
                    char *e2;
                    val[nl] = 0;
                    errno = 0;
                    v = strtod(val, &e2);
                    if (errno || e2 == val || *e2) return "bad field value";
                }
            }
            if (!isfinite(v)) return "field value must be finite";
            if (nf >= LP_MAX_FIELDS) return "more than 256 fields";
            size_t nlen = pre + kl;
            if (nlen >= sizeof name) nlen = sizeof name - 1;
            memcpy(name + pre, key, nlen - pre);
            int valid;
            const char *metric = lp_name(b, name, nlen, &valid);
            if (!metric) return "out of memory";
            if (!valid) bad_name = 1;
            if (b->n == b->cap) {
                size_t cap = b->cap;
                b->pts = grow_array(b->pts, &cap, b->n + 1, sizeof *b->pts, &b->oom);
                if (b->oom) return "out of memory";
                uint32_t *t = realloc(b->toff, cap * sizeof *t);
                if (!t) {
                    b->oom = 1;
                    return "out of memory";
                }
                b->toff = t;
                b->cap = cap;
            }
            b->toff[b->n] = (uint32_t)tag0;
            b->pts[b->n++] = (store_point){metric, NULL, 0, 0, v}; /* tags set by lineproto_parse */
            nf++;
        }
        if (p + i < end && p[i] == ',') {
            i++;
            continue;
        }
        break;
    }
    while (p + i < end && p[i] == ' ') i++;
    int64_t ms = now_ms;
    if (p + i < end) {
        char tsb[32];
        size_t tl = (size_t)(end - (p + i));
        while (tl && (p[i + tl - 1] == ' ' || p[i + tl - 1] == '\r')) tl--;
        if (!tl || tl >= sizeof tsb) return "bad timestamp";
        memcpy(tsb, p + i, tl);
        tsb[tl] = 0;
        char *e2;
        errno = 0;
        long long t = strtoll(tsb, &e2, 10);
        if (errno || *e2) return "bad timestamp";
        long double lms = (long double)t * mult_ns / 1000000.0L;
        if (!server_valid_ts_ms(lms)) return "timestamp out of range (years 0001 to 9999)";
        ms = (int64_t)lms;
    }
    if (bad_name) return "invalid measurement or field name";
    for (size_t k = first; k < b->n; k++) {
        b->pts[k].ts_ms = ms;
        b->pts[k].ntags = ntags;
    }
    return NULL;
}

int lineproto_parse(lp_batch *b, const char *body, size_t len, int64_t mult_ns, int64_t now_ms,
                    const char *host, size_t max_points, size_t *lines, size_t *bad, char *first,
                    size_t firstlen)
{
    const char *p = body + b->pos, *end = body + len;
    while (p < end && !b->oom && b->n < max_points) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        b->lineno++;
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q < le && *q != '#') {
            (*lines)++;
            size_t before_n = b->n, before_t = b->ntags;
            const char *why = lp_line(b, q, le, mult_ns, now_ms, host);
            if (why) {
                b->n = before_n;
                b->ntags = before_t;
                if (!(*bad)++ && firstlen)
                    snprintf(first, firstlen, "line %zu: %s", b->lineno, why);
            }
        }
        p = nl ? nl + 1 : end;
    }
    b->pos = (size_t)(p - body);
    if (b->oom) return -1;
    /* the tag array has its final address now: point every point at its line's tags */
    for (size_t k = 0; k < b->n; k++) b->pts[k].tags = b->tags + b->toff[k];
    return p < end;
}

void lineproto_free(lp_batch *b)
{
    arena_free(&b->arena);
    free(b->pts);
    free(b->toff);
    free(b->tags);
    free(b->names);
    memset(b, 0, sizeof *b);
}
