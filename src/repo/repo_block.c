/* repo_block.c — a run's samples kept as one row (see repo_priv.h), and
 * every read of events that expands them.
 *
 * evblocks(id, last, ts, ts_last, name, wf, job, host, run, data): the
 * samples of one run that batches folded (repo_batch.c: those after the
 * job's first event) while pending (repo_pending.c), written when the job's
 * row is; id and last are the ids of its first and last event, ts and
 * ts_last its least and greatest time, name, wf, job, host and run what
 * each of its events' row in events would say, data the events one after
 * the other (native byte order), in one of two forms:
 *   whole (written before blocks were coded): an int64 id, a double ts, a
 *     uint32 length and the text as received;
 *   coded: the int64 BLOCK_CODED (no event's id is negative), then for each
 *     event an int64 id, a double ts, a uint32 length of its text, a uint32
 *     length of its code and the code: its text as its difference from the
 *     event's before it in the block (repo_delta.c; the first one's from
 *     nothing).
 * Events and blocks share one sequence of ids (repo.c's insert_event takes
 * the next one too), so that a read merges them into the order it had when
 * every event was a row: a row of its own cost every sample an insert and
 * two index entries, a block costs it a copy.  A block's ids span at most
 * REPO_BLOCK_SPAN, so that GET /api/events finds the blocks that may hold
 * an id after `after` by their first id. */
#include "repo/repo_priv.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define REPO_BLOCK_BYTES (64 * 1024)
#define REPO_BLOCK_HEAD  (8 + 8 + 4)     /* whole: id, ts, length */
#define BLOCK_CODED      (-2LL)          /* a coded block's first 8 bytes */
#define BLOCK_CODED_HEAD (8 + 8 + 4 + 4) /* coded: id, ts, length, code's length */

struct repo_block {
    long long run, first, last;
    double tmin, tmax;
    char *host;
    unsigned char *data;
    size_t len, cap;
    char *prev; /* the text of the block's last event (its next one's base) */
    size_t nprev, prevcap;
};

static void block_write(repo *r, repo_batch_job *e, struct repo_block *b)
{
    if (!b->len) return;
    sqlite3_stmt *st =
        repo_prep(r,
                  "INSERT INTO evblocks(id, last, ts, ts_last, name, wf, job, host,"
                  " run, data) VALUES(?1, ?2, ?3, ?4, 'kickstart.inv.online', ?5,"
                  " ?6, ?7, ?8, ?9)",
                  "iiddsssi", b->first, b->last, b->tmin, b->tmax, e->wf, e->job, b->host, b->run);
    if (st) {
        sqlite3_bind_blob(st, 9, b->data, (int)b->len, SQLITE_STATIC);
        sqlite3_step(st);
        repo_done(r, st);
    }
    b->len = 0;
}

void repo_block_write(repo *r, repo_batch_job *e)
{
    for (size_t i = 0; i < e->nblk; i++) {
        block_write(r, e, &e->blk[i]);
        free(e->blk[i].host);
        free(e->blk[i].data);
        free(e->blk[i].prev);
    }
    free(e->blk);
    e->blk = NULL;
    e->nblk = 0;
}

static struct repo_block *block_of(const repo_batch_job *e, long long run)
{
    for (size_t i = 0; i < e->nblk; i++)
        if (e->blk[i].run == run) return &e->blk[i];
    return NULL;
}

/* one host a block (a run is one host's), a bounded span and size */
static int splits(const struct repo_block *b, long long id, const char *host, size_t n)
{
    return b && b->len &&
           (strcmp(b->host, host) || id - b->first >= REPO_BLOCK_SPAN ||
            b->len + n > REPO_BLOCK_BYTES);
}

int repo_block_splits(const repo_batch_job *e, long long run, long long id, const char *host,
                      size_t n)
{
    return splits(block_of(e, run), id, host, n);
}

void repo_block_add(repo *r, repo_batch_job *e, long long run, long long id, double ts,
                    const char *host, const char *body)
{
    struct repo_block *b = block_of(e, run);
    if (!b) {
        struct repo_block *a = realloc(e->blk, (e->nblk + 1) * sizeof *a);
        if (!a) return;
        e->blk = a;
        b = &e->blk[e->nblk++];
        memset(b, 0, sizeof *b);
        b->run = run;
    }
    size_t n = strlen(body);
    if (splits(b, id, host, n)) block_write(r, e, b);
    if (!b->len) {
        char *h = strdup(host);
        if (!h) return;
        free(b->host);
        b->host = h;
        b->first = id;
        b->tmin = b->tmax = ts;
        b->nprev = 0;
    }
    size_t need = 8 + BLOCK_CODED_HEAD + n + REPO_DELTA_SLACK;
    if (b->len + need > b->cap) {
        size_t cap = (b->len + need) * 2;
        unsigned char *d = realloc(b->data, cap);
        if (!d) return;
        b->data = d;
        b->cap = cap;
    }
    if (n > b->prevcap) {
        char *p = realloc(b->prev, n * 2);
        if (!p) return;
        b->prev = p;
        b->prevcap = n * 2;
    }
    if (!b->len) {
        int64_t coded = BLOCK_CODED;
        memcpy(b->data, &coded, 8);
        b->len = 8;
    }
    unsigned char *at = b->data + b->len;
    size_t code = repo_delta_encode(b->prev, b->nprev, body, n, at + BLOCK_CODED_HEAD);
    int64_t i64 = id;
    uint32_t u32 = (uint32_t)n, c32 = (uint32_t)code;
    memcpy(at, &i64, 8);
    memcpy(at + 8, &ts, 8);
    memcpy(at + 16, &u32, 4);
    memcpy(at + 20, &c32, 4);
    b->len += BLOCK_CODED_HEAD + code;
    if (n) memcpy(b->prev, body, n); /* (an empty text leaves prev NULL) */
    b->nprev = n;
    b->last = id;
    if (ts < b->tmin) b->tmin = ts;
    if (ts > b->tmax) b->tmax = ts;
}

/* ---- reads ---- */

static void evs_push(repo_evs *e, long long id, long long run, double ts, const char *body,
                     size_t n)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        repo_ev *v = realloc(e->v, cap * sizeof *v);
        if (!v) return;
        e->v = v;
        e->cap = cap;
    }
    char *c = malloc(n + 1);
    if (!c) return;
    memcpy(c, body, n);
    c[n] = 0;
    e->v[e->n++] = (repo_ev){id, run, ts, c};
}

void repo_evs_free(repo_evs *e)
{
    for (size_t i = 0; i < e->n; i++) free(e->v[i].body);
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* A row of events: id, run, ts, body. */
static void push_row(repo_evs *e, sqlite3_stmt *st)
{
    evs_push(e, sqlite3_column_int64(st, 0),
             sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1),
             sqlite3_column_type(st, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 2),
             (const char *)sqlite3_column_text(st, 3), (size_t)sqlite3_column_bytes(st, 3));
}

/* A block's events (its run, its data in column col) with id > after and,
 * since finite, ts >= since.  A block that is not what a block says stops
 * where it stops being one. */
static void push_block(repo_evs *e, sqlite3_stmt *st, long long run, int col, long long after,
                       double since)
{
    const unsigned char *d = sqlite3_column_blob(st, col);
    size_t len = (size_t)sqlite3_column_bytes(st, col), at = 0;
    int64_t first;
    if (!d || len < 8) return;
    memcpy(&first, d, 8);
    if (first != BLOCK_CODED) {
        while (at + REPO_BLOCK_HEAD <= len) {
            int64_t id;
            double ts;
            uint32_t n;
            memcpy(&id, d + at, 8);
            memcpy(&ts, d + at + 8, 8);
            memcpy(&n, d + at + 16, 4);
            if (n > len - at - REPO_BLOCK_HEAD) break;
            if (id > after && (!isfinite(since) || ts >= since))
                evs_push(e, id, run, ts, (const char *)d + at + REPO_BLOCK_HEAD, n);
            at += REPO_BLOCK_HEAD + n;
        }
        return;
    }
    /* coded: each text from the one before; two buffers, turn about */
    char *buf[2] = {NULL, NULL};
    size_t cap[2] = {0, 0}, nprev = 0;
    int cur = 0;
    for (at = 8; at + BLOCK_CODED_HEAD <= len;) {
        int64_t id;
        double ts;
        uint32_t n, c;
        memcpy(&id, d + at, 8);
        memcpy(&ts, d + at + 8, 8);
        memcpy(&n, d + at + 16, 4);
        memcpy(&c, d + at + 20, 4);
        if (c > len - at - BLOCK_CODED_HEAD || n > nprev + c) break; /* (copies + literals) */
        if (n + 1 > cap[cur]) {
            char *p = realloc(buf[cur], n + 1);
            if (!p) break;
            buf[cur] = p;
            cap[cur] = n + 1;
        }
        if (repo_delta_decode(buf[!cur], nprev, d + at + BLOCK_CODED_HEAD, c, buf[cur], n) < 0)
            break;
        if (id > after && (!isfinite(since) || ts >= since)) evs_push(e, id, run, ts, buf[cur], n);
        nprev = n;
        cur = !cur;
        at += BLOCK_CODED_HEAD + c;
    }
    free(buf[0]);
    free(buf[1]);
}

/* SQL's ascending order of a REAL that may be NULL (NULL first). */
static int cmp_ts(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(b) - isnan(a);
    return a < b ? -1 : a > b;
}

static int by_ts(const void *pa, const void *pb)
{
    const repo_ev *a = pa, *b = pb;
    int c = cmp_ts(a->ts, b->ts);
    return c ? c : (a->id > b->id) - (a->id < b->id);
}

static int by_run(const void *pa, const void *pb)
{
    const repo_ev *a = pa, *b = pb;
    if ((a->run >= 0) != (b->run >= 0)) return (a->run >= 0) - (b->run >= 0);
    if (a->run != b->run) return a->run < b->run ? -1 : 1;
    return by_ts(pa, pb);
}

static int by_id(const void *pa, const void *pb)
{
    const repo_ev *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

/* A job's rows and blocks, all of its runs or one ([table][one run]). */
static const char *const job_sql[2][2] = {
    {"SELECT id, run, ts, body FROM events WHERE job=?1 AND wf=?2 AND ?3 < 0"
     " AND (?4 IS NULL OR ts >= ?4)",
     "SELECT id, run, ts, body FROM events WHERE job=?1 AND wf=?2 AND run=?3"
     " AND (?4 IS NULL OR ts >= ?4)"},
    {"SELECT run, data FROM evblocks WHERE job=?1 AND wf=?2 AND ?3 < 0"
     " AND (?4 IS NULL OR ts_last >= ?4)",
     "SELECT run, data FROM evblocks WHERE job=?1 AND wf=?2 AND run=?3"
     " AND (?4 IS NULL OR ts_last >= ?4)"},
};

void repo_evs_job(repo *r, const char *job, const char *wf, long long run, double since,
                  int by_run_order, repo_evs *out)
{
    memset(out, 0, sizeof *out);
    double s = isfinite(since) ? since : NAN;
    for (int t = 0; t < 2; t++) {
        sqlite3_stmt *st = repo_prep(r, job_sql[t][run >= 0], "ssid", job, wf, run, s);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            if (t)
                push_block(out, st, sqlite3_column_int64(st, 0), 1, -1, s);
            else
                push_row(out, st);
        }
        repo_done(r, st);
    }
    if (out->n) qsort(out->v, out->n, sizeof *out->v, by_run_order ? by_run : by_ts);
}

/* Keeps the first limit events by id. */
static void keep_first(repo_evs *e, size_t limit)
{
    if (e->n) qsort(e->v, e->n, sizeof *e->v, by_id);
    while (e->n > limit) free(e->v[--e->n].body);
}

void repo_evs_page(repo *r, const repo_event_filter *f, long limit, repo_evs *out)
{
    memset(out, 0, sizeof *out);
    char name[256] = "", like[260] = "";
    if (f->name) {
        size_t n = strlen(f->name);
        if (n && f->name[n - 1] == '*')
            snprintf(like, sizeof like, "%.*s%%", (int)(n - 1), f->name);
        else
            snprintf(name, sizeof name, "%s", f->name);
    }
    double since = f->since > 0 ? f->since : NAN, until = f->until > 0 ? f->until : NAN;
    /* window by window of REPO_BLOCK_SPAN ids: the rows in it, and the
     * blocks that begin in it (the first window: that may hold an id after
     * `after`).  Once limit events are in hand and the limit-th is in the
     * window, no later row or block can come before it: a filter that
     * matches often stops at once, one that matches rarely reads on to the
     * end, as one scan of the rows did. */
    for (long long lo = f->after + 1; lo < r->next_id; lo += REPO_BLOCK_SPAN) {
        long long hi = lo + REPO_BLOCK_SPAN;
        sqlite3_stmt *st = repo_prep(
            r,
            "SELECT id, run, ts, body FROM events WHERE id >= ?1 AND id < ?10"
            " AND (?2 IS NULL OR wf=?2) AND (?3 IS NULL OR job=?3) AND (?4 IS NULL OR host=?4)"
            " AND (?5 IS NULL OR name=?5) AND (?6 IS NULL OR name LIKE ?6)"
            " AND (?7 IS NULL OR ts >= ?7) AND (?8 IS NULL OR ts <= ?8)"
            " ORDER BY id LIMIT ?9",
            "isssssddii", lo, f->wf, f->job, f->host, name[0] ? name : NULL, like[0] ? like : NULL,
            since, until, (long long)limit, hi);
        while (st && sqlite3_step(st) == SQLITE_ROW) push_row(out, st);
        repo_done(r, st);
        st = repo_prep(r,
                       "SELECT id, run, data FROM evblocks WHERE id >= ?1 AND id < ?10"
                       " AND last > ?2 AND (?3 IS NULL OR wf=?3) AND (?4 IS NULL OR job=?4)"
                       " AND (?5 IS NULL OR host=?5) AND (?6 IS NULL OR name=?6)"
                       " AND (?7 IS NULL OR name LIKE ?7) AND (?8 IS NULL OR ts_last >= ?8)"
                       " AND (?9 IS NULL OR ts <= ?9)",
                       "iisssssddi", lo == f->after + 1 ? f->after - REPO_BLOCK_SPAN : lo, f->after,
                       f->wf, f->job, f->host, name[0] ? name : NULL, like[0] ? like : NULL, since,
                       until, hi);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            size_t from = out->n;
            push_block(out, st, sqlite3_column_int64(st, 1), 2, f->after, since);
            /* until: the block's own times were only its bounds */
            size_t k = from;
            for (size_t i = from; i < out->n; i++)
                if (!isfinite(until) || out->v[i].ts <= until)
                    out->v[k++] = out->v[i];
                else
                    free(out->v[i].body);
            out->n = k;
        }
        repo_done(r, st);
        if (out->n >= (size_t)limit) {
            keep_first(out, (size_t)limit);
            if (out->v[out->n - 1].id < hi) break;
        }
    }
    keep_first(out, (size_t)limit);
}

void repo_evs_prune(repo *r, double cut)
{
    sqlite3_stmt *st = repo_prep(r, "DELETE FROM events WHERE ts < ?1", "d", cut);
    if (st) sqlite3_step(st);
    repo_done(r, st);
    st = repo_prep(r, "DELETE FROM evblocks WHERE ts < ?1 AND ts_last < ?1", "d", cut);
    if (st) sqlite3_step(st);
    repo_done(r, st);
    /* a block across the cut keeps its newer events: written again */
    typedef struct {
        long long first;
        repo_batch_job e;
    } part;
    part *p = NULL;
    size_t np = 0;
    st = repo_prep(r, "SELECT id, run, data, wf, job, host FROM evblocks WHERE ts < ?1", "d", cut);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        part *a = realloc(p, (np + 1) * sizeof *a);
        if (!a) break;
        p = a;
        part *q = &p[np++];
        memset(q, 0, sizeof *q);
        q->first = sqlite3_column_int64(st, 0);
        q->e.wf = strdup((const char *)sqlite3_column_text(st, 3));
        q->e.job = strdup((const char *)sqlite3_column_text(st, 4));
        repo_evs evs = {0};
        push_block(&evs, st, sqlite3_column_int64(st, 1), 2, -1, cut);
        for (size_t i = 0; i < evs.n && q->e.wf && q->e.job; i++)
            repo_block_add(r, &q->e, evs.v[i].run, evs.v[i].id, evs.v[i].ts,
                           (const char *)sqlite3_column_text(st, 5), evs.v[i].body);
        repo_evs_free(&evs);
    }
    repo_done(r, st);
    for (size_t i = 0; i < np; i++) {
        st = repo_prep(r, "DELETE FROM evblocks WHERE id=?1", "i", p[i].first);
        if (st) sqlite3_step(st);
        repo_done(r, st);
        repo_block_write(r, &p[i].e);
        free(p[i].e.wf), free(p[i].e.job);
    }
    free(p);
}
