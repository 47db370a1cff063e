/* json.c — the JSON writer behind every event (see json.h).
 *
 * Hot path: the sampler builds one kickstart.inv.online event per interval
 * with ~40 numbers; fmt_u64/fmt_fixed below are several times cheaper than
 * snprintf.  The buffer grows geometrically and is reused, so steady state
 * allocates nothing. */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jbuf_init(jbuf *b, size_t cap)
{
    memset(b, 0, sizeof *b);
    b->cap = cap ? cap : 256;
    b->p = malloc(b->cap);
    if (!b->p) {
        b->cap = 0;
        b->oom = 1;
    }
}

void jbuf_free(jbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void jbuf_reset(jbuf *b)
{
    b->len = 0;
    b->comma = 0;
    b->oom = 0;
}

static int jbuf_reserve(jbuf *b, size_t n)
{
    if (b->len + n + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void jbuf_put(jbuf *b, const char *s, size_t n)
{
    if (!jbuf_reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void jbuf_putc(jbuf *b, char c)
{
    if (!jbuf_reserve(b, 1)) return;
    b->p[b->len++] = c;
    b->p[b->len] = 0;
}

void jbuf_puts(jbuf *b, const char *s)
{
    jbuf_put(b, s, strlen(s));
}

/* ---- numbers ---------------------------------------------------------- */

size_t fmt_u64(char *out, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

size_t fmt_i64(char *out, int64_t v)
{
    if (v < 0) {
        out[0] = '-';
        return 1 + fmt_u64(out + 1, (uint64_t)0 - (uint64_t)v);
    }
    return fmt_u64(out, (uint64_t)v);
}

static const uint64_t pow10_tab[] = {
    1ull,      10ull,      100ull,      1000ull,      10000ull,
    100000ull, 1000000ull, 10000000ull, 100000000ull, 1000000000ull,
};

size_t fmt_fixed(char *out, double v, int decimals)
{
    if (decimals < 0) decimals = 0;
    if (decimals > 9) decimals = 9;
    double av = fabs(v);
    uint64_t scale = pow10_tab[decimals];
    if (!(av * (double)scale < 9.0e18)) /* huge (or NaN): exponent form */
        return (size_t)snprintf(out, 48, "%.17g", v);
    uint64_t x = (uint64_t)llround(av * (double)scale);
    size_t n = 0;
    if (v < 0 && x) out[n++] = '-';
    n += fmt_u64(out + n, x / scale);
    if (decimals) {
        out[n++] = '.';
        uint64_t frac = x % scale;
        for (int i = decimals - 1; i >= 0; i--) {
            out[n + (size_t)i] = (char)('0' + frac % 10);
            frac /= 10;
        }
        n += (size_t)decimals;
    }
    return n;
}

/* ---- structure -------------------------------------------------------- */

static void jw_key(jbuf *b, const char *key)
{
    if (key) { /* the usual key needs no escape: one reserve, one copy */
        size_t n = strlen(key), i = 0;
        while (i < n && (unsigned char)key[i] >= 0x20 && (unsigned char)key[i] < 0x80 &&
               key[i] != '"' && key[i] != '\\')
            i++;
        if (i == n && jbuf_reserve(b, n + 4)) {
            char *p = b->p + b->len;
            if (b->comma) *p++ = ',';
            *p++ = '"';
            memcpy(p, key, n);
            p += n;
            *p++ = '"';
            *p++ = ':';
            b->len = (size_t)(p - b->p);
            b->p[b->len] = 0;
            b->comma = 1;
            return;
        }
    }
    if (b->comma) jbuf_putc(b, ',');
    b->comma = 1;
    if (key) {
        jbuf_putc(b, '"');
        jw_escape(b, key, strlen(key));
        jbuf_put(b, "\":", 2);
    }
}

void jw_obj_open(jbuf *b, const char *key)
{
    jw_key(b, key);
    jbuf_putc(b, '{');
    b->comma = 0;
}
void jw_obj_close(jbuf *b)
{
    jbuf_putc(b, '}');
    b->comma = 1;
}
void jw_arr_open(jbuf *b, const char *key)
{
    jw_key(b, key);
    jbuf_putc(b, '[');
    b->comma = 0;
}
void jw_arr_close(jbuf *b)
{
    jbuf_putc(b, ']');
    b->comma = 1;
}

size_t jw_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0xC2)
        return 0;
    else if (c < 0xE0) {
        len = 2;
        min = 0x80;
    } else if (c < 0xF0) {
        len = 3;
        min = 0x800;
    } else if (c < 0xF5) {
        len = 4;
        min = 0x10000;
    } else
        return 0;
    if (n < len) return 0;
    unsigned cp = c & (0x3F >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

void jw_escape(jbuf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run = 0;
    static const char hex[] = "0123456789abcdef";
    while (i < n) {
        unsigned c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        jbuf_put(b, (const char *)s + run, i - run);
        if (c >= 0x80) {
            size_t l = jw_utf8_len(s + i, n - i);
            if (l)
                jbuf_put(b, (const char *)s + i, l), i += l;
            else
                jbuf_put(b, "\\ufffd", 6), i++;
        } else {
            char e[6] = {'\\', 0};
            switch (c) {
            case '"':
                e[1] = '"';
                jbuf_put(b, e, 2);
                break;
            case '\\':
                e[1] = '\\';
                jbuf_put(b, e, 2);
                break;
            case '\n':
                e[1] = 'n';
                jbuf_put(b, e, 2);
                break;
            case '\r':
                e[1] = 'r';
                jbuf_put(b, e, 2);
                break;
            case '\t':
                e[1] = 't';
                jbuf_put(b, e, 2);
                break;
            case '\b':
                e[1] = 'b';
                jbuf_put(b, e, 2);
                break;
            case '\f':
                e[1] = 'f';
                jbuf_put(b, e, 2);
                break;
            default:
                e[1] = 'u';
                e[2] = '0';
                e[3] = '0';
                e[4] = hex[c >> 4];
                e[5] = hex[c & 15];
                jbuf_put(b, e, 6);
            }
            i++;
        }
        run = i;
    }
    jbuf_put(b, (const char *)s + run, i - run);
}

void jw_strn(jbuf *b, const char *key, const char *v, size_t n)
{
    jw_key(b, key);
    jbuf_putc(b, '"');
    jw_escape(b, v, n);
    jbuf_putc(b, '"');
}

void jw_str(jbuf *b, const char *key, const char *v)
{
    if (!v) {
        jw_null(b, key);
        return;
    }
    jw_strn(b, key, v, strlen(v));
}

void jw_u64(jbuf *b, const char *key, uint64_t v)
{
    char t[24];
    jw_key(b, key);
    jbuf_put(b, t, fmt_u64(t, v));
}

void jw_i64(jbuf *b, const char *key, int64_t v)
{
    char t[24];
    jw_key(b, key);
    jbuf_put(b, t, fmt_i64(t, v));
}

void jw_fixed(jbuf *b, const char *key, double v, int decimals)
{
    if (!isfinite(v)) {
        jw_null(b, key);
        return;
    }
    char t[64];
    jw_key(b, key);
    jbuf_put(b, t, fmt_fixed(t, v, decimals));
}

size_t fmt_num(char *out, double v)
{
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) { /* shortest that round-trips */
        n = snprintf(out, 40, "%.*g", prec, v);
        if (strtod(out, NULL) == v) break;
    }
    return (size_t)n;
}

void jw_num(jbuf *b, const char *key, double v)
{
    if (!isfinite(v)) {
        jw_null(b, key);
        return;
    }
    char t[40];
    size_t n = fmt_num(t, v);
    jw_key(b, key);
    jbuf_put(b, t, n);
}

void jw_bool(jbuf *b, const char *key, int v)
{
    jw_key(b, key);
    if (v)
        jbuf_put(b, "true", 4);
    else
        jbuf_put(b, "false", 5);
}

void jw_null(jbuf *b, const char *key)
{
    jw_key(b, key);
    jbuf_put(b, "null", 4);
}

void jw_raw(jbuf *b, const char *key, const char *json, size_t n)
{
    jw_key(b, key);
    jbuf_put(b, json, n);
}
