/* jsonscan.c — see jsonscan.h. */
#include "metrics/jsonscan.h"

#include <string.h>

const char *jscan_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* One UTF-8 sequence at p (first byte >= 0x80); returns its length or 0. */
static size_t jscan_utf8(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        min = 0x10000;
    } else
        return 0;
    if ((size_t)(end - p) < n) return 0;
    unsigned cp = c & (0x3f >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

static int jscan_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* p at the opening quote; returns past the closing quote or NULL. */
static const char *jscan_string(const char *p, const char *end)
{
    p++;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            if (++p >= end) return NULL;
            if (*p == 'u') {
                if (end - p < 5 || !jscan_hex(p[1]) || !jscan_hex(p[2]) || !jscan_hex(p[3]) ||
                    !jscan_hex(p[4]))
                    return NULL;
                p += 5;
            } else if (strchr("\"\\/bfnrt", *p) && *p) {
                p++;
            } else {
                return NULL;
            }
        } else if (c >= 0x80) {
            size_t n = jscan_utf8((const unsigned char *)p, (const unsigned char *)end);
            if (!n) return NULL;
            p += n;
        } else {
            p++;
        }
    }
    return NULL;
}

static const char *jscan_number(const char *p, const char *end)
{
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    return p;
}

static const char *jscan_lit(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(end - p) < n || memcmp(p, lit, n)) return NULL;
    return p + n;
}

static const char *jscan_value(const char *p, const char *end, int depth)
{
    p = jscan_ws(p, end);
    if (p >= end || depth > JSCAN_MAX_DEPTH) return NULL;
    switch (*p) {
    case '"':
        return jscan_string(p, end);
    case 't':
        return jscan_lit(p, end, "true");
    case 'f':
        return jscan_lit(p, end, "false");
    case 'n':
        return jscan_lit(p, end, "null");
    case '{':
    case '[': {
        char close = *p == '{' ? '}' : ']';
        int obj = *p == '{';
        p = jscan_ws(p + 1, end);
        if (p < end && *p == close) return p + 1;
        for (;;) {
            if (obj) {
                p = jscan_ws(p, end);
                if (p >= end || *p != '"' || !(p = jscan_string(p, end))) return NULL;
                p = jscan_ws(p, end);
                if (p >= end || *p != ':') return NULL;
                p++;
            }
            if (!(p = jscan_value(p, end, depth + 1))) return NULL;
            p = jscan_ws(p, end);
            if (p >= end) return NULL;
            if (*p == close) return p + 1;
            if (*p != ',') return NULL;
            p++;
        }
    }
    default:
        return jscan_number(p, end);
    }
}

const char *jscan_skip(const char *p, const char *end)
{
    return jscan_value(p, end, 0);
}

size_t jscan_minify(const char *p, size_t n, char *out)
{
    size_t o = 0;
    int instr = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (instr) {
            out[o++] = c;
            if (c == '\\' && i + 1 < n)
                out[o++] = p[++i];
            else if (c == '"')
                instr = 0;
        } else if (c == '"') {
            instr = 1;
            out[o++] = c;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            out[o++] = c;
        }
    }
    return o;
}

int jscan_begin(jscan_iter *it, const char *p, const char *end, char open)
{
    p = jscan_ws(p, end);
    if (p >= end || *p != open) return 0;
    it->p = p + 1;
    it->end = end;
    return 1;
}

int jscan_next(jscan_iter *it, jscan_item *item, int object)
{
    const char *p = jscan_ws(it->p, it->end);
    if (p < it->end && *p == ',') p = jscan_ws(p + 1, it->end);
    if (p >= it->end || *p == '}' || *p == ']') {
        it->p = it->end;
        return 0;
    }
    item->key = NULL;
    item->klen = 0;
    if (object) {
        const char *ke = jscan_string(p, it->end);
        if (!ke) return 0;
        item->key = p + 1;
        item->klen = (size_t)(ke - p - 2);
        p = jscan_ws(ke, it->end);
        if (p >= it->end || *p != ':') return 0;
        p = jscan_ws(p + 1, it->end);
    }
    const char *ve = jscan_value(p, it->end, 1);
    if (!ve) return 0;
    item->val = p;
    item->vlen = (size_t)(ve - p);
    it->p = ve;
    return 1;
}
