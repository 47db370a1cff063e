/* intern.c — see intern.h. */
#include "intern.h"

#include <stdlib.h>
#include <string.h>
#include "hash.h"

static int grow(intern_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    intern_entry *v = calloc(cap, sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->v[i].s) continue;
        size_t h = t->v[i].h & (cap - 1);
        while (v[h].s) h = (h + 1) & (cap - 1);
        v[h] = t->v[i];
    }
    free(t->v);
    t->v = v;
    t->cap = cap;
    return 0;
}

const char *intern_get(intern_table *t, const char *s, size_t n)
{
    if (t->n * 2 >= t->cap && grow(t) < 0) return NULL;
    uint64_t hv = hash_bytes(s, n);
    size_t h = hv & (t->cap - 1);
    for (; t->v[h].s; h = (h + 1) & (t->cap - 1))
        if (t->v[h].h == hv && t->v[h].n == n && !memcmp(t->v[h].s, s, n)) return t->v[h].s;
    char *c = arena_strndup(&t->strs, s, n);
    if (!c) return NULL;
    t->v[h] = (intern_entry){c, n, hv};
    t->n++;
    return c;
}

void intern_free(intern_table *t)
{
    arena_free(&t->strs);
    free(t->v);
    memset(t, 0, sizeof *t);
}
