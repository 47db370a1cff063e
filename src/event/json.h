/* json.h — a small, allocation-free-in-steady-state JSON writer.
 *
 * Every event jobscope emits is built with these calls into a reusable
 * buffer (jbuf).  Numbers go through a hand-written formatter (no snprintf on
 * the sampling path); strings are escaped per RFC 8259, and bytes that are not
 * valid UTF-8 are replaced by U+FFFD so a document is never broken.
 *
 * Keys: every value call takes a key; pass NULL for array elements.
 * Commas are inserted automatically. */
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

void json_obj_open(jbuf *b, const char *key);
void json_obj_close(jbuf *b);
void json_arr_open(jbuf *b, const char *key);
void json_arr_close(jbuf *b);

void json_str(jbuf *b, const char *key, const char *v); /* v NULL -> null */
void json_strn(jbuf *b, const char *key, const char *v, size_t n);
void json_u64(jbuf *b, const char *key, uint64_t v);
void json_i64(jbuf *b, const char *key, int64_t v);
void json_fixed(jbuf *b, const char *key, double v, int decimals); /* NaN/inf -> null */
void json_num(jbuf *b, const char *key, double v);                 /* shortest round-trip */
void json_bool(jbuf *b, const char *key, int v);
void json_null(jbuf *b, const char *key);
void json_raw(jbuf *b, const char *key, const char *json, size_t n); /* already-encoded value */

/* Low-level pieces, exported for encoders of other formats (CSV, line protocol). */
size_t fmt_u64(char *out, uint64_t v); /* returns length, no NUL */
size_t fmt_i64(char *out, int64_t v);
size_t fmt_fixed(char *out, double v, int decimals); /* out >= 48 bytes */
/* The shortest text that reads back as v (json_num's; v finite, out >= 40 bytes). */
size_t fmt_num(char *out, double v);
void json_escape(jbuf *b, const char *s, size_t n); /* body of a string, no quotes */
/* Length of the valid UTF-8 sequence at s (n bytes left, s[0] >= 0x80), 0
 * if invalid (json_escape writes U+FFFD for each such byte). */
size_t json_utf8_len(const unsigned char *s, size_t n);

#endif
