/* jsonscan.h — a strict, allocation-free JSON validator and walker for the
 * payload blocks jobs print (payload.c) and send (`jobscope emit --payload`).
 *
 * jscan_skip() validates one value (RFC 8259, UTF-8 checked, nesting
 * bounded) and returns where it ends; once a span is known valid the
 * iterators walk objects and arrays without re-checking, and jscan_minify()
 * copies a value without insignificant whitespace (so a pretty-printed
 * Darshan summary becomes one JSON Lines record). */
#ifndef JOBSCOPE_METRICS_JSONSCAN_H
#define JOBSCOPE_METRICS_JSONSCAN_H

#include <stddef.h>

#define JSCAN_MAX_DEPTH 64

/* Skips whitespace, validates one value; returns a pointer just past it, or
 * NULL if [p, end) does not start with a valid value. */
const char *jscan_skip(const char *p, const char *end);
const char *jscan_ws(const char *p, const char *end);

/* Copies the valid value span [p, p+n) to out without whitespace outside
 * strings; out needs n bytes.  Returns the length written. */
size_t jscan_minify(const char *p, size_t n, char *out);

/* Iteration over a valid object or array ([p, end) exactly the value). */
typedef struct jscan_iter {
    const char *p, *end;
} jscan_iter;
typedef struct jscan_item {
    const char *key;
    size_t klen; /* raw key text without the quotes (objects) */
    const char *val;
    size_t vlen; /* the value, raw */
} jscan_item;

/* Returns 0 if the value is not an object ('{') / array ('['). */
int jscan_begin(jscan_iter *it, const char *p, const char *end, char open);
/* 1: *item filled; 0: no more. */
int jscan_next(jscan_iter *it, jscan_item *item, int object);

#endif
