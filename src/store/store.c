/* store.c — the embedded time-series store of `jobscope serve` (store.h,
 * docs/store.md).
 *
 * A store directory holds:
 *   chunks.db    SQLite: the series table (id, metric, tags) and the chunks
 *                table (series, t_start, t_end, n, data): compressed runs of
 *                points of one series within one 2-hour partition (codec.c)
 *   wal/N.wal    the write-ahead log of what is not yet in chunks.db
 *   LOCK         flock()ed by the process that has the store open
 *
 * Writes: store_put() appends its batch to the log buffer and applies it to
 * the in-memory heads (recent points per series); then the first waiting
 * thread writes and fdatasync()s the buffer for everybody who is waiting
 * (group commit), and store_put returns once its bytes are durable.  A full
 * head is cut into a compressed chunk kept in memory ("frozen") until a
 * batch of them is written to SQLite in one transaction.  When a log
 * segment is full the next one is started and the log before the previous
 * segment is retired: heads still holding points from it are cut, every
 * frozen chunk is committed, and its files are deleted.  At open, the
 * segments left are replayed into the heads.
 *
 * Reads merge, per series, SQLite chunks (in the order they were written),
 * frozen chunks and the head; a timestamp written twice keeps the newest
 * value.  store_maintain() applies retention (age, size) and merges the
 * small chunks of a series in one partition into one ("settling").
 *
 * Locks: `mu` guards the in-memory state (index, heads, log buffer); `wmu`
 * serialises writes to SQLite (flush under mu, compaction without it);
 * readers use their own read-only SQLite connections from a pool. */
#include "store/store.h"
#include "store/codec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEG_LIMIT       (32u << 20)         /* log segment size before rotation */
#define PART_MS         (2LL * 3600 * 1000) /* time partition of chunks */
#define HEAD_BUDGET     1500000             /* head points over all series */
#define HEAD_MIN        32
#define HEAD_MAX        2048
#define FLUSH_BYTES     (2u << 20) /* frozen chunk bytes before a SQLite commit */
#define FLUSH_CHUNKS    8192
#define ZLEVEL_FLUSH    1
#define ZLEVEL_SETTLE   9
#define MAX_NAME        4096
#define MAX_TAGS        64
#define SETTLE_MAX_WAIT 64 /* chunks a busy group may gather before it is merged anyway */

#define STORE_FORMAT "3" /* meta 'format' of chunks.db (docs/store.md) */

enum { REC_SERIES = 1, REC_POINTS = 2 };

typedef struct series series;

typedef struct frozen {
    struct frozen *next_s; /* the series' frozen chunks, oldest first */
    struct frozen *next_p; /* pending list (all frozen chunks, oldest first) */
    series *se;
    int64_t t0, t1;
    uint32_t n;
    uint8_t *tdata, *vdata; /* timestamp and value parts (codec.h) */
    size_t tlen, vlen;
} frozen;

struct series {
    uint64_t id;
    const char *metric;
    store_tag *tags;
    int ntags;
    char *key;
    size_t keylen;
    uint64_t hash;
    int64_t *hts;
    double *hval;
    uint32_t hn, hcap;
    uint64_t head_seg;        /* log segment of the oldest head point */
    int64_t head_lo, head_hi; /* the partition of the head's first point: [lo, hi) */
    frozen *fz_first, *fz_last;
    int64_t last_ts;
    double last_val;
    int last_known;
    uint32_t version; /* bumped by every write to the series */
    int persisted;    /* in the series table */
    struct mlist *ml; /* the series of its metric */
};

typedef struct strent {
    char *s;
    uint64_t h;
    void *val;
} strent;
typedef struct strmap {
    strent *slots;
    size_t cap, n;
} strmap;
struct mlist {
    series **v;
    size_t n, cap;
    uint64_t version;
};
typedef struct mlist mlist; /* version: store_metric_version */

struct store {
    char *dir;
    store_config cfg;
    pthread_mutex_t mu, wmu, pool_mu;
    pthread_cond_t synced_cv;
    sqlite3 *db;
    sqlite3_stmt *ins_chunk, *ins_series, *ins_time, *sel_time;
    sqlite3_stmt *ins_name, *sel_name, *ins_tagset, *sel_tagset;
    sqlite3 **pool;
    int npool, cappool;
    int lock_fd;
    /* index */
    series **tab;
    size_t tabcap, nseries;
    series **by_id;
    size_t by_id_cap;
    uint64_t next_id;
    strmap metrics, tagks, tagvs;
    /* log */
    int wal_fd;
    uint64_t seg, seg_bytes;
    store_buf wbuf;
    uint64_t put_seq, synced_seq;
    uint64_t seg_limit;
    int syncing, broken;
    char broken_msg[160];
    /* frozen chunks waiting for SQLite */
    frozen *pend_first, *pend_last;
    size_t pend_bytes, pend_n;
    uint64_t head_points;
    uint32_t head_max;
    uint64_t db_points, db_chunks;
    int64_t max_ts;
    /* (series, partition) that got chunks since settling looked at them */
    struct group *dirty;
    size_t ndirty, capdirty;
    int scanned;       /* settling has looked at the whole table once */
    uint64_t drop_gen; /* bumped when retention or the size limit drops points */
    int64_t
        opened_ms; /* when store_open ran: what settling finds at first counts as written then */
};

typedef struct group {
    uint64_t series;
    int64_t part;
    int64_t at;
} group; /* at: when it last got a chunk (ms) */

static int64_t now_ms(void);
static void add_dirty_at(store *s, uint64_t sid, int64_t part, int64_t at);
static void add_dirty(store *s, uint64_t sid, int64_t part)
{
    add_dirty_at(s, sid, part, now_ms());
}

static void add_dirty_at(store *s, uint64_t sid, int64_t part, int64_t at)
{
    if (s->ndirty >= (1u << 20)) { /* nobody settles: look at everything next time */
        s->scanned = 0;
        s->ndirty = 0;
    }
    if (!s->scanned) return;
    if (s->ndirty == s->capdirty) {
        s->capdirty = s->capdirty ? s->capdirty * 2 : 1024;
        s->dirty = realloc(s->dirty, s->capdirty * sizeof *s->dirty);
        if (!s->dirty) abort();
    }
    s->dirty[s->ndirty].series = sid;
    s->dirty[s->ndirty].at = at;
    s->dirty[s->ndirty++].part = part;
}

/* --- small helpers ------------------------------------------------------- */

/* A 64-bit hash of bytes, a word at a time (keys are hashed for every point). */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0x243f6a8885a308d3ULL ^ (n * 0x9e3779b97f4a7c15ULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 31;
        b += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, b, n);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 32);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}
static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) abort();
    return p;
}
static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d) abort();
    return d;
}

static int64_t part_of(int64_t ts)
{
    int64_t q = ts / PART_MS;
    if (ts % PART_MS < 0) q--;
    return q;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Interned strings (metric names, tag keys, tag values). */
static strent *strmap_find(strmap *m, const char *s, uint64_t h, int add)
{
    if (add && (m->n + 1) * 4 >= m->cap * 3) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        strent *ns = calloc(nc, sizeof *ns);
        if (!ns) abort();
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].s) continue;
            size_t j = m->slots[i].h & (nc - 1);
            while (ns[j].s) j = (j + 1) & (nc - 1);
            ns[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = ns;
        m->cap = nc;
    }
    if (!m->cap) return NULL;
    size_t j = h & (m->cap - 1);
    while (m->slots[j].s) {
        if (m->slots[j].h == h && strcmp(m->slots[j].s, s) == 0) return &m->slots[j];
        j = (j + 1) & (m->cap - 1);
    }
    if (!add) return NULL;
    m->slots[j].s = xstrdup(s);
    m->slots[j].h = h;
    m->slots[j].val = NULL;
    m->n++;
    return &m->slots[j];
}

static const char *intern(strmap *m, const char *s)
{
    return strmap_find(m, s, hash_bytes(s, strlen(s)), 1)->s;
}

static void strmap_free(strmap *m, int free_vals)
{
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].s) continue;
        free(m->slots[i].s);
        if (free_vals && m->slots[i].val) {
            mlist *l = m->slots[i].val;
            free(l->v);
            free(l);
        }
    }
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* --- the series index ---------------------------------------------------- */

static int cmp_tag(const void *a, const void *b)
{
    return strcmp(((const store_tag *)a)->key, ((const store_tag *)b)->key);
}

/* Canonical key: metric NUL (key NUL value NUL)* with tags sorted by key. */
static void make_key(store_buf *k, const char *metric, const store_tag *sorted, int ntags)
{
    k->n = 0;
    size_t l = strlen(metric) + 1;
    store_buf_reserve(k, l);
    memcpy(k->p + k->n, metric, l);
    k->n += l;
    for (int i = 0; i < ntags; i++) {
        size_t a = strlen(sorted[i].key) + 1, b = strlen(sorted[i].value) + 1;
        store_buf_reserve(k, a + b);
        memcpy(k->p + k->n, sorted[i].key, a);
        memcpy(k->p + k->n + a, sorted[i].value, b);
        k->n += a + b;
    }
}

static series *find_series(store *s, const uint8_t *key, size_t len, uint64_t h)
{
    if (!s->tabcap) return NULL;
    size_t j = h & (s->tabcap - 1);
    while (s->tab[j]) {
        series *se = s->tab[j];
        if (se->hash == h && se->keylen == len && memcmp(se->key, key, len) == 0) return se;
        j = (j + 1) & (s->tabcap - 1);
    }
    return NULL;
}

static void tab_insert(store *s, series *se)
{
    if ((s->nseries + 1) * 4 >= s->tabcap * 3) {
        size_t nc = s->tabcap ? s->tabcap * 2 : 1024;
        series **nt = calloc(nc, sizeof *nt);
        if (!nt) abort();
        for (size_t i = 0; i < s->tabcap; i++) {
            if (!s->tab[i]) continue;
            size_t j = s->tab[i]->hash & (nc - 1);
            while (nt[j]) j = (j + 1) & (nc - 1);
            nt[j] = s->tab[i];
        }
        free(s->tab);
        s->tab = nt;
        s->tabcap = nc;
    }
    size_t j = se->hash & (s->tabcap - 1);
    while (s->tab[j]) j = (j + 1) & (s->tabcap - 1);
    s->tab[j] = se;
    s->nseries++;
}

/* Adds a series (tags sorted by key) with a given id; the caller logs it. */
static series *add_series(store *s, uint64_t id, const char *metric, const store_tag *sorted,
                          int ntags, const uint8_t *key, size_t keylen, uint64_t h)
{
    series *se = calloc(1, sizeof *se);
    if (!se) abort();
    se->id = id;
    strent *me = strmap_find(&s->metrics, metric, hash_bytes(metric, strlen(metric)), 1);
    se->metric = me->s;
    se->ntags = ntags;
    se->tags = xmalloc((size_t)(ntags ? ntags : 1) * sizeof *se->tags);
    for (int i = 0; i < ntags; i++) {
        se->tags[i].key = intern(&s->tagks, sorted[i].key);
        se->tags[i].value = intern(&s->tagvs, sorted[i].value);
    }
    se->key = xmalloc(keylen);
    memcpy(se->key, key, keylen);
    se->keylen = keylen;
    se->hash = h;
    tab_insert(s, se);
    if (id >= s->by_id_cap) {
        size_t nc = s->by_id_cap ? s->by_id_cap : 1024;
        while (nc <= id) nc *= 2;
        s->by_id = xrealloc(s->by_id, nc * sizeof *s->by_id);
        memset(s->by_id + s->by_id_cap, 0, (nc - s->by_id_cap) * sizeof *s->by_id);
        s->by_id_cap = nc;
    }
    s->by_id[id] = se;
    if (id >= s->next_id) s->next_id = id + 1;
    mlist *l = me->val;
    if (!l) {
        l = calloc(1, sizeof *l);
        if (!l) abort();
        me->val = l;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = se;
    l->version++;
    se->ml = l;
    uint64_t hm = HEAD_BUDGET / (s->nseries ? s->nseries : 1);
    s->head_max = hm < HEAD_MIN ? HEAD_MIN : hm > HEAD_MAX ? HEAD_MAX : (uint32_t)hm;
    return se;
}

static series *series_by_id(store *s, uint64_t id)
{
    return id < s->by_id_cap ? s->by_id[id] : NULL;
}

/* Parses a key (metric NUL (k NUL v NUL)*) into metric + tags (pointers into key). */
static int parse_key(const uint8_t *key, size_t len, const char **metric, store_tag *tags,
                     int *ntags)
{
    const char *p = (const char *)key, *end = p + len;
    const char *z = memchr(p, 0, len);
    if (!z || z == p) return -1;
    *metric = p;
    p = z + 1;
    int n = 0;
    while (p < end) {
        const char *zk = memchr(p, 0, (size_t)(end - p));
        if (!zk || zk + 1 >= end) return -1;
        const char *zv = memchr(zk + 1, 0, (size_t)(end - zk - 1));
        if (!zv || n >= MAX_TAGS) return -1;
        tags[n].key = p;
        tags[n].value = zk + 1;
        n++;
        p = zv + 1;
    }
    *ntags = n;
    return 0;
}

/* --- heads, frozen chunks and SQLite flushes ----------------------------- */

static void cut_prefix(store *s, series *se, uint32_t upto);

/* The next capacity of a head: doubling, but never past the head budget,
 * so that 10,000 full heads do not hold twice their points. */
static uint32_t head_grow(const store *s, uint32_t cap)
{
    uint32_t c = cap ? cap * 2 : 8;
    if (c > s->head_max && cap < s->head_max) c = s->head_max;
    return c > cap ? c : cap + 1;
}

static void head_add(store *s, series *se, int64_t ts, double v, uint64_t seg)
{
    se->version++;
    se->ml->version++;
    if (se->last_known < 0 || (se->last_known > 0 && ts >= se->last_ts)) {
        se->last_known = 1;
        se->last_ts = ts;
        se->last_val = v;
    }
    if (ts > s->max_ts) s->max_ts = ts;
    uint32_t n = se->hn;
    if (n && ts <= se->hts[n - 1]) {
        uint32_t lo = 0, hi = n; /* first index with hts >= ts */
        while (lo < hi) {
            uint32_t m = (lo + hi) / 2;
            if (se->hts[m] < ts)
                lo = m + 1;
            else
                hi = m;
        }
        if (se->hts[lo] == ts) {
            se->hval[lo] = v;
            return;
        }
        if (n == se->hcap) {
            se->hcap = head_grow(s, se->hcap);
            se->hts = xrealloc(se->hts, se->hcap * sizeof *se->hts);
            se->hval = xrealloc(se->hval, se->hcap * sizeof *se->hval);
        }
        memmove(se->hts + lo + 1, se->hts + lo, (n - lo) * sizeof *se->hts);
        memmove(se->hval + lo + 1, se->hval + lo, (n - lo) * sizeof *se->hval);
        se->hts[lo] = ts;
        se->hval[lo] = v;
    } else {
        if (n == se->hcap) {
            se->hcap = head_grow(s, se->hcap);
            se->hts = xrealloc(se->hts, se->hcap * sizeof *se->hts);
            se->hval = xrealloc(se->hval, se->hcap * sizeof *se->hval);
        }
        se->hts[n] = ts;
        se->hval[n] = v;
        if (n == 0) se->head_seg = seg;
    }
    se->hn++;
    s->head_points++;
    if (se->hn == 1 || ts < se->head_lo) {
        se->head_lo = part_of(se->hts[0]) * PART_MS;
        se->head_hi = se->head_lo + PART_MS;
    }
    if (se->hn >= s->head_max) {
        cut_prefix(s, se, se->hn);
    } else if (se->hts[se->hn - 1] >= se->head_hi) {
        /* a new partition began: the points before it are complete */
        int64_t p = part_of(se->hts[se->hn - 1]);
        uint32_t i = se->hn - 1;
        while (i > 0 && part_of(se->hts[i - 1]) == p) i--;
        cut_prefix(s, se, i);
    }
}

/* Encodes the first `upto` head points into frozen chunks (one per partition). */
static void cut_prefix(store *s, series *se, uint32_t upto)
{
    uint32_t i = 0;
    store_buf b = {0};
    while (i < upto) {
        int64_t p = part_of(se->hts[i]);
        uint32_t j = i + 1;
        while (j < upto && part_of(se->hts[j]) == p) j++;
        frozen *f = xmalloc(sizeof *f);
        f->next_s = f->next_p = NULL;
        f->se = se;
        f->t0 = se->hts[i];
        f->t1 = se->hts[j - 1];
        f->n = j - i;
        store_ts_encode(se->hts + i, j - i, ZLEVEL_FLUSH, &b);
        f->tdata = xmalloc(b.n);
        memcpy(f->tdata, b.p, b.n);
        f->tlen = b.n;
        store_val_encode(se->hval + i, j - i, ZLEVEL_FLUSH, &b);
        f->vdata = xmalloc(b.n);
        memcpy(f->vdata, b.p, b.n);
        f->vlen = b.n;
        if (se->fz_last)
            se->fz_last->next_s = f;
        else
            se->fz_first = f;
        se->fz_last = f;
        if (s->pend_last)
            s->pend_last->next_p = f;
        else
            s->pend_first = f;
        s->pend_last = f;
        s->pend_bytes += f->tlen + f->vlen + 64;
        s->pend_n++;
        i = j;
    }
    store_buf_free(&b);
    memmove(se->hts, se->hts + upto, (se->hn - upto) * sizeof *se->hts);
    memmove(se->hval, se->hval + upto, (se->hn - upto) * sizeof *se->hval);
    se->hn -= upto;
    s->head_points -= upto;
    if (se->hn) {
        se->head_lo = part_of(se->hts[0]) * PART_MS;
        se->head_hi = se->head_lo + PART_MS;
    }
    if (se->hn == 0 && se->hcap > 64) { /* give memory back after a burst */
        free(se->hts);
        free(se->hval);
        se->hts = NULL;
        se->hval = NULL;
        se->hcap = 0;
    }
}

static int db_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        if (err) snprintf(err, errlen, "store: %s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* The id of a row of `times` holding this timestamp part, inserted when
 * new: the fields of one event share their timestamps.  Under wmu. */
static sqlite3_int64 times_ref(store *s, const uint8_t *p, size_t len)
{
    sqlite3_int64 h = (sqlite3_int64)hash_bytes(p, len), id = 0;
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

static int insert_chunk(store *s, uint64_t series_id, int64_t t0, int64_t t1, size_t n,
                        const uint8_t *tp, size_t tl, const uint8_t *vp, size_t vl)
{
    sqlite3_int64 tref = times_ref(s, tp, tl);
    if (!tref) return -1;
    sqlite3_bind_int64(s->ins_chunk, 1, (sqlite3_int64)series_id);
    sqlite3_bind_int64(s->ins_chunk, 2, t0);
    sqlite3_bind_int64(s->ins_chunk, 3, t1);
    sqlite3_bind_int64(s->ins_chunk, 4, (sqlite3_int64)n);
    sqlite3_bind_int64(s->ins_chunk, 5, tref);
    sqlite3_bind_blob(s->ins_chunk, 6, vp, (int)vl, SQLITE_STATIC);
    int rc = sqlite3_step(s->ins_chunk) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(s->ins_chunk);
    return rc;
}

/* The id of a metric name or tag set row (the fields of one event share
 * their tag set), inserted when new.  Under wmu. */
static sqlite3_int64 name_ref(sqlite3_stmt *ins, sqlite3_stmt *sel, const void *p, size_t len,
                              int text)
{
    sqlite3_int64 id = 0;
    for (int pass = 0; pass < 2 && !id; pass++) {
        if (pass) {
            if (text)
                sqlite3_bind_text(ins, 1, p, (int)len, SQLITE_STATIC);
            else
                sqlite3_bind_blob(ins, 1, p, (int)len, SQLITE_STATIC);
            int rc = sqlite3_step(ins);
            sqlite3_reset(ins);
            if (rc != SQLITE_DONE) return 0;
        }
        if (text)
            sqlite3_bind_text(sel, 1, p, (int)len, SQLITE_STATIC);
        else
            sqlite3_bind_blob(sel, 1, p, (int)len, SQLITE_STATIC);
        if (sqlite3_step(sel) == SQLITE_ROW) id = sqlite3_column_int64(sel, 0);
        sqlite3_reset(sel);
    }
    return id;
}

/* Commits every new series and every frozen chunk to SQLite.  Under mu. */
static int flush_pending(store *s)
{
    int dirty = 0;
    for (uint64_t id = 1; id < s->next_id && !dirty; id++) {
        series *se = series_by_id(s, id);
        if (se && !se->persisted) dirty = 1;
    }
    if (!s->pend_first && !dirty) return 0;
    pthread_mutex_lock(&s->wmu);
    int rc = db_exec(s->db, "BEGIN IMMEDIATE", NULL, 0);
    for (uint64_t id = 1; rc == 0 && id < s->next_id; id++) {
        series *se = series_by_id(s, id);
        if (!se || se->persisted) continue;
        size_t ml = strlen(se->metric) + 1;
        sqlite3_int64 mid = name_ref(s->ins_name, s->sel_name, se->metric, ml - 1, 1);
        sqlite3_int64 tid =
            name_ref(s->ins_tagset, s->sel_tagset, se->key + ml, se->keylen - ml, 0);
        if (!mid || !tid) {
            rc = -1;
            break;
        }
        sqlite3_bind_int64(s->ins_series, 1, (sqlite3_int64)se->id);
        sqlite3_bind_int64(s->ins_series, 2, mid);
        sqlite3_bind_int64(s->ins_series, 3, tid);
        if (sqlite3_step(s->ins_series) != SQLITE_DONE) rc = -1;
        sqlite3_reset(s->ins_series);
    }
    uint64_t pts = 0, nch = 0;
    for (frozen *f = s->pend_first; rc == 0 && f; f = f->next_p) {
        rc = insert_chunk(s, f->se->id, f->t0, f->t1, f->n, f->tdata, f->tlen, f->vdata, f->vlen);
        add_dirty(s, f->se->id, part_of(f->t0));
        pts += f->n;
        nch++;
    }
    if (rc == 0) rc = db_exec(s->db, "COMMIT", NULL, 0);
    if (rc != 0) {
        snprintf(s->broken_msg, sizeof s->broken_msg, "store: cannot write chunks: %s",
                 sqlite3_errmsg(s->db));
        db_exec(s->db, "ROLLBACK", NULL, 0);
        pthread_mutex_unlock(&s->wmu);
        return -1;
    }
    pthread_mutex_unlock(&s->wmu);
    s->db_points += pts;
    s->db_chunks += nch;
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = series_by_id(s, id);
        if (se) se->persisted = 1;
    }
    frozen *f = s->pend_first;
    while (f) {
        frozen *nx = f->next_p;
        f->se->fz_first = f->se->fz_last = NULL;
        free(f->tdata);
        free(f->vdata);
        free(f);
        f = nx;
    }
    s->pend_first = s->pend_last = NULL;
    s->pend_bytes = s->pend_n = 0;
    return 0;
}

/* --- the write-ahead log ------------------------------------------------- */

static void seg_path(const store *s, uint64_t seg, char *out, size_t n)
{
    snprintf(out, n, "%s/wal/%016" PRIu64 ".wal", s->dir, seg);
}

/* Sorted segment numbers present in wal/. */
static size_t list_segments(const store *s, uint64_t **out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/wal", s->dir);
    DIR *d = opendir(path);
    size_t n = 0, cap = 0;
    *out = NULL;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        unsigned long long v = strtoull(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".wal") != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        (*out)[n++] = v;
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful */
        for (size_t j = i; j > 0 && (*out)[j - 1] > (*out)[j]; j--) {
            uint64_t t = (*out)[j];
            (*out)[j] = (*out)[j - 1];
            (*out)[j - 1] = t;
        }
    return n;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int open_segment(store *s, uint64_t seg)
{
    char path[4096];
    seg_path(s, seg, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    char wd[4096];
    snprintf(wd, sizeof wd, "%s/wal", s->dir);
    sync_dir(wd);
    if (s->wal_fd >= 0) close(s->wal_fd);
    s->wal_fd = fd;
    s->seg = seg;
    s->seg_bytes = 0;
    return 0;
}

/* Starts a record in the log buffer; returns its start for end_record. */
static size_t begin_record(store_buf *b, int type)
{
    size_t at = b->n;
    store_buf_reserve(b, 9);
    b->n += 8;
    b->p[b->n++] = (uint8_t)type;
    return at;
}

static void end_record(store_buf *b, size_t at)
{
    uint32_t len = (uint32_t)(b->n - at - 8);
    uint32_t crc = store_crc32c(0, b->p + at + 8, len);
    memcpy(b->p + at, &len, 4);
    memcpy(b->p + at + 4, &crc, 4);
}

static void log_series(store *s, const series *se)
{
    size_t at = begin_record(&s->wbuf, REC_SERIES);
    store_buf_varint(&s->wbuf, se->id);
    store_buf_varint(&s->wbuf, se->keylen);
    store_buf_reserve(&s->wbuf, se->keylen);
    memcpy(s->wbuf.p + s->wbuf.n, se->key, se->keylen);
    s->wbuf.n += se->keylen;
    end_record(&s->wbuf, at);
}

/* Retires the log before segment `keep`: cuts heads that hold points from
 * it, commits everything frozen, deletes its files.  Under mu. */
static int checkpoint(store *s, uint64_t keep)
{
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = series_by_id(s, id);
        if (se && se->hn && se->head_seg < keep) cut_prefix(s, se, se->hn);
    }
    if (flush_pending(s) < 0) return -1;
    uint64_t *segs;
    size_t n = list_segments(s, &segs);
    for (size_t i = 0; i < n; i++) {
        if (segs[i] >= keep) continue;
        char path[4096];
        seg_path(s, segs[i], path, sizeof path);
        unlink(path);
    }
    free(segs);
    return 0;
}

/* Writes the log buffer and waits until `seq` is durable.  Under mu. */
static int wait_durable(store *s, uint64_t seq)
{
    while (s->synced_seq < seq && !s->broken) {
        if (s->syncing) {
            pthread_cond_wait(&s->synced_cv, &s->mu);
            continue;
        }
        s->syncing = 1;
        store_buf b = s->wbuf;
        uint64_t upto = s->put_seq;
        memset(&s->wbuf, 0, sizeof s->wbuf);
        int fd = s->wal_fd;
        pthread_mutex_unlock(&s->mu);
        int rc = 0;
        size_t off = 0;
        while (off < b.n) {
            ssize_t w = write(fd, b.p + off, b.n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                rc = -1;
                break;
            }
            off += (size_t)w;
        }
        if (rc == 0 && fdatasync(fd) < 0) rc = -1;
        int e = errno;
        pthread_mutex_lock(&s->mu);
        /* keep the buffer's memory for the next round */
        if (!s->wbuf.p) {
            b.n = 0;
            s->wbuf = b;
        } else if (s->wbuf.n == 0 && b.cap > s->wbuf.cap) {
            store_buf_free(&s->wbuf);
            b.n = 0;
            s->wbuf = b;
        } else
            store_buf_free(&b);
        s->syncing = 0;
        if (rc < 0) {
            s->broken = 1;
            snprintf(s->broken_msg, sizeof s->broken_msg, "store: cannot write the log: %s",
                     strerror(e));
        } else {
            s->synced_seq = upto;
            s->seg_bytes += off;
            if (s->seg_bytes >= s->seg_limit) {
                /* the buffer written from now on goes to the next segment */
                uint64_t old = s->seg;
                if (open_segment(s, old + 1) < 0 || checkpoint(s, old) < 0) {
                    s->broken = 1;
                    if (!s->broken_msg[0])
                        snprintf(s->broken_msg, sizeof s->broken_msg,
                                 "store: cannot rotate the log");
                }
            }
        }
        pthread_cond_broadcast(&s->synced_cv);
    }
    return s->synced_seq >= seq ? 0 : -1;
}

/* --- replay -------------------------------------------------------------- */

static int replay_segment(store *s, uint64_t seg)
{
    char path[4096];
    seg_path(s, seg, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = xmalloc(size);
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    size_t pos = 0;
    while (pos + 9 <= got) {
        uint32_t len, crc;
        memcpy(&len, buf + pos, 4);
        memcpy(&crc, buf + pos + 4, 4);
        if (len == 0 || pos + 8 + len > got || store_crc32c(0, buf + pos + 8, len) != crc)
            break; /* a torn tail: the rest was never acknowledged */
        const uint8_t *r = buf + pos + 8;
        size_t rp = 1;
        if (r[0] == REC_SERIES) {
            uint64_t id, kl;
            if (store_get_varint(r, len, &rp, &id) < 0 || store_get_varint(r, len, &rp, &kl) < 0 ||
                rp + kl > len)
                break;
            const char *metric;
            store_tag tags[MAX_TAGS];
            int nt;
            if (!series_by_id(s, id) && parse_key(r + rp, kl, &metric, tags, &nt) == 0)
                add_series(s, id, metric, tags, nt, r + rp, kl, hash_bytes(r + rp, kl));
        } else if (r[0] == REC_POINTS) {
            int64_t prev = 0;
            while (rp < len) {
                uint64_t id, n;
                if (store_get_varint(r, len, &rp, &id) < 0 || store_get_varint(r, len, &rp, &n) < 0)
                    break;
                series *se = series_by_id(s, id);
                for (uint64_t i = 0; i < n; i++) {
                    uint64_t z;
                    double v;
                    if (store_get_varint(r, len, &rp, &z) < 0 || rp + 8 > len) {
                        rp = len;
                        break;
                    }
                    prev += (int64_t)((z >> 1) ^ (uint64_t) - (int64_t)(z & 1));
                    memcpy(&v, r + rp, 8);
                    rp += 8;
                    if (se) head_add(s, se, prev, v, seg);
                }
            }
        }
        pos += 8 + len;
    }
    free(buf);
    return 0;
}

/* --- open / close -------------------------------------------------------- */

static const char *SCHEMA =
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT);"
    "CREATE TABLE IF NOT EXISTS metrics(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS tagsets(id INTEGER PRIMARY KEY, tags BLOB NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, metric INTEGER NOT NULL, tagset "
    "INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, series INTEGER NOT NULL,"
    " t_start INTEGER NOT NULL, t_end INTEGER NOT NULL, n INTEGER NOT NULL, ts_ref INTEGER NOT "
    "NULL,"
    " data BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS times(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, data BLOB NOT "
    "NULL);"
    "CREATE INDEX IF NOT EXISTS chunks_by_series ON chunks(series, t_end);"
    "CREATE INDEX IF NOT EXISTS chunks_by_end ON chunks(t_end);"
    "CREATE INDEX IF NOT EXISTS chunks_by_times ON chunks(ts_ref);"
    "CREATE INDEX IF NOT EXISTS times_by_hash ON times(hash);"
    "INSERT OR IGNORE INTO meta VALUES('format', '" STORE_FORMAT "');";

static sqlite3 *open_db(const store *s, int readonly, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/chunks.db", s->dir);
    sqlite3 *db = NULL;
    int fl = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, &db, fl | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        if (err)
            snprintf(err, errlen, "store: cannot open %s: %s", path,
                     db ? sqlite3_errmsg(db) : "no memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 30000);
    return db;
}

/* Closes a reader connection with the statements it keeps prepared. */
static void close_reader(sqlite3 *db)
{
    if (!db) return;
    sqlite3_stmt *st;
    while ((st = sqlite3_next_stmt(db, NULL))) sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A statement prepared once per reader connection and kept: the hot reads
 * would otherwise spend more in sqlite3_prepare than in reading. */
static sqlite3_stmt *cached_stmt(sqlite3 *db, const char *sql)
{
    for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st))
        if (!sqlite3_stmt_busy(st) && sqlite3_sql(st) && strcmp(sqlite3_sql(st), sql) == 0)
            return st;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        return NULL;
    return st;
}

static sqlite3 *pool_get(store *s)
{
    pthread_mutex_lock(&s->pool_mu);
    sqlite3 *db = s->npool ? s->pool[--s->npool] : NULL;
    pthread_mutex_unlock(&s->pool_mu);
    if (!db) {
        db = open_db(s, 1, NULL, 0);
        if (db) sqlite3_exec(db, "PRAGMA cache_size=-1024", NULL, NULL, NULL);
    }
    return db;
}

static void pool_put(store *s, sqlite3 *db)
{
    if (!db) return;
    pthread_mutex_lock(&s->pool_mu);
    if (s->npool < 8) {
        if (s->npool == s->cappool) {
            s->cappool = s->cappool ? s->cappool * 2 : 4;
            s->pool = xrealloc(s->pool, (size_t)s->cappool * sizeof *s->pool);
        }
        s->pool[s->npool++] = db;
        db = NULL;
    }
    pthread_mutex_unlock(&s->pool_mu);
    close_reader(db);
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
    return 0;
}

static int load_series(store *s, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT s.id, m.name, t.tags FROM series s JOIN metrics m ON m.id = s.metric"
            " JOIN tagsets t ON t.id = s.tagset ORDER BY s.id",
            -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "store: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    store_buf k = {0};
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        const char *m = (const char *)sqlite3_column_text(st, 1);
        const uint8_t *t = sqlite3_column_blob(st, 2);
        size_t tl = (size_t)sqlite3_column_bytes(st, 2);
        if (!m || !*m) continue;
        k.n = 0;
        size_t ml = strlen(m) + 1;
        store_buf_reserve(&k, ml + tl);
        memcpy(k.p, m, ml);
        if (tl) memcpy(k.p + ml, t, tl);
        k.n = ml + tl;
        const char *metric;
        store_tag tags[MAX_TAGS];
        int nt;
        if (parse_key(k.p, k.n, &metric, tags, &nt) < 0) continue;
        series *se = add_series(s, id, metric, tags, nt, k.p, k.n, hash_bytes(k.p, k.n));
        se->persisted = 1;
    }
    sqlite3_finalize(st);
    store_buf_free(&k);
    if (sqlite3_prepare_v2(s->db, "SELECT count(*), coalesce(sum(n),0) FROM chunks", -1, &st,
                           NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) {
            s->db_chunks = (uint64_t)sqlite3_column_int64(st, 0);
            s->db_points = (uint64_t)sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    return 0;
}

store *store_open(const store_config *c, char *err, size_t errlen)
{
    if (!c || !c->dir || !*c->dir) {
        snprintf(err, errlen, "store: no directory given");
        return NULL;
    }
    if (mkdir_p(c->dir) < 0) {
        snprintf(err, errlen, "store: cannot create %s: %s", c->dir, strerror(errno));
        return NULL;
    }
    store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "store: out of memory");
        return NULL;
    }
    s->dir = xstrdup(c->dir);
    s->cfg = *c;
    s->cfg.dir = s->dir;
    s->wal_fd = -1;
    s->opened_ms = now_ms();
    s->lock_fd = -1;
    s->next_id = 1;
    s->head_max = HEAD_MAX;
    s->max_ts = INT64_MIN;
    s->seg_limit = SEG_LIMIT;
    const char *sl = getenv("JOBSCOPE_STORE_SEGMENT_BYTES"); /* tests: rotate early */
    if (sl && atoll(sl) > 0) s->seg_limit = (uint64_t)atoll(sl);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->wmu, NULL);
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_cond_init(&s->synced_cv, NULL);

    char path[4096];
    snprintf(path, sizeof path, "%s/LOCK", s->dir);
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        snprintf(err, errlen, "store: cannot use %s: %s", s->dir, strerror(errno));
        goto fail;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen, "store: %s is in use by another process", s->dir);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/wal", s->dir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "store: cannot create %s: %s", path, strerror(errno));
        goto fail;
    }
    if (!(s->db = open_db(s, 0, err, errlen))) goto fail;
    /* page size and auto_vacuum only take effect on a new database */
    if (db_exec(s->db,
                "PRAGMA page_size=32768; PRAGMA auto_vacuum=INCREMENTAL;"
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                "PRAGMA wal_autocheckpoint=64; PRAGMA journal_size_limit=8388608;"
                "PRAGMA cache_size=-2048;",
                err, errlen) < 0 ||
        db_exec(s->db, SCHEMA, err, errlen) < 0)
        goto fail;
    {
        sqlite3_stmt *st;
        const char *fmt = NULL;
        if (sqlite3_prepare_v2(s->db, "SELECT v FROM meta WHERE k='format'", -1, &st, NULL) ==
            SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) fmt = (const char *)sqlite3_column_text(st, 0);
            int ok = fmt && !strcmp(fmt, STORE_FORMAT);
            if (!ok)
                snprintf(err, errlen,
                         "store: %s/chunks.db has format %s; this jobscope reads format %s", s->dir,
                         fmt ? fmt : "?", STORE_FORMAT);
            sqlite3_finalize(st);
            if (!ok) goto fail;
        }
    }
    if (sqlite3_prepare_v2(
            s->db,
            "INSERT INTO chunks(series, t_start, t_end, n, ts_ref, data) VALUES(?,?,?,?,?,?)", -1,
            &s->ins_chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO times(hash, data) VALUES(?,?)", -1, &s->ins_time,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "SELECT id, data FROM times WHERE hash=?", -1, &s->sel_time,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO metrics(name) VALUES(?)", -1, &s->ins_name, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "SELECT id FROM metrics WHERE name=?", -1, &s->sel_name, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO tagsets(tags) VALUES(?)", -1, &s->ins_tagset,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "SELECT id FROM tagsets WHERE tags=?", -1, &s->sel_tagset,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO series(id, metric, tagset) VALUES(?,?,?)",
                           -1, &s->ins_series, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "store: %s", sqlite3_errmsg(s->db));
        goto fail;
    }
    if (load_series(s, err, errlen) < 0) goto fail;

    uint64_t *segs;
    size_t nseg = list_segments(s, &segs);
    for (size_t i = 0; i < nseg; i++) replay_segment(s, segs[i]);
    uint64_t next = nseg ? segs[nseg - 1] + 1 : 1;
    free(segs);
    if (open_segment(s, next) < 0) {
        snprintf(err, errlen, "store: cannot create the log in %s/wal: %s", s->dir,
                 strerror(errno));
        goto fail;
    }
    /* what was replayed goes to SQLite now, so the old segments can go */
    pthread_mutex_lock(&s->mu);
    int rc = nseg ? checkpoint(s, next) : 0;
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        snprintf(err, errlen, "%s", s->broken_msg);
        goto fail;
    }
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(store *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    if (s->db && !s->broken) {
        wait_durable(s, s->put_seq);
        if (!s->broken && s->wal_fd >= 0) checkpoint(s, s->seg + 1);
    }
    pthread_mutex_unlock(&s->mu);
    if (s->wal_fd >= 0) close(s->wal_fd);
    sqlite3_finalize(s->ins_chunk);
    sqlite3_finalize(s->ins_series);
    sqlite3_finalize(s->ins_time);
    sqlite3_finalize(s->sel_time);
    sqlite3_finalize(s->ins_name);
    sqlite3_finalize(s->sel_name);
    sqlite3_finalize(s->ins_tagset);
    sqlite3_finalize(s->sel_tagset);
    for (int i = 0; i < s->npool; i++) close_reader(s->pool[i]);
    free(s->pool);
    if (s->db) {
        sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        sqlite3_close(s->db);
    }
    for (size_t i = 1; i < s->by_id_cap; i++) {
        series *se = s->by_id[i];
        if (!se) continue;
        for (frozen *f = se->fz_first; f;) {
            frozen *nx = f->next_s;
            free(f->tdata);
            free(f->vdata);
            free(f);
            f = nx;
        }
        free(se->hts);
        free(se->hval);
        free(se->tags);
        free(se->key);
        free(se);
    }
    free(s->by_id);
    free(s->tab);
    free(s->dirty);
    strmap_free(&s->metrics, 1);
    strmap_free(&s->tagks, 0);
    strmap_free(&s->tagvs, 0);
    store_buf_free(&s->wbuf);
    if (s->lock_fd >= 0) close(s->lock_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->wmu);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_cond_destroy(&s->synced_cv);
    free(s->dir);
    free(s);
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
    int rc = wait_durable(s, ticket);
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
    size_t *koff = xmalloc((SLICE + 1) * sizeof *koff);
    uint64_t *kh = xmalloc(SLICE * sizeof *kh);
    series **ser = xmalloc(SLICE * sizeof *ser);
    store_tag sorted[MAX_TAGS];
    ptags = NULL;
    pnt = -1;
    uint64_t my = 0;
    int rc = 0;
    for (size_t base = 0; base < n && rc == 0; base += SLICE) {
        size_t m = n - base < SLICE ? n - base : SLICE;
        const store_point *sp = pts + base;
        keys.n = 0;
        for (size_t i = 0; i < m; i++) {
            const store_point *p = &sp[i];
            if (p->tags != ptags || p->ntags != pnt) {
                if (p->ntags) memcpy(sorted, p->tags, (size_t)p->ntags * sizeof *sorted);
                for (int a = 1; a < p->ntags; a++) /* insertion sort: a few tags */
                    for (int b = a; b > 0 && cmp_tag(&sorted[b - 1], &sorted[b]) > 0; b--) {
                        store_tag t = sorted[b];
                        sorted[b] = sorted[b - 1];
                        sorted[b - 1] = t;
                    }
                make_key(&tagpart, "", sorted, p->ntags); /* NUL (k NUL v NUL)* */
                ptags = p->tags;
                pnt = p->ntags;
            }
            size_t ml = strlen(p->metric);
            koff[i] = keys.n;
            store_buf_reserve(&keys, ml + tagpart.n);
            memcpy(keys.p + keys.n, p->metric, ml);
            memcpy(keys.p + keys.n + ml, tagpart.p, tagpart.n);
            keys.n += ml + tagpart.n;
            kh[i] = hash_bytes(keys.p + koff[i], keys.n - koff[i]);
        }
        koff[m] = keys.n;

        pthread_mutex_lock(&s->mu);
        if (s->broken) {
            snprintf(err, errlen, "%s", s->broken_msg);
            pthread_mutex_unlock(&s->mu);
            rc = -1;
            break;
        }
        series *prev = NULL;
        for (size_t i = 0; i < m; i++) {
            const uint8_t *k = keys.p + koff[i];
            size_t kl = koff[i + 1] - koff[i];
            if (prev && prev->hash == kh[i] && prev->keylen == kl &&
                memcmp(prev->key, k, kl) == 0) {
                ser[i] = prev;
                continue;
            }
            series *se = find_series(s, k, kl, kh[i]);
            if (!se) {
                const char *metric;
                store_tag tags[MAX_TAGS];
                int nt;
                parse_key(k, kl, &metric, tags, &nt);
                se = add_series(s, s->next_id, metric, tags, nt, k, kl, kh[i]);
                se->last_known = -1; /* new: known to have no points */
                log_series(s, se);
            }
            ser[i] = prev = se;
        }
        /* one log record: runs of points of one series */
        size_t at = begin_record(&s->wbuf, REC_POINTS);
        int64_t pts_prev = 0;
        for (size_t i = 0; i < m;) {
            size_t j = i + 1;
            while (j < m && ser[j] == ser[i]) j++;
            store_buf_varint(&s->wbuf, ser[i]->id);
            store_buf_varint(&s->wbuf, j - i);
            store_buf_reserve(&s->wbuf, (j - i) * 18);
            for (size_t k = i; k < j; k++) {
                uint64_t d = (uint64_t)sp[k].ts_ms - (uint64_t)pts_prev;
                pts_prev = sp[k].ts_ms;
                store_buf_varint(&s->wbuf, (d << 1) ^ (uint64_t)((int64_t)d >> 63));
                memcpy(s->wbuf.p + s->wbuf.n, &sp[k].value, 8);
                s->wbuf.n += 8;
            }
            i = j;
        }
        end_record(&s->wbuf, at);
        for (size_t i = 0; i < m; i++) head_add(s, ser[i], sp[i].ts_ms, sp[i].value, s->seg);
        my = ++s->put_seq;
        if (s->pend_bytes >= FLUSH_BYTES || s->pend_n >= FLUSH_CHUNKS) flush_pending(s);
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

/* --- reads --------------------------------------------------------------- */

typedef struct pointbuf {
    int64_t *ts;
    double *val;
    size_t n, cap;
} pointbuf;

static void pb_push(pointbuf *b, int64_t t, double v)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        b->ts = xrealloc(b->ts, b->cap * sizeof *b->ts);
        b->val = xrealloc(b->val, b->cap * sizeof *b->val);
    }
    b->ts[b->n] = t;
    b->val[b->n++] = v;
}

static void points_reserve(store_points *o, size_t more)
{
    if (o->n + more <= o->cap) return;
    size_t c = o->cap ? o->cap : 256;
    while (c < o->n + more) c *= 2;
    o->ts = xrealloc(o->ts, c * sizeof *o->ts);
    o->val = xrealloc(o->val, c * sizeof *o->val);
    o->cap = c;
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
 * sorted, the newest value of a timestamp winning. */
static void merge_out(pointbuf *b, int64_t from, int64_t to, store_points *out)
{
    int sorted = 1;
    for (size_t i = 1; i < b->n && sorted; i++)
        if (b->ts[i] <= b->ts[i - 1]) sorted = 0;
    if (sorted) {
        size_t lo = 0, hi = b->n;
        while (lo < b->n && b->ts[lo] < from) lo++;
        while (hi > lo && b->ts[hi - 1] > to) hi--;
        if (hi == lo) return;
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
            return;
        }
        points_reserve(out, hi - lo);
        memcpy(out->ts + out->n, b->ts + lo, (hi - lo) * sizeof *out->ts);
        memcpy(out->val + out->n, b->val + lo, (hi - lo) * sizeof *out->val);
        out->n += hi - lo;
        return;
    }
    ord *o = xmalloc(b->n * sizeof *o);
    size_t m = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->ts[i] >= from && b->ts[i] <= to) {
            o[m].ts = b->ts[i];
            o[m].i = i;
            m++;
        }
    qsort(o, m, sizeof *o, cmp_ord);
    points_reserve(out, m);
    for (size_t i = 0; i < m; i++) {
        if (i + 1 < m && o[i + 1].ts == o[i].ts) continue; /* a newer value follows */
        out->ts[out->n] = o[i].ts;
        out->val[out->n++] = b->val[o[i].i];
    }
    free(o);
}

/* Decodes the frozen chunks and head of se within [from, to] into mem. */
static void snapshot_memory(series *se, int64_t from, int64_t to, pointbuf *mem)
{
    for (frozen *f = se->fz_first; f; f = f->next_s) {
        if (f->t1 < from || f->t0 > to) continue;
        store_parts_decode(f->tdata, f->tlen, f->vdata, f->vlen, &mem->ts, &mem->val, &mem->n,
                           &mem->cap);
    }
    for (uint32_t i = 0; i < se->hn; i++)
        if (se->hts[i] >= from && se->hts[i] <= to) pb_push(mem, se->hts[i], se->hval[i]);
}

static int read_db(store *s, uint64_t id, int64_t from, int64_t to, pointbuf *b)
{
    sqlite3 *db = pool_get(s);
    if (!db) return -1;
    int rc = 0;
    sqlite3_stmt *st =
        cached_stmt(db, "SELECT t.data, c.data FROM chunks c JOIN times t ON t.id = c.ts_ref"
                        " WHERE c.series=? AND c.t_end>=? AND c.t_start<=? ORDER BY c.id");
    if (!st) {
        pool_put(s, db);
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
    pool_put(s, db);
    return rc;
}

int store_read(store *s, uint64_t series_id, int64_t from_ms, int64_t to_ms, store_points *out)
{
    if (!s || !out) return -1;
    if (from_ms > to_ms) return 0;
    pointbuf mem = {0}, all = {0};
    pthread_mutex_lock(&s->mu);
    series *se = series_by_id(s, series_id);
    if (se) snapshot_memory(se, from_ms, to_ms, &mem);
    pthread_mutex_unlock(&s->mu);
    if (!se) return -1;
    /* SQLite after memory: a chunk committed in between is read twice (same
     * points), never missed */
    int rc = read_db(s, series_id, from_ms, to_ms, &all);
    for (size_t i = 0; i < mem.n; i++) pb_push(&all, mem.ts[i], mem.val[i]);
    merge_out(&all, from_ms, to_ms, out);
    free(mem.ts);
    free(mem.val);
    free(all.ts);
    free(all.val);
    return rc;
}

int store_last(store *s, uint64_t series_id, int64_t *ts_ms, double *value)
{
    if (!s) return -1;
    pthread_mutex_lock(&s->mu);
    series *se = series_by_id(s, series_id);
    if (!se) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    if (se->last_known) {
        int found = se->last_known > 0;
        if (found) {
            *ts_ms = se->last_ts;
            *value = se->last_val;
        }
        pthread_mutex_unlock(&s->mu);
        return found;
    }
    pointbuf mem = {0}, all = {0};
    snapshot_memory(se, INT64_MIN, INT64_MAX, &mem);
    uint32_t ver = se->version;
    pthread_mutex_unlock(&s->mu);
    /* the newest chunk in SQLite by end time (and every chunk ending then) */
    int rc = 0;
    sqlite3 *db = pool_get(s);
    sqlite3_stmt *st = NULL;
    if (!db ||
        sqlite3_prepare_v2(db,
                           "SELECT t.data, c.data FROM chunks c JOIN times t ON t.id = c.ts_ref"
                           " WHERE c.series=?1 AND c.t_end="
                           "(SELECT max(t_end) FROM chunks WHERE series=?1) ORDER BY c.id",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = -1;
    } else {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)series_id);
        while (sqlite3_step(st) == SQLITE_ROW)
            if (store_parts_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                                   sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
                                   &all.ts, &all.val, &all.n, &all.cap) < 0)
                rc = -1;
    }
    sqlite3_finalize(st);
    pool_put(s, db);
    for (size_t i = 0; i < mem.n; i++) pb_push(&all, mem.ts[i], mem.val[i]);
    int found = 0;
    if (rc == 0 && all.n) {
        size_t best = 0;
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
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        if (se->version == ver) {
            se->last_known = found ? 1 : -1;
            if (found) {
                se->last_ts = *ts_ms;
                se->last_val = *value;
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    return rc < 0 ? -1 : found;
}

void store_points_free(store_points *p)
{
    if (!p) return;
    free(p->ts);
    free(p->val);
    memset(p, 0, sizeof *p);
}

int store_series_of(store *s, const char *metric, store_series_cb cb, void *arg)
{
    if (!s || !metric) return -1;
    pthread_mutex_lock(&s->mu);
    strent *e = strmap_find(&s->metrics, metric, hash_bytes(metric, strlen(metric)), 0);
    mlist *l = e ? e->val : NULL;
    size_t n = l ? l->n : 0;
    series **v = xmalloc((n ? n : 1) * sizeof *v);
    if (n) memcpy(v, l->v, n * sizeof *v);
    pthread_mutex_unlock(&s->mu);
    /* series are never freed while the store is open, and never change */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        store_series ss = {v[i]->id, v[i]->metric, v[i]->tags, v[i]->ntags};
        rc = cb(arg, &ss);
    }
    free(v);
    return rc;
}

uint64_t store_metric_version(store *s, const char *metric)
{
    if (!s || !metric) return 0;
    pthread_mutex_lock(&s->mu);
    strent *e = strmap_find(&s->metrics, metric, hash_bytes(metric, strlen(metric)), 0);
    mlist *l = e ? e->val : NULL;
    uint64_t v = (l ? l->version : 0) + s->drop_gen;
    pthread_mutex_unlock(&s->mu);
    return v;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int store_names(store *s, enum store_name_kind kind, const char *prefix, int max, char ***out)
{
    if (!s || !out) return -1;
    *out = NULL;
    if (!prefix) prefix = "";
    size_t pl = strlen(prefix);
    pthread_mutex_lock(&s->mu);
    strmap *m = kind == STORE_METRICS ? &s->metrics : kind == STORE_TAGKS ? &s->tagks : &s->tagvs;
    const char **v = xmalloc((m->n ? m->n : 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].s && strncmp(m->slots[i].s, prefix, pl) == 0) v[n++] = m->slots[i].s;
    qsort(v, n, sizeof *v, cmp_str);
    if (max >= 0 && n > (size_t)max) n = (size_t)max;
    char **r = xmalloc((n ? n : 1) * sizeof *r);
    for (size_t i = 0; i < n; i++) r[i] = xstrdup(v[i]);
    pthread_mutex_unlock(&s->mu);
    free(v);
    *out = r;
    return (int)n;
}

/* --- maintenance --------------------------------------------------------- */

static long long dir_bytes(const char *dir)
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
            total += dir_bytes(p);
        else if (S_ISREG(st.st_mode))
            total += st.st_size;
    }
    closedir(d);
    return total;
}

static void forget_last(store *s)
{
    pthread_mutex_lock(&s->mu);
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = series_by_id(s, id);
        if (se) {
            se->last_known = 0;
            se->version++;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

/* Deletes the rows of `times` in refs that no chunk refers to any more.  In
 * a transaction, under wmu. */
static int gc_times(store *s, const sqlite3_int64 *refs, size_t n)
{
    sqlite3_stmt *st;
    if (!n) return 0;
    if (sqlite3_prepare_v2(
            s->db,
            "DELETE FROM times WHERE id=?1 AND NOT EXISTS (SELECT 1 FROM chunks WHERE ts_ref=?1)",
            -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        sqlite3_bind_int64(st, 1, refs[i]);
        if (sqlite3_step(st) != SQLITE_DONE) rc = -1;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

typedef struct refs {
    sqlite3_int64 *v;
    size_t n, cap;
} refs;
static void refs_add(refs *r, sqlite3_int64 id)
{
    if (r->n && r->v[r->n - 1] == id) return;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->v = xrealloc(r->v, r->cap * sizeof *r->v);
    }
    r->v[r->n++] = id;
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
        refs tr = {0};
        snprintf(sql, sizeof sql, "SELECT DISTINCT ts_ref FROM chunks WHERE %s", where);
        if (*nch && sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, arg);
            while (sqlite3_step(st) == SQLITE_ROW) refs_add(&tr, sqlite3_column_int64(st, 0));
            sqlite3_finalize(st);
        }
        snprintf(sql, sizeof sql, "DELETE FROM chunks WHERE %s", where);
        if (*nch && db_exec(s->db, "BEGIN IMMEDIATE", NULL, 0) == 0) {
            if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
                sqlite3_bind_int64(st, 1, arg);
                rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
                sqlite3_finalize(st);
            } else {
                rc = -1;
            }
            if (rc == 0) rc = gc_times(s, tr.v, tr.n);
            if (rc == 0)
                rc = db_exec(s->db, "COMMIT", NULL, 0);
            else
                db_exec(s->db, "ROLLBACK", NULL, 0);
        }
        free(tr.v);
    }
    pthread_mutex_unlock(&s->wmu);
    if (rc == 0 && *nch) {
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
                       store_buf *enc, store_buf *enc2, uint64_t *saved_chunks, refs *tsrefs)
{
    pointbuf b = {0};
    sqlite3_int64 ids[4096];
    int nids = 0, rc = 0;
    sqlite3_bind_int64(sel, 1, (sqlite3_int64)g->series);
    sqlite3_bind_int64(sel, 2, g->part * PART_MS);
    sqlite3_bind_int64(sel, 3, g->part * PART_MS + PART_MS - 1);
    while (sqlite3_step(sel) == SQLITE_ROW && nids < 4096) {
        ids[nids++] = sqlite3_column_int64(sel, 0);
        refs_add(tsrefs, sqlite3_column_int64(sel, 3));
        if (store_parts_decode(sqlite3_column_blob(sel, 2), (size_t)sqlite3_column_bytes(sel, 2),
                               sqlite3_column_blob(sel, 1), (size_t)sqlite3_column_bytes(sel, 1),
                               &b.ts, &b.val, &b.n, &b.cap) < 0)
            rc = -1;
    }
    sqlite3_reset(sel);
    if (rc == 0 && nids > 1 && b.n) {
        store_points m = {0};
        merge_out(&b, INT64_MIN, INT64_MAX, &m);
        store_ts_encode(m.ts, m.n, ZLEVEL_SETTLE, enc);
        store_val_encode(m.val, m.n, ZLEVEL_SETTLE, enc2);
        for (int i = 0; i < nids && rc == 0; i++) {
            sqlite3_bind_int64(del, 1, ids[i]);
            if (sqlite3_step(del) != SQLITE_DONE) rc = -1;
            sqlite3_reset(del);
        }
        if (rc == 0)
            rc = insert_chunk(s, g->series, m.ts[0], m.ts[m.n - 1], m.n, enc->p, enc->n, enc2->p,
                              enc2->n);
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
 * partition is over or when it has 4 or more. */
static int compact(store *s)
{
    int64_t now = now_ms();
    int64_t delay_ms = (int64_t)(s->cfg.settle_delay_s * 1000.0);
    pthread_mutex_lock(&s->mu);
    int64_t horizon = s->max_ts > now ? s->max_ts : now;
    pthread_mutex_unlock(&s->mu);
    sqlite3 *db = pool_get(s);
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
        snprintf(sql, sizeof sql,
                 "SELECT series, (t_end - ((t_end %% %lld) + %lld) %% %lld) / %lld AS p, count(*) "
                 "FROM chunks "
                 "GROUP BY series, p HAVING count(*) > 1",
                 PART_MS, PART_MS, PART_MS, PART_MS);
    else
        snprintf(sql, sizeof sql,
                 "SELECT ?1, ?2, count(*) FROM chunks WHERE series=?1 AND t_end>=?3 AND t_end<=?4");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        pool_put(s, db);
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
        keep = xmalloc(ncand * sizeof *keep);
    }
    for (size_t ci = 0; full || ci < ncand; ci++) {
        if (!full) {
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)cand[ci].series);
            sqlite3_bind_int64(st, 2, cand[ci].part);
            sqlite3_bind_int64(st, 3, cand[ci].part * PART_MS);
            sqlite3_bind_int64(st, 4, cand[ci].part * PART_MS + PART_MS - 1);
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
        if ((!closed && cnt < 4) || busy) {
            if (keep)
                keep[nkeep++] = g; /* look again when it closes or is quiet */
            else {
                pthread_mutex_lock(&s->mu);
                add_dirty_at(s, g.series, g.part, g.at);
                pthread_mutex_unlock(&s->mu);
            }
            continue;
        }
        if (ng == cap) {
            cap = cap ? cap * 2 : 256;
            gs = xrealloc(gs, cap * sizeof *gs);
        }
        gs[ng++] = g;
    }
    sqlite3_finalize(st);
    pool_put(s, db);
    free(cand);
    if (nkeep) {
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < nkeep; i++)
            add_dirty_at(s, keep[i].series, keep[i].part, keep[i].at);
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
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT c.id, c.data, t.data, c.ts_ref FROM chunks c JOIN times t ON t.id = c.ts_ref"
            " WHERE c.series=? AND c.t_end>=? AND c.t_end<=? ORDER BY c.id",
            -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "DELETE FROM chunks WHERE id=?", -1, &del, NULL) != SQLITE_OK)
        rc = -1;
    pthread_mutex_unlock(&s->wmu);
    for (size_t i = 0; i < ng && rc == 0;) {
        /* small transactions: the ingest path's flushes wait for wmu */
        uint64_t saved = 0;
        refs tr = {0};
        pthread_mutex_lock(&s->wmu);
        rc = db_exec(s->db, "BEGIN IMMEDIATE", NULL, 0);
        size_t end = i + 256 < ng ? i + 256 : ng;
        for (; i < end && rc == 0; i++)
            rc = merge_group(s, sel, del, &gs[i], &enc, &enc2, &saved, &tr);
        if (rc == 0) rc = gc_times(s, tr.v, tr.n);
        free(tr.v);
        if (rc == 0)
            rc = db_exec(s->db, "COMMIT", NULL, 0);
        else
            db_exec(s->db, "ROLLBACK", NULL, 0);
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
    return rc;
}

int store_maintain(store *s)
{
    if (!s) return -1;
    int rc = 0;
    /* heads of partitions that are over are cut, and what is frozen goes to
     * SQLite, so that retention and settling see it */
    pthread_mutex_lock(&s->mu);
    int64_t now = now_ms(), horizon = s->max_ts > now ? s->max_ts : now;
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = series_by_id(s, id);
        if (se && se->hn &&
            part_of(se->hts[se->hn - 1]) * PART_MS + PART_MS + 5 * 60 * 1000 <= horizon)
            cut_prefix(s, se, se->hn);
    }
    if (flush_pending(s) < 0) rc = -1;
    pthread_mutex_unlock(&s->mu);
    long long np, nc;
    int deleted = 0;
    if (s->cfg.retention_s > 0) {
        int64_t cutoff = now_ms() - (int64_t)(s->cfg.retention_s * 1000.0);
        if (delete_chunks(s, "t_end < ?1", cutoff, &np, &nc) < 0) rc = -1;
        if (nc) deleted = 1;
        /* points still in memory past the cutoff */
        pthread_mutex_lock(&s->mu);
        for (uint64_t id = 1; id < s->next_id; id++) {
            series *se = series_by_id(s, id);
            if (!se) continue;
            uint32_t k = 0;
            while (k < se->hn && se->hts[k] < cutoff) k++;
            if (k) {
                memmove(se->hts, se->hts + k, (se->hn - k) * sizeof *se->hts);
                memmove(se->hval, se->hval + k, (se->hn - k) * sizeof *se->hval);
                se->hn -= k;
                s->head_points -= k;
                s->drop_gen++;
                deleted = 1;
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (compact(s) < 0) rc = -1;
    if (deleted) forget_last(s);
    reclaim(s);
    if (s->cfg.max_bytes > 0) {
        for (int round = 0; round < 64; round++) {
            long long size = dir_bytes(s->dir);
            if (size <= s->cfg.max_bytes) break;
            /* drop the oldest chunks: about the excess, at the average bytes per point */
            long long excess = size - s->cfg.max_bytes;
            pthread_mutex_lock(&s->mu);
            double per_point = s->db_points ? (double)size / (double)s->db_points : 0;
            pthread_mutex_unlock(&s->mu);
            sqlite3 *db = pool_get(s);
            sqlite3_stmt *st;
            int64_t cut = INT64_MIN;
            double acc = 0;
            if (per_point > 0 && db &&
                sqlite3_prepare_v2(db, "SELECT t_end, n FROM chunks ORDER BY t_end", -1, &st,
                                   NULL) == SQLITE_OK) {
                while (sqlite3_step(st) == SQLITE_ROW) {
                    cut = sqlite3_column_int64(st, 0);
                    acc += sqlite3_column_int64(st, 1) * per_point;
                    if (acc >= excess) break;
                }
                sqlite3_finalize(st);
            }
            pool_put(s, db);
            if (cut == INT64_MIN) break; /* nothing left in SQLite to drop */
            if (delete_chunks(s, "t_end <= ?1", cut, &np, &nc) < 0) {
                rc = -1;
                break;
            }
            deleted = 1;
            forget_last(s);
            reclaim(s);
            if (!nc) break;
        }
    }
    return rc;
}

void store_stats_get(store *s, store_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    st->series = s->nseries;
    st->points = s->db_points + s->head_points;
    st->chunks = s->db_chunks + s->pend_n;
    for (frozen *f = s->pend_first; f; f = f->next_p) st->points += f->n;
    pthread_mutex_unlock(&s->mu);
    st->disk_bytes = dir_bytes(s->dir);
}
