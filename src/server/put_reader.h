/* put_reader.h — the streaming reader of OpenTSDB /api/put bodies
 * (put_reader.c): one pass over the text, one data point at a time, as
 * spans of the body, built of json_read.h's pieces.  Used by api_ingest.c;
 * it knows nothing of the store. */
#ifndef JOBSCOPE_PUT_READER_H
#define JOBSCOPE_PUT_READER_H

#include <stddef.h>
#include "json_read.h"

#define PUT_READER_MAX_TAGS 64 /* OpenTSDB's: a point with more is refused */

typedef struct put_tag_text {
    const char *k;
    size_t kl;
    jread_value v;
} put_tag_text;

/* One element of the body, valid until the next put_reader_next. */
typedef struct put_point_text {
    const char *text; /* the element's JSON text (for ?details) */
    size_t len;
    int not_object;
    jread_value metric, timestamp, value;
    int has_tags, tags_not_object;
    put_tag_text tags[PUT_READER_MAX_TAGS];
    int ntags; /* may exceed PUT_READER_MAX_TAGS: only that many are kept */
} put_point_text;

/* Strings of the point before, guessed for the next one (a client writes
 * the same keys in the same order, and runs of points of one metric or
 * host): spans of the body read without an escape, so that the same bytes
 * followed by '"' are the same string. */
#define PUT_READER_GUESS 8
typedef struct put_guess {
    const char *s;
    size_t n;
} put_guess;

typedef struct put_reader {
    jread jr; /* the text, the scratch arena, the first error (jr.err) */
    const char *pos;
    int array, done, not_points;
    size_t count;
    put_guess metric, tag_k[PUT_READER_GUESS], tag_v[PUT_READER_GUESS];
} put_reader;

/* Starts reading body; -1 with r->jr.err on a syntax error at its start.
 * r->not_points: the body is valid JSON but neither an object nor an
 * array.  Free with put_reader_free in every case. */
int put_reader_start(put_reader *r, const char *body, size_t len);
/* The next element: 1, 0 at the end, -1 with r->jr.err on a syntax error. */
int put_reader_next(put_reader *r, put_point_text *dp);
/* The whole body's syntax only: 0, or -1 with the error. */
int put_reader_check(const char *body, size_t len, char *err, size_t errlen);
void put_reader_free(put_reader *r);

#endif
