/* put_reader.h — the streaming reader of OpenTSDB /api/put bodies
 * (put_reader.c): one pass over the text, one data point at a time, as
 * spans of the body.  Used by api_ingest.c; it knows nothing of the store. */
#ifndef JOBSCOPE_PUT_READER_H
#define JOBSCOPE_PUT_READER_H

#include <stddef.h>

#define PUT_READER_MAX_TAGS 64 /* OpenTSDB's: a point with more is refused */

typedef enum put_kind {
    PV_NONE,
    PV_STRING,
    PV_INT,
    PV_REAL,
    PV_NULL,
    PV_OBJECT,
    PV_OTHER
} put_kind;

/* A member's value: kind and text (a string unescaped, a number as written). */
typedef struct put_value {
    put_kind kind;
    const char *s;
    size_t n;
    double d; /* PV_INT, PV_REAL: the number */
} put_value;

typedef struct put_tag_text {
    const char *k;
    size_t kl;
    put_value v;
} put_tag_text;

/* One element of the body, valid until the next put_reader_next. */
typedef struct put_point_text {
    const char *text; /* the element's JSON text (for ?details) */
    size_t len;
    int not_object;
    put_value metric, timestamp, value;
    int has_tags, tags_not_object;
    put_tag_text tags[PUT_READER_MAX_TAGS];
    int ntags; /* may exceed PUT_READER_MAX_TAGS: only that many are kept */
} put_point_text;

typedef struct pr_block {
    struct pr_block *next;
    size_t used, cap;
    char data[];
} pr_block;

typedef struct put_reader {
    const char *body, *end, *pos;
    int array, done, not_points;
    size_t count;
    pr_block *blocks, *cur, *last; /* unescaped strings */
    char err[160];                 /* "line L, column C: why" */
} put_reader;

/* Starts reading body; -1 with r->err on a syntax error at its start.
 * r->not_points: the body is valid JSON but neither an object nor an
 * array.  Free with put_reader_free in every case. */
int put_reader_start(put_reader *r, const char *body, size_t len);
/* The next element: 1, 0 at the end, -1 with r->err on a syntax error. */
int put_reader_next(put_reader *r, put_point_text *dp);
/* The whole body's syntax only: 0, or -1 with the error. */
int put_reader_check(const char *body, size_t len, char *err, size_t errlen);
void put_reader_free(put_reader *r);
/* The number written in s[0..n) (JSON's or a numeric string's form, whole):
 * 0, or -1 when it is not one or overflows. */
int put_number(const char *s, size_t n, double *out);

#endif
