/* store_read.c — the read path of the store (store_priv.h, docs/store.md
 * "Reading"): a series' points merged from SQLite chunks (in the order they
 * were written), frozen chunks and the head, the newest value of a
 * timestamp winning; store_last with its in-memory cache. */
#include "store/store_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>

/* --- reads --------------------------------------------------------------- */

/* Room for `more` points in two arrays of *cap: 0, or -1 out of memory
 * (the arrays as they were). */
static int reserve2(int64_t **ts, double **val, size_t n, size_t *cap, size_t more)
{
    if (n + more <= *cap) return 0;
    size_t c = *cap ? *cap : 256;
    while (c < n + more) c *= 2;
    int64_t *t = realloc(*ts, c * sizeof *t);
    if (!t) return -1;
    *ts = t;
    double *v = realloc(*val, c * sizeof *v);
    if (!v) return -1;
    *val = v;
    *cap = c;
    return 0;
}

/* out (empty) with room for exactly n points: what is handed over holds
 * what it holds, not the capacity a reading buffer grew to (a million
 * series of ten points would keep 4 GB, mostly holes).  0, or -1. */
static int exact(store_points *out, size_t n)
{
    if (out->cap || !n) return 0;
    out->ts = malloc(n * sizeof *out->ts);
    out->val = malloc(n * sizeof *out->val);
    if (!out->ts || !out->val) {
        store_points_free(out);
        return -1;
    }
    out->cap = n;
    return 0;
}

static int store_pb_push(store_pointbuf *b, int64_t t, double v)
{
    if (reserve2(&b->ts, &b->val, b->n, &b->cap, 1) < 0) return -1;
    b->ts[b->n] = t;
    b->val[b->n++] = v;
    return 0;
}

typedef struct ord {
    int64_t ts;
    size_t i;
} ord;
static int cmp_ord(const void *a, const void *b)
{
    const ord *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Appends the points of b (in order of recency) within [from, to] to out,
 * sorted, the newest value of a timestamp winning.  -1 out of memory. */
int store_merge_out(store_pointbuf *b, int64_t from, int64_t to, store_points *out)
{
    int sorted = 1;
    for (size_t i = 1; i < b->n && sorted; i++)
        if (b->ts[i] <= b->ts[i - 1]) sorted = 0;
    if (sorted) {
        size_t lo = 0, hi = b->n;
        while (lo < b->n && b->ts[lo] < from) lo++;
        while (hi > lo && b->ts[hi - 1] > to) hi--;
        if (hi == lo) return 0;
        if (out->n == 0 && out->cap == 0) { /* the usual case: hand the arrays over, no copy */
            if (lo) {
                memmove(b->ts, b->ts + lo, (hi - lo) * sizeof *b->ts);
                memmove(b->val, b->val + lo, (hi - lo) * sizeof *b->val);
            }
            out->ts = b->ts;
            out->val = b->val;
            out->n = hi - lo;
            out->cap = b->cap;
            memset(b, 0, sizeof *b);
            return 0;
        }
        if (reserve2(&out->ts, &out->val, out->n, &out->cap, hi - lo) < 0) return -1;
        memcpy(out->ts + out->n, b->ts + lo, (hi - lo) * sizeof *out->ts);
        memcpy(out->val + out->n, b->val + lo, (hi - lo) * sizeof *out->val);
        out->n += hi - lo;
        return 0;
    }
    ord *o = malloc((b->n ? b->n : 1) * sizeof *o);
    if (!o) return -1;
    size_t m = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->ts[i] >= from && b->ts[i] <= to) {
            o[m].ts = b->ts[i];
            o[m].i = i;
            m++;
        }
    qsort(o, m, sizeof *o, cmp_ord);
    if (reserve2(&out->ts, &out->val, out->n, &out->cap, m) < 0) {
        free(o);
        return -1;
    }
    for (size_t i = 0; i < m; i++) {
        if (i + 1 < m && o[i + 1].ts == o[i].ts) continue; /* a newer value follows */
        out->ts[out->n] = o[i].ts;
        out->val[out->n++] = b->val[o[i].i];
    }
    free(o);
    return 0;
}

/* A worker's reused buffers: b's points within [from, to] become out's by
 * swapping the arrays (out's old ones are b's to fill next) when b is
 * sorted, the common case; merged as store_merge_out does otherwise.
 * out->n must be 0.  0, or -1 out of memory. */
static int merge_swap(store_pointbuf *b, int64_t from, int64_t to, store_points *out)
{
    size_t i = 1;
    while (i < b->n && b->ts[i] > b->ts[i - 1]) i++;
    if (i < b->n || !b->n) return store_merge_out(b, from, to, out);
    size_t lo = 0, hi = b->n;
    while (lo < b->n && b->ts[lo] < from) lo++;
    while (hi > lo && b->ts[hi - 1] > to) hi--;
    int64_t *ts = out->ts;
    double *val = out->val;
    size_t cap = out->cap;
    out->ts = b->ts;
    out->val = b->val;
    out->cap = b->cap;
    out->n = hi - lo;
    if (lo && hi > lo) {
        memmove(out->ts, out->ts + lo, (hi - lo) * sizeof *out->ts);
        memmove(out->val, out->val + lo, (hi - lo) * sizeof *out->val);
    }
    b->ts = ts;
    b->val = val;
    b->cap = cap;
    b->n = 0;
    return 0;
}

/* --- downsampling while decoding (store_read_many_ds) ---------------------- */

/* A series' buckets as its points come, in time order: a chunk at a time
 * (decoded into `chunk`, reused), never the whole series.  A point at or
 * before the last one (chunks written out of order, a timestamp written
 * twice) clears `ordered`: the caller then reads the series again the
 * usual way (merged, the newest value winning) and folds that. */
typedef struct bucketer {
    int64_t iv, from, to;
    store_ds_kind kind;
    int64_t start, end; /* the open bucket: [start, end), when cnt */
    double acc;
    size_t cnt, raw;
    int64_t last;
    int ordered;
    store_pointbuf out;   /* the buckets */
    store_pointbuf chunk; /* one chunk's points */
} bucketer;

static void bk_reset(bucketer *k)
{
    k->cnt = k->raw = 0;
    k->out.n = 0;
    k->ordered = 1;
}

static int bk_close(bucketer *k)
{
    if (!k->cnt) return 0;
    double v = k->acc;
    if (k->kind == STORE_DS_AVG)
        v = k->acc / (double)k->cnt;
    else if ((k->kind == STORE_DS_MIN && v == INFINITY) ||
             (k->kind == STORE_DS_MAX && v == -INFINITY))
        v = NAN;
    if (reserve2(&k->out.ts, &k->out.val, k->out.n, &k->out.cap, 1) < 0) return -1;
    k->out.ts[k->out.n] = k->start;
    k->out.val[k->out.n++] = v;
    k->cnt = 0;
    return 0;
}

/* Folds points i.. of ts/val (all in [from, to], strictly increasing, in
 * the open bucket) while they stay so: where it stopped.  One loop a kind. */
static inline __attribute__((always_inline)) size_t fold_run(bucketer *k, const int64_t *ts,
                                                             const double *val, size_t i, size_t n,
                                                             const store_ds_kind kind)
{
    int64_t prev = k->last, end = k->to < k->end - 1 ? k->to + 1 : k->end;
    double acc = k->acc;
    size_t j = i;
    for (; j < n; j++) {
        int64_t t = ts[j];
        if (t >= end || t <= prev) break;
        prev = t;
        double v = val[j];
        if (kind == STORE_DS_MIN) {
            if (v < acc) acc = v;
        } else if (kind == STORE_DS_MAX) {
            if (v > acc) acc = v;
        } else {
            acc += v;
        }
    }
    k->acc = acc;
    k->last = prev;
    k->cnt += j - i;
    k->raw += j - i;
    return j;
}

/* Folds n points in (the bucket rule of tsq_eval's downsampler: a bucket
 * starts at a point's t - t % iv and takes the points before start + iv):
 * 0, or -1 out of memory. */
static int bk_fold(bucketer *k, const int64_t *ts, const double *val, size_t n)
{
    for (size_t i = 0; i < n && k->ordered;) {
        int64_t t = ts[i];
        if (t < k->from || t > k->to) {
            i++;
            continue;
        }
        if (k->raw && t <= k->last) {
            k->ordered = 0;
            break;
        }
        if (!k->cnt || t >= k->end) {
            if (bk_close(k) < 0) return -1;
            /* the next bucket, the usual case, without a division */
            int next = k->raw && k->end >= 0 && t - k->end < k->iv;
            k->start = next ? k->end : t - t % k->iv;
            k->end = k->start + k->iv;
            k->acc = k->kind == STORE_DS_MIN ? INFINITY : k->kind == STORE_DS_MAX ? -INFINITY : 0;
            k->last = t - 1; /* (the first point of all: no last yet) */
        }
        switch (k->kind) {
        case STORE_DS_MIN:
            i = fold_run(k, ts, val, i, n, STORE_DS_MIN);
            break;
        case STORE_DS_MAX:
            i = fold_run(k, ts, val, i, n, STORE_DS_MAX);
            break;
        default:
            i = fold_run(k, ts, val, i, n, STORE_DS_SUM);
            break;
        }
    }
    return 0;
}

/* A chunk's points folded into k: 0, or -1 (corrupt, out of memory). */
static int bk_chunk(bucketer *k, const void *tp, int tl, const void *vp, int vl)
{
    store_pointbuf *c = &k->chunk;
    c->n = 0;
    if (!k->ordered) return 0;
    if (store_parts_decode(tp, (size_t)tl, vp, (size_t)vl, &c->ts, &c->val, &c->n, &c->cap) < 0)
        return -1;
    return bk_fold(k, c->ts, c->val, c->n);
}

static void bk_free(bucketer *k)
{
    free(k->out.ts);
    free(k->out.val);
    free(k->chunk.ts);
    free(k->chunk.val);
}

/* Decodes the frozen chunks and head of se within [from, to] into mem:
 * 0, or -1 out of memory. */
static int snapshot_memory(store *s, series *se, int64_t from, int64_t to, store_pointbuf *mem)
{
    for (frozen *f = store_frozen_of(s, se); f; f = f->next_s) {
        if (f->t1 < from || f->t0 > to) continue;
        if (store_parts_decode(f->tdata, f->tlen, f->vdata, f->vlen, &mem->ts, &mem->val, &mem->n,
                               &mem->cap) < 0)
            return -1;
    }
    if (!se->hn) return 0;
    if (reserve2(&mem->ts, &mem->val, mem->n, &mem->cap, se->hn) < 0) return -1;
    int64_t *ts = mem->ts + mem->n;
    double *val = mem->val + mem->n;
    store_head_decode(se, ts, val);
    size_t k = 0;
    for (uint32_t i = 0; i < se->hn; i++)
        if (ts[i] >= from && ts[i] <= to) {
            ts[k] = ts[i];
            val[k++] = val[i];
        }
    mem->n += k;
    return 0;
}

/* The statements of reads (prepared once a connection, store_stmt_cached).
 * Chunks are kept by (series, part, seq), seq their age within the
 * partition; the partitions of [from, to] bound the seek (part >= from /
 * PART_MS - 1: SQL's division truncates). */
_Static_assert(PART_MS == 7200000, "the reads divide by PART_MS");
static const char READ_ONE[] =
    "SELECT t.data, " CHUNK_DATA " FROM chunks c JOIN times t ON t.id = c.ts_ref" CHUNK_VALS
    "WHERE c.series=?1 AND c.part>=?2/7200000-1 AND c.part<=?3/7200000"
    " AND c.t_end>=?2 AND c.t_start<=?3 ORDER BY c.part, c.seq";
static const char READ_SCAN[] = "SELECT c.series, c.part * 1048576 + c.seq, t.data, " CHUNK_DATA
                                " FROM chunks c JOIN times t ON t.id = c.ts_ref" CHUNK_VALS
                                "WHERE c.series BETWEEN ?1 AND ?2 AND c.part>=?3/7200000-1 AND "
                                "c.part<=?4/7200000 AND c.t_end>=?3 AND c.t_start<=?4 "
                                "ORDER BY c.series, c.part, c.seq";

static size_t readers(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > 8 ? 8 : (size_t)cpus;
}

void store_read_warm(store *s)
{
    sqlite3 *db[8];
    size_t n = 0;
    for (size_t i = 0; i < readers(); i++) {
        if (!(db[n] = store_pool_get(s))) break;
        store_stmt_cached(db[n], READ_ONE);
        store_stmt_cached(db[n++], READ_SCAN);
    }
    while (n) store_pool_put(s, db[--n]);
}

/* The chunks of series id in [from, to] appended to b, read on conn (a
 * connection the caller holds) or on one from the pool when NULL. */
static int read_db(store *s, sqlite3 *conn, uint64_t id, int64_t from, int64_t to,
                   store_pointbuf *b, bucketer *bk)
{
    sqlite3 *db = conn ? conn : store_pool_get(s);
    if (!db) return -1;
    int rc = 0;
    sqlite3_stmt *st = store_stmt_cached(db, READ_ONE);
    if (!st) {
        if (!conn) store_pool_put(s, db);
        return -1;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (bk) { /* folded a chunk at a time (b unused) */
            if (bk_chunk(bk, sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0),
                         sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1)) < 0)
                rc = -1;
        } else if (store_parts_decode(
                       sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                       sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), &b->ts,
                       &b->val, &b->n, &b->cap) < 0)
            rc = -1;
    }
    if (r != SQLITE_DONE) rc = -1;
    sqlite3_reset(st);
    if (!conn) store_pool_put(s, db);
    return rc;
}

/* One series into out (appended), with the caller's scratch buffers
 * (emptied first: a reader of many series reuses them; with reuse, out is
 * one of them too, empty, and may trade its arrays with them). */
static int read_one(store *s, uint64_t series_id, int64_t from_ms, int64_t to_ms,
                    store_pointbuf *mem_, store_pointbuf *all_, store_points *out, int reuse)
{
    store_pointbuf mem = *mem_, all = *all_;
    mem.n = all.n = 0;
    pthread_mutex_lock(&s->mu);
    series *se = store_series_by_id(s, series_id);
    int rc = se ? snapshot_memory(s, se, from_ms, to_ms, &mem) : -1;
    pthread_mutex_unlock(&s->mu);
    /* SQLite after memory: a chunk committed in between is read twice (same
     * points), never missed */
    if (rc == 0) rc = read_db(s, NULL, series_id, from_ms, to_ms, &all, NULL);
    if (rc == 0 && reserve2(&all.ts, &all.val, all.n, &all.cap, mem.n) < 0) rc = -1;
    if (rc == 0 && mem.n) {
        memcpy(all.ts + all.n, mem.ts, mem.n * sizeof *all.ts);
        memcpy(all.val + all.n, mem.val, mem.n * sizeof *all.val);
        all.n += mem.n;
    }
    if (rc == 0 && reuse) {
        rc = merge_swap(&all, from_ms, to_ms, out);
    } else if (rc == 0) {
        rc = exact(out, all.n);
        if (rc == 0) rc = store_merge_out(&all, from_ms, to_ms, out);
    }
    *mem_ = mem;
    *all_ = all;
    return rc;
}

int store_read(store *s, uint64_t series_id, int64_t from_ms, int64_t to_ms, store_points *out)
{
    if (!s || !out) return -1;
    if (from_ms > to_ms) return 0;
    store_pointbuf mem = {0}, all = {0};
    int rc = read_one(s, series_id, from_ms, to_ms, &mem, &all, out, 0);
    free(mem.ts);
    free(mem.val);
    free(all.ts);
    free(all.val);
    return rc;
}

/* --- many series at once --------------------------------------------------- */

typedef struct many {
    store *s;
    const uint64_t *ids; /* as given */
    size_t *ord;         /* indexes into ids, by id */
    size_t n;
    int64_t from, to;
    store_points_cb cb;
    void *arg;
    store_buckets_cb bcb; /* downsampling while decoding (iv, kind): else NULL */
    int64_t iv;
    store_ds_kind kind;
    size_t next; /* the next unit (atomic) */
    size_t unit; /* ids a unit */
    int failed;
    /* [from, to] spans every partition SQLite holds: a dense unit is read by
     * one scan of its series' chunks (the key seeks by series only there, so
     * otherwise a series at a time: a scan would read every partition) */
    int whole;
} many;

enum { UNIT = 1024 }; /* ids a worker takes at a time, at most */

static int cmp_by_id(const void *a, const void *b, void *arg)
{
    const uint64_t *ids = arg;
    uint64_t x = ids[*(const size_t *)a], y = ids[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

/* Hands series k (ord index) its points: SQLite's (db, in chunk order) then
 * memory's, merged into out (a worker's, reused: cb copies what it keeps,
 * and no series' points ever land in fresh memory). */
static int merged(many *m, store_pointbuf *db, store_pointbuf *mem, store_points *out)
{
    int rc = reserve2(&db->ts, &db->val, db->n, &db->cap, mem->n);
    out->n = 0;
    if (rc == 0 && mem->n) {
        memcpy(db->ts + db->n, mem->ts, mem->n * sizeof *db->ts);
        memcpy(db->val + db->n, mem->val, mem->n * sizeof *db->val);
        db->n += mem->n;
    }
    if (rc == 0) rc = merge_swap(db, m->from, m->to, out);
    db->n = 0;
    return rc;
}

static int hand_over(many *m, size_t k, store_pointbuf *db, store_pointbuf *mem, store_points *out)
{
    int rc = merged(m, db, mem, out);
    if (rc == 0) m->cb(m->arg, m->ord[k], out);
    return rc;
}

/* The same with the series' SQLite chunks already folded into bk: memory's
 * points folded after them, the buckets handed over; a series whose points
 * came out of order is read again (on db) the usual way and folded. */
static int hand_over_ds(many *m, size_t k, sqlite3 *db, store_pointbuf *pb, store_pointbuf *mem,
                        store_points *out, bucketer *bk)
{
    int rc = bk_fold(bk, mem->ts, mem->val, mem->n);
    if (rc == 0 && !bk->ordered) {
        pb->n = 0;
        rc = read_db(m->s, db, m->ids[m->ord[k]], m->from, m->to, pb, NULL);
        if (rc == 0) rc = merged(m, pb, mem, out);
        bk_reset(bk);
        if (rc == 0) rc = bk_fold(bk, out->ts, out->val, out->n);
    }
    if (rc == 0) rc = bk_close(bk);
    if (rc == 0) {
        store_points b = {bk->out.ts, bk->out.val, bk->out.n, bk->out.cap};
        m->bcb(m->arg, m->ord[k], &b, bk->raw);
    }
    bk_reset(bk);
    return rc;
}

static int hand_over_any(many *m, size_t k, sqlite3 *db, store_pointbuf *pb, store_pointbuf *mem,
                         store_points *out, bucketer *bk)
{
    return bk ? hand_over_ds(m, k, db, pb, mem, out, bk) : hand_over(m, k, pb, mem, out);
}

/* Series ord[a..b) (sorted ids): memory first (under the lock, for all of
 * them), then SQLite on one connection: dense in their id range, one scan
 * of their chunks; else one read transaction with a query a series (the
 * std query's series are every 30th id: a transaction, a pool get and a
 * lock of the store a series were a tenth of its read). */
static int scan_unit(many *m, size_t a, size_t b, int dense, store_points *out, bucketer *bk)
{
    store *s = m->s;
    size_t cnt = b - a;
    if (bk) bk_reset(bk); /* (after a unit that failed) */
    store_pointbuf *mem = calloc(cnt, sizeof *mem);
    if (!mem) return -1;
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t k = 0; k < cnt && rc == 0; k++) {
        series *se = store_series_by_id(s, m->ids[m->ord[a + k]]);
        if (se) rc = snapshot_memory(s, se, m->from, m->to, &mem[k]);
    }
    pthread_mutex_unlock(&s->mu);
    sqlite3 *db = rc == 0 ? store_pool_get(s) : NULL;
    sqlite3_stmt *st = db ? store_stmt_cached(db, READ_SCAN) : NULL;
    store_pointbuf pb = {0};
    if (!st) rc = -1;
    size_t k = 0; /* the series the rows are of */
    if (rc == 0 && !dense) {
        if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) rc = -1;
        for (; rc == 0 && k < cnt; k++)
            if (read_db(s, db, m->ids[m->ord[a + k]], m->from, m->to, &pb, bk) < 0 ||
                hand_over_any(m, a + k, db, &pb, &mem[k], out, bk) < 0)
                rc = -1;
        if (db && !sqlite3_get_autocommit(db)) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    } else if (rc == 0) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)m->ids[m->ord[a]]);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)m->ids[m->ord[b - 1]]);
        sqlite3_bind_int64(st, 3, m->from);
        sqlite3_bind_int64(st, 4, m->to);
        int r;
        sqlite3_int64 last_row = 0;
        int unordered = 0;
        while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
            uint64_t sid = (uint64_t)sqlite3_column_int64(st, 0);
            while (k < cnt && m->ids[m->ord[a + k]] < sid) { /* the series before: done */
                if (unordered && !bk) {
                    pb.n = 0; /* its chunks came out of id order: read it the usual way */
                    if (read_db(s, db, m->ids[m->ord[a + k]], m->from, m->to, &pb, NULL) < 0)
                        rc = -1;
                } /* (folded, they are checked in time order: out of it, read again) */
                if (rc == 0 && hand_over_any(m, a + k, db, &pb, &mem[k], out, bk) < 0) rc = -1;
                k++;
                unordered = 0;
                last_row = 0;
            }
            if (k == cnt || m->ids[m->ord[a + k]] != sid) continue; /* not asked for */
            sqlite3_int64 row = sqlite3_column_int64(st, 1);
            if (row < last_row) unordered = 1;
            last_row = row;
            if (bk) {
                if (bk_chunk(bk, sqlite3_column_blob(st, 2), sqlite3_column_bytes(st, 2),
                             sqlite3_column_blob(st, 3), sqlite3_column_bytes(st, 3)) < 0)
                    rc = -1;
            } else if (store_parts_decode(
                           sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
                           sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3), &pb.ts,
                           &pb.val, &pb.n, &pb.cap) < 0)
                rc = -1;
        }
        if (rc == 0 && r != SQLITE_DONE) rc = -1;
        sqlite3_reset(st);
        if (rc == 0 && k < cnt && unordered && !bk) {
            pb.n = 0;
            if (read_db(s, db, m->ids[m->ord[a + k]], m->from, m->to, &pb, NULL) < 0) rc = -1;
        }
    }
    for (; rc == 0 && k < cnt; k++) /* the last one read, and those with no chunks */
        if (hand_over_any(m, a + k, db, &pb, &mem[k], out, bk) < 0) rc = -1;
    store_pool_put(s, db);
    for (size_t i = 0; i < cnt; i++) {
        free(mem[i].ts);
        free(mem[i].val);
    }
    free(mem);
    free(pb.ts);
    free(pb.val);
    return rc;
}

static void *many_worker(void *arg)
{
    many *m = arg;
    store_points out = {0}; /* this worker's buffers, reused for every series */
    store_pointbuf mem = {0}, all = {0};
    bucketer bk = {.iv = m->iv, .from = m->from, .to = m->to, .kind = m->kind};
    bucketer *k_ = m->bcb ? &bk : NULL;
    bk_reset(&bk);
    for (;;) {
        size_t a = __atomic_fetch_add(&m->next, m->unit, __ATOMIC_RELAXED);
        if (a >= m->n) break;
        size_t b = a + m->unit < m->n ? a + m->unit : m->n;
        uint64_t span = m->ids[m->ord[b - 1]] - m->ids[m->ord[a]] + 1;
        int rc = 0;
        if (b - a >= 16) {
            /* most of the range, over every partition in SQLite: one scan */
            rc = scan_unit(m, a, b, m->whole && (b - a) * 4 >= span, &out, k_);
        } else {
            for (size_t k = a; k < b && rc == 0; k++) {
                out.n = 0;
                if (read_one(m->s, m->ids[m->ord[k]], m->from, m->to, &mem, &all, &out, 1) < 0)
                    rc = -1;
                if (rc == 0 && k_) { /* a few series: read whole, then folded */
                    bk_reset(k_);
                    if (bk_fold(k_, out.ts, out.val, out.n) < 0 || bk_close(k_) < 0) rc = -1;
                    store_points bs = {bk.out.ts, bk.out.val, bk.out.n, bk.out.cap};
                    if (rc == 0) m->bcb(m->arg, m->ord[k], &bs, bk.raw);
                } else if (rc == 0) {
                    m->cb(m->arg, m->ord[k], &out);
                }
            }
        }
        if (rc < 0) __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
    }
    store_points_free(&out);
    free(mem.ts);
    free(mem.val);
    free(all.ts);
    free(all.val);
    bk_free(&bk);
    return NULL;
}

static int read_many(many *m)
{
    if (!m->s || (m->n && !m->ids)) return -1;
    if (m->n == 0 || m->from > m->to) return 0;
    size_t n = m->n;
    if (!(m->ord = malloc(n * sizeof *m->ord))) return -1;
    pthread_mutex_lock(&m->s->mu);
    m->whole =
        m->s->db_oldest == INT64_MAX || (store_part_of(m->from) <= store_part_of(m->s->db_oldest) &&
                                         store_part_of(m->to) >= store_part_of(m->s->max_ts));
    pthread_mutex_unlock(&m->s->mu);
    for (size_t i = 0; i < n; i++) m->ord[i] = i;
    qsort_r(m->ord, n, sizeof *m->ord, cmp_by_id, (void *)m->ids);
    size_t nt = n < 32 ? 1 : readers();
    /* units small enough that every reader gets some (four each at least) */
    m->unit = n / (nt * 4);
    if (m->unit < 16) m->unit = 16;
    if (m->unit > UNIT) m->unit = UNIT;
    pthread_t th[8];
    size_t started = 0;
    for (size_t i = 1; i < nt; i++) /* this thread is one of them */
        if (pthread_create(&th[started], NULL, many_worker, m) == 0) started++;
    many_worker(m);
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(m->ord);
    return m->failed ? -1 : 0;
}

int store_read_many(store *s, const uint64_t *ids, size_t n, int64_t from_ms, int64_t to_ms,
                    store_points_cb cb, void *arg)
{
    many m = {.s = s, .ids = ids, .n = n, .from = from_ms, .to = to_ms, .cb = cb, .arg = arg};
    return cb ? read_many(&m) : -1;
}

int store_read_many_ds(store *s, const uint64_t *ids, size_t n, int64_t from_ms, int64_t to_ms,
                       int64_t iv_ms, store_ds_kind kind, store_buckets_cb cb, void *arg)
{
    if (!cb || iv_ms <= 0 || kind < STORE_DS_SUM || kind > STORE_DS_MAX) return -1;
    many m = {.s = s, .ids = ids, .n = n, .from = from_ms, .to = to_ms, .arg = arg};
    m.bcb = cb;
    m.iv = iv_ms;
    m.kind = kind;
    return read_many(&m);
}

int store_last(store *s, uint64_t series_id, int64_t *ts_ms, double *value)
{
    if (!s) return -1;
    pthread_mutex_lock(&s->mu);
    series *se = store_series_by_id(s, series_id);
    if (!se) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    store_pointbuf mem = {0}, all = {0};
    int rc = snapshot_memory(s, se, INT64_MIN, INT64_MAX, &mem);
    pthread_mutex_unlock(&s->mu);
    /* the newest chunk in SQLite by end time (and every chunk ending then) */
    sqlite3 *db = rc == 0 ? store_pool_get(s) : NULL;
    sqlite3_stmt *st =
        db ? store_stmt_cached(db, "SELECT t.data, " CHUNK_DATA " FROM chunks c JOIN times t ON "
                                   "t.id = c.ts_ref" CHUNK_VALS
                                   "WHERE c.series=?1 AND c.part=(SELECT max(part) FROM "
                                   "chunks WHERE series=?1) AND c.t_end=(SELECT max(t_end) FROM "
                                   "chunks WHERE series=?1 AND part=(SELECT max(part) FROM chunks "
                                   "WHERE series=?1)) ORDER BY c.seq")
           : NULL;
    if (!st) {
        rc = -1;
    } else {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)series_id);
        while (sqlite3_step(st) == SQLITE_ROW)
            if (store_parts_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                                   sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
                                   &all.ts, &all.val, &all.n, &all.cap) < 0)
                rc = -1;
        sqlite3_reset(st);
    }
    store_pool_put(s, db);
    for (size_t i = 0; rc == 0 && i < mem.n; i++)
        if (store_pb_push(&all, mem.ts[i], mem.val[i]) < 0) rc = -1;
    int found = 0;
    if (rc == 0 && all.n) {
        size_t best = 0; /* the newest; of equal ones the last read (memory after SQLite) */
        for (size_t i = 1; i < all.n; i++)
            if (all.ts[i] >= all.ts[best]) best = i;
        *ts_ms = all.ts[best];
        *value = all.val[best];
        found = 1;
    }
    free(mem.ts);
    free(mem.val);
    free(all.ts);
    free(all.val);
    return rc < 0 ? -1 : found;
}

void store_points_free(store_points *p)
{
    if (!p) return;
    free(p->ts);
    free(p->val);
    memset(p, 0, sizeof *p);
}
