/* ksyaml.c — the YAML of pegasus-kickstart's invocation record: its three
 * ways of writing a string, kept byte for byte where kickstart's output is
 * valid YAML and repaired where it is not (kickstart.h, docs/kickstart.md).
 *
 *   double-quoted  "..."   kickstart's yamlquote: \t \n \r \" \\ escaped, the
 *                          other ASCII control characters dropped.  Added:
 *                          bytes that are not UTF-8 become U+FFFD, and the
 *                          characters YAML cannot hold raw (C1 controls,
 *                          U+0085/U+2028/U+2029, U+FFFE/FFFF) are escaped;
 *   plain                  kickstart writes paths, names and messages bare;
 *                          so does this, unless the text would not read back
 *                          as itself (": ", " #", a leading indicator, a
 *                          control character...): then double-quoted;
 *   literal block  data: | kickstart's yamldump: whitespace before the first
 *                          character dropped, CR and LF a new indented line,
 *                          characters YAML cannot print dropped, the last N
 *                          characters kept (-B).  Added: UTF-8 read as UTF-8
 *                          in every locale (kickstart stopped at the first
 *                          byte its locale could not decode), invalid bytes
 *                          as U+FFFD, U+0085/U+2028/U+2029 as line breaks
 *                          (a YAML reader takes them as such). */
#include "kickstart.h"
#include "../event/json.h"

#include <stdint.h>
#include <string.h>

/* The code point at s (n > 0 bytes left) and its length; an invalid byte
 * is U+FFFD of length 1. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len = jw_utf8_len(s, n);
    if (!len) {
        *cp = 0xFFFD;
        return 1;
    }
    uint32_t c = s[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) c = (c << 6) | (s[i] & 0x3F);
    *cp = c;
    return len;
}

/* YAML 1.1's printable set, as a reader checks it. */
static int printable(uint32_t c)
{
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0x7E) || c == 0x85 ||
           (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) ||
           (c >= 0x10000 && c <= 0x10FFFF);
}

/* A line break to a YAML reader (besides CR and LF). */
static int unicode_break(uint32_t c)
{
    return c == 0x85 || c == 0x2028 || c == 0x2029;
}

static void put_cp(FILE *out, uint32_t c)
{
    char b[4];
    int n;
    if (c < 0x80)
        b[0] = (char)c, n = 1;
    else if (c < 0x800)
        b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3F)), n = 2;
    else if (c < 0x10000)
        b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
        b[2] = (char)(0x80 | (c & 0x3F)), n = 3;
    else
        b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3F)),
        b[2] = (char)(0x80 | ((c >> 6) & 0x3F)), b[3] = (char)(0x80 | (c & 0x3F)), n = 4;
    fwrite(b, 1, (size_t)n, out);
}

void ksyaml_quote_body(FILE *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += utf8_next(p + i, n - i, &c);
        if (c == '\t')
            fputs("\\t", out);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c == '\r')
            fputs("\\r", out);
        else if (c == '"' || c == '\\')
            fputc('\\', out), fputc((int)c, out);
        else if (c < 0x20 || c == 0x7F)
            continue; /* kickstart drops them */
        else if (c >= 0x80 && (!printable(c) || unicode_break(c)))
            fprintf(out, "\\u%04X", (unsigned)c);
        else
            put_cp(out, c);
    }
}

void ksyaml_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    if (s) ksyaml_quote_body(out, s, strlen(s));
    fputc('"', out);
}

/* Whether s, written bare after "key: " (or as a key before ':'), reads
 * back as the same text. */
static int plain_safe(const char *s)
{
    size_t n = strlen(s);
    if (!n) return 1; /* kickstart's empty value (null) */
    if (s[0] == ' ' || s[n - 1] == ' ' || s[n - 1] == ':') return 0;
    if (strchr(",[]{}#&*!|>'\"%@`", s[0])) return 0;
    if (strchr("-?:", s[0]) && (n == 1 || s[1] == ' ')) return 0;
    if (strstr(s, ": ") || strstr(s, " #")) return 0;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t len = utf8_next(p + i, n - i, &c);
        if (c == 0xFFFD && len == 1 && p[i] >= 0x80) return 0; /* not UTF-8 */
        if (c < 0x20 || c == 0x7F || !printable(c) || unicode_break(c)) return 0;
        i += len;
    }
    return 1;
}

void ksyaml_plain(FILE *out, const char *s)
{
    if (!s) return;
    if (plain_safe(s))
        fputs(s, out);
    else
        ksyaml_quoted(out, s);
}

/* ---- literal blocks ------------------------------------------------------ */

size_t ksyaml_count_chars(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t count = 0;
    for (size_t i = 0; i < n; count++) {
        uint32_t c;
        i += utf8_next(p + i, n - i, &c);
    }
    return count;
}

/* The byte offset after skipping `chars` characters of s. */
static size_t skip_chars(const char *s, size_t n, size_t chars)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    for (size_t k = 0; k < chars && i < n; k++) {
        uint32_t c;
        i += utf8_next(p + i, n - i, &c);
    }
    return i;
}

int ksyaml_block(FILE *out, int indent, const char *s, size_t n, size_t max_chars)
{
    size_t total = ksyaml_count_chars(s, n);
    int truncated = total > max_chars;
    size_t from = truncated ? skip_chars(s, n, total - max_chars) : 0;
    const unsigned char *p = (const unsigned char *)s;
    int first_line = 1;
    fprintf(out, "%*s", indent, "");
    for (size_t i = from; i < n;) {
        uint32_t c;
        i += utf8_next(p + i, n - i, &c);
        if (first_line && (c == ' ' || c == '\t' || c == '\r')) continue;
        if (c == '\n' || c == '\r' || unicode_break(c)) {
            fprintf(out, "\n%*s", indent, "");
        } else if (printable(c)) {
            put_cp(out, c);
            first_line = 0;
        }
    }
    fputc('\n', out);
    return truncated;
}
