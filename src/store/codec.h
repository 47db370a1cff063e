/* codec.h — the chunk codec of the embedded store (docs/store.md, "Chunks").
 *
 * A chunk is the points of one series over part of one time partition,
 * sorted by time with distinct timestamps.  Timestamps are coded as
 * delta-of-delta with run lengths (regular sampling costs a few bytes per
 * chunk); values as integers when every value of the chunk is an integer or
 * a decimal with at most 9 digits after the point (counters, kB, seconds
 * with 3 decimals), as raw, delta or delta-of-delta, whichever is smallest,
 * with run lengths (constants, steady counters); other values as Gorilla XOR
 * floats.  zstd compresses the result when that pays.  Decoding gives back
 * the exact doubles that were encoded.  Used by store.c only. */
#ifndef JOBSCOPE_STORE_CODEC_H
#define JOBSCOPE_STORE_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Limits on what the codec accepts (store_put checks them). */
#define STORE_TS_LIMIT ((int64_t)1 << 53) /* |ts_ms| */

/* A growing byte buffer.  A failed allocation sets `oom` and is sticky:
 * later writes are dropped, and whoever filled the buffer checks `oom`
 * (or the -1 of store_buf_reserve) and fails its operation. */
typedef struct store_buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} store_buf;

/* Grows b to hold more bytes beyond b->n: 0, or -1 (and oom set). */
int store_buf_grow(store_buf *b, size_t more);
/* Room for more bytes beyond b->n: 0, or -1 (and oom set).  Inline: the
 * encoders ask before every varint, and a call cost more than the check. */
static inline int store_buf_reserve(store_buf *b, size_t more)
{
    if (b->n + more <= b->cap) return b->oom ? -1 : 0;
    return store_buf_grow(b, more);
}
void store_buf_free(store_buf *b);
/* Writes v as a varint at o (at most 10 bytes); returns the byte after. */
static inline uint8_t *store_varint_at(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}
static inline void store_buf_varint(store_buf *b, uint64_t v)
{
    if (store_buf_reserve(b, 10) < 0) return;
    b->n = (size_t)(store_varint_at(b->p + b->n, v) - b->p);
}
/* 0 and advances *pos, or -1 when the input ends early. */
int store_get_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v);

/* The two parts of a chunk, each a kind byte (1 plain, 2 zstd) and a body
 * (docs/store.md): the timestamps, and the values.  Identical timestamp
 * parts (the fields of one event) are stored once. */
int store_ts_encode(const int64_t *ts, size_t n, int zlevel, store_buf *out);
int store_val_encode(const double *val, size_t n, int zlevel, store_buf *out);
int store_parts_decode(const uint8_t *tp, size_t tl, const uint8_t *vp, size_t vl, int64_t **ts,
                       double **val, size_t *n, size_t *cap);

/* Encodes n >= 1 points (ts strictly increasing) into out (replacing its
 * content).  zlevel: the zstd level tried on the result (0 = never). */
int store_chunk_encode(const int64_t *ts, const double *val, size_t n, int zlevel, store_buf *out);
/* Decodes a chunk, appending its points to ts/val (grown with realloc;
 * *n points, *cap slots).  0 or -1 when the chunk is corrupt. */
int store_chunk_decode(const uint8_t *p, size_t len, int64_t **ts, double **val, size_t *n,
                       size_t *cap);

/* zstd with the codec's per-thread contexts (the log's compressed records). */
int store_zstd(const uint8_t *p, size_t n, int level, store_buf *out);
int store_unzstd(const uint8_t *p, size_t n, size_t raw, store_buf *out);

uint32_t store_crc32c(uint32_t crc, const void *p, size_t n);

/* The numbers every coding of the store shares: powers of ten for the
 * decimals (a value x / 10^k, k <= 9), and zigzag for signed steps, in
 * unsigned arithmetic (a step that wraps is no undefined behaviour). */
static const double store_p10[10] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

static inline uint64_t store_zz(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}
static inline uint64_t store_unzz(uint64_t z)
{
    return (z >> 1) ^ (uint64_t) - (int64_t)(z & 1);
}

#endif
