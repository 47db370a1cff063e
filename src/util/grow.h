/* grow.h — the one way jobscope grows an array that is filled as it goes
 * (the server's ingest batches, its tables): room for `need` elements,
 * the capacity doubling from 64, an allocation failure reported once in a
 * flag so that a batch can be built without a check at every step. */
#ifndef JOBSCOPE_GROW_H
#define JOBSCOPE_GROW_H

#include <stddef.h>

/* Room for need elements of elem bytes in p, whose capacity *cap doubles;
 * returns the (possibly moved) array.  On failure p is returned unchanged
 * and *oom is set. */
void *grow_array(void *p, size_t *cap, size_t need, size_t elem, int *oom);

#endif
