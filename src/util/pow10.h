/* pow10.h — the powers of ten that fit in 64 bits, exactly: the exact
 * decimal conversions of the JSON readers (src/server/json_read.c) and of
 * the query answers (src/query/tsq_fmt.c) scale by them. */
#ifndef JOBSCOPE_POW10_H
#define JOBSCOPE_POW10_H

#include <stdint.h>

/* 10^0 .. 10^19 */
extern const uint64_t util_pow10[20];

#endif
