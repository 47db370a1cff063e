/* store_head.c — the heads of the store (store_priv.h, docs/store.md
 * "Heads"): each series' recent points, kept encoded as they arrive, as
 * Prometheus keeps an appendable XOR chunk per series instead of a list of
 * samples.  A head costs a few bytes a point instead of 16: a million
 * series of ten points fit in tens of megabytes.
 *
 * Encoding, one point after the other (varints):
 *   timestamp   the first: ts - the start of its partition (hpart); the
 *               second: ts - previous ts (> 0: a head is sorted); after:
 *               zigzag(delta - previous delta), one byte for a steady step
 *   value       hmode 0..9: zigzag(x - previous x), x = round(v * 10^hmode),
 *               used only while every value is such a decimal exactly (the
 *               first: zigzag(x)); hmode HEAD_RAW: the double's 8 bytes
 * A value that is not a decimal at the head's mode re-encodes the head at
 * the mode it needs (more digits, or raw); a point older than the head's
 * last re-encodes it with the point in place.  Appends are the rule.
 *
 * A head is cut into frozen chunks (the codec of codec.c, one per
 * partition) when it reaches its share of the head budget, when a point of
 * a later partition arrives, and at checkpoints; frozen chunks wait in
 * memory (still read from there) until store_flush_pending commits them. */
#include "store/store_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- head buffers -------------------------------------------------------
 *
 * A million heads of tens of bytes: malloc would add a header and rounding
 * to each.  Buffers come from 64 KiB slabs in size classes instead (exact
 * to 8 bytes up to 64, then coarser), with a free list per class; past the
 * largest class, malloc.  Under mu, as everything about heads. */

static const uint16_t cls_size[] = {8,  16,  24,  32,  40,  48,  56,  64,  80,
                                    96, 112, 128, 160, 192, 224, 256, 320, 384};
#define NCLS (sizeof cls_size / sizeof cls_size[0])
#define SLAB (64u << 10)

static int cls_of(uint32_t n)
{
    for (int c = 0; c < (int)NCLS; c++)
        if (n <= cls_size[c]) return c;
    return -1;
}

static uint8_t *buf_alloc(store *s, uint32_t cap)
{
    int c = cls_of(cap);
    if (c < 0) return malloc(cap);
    headslab *hs = &s->hslab;
    if (hs->free[c]) {
        uint8_t *p = hs->free[c];
        memcpy(&hs->free[c], p, sizeof(uint8_t *));
        return p;
    }
    uint32_t sz = cls_size[c];
    if (hs->left < sz) {
        if (hs->nslabs == hs->capslabs) {
            size_t nc = hs->capslabs ? hs->capslabs * 2 : 64;
            uint8_t **ns = realloc(hs->slabs, nc * sizeof *ns);
            if (!ns) return NULL;
            hs->slabs = ns;
            hs->capslabs = nc;
        }
        uint8_t *slab = malloc(SLAB);
        if (!slab) return NULL;
        hs->slabs[hs->nslabs++] = slab;
        hs->cur = slab;
        hs->left = SLAB;
    }
    uint8_t *p = hs->cur;
    hs->cur += sz;
    hs->left -= sz;
    return p;
}

static void buf_free(store *s, uint8_t *p, uint32_t cap)
{
    if (!p) return;
    int c = cls_of(cap);
    if (c < 0) {
        free(p);
        return;
    }
    memcpy(p, &s->hslab.free[c], sizeof(uint8_t *));
    s->hslab.free[c] = p;
}

/* Frees every slab, the frozen chunks left and their map (store_close). */
void store_head_slabs_free(store *s)
{
    for (frozen *f = s->pend_first, *nx; f; f = nx) {
        nx = f->next_p;
        free(f->tdata);
        free(f->vdata);
        free(f);
    }
    s->pend_first = s->pend_last = NULL;
    free(s->fz);
    s->fz = NULL;
    s->fzcap = s->fzn = 0;
    for (size_t i = 0; i < s->hslab.nslabs; i++) free(s->hslab.slabs[i]);
    free(s->hslab.slabs);
    memset(&s->hslab, 0, sizeof s->hslab);
}

/* Room for `more` bytes in the head: 0, or -1 out of memory (unchanged). */
static int head_reserve(store *s, series *se, uint32_t more)
{
    if (se->hlen + more <= se->hcap) return 0;
    /* 32 bytes first (ten points of a typical series: 2-3 bytes a point),
     * then doubling: heads that grow in step (every series a point a round)
     * leave few free buffers behind in the classes they grew out of */
    uint32_t need = se->hlen + more, c = se->hcap ? se->hcap * 2u : 32;
    if (c < need) c = need;
    int k = cls_of(c);
    c = k >= 0 ? cls_size[k] : c;
    if (c > UINT16_MAX) c = UINT16_MAX; /* a full head is at most ~37 KB */
    if (c < need) return -1;
    uint8_t *b = buf_alloc(s, c);
    if (!b) return -1;
    if (se->hlen) memcpy(b, se->hbuf, se->hlen);
    buf_free(s, se->hbuf, se->hcap);
    se->hbuf = b;
    se->hcap = (uint16_t)c;
    return 0;
}

/* Appends one point (ts after the head's last, v coded in the head's mode,
 * x its scaled value).  0, or -1 out of memory. */
static int append(store *s, series *se, int64_t ts, double v, int64_t x)
{
    uint8_t e[24] = {0};
    int first = se->hn == 0;
    uint32_t off = (uint32_t)(ts - (int64_t)se->hpart * PART_MS), dt = off - se->h_off;
    size_t n;
    if (first) /* the head's partition is the first point's */
        n = store_put_varint(e, 0, off);
    else if (se->hn == 1)
        n = store_put_varint(e, 0, dt);
    else
        n = store_put_varint(e, 0, store_zz((uint64_t)(int64_t)((int64_t)dt - (int64_t)se->h_dt)));
    if (se->hmode == HEAD_RAW) {
        memcpy(e + n, &v, 8);
        n += 8;
        memcpy(&x, &v, 8);
    } else {
        n = store_put_varint(e, n, store_zz(first ? (uint64_t)x : (uint64_t)x - (uint64_t)se->h_x));
    }
    if (head_reserve(s, se, (uint32_t)n) < 0) return -1;
    /* one fixed copy, inlined (past n: zeros, not the head's) */
    if ((size_t)se->hcap - se->hlen >= sizeof e)
        memcpy(se->hbuf + se->hlen, e, sizeof e);
    else
        memcpy(se->hbuf + se->hlen, e, n);
    se->hlen = (uint16_t)(se->hlen + n);
    se->h_off = off;
    se->h_dt = first ? 0 : dt;
    se->h_x = x;
    se->hn++;
    return 0;
}

/* Decodes the head into ts[0..hn) and val[0..hn). */
void store_head_decode(const series *se, int64_t *ts, double *val)
{
    const uint8_t *p = se->hbuf;
    uint64_t t = (uint64_t)((int64_t)se->hpart * PART_MS), x = 0, dt = 0;
    for (uint32_t i = 0; i < se->hn; i++) {
        uint64_t d = 0;
        for (int sh = 0;; sh += 7) {
            uint8_t c = *p++;
            d |= (uint64_t)(c & 0x7f) << sh;
            if (!(c & 0x80)) break;
        }
        if (i == 0)
            t += d;
        else {
            dt = i == 1 ? d : dt + store_unzz(d);
            t += dt;
        }
        ts[i] = (int64_t)t;
        if (se->hmode == HEAD_RAW) {
            memcpy(&val[i], p, 8);
            p += 8;
            continue;
        }
        d = 0;
        for (int sh = 0;; sh += 7) {
            uint8_t c = *p++;
            d |= (uint64_t)(c & 0x7f) << sh;
            if (!(c & 0x80)) break;
        }
        x += store_unzz(d);
        val[i] = store_from_scaled((int64_t)x, se->hmode);
    }
}

/* The head re-encoded from n sorted points in `mode`: 0, or -1 out of
 * memory (then the head is as it was). */
static int encode_all(store *s, series *se, const int64_t *ts, const double *v, uint32_t n,
                      int mode)
{
    if (n > UINT16_MAX) return -1;
    series t = *se;
    t.hbuf = NULL;
    t.hlen = t.hcap = t.hn = 0;
    t.hmode = (uint8_t)mode;
    if (n) t.hpart = (int32_t)store_part_of(ts[0]);
    for (uint32_t i = 0; i < n; i++) {
        int64_t x = 0;
        if (mode != HEAD_RAW) store_to_scaled(v[i], mode, &x);
        if (append(s, &t, ts[i], v[i], x) < 0) {
            buf_free(s, t.hbuf, t.hcap);
            return -1;
        }
    }
    s->head_bytes += t.hlen;
    s->head_bytes -= se->hlen;
    s->head_points += n;
    s->head_points -= se->hn;
    buf_free(s, se->hbuf, se->hcap);
    se->hbuf = t.hbuf;
    se->hlen = t.hlen;
    se->hcap = t.hcap;
    se->hn = t.hn;
    se->hmode = t.hmode;
    se->h_off = t.h_off;
    se->h_dt = t.h_dt;
    se->h_x = t.h_x;
    se->hpart = t.hpart;
    return 0;
}

/* The head's points decoded into fresh arrays (room for `extra` more). */
static int decode_alloc(const series *se, uint32_t extra, int64_t **ts, double **v)
{
    *ts = malloc((se->hn + extra + 1) * sizeof **ts);
    *v = malloc((se->hn + extra + 1) * sizeof **v);
    if (!*ts || !*v) {
        free(*ts);
        free(*v);
        return -1;
    }
    store_head_decode(se, *ts, *v);
    return 0;
}

/* Drops the head's points with ts <= cutoff; their count, or -1 out of
 * memory.  Under mu. */
long store_head_drop_before(store *s, series *se, int64_t cutoff)
{
    if (!se->hn) return 0;
    int64_t *ts;
    double *v;
    if (decode_alloc(se, 0, &ts, &v) < 0) return -1;
    uint32_t k = 0;
    while (k < se->hn && ts[k] <= cutoff) k++;
    long rc = k;
    if (k && encode_all(s, se, ts + k, v + k, se->hn - k, se->hmode) < 0) rc = -1;
    free(ts);
    free(v);
    return rc;
}

/* The slot of se's frozen chunks in the map (store.fz): its list, or the
 * empty slot where it goes. */
static frozen **fz_slot(const store *s, uint32_t id)
{
    size_t j = (id * 0x9e3779b9u) & (s->fzcap - 1);
    while (s->fz[j] && s->fz[j]->se->id != id) j = (j + 1) & (s->fzcap - 1);
    return &s->fz[j];
}

frozen *store_frozen_of(const store *s, const series *se)
{
    return s->fzn ? *fz_slot(s, se->id) : NULL;
}

/* Room in the map for one more series: 0, or -1 out of memory. */
static int fz_reserve(store *s)
{
    if ((s->fzn + 1) * 2 <= s->fzcap) return 0;
    size_t nc = s->fzcap ? s->fzcap * 2 : 1024;
    frozen **old = s->fz, **nt = calloc(nc, sizeof *nt);
    if (!nt) return -1;
    size_t oc = s->fzcap;
    s->fz = nt;
    s->fzcap = nc;
    for (size_t i = 0; i < oc; i++)
        if (old[i]) *fz_slot(s, old[i]->se->id) = old[i];
    free(old);
    return 0;
}

/* Appends f to the series' frozen list and the pending list (room made by
 * fz_reserve). */
static void freeze(store *s, series *se, frozen *f)
{
    frozen **pp = fz_slot(s, se->id);
    if (!*pp) s->fzn++;
    while (*pp) pp = &(*pp)->next_s;
    *pp = f;
    if (s->pend_last)
        s->pend_last->next_p = f;
    else
        s->pend_first = f;
    s->pend_last = f;
    s->pend_bytes += f->tlen + f->vlen + 64;
    s->pend_n++;
}

/* n points of se (one partition) frozen into one chunk: 0, or -1 out of
 * memory (nothing frozen).  b: scratch. */
static int freeze_run(store *s, series *se, const int64_t *ts, const double *v, uint32_t n,
                      store_buf *b)
{
    frozen *f = calloc(1, sizeof *f);
    if (!f || store_ts_encode(ts, n, ZLEVEL_FLUSH, b) < 0 || !(f->tdata = malloc(b->n))) {
        free(f);
        return -1;
    }
    memcpy(f->tdata, b->p, b->n);
    f->tlen = b->n;
    if (store_val_encode(v, n, ZLEVEL_FLUSH, b) < 0 || !(f->vdata = malloc(b->n))) {
        free(f->tdata);
        free(f);
        return -1;
    }
    memcpy(f->vdata, b->p, b->n);
    f->vlen = b->n;
    f->se = se;
    f->t0 = ts[0];
    f->t1 = ts[n - 1];
    f->n = n;
    freeze(s, se, f);
    return 0;
}

/* Encodes the first `upto` head points into frozen chunks (one per
 * partition).  -1 when out of memory: the points not cut stay in the head. */
int store_head_cut(store *s, series *se, uint32_t upto)
{
    if (upto > se->hn) upto = se->hn;
    if (!upto) return 0;
    int64_t *ts;
    double *v;
    if (fz_reserve(s) < 0) return -1;
    if (decode_alloc(se, 0, &ts, &v) < 0) return -1;
    uint32_t i = 0;
    int rc = 0;
    store_buf b = {0};
    while (i < upto) {
        int64_t p = store_part_of(ts[i]);
        uint32_t j = i + 1;
        while (j < upto && store_part_of(ts[j]) == p) j++;
        if (freeze_run(s, se, ts + i, v + i, j - i, &b) < 0) {
            rc = -1;
            break;
        }
        i = j;
    }
    store_buf_free(&b);
    if (i) {
        /* the rest becomes the head (an empty head gives its memory back) */
        if (i == se->hn) {
            s->head_points -= se->hn;
            s->head_bytes -= se->hlen;
            buf_free(s, se->hbuf, se->hcap);
            se->hbuf = NULL;
            se->hlen = se->hcap = se->hn = 0;
        } else if (encode_all(s, se, ts + i, v + i, se->hn - i, se->hmode) < 0) {
            rc = -1; /* what was cut is frozen: the head keeps it too (read twice, same) */
        }
    }
    free(ts);
    free(v);
    return rc;
}

/* Adds a point to the head of se (log segment seg holds it).  0, or -1 out
 * of memory (the point is not in memory). */
int store_head_add(store *s, series *se, int64_t ts, double v, uint64_t seg)
{
    int64_t part = store_part_of(ts);
    if (se->hn && part != se->hpart) {
        if (part < se->hpart) {
            /* a point of a partition before the head's: a chunk of its own
             * (settling merges it), the head stays in its partition */
            store_buf b = {0};
            int rc = fz_reserve(s) < 0 ? -1 : freeze_run(s, se, &ts, &v, 1, &b);
            store_buf_free(&b);
            if (rc < 0) return -1;
            s->mets[se->metric]->version++;
            se->touched = s->round;
            return 0;
        }
        /* a later partition began: the head's points are complete */
        if (store_head_cut(s, se, se->hn) < 0 || se->hn) return -1;
    }
    s->mets[se->metric]->version++;
    se->touched = s->round;
    if (ts > s->max_ts) s->max_ts = ts;
    int mode = se->hmode;
    int64_t x = 0;
    if (se->hn == 0) {
        se->hmode = (uint8_t)(mode = store_mode_for(v, 0));
        se->head_seg = (uint32_t)seg;
        se->hpart = (int32_t)part;
    }
    if (mode != HEAD_RAW && store_to_scaled(v, mode, &x) < 0) mode = store_mode_for(v, mode);
    if (se->hn && (ts <= store_head_last(se) || mode != se->hmode)) {
        /* out of order, a timestamp again, or a value of another coding:
         * decode, place the point, encode again */
        int64_t *t;
        double *val;
        if (decode_alloc(se, 1, &t, &val) < 0) return -1;
        uint32_t n = se->hn, lo = 0, hi = n;
        while (lo < hi) {
            uint32_t m = (lo + hi) / 2;
            if (t[m] < ts)
                lo = m + 1;
            else
                hi = m;
        }
        if (lo < n && t[lo] == ts) {
            val[lo] = v;
        } else {
            memmove(t + lo + 1, t + lo, (n - lo) * sizeof *t);
            memmove(val + lo + 1, val + lo, (n - lo) * sizeof *val);
            t[lo] = ts;
            val[lo] = v;
            n++;
        }
        /* a coding that holds every value: one of more digits may not hold
         * an earlier large one (x past 2^53): then the doubles' bits */
        for (uint32_t i = 0; i < n && mode != HEAD_RAW; i++)
            if (store_to_scaled(val[i], mode, &x) < 0) {
                mode = mode < 9 ? store_mode_for(val[i], mode + 1) : HEAD_RAW;
                i = UINT32_MAX; /* those before are checked again at it */
            }
        int rc = encode_all(s, se, t, val, n, mode);
        free(t);
        free(val);
        if (rc < 0) return -1;
    } else {
        uint32_t before = se->hlen;
        if (append(s, se, ts, v, x) < 0) return -1;
        s->head_points++;
        s->head_bytes += se->hlen - before;
    }
    if (se->hn >= s->head_max) store_head_cut(s, se, se->hn);
    return 0; /* a cut that found no memory left the points in the head */
}

/* Frees a series' head when its buffer is malloc'ed (store_close; the
 * slabs and frozen chunks go with store_head_slabs_free). */
void store_head_free(series *se)
{
    if (cls_of(se->hcap) < 0) free(se->hbuf);
}
