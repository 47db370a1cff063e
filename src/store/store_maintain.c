/* store_maintain.c — the store's maintenance (store_priv.h, docs/store.md
 * "Maintenance"): retention by age, settling (the chunks of a series in one
 * partition merged into one, recoded at a higher zstd level), garbage
 * collection of timestamp parts, giving freed pages back, and retention by
 * size.  The server calls store_maintain every 10 s. */
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
#include <time.h>
#include <unistd.h>

void store_dirty_add(store *s, uint64_t sid, int64_t part)
{
    store_dirty_add_at(s, sid, part, store_now_ms());
}

void store_dirty_add_at(store *s, uint64_t sid, int64_t part, int64_t at)
{
    if (s->ndirty >= (1u << 20)) { /* nobody settles: look at everything next time */
        s->scanned = 0;
        s->ndirty = 0;
    }
    if (!s->scanned) return;
    if (s->ndirty == s->capdirty) {
        size_t nc = s->capdirty ? s->capdirty * 2 : 1024;
        group *nd = realloc(s->dirty, nc * sizeof *nd);
        if (!nd) { /* out of memory: settling looks at everything next time */
            s->scanned = 0;
            s->ndirty = 0;
            return;
        }
        s->dirty = nd;
        s->capdirty = nc;
    }
    s->dirty[s->ndirty].series = sid;
    s->dirty[s->ndirty].at = at;
    s->dirty[s->ndirty++].part = part;
}
/* --- maintenance --------------------------------------------------------- */

long long store_dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) < 0) continue;
        if (S_ISDIR(st.st_mode))
            total += store_dir_bytes(p);
        else if (S_ISREG(st.st_mode))
            total += st.st_size;
    }
    closedir(d);
    return total;
}

/* Deletes the rows of `times` no chunk refers to any more: one scan of the
 * chunks (they have no index by ts_ref: 10 bytes a chunk), after chunks
 * were deleted or merged, at most every GC_EVERY_MS (garbage in between is
 * a few rows) or when forced (idle, close).  Under wmu, its own transaction. */
#define GC_EVERY_MS (5 * 60 * 1000)
static int gc_times(store *s, int force)
{
    int64_t now = store_now_ms();
    if (!s->times_gc_due || (!force && now - s->times_gc_ms < GC_EVERY_MS)) return 0;
    s->times_gc_ms = now;
    int rc = store_db_exec(s->db,
                           "BEGIN IMMEDIATE;"
                           "DELETE FROM times WHERE id NOT IN (SELECT ts_ref FROM chunks);"
                           "DELETE FROM vals WHERE id NOT IN (SELECT data FROM chunks WHERE "
                           "typeof(data) = 'integer');"
                           "COMMIT;",
                           NULL, 0);
    if (rc == 0)
        s->times_gc_due = 0;
    else
        store_db_exec(s->db, "ROLLBACK", NULL, 0);
    return rc;
}

/* Deletes chunks matching `where` (with ?1 bound to arg); count of points. */
static int delete_chunks(store *s, const char *where, sqlite3_int64 arg, long long *npts,
                         long long *nch)
{
    char sql[512];
    sqlite3_stmt *st;
    *npts = *nch = 0;
    snprintf(sql, sizeof sql, "SELECT count(*), coalesce(sum(n),0) FROM chunks WHERE %s", where);
    pthread_mutex_lock(&s->wmu);
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, arg);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *nch = sqlite3_column_int64(st, 0);
            *npts = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        rc = 0;
        snprintf(sql, sizeof sql, "DELETE FROM chunks WHERE %s", where);
        if (rc == 0 && *nch && store_db_exec(s->db, "BEGIN IMMEDIATE", NULL, 0) == 0) {
            if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
                sqlite3_bind_int64(st, 1, arg);
                rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
                sqlite3_finalize(st);
            } else {
                rc = -1;
            }
            if (rc == 0)
                rc = store_db_exec(s->db, "COMMIT", NULL, 0);
            else
                store_db_exec(s->db, "ROLLBACK", NULL, 0);
            if (rc == 0) s->times_gc_due = 1;
            if (rc == 0) gc_times(s, 1); /* retention and the size limit free it now */
        }
    }
    pthread_mutex_unlock(&s->wmu);
    if (rc == 0 && *nch) {
        /* the earliest end left (a scan: chunks have no index by end time) */
        pthread_mutex_lock(&s->wmu);
        if (sqlite3_prepare_v2(s->db, "SELECT min(t_end) FROM chunks", -1, &st, NULL) ==
            SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                s->db_oldest = sqlite3_column_type(st, 0) == SQLITE_NULL
                                   ? INT64_MAX
                                   : sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        pthread_mutex_unlock(&s->wmu);
        pthread_mutex_lock(&s->mu);
        s->db_points -= (uint64_t)*npts < s->db_points ? (uint64_t)*npts : s->db_points;
        s->db_chunks -= (uint64_t)*nch < s->db_chunks ? (uint64_t)*nch : s->db_chunks;
        s->drop_gen++;
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

static void reclaim(store *s)
{
    pthread_mutex_lock(&s->wmu);
    /* the journal back to zero bytes, but waiting for readers at most 100 ms
     * (wmu is held: ingest's flushes wait meanwhile) */
    sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    sqlite3_busy_timeout(s->db, 100);
    sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_busy_timeout(s->db, 30000);
    pthread_mutex_unlock(&s->wmu);
}

/* Merges the chunks of one series in one partition that `sel` lists. */
static int merge_group(store *s, sqlite3_stmt *sel, sqlite3_stmt *del, const group *g,
                       store_buf *enc, store_buf *enc2, uint64_t *saved_chunks)
{
    store_pointbuf b = {0};
    sqlite3_int64 ids[4096];
    int nids = 0, rc = 0;
    sqlite3_bind_int64(sel, 1, (sqlite3_int64)g->series);
    sqlite3_bind_int64(sel, 2, g->part);
    while (sqlite3_step(sel) == SQLITE_ROW && nids < 4096) {
        ids[nids++] = sqlite3_column_int64(sel, 0);
        if (store_parts_decode(sqlite3_column_blob(sel, 2), (size_t)sqlite3_column_bytes(sel, 2),
                               sqlite3_column_blob(sel, 1), (size_t)sqlite3_column_bytes(sel, 1),
                               &b.ts, &b.val, &b.n, &b.cap) < 0)
            rc = -1;
    }
    sqlite3_reset(sel);
    if (rc == 0 && nids > 1 && b.n) {
        store_points m = {0};
        if (store_merge_out(&b, INT64_MIN, INT64_MAX, &m) < 0 || m.n == 0 ||
            store_ts_encode(m.ts, m.n, ZLEVEL_SETTLE, enc) < 0 ||
            store_val_encode(m.val, m.n, ZLEVEL_SETTLE, enc2) < 0)
            rc = -1;
        for (int i = 0; i < nids && rc == 0; i++) {
            sqlite3_bind_int64(del, 1, (sqlite3_int64)g->series);
            sqlite3_bind_int64(del, 2, g->part);
            sqlite3_bind_int64(del, 3, ids[i]);
            if (sqlite3_step(del) != SQLITE_DONE) rc = -1;
            sqlite3_reset(del);
        }
        if (rc == 0)
            rc = store_chunk_insert(s, g->series, m.ts[0], m.ts[m.n - 1], m.n, enc->p, enc->n,
                                    enc2->p, enc2->n);
        if (rc == 0) *saved_chunks += (uint64_t)nids - 1;
        store_points_free(&m);
    }
    free(b.ts);
    free(b.val);
    return rc;
}

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->series != y->series) return x->series < y->series ? -1 : 1;
    return x->part < y->part ? -1 : x->part > y->part;
}

/* Settling: the chunks of a series in one partition become one, once the
 * partition is over or when it has 4 or more (final: now, every group of
 * more than one). */
static int compact(store *s, int final)
{
    int64_t now = store_now_ms();
    int64_t delay_ms = (int64_t)(s->cfg.settle_delay_s * 1000.0);
    pthread_mutex_lock(&s->mu);
    int64_t horizon = s->max_ts > now ? s->max_ts : now;
    pthread_mutex_unlock(&s->mu);
    sqlite3 *db = store_pool_get(s);
    if (!db) return -1;
    sqlite3_stmt *st;
    group *gs = NULL;
    size_t ng = 0, cap = 0;
    /* candidates: every group once (the first time), then only those that got chunks */
    pthread_mutex_lock(&s->mu);
    int full = !s->scanned;
    s->scanned = 1;
    group *cand = s->dirty;
    size_t ncand = s->ndirty;
    s->dirty = NULL;
    s->ndirty = s->capdirty = 0;
    pthread_mutex_unlock(&s->mu);
    char sql[400];
    if (full)
        snprintf(
            sql, sizeof sql,
            "SELECT series, part, count(*) FROM chunks GROUP BY series, part HAVING count(*) > 1");
    else
        snprintf(sql, sizeof sql,
                 "SELECT ?1, ?2, count(*) FROM chunks WHERE series=?1 AND part=?2");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        store_pool_put(s, db);
        free(cand);
        return -1;
    }
    group *keep = NULL;
    size_t nkeep = 0;
    if (!full && ncand) {
        /* unique candidates */
        qsort(cand, ncand, sizeof *cand, cmp_group);
        size_t u = 0;
        for (size_t i = 0; i < ncand; i++) {
            if (!u || cand[u - 1].series != cand[i].series || cand[u - 1].part != cand[i].part)
                cand[u++] = cand[i];
            else if (cand[i].at > cand[u - 1].at)
                cand[u - 1].at = cand[i].at;
        }
        ncand = u;
        keep = malloc(ncand * sizeof *keep);
        if (!keep) {
            sqlite3_finalize(st);
            store_pool_put(s, db);
            free(cand);
            return -1;
        }
    }
    for (size_t ci = 0; full || ci < ncand; ci++) {
        if (!full) {
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)cand[ci].series);
            sqlite3_bind_int64(st, 2, cand[ci].part);
        }
        if (sqlite3_step(st) != SQLITE_ROW) break;
        group g = {(uint64_t)sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                   full ? s->opened_ms : cand[ci].at};
        int cnt = sqlite3_column_int(st, 2);
        if (cnt < 2) continue;
        int closed = (g.part + 1) * PART_MS + 5 * 60 * 1000 <= horizon;
        /* still being written (a bulk load, a backfill): merging now would
         * decode and encode its points again at every round */
        int busy = delay_ms > 0 && now - g.at < delay_ms && cnt < SETTLE_MAX_WAIT;
        if (!final && ((!closed && cnt < 4) || busy)) {
            if (keep)
                keep[nkeep++] = g; /* look again when it closes or is quiet */
            else {
                pthread_mutex_lock(&s->mu);
                store_dirty_add_at(s, g.series, g.part, g.at);
                pthread_mutex_unlock(&s->mu);
            }
            continue;
        }
        if (ng == cap) {
            size_t nc = cap ? cap * 2 : 256;
            group *ngs = realloc(gs, nc * sizeof *ngs);
            if (!ngs) { /* out of memory: the next round looks at everything */
                pthread_mutex_lock(&s->mu);
                s->scanned = 0;
                pthread_mutex_unlock(&s->mu);
                break;
            }
            gs = ngs;
            cap = nc;
        }
        gs[ng++] = g;
    }
    sqlite3_finalize(st);
    store_pool_put(s, db);
    free(cand);
    if (nkeep) {
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < nkeep; i++)
            store_dirty_add_at(s, keep[i].series, keep[i].part, keep[i].at);
        pthread_mutex_unlock(&s->mu);
    }
    free(keep);
    if (!ng) {
        free(gs);
        return 0;
    }

    int rc = 0;
    store_buf enc = {0}, enc2 = {0};
    sqlite3_stmt *sel = NULL, *del = NULL;
    pthread_mutex_lock(&s->wmu);
    if (sqlite3_prepare_v2(s->db,
                           "SELECT c.seq, " CHUNK_DATA
                           ", t.data FROM chunks c JOIN times t ON t.id = c.ts_ref" CHUNK_VALS
                           "WHERE c.series=? AND c.part=? ORDER BY c.seq",
                           -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "DELETE FROM chunks WHERE series=? AND part=? AND seq=?", -1,
                           &del, NULL) != SQLITE_OK)
        rc = -1;
    pthread_mutex_unlock(&s->wmu);
    for (size_t i = 0; i < ng && rc == 0;) {
        /* small transactions: the ingest path's flushes wait for wmu */
        uint64_t saved = 0;
        pthread_mutex_lock(&s->wmu);
        rc = store_db_exec(s->db, "BEGIN IMMEDIATE", NULL, 0);
        size_t end = i + 256 < ng ? i + 256 : ng;
        for (; i < end && rc == 0; i++) rc = merge_group(s, sel, del, &gs[i], &enc, &enc2, &saved);
        if (rc == 0)
            rc = store_db_exec(s->db, "COMMIT", NULL, 0);
        else
            store_db_exec(s->db, "ROLLBACK", NULL, 0);
        if (rc == 0 && saved) s->times_gc_due = 1;
        pthread_mutex_unlock(&s->wmu);
        if (rc == 0) {
            pthread_mutex_lock(&s->mu);
            s->db_chunks -= saved < s->db_chunks ? saved : s->db_chunks;
            pthread_mutex_unlock(&s->mu);
        }
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(del);
    store_buf_free(&enc);
    store_buf_free(&enc2);
    free(gs);
    pthread_mutex_lock(&s->wmu);
    if (gc_times(s, final) < 0) rc = -1;
    pthread_mutex_unlock(&s->wmu);
    return rc;
}

/* Drops the points still in memory (heads) at or before `cutoff`; their
 * count.  Under mu. */
static uint64_t drop_memory_before(store *s, int64_t cutoff)
{
    uint64_t dropped = 0;
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = store_series_by_id(s, id);
        if (!se || !se->hn) continue;
        int64_t t0;
        double v0;
        /* the first point tells whether there is anything to drop */
        series one = *se;
        one.hn = 1;
        store_head_decode(&one, &t0, &v0);
        if (t0 > cutoff) continue;
        long k = store_head_drop_before(s, se, cutoff);
        if (k > 0) dropped += (uint64_t)k;
    }
    if (dropped) s->drop_gen++;
    return dropped;
}

static long long file_bytes(const char *dir, const char *name)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

static void fmt_mib(char *out, size_t n, long long b)
{
    snprintf(out, n, "%.1f MiB", (double)b / 1048576.0);
}

static void fmt_time(char *out, size_t n, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, n, "%" PRId64 " ms", ms);
}

/* Retention by size: while everything under DIR is over max_bytes, the
 * chunks that end first are dropped, about as many bytes of them as the
 * excess (their share of chunks.db, overhead included), never a chunk of
 * the newest partition.  What dropping chunks cannot free (the log, SQLite's
 * journal, other modules' files) is not trimmed for: the log is made short
 * first (heads committed, old segments retired) when it is a large part of
 * the limit.  Says what it dropped, and once when the limit cannot be met. */
static int trim_to_size(store *s)
{
    long long limit = s->cfg.max_bytes, total = store_dir_bytes(s->dir);
    if (total <= limit) {
        pthread_mutex_lock(&s->mu);
        s->size_unmet = 0;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    long long logb = (long long)s->seg_bytes + (long long)s->wbuf.n;
    if (!s->broken && logb > limit / 8 && store_wal_retire(s) < 0) rc = -1;
    int64_t newest = s->max_ts;
    pthread_mutex_unlock(&s->mu);
    reclaim(s);
    total = store_dir_bytes(s->dir);
    sqlite3 *db = store_pool_get(s);
    sqlite3_stmt *st = NULL;
    if (db && sqlite3_prepare_v2(db, "SELECT max(t_end) FROM chunks", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
        sqlite3_column_int64(st, 0) > newest)
        newest = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    int64_t keep_from = newest == INT64_MIN ? INT64_MIN : store_part_of(newest) * PART_MS;
    long long dropped_pts = 0, dropped_ch = 0;
    int64_t last_cut = INT64_MIN;
    for (int round = 0; round < 8 && total > limit && db && rc == 0; round++) {
        long long excess = total - limit, data = 0;
        if (sqlite3_prepare_v2(
                db, "SELECT coalesce(sum(length(" CHUNK_DATA ")), 0) FROM chunks c" CHUNK_VALS, -1,
                &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            data = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (data <= 0) break;
        double ratio = (double)file_bytes(s->dir, "chunks.db") / (double)data;
        int64_t cut = INT64_MIN;
        double acc = 0;
        if (sqlite3_prepare_v2(db,
                               "SELECT c.t_end, length(" CHUNK_DATA ") FROM chunks c" CHUNK_VALS
                               "WHERE c.t_end < ?1 ORDER BY c.t_end",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, keep_from);
            while (acc < (double)excess && sqlite3_step(st) == SQLITE_ROW) {
                cut = sqlite3_column_int64(st, 0);
                acc += (double)sqlite3_column_int64(st, 1) * ratio;
            }
        }
        sqlite3_finalize(st);
        if (cut == INT64_MIN) break; /* nothing left that may go */
        long long np, nc;
        if (delete_chunks(s, "t_end <= ?1", cut, &np, &nc) < 0) {
            rc = -1;
            break;
        }
        pthread_mutex_lock(&s->mu);
        np += (long long)drop_memory_before(s, cut);
        s->dropped_size += (uint64_t)np;
        pthread_mutex_unlock(&s->mu);
        dropped_pts += np;
        dropped_ch += nc;
        last_cut = cut;
        reclaim(s);
        total = store_dir_bytes(s->dir);
    }
    store_pool_put(s, db);
    char lim[32], tot[32], when[40];
    fmt_mib(lim, sizeof lim, limit);
    fmt_mib(tot, sizeof tot, total);
    if (dropped_pts || dropped_ch) {
        fmt_time(when, sizeof when, last_cut);
        store_log(s,
                  "size limit %s: dropped %lld points (%lld chunks) ending at or before %s, "
                  "the oldest first; %s on disk now",
                  lim, dropped_pts, dropped_ch, when, tot);
    }
    pthread_mutex_lock(&s->mu);
    int was = s->size_unmet;
    s->size_unmet = total > limit;
    pthread_mutex_unlock(&s->mu);
    if (total > limit && !was) {
        fmt_time(when, sizeof when, keep_from);
        store_log(s,
                  "size limit %s cannot be met: %s on disk is the log, SQLite's journal, "
                  "other files and the newest partition (since %s), which is never dropped",
                  lim, tot, when);
    }
    return rc;
}

/* Settles everything now (store_close): every group with more than one
 * chunk is merged, however recent. */
int store_settle_all(store *s)
{
    int rc = compact(s, 1);
    reclaim(s);
    return rc;
}

int store_maintain(store *s)
{
    if (!s) return -1;
    int rc = 0;
    /* heads of partitions that are over are cut, and what is frozen goes to
     * SQLite, so that retention and settling see it */
    pthread_mutex_lock(&s->mu);
    if (s->broken) store_wal_recover(s);
    int64_t now = store_now_ms(), horizon = s->max_ts > now ? s->max_ts : now;
    /* a head whose partition is over, and that got no point since the last
     * round (a bulk load into past partitions keeps its heads until it ends) */
    uint8_t prev = s->round++;
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = store_series_by_id(s, id);
        if (se && se->hn && se->touched != prev &&
            (int64_t)se->hpart * PART_MS + PART_MS + 5 * 60 * 1000 <= horizon)
            store_head_cut(s, se, se->hn);
        if (s->pend_bytes >= FLUSH_BYTES || s->pend_n >= FLUSH_CHUNKS) store_flush_pending(s);
    }
    if (store_flush_pending(s) < 0) rc = -1;
    pthread_mutex_unlock(&s->mu);
    long long np, nc;
    if (s->cfg.retention_s > 0) {
        int64_t cutoff = store_now_ms() - (int64_t)(s->cfg.retention_s * 1000.0);
        pthread_mutex_lock(&s->wmu);
        int due = cutoff > s->db_oldest; /* else nothing in SQLite is that old */
        pthread_mutex_unlock(&s->wmu);
        np = nc = 0;
        if (due && delete_chunks(s, "t_end < ?1", cutoff, &np, &nc) < 0) rc = -1;
        /* points still in memory past the cutoff */
        pthread_mutex_lock(&s->mu);
        uint64_t mem = drop_memory_before(s, cutoff - 1);
        s->dropped_age += (uint64_t)np + mem;
        pthread_mutex_unlock(&s->mu);
    }
    /* idle (no put for settle_delay_s, at least 10 s) with something not
     * settled: the log is retired (heads committed) and every group with
     * more than one chunk is merged, so that an idle store is as small as it
     * gets; once, until the next put */
    pthread_mutex_lock(&s->mu);
    double idle_s = s->cfg.settle_delay_s > 10 ? s->cfg.settle_delay_s : 10;
    int idle = !s->idle_settled && s->last_put_ms &&
               store_now_ms() - s->last_put_ms >= (int64_t)(idle_s * 1000);
    if (idle) {
        s->idle_settled = 1;
        if (!s->broken && store_wal_retire(s) < 0) rc = -1;
    }
    pthread_mutex_unlock(&s->mu);
    if (compact(s, idle) < 0) rc = -1;
    reclaim(s);
    if (s->cfg.max_bytes > 0 && trim_to_size(s) < 0) rc = -1;
    return rc;
}
