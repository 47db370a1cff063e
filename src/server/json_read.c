/* json_read.c — the pieces of the streaming JSON readers (json_read.h),
 * read in place with jansson's rules. */
#include "json_read.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/arena.h"
#include "util/pow10.h"

void jread_init(jread *r, const char *body, size_t len)
{
    memset(r, 0, sizeof *r);
    r->body = body;
    r->end = body ? body + len : NULL; /* (no arithmetic on NULL: a reader started empty) */
}

void jread_free(jread *r)
{
    arena_free(&r->scratch);
}

int jread_fail(jread *r, const char *p, const char *why)
{
    if (!r->err[0]) {
        size_t line = 1, col = 1;
        for (const char *q = r->body; q < p && q < r->end; q++) {
            if (*q == '\n') {
                line++;
                col = 1;
            } else
                col++;
        }
        snprintf(r->err, sizeof r->err, "line %zu, column %zu: %s", line, col, why);
    }
    return -1;
}

/* Length of a valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || (size_t)(end - p) < n) return 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xc0) != 0x80) return 0;
    if (n == 2 && c < 0xc2) return 0;
    if (n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0))) return 0;
    if (n == 4 && (c > 0xf4 || (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))) return 0;
    return n;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

void jread_scratch_reset(jread *r)
{
    arena_reset(&r->scratch);
}

/* (json_read.h) Eight at a time where the machine allows: the first byte
 * that is not plain is found exactly, the lowest flagged byte of each test
 * being a true match. */
const char *jread_plain_run(const char *p, const char *end)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    while (end - p >= 8) {
        uint64_t w, q, b;
        memcpy(&w, p, 8);
        q = w ^ (ones * '"');
        b = w ^ (ones * '\\');
        uint64_t hit =
            (w | ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
        if (hit) return p + (__builtin_ctzll(hit) >> 3);
        p += 8;
    }
#endif
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
        p++;
    }
    return p;
}

/* A string at *pp (after its opening quote): *s, *n its value (a span of
 * the body, or of the scratch buffer when it had escapes; valid until
 * jread_scratch_reset); *pp moves past the closing quote. */
int jread_string(jread *r, const char **pp, const char **s, size_t *n)
{
    const char *p = *pp, *end = r->end, *start = p;
    /* the common case: no escape, plain ASCII or valid UTF-8 */
    while ((p = jread_plain_run(p, end)) < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *s = start;
            *n = (size_t)(p - start);
            *pp = p + 1;
            return 0;
        }
        if (c == '\\') break;
        if (c < 0x20) return jread_fail(r, p, "control character in a string");
        if (c >= 0x80) {
            size_t k = utf8_len((const unsigned char *)p, (const unsigned char *)end);
            if (!k) return jread_fail(r, p, "invalid UTF-8 in a string");
            p += k;
        } else
            p++;
    }
    if (p >= end) return jread_fail(r, p, "premature end of input in a string");
    /* with escapes: unescaped into the scratch arena, which the raw text
     * bounds (an escape never grows) */
    const char *q = p;
    while (q < end && *q != '"') q += *q == '\\' ? 2 : 1;
    if (q >= end) return jread_fail(r, q > end ? end : q, "premature end of input in a string");
    char *o = arena_alloc(&r->scratch, (size_t)(q - start) + 1), *o0 = o;
    if (!o) return jread_fail(r, p, "out of memory");
    memcpy(o, start, (size_t)(p - start));
    o += p - start;
    while (p < end && *p != '"') {
        unsigned char c = (unsigned char)*p;
        if (c == '\\') {
            if (p + 1 >= end) break;
            char e = p[1];
            p += 2;
            switch (e) {
            case '"':
            case '\\':
            case '/':
                *o++ = e;
                break;
            case 'b':
                *o++ = '\b';
                break;
            case 'f':
                *o++ = '\f';
                break;
            case 'n':
                *o++ = '\n';
                break;
            case 'r':
                *o++ = '\r';
                break;
            case 't':
                *o++ = '\t';
                break;
            case 'u': {
                unsigned u;
                if (end - p < 4 || hex4(p, &u) < 0) return jread_fail(r, p, "invalid \\u escape");
                p += 4;
                if (u >= 0xd800 && u < 0xdc00) {
                    unsigned lo;
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) < 0 ||
                        lo < 0xdc00 || lo > 0xdfff)
                        return jread_fail(r, p, "invalid Unicode surrogate pair");
                    p += 6;
                    u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                } else if (u >= 0xdc00 && u < 0xe000)
                    return jread_fail(r, p, "invalid Unicode surrogate");
                if (u == 0) /* jansson without JSON_ALLOW_NUL */
                    return jread_fail(r, p, "\\u0000 is not allowed");
                if (u < 0x80)
                    *o++ = (char)u;
                else if (u < 0x800) {
                    *o++ = (char)(0xc0 | (u >> 6));
                    *o++ = (char)(0x80 | (u & 0x3f));
                } else if (u < 0x10000) {
                    *o++ = (char)(0xe0 | (u >> 12));
                    *o++ = (char)(0x80 | ((u >> 6) & 0x3f));
                    *o++ = (char)(0x80 | (u & 0x3f));
                } else {
                    *o++ = (char)(0xf0 | (u >> 18));
                    *o++ = (char)(0x80 | ((u >> 12) & 0x3f));
                    *o++ = (char)(0x80 | ((u >> 6) & 0x3f));
                    *o++ = (char)(0x80 | (u & 0x3f));
                }
                break;
            }
            default:
                return jread_fail(r, p - 1, "invalid escape");
            }
        } else {
            size_t bl = 1;
            if (c < 0x20) return jread_fail(r, p, "control character in a string");
            if (c >= 0x80) {
                bl = utf8_len((const unsigned char *)p, (const unsigned char *)end);
                if (!bl) return jread_fail(r, p, "invalid UTF-8 in a string");
            }
            memcpy(o, p, bl);
            o += bl;
            p += bl;
        }
    }
    if (p >= end) return jread_fail(r, p, "premature end of input in a string");
    *o = 0;
    *pp = p + 1;
    *s = o0;
    *n = (size_t)(o - o0);
    return 0;
}

/* A number at *pp: its span; *is_int when it has no fraction or exponent. */
int jread_number(jread *r, const char **pp, const char **s, size_t *n, int *is_int)
{
    const char *p = *pp, *end = r->end, *st = p;
    *is_int = 1;
    if (p < end && *p == '-') p++;
    if (p >= end || *p < '0' || *p > '9') return jread_fail(r, p, "invalid number");
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9') p++;
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return jread_fail(r, p, "invalid number");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return jread_fail(r, p, "invalid number");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    *s = st;
    *n = (size_t)(p - st);
    *pp = p;
    if (*is_int && *n - (*st == '-') > 18) { /* jansson refuses an integer beyond 64 bits */
        char buf[32];
        if (*n >= sizeof buf) return jread_fail(r, st, "too big integer");
        memcpy(buf, st, *n);
        buf[*n] = 0;
        errno = 0;
        (void)strtoll(buf, NULL, 10);
        if (errno == ERANGE) return jread_fail(r, st, "too big integer");
    } else if (*n > 1000)
        return jread_fail(r, st, "number too long");
    return 0;
}

/* Skips any JSON value at *pp (strings, numbers, literals, nesting). */
int jread_skip(jread *r, const char **pp, int depth)
{
    const char *p = jread_ws(*pp, r->end), *end = r->end;
    if (p >= end) return jread_fail(r, p, "premature end of input");
    const char *s;
    size_t n;
    int isint;
    switch (*p) {
    case '"':
        p++;
        if (jread_string(r, &p, &s, &n) < 0) return -1;
        break;
    case '{':
    case '[': {
        char close = *p == '{' ? '}' : ']';
        int obj = *p == '{';
        if (depth >= JREAD_MAX_DEPTH) return jread_fail(r, p, "maximum parsing depth reached");
        p = jread_ws(p + 1, end);
        if (p < end && *p == close) {
            p++;
            break;
        }
        for (;;) {
            if (obj) {
                p = jread_ws(p, end);
                if (p >= end || *p != '"') return jread_fail(r, p, "string or '}' expected");
                p++;
                if (jread_string(r, &p, &s, &n) < 0) return -1;
                p = jread_ws(p, end);
                if (p >= end || *p != ':') return jread_fail(r, p, "':' expected");
                p++;
            }
            if (jread_skip(r, &p, depth + 1) < 0) return -1;
            p = jread_ws(p, end);
            if (p < end && *p == ',') {
                p++;
                continue;
            }
            if (p < end && *p == close) {
                p++;
                break;
            }
            return jread_fail(r, p, obj ? "',' or '}' expected" : "',' or ']' expected");
        }
        break;
    }
    case 't':
    case 'f':
    case 'n': {
        const char *w = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
        size_t l = strlen(w);
        if ((size_t)(end - p) < l || memcmp(p, w, l)) return jread_fail(r, p, "invalid token");
        p += l;
        break;
    }
    default: {
        /* a real that overflows is refused wherever it stands, as jansson
         * refuses it (fuzz_serve_events: one in a member nobody reads) */
        double d;
        if (jread_number(r, &p, &s, &n, &isint) < 0) return -1;
        if (!isint && jread_number_value(s, n, &d) < 0)
            return jread_fail(r, s, "real number overflow");
    }
    }
    *pp = p;
    return 0;
}

const double jread_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

int jread_number_valued(jread *r, const char **pp, const char **s, size_t *n, int *is_int,
                        double *d)
{
    jread_value v;
    if (jread_number_usual(pp, r->end, &v)) {
        *d = v.d;
        *is_int = v.kind == JV_INT;
        *s = v.s;
        *n = v.n;
        return 0;
    }
    if (jread_number(r, pp, s, n, is_int) < 0) return -1;
    return jread_number_value(*s, *n, d) < 0 ? -2 : 0;
}

int jread_scalar(jread *r, const char **pp, jread_value *v)
{
    const char *p = jread_ws(*pp, r->end);
    memset(v, 0, sizeof *v);
    if (p < r->end && *p == '"') {
        p++;
        v->kind = JV_STRING;
        if (jread_string(r, &p, &v->s, &v->n) < 0) return -1;
    } else if (p < r->end && (*p == '-' || (*p >= '0' && *p <= '9'))) {
        if (!jread_number_usual(&p, r->end, v)) {
            int isint, rc = jread_number_valued(r, &p, &v->s, &v->n, &isint, &v->d);
            if (rc == -1) return -1;
            if (rc < 0) return jread_fail(r, v->s, "real number overflow");
            v->kind = isint ? JV_INT : JV_REAL;
        }
        if (v->kind == JV_INT && v->d == 0) v->d = 0; /* "-0" is the integer 0 */
    } else {
        const char *st = p;
        if (jread_skip(r, &p, 1) < 0) return -1;
        v->kind = *st == '{' ? JV_OBJECT : *st == 'n' ? JV_NULL : JV_OTHER;
    }
    *pp = p;
    return 0;
}

/* w / 10^f (f <= 19), correctly rounded to the nearest double, ties to
 * even, as strtod rounds: one exact division (128 by 64 bits) gives the 54
 * leading bits of the quotient and whether a remainder is left, which is
 * all that rounding needs.  For the decimals that miss the one-division
 * path (a mantissa past 2^53: the 17 digits of a float printed whole, as
 * Python's json writes 1/3), at a fraction of strtod's cost. */
static double div_pow10(uint64_t w, int f)
{
    typedef unsigned __int128 u128;
    uint64_t d = util_pow10[f];
    int bw = 64 - __builtin_clzll(w), bd = 64 - __builtin_clzll(d);
    /* w * 2^s / d lies in [2^53, 2^54) for s = 53 + bd - bw or one more */
    int s = 53 + bd - bw;
    u128 num, q;
    for (;;) {
        num = s >= 0 ? (u128)w << s : (u128)(w >> -s); /* s < 0: w's low bits, below */
        q = num / d;
        if (q >> 53) break;
        s++;
    }
    /* what is left: exact, w's bits shifted out included */
    int rest = num != q * d || (s < 0 && (w & ((1ull << -s) - 1)));
    uint64_t m = (uint64_t)(q >> 1);
    if ((q & 1) && (rest || (m & 1))) m++; /* past half, or half and odd */
    int e = 1 - s;                         /* the value is m * 2^e */
    if (m >> 53) {
        m >>= 1;
        e++;
    }
    uint64_t bits = ((uint64_t)(e + 52 + 1023) << 52) | (m & ((1ull << 52) - 1));
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* [+-]digits[.digits] with at most 19 significant digits and 19 decimals:
 * 1 with its value exactly; 0 for any other form. */
static int decimal_exact(const char *s, size_t n, double *out)
{
    size_t i = 0;
    int neg = 0, sig = 0, f = -1, any = 0;
    uint64_t w = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    for (; i < n; i++) {
        unsigned c = (unsigned char)s[i] - '0';
        if (c < 10) {
            any = 1;
            if (f >= 0) f++;
            if (!w && !c) continue; /* a leading zero */
            if (++sig > 19) return 0;
            w = w * 10 + c;
        } else if (s[i] == '.' && f < 0)
            f = 0;
        else
            return 0;
    }
    if (!any || !w || f > 19) return 0;
    double x = f > 0 ? div_pow10(w, f) : (double)w;
    *out = neg ? -x : x;
    return 1;
}

int jread_number_value(const char *s, size_t n, double *out)
{
    /* the usual form exactly without strtod: [-]digits[.digits] with a
     * mantissa below 2^53 and at most 22 decimals (an exact power of ten):
     * one correctly rounded division, as strtod's result */
    size_t i = 0;
    int neg = 0, digits = 0, frac = -1;
    uint64_t m = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    for (; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d < 10) {
            if (m > (1ull << 53) / 10) break;
            m = m * 10 + d;
            digits++;
            if (frac >= 0) frac++;
        } else if (s[i] == '.' && frac < 0)
            frac = 0;
        else
            break;
    }
    if (i == n && digits && m <= (1ull << 53) && frac <= 22) {
        double x = (double)m;
        if (frac > 0) x /= jread_pow10[frac];
        *out = neg ? -x : x;
        return 0;
    }
    if (decimal_exact(s, n, out)) return 0;
    char buf[1100];
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end) return -1;
    if (errno == ERANGE && isinf(v)) return -1; /* jansson: "real number overflow" */
    *out = v;
    return 0;
}

const char *jread_int_text(const jread_value *v, size_t *len)
{
    if (v->n == 2 && v->s[0] == '-' && v->s[1] == '0') {
        *len = 1;
        return v->s + 1;
    }
    *len = v->n;
    return v->s;
}
