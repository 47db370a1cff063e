/* arena.c — see arena.h. */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK 65536

char *arena_alloc(arena *a, size_t n)
{
    arena_block *b = a->cur ? a->cur : a->head;
    while (b && b->cap - b->used < n) b = b->next;
    if (!b) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = NULL;
        arena_block **tail = &a->head;
        while (*tail) tail = &(*tail)->next;
        *tail = b;
    }
    a->cur = b;
    char *o = b->data + b->used;
    b->used += n;
    return o;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *o = arena_alloc(a, n + 1);
    if (!o) return NULL;
    memcpy(o, s, n);
    o[n] = 0;
    return o;
}

void arena_reset(arena *a)
{
    for (arena_block *b = a->head; b; b = b->next) b->used = 0;
    a->cur = a->head;
}

void arena_free(arena *a)
{
    for (arena_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = a->cur = NULL;
}
