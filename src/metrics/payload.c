/* payload.c — the payload-block scanner and parser (see payload.h).
 *
 * The scanner is a byte-level state machine: outside a block it matches the
 * START marker (KMP, so "@@@@MONITORING..." still matches), inside it
 * buffers the content while matching the END marker.  Runs of bytes without
 * an '@' are handled with memchr and passed on in one piece. */
#include "metrics/payload.h"
#include "metrics/jsonscan.h"
#include "metrics/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SL (sizeof PAYLOAD_START - 1)
#define EL (sizeof PAYLOAD_END - 1)

struct payload_scanner {
    int strip;
    size_t cap;
    payload_cbs cb;
    int inside, overflow, eat_nl;
    size_t m;  /* marker bytes matched so far */
    char *buf; /* block content (+ a partial END) */
    size_t blen, bcap;
    unsigned char fs[SL], fe[EL]; /* KMP failure tables */
};

static void payload_kmp(const char *pat, size_t n, unsigned char *f)
{
    f[0] = 0;
    for (size_t i = 1, k = 0; i < n; i++) {
        while (k > 0 && pat[i] != pat[k]) k = f[k - 1];
        if (pat[i] == pat[k]) k++;
        f[i] = (unsigned char)k;
    }
}

static size_t payload_step(const char *pat, const unsigned char *f, size_t m, char c)
{
    while (m > 0 && pat[m] != c) m = f[m - 1];
    if (pat[m] == c) m++;
    return m;
}

payload_scanner *payload_new(int strip, size_t cap, const payload_cbs *cb)
{
    payload_scanner *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->strip = strip;
    s->cap = cap ? cap : PAYLOAD_CAP;
    s->cb = *cb;
    payload_kmp(PAYLOAD_START, SL, s->fs);
    payload_kmp(PAYLOAD_END, EL, s->fe);
    return s;
}

void payload_free(payload_scanner *s)
{
    if (s) {
        free(s->buf);
        free(s);
    }
}

size_t payload_held(const payload_scanner *s)
{
    if (!s->strip) return 0;
    if (!s->inside) return s->m;
    return s->overflow ? 0 : SL + s->blen;
}

/* Bytes passed on: in strip mode from here, otherwise the whole chunk was
 * already passed on by payload_feed(). */
static void payload_out(payload_scanner *s, const char *p, size_t n)
{
    if (s->strip && n && s->cb.out) s->cb.out(s->cb.ctx, p, n);
}

static int payload_append(payload_scanner *s, const char *p, size_t n)
{
    if (s->blen + n > s->bcap) {
        size_t nc = s->bcap ? s->bcap : 4096;
        while (nc < s->blen + n) nc *= 2;
        char *nb = realloc(s->buf, nc);
        if (!nb) return -1;
        s->buf = nb;
        s->bcap = nc;
    }
    memcpy(s->buf + s->blen, p, n);
    s->blen += n;
    return 0;
}

/* The block is too big (or memory ran out): report it, pass on what was held
 * and let the rest of it through until END. */
static void payload_give_up(payload_scanner *s, const char *reason)
{
    if (s->cb.error) s->cb.error(s->cb.ctx, reason, s->blen);
    payload_out(s, PAYLOAD_START, SL);
    payload_out(s, s->buf, s->blen);
    s->overflow = 1;
    s->blen = 0;
    if (s->bcap > 65536) { /* give the memory back */
        free(s->buf);
        s->buf = NULL;
        s->bcap = 0;
    }
}

void payload_feed(payload_scanner *s, const char *p, size_t n)
{
    if (!s->strip && n && s->cb.out) s->cb.out(s->cb.ctx, p, n);
    size_t i = 0;
    while (i < n) {
        if (s->eat_nl) {
            s->eat_nl = 0;
            if (p[i] == '\n') {
                i++;
                continue;
            }
        }
        if (s->m == 0) { /* fast path: up to the next '@' */
            const char *at = memchr(p + i, '@', n - i);
            size_t j = at ? (size_t)(at - p) : n;
            if (j > i) {
                if (!s->inside || s->overflow) {
                    payload_out(s, p + i, j - i);
                } else if (s->blen + (j - i) > s->cap) {
                    payload_give_up(s, "payload block too large");
                    payload_out(s, p + i, j - i);
                } else if (payload_append(s, p + i, j - i) < 0) {
                    payload_give_up(s, "out of memory");
                    payload_out(s, p + i, j - i);
                }
                i = j;
                continue;
            }
        }
        char c = p[i++];
        if (!s->inside) {
            size_t k = payload_step(PAYLOAD_START, s->fs, s->m, c);
            size_t rel = s->m + 1 - k; /* bytes that can no longer start a marker */
            if (rel > s->m) {
                payload_out(s, PAYLOAD_START, s->m);
                payload_out(s, &c, 1);
            } else {
                payload_out(s, PAYLOAD_START, rel);
            }
            s->m = k;
            if (k == SL) {
                s->inside = 1;
                s->overflow = 0;
                s->m = 0;
                s->blen = 0;
            }
        } else if (s->overflow) {
            payload_out(s, &c, 1);
            s->m = payload_step(PAYLOAD_END, s->fe, s->m, c);
            if (s->m == EL) {
                s->inside = s->overflow = 0;
                s->m = 0;
            }
        } else {
            s->m = payload_step(PAYLOAD_END, s->fe, s->m, c);
            if (s->m == EL) {
                if (s->cb.block) s->cb.block(s->cb.ctx, s->buf ? s->buf : "", s->blen + 1 - EL);
                s->inside = 0;
                s->m = 0;
                s->blen = 0;
                s->eat_nl = s->strip;
            } else if (s->blen + 1 - s->m > s->cap) {
                payload_give_up(s, "payload block too large");
                payload_out(s, &c, 1);
            } else if (payload_append(s, &c, 1) < 0) {
                payload_give_up(s, "out of memory");
                payload_out(s, &c, 1);
            }
        }
    }
}

void payload_flush(payload_scanner *s)
{
    s->eat_nl = 0;
    if (!s->inside && s->m) {
        payload_out(s, PAYLOAD_START, s->m);
        s->m = 0;
    }
}

void payload_abandon(payload_scanner *s, const char *reason)
{
    payload_flush(s);
    if (s->strip && s->inside && !s->overflow) payload_give_up(s, reason);
}

void payload_finish(payload_scanner *s)
{
    payload_flush(s);
    if (s->inside && !s->overflow) {
        if (s->cb.error) s->cb.error(s->cb.ctx, "payload block without END marker", s->blen);
        payload_out(s, PAYLOAD_START, SL);
        payload_out(s, s->buf, s->blen);
    }
    s->inside = s->overflow = 0;
    s->m = 0;
    s->blen = 0;
}

/* ---- block → events ---- */

static int payload_key(const jscan_item *it, const char *k)
{
    size_t n = strlen(k);
    return it->klen == n && !memcmp(it->key, k, n);
}

/* The decoded text of a valid JSON key (escapes resolved, \uXXXX to UTF-8)
 * into out, which needs n bytes (decoding never lengthens).  Returns its length. */
static size_t payload_key_text(const char *k, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (k[i] != '\\' || i + 1 >= n) {
            out[o++] = k[i];
            continue;
        }
        char c = k[++i];
        switch (c) {
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'u': {
            unsigned cp = 0;
            if (i + 4 >= n) return o;
            for (int d = 1; d <= 4; d++) {
                char h = k[i + d];
                cp = cp * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
            }
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < n && k[i + 1] == '\\' && k[i + 2] == 'u') {
                unsigned lo = 0;
                for (int d = 3; d <= 6; d++) {
                    char h = k[i + d];
                    lo = lo * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                }
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            /* \uXXXX is 6 bytes, its UTF-8 at most 3 (4 for a 12-byte pair) */
            if (cp < 0x80)
                out[o++] = (char)cp;
            else if (cp < 0x800) {
                out[o++] = (char)(0xC0 | cp >> 6);
                out[o++] = (char)(0x80 | (cp & 63));
            } else if (cp < 0x10000) {
                out[o++] = (char)(0xE0 | cp >> 12);
                out[o++] = (char)(0x80 | ((cp >> 6) & 63));
                out[o++] = (char)(0x80 | (cp & 63));
            } else {
                out[o++] = (char)(0xF0 | cp >> 18);
                out[o++] = (char)(0x80 | ((cp >> 12) & 63));
                out[o++] = (char)(0x80 | ((cp >> 6) & 63));
                out[o++] = (char)(0x80 | (cp & 63));
            }
            break;
        }
        default:
            out[o++] = c;
            break; /* \" \\ \/ */
        }
    }
    return o;
}

static int payload_dkey(const char *d, size_t n, const char *k)
{
    return strlen(k) == n && !memcmp(d, k, n);
}

static int payload_number(const char *p, size_t n, double *v)
{
    char tmp[64], *end;
    if (n == 0 || n >= sizeof tmp || !(*p == '-' || (*p >= '0' && *p <= '9'))) return -1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    *v = strtod(tmp, &end);
    return *end ? -1 : 0;
}

/* A timestamp: epoch seconds in [1, 1e11), the rule of the wire (wire.h);
 * 1e999 or -5 is none. */
static int payload_ts(const char *p, size_t n, double *v)
{
    double t;
    if (payload_number(p, n, &t) < 0 || !(t >= WIRE_MIN_TS && t < WIRE_MAX_TS)) return -1;
    *v = t;
    return 0;
}

/* Be liberal in what is accepted: Panorama's own example block puts the
 * block's "ts" inside the payload list (`[ {...}, "ts": 1552878285 ]`).
 * Members written as list items are moved to the block object; the events
 * then say so in "payload_repaired".  Returns a new block (NULL if the text
 * is not of that form) and the names moved in *what. */
static char *payload_repair(const char *json, size_t n, size_t *outn, char *what, size_t wn)
{
    const char *end = json + n, *p = json;
    const char *obj = jscan_ws(json, end);
    if (obj >= end || *obj != '{') return NULL;
    const char *pl = NULL;
    for (const char *q = json; (q = memmem(q, (size_t)(end - q), "\"payload\"", 9)); q += 9) {
        const char *c = jscan_ws(q + 9, end);
        if (c < end && *c == ':' && (c = jscan_ws(c + 1, end)) < end && *c == '[') {
            pl = c;
            break;
        }
    }
    if (!pl) return NULL;
    char *out = malloc(2 * n + 8), *moved = malloc(n + 1);
    if (!out || !moved) {
        free(out);
        free(moved);
        return NULL;
    }
    size_t o = 0, mv = 0, items = 0;
    what[0] = 0;
    memcpy(out, json, (size_t)(pl + 1 - json)); /* up to and with '[' */
    o = (size_t)(pl + 1 - json);
    p = jscan_ws(pl + 1, end);
    while (p < end && *p != ']') {
        const char *v = jscan_skip(p, end);
        if (!v) goto bad;
        const char *c = jscan_ws(v, end);
        if (*p == '"' && c < end && *c == ':') { /* "key": value inside the list */
            const char *ve = jscan_skip(jscan_ws(c + 1, end), end);
            if (!ve) goto bad;
            if (mv) moved[mv++] = ',';
            memcpy(moved + mv, p, (size_t)(ve - p));
            mv += (size_t)(ve - p);
            size_t wl = strlen(what);
            snprintf(what + wl, wn - wl, "%s%.*s", wl ? ", " : "", (int)(v - p), p);
            c = jscan_ws(ve, end);
        } else {
            if (items++) out[o++] = ',';
            memcpy(out + o, p, (size_t)(v - p));
            o += (size_t)(v - p);
        }
        if (c < end && *c == ',') c = jscan_ws(c + 1, end);
        p = c;
    }
    if (p >= end || !mv) goto bad;
    memcpy(out + o, p, (size_t)(end - p)); /* "]" and the rest */
    o += (size_t)(end - p);
    /* the moved members go first in the object: {"ts":1,...} */
    size_t at = (size_t)(obj - json) + 1;
    memmove(out + at + mv + 1, out + at, o - at);
    memcpy(out + at, moved, mv);
    out[at + mv] = ',';
    o += mv + 1;
    free(moved);
    *outn = o;
    return out;
bad:
    free(out);
    free(moved);
    return NULL;
}

static int payload_parse_block(const char *json, size_t n, double now, payload_event_fn fn,
                               payload_reserved_fn reserved, void *ctx, const char **err,
                               const char *repaired);

int payload_parse(const char *json, size_t n, double now, payload_event_fn fn,
                  payload_reserved_fn reserved, void *ctx, const char **err)
{
    const char *ve = jscan_skip(json, json + n);
    if (!ve) {
        char what[256], note[320];
        size_t fn_len;
        char *fixed = payload_repair(json, n, &fn_len, what, sizeof what);
        if (fixed) {
            snprintf(note, sizeof note, "moved %s out of the payload list into the block", what);
            int r = payload_parse_block(fixed, fn_len, now, fn, reserved, ctx, err, note);
            free(fixed);
            if (r >= 0) return r;
        }
    }
    return payload_parse_block(json, n, now, fn, reserved, ctx, err, NULL);
}

static int payload_parse_block(const char *json, size_t n, double now, payload_event_fn fn,
                               payload_reserved_fn reserved, void *ctx, const char **err,
                               const char *repaired)
{
    const char *end = json + n;
    const char *ve = jscan_skip(json, end);
    if (!ve) {
        *err = "payload block is not valid JSON";
        return -1;
    }
    if (jscan_ws(ve, end) != end) {
        *err = "payload block has text after the JSON object";
        return -1;
    }
    jscan_iter it;
    if (!jscan_begin(&it, json, ve, '{')) {
        *err = "payload block is not a JSON object";
        return -1;
    }
    char name[WIRE_MAX_NAME + 1] = PAYLOAD_DEFAULT_EVENT;
    double block_ts = now;
    const char *pl = NULL;
    size_t pllen = 0;
    jscan_item m;
    while (jscan_next(&it, &m, 1)) {
        if (payload_key(&m, "monitoring_event")) {
            if (m.vlen < 2 || m.val[0] != '"' ||
                !wire_name_ok(m.val + 1, m.vlen - 2, WIRE_MAX_NAME)) {
                *err = "monitoring_event is not a name (A-Z a-z 0-9 _ . : / -)";
                return -1;
            }
            memcpy(name, m.val + 1, m.vlen - 2);
            name[m.vlen - 2] = 0;
        } else if (payload_key(&m, "ts")) {
            if (payload_ts(m.val, m.vlen, &block_ts) < 0) {
                *err = "ts is not epoch seconds (1 to 1e11)";
                return -1;
            }
        } else if (payload_key(&m, "payload")) {
            pl = m.val;
            pllen = m.vlen;
        }
    }
    if (!pl) {
        *err = "payload block has no \"payload\" list";
        return -1;
    }
    jscan_iter ai;
    if (!jscan_begin(&ai, pl, pl + pllen, '[')) {
        *err = "\"payload\" is not a list";
        return -1;
    }
    jscan_item item;
    int count = 0;
    while (jscan_next(&ai, &item, 0)) { /* check first: all or nothing */
        if (item.val[0] != '{') {
            *err = "\"payload\" has an item that is not an object";
            return -1;
        }
        count++;
    }
    /* Keys are compared decoded: "\u0065vent" is "event", and of two keys
     * that decode alike only the last is kept (one key, one value). */
    typedef struct {
        jscan_item m;
        const char *dk;
        size_t dkl;
    } kv;
    size_t extra = repaired ? 2 * strlen(repaired) + 32 : 0;
    char *out = malloc(pllen + 1 + extra), *dkeys = malloc(pllen + 1);
    kv *kvs = malloc(sizeof *kvs * (pllen / 4 + 1)); /* an item of k keys has >= 4k bytes */
    if (!out || !dkeys || !kvs) {
        free(out);
        free(dkeys);
        free(kvs);
        *err = "out of memory";
        return -1;
    }
    jscan_begin(&ai, pl, pl + pllen, '[');
    while (jscan_next(&ai, &item, 0)) {
        jscan_iter oi;
        jscan_begin(&oi, item.val, item.val + item.vlen, '{');
        double ts = block_ts;
        size_t o = 0, dko = 0, nkv = 0;
        while (jscan_next(&oi, &m, 1)) {
            kv *e = &kvs[nkv++];
            e->m = m;
            e->dk = dkeys + dko;
            e->dkl = payload_key_text(m.key, m.klen, dkeys + dko);
            dko += e->dkl;
        }
        for (size_t i = 0; i < nkv; i++) {
            const kv *e = &kvs[i];
            if (payload_dkey(e->dk, e->dkl, "ts")) {
                double t;
                if (payload_ts(e->m.val, e->m.vlen, &t) == 0) ts = t;
                continue;
            }
            if (payload_dkey(e->dk, e->dkl, "event") || payload_dkey(e->dk, e->dkl, "seq") ||
                (repaired && payload_dkey(e->dk, e->dkl, "payload_repaired")) ||
                (reserved && reserved(ctx, e->dk, e->dkl)))
                continue;
            int later = 0;
            for (size_t j = i + 1; j < nkv && !later; j++)
                later = kvs[j].dkl == e->dkl && !memcmp(kvs[j].dk, e->dk, e->dkl);
            if (later) continue;
            if (o) out[o++] = ',';
            out[o++] = '"';
            memcpy(out + o, e->m.key, e->m.klen);
            o += e->m.klen;
            out[o++] = '"';
            out[o++] = ':';
            o += jscan_minify(e->m.val, e->m.vlen, out + o);
        }
        if (repaired) { /* what was repaired, in the event */
            o += (size_t)sprintf(out + o, "%s\"payload_repaired\":\"", o ? "," : "");
            for (const char *r = repaired; *r; r++) {
                if (*r == '"' || *r == '\\') out[o++] = '\\';
                out[o++] = *r;
            }
            out[o++] = '"';
        }
        fn(ctx, name, ts, out, o);
    }
    free(out);
    free(dkeys);
    free(kvs);
    return count;
}
