/* json_read.h — the pieces of a streaming JSON reader (json_read.c): a
 * string, a number, any value skipped, a scalar member, each read in place
 * from a span of text with the exact rules of jansson (RFC 8259, UTF-8
 * strings, no \u0000, integers that fit in 64 bits, reals that do not
 * overflow, nesting up to 2048), so that a reader built of them accepts
 * and refuses what the tree-building parser it replaces did.  Strings are
 * spans of the text, or of a scratch arena when they hold an escape.
 *
 * The readers of the ingest bodies are built of them: put_reader.c
 * (/api/put) and event_reader.c (/api/events, the Unix socket). */
#ifndef JOBSCOPE_JSON_READ_H
#define JOBSCOPE_JSON_READ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "util/arena.h"

#define JREAD_MAX_DEPTH 2048

typedef enum jread_kind {
    JV_NONE,
    JV_STRING,
    JV_INT,
    JV_REAL,
    JV_NULL,
    JV_OBJECT,
    JV_OTHER /* true, false, an array */
} jread_kind;

/* A value: kind, text (a string unescaped, a number as written) and, for
 * a number, its value. */
typedef struct jread_value {
    jread_kind kind;
    const char *s;
    size_t n;
    double d;
} jread_value;

typedef struct jread {
    const char *body, *end;
    arena scratch; /* unescaped strings */
    char err[160]; /* "line L, column C: why" */
} jread;

/* Starts reading [body, body+len). */
void jread_init(jread *r, const char *body, size_t len);
/* Frees the scratch arena. */
void jread_free(jread *r);
/* Forgets the strings unescaped so far (their memory is reused). */
void jread_scratch_reset(jread *r);
/* Records the first error at p ("line L, column C: why"); returns -1. */
int jread_fail(jread *r, const char *p, const char *why);
/* p past JSON whitespace (inline: the readers call it between every two
 * tokens). */
static inline const char *jread_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    return p;
}

/* Whether a[0..n) and b[0..n) are the same bytes: inline, eight at a
 * time, for the short names of a data point, where a call to memcmp cost
 * more than the compare. */
static inline int jread_same_bytes(const char *a, const char *b, size_t n)
{
    uint64_t x, y;
    uint32_t u, v;
    if (n >= 8) { /* whole words, the last one overlapping the one before */
        for (; n > 8; n -= 8, a += 8, b += 8) {
            memcpy(&x, a, 8);
            memcpy(&y, b, 8);
            if (x != y) return 0;
        }
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) { /* two words that overlap */
        uint32_t u2, v2;
        memcpy(&u, a, 4);
        memcpy(&v, b, 4);
        memcpy(&u2, a + n - 4, 4);
        memcpy(&v2, b + n - 4, 4);
        return u == v && u2 == v2;
    }
    for (; n; n--)
        if (*a++ != *b++) return 0;
    return 1;
}

/* p past the plain bytes of a string: printable ASCII other than '"' and
 * '\\' (a string of only those is its own text, no escape to undo). */
const char *jread_plain_run(const char *p, const char *end);
/* A string at *pp, just after its opening quote: *s, *n its value (a span
 * of the text, or of the scratch arena); *pp moves past the closing quote.
 * 0, or -1 with the error. */
int jread_string(jread *r, const char **pp, const char **s, size_t *n);
/* A number at *pp: its span; *is_int when it has no fraction or exponent. */
int jread_number(jread *r, const char **pp, const char **s, size_t *n, int *is_int);
/* Powers of ten, exact: 1e0 .. 1e22. */
extern const double jread_pow10[23];

/* The usual number at *pp, [-]digits[.digits] with at most 18 digits (no
 * overflow, and no 64-bit check for an integer) whose mantissa is at most
 * 2^53, read in one pass with the value jread_number_value gives it (one
 * correctly rounded division): 1 with *v (kind, text, value; "-0" as
 * written, -0.0) and *pp past it; 0, nothing changed, for any other form,
 * valid or not.  Inline: the readers call it for every number. */
static inline int jread_number_usual(const char **pp, const char *end, jread_value *v)
{
    const char *p = *pp, *st = p;
    int neg = p < end && *p == '-';
    p += neg;
    const char *d0 = p;
    uint64_t m = 0;
    unsigned c;
    if (p < end && *p == '0')
        p++;
    else
        while (p < end && (c = (unsigned)(unsigned char)*p - '0') < 10) {
            m = m * 10 + c;
            p++;
        }
    if (p == d0) return 0;
    int frac = 0;
    if (p < end && *p == '.') {
        const char *f0 = ++p;
        while (p < end && (c = (unsigned)(unsigned char)*p - '0') < 10) {
            m = m * 10 + c;
            p++;
        }
        if (!(frac = (int)(p - f0))) return 0;
    }
    if (p - d0 - (frac > 0) > 18 || m > (1ull << 53) ||
        (p < end &&
         ((unsigned)(unsigned char)*p - '0' < 10 || *p == '.' || *p == 'e' || *p == 'E')))
        return 0;
    double x = (double)m;
    if (frac) x /= jread_pow10[frac];
    v->kind = frac ? JV_REAL : JV_INT;
    v->s = st;
    v->n = (size_t)(p - st);
    v->d = neg ? -x : x;
    *pp = p;
    return 1;
}

/* jread_number and jread_number_value in one pass where the form is the
 * usual one (the same value): 0, -1 with jread_number's error, -2 when the
 * value overflows (no error recorded). */
int jread_number_valued(jread *r, const char **pp, const char **s, size_t *n, int *is_int,
                        double *d);
/* Skips any value at *pp (after whitespace), depth levels deep already. */
int jread_skip(jread *r, const char **pp, int depth);
/* A member's value at *pp: a string or a number read, anything else
 * skipped (kind JV_OBJECT, JV_NULL or JV_OTHER). */
int jread_scalar(jread *r, const char **pp, jread_value *v);

/* The number written in s[0..n) (JSON's or a numeric string's form, whole):
 * 0, or -1 when it is not one or overflows.  Exact: the usual forms
 * without strtod, the others with it. */
int jread_number_value(const char *s, size_t n, double *out);
/* An integer's text as jansson prints it ("%lld"): the digits as written,
 * "-0" as "0". */
const char *jread_int_text(const jread_value *v, size_t *len);

#endif
