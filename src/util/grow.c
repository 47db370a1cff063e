/* grow.c — see grow.h. */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

void *grow_array(void *p, size_t *cap, size_t need, size_t elem, int *oom)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 64;
    while (c < need && c <= SIZE_MAX / 2) c *= 2;
    if (c < need || c > SIZE_MAX / elem) { /* cannot be had */
        *oom = 1;
        return p;
    }
    void *q = realloc(p, c * elem);
    if (!q) {
        *oom = 1;
        return p;
    }
    *cap = c;
    return q;
}
