/* hash.h — the 64-bit hash of the in-memory tables (the server's live
 * values, the names interned while a request is parsed): bytes taken a word
 * at a time, mixed by multiplication.  Never written to disk: the store
 * keeps its own persisted hash (src/store), which must not change. */
#ifndef JOBSCOPE_HASH_H
#define JOBSCOPE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const char *s, size_t n);

#endif
