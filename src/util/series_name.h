/* series_name.h — OpenTSDB's rule for the names of time series, the one
 * every path that makes or checks a series name follows: the OpenTSDB
 * output (sink/formats/tsconv.c) and the server's ingest (an event's
 * fields become "<event>.<field>", /api/put and /write check names and
 * tags).
 *
 * Characters: a-z A-Z 0-9 - _ . / (and, when checking what a client sent,
 * Unicode letters: any byte >= 0x80); length 1 to SERIES_NAME_MAX bytes. */
#ifndef JOBSCOPE_SERIES_NAME_H
#define JOBSCOPE_SERIES_NAME_H

#include <stddef.h>

#define SERIES_NAME_MAX 256

/* Is c one of a-z A-Z 0-9 - _ . / ? */
static inline int series_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '/';
}

/* A name, tag key or tag value a client sent: 1..SERIES_NAME_MAX bytes of
 * series_name_char or bytes >= 0x80.  1 or 0.  (Inline: the ingest checks
 * three or more names a point.) */
static inline int series_name_valid(const char *s, size_t n)
{
    if (!n || n > SERIES_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!series_name_char(c) && c < 0x80) return 0;
    }
    return 1;
}

/* A name made from an event: every byte that is not series_name_char
 * becomes '_' (in place, up to the NUL). */
void series_name_clean(char *s);

#endif
