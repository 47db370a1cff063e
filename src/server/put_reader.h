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
    /* the metric's place among the reader's recent ones (-1: none, an
     * escaped string) and that place's generation: the same pair is the
     * same string, so a caller may keep what it made of it (checked name,
     * interned copy) by place and generation */
    int metric_slot;
    unsigned metric_gen;
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

/* Metrics come round in a cycle (a client sends a host's metrics, then the
 * next host's): the last PUT_READER_METRICS distinct ones are kept, and
 * the one after the last metric read is tried first. */
#define PUT_READER_METRICS 16

/* The shape of a point: its text cut at its values (the metric, timestamp
 * and value, each tag's value), in the order written.  A client's
 * serializer writes every point alike, so the next point is first read as
 * one of the same shape: the text between the values compared, only the
 * values read.  Learned from a point read in full whose members are the
 * known ones once each, its metric and tag values strings without an
 * escape, its timestamp and value numbers, its tags an object of at most
 * PUT_READER_GUESS distinct keys. */
enum { PUT_SHAPE_METRIC = -1, PUT_SHAPE_TIMESTAMP = -2, PUT_SHAPE_VALUE = -3 };
#define PUT_SHAPE_VALUES (3 + PUT_READER_GUESS)
typedef struct put_shape_part {
    const char *lit; /* the text before the value (a span of the body) */
    size_t litn;
    int field;       /* PUT_SHAPE_*, or the index of a tag */
    const char *end; /* where the value ended (learning only) */
} put_shape_part;
typedef struct put_shape {
    int n; /* values; 0: no shape */
    put_shape_part part[PUT_SHAPE_VALUES];
    const char *tail; /* the text after the last value */
    size_t tailn;
    int has_tags, ntags;
    const char *tag_k[PUT_READER_GUESS]; /* the tag keys (spans of the body) */
    size_t tag_kl[PUT_READER_GUESS];
} put_shape;

typedef struct put_reader {
    jread jr; /* the text, the scratch arena, the first error (jr.err) */
    const char *pos;
    int array, done, not_points;
    size_t count;
    put_guess tag_k[PUT_READER_GUESS], tag_v[PUT_READER_GUESS];
    put_guess metric[PUT_READER_METRICS];
    unsigned metric_gen[PUT_READER_METRICS];
    int mused, mnext, mlast, mmiss; /* slots used, next to refill, last hit, misses in a row */
    put_shape shape;                /* of the last point read in full */
    put_shape learning; /* of the point being read in full; learning.n < 0: not simple */
    unsigned seen;      /* the known members met in the point being read */
    size_t shaped;      /* points read by their shape (for the tests) */
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
