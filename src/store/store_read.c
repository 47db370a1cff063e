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
                   store_pointbuf *b)
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
        if (store_parts_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                               sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
                               &b->ts, &b->val, &b->n, &b->cap) < 0)
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
    if (rc == 0) rc = read_db(s, NULL, series_id, from_ms, to_ms, &all);
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
static int hand_over(many *m, size_t k, store_pointbuf *db, store_pointbuf *mem, store_points *out)
{
    int rc = reserve2(&db->ts, &db->val, db->n, &db->cap, mem->n);
    out->n = 0;
    if (rc == 0 && mem->n) {
        memcpy(db->ts + db->n, mem->ts, mem->n * sizeof *db->ts);
        memcpy(db->val + db->n, mem->val, mem->n * sizeof *db->val);
        db->n += mem->n;
    }
    if (rc == 0) rc = merge_swap(db, m->from, m->to, out);
    if (rc == 0) m->cb(m->arg, m->ord[k], out);
    db->n = 0;
    return rc;
}

/* Series ord[a..b) (sorted ids): memory first (under the lock, for all of
 * them), then SQLite on one connection: dense in their id range, one scan
 * of their chunks; else one read transaction with a query a series (the
 * std query's series are every 30th id: a transaction, a pool get and a
 * lock of the store a series were a tenth of its read). */
static int scan_unit(many *m, size_t a, size_t b, int dense, store_points *out)
{
    store *s = m->s;
    size_t cnt = b - a;
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
            if (read_db(s, db, m->ids[m->ord[a + k]], m->from, m->to, &pb) < 0 ||
                hand_over(m, a + k, &pb, &mem[k], out) < 0)
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
                if (unordered) {
                    pb.n = 0; /* its chunks came out of id order: read it the usual way */
                    if (read_db(s, db, m->ids[m->ord[a + k]], m->from, m->to, &pb) < 0) rc = -1;
                }
                if (rc == 0 && hand_over(m, a + k, &pb, &mem[k], out) < 0) rc = -1;
                k++;
                unordered = 0;
                last_row = 0;
            }
            if (k == cnt || m->ids[m->ord[a + k]] != sid) continue; /* not asked for */
            sqlite3_int64 row = sqlite3_column_int64(st, 1);
            if (row < last_row) unordered = 1;
            last_row = row;
            if (store_parts_decode(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
                                   sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3),
                                   &pb.ts, &pb.val, &pb.n, &pb.cap) < 0)
                rc = -1;
        }
        if (rc == 0 && r != SQLITE_DONE) rc = -1;
        sqlite3_reset(st);
        if (rc == 0 && k < cnt && unordered) {
            pb.n = 0;
            if (read_db(s, db, m->ids[m->ord[a + k]], m->from, m->to, &pb) < 0) rc = -1;
        }
    }
    store_pool_put(s, db);
    for (; rc == 0 && k < cnt; k++) /* the last one read, and those with no chunks */
        if (hand_over(m, a + k, &pb, &mem[k], out) < 0) rc = -1;
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
    for (;;) {
        size_t a = __atomic_fetch_add(&m->next, m->unit, __ATOMIC_RELAXED);
        if (a >= m->n) break;
        size_t b = a + m->unit < m->n ? a + m->unit : m->n;
        uint64_t span = m->ids[m->ord[b - 1]] - m->ids[m->ord[a]] + 1;
        int rc = 0;
        if (b - a >= 16) {
            rc = scan_unit(m, a, b, m->whole && (b - a) * 4 >= span, &out); /* one scan */
        } else {
            for (size_t k = a; k < b && rc == 0; k++) {
                out.n = 0;
                if (read_one(m->s, m->ids[m->ord[k]], m->from, m->to, &mem, &all, &out, 1) < 0)
                    rc = -1;
                if (rc == 0) m->cb(m->arg, m->ord[k], &out);
            }
        }
        if (rc < 0) __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
    }
    store_points_free(&out);
    free(mem.ts);
    free(mem.val);
    free(all.ts);
    free(all.val);
    return NULL;
}

int store_read_many(store *s, const uint64_t *ids, size_t n, int64_t from_ms, int64_t to_ms,
                    store_points_cb cb, void *arg)
{
    if (!s || (n && !ids) || !cb) return -1;
    if (n == 0 || from_ms > to_ms) return 0;
    many m = {s, ids, malloc(n * sizeof(size_t)), n, from_ms, to_ms, cb, arg, 0, UNIT, 0, 0};
    if (!m.ord) return -1;
    pthread_mutex_lock(&s->mu);
    m.whole = s->db_oldest == INT64_MAX || (store_part_of(from_ms) <= store_part_of(s->db_oldest) &&
                                            store_part_of(to_ms) >= store_part_of(s->max_ts));
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++) m.ord[i] = i;
    qsort_r(m.ord, n, sizeof *m.ord, cmp_by_id, (void *)ids);
    size_t nt = n < 32 ? 1 : readers();
    /* units small enough that every reader gets some (four each at least) */
    m.unit = n / (nt * 4);
    if (m.unit < 16) m.unit = 16;
    if (m.unit > UNIT) m.unit = UNIT;
    pthread_t th[8];
    size_t started = 0;
    for (size_t i = 1; i < nt; i++) /* this thread is one of them */
        if (pthread_create(&th[started], NULL, many_worker, &m) == 0) started++;
    many_worker(&m);
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(m.ord);
    return m.failed ? -1 : 0;
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
