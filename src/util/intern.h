/* intern.h — each distinct string once: the names and tag values that
 * repeat over the thousands of points of one request (the server's ingest
 * of /api/put and of events) are copied once into an arena, and the table
 * keeps each one's hash and length, so a look-up compares bytes only on a
 * likely hit.  The copies live as long as the arena. */
#ifndef JOBSCOPE_INTERN_H
#define JOBSCOPE_INTERN_H

#include <stddef.h>
#include <stdint.h>
#include "arena.h"

typedef struct intern_entry {
    const char *s;
    size_t n;
    uint64_t h;
} intern_entry;

typedef struct intern_table {
    arena strs;      /* the copies, NUL-terminated */
    intern_entry *v; /* open addressing */
    size_t n, cap;
} intern_table;

/* The table's copy of s[0..n), made at its first sight; NULL when out of
 * memory. */
const char *intern_get(intern_table *t, const char *s, size_t n);
/* Frees the table and every copy. */
void intern_free(intern_table *t);

#endif
