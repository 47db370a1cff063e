/* store_put.c — the append path of the store (store_priv.h, docs/store.md
 * "Writing and durability"): store_put checks a batch, resolves its series
 * in the index (store_index.c), logs it (store_wal.c) and applies it to the
 * heads (store_head.c); frozen chunks and new series are committed to
 * SQLite in one transaction (store_flush_pending), as Prometheus' tsdb keeps
 * its append path in head_append.go. */
#include "store/store_priv.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- committing to SQLite ------------------------------------------------- */

/* The id of a row of `times` holding this timestamp part, inserted when
 * new: the fields of one event share their timestamps.  Under wmu. */
static sqlite3_int64 times_ref(store *s, const uint8_t *p, size_t len)
{
    sqlite3_int64 h = (sqlite3_int64)store_hash(p, len), id = 0;
    sqlite3_bind_int64(s->sel_time, 1, h);
    while (sqlite3_step(s->sel_time) == SQLITE_ROW) {
        if ((size_t)sqlite3_column_bytes(s->sel_time, 1) == len &&
            memcmp(sqlite3_column_blob(s->sel_time, 1), p, len) == 0) {
            id = sqlite3_column_int64(s->sel_time, 0);
            break;
        }
    }
    sqlite3_reset(s->sel_time);
    if (id) return id;
    sqlite3_bind_int64(s->ins_time, 1, h);
    sqlite3_bind_blob(s->ins_time, 2, p, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(s->ins_time);
    sqlite3_reset(s->ins_time);
    return rc == SQLITE_DONE ? sqlite3_last_insert_rowid(s->db) : 0;
}

int store_chunk_insert(store *s, uint64_t series_id, int64_t t0, int64_t t1, size_t n,
                       const uint8_t *tp, size_t tl, const uint8_t *vp, size_t vl)
{
    sqlite3_int64 tref = times_ref(s, tp, tl);
    if (!tref) return -1;
    sqlite3_bind_int64(s->ins_chunk, 1, (sqlite3_int64)series_id);
    int64_t part = store_part_of(t1); /* seq: the next in the partition */
    sqlite3_bind_int64(s->ins_chunk, 2, part);
    sqlite3_bind_int64(s->ins_chunk, 3, t0 - part * PART_MS);
    sqlite3_bind_int64(s->ins_chunk, 4, t1 - part * PART_MS);
    sqlite3_bind_int64(s->ins_chunk, 5, (sqlite3_int64)n);
    sqlite3_bind_int64(s->ins_chunk, 6, tref);
    if (vl > VAL_INLINE_MAX) { /* a row of vals, the chunk's data its id */
        sqlite3_bind_blob(s->ins_val, 1, vp, (int)vl, SQLITE_STATIC);
        int vr = sqlite3_step(s->ins_val);
        sqlite3_reset(s->ins_val);
        if (vr != SQLITE_DONE) return -1;
        sqlite3_bind_int64(s->ins_chunk, 7, sqlite3_last_insert_rowid(s->db));
    } else {
        sqlite3_bind_blob(s->ins_chunk, 7, vp, (int)vl, SQLITE_STATIC);
    }
    int rc = sqlite3_step(s->ins_chunk) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(s->ins_chunk);
    if (rc == 0 && t1 < s->db_oldest) s->db_oldest = t1;
    return rc;
}

/* The id of a metric name or tag set row (the fields of one event share
 * their tag set), inserted when new (INSERT OR IGNORE: one statement for a
 * new one).  Under wmu. */
static sqlite3_int64 name_ref(sqlite3_stmt *ins, sqlite3_stmt *sel, const void *p, size_t len,
                              int text)
{
    if (text)
        sqlite3_bind_text(ins, 1, p, (int)len, SQLITE_STATIC);
    else
        sqlite3_bind_blob(ins, 1, p, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(ins);
    sqlite3 *db = sqlite3_db_handle(ins);
    int added = rc == SQLITE_DONE && sqlite3_changes(db) == 1;
    sqlite3_reset(ins);
    if (rc != SQLITE_DONE) return 0;
    if (added) return sqlite3_last_insert_rowid(db);
    sqlite3_int64 id = 0;
    if (text)
        sqlite3_bind_text(sel, 1, p, (int)len, SQLITE_STATIC);
    else
        sqlite3_bind_blob(sel, 1, p, (int)len, SQLITE_STATIC);
    if (sqlite3_step(sel) == SQLITE_ROW) id = sqlite3_column_int64(sel, 0);
    sqlite3_reset(sel);
    return id;
}

/* The row of a tag key in `tagkeys`, kept in its entry of the index's tag
 * keys (strent.val) once known.  0 when it cannot be had.  Under mu, wmu. */
static sqlite3_int64 tagkey_ref(store *s, const char *key)
{
    size_t kl = strlen(key);
    strent *e = store_strmap_find(&s->tagks, key, store_hash(key, kl), 0);
    if (e && e->val) return (sqlite3_int64)(uintptr_t)e->val;
    sqlite3_int64 id = name_ref(s->ins_tagkey, s->sel_tagkey, key, kl, 1);
    if (e && id > 0) e->val = (void *)(uintptr_t)id;
    return id;
}

/* A series' tags as its row keeps them (format 8, store.c CONVERT_7): 0,
 * then (varint key id, value NUL)*; no tags, no bytes.  0, or -1.  Under
 * mu, wmu. */
static int tags_row(store *s, const series *se, store_buf *out)
{
    store_tag tags[MAX_TAGS];
    int nt;
    out->n = 0;
    if (store_key_tags(store_series_tags(s, se), se->keylen, tags, &nt) < 0) return -1;
    if (nt == 0) return 0;
    if (store_buf_reserve(out, 1) < 0) return -1;
    out->p[out->n++] = 0;
    for (int i = 0; i < nt; i++) {
        sqlite3_int64 id = tagkey_ref(s, tags[i].key);
        size_t vl = strlen(tags[i].value) + 1;
        if (id <= 0 || store_buf_reserve(out, 10 + vl) < 0) return -1;
        store_buf_varint(out, (uint64_t)id);
        memcpy(out->p + out->n, tags[i].value, vl);
        out->n += vl;
    }
    return 0;
}

/* Commits every new series and every frozen chunk to SQLite.  Under mu. */
int store_flush_pending(store *s)
{
    if (!s->pend_first && s->persisted_below >= s->next_id) return 0;
    pthread_mutex_lock(&s->wmu);
    int rc = store_db_exec(s->db, "BEGIN IMMEDIATE", NULL, 0);
    store_buf row = {0};
    for (uint64_t id = s->persisted_below; rc == 0 && id < s->next_id; id++) {
        series *se = store_series_by_id(s, id);
        if (!se) continue;
        mlist *l = s->mets[se->metric];
        if (!l->dbid) l->dbid = name_ref(s->ins_name, s->sel_name, l->name, strlen(l->name), 1);
        if (!l->dbid) {
            rc = -1;
            break;
        }
        if (tags_row(s, se, &row) < 0) {
            rc = -1;
            break;
        }
        sqlite3_bind_int64(s->ins_series, 1, (sqlite3_int64)se->id);
        sqlite3_bind_int64(s->ins_series, 2, l->dbid);
        sqlite3_bind_blob(s->ins_series, 3, row.n ? row.p : (const void *)"", (int)row.n,
                          SQLITE_STATIC);
        if (sqlite3_step(s->ins_series) != SQLITE_DONE) rc = -1;
        sqlite3_reset(s->ins_series);
    }
    store_buf_free(&row);
    uint64_t pts = 0, nch = 0;
    for (frozen *f = s->pend_first; rc == 0 && f; f = f->next_p) {
        rc = store_chunk_insert(s, f->se->id, f->t0, f->t1, f->n, f->tdata, f->tlen, f->vdata,
                                f->vlen);
        store_dirty_add(s, f->se->id, store_part_of(f->t0));
        pts += f->n;
        nch++;
    }
    if (rc == 0) rc = store_db_exec(s->db, "COMMIT", NULL, 0);
    if (rc != 0) {
        snprintf(s->broken_msg, sizeof s->broken_msg, "store: cannot write chunks: %s",
                 sqlite3_errmsg(s->db));
        store_db_exec(s->db, "ROLLBACK", NULL, 0);
        for (size_t i = 0; i < s->nmets; i++) s->mets[i]->dbid = 0; /* maybe rolled back */
        for (size_t i = 0; i < s->tagks.cap; i++) s->tagks.slots[i].val = NULL;
        pthread_mutex_unlock(&s->wmu);
        return -1;
    }
    pthread_mutex_unlock(&s->wmu);
    s->db_points += pts;
    s->db_chunks += nch;
    s->persisted_below = s->next_id;
    frozen *f = s->pend_first;
    if (s->fzn) memset(s->fz, 0, s->fzcap * sizeof *s->fz);
    s->fzn = 0;
    while (f) {
        frozen *nx = f->next_p;
        free(f->tdata);
        free(f->vdata);
        free(f);
        f = nx;
    }
    s->pend_first = s->pend_last = NULL;
    s->pend_bytes = s->pend_n = 0;
    return 0;
}

/* --- put ----------------------------------------------------------------- */

static int check_point(const store_point *p, char *err, size_t errlen)
{
    if (!p->metric || !*p->metric || strlen(p->metric) > MAX_NAME) {
        snprintf(err, errlen, "store: a point has no metric name (or one over %d bytes)", MAX_NAME);
        return -1;
    }
    if (!isfinite(p->value)) {
        snprintf(err, errlen, "store: %s: the value is not a finite number", p->metric);
        return -1;
    }
    if (p->ts_ms <= -STORE_TS_LIMIT || p->ts_ms >= STORE_TS_LIMIT) {
        snprintf(err, errlen, "store: %s: timestamp %" PRId64 " out of range", p->metric, p->ts_ms);
        return -1;
    }
    if (p->ntags < 0 || p->ntags > MAX_TAGS || (p->ntags && !p->tags)) {
        snprintf(err, errlen, "store: %s: bad tag count %d (at most %d)", p->metric, p->ntags,
                 MAX_TAGS);
        return -1;
    }
    for (int i = 0; i < p->ntags; i++) {
        const store_tag *t = &p->tags[i];
        if (!t->key || !*t->key || !t->value || !*t->value || strlen(t->key) > MAX_NAME ||
            strlen(t->value) > MAX_NAME) {
            snprintf(err, errlen, "store: %s: a tag key or value is empty (or over %d bytes)",
                     p->metric, MAX_NAME);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(p->tags[j].key, t->key) == 0) {
                snprintf(err, errlen, "store: %s: tag key %s given twice", p->metric, t->key);
                return -1;
            }
    }
    return 0;
}

int store_put(store *s, const store_point *pts, size_t n, char *err, size_t errlen)
{
    uint64_t ticket;
    if (store_put_nowait(s, pts, n, &ticket, err, errlen) < 0) return -1;
    return store_sync(s, ticket, err, errlen);
}

int store_sync(store *s, uint64_t ticket, char *err, size_t errlen)
{
    if (!s) {
        snprintf(err, errlen, "store: not open");
        return -1;
    }
    if (!ticket) return 0;
    pthread_mutex_lock(&s->mu);
    int rc = store_wal_wait_durable(s, ticket);
    if (rc < 0) snprintf(err, errlen, "%s", s->broken_msg);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_put_nowait(store *s, const store_point *pts, size_t n, uint64_t *ticket, char *err,
                     size_t errlen)
{
    *ticket = 0;
    if (!s) {
        snprintf(err, errlen, "store: not open");
        return -1;
    }
    const store_tag *ptags = NULL;
    int pnt = -1;
    for (size_t i = 0; i < n; i++) {
        store_point p = pts[i];
        int same = p.tags == ptags && p.ntags == pnt; /* the fields of one line share their tags */
        if (same) p.ntags = 0;
        if (check_point(&p, err, errlen) < 0) return -1;
        ptags = pts[i].tags;
        pnt = pts[i].ntags;
    }
    if (n == 0) return 0;

    /* slices of SLICE points: keys and hashes built outside the lock, then
     * resolved, logged and applied under it; memory stays bounded whatever
     * the batch size.  One wait for durability at the end. */
    enum { SLICE = 4096 };
    store_buf keys = {0}, tagpart = {0};
    size_t *koff = malloc((SLICE + 1) * sizeof *koff);
    uint64_t *kh = malloc(SLICE * sizeof *kh);
    series **ser = malloc(SLICE * sizeof *ser);
    store_tag sorted[MAX_TAGS];
    /* the hashes of the tag set and of recent metric names: the fields of a
     * line share their tags, and a put names few metrics, many times (a
     * point's strings do not change during the put) */
    uint64_t tagh = 0;
    struct {
        const char *name;
        size_t len;
        uint64_t h;
    } mc[16] = {{0}};
    ptags = NULL;
    pnt = -1;
    uint64_t my = 0;
    int rc = 0;
    if (!koff || !kh || !ser) {
        snprintf(err, errlen, "store: out of memory");
        rc = -1;
    }
    for (size_t base = 0; base < n && rc == 0; base += SLICE) {
        size_t m = n - base < SLICE ? n - base : SLICE;
        const store_point *sp = pts + base;
        keys.n = 0;
        for (size_t i = 0; i < m; i++) {
            const store_point *p = &sp[i];
            if (p->tags != ptags || p->ntags != pnt) {
                if (p->ntags) memcpy(sorted, p->tags, (size_t)p->ntags * sizeof *sorted);
                for (int a = 1; a < p->ntags; a++) /* insertion sort: a few tags */
                    for (int b = a; b > 0 && store_tag_cmp(&sorted[b - 1], &sorted[b]) > 0; b--) {
                        store_tag t = sorted[b];
                        sorted[b] = sorted[b - 1];
                        sorted[b - 1] = t;
                    }
                store_key_make(&tagpart, "", sorted, p->ntags); /* NUL (k NUL v NUL)* */
                tagh = tagpart.oom ? 0 : store_hash(tagpart.p, tagpart.n);
                ptags = p->tags;
                pnt = p->ntags;
            }
            size_t c = ((uintptr_t)p->metric >> 3) & 15;
            if (mc[c].name != p->metric) {
                mc[c].name = p->metric;
                mc[c].len = strlen(p->metric);
                mc[c].h = store_hash(p->metric, mc[c].len);
            }
            size_t ml = mc[c].len;
            koff[i] = keys.n;
            if (tagpart.oom || store_buf_reserve(&keys, ml + tagpart.n) < 0) break;
            memcpy(keys.p + keys.n, p->metric, ml);
            memcpy(keys.p + keys.n + ml, tagpart.p, tagpart.n);
            keys.n += ml + tagpart.n;
            kh[i] = store_key_hash_parts(mc[c].h, tagh); /* store_key_hash of the key */
        }
        koff[m] = keys.n;
        if (keys.oom || tagpart.oom) {
            snprintf(err, errlen, "store: out of memory");
            rc = -1;
            break;
        }

        pthread_mutex_lock(&s->mu);
        if (s->broken && store_wal_recover(s) < 0) {
            snprintf(err, errlen, "%s", s->broken_msg);
            pthread_mutex_unlock(&s->mu);
            rc = -1;
            break;
        }
        series *prev = NULL;
        size_t resolved = 0;
        for (size_t i = 0; i < m; i++, resolved++) {
            const uint8_t *k = keys.p + koff[i];
            size_t kl = koff[i + 1] - koff[i];
            if (prev && kh[i] == kh[i - 1] && kl == koff[i] - koff[i - 1] &&
                memcmp(keys.p + koff[i - 1], k, kl) == 0) { /* the same series again */
                ser[i] = prev;
                continue;
            }
            series *se = store_series_find(s, k, kl, kh[i]);
            if (!se) {
                const char *metric;
                store_tag tags[MAX_TAGS];
                int nt;
                store_key_parse(k, kl, &metric, tags, &nt);
                /* room for its log record first: a series is never in the
                 * index without one */
                if (store_buf_reserve(&s->wbuf, 32 + kl) < 0 ||
                    !(se = store_series_add(s, s->next_id, metric, tags, nt, k, kl, kh[i])))
                    break;
                store_wal_log_series(s, se);
            }
            ser[i] = prev = se;
        }
        /* one log record: runs of points of one series (at most 40 bytes a point) */
        if (resolved < m || store_buf_reserve(&s->wbuf, 16 + m * 40) < 0) {
            s->wbuf.oom = 0; /* what it holds is whole: the next put goes on */
            pthread_mutex_unlock(&s->mu);
            snprintf(err, errlen, "store: out of memory");
            rc = -1;
            break;
        }
        size_t at = store_wal_begin(&s->wbuf, REC_POINTS_G);
        int64_t pts_prev = 0;
        uint8_t *wb = s->wbuf.p;
        size_t wn = s->wbuf.n;
        for (size_t i = 0; i < m;) {
            size_t j = i + 1;
            while (j < m && ser[j] == ser[i]) j++;
            /* the head's coding is the usual coding of the series' values */
            int guess = ser[i]->hn ? ser[i]->hmode : 0;
            wn = store_wal_run(wb, wn, ser[i]->id, sp + i, j - i, guess, &pts_prev);
            i = j;
        }
        s->wbuf.n = wn;
        store_wal_end(&s->wbuf, at);
        size_t lost = 0;
        for (size_t i = 0; i < m; i++)
            if (store_head_add(s, ser[i], sp[i].ts_ms, sp[i].value, s->seg) < 0) lost++;
        my = ++s->put_seq;
        s->seg_points += m;
        s->last_put_ms = store_now_ms();
        s->idle_settled = 0;
        if (lost) {
            /* logged (readable after a restart) but not in memory: the batch
             * fails, and a retry puts the same points again */
            snprintf(err, errlen, "store: out of memory");
            rc = -1;
        }
        if (s->pend_bytes >= FLUSH_BYTES || s->pend_n >= FLUSH_CHUNKS) store_flush_pending(s);
        pthread_mutex_unlock(&s->mu);
    }
    free(koff);
    free(kh);
    free(ser);
    store_buf_free(&keys);
    store_buf_free(&tagpart);
    if (rc < 0) return -1;
    *ticket = my;
    return 0;
}
