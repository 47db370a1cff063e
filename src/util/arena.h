/* arena.h — memory handed out in blocks that never move and are freed (or
 * reused) all at once: the strings of one request or one line (the
 * server's readers, the line protocol, the events), as many small
 * mallocs would cost per string. */
#ifndef JOBSCOPE_ARENA_H
#define JOBSCOPE_ARENA_H

#include <stddef.h>

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

typedef struct arena {
    arena_block *head, *cur; /* cur: the first block with room, after a reset */
} arena;

/* n bytes (not aligned: for strings); NULL when out of memory. */
char *arena_alloc(arena *a, size_t n);
/* A NUL-terminated copy of s[0..n); NULL when out of memory. */
char *arena_strndup(arena *a, const char *s, size_t n);
/* Everything handed out is forgotten; the blocks are kept for reuse. */
void arena_reset(arena *a);
void arena_free(arena *a);

#endif
