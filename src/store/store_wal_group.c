/* store_wal_group.c — a group commit's points gathered by series before
 * the log compresses them (store_wal.c wal_compress; docs/store.md "The
 * write-ahead log").
 *
 * A put logs its slice as it comes: a line's fields are runs of one point,
 * each series met again a second later, in the next slice.  One ZSTD record
 * is one write with one CRC, applied whole or not at all, so inside it the
 * points can go in any order that keeps each series' own: the POINTS_G runs
 * of a frame are rewritten here as one run a series (its timestamps, then
 * its values as steps), the other records first.  zstd then finds a job's
 * timestamps column again in each of its fields, and a counter costs its
 * steps: the log of a bulk upload is ~40% smaller.  A frame whose series
 * come once each (a site collector's million) is left as it is. */
#include "store/store_priv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A point as its run logged it: x / 10^k, or (k 15) the double's bits. */
typedef struct gpoint {
    int64_t ts, x;
    int k;
} gpoint;

typedef struct ggroup {
    uint64_t id;
    uint32_t first, last, n;
    int kmin, kmax; /* of its runs (15: the doubles' bits) */
} ggroup;

void store_wal_group_free(store_wal_group *g)
{
    free(g->pts);
    free(g->next);
    free(g->groups);
    free(g->tab);
    free(g->sorted);
    store_buf_free(&g->raw);
    memset(g, 0, sizeof *g);
}

static int grow(void **p, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap) return 0;
    size_t nc = *cap ? *cap : 1024;
    while (nc < want) nc *= 2;
    void *np = realloc(*p, nc * size);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* The slot of series id in the table: its group's, or the empty one where
 * it goes. */
static size_t slot(const store_wal_group *g, uint64_t id)
{
    size_t h = (size_t)(id * 0x9e3779b97f4a7c15ULL >> 20) & (g->tabcap - 1);
    while (g->tab[h] && ((const ggroup *)g->groups)[g->tab[h] - 1].id != id)
        h = (h + 1) & (g->tabcap - 1);
    return h;
}

/* The table at cap slots (a power of two), the groups in it again. */
static int rehash(store_wal_group *g, size_t cap)
{
    uint32_t *nt = realloc(g->tab, cap * sizeof *nt);
    if (!nt) return -1;
    g->tab = nt;
    g->tabcap = cap;
    memset(g->tab, 0, cap * sizeof *g->tab);
    for (size_t i = 0; i < g->ngroups; i++)
        g->tab[slot(g, ((ggroup *)g->groups)[i].id)] = (uint32_t)(i + 1);
    return 0;
}

/* The points of the POINTS_G record r (its type byte first) appended to g
 * with the series they belong to; 0, or -1 (a record this jobscope did not
 * write, or memory short). */
static int gather(store_wal_group *g, const uint8_t *r, size_t len)
{
    size_t rp = 1;
    int64_t prev = 0;
    while (rp < len) {
        uint64_t id, n, z, d;
        if (store_get_varint(r, len, &rp, &id) < 0 || store_get_varint(r, len, &rp, &n) < 0)
            return -1;
        int k = (int)(n & 15);
        n >>= 4;
        if ((k > 9 && k != 15) || n == 0 || n > len) return -1;
        if (grow(&g->pts, &g->cap, g->n + n, sizeof(gpoint)) < 0) return -1;
        gpoint *p = (gpoint *)g->pts + g->n;
        for (uint64_t i = 0; i < n; i++) {
            if (store_get_varint(r, len, &rp, &z) < 0) return -1;
            prev = (int64_t)((uint64_t)prev + store_unzz(z));
            p[i].ts = prev;
        }
        int64_t x = 0;
        for (uint64_t i = 0; i < n; i++) {
            p[i].k = k;
            if (k == 15) {
                if (rp + 8 > len) return -1;
                memcpy(&p[i].x, r + rp, 8);
                rp += 8;
                continue;
            }
            if (store_get_varint(r, len, &rp, &d) < 0) return -1;
            x = (int64_t)((uint64_t)x + store_unzz(d));
            p[i].x = x;
        }
        /* the run's points join their series' group */
        if (grow((void **)&g->next, &g->capnext, g->n + n, sizeof *g->next) < 0) return -1;
        if ((g->ngroups + 1) * 2 > g->tabcap && rehash(g, g->tabcap * 2) < 0) return -1;
        size_t h = slot(g, id);
        ggroup *gr;
        if (!g->tab[h]) {
            if (grow((void **)&g->groups, &g->capgroups, g->ngroups + 1, sizeof(ggroup)) < 0)
                return -1;
            gr = (ggroup *)g->groups + g->ngroups++;
            *gr = (ggroup){id, (uint32_t)g->n, (uint32_t)g->n, 0, k, k};
            g->tab[h] = (uint32_t)g->ngroups;
        } else {
            gr = (ggroup *)g->groups + g->tab[h] - 1;
            g->next[gr->last] = (uint32_t)g->n;
            if (k < gr->kmin) gr->kmin = k;
            if (k > gr->kmax) gr->kmax = k;
        }
        for (uint64_t i = 0; i < n; i++) g->next[g->n + i] = (uint32_t)(g->n + i + 1);
        gr->last = (uint32_t)(g->n + n - 1);
        gr->n += (uint32_t)n;
        g->n += n;
    }
    return 0;
}

/* The run of p[0..c), one group's points, at b[n] as store_wal_run writes
 * it: when its runs were logged with the same k, their x as they are (no
 * double is made again); with more digits in some, each x scaled to the
 * most (the same double: x / 10^k is exact both ways up to 2^53); with a
 * double's bits in some, or past 2^53, every point as its double. */
static size_t run_out(uint8_t *b, size_t n, const ggroup *gr, gpoint *p, size_t c, int64_t *ts_prev)
{
    int k = gr->kmax;
    for (size_t i = 0; i < c && k != 15 && gr->kmin != gr->kmax; i++) {
        int64_t x = p[i].x;
        int e = p[i].k;
        for (; e < k && x <= 900719925474099 && x >= -900719925474099; e++) x *= 10;
        if (e < k) {
            k = 15; /* past 2^53: doubles (the points before keep theirs right) */
            break;
        }
        p[i].x = x;
        p[i].k = k;
    }
    if (k == 15)
        for (size_t i = 0; i < c; i++)
            if (p[i].k != 15) {
                double v = store_from_scaled(p[i].x, p[i].k);
                memcpy(&p[i].x, &v, 8);
                p[i].k = 15;
            }
    n = store_put_varint(b, n, gr->id);
    n = store_put_varint(b, n, (uint64_t)c << 4 | (unsigned)k);
    int64_t t = *ts_prev, xp = 0;
    for (size_t i = 0; i < c; i++) {
        n = store_put_varint(b, n, store_zz((uint64_t)p[i].ts - (uint64_t)t));
        t = p[i].ts;
    }
    for (size_t i = 0; i < c; i++) {
        if (k == 15) {
            memcpy(b + n, &p[i].x, 8);
            n += 8;
        } else {
            n = store_put_varint(b, n, store_zz((uint64_t)p[i].x - (uint64_t)xp));
            xp = p[i].x;
        }
    }
    *ts_prev = t;
    return n;
}

int store_wal_gather(store_wal_group *g, const uint8_t *p, size_t n, store_buf *out)
{
    /* the table at most half full, grown as series come */
    g->n = g->ngroups = 0;
    if (rehash(g, g->tabcap ? g->tabcap : 4096) < 0) return -1;
    size_t start = out->n;
    /* the other records first, as they are: a series before its points */
    for (size_t pos = 0; pos < n;) {
        uint32_t len;
        memcpy(&len, p + pos, 4);
        const uint8_t *r = p + pos + 8;
        if (r[0] == REC_POINTS_G) {
            if (gather(g, r, len) < 0) goto keep;
            /* series that come once each, so far: no need to look further */
            if (g->n >= 32768 && g->ngroups * 2 > g->n) goto keep;
        } else {
            if (store_buf_reserve(out, 8 + (size_t)len) < 0) goto keep;
            memcpy(out->p + out->n, p + pos, 8 + (size_t)len);
            out->n += 8 + (size_t)len;
        }
        pos += 8 + (size_t)len;
    }
    /* nothing to gather: series that come once each */
    if (g->ngroups * 2 > g->n) goto keep;
    if (grow((void **)&g->sorted, &g->capsorted, g->n, sizeof(gpoint)) < 0) goto keep;
    /* runs of at most RUN_MAX points, records of at most REC_BYTES: far
     * under REC_MAX at 20 bytes a point */
    enum { RUN_MAX = 8192, REC_BYTES = 256 * 1024 };
    size_t at = SIZE_MAX; /* the open record's start (0 is one: no other record came first) */
    int64_t ts_prev = 0;
    for (size_t gi = 0; gi < g->ngroups; gi++) {
        ggroup *gr = (ggroup *)g->groups + gi;
        gpoint *sp = g->sorted;
        size_t m = 0;
        for (uint32_t i = gr->first, c = 0; c < gr->n; c++, i = g->next[i])
            sp[m++] = ((gpoint *)g->pts)[i];
        for (size_t o = 0; o < m; o += RUN_MAX) {
            size_t c = m - o < RUN_MAX ? m - o : RUN_MAX;
            if (store_buf_reserve(out, 9 + 20 + c * 20) < 0) goto keep;
            if (at != SIZE_MAX && out->n - at > REC_BYTES) {
                store_wal_end(out, at);
                at = SIZE_MAX;
            }
            if (at == SIZE_MAX) {
                at = store_wal_begin(out, REC_POINTS_G);
                ts_prev = 0;
            }
            out->n = run_out(out->p, out->n, gr, sp + o, c, &ts_prev);
        }
    }
    if (at != SIZE_MAX) store_wal_end(out, at);
    if (out->oom || out->n - start >= n) goto keep;
    return 0;
keep:
    out->n = start;
    out->oom = 0;
    return -1;
}
