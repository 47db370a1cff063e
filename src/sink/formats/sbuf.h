/* sbuf.h — a growable byte buffer for building request bodies on the
 * publisher threads (line protocol, _bulk, /api/put).  Header-only. */
#ifndef JOBSCOPE_SBUF_H
#define JOBSCOPE_SBUF_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static inline void sbuf_put(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
static inline void sbuf_puts(sbuf *b, const char *s)
{
    sbuf_put(b, s, strlen(s));
}
static inline void sbuf_putc(sbuf *b, char c)
{
    sbuf_put(b, &c, 1);
}
__attribute__((format(printf, 2, 3))) static inline void sbuf_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof tmp) n = sizeof tmp - 1;
    if (n > 0) sbuf_put(b, tmp, (size_t)n);
}
static inline void sbuf_reset(sbuf *b)
{
    b->len = 0;
    b->oom = 0;
    if (b->p) b->p[0] = 0;
}
static inline void sbuf_free(sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

#endif
