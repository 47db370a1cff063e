/* codec.c — chunk encoding of the embedded store (codec.h, docs/store.md).
 *
 * Layout of a chunk:
 *   byte  kind     1 = plain body, 2 = zstd: varint body length, zstd frame
 *   body: varint n
 *         ints(timestamps)
 *         byte vmode  0x0k = integers scaled by 10^-k (k 0..9): ints(v * 10^k)
 *                     0x10 = Gorilla XOR floats: 64 bits, then the XOR bits
 *   ints(x): byte order (0 raw, 1 delta, 2 delta-of-delta), then tokens
 *         (varints): (zigzag(d) << 1) is a literal difference d,
 *         (r << 1) | 1 repeats the previous difference r more times.
 * All arithmetic on differences wraps modulo 2^64, so decoding is exact. */
#include "store/codec.h"

#include <endian.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define VALUE_LIMIT 9007199254740992.0 /* 2^53: integers beyond are not exact */

int store_buf_grow(store_buf *b, size_t more)
{
    if (b->n + more <= b->cap) return b->oom ? -1 : 0;
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + more) c *= 2;
    uint8_t *p = b->oom ? NULL : realloc(b->p, c);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = c;
    return 0;
}

void store_buf_free(store_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

int store_get_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    size_t i = *pos;
    for (int shift = 0; shift < 64; shift += 7) {
        if (i >= n) return -1;
        uint8_t c = p[i++];
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *pos = i;
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* The difference sequence of x in a mode: 0 raw, 1 delta, 2 delta-of-delta,
 * 3 grid (x[i] - x[0] - i*step, the residual from a regular grid). */
static void diffs(const int64_t *x, size_t n, int mode, uint64_t step, uint64_t *d)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t a = (uint64_t)x[i];
        if (mode == 0 || i == 0)
            d[i] = a;
        else if (mode == 3)
            d[i] = a - (uint64_t)x[0] - (uint64_t)i * step;
        else if (mode == 1 || i == 1)
            d[i] = a - (uint64_t)x[i - 1];
        else
            d[i] = (a - (uint64_t)x[i - 1]) - ((uint64_t)x[i - 1] - (uint64_t)x[i - 2]);
    }
}

/* The tokens of d: a value's zigzag << 1, or a run of repeats' length << 1
 * | 1; written into room reserved once for the worst case (a token per
 * value, ten bytes each). */
static void put_tokens(store_buf *b, const uint64_t *d, size_t n)
{
    if (n > SIZE_MAX / 10 || store_buf_reserve(b, n * 10) < 0) {
        b->oom = 1;
        return;
    }
    uint8_t *o = b->p + b->n;
    for (size_t i = 0; i < n;) {
        if (i > 0 && d[i] == d[i - 1]) {
            uint64_t r = 0;
            uint64_t prev = d[i - 1];
            while (i < n && d[i] == prev) {
                r++;
                i++;
            }
            o = store_varint_at(o, r << 1 | 1);
        } else {
            o = store_varint_at(o, store_zz(d[i]) << 1);
            i++;
        }
    }
    b->n = (size_t)(o - b->p);
}

/* What zstd's entropy stage would make of these bytes, roughly (bits). */
static double entropy_cost(const uint8_t *p, size_t n)
{
    uint32_t h[256] = {0};
    for (size_t i = 0; i < n; i++) h[p[i]]++;
    double bits = 0;
    int distinct = 0;
    for (int i = 0; i < 256; i++)
        if (h[i]) {
            bits -= h[i] * log2((double)h[i] / n);
            distinct++;
        }
    return bits + distinct * 4.0;
}

/* Writes x in the cheapest mode: byte mode, [varint zigzag(step) for the
 * grid], tokens.  With zlevel >= 3 "cheapest" is after entropy coding. */
static void put_ints(store_buf *b, const int64_t *x, size_t n, int zlevel)
{
    uint64_t *d = malloc(n * sizeof *d);
    if (!d) {
        b->oom = 1;
        return;
    }
    uint64_t step =
        n > 1 ? (uint64_t)(((int64_t)((uint64_t)x[n - 1] - (uint64_t)x[0])) / (int64_t)(n - 1)) : 0;
    store_buf best = {0}, cand = {0};
    double bcost = 0;
    for (int mode = 0; mode <= 3; mode++) {
        if (mode == 3 && n < 3) break;
        cand.n = 0;
        if (store_buf_reserve(&cand, 1) < 0) break;
        cand.p[cand.n++] = (uint8_t)mode;
        if (mode == 3) store_buf_varint(&cand, store_zz(step));
        diffs(x, n, mode, step, d);
        put_tokens(&cand, d, n);
        double cost = zlevel >= 3 ? entropy_cost(cand.p, cand.n) : (double)cand.n * 8;
        if (mode == 0 || cost < bcost) {
            store_buf t = best;
            best = cand;
            cand = t;
            bcost = cost;
        }
    }
    if (best.oom || cand.oom)
        b->oom = 1;
    else if (store_buf_reserve(b, best.n) == 0) {
        memcpy(b->p + b->n, best.p, best.n);
        b->n += best.n;
    }
    store_buf_free(&best);
    store_buf_free(&cand);
    free(d);
}

static inline int next_token(const uint8_t **q, const uint8_t *e, uint64_t *tok)
{
    if (*q < e && **q < 0x80) {
        *tok = *(*q)++;
        return 0;
    }
    size_t pos = 0;
    if (store_get_varint(*q, (size_t)(e - *q), &pos, tok) < 0) return -1;
    *q += pos;
    return 0;
}

/* x[i..n) of one mode, from the tokens at *qp; d is the last difference,
 * a1 the last value (x0 for mode 3), dd the last delta (mode 2); x has room
 * for `room` values (n + RUN_SLACK, or fewer).  Inlined with a constant
 * mode: one tight loop a mode (this is most of the time of a query).  A
 * short run of one value (a gauge that did not change: delta 0 repeated)
 * is written as RUN_SLACK copies whatever its length, the extra ones
 * overwritten next: no loop whose end the processor mispredicts. */
enum { RUN_SLACK = 16 };
static inline __attribute__((always_inline)) int
ints_of_mode(const uint8_t **qp, const uint8_t *e, int64_t *x, size_t i, size_t n, size_t room,
             const int mode, uint64_t step, uint64_t d, uint64_t a1)
{
    const uint8_t *q = *qp;
    uint64_t dd = 0, base = a1 + (uint64_t)i * step;
    while (i < n) {
        uint64_t tok, k = 1;
        if (q < e && *q < 0x80) {
            tok = *q++;
        } else if (e - q >= 2 && q[1] < 0x80) { /* two bytes: a third of the tokens of a gauge */
            tok = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
            q += 2;
        } else {
            size_t pos = 0;
            if (store_get_varint(q, (size_t)(e - q), &pos, &tok) < 0) return -1;
            q += pos;
        }
        if (tok & 1) { /* the previous difference r more times */
            k = tok >> 1;
            if (k == 0 || k > n - i) return -1;
        } else {
            d = store_unzz(tok >> 1);
        }
        if ((tok & 1) && (mode == 0 || (mode == 1 && d == 0)) && k <= RUN_SLACK &&
            i + RUN_SLACK <= room) {
            int64_t c = mode == 0 ? (int64_t)d : (int64_t)a1;
            for (int j = 0; j < RUN_SLACK; j++) x[i + (size_t)j] = c;
            i += k;
            continue;
        }
        switch (mode) {
        case 0:
            for (; k; k--) x[i++] = (int64_t)d;
            break;
        case 1:
            for (; k; k--) {
                a1 += d;
                x[i++] = (int64_t)a1;
            }
            break;
        case 2:
            for (; k; k--) {
                dd += d;
                a1 += dd;
                x[i++] = (int64_t)a1;
            }
            break;
        default:
            for (; k; k--) {
                x[i++] = (int64_t)(base + d);
                base += step;
            }
            break;
        }
    }
    *qp = q;
    return 0;
}

/* Mode 4, a grid with packed residuals (timestamps a few ms off a regular
 * interval): varint zigzag(step), varint zigzag(x[0]), varint zigzag(lo),
 * byte bits (0..8), then x[i] - x[0] - i*step - lo for i >= 1 in `bits`
 * bits each, least significant first.  Read without zstd: the residuals
 * are as dense as entropy coding would make them, and zstd on small frames
 * of many short matches is slow to decode (12 us for 3,600 timestamps). */
static int get_packed_grid(const uint8_t *p, size_t len, size_t *pos, int64_t *x, size_t n)
{
    uint64_t zs, z0, zl;
    if (store_get_varint(p, len, pos, &zs) < 0 || store_get_varint(p, len, pos, &z0) < 0 ||
        store_get_varint(p, len, pos, &zl) < 0 || *pos >= len || n == 0)
        return -1;
    unsigned bits = p[(*pos)++];
    if (bits > 8) return -1;
    size_t nb = ((n - 1) * bits + 7) / 8;
    if (nb > len - *pos) return -1;
    const uint8_t *q = p + *pos;
    uint64_t step = store_unzz(zs), base = store_unzz(z0), mask = (1u << bits) - 1;
    x[0] = (int64_t)base;
    base += step + store_unzz(zl);
    size_t i = 1;
    for (; i < n && !bits; i++, base += step) x[i] = (int64_t)base;
    /* eight bytes a load while they are there: every residual that lies
     * whole in them (28 of 2 bits), then the next eight */
    for (size_t bit = 0; i < n && bits && (bit >> 3) + 8 <= nb;) {
        uint64_t w;
        memcpy(&w, q + (bit >> 3), 8);
        w = le64toh(w) >> (bit & 7);
        size_t k = (64 - (bit & 7)) / bits;
        if (k > n - i) k = n - i;
        bit += k * bits;
        for (size_t e = i + k; i < e; i++, base += step, w >>= bits)
            x[i] = (int64_t)(base + (w & mask));
    }
    for (; i < n && bits; i++, base += step) {
        size_t bit = (i - 1) * bits, at = bit >> 3;
        unsigned w = q[at] | (at + 1 < nb ? (unsigned)q[at + 1] << 8 : 0u);
        x[i] = (int64_t)(base + ((w >> (bit & 7)) & mask));
    }
    *pos += nb;
    return 0;
}

/* x in mode 4 when every residual from the grid is within 255 of the
 * smallest: 0, or -1 (nothing written) when not. */
static int put_packed_grid(store_buf *b, const int64_t *x, size_t n)
{
    if (n < 3) return -1;
    /* the step rounded to nearest (truncated, 3599 s of 1 s samples a few
     * ms late would be 999 ms and the residuals would drift by a second) */
    int64_t span = (int64_t)((uint64_t)x[n - 1] - (uint64_t)x[0]), m = (int64_t)(n - 1);
    int64_t sq = span / m, sr = span % m;
    if (2 * (sr < 0 ? -sr : sr) > m) sq += span < 0 ? -1 : 1;
    uint64_t step = (uint64_t)sq;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 1; i < n; i++) {
        int64_t r = (int64_t)((uint64_t)x[i] - (uint64_t)x[0] - (uint64_t)i * step);
        if (r < lo) lo = r;
        if (r > hi) hi = r;
    }
    if ((uint64_t)hi - (uint64_t)lo > 255) return -1;
    unsigned bits = 0;
    while ((uint64_t)(hi - lo) >> bits) bits++;
    size_t nb = ((n - 1) * bits + 7) / 8;
    if (store_buf_reserve(b, 32 + nb) < 0) return -1;
    b->p[b->n++] = 4;
    store_buf_varint(b, store_zz(step));
    store_buf_varint(b, store_zz((uint64_t)x[0]));
    store_buf_varint(b, store_zz((uint64_t)lo));
    b->p[b->n++] = (uint8_t)bits;
    uint8_t *q = b->p + b->n;
    memset(q, 0, nb);
    for (size_t i = 1; i < n && bits; i++) {
        uint64_t u = (uint64_t)x[i] - (uint64_t)x[0] - (uint64_t)i * step - (uint64_t)lo;
        size_t bit = (i - 1) * bits, at = bit >> 3;
        unsigned w = (unsigned)u << (bit & 7);
        q[at] |= (uint8_t)w;
        if (at + 1 < nb) q[at + 1] |= (uint8_t)(w >> 8);
    }
    b->n += nb;
    return 0;
}

/* Decodes n integers into x; -1 when corrupt.  The first value is a
 * literal (d[0] = x[0] in every mode); the rest go through one loop a mode. */
static int get_ints(const uint8_t *p, size_t len, size_t *pos, int64_t *x, size_t n, size_t room)
{
    if (*pos >= len) return -1;
    int mode = p[(*pos)++];
    if (mode == 4) return get_packed_grid(p, len, pos, x, n);
    if (mode > 3) return -1;
    uint64_t step = 0;
    if (mode == 3) {
        uint64_t z;
        if (store_get_varint(p, len, pos, &z) < 0) return -1;
        step = store_unzz(z);
    }
    const uint8_t *q = p + *pos, *e = p + len;
    if (n == 0) return 0;
    uint64_t tok;
    if (next_token(&q, e, &tok) < 0 || (tok & 1)) return -1; /* nothing to repeat yet */
    uint64_t d = store_unzz(tok >> 1);
    x[0] = (int64_t)d;
    int rc;
    switch (mode) { /* a constant mode each: the loops are specialised */
    case 0:
        rc = ints_of_mode(&q, e, x, 1, n, room, 0, step, d, d);
        break;
    case 1:
        rc = ints_of_mode(&q, e, x, 1, n, room, 1, step, d, d);
        break;
    case 2:
        rc = ints_of_mode(&q, e, x, 1, n, room, 2, step, d, d);
        break;
    default:
        rc = ints_of_mode(&q, e, x, 1, n, room, 3, step, d, d);
        break;
    }
    if (rc < 0) return -1;
    *pos = (size_t)(q - p);
    return 0;
}

/* Smallest k (0..9) with every value exactly v = round(v*10^k) / 10^k, or -1. */
static int decimal_scale(const double *v, size_t n)
{
    for (int k = 0; k < 10; k++) {
        size_t i;
        for (i = 0; i < n; i++) {
            double m = v[i] * store_p10[k];
            if (!(fabs(m) <= VALUE_LIMIT)) return -1;
            double back = (double)(int64_t)nearbyint(m) / store_p10[k];
            if (memcmp(&back, &v[i], sizeof back) != 0) break;
        }
        if (i == n) return k;
    }
    return -1;
}

/* --- Gorilla XOR floats --------------------------------------------------- */

typedef struct bitw {
    store_buf *b;
    uint64_t acc;
    int nacc;
} bitw;

static void bw_put(bitw *w, uint64_t v, int bits)
{
    while (bits > 0) {
        int take = bits < 64 - w->nacc ? bits : 64 - w->nacc;
        uint64_t part = take == 64 ? v : (v >> (bits - take)) & ((1ULL << take) - 1);
        w->acc = take == 64 ? part : (w->acc << take) | part;
        w->nacc += take;
        bits -= take;
        if (w->nacc == 64) {
            if (store_buf_reserve(w->b, 8) < 0) return;
            for (int i = 7; i >= 0; i--) w->b->p[w->b->n++] = (uint8_t)(w->acc >> (i * 8));
            w->acc = 0;
            w->nacc = 0;
        }
    }
}

static void bw_flush(bitw *w)
{
    if (w->nacc) {
        uint64_t v = w->acc << (64 - w->nacc);
        int bytes = (w->nacc + 7) / 8;
        if (store_buf_reserve(w->b, 8) < 0) return;
        for (int i = 0; i < bytes; i++) w->b->p[w->b->n++] = (uint8_t)(v >> (56 - i * 8));
        w->acc = 0;
        w->nacc = 0;
    }
}

typedef struct bitr {
    const uint8_t *p;
    size_t len, bit;
} bitr;

static int br_get(bitr *r, int bits, uint64_t *out)
{
    if (r->bit + (size_t)bits > r->len * 8) return -1;
    uint64_t v = 0;
    while (bits > 0) {
        size_t byte = r->bit >> 3;
        int off = (int)(r->bit & 7);
        int avail = 8 - off;
        int take = bits < avail ? bits : avail;
        uint64_t part = (r->p[byte] >> (avail - take)) & ((1u << take) - 1);
        v = (v << take) | part;
        r->bit += take;
        bits -= take;
    }
    *out = v;
    return 0;
}

static void put_xor(store_buf *b, const double *val, size_t n)
{
    bitw w = {b, 0, 0};
    uint64_t prev;
    memcpy(&prev, &val[0], 8);
    bw_put(&w, prev, 64);
    int pl = -1, pt = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t cur;
        memcpy(&cur, &val[i], 8);
        uint64_t x = cur ^ prev;
        prev = cur;
        if (!x) {
            bw_put(&w, 0, 1);
            continue;
        }
        int lead = __builtin_clzll(x), trail = __builtin_ctzll(x);
        if (lead > 31) lead = 31;
        if (pl >= 0 && lead >= pl && trail >= pt) {
            bw_put(&w, 2, 2); /* '10': same window */
            bw_put(&w, x >> pt, 64 - pl - pt);
        } else {
            int sig = 64 - lead - trail;
            bw_put(&w, 3, 2); /* '11': new window */
            bw_put(&w, (uint64_t)lead, 5);
            bw_put(&w, (uint64_t)(sig & 63), 6); /* 64 is written as 0 */
            bw_put(&w, x >> trail, sig);
            pl = lead;
            pt = trail;
        }
    }
    bw_flush(&w);
}

static int get_xor(const uint8_t *p, size_t len, size_t *pos, double *val, size_t n)
{
    bitr r = {p + *pos, len - *pos, 0};
    uint64_t prev, v;
    if (br_get(&r, 64, &prev) < 0) return -1;
    memcpy(&val[0], &prev, 8);
    int pl = 0, pt = 0;
    for (size_t i = 1; i < n; i++) {
        if (br_get(&r, 1, &v) < 0) return -1;
        if (v) {
            if (br_get(&r, 1, &v) < 0) return -1;
            if (v) {
                uint64_t lead, sig;
                if (br_get(&r, 5, &lead) < 0 || br_get(&r, 6, &sig) < 0) return -1;
                if (sig == 0) sig = 64;
                if (lead + sig > 64) return -1;
                pl = (int)lead;
                pt = 64 - (int)lead - (int)sig;
            }
            int bits = 64 - pl - pt;
            uint64_t x;
            if (bits <= 0 || br_get(&r, bits, &x) < 0) return -1;
            prev ^= x << pt;
        }
        memcpy(&val[i], &prev, 8);
    }
    *pos += (r.bit + 7) / 8;
    return 0;
}

/* --- zstd contexts, one per thread ---------------------------------------- */

static pthread_key_t cctx_key, dctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static void free_cctx(void *c)
{
    ZSTD_freeCCtx(c);
}
static void free_dctx(void *c)
{
    ZSTD_freeDCtx(c);
}
static void make_keys(void)
{
    pthread_key_create(&cctx_key, free_cctx);
    pthread_key_create(&dctx_key, free_dctx);
}

static ZSTD_CCtx *my_cctx(void)
{
    pthread_once(&ctx_once, make_keys);
    ZSTD_CCtx *c = pthread_getspecific(cctx_key);
    if (!c && (c = ZSTD_createCCtx())) pthread_setspecific(cctx_key, c);
    return c;
}

static ZSTD_DCtx *my_dctx(void)
{
    pthread_once(&ctx_once, make_keys);
    ZSTD_DCtx *c = pthread_getspecific(dctx_key);
    if (!c && (c = ZSTD_createDCtx())) pthread_setspecific(dctx_key, c);
    return c;
}

/* Appends one zstd frame of p[0..n) at level to out: 0, or -1. */
int store_zstd(const uint8_t *p, size_t n, int level, store_buf *out)
{
    ZSTD_CCtx *c = my_cctx();
    size_t bound = ZSTD_compressBound(n);
    if (!c || store_buf_reserve(out, bound) < 0) return -1;
    size_t z = ZSTD_compressCCtx(c, out->p + out->n, bound, p, n, level);
    if (ZSTD_isError(z)) return -1;
    out->n += z;
    return 0;
}

/* Replaces out's content with the frame p[0..n), which must give exactly
 * raw bytes: 0, or -1. */
int store_unzstd(const uint8_t *p, size_t n, size_t raw, store_buf *out)
{
    ZSTD_DCtx *d = my_dctx();
    out->n = 0;
    if (!d || store_buf_reserve(out, raw ? raw : 1) < 0) return -1;
    size_t got = ZSTD_decompressDCtx(d, out->p, raw, p, n);
    if (ZSTD_isError(got) || got != raw) return -1;
    out->n = raw;
    return 0;
}

/* --- parts and chunks ------------------------------------------------------ */

/* Wraps a body: kind 1 (plain) or 2 (zstd: varint body length, frame). */
static void wrap(store_buf *body, int zlevel, store_buf *out)
{
    out->n = 0;
    if (zlevel > 0 && body->n > 16) {
        ZSTD_CCtx *c = my_cctx();
        size_t bound = ZSTD_compressBound(body->n);
        if (store_buf_reserve(out, bound + 11) < 0) return;
        out->p[0] = 2;
        out->n = 1;
        store_buf_varint(out, body->n);
        size_t z = c ? ZSTD_compressCCtx(c, out->p + out->n, bound, body->p, body->n, zlevel) : 0;
        if (c && !ZSTD_isError(z) && out->n + z < body->n + 1) {
            out->n += z;
            return;
        }
        out->n = 0;
    }
    if (store_buf_reserve(out, body->n + 1) < 0) return;
    out->p[0] = 1;
    memcpy(out->p + 1, body->p, body->n);
    out->n = body->n + 1;
}

/* The body of a part (decompressed into *tmp when needed). */
static const uint8_t *unwrap(const uint8_t *p, size_t len, size_t *blen, store_buf *tmp)
{
    if (len < 2) return NULL;
    if (p[0] == 1) {
        *blen = len - 1;
        return p + 1;
    }
    if (p[0] != 2) return NULL;
    size_t pos = 1;
    uint64_t bl;
    if (store_get_varint(p, len, &pos, &bl) < 0 || bl > ((size_t)1 << 28)) return NULL;
    tmp->n = 0;
    if (store_buf_reserve(tmp, bl) < 0) return NULL;
    ZSTD_DCtx *d = my_dctx();
    size_t got = d ? ZSTD_decompressDCtx(d, tmp->p, bl, p + pos, len - pos) : (size_t)-1;
    if (!d || ZSTD_isError(got) || got != bl) return NULL;
    *blen = bl;
    return tmp->p;
}

/* Timestamps: the cheapest of modes 0..3 (zstd when it pays) and, when it
 * is no larger, the packed grid stored plain (mode 4: read without zstd). */
int store_ts_encode(const int64_t *ts, size_t n, int zlevel, store_buf *out)
{
    if (n == 0) return -1;
    store_buf body = {0}, pk = {0};
    store_buf_varint(&body, n);
    put_ints(&body, ts, n, zlevel);
    out->oom = 0;
    if (!body.oom) wrap(&body, zlevel, out);
    int rc = body.oom || out->oom ? -1 : 0;
    store_buf_varint(&pk, n);
    if (rc == 0 && !pk.oom && put_packed_grid(&pk, ts, n) == 0 && pk.n + 1 <= out->n) {
        wrap(&pk, 0, out);
        rc = out->oom ? -1 : 0;
    }
    store_buf_free(&body);
    store_buf_free(&pk);
    return rc;
}

int store_val_encode(const double *val, size_t n, int zlevel, store_buf *out)
{
    if (n == 0) return -1;
    store_buf body = {0};
    store_buf_varint(&body, n);
    int k = decimal_scale(val, n);
    int64_t *iv = k >= 0 ? malloc(n * sizeof *iv) : NULL;
    if (store_buf_reserve(&body, 1) < 0 || (k >= 0 && !iv)) {
        body.oom = 1;
    } else if (k >= 0) {
        body.p[body.n++] = (uint8_t)k;
        for (size_t i = 0; i < n; i++) iv[i] = (int64_t)nearbyint(val[i] * store_p10[k]);
        put_ints(&body, iv, n, zlevel);
    } else {
        body.p[body.n++] = 0x10;
        put_xor(&body, val, n);
    }
    free(iv);
    out->oom = 0;
    if (!body.oom) wrap(&body, zlevel, out);
    int rc = body.oom || out->oom ? -1 : 0;
    store_buf_free(&body);
    return rc;
}

static int grow(int64_t **ts, double **val, size_t n, size_t *cap, size_t more)
{
    if (n + more <= *cap) return 0;
    size_t c = *cap ? *cap : 256;
    while (c < n + more) c *= 2;
    int64_t *t2 = realloc(*ts, c * sizeof **ts);
    if (!t2) return -1;
    *ts = t2;
    double *v2 = realloc(*val, c * sizeof **val);
    if (!v2) return -1;
    *val = v2;
    *cap = c;
    return 0;
}

int store_parts_decode(const uint8_t *tp, size_t tl, const uint8_t *vp, size_t vl, int64_t **ts,
                       double **val, size_t *n, size_t *cap)
{
    store_buf tmp = {0};
    size_t blen, pos = 0;
    uint64_t cnt, vcnt;
    int rc = -1;
    const uint8_t *b = unwrap(tp, tl, &blen, &tmp);
    if (!b || store_get_varint(b, blen, &pos, &cnt) < 0 || cnt == 0 || cnt > ((uint64_t)1 << 23) ||
        grow(ts, val, *n, cap, cnt + RUN_SLACK) < 0 ||
        get_ints(b, blen, &pos, *ts + *n, cnt, *cap - *n) < 0)
        goto out;
    pos = 0;
    b = unwrap(vp, vl, &blen, &tmp);
    if (!b || store_get_varint(b, blen, &pos, &vcnt) < 0 || vcnt != cnt || pos >= blen) goto out;
    double *v = *val + *n;
    int mode = b[pos++];
    if (mode < 10) {
        /* the integers are decoded in place over the doubles' storage */
        int64_t *iv = (int64_t *)(void *)v;
        if (get_ints(b, blen, &pos, iv, cnt, *cap - *n) < 0) goto out;
        double sc = store_p10[mode];
        if (mode == 0)
            for (size_t i = 0; i < cnt; i++) v[i] = (double)iv[i];
        else
            for (size_t i = 0; i < cnt; i++) v[i] = (double)iv[i] / sc;
    } else if (mode == 0x10) {
        if (get_xor(b, blen, &pos, v, cnt) < 0) goto out;
    } else {
        goto out;
    }
    *n += cnt;
    rc = 0;
out:
    store_buf_free(&tmp);
    return rc;
}

/* A whole chunk: varint length of the timestamp part, the two parts. */
int store_chunk_encode(const int64_t *ts, const double *val, size_t n, int zlevel, store_buf *out)
{
    store_buf t = {0}, v = {0};
    if (store_ts_encode(ts, n, zlevel, &t) < 0 || store_val_encode(val, n, zlevel, &v) < 0) {
        store_buf_free(&t);
        store_buf_free(&v);
        return -1;
    }
    out->n = 0;
    out->oom = 0;
    store_buf_varint(out, t.n);
    int rc = store_buf_reserve(out, t.n + v.n);
    if (rc == 0) {
        memcpy(out->p + out->n, t.p, t.n);
        memcpy(out->p + out->n + t.n, v.p, v.n);
        out->n += t.n + v.n;
    }
    store_buf_free(&t);
    store_buf_free(&v);
    return rc;
}

int store_chunk_decode(const uint8_t *p, size_t len, int64_t **ts, double **val, size_t *n,
                       size_t *cap)
{
    size_t pos = 0;
    uint64_t tl;
    if (store_get_varint(p, len, &pos, &tl) < 0 || tl > len - pos) return -1;
    return store_parts_decode(p + pos, tl, p + pos + tl, len - pos - tl, ts, val, n, cap);
}

/* CRC-32C (Castagnoli): the SSE4.2 instruction where the CPU has it, else
 * a bytewise table. */
static uint32_t crc_table[256];
static int crc_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p,
                                                            size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

uint32_t store_crc32c(uint32_t crc, const void *buf, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = buf;
    crc = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
    if (crc_hw) return ~crc_sse42(crc, p, n);
#endif
    while (n--) crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
