/* wire.c — parsing and formatting of custom-metric messages (see wire.h and
 * docs/metrics.md).  The parser never allocates and never trusts its input:
 * anything unexpected is classified so the listener can count it. */
#include "metrics/wire.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wire_namechar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':' || c == '/' || c == '-';
}

int wire_name_ok(const char *s, size_t n, size_t max)
{
    if (n == 0 || n > max) return 0;
    for (size_t i = 0; i < n; i++)
        if (!wire_namechar((unsigned char)s[i])) return 0;
    return 1;
}

/* Copies a field into a NUL-terminated buffer for strto*. */
static int wire_field(const char *s, size_t n, char *out, size_t cap)
{
    if (n == 0 || n >= cap) return -1;
    memcpy(out, s, n);
    out[n] = 0;
    return 0;
}

static int wire_double(const char *s, size_t n, double *v)
{
    char tmp[64], *end;
    if (wire_field(s, n, tmp, sizeof tmp) < 0 || tmp[0] == ' ') return -1;
    errno = 0;
    *v = strtod(tmp, &end);
    if (*end || !isfinite(*v)) return -1;
    return 0;
}

static int wire_long(const char *s, size_t n, long min, long max, long *v)
{
    char tmp[32], *end;
    if (wire_field(s, n, tmp, sizeof tmp) < 0 || tmp[0] == ' ' || tmp[0] == '+') return -1;
    errno = 0;
    long x = strtol(tmp, &end, 10);
    if (*end || errno || x < min || x > max) return -1;
    *v = x;
    return 0;
}

int wire_parse(const char *buf, size_t len, wire_metric *m, const char **payload, size_t *plen)
{
    if (len >= 3 && !memcmp(buf, "P1\t", 3)) {
        *payload = buf + 3;
        *plen = len - 3;
        return WIRE_PAYLOAD;
    }
    if (len < 3 || memcmp(buf, "M1\t", 3)) return WIRE_BAD_FORMAT;
    /* split into at most 7 + WIRE_MAX_TAGS + 1 fields */
    enum { NF = 7 + WIRE_MAX_TAGS + 1 };
    const char *f[NF];
    size_t fl[NF];
    int nf = 0;
    const char *p = buf, *end = buf + len;
    while (nf < NF) {
        const char *t = memchr(p, '\t', (size_t)(end - p));
        const char *e = t ? t : end;
        f[nf] = p;
        fl[nf] = (size_t)(e - p);
        nf++;
        if (!t) break;
        p = t + 1;
    }
    if (nf < 7) return WIRE_BAD_FORMAT;
    if (nf == NF) return WIRE_BAD_TAG; /* more tags than we keep */
    for (int i = 1; i < 7; i++)        /* no control bytes in the fixed fields */
        for (size_t j = 0; j < fl[i]; j++)
            if ((unsigned char)f[i][j] < 0x20 || f[i][j] == 0x7f) return WIRE_BAD_FORMAT;

    memset(m, 0, sizeof *m);
    if (!wire_name_ok(f[1], fl[1], WIRE_MAX_NAME)) return WIRE_BAD_NAME;
    m->name = f[1];
    m->name_len = fl[1];
    if (wire_double(f[2], fl[2], &m->value) < 0) return WIRE_BAD_VALUE;
    if (fl[3] &&
        (wire_double(f[3], fl[3], &m->ts) < 0 || !(m->ts >= WIRE_MIN_TS && m->ts < WIRE_MAX_TS)))
        return WIRE_BAD_FORMAT;
    long x;
    if (wire_long(f[4], fl[4], 1, WIRE_MAX_LEVEL, &x) < 0) return WIRE_BAD_LEVEL;
    m->level = (int)x;
    if (wire_long(f[5], fl[5], 0, 0x7fffffffL, &x) < 0) return WIRE_BAD_FORMAT;
    m->pid = x;
    if (wire_long(f[6], fl[6], 0, 0x7fffffffL, &x) < 0) return WIRE_BAD_FORMAT;
    m->lost = (unsigned long)x;
    for (int i = 7; i < nf; i++) {
        const char *eq = memchr(f[i], '=', fl[i]);
        if (!eq) return WIRE_BAD_TAG;
        wire_tag *t = &m->tags[m->ntags++];
        t->k = f[i];
        t->klen = (size_t)(eq - f[i]);
        t->v = eq + 1;
        t->vlen = fl[i] - t->klen - 1;
        if (!wire_name_ok(t->k, t->klen, WIRE_MAX_TAGKEY) || !wire_tagval_ok(t->v, t->vlen))
            return WIRE_BAD_TAG;
        for (int j = 0; j < m->ntags - 1; j++) /* a key again: its last value, once */
            if (m->tags[j].klen == t->klen && !memcmp(m->tags[j].k, t->k, t->klen)) {
                m->tags[j].v = t->v;
                m->tags[j].vlen = t->vlen;
                m->ntags--;
                break;
            }
    }
    return WIRE_METRIC;
}

int wire_tagval_ok(const char *s, size_t n)
{
    if (n > WIRE_MAX_TAGVAL) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
    return 1;
}

size_t wire_format(char *out, size_t cap, const char *name, double value, double ts, int level,
                   long pid, unsigned long lost, char *const *tags, int ntags)
{
    char tsbuf[40] = "";
    if (ts > 0 && !(ts >= WIRE_MIN_TS && ts < WIRE_MAX_TS))
        return 0; /* would not read back as written */
    if (ts > 0) snprintf(tsbuf, sizeof tsbuf, "%.6f", ts);
    int n =
        snprintf(out, cap, "M1\t%s\t%.17g\t%s\t%d\t%ld\t%lu", name, value, tsbuf, level, pid, lost);
    if (n < 0 || (size_t)n >= cap) return 0;
    size_t len = (size_t)n;
    for (int i = 0; i < ntags; i++) {
        size_t tl = strlen(tags[i]);
        if (len + 1 + tl >= cap) return 0;
        out[len++] = '\t';
        memcpy(out + len, tags[i], tl);
        len += tl;
    }
    out[len] = 0;
    return len;
}

const char *wire_strerror(int r)
{
    switch (r) {
    case WIRE_METRIC:
        return "ok";
    case WIRE_PAYLOAD:
        return "payload";
    case WIRE_BAD_FORMAT:
        return "malformed message";
    case WIRE_BAD_NAME:
        return "bad metric name (1-128 characters of A-Z a-z 0-9 _ . : / -)";
    case WIRE_BAD_VALUE:
        return "value is not a finite number";
    case WIRE_BAD_LEVEL:
        return "level is not an integer in 1..255";
    case WIRE_BAD_TAG:
        return "bad tag (KEY=VALUE, at most 16, key like a name, value at most 256 bytes "
               "without control characters)";
    }
    return "?";
}
