/* json.h — a small, allocation-free-in-steady-state JSON writer.
 *
 * Every event jobscope emits is built with these calls into a reusable
 * buffer (jbuf).  Numbers go through a hand-written formatter (no snprintf on
 * the sampling path); strings are escaped per RFC 8259, and bytes that are not
 * valid UTF-8 are replaced by U+FFFD so a document is never broken.
 *
 * Keys: every value call takes a key; pass NULL for array elements.
 * Commas are inserted automatically.  The calls are jw_* ("JSON writer"):
 * json_* is jansson's, and a json_null of ours once shadowed jansson's at
 * link time for every caller that meant jansson's. */
#ifndef JOBSCOPE_JSON_H
#define JOBSCOPE_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef struct jbuf {
    char *p;
    size_t len, cap;
    int comma; /* a value was written at this level: next needs ',' */
    int oom;   /* an allocation failed: the document is incomplete */
} jbuf;

void jbuf_init(jbuf *b, size_t cap);
void jbuf_free(jbuf *b);
void jbuf_reset(jbuf *b);
void jbuf_putc(jbuf *b, char c);
void jbuf_put(jbuf *b, const char *s, size_t n);
void jbuf_puts(jbuf *b, const char *s);

void jw_obj_open(jbuf *b, const char *key);
void jw_obj_close(jbuf *b);
void jw_arr_open(jbuf *b, const char *key);
void jw_arr_close(jbuf *b);

void jw_str(jbuf *b, const char *key, const char *v); /* v NULL -> null */
void jw_strn(jbuf *b, const char *key, const char *v, size_t n);
void jw_u64(jbuf *b, const char *key, uint64_t v);
void jw_i64(jbuf *b, const char *key, int64_t v);
void jw_fixed(jbuf *b, const char *key, double v, int decimals); /* NaN/inf -> null */
void jw_num(jbuf *b, const char *key, double v);                 /* shortest round-trip */
void jw_bool(jbuf *b, const char *key, int v);
void jw_null(jbuf *b, const char *key);
void jw_raw(jbuf *b, const char *key, const char *json, size_t n); /* already-encoded value */

/* Low-level pieces, exported for encoders of other formats (CSV, line protocol). */
size_t fmt_u64(char *out, uint64_t v); /* returns length, no NUL */
size_t fmt_i64(char *out, int64_t v);
size_t fmt_fixed(char *out, double v, int decimals); /* out >= 48 bytes */
/* The shortest text that reads back as v (jw_num's; v finite, out >= 40 bytes). */
size_t fmt_num(char *out, double v);
void jw_escape(jbuf *b, const char *s, size_t n); /* body of a string, no quotes */
/* Length of the valid UTF-8 sequence at s (n bytes left, s[0] >= 0x80), 0
 * if invalid (jw_escape writes U+FFFD for each such byte). */
size_t jw_utf8_len(const unsigned char *s, size_t n);

#endif
