/* store.c — the embedded time-series store of `jobscope serve` (store.h,
 * docs/store.md).
 *
 * A store directory holds:
 *   chunks.db    SQLite: the series table (id, metric, tags) and the chunks
 *                table (series, part, seq, t_start, t_end, n, data):
 *                compressed runs of points of one series within one 2-hour
 *                partition (codec.c), kept in (series, part, seq) order
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
 * readers use their own read-only SQLite connections from a pool.
 *
 * The code is split by role (store_priv.h has what the parts share):
 * store.c (open, close, SQLite connections, stats), store_index.c (the
 * series index), store_head.c (put, heads, frozen chunks, flushes),
 * store_wal.c (the log), store_read.c (reads), store_maintain.c
 * (retention, settling, size limit), codec.c (chunk coding). */
#include "store/store_priv.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* One line of the store's own (store_config.log, else stderr). */
void store_log(store *s, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "store: ");
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (s->cfg.log)
        s->cfg.log(s->cfg.log_arg, line);
    else
        js_log(1, NULL, "%s", line);
}

/* --- SQLite ------------------------------------------------------------- */

int store_db_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        if (err) snprintf(err, errlen, "store: %s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* Format 6 (docs/store.md "Files"): chunks are a WITHOUT ROWID table kept
 * in (series, partition, seq) order, seq the age of a chunk within its
 * series and partition, so a series' chunks are found by the table's own
 * key: no index of chunks by series (~22 bytes a chunk, a fifth of what a
 * million series of ten points took).  A chunk's first and last timestamps
 * are kept as offsets in its partition (3 bytes each instead of 6);
 * t_start and t_end are virtual columns computed from them.  Value parts
 * over VAL_INLINE_MAX bytes are rows of `vals` (store_priv.h).  Format 5 (a
 * rowid table and that index) and format 4 (format 5 without packed
 * timestamp parts, which format 6 reads too) are converted at open, each
 * chunk keeping its rank by age.  Format 3 kept tag sets in a table of
 * their own (a unique index of every tag set: 84 bytes a series when each
 * series has its own, as at a site collector) and indexes of chunks by end
 * time and by timestamp part (27 bytes a chunk); it is converted at open
 * too. */
#define CHUNKS_6                                                                                   \
    "(series INTEGER NOT NULL, part INTEGER NOT NULL, seq INTEGER NOT NULL, s INTEGER NOT NULL, "  \
    "e INTEGER NOT NULL, n INTEGER NOT NULL, ts_ref INTEGER NOT NULL, data BLOB NOT NULL, "        \
    "t_start AS (part * 7200000 + s), t_end AS (part * 7200000 + e), "                             \
    "PRIMARY KEY(series, part, seq)) WITHOUT ROWID;"
#define VALS_6    "(id INTEGER PRIMARY KEY, data BLOB NOT NULL);"
#define TAGKEYS_8 "(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
static const char *SCHEMA =
    "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);"
    "CREATE TABLE metrics(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE series(id INTEGER PRIMARY KEY, metric INTEGER NOT NULL, tags BLOB NOT NULL);"
    "CREATE TABLE tagkeys" TAGKEYS_8 /* */
    "CREATE TABLE chunks" CHUNKS_6
    "CREATE TABLE times(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE TABLE vals" VALS_6 /* */
    "CREATE INDEX times_by_hash ON times(hash);"
    "INSERT INTO meta VALUES('format', '" STORE_FORMAT "');";

static const char *CONVERT_3 =
    "BEGIN IMMEDIATE;"
    "CREATE TABLE series4(id INTEGER PRIMARY KEY, metric INTEGER NOT NULL, tags BLOB NOT NULL);"
    "INSERT INTO series4 SELECT s.id, s.metric, t.tags FROM series s JOIN tagsets t ON t.id = "
    "s.tagset;"
    "DROP TABLE series;"
    "ALTER TABLE series4 RENAME TO series;"
    "DROP TABLE tagsets;"
    "DROP INDEX IF EXISTS chunks_by_end;"
    "DROP INDEX IF EXISTS chunks_by_times;"
    "UPDATE meta SET v='4' WHERE k='format';"
    "COMMIT;";

/* Formats 4 and 5 to 6: the chunks of a series in one partition keep their
 * order by age (their rowid) as seq 1, 2, ... */
#define PART_OF_END "((t_end - ((t_end % 7200000) + 7200000) % 7200000) / 7200000)"
_Static_assert(PART_MS == 7200000, "PART_OF_END is store_part_of(t_end) in SQL");
#define VAL_INLINE_MAX_S "512"
_Static_assert(VAL_INLINE_MAX == 512, "VAL_INLINE_MAX_S is VAL_INLINE_MAX");
static const char *CONVERT_5 =
    "BEGIN IMMEDIATE;"
    "CREATE TABLE chunks6" CHUNKS_6 /* */
    "CREATE TABLE vals" VALS_6      /* large value parts keep their chunk's old id */
    "INSERT INTO vals SELECT id, data FROM chunks WHERE length(data) > " VAL_INLINE_MAX_S ";"
    "INSERT INTO chunks6(series, part, seq, s, e, n, ts_ref, data) SELECT series, p, "
    "row_number() OVER (PARTITION BY series, p ORDER BY id), t_start - p * 7200000, t_end - p * "
    "7200000, n, ts_ref, CASE WHEN length(data) > " VAL_INLINE_MAX_S " THEN id ELSE data END "
    "FROM (SELECT *, " PART_OF_END " AS p FROM chunks);"
    "DROP INDEX IF EXISTS chunks_by_series;"
    "DROP TABLE chunks;"
    "ALTER TABLE chunks6 RENAME TO chunks;"
    "UPDATE meta SET v='6' WHERE k='format';"
    "COMMIT;";

/* Format 6 to 7: the tables are the same; the log may now hold POINTS_C
 * records (store_priv.h), which a jobscope reading format 6 would take for
 * damage and set aside: the new number makes it refuse the store instead. */
static const char *CONVERT_6 = "UPDATE meta SET v='7' WHERE k='format';";

/* Format 7 to 8: a series row's tags may name their keys by number, rows of
 * `tagkeys` (store_put.c tags_row): 0, then (varint key id, value NUL)*,
 * ~10 bytes a series less at a site collector's million.  Rows as format 7
 * wrote them ((key NUL value NUL)*, never starting with NUL) read as
 * before; a jobscope reading format 7 would misread the new ones: the new
 * number makes it refuse the store instead. */
static const char *CONVERT_7 = "BEGIN IMMEDIATE;"
                               "CREATE TABLE IF NOT EXISTS tagkeys" TAGKEYS_8 /* */
                               "UPDATE meta SET v='8' WHERE k='format';"
                               "COMMIT;";

/* Format 8 to 9: the tables are the same; the log may now hold POINTS_G
 * records (store_priv.h), which a jobscope reading format 8 would take for
 * damage and set aside: the new number makes it refuse the store instead. */
static const char *CONVERT_8 = "UPDATE meta SET v='9' WHERE k='format';";

/* The store's format ("4"), NULL for a new database (malloc'ed). */
static char *db_format(sqlite3 *db)
{
    sqlite3_stmt *st;
    char *fmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k='format'", -1, &st, NULL) != SQLITE_OK)
        return NULL; /* no meta table: new */
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        fmt = strdup((const char *)sqlite3_column_text(st, 0));
    else
        fmt = strdup("?");
    sqlite3_finalize(st);
    return fmt;
}

sqlite3 *store_db_open(const store *s, int readonly, char *err, size_t errlen)
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
void store_db_close_reader(sqlite3 *db)
{
    if (!db) return;
    sqlite3_stmt *st;
    while ((st = sqlite3_next_stmt(db, NULL))) sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A statement prepared once per reader connection and kept: the hot reads
 * would otherwise spend more in sqlite3_prepare than in reading. */
sqlite3_stmt *store_stmt_cached(sqlite3 *db, const char *sql)
{
    for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st))
        if (!sqlite3_stmt_busy(st) && sqlite3_sql(st) && strcmp(sqlite3_sql(st), sql) == 0)
            return st;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        return NULL;
    return st;
}

sqlite3 *store_pool_get(store *s)
{
    pthread_mutex_lock(&s->pool_mu);
    sqlite3 *db = s->npool ? s->pool[--s->npool] : NULL;
    pthread_mutex_unlock(&s->pool_mu);
    if (!db) {
        db = store_db_open(s, 1, NULL, 0);
        if (db)
            sqlite3_exec(db, "PRAGMA cache_size=-1024; PRAGMA mmap_size=1073741824", NULL, NULL,
                         NULL);
    }
    return db;
}

void store_pool_put(store *s, sqlite3 *db)
{
    if (!db) return;
    pthread_mutex_lock(&s->pool_mu);
    if (s->npool < 8) {
        if (s->npool == s->cappool) {
            int nc = s->cappool ? s->cappool * 2 : 4;
            sqlite3 **np = realloc(s->pool, (size_t)nc * sizeof *np);
            if (np) {
                s->pool = np;
                s->cappool = nc;
            }
        }
        if (s->npool < s->cappool) { /* else closed: it was only a cache */
            s->pool[s->npool++] = db;
            db = NULL;
        }
    }
    pthread_mutex_unlock(&s->pool_mu);
    store_db_close_reader(db);
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

/* The tag keys of format 8's series rows, by number (`tagkeys`). */
typedef struct {
    sqlite3_int64 *id; /* ascending */
    char **name;
    size_t n;
} tagkey_table;

static void tagkeys_free(tagkey_table *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->name[i]);
    free(t->id);
    free(t->name);
}

static int tagkeys_load(store *s, tagkey_table *t)
{
    sqlite3_stmt *st;
    memset(t, 0, sizeof *t);
    if (sqlite3_prepare_v2(s->db, "SELECT id, name FROM tagkeys ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return -1;
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *nm = (const char *)sqlite3_column_text(st, 1);
        if (!nm) continue;
        if (t->n == cap) {
            cap = cap ? cap * 2 : 16;
            sqlite3_int64 *ni = realloc(t->id, cap * sizeof *ni);
            if (ni) t->id = ni;
            char **nn = realloc(t->name, cap * sizeof *nn);
            if (nn) t->name = nn;
            if (!ni || !nn) {
                rc = -1;
                break;
            }
        }
        if (!(t->name[t->n] = strdup(nm))) {
            rc = -1;
            break;
        }
        t->id[t->n++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return rc;
}

static const char *tagkeys_name(const tagkey_table *t, uint64_t id)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if ((uint64_t)t->id[m] < id)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < t->n && (uint64_t)t->id[lo] == id ? t->name[lo] : NULL;
}

/* A series row's tags appended to k as a key's tag part ((key NUL value
 * NUL)*): format 8's 0, (varint key id, value NUL)*, or format 7's as
 * they are.  0, or -1 when the row is not one (or memory is short). */
static int tags_of_row(const tagkey_table *keys, const uint8_t *t, size_t tl, store_buf *k)
{
    if (!tl || t[0] != 0) {
        if (store_buf_reserve(k, tl) < 0) return -1;
        if (tl) memcpy(k->p + k->n, t, tl);
        k->n += tl;
        return 0;
    }
    size_t p = 1;
    while (p < tl) {
        uint64_t id;
        if (store_get_varint(t, tl, &p, &id) < 0) return -1;
        const char *name = tagkeys_name(keys, id);
        const uint8_t *z = p < tl ? memchr(t + p, 0, tl - p) : NULL;
        if (!name || !z) return -1;
        size_t nl = strlen(name) + 1, vl = (size_t)(z - (t + p)) + 1;
        if (store_buf_reserve(k, nl + vl) < 0) return -1;
        memcpy(k->p + k->n, name, nl);
        memcpy(k->p + k->n + nl, t + p, vl);
        k->n += nl + vl;
        p += vl;
    }
    return 0;
}

static int load_series(store *s, char *err, size_t errlen)
{
    tagkey_table keys;
    if (tagkeys_load(s, &keys) < 0) {
        tagkeys_free(&keys);
        snprintf(err, errlen, "store: cannot read the tag keys: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT s.id, m.name, s.tags FROM series s JOIN metrics m ON m.id = s.metric"
            " ORDER BY s.id",
            -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "store: %s", sqlite3_errmsg(s->db));
        tagkeys_free(&keys);
        return -1;
    }
    store_buf k = {0};
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        const char *m = (const char *)sqlite3_column_text(st, 1);
        const uint8_t *t = sqlite3_column_blob(st, 2);
        size_t tl = (size_t)sqlite3_column_bytes(st, 2);
        if (!m || !*m) continue;
        k.n = 0;
        size_t ml = strlen(m) + 1;
        if (store_buf_reserve(&k, ml) < 0) {
            rc = -1;
            break;
        }
        memcpy(k.p, m, ml);
        k.n = ml;
        if (tags_of_row(&keys, t, tl, &k) < 0) {
            if (k.oom) rc = -1;
            continue; /* a row no jobscope wrote: not a series */
        }
        const char *metric;
        store_tag tags[MAX_TAGS];
        int nt;
        if (store_key_parse(k.p, k.n, &metric, tags, &nt) < 0) continue;
        series *se = store_series_add(s, id, metric, tags, nt, k.p, k.n, store_key_hash(k.p, k.n));
        if (!se) rc = -1;
    }
    sqlite3_finalize(st);
    store_buf_free(&k);
    tagkeys_free(&keys);
    s->persisted_below = s->next_id;
    if (rc < 0) {
        snprintf(err, errlen, "store: out of memory while loading the series of %s", s->dir);
        return -1;
    }
    s->db_oldest = INT64_MAX;
    if (sqlite3_prepare_v2(
            s->db, "SELECT count(*), coalesce(sum(n),0), min(t_end), max(t_end) FROM chunks", -1,
            &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) {
            s->db_chunks = (uint64_t)sqlite3_column_int64(st, 0);
            s->db_points = (uint64_t)sqlite3_column_int64(st, 1);
            if (sqlite3_column_type(st, 2) != SQLITE_NULL)
                s->db_oldest = sqlite3_column_int64(st, 2);
            /* the newest point seen includes SQLite's (reads of many series
             * scan only when their range spans every partition there) */
            if (sqlite3_column_type(st, 3) != SQLITE_NULL &&
                sqlite3_column_int64(st, 3) > s->max_ts)
                s->max_ts = sqlite3_column_int64(st, 3);
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
    if (!(s->dir = strdup(c->dir))) {
        free(s);
        snprintf(err, errlen, "store: out of memory");
        return NULL;
    }
    s->cfg = *c;
    s->cfg.dir = s->dir;
    s->wal_fd = -1;
    s->opened_ms = store_now_ms();
    s->lock_fd = -1;
    s->next_id = 1;
    s->head_max = HEAD_MAX;
    s->max_ts = INT64_MIN;
    s->seg_limit = SEG_LIMIT;
    const char *sl = getenv("JOBSCOPE_STORE_SEGMENT_BYTES"); /* tests: rotate early */
    if (sl && atoll(sl) > 0) {
        s->seg_limit = (uint64_t)atoll(sl);
        s->seg_limit_fixed = 1;
    }
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
    if (!(s->db = store_db_open(s, 0, err, errlen))) goto fail;
    /* page size and auto_vacuum only take effect on a new database */
    if (store_db_exec(s->db,
                      "PRAGMA page_size=32768; PRAGMA auto_vacuum=INCREMENTAL;"
                      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                      "PRAGMA wal_autocheckpoint=8; PRAGMA journal_size_limit=0;"
                      "PRAGMA cache_size=-2048;",
                      err, errlen) < 0)
        goto fail;
    {
        char *fmt = db_format(s->db);
        int ok = 1;
        if (!fmt) {
            ok = store_db_exec(s->db, SCHEMA, err, errlen) == 0;
        } else if (!strcmp(fmt, "3")) {
            ok = store_db_exec(s->db, CONVERT_3, err, errlen) == 0;
            if (ok)
                store_log(s,
                          "converted %s/chunks.db from format 3 to 4 (tag sets kept with "
                          "their series)",
                          s->dir);
            else
                store_db_exec(s->db, "ROLLBACK", NULL, 0);
        }
        if (ok && fmt && (!strcmp(fmt, "3") || !strcmp(fmt, "4") || !strcmp(fmt, "5"))) {
            ok = store_db_exec(s->db, CONVERT_5, err, errlen) == 0;
            if (ok)
                store_log(s,
                          "converted %s/chunks.db from format %s to 6 (chunks kept in series "
                          "order, no index of them)",
                          s->dir, !strcmp(fmt, "3") ? "4" : fmt);
            else
                store_db_exec(s->db, "ROLLBACK", NULL, 0);
        }
        int before7 = fmt && (!strcmp(fmt, "3") || !strcmp(fmt, "4") || !strcmp(fmt, "5") ||
                              !strcmp(fmt, "6"));
        if (ok && before7) {
            ok = store_db_exec(s->db, CONVERT_6, err, errlen) == 0;
            if (ok)
                store_log(s,
                          "converted %s/chunks.db from format 6 to 7 (points logged as "
                          "decimals; an older jobscope refuses the store)",
                          s->dir);
        }
        int before8 = before7 || (fmt && !strcmp(fmt, "7"));
        if (ok && before8) {
            ok = store_db_exec(s->db, CONVERT_7, err, errlen) == 0;
            if (ok)
                store_log(s,
                          "converted %s/chunks.db from format 7 to 8 (tag keys by number in "
                          "series rows; an older jobscope refuses the store)",
                          s->dir);
            else
                store_db_exec(s->db, "ROLLBACK", NULL, 0);
        }
        if (ok && fmt && (before8 || !strcmp(fmt, "8"))) {
            ok = store_db_exec(s->db, CONVERT_8, err, errlen) == 0;
            if (ok)
                store_log(s,
                          "converted %s/chunks.db from format 8 to 9 (a group commit's points "
                          "logged by series; an older jobscope refuses the store)",
                          s->dir);
        } else if (ok && fmt && strcmp(fmt, STORE_FORMAT) != 0) {
            snprintf(err, errlen,
                     "store: %s/chunks.db has format %s; this jobscope reads format %s", s->dir,
                     fmt, STORE_FORMAT);
            ok = 0;
        }
        free(fmt);
        if (!ok) goto fail;
    }
    if (sqlite3_prepare_v2(
            s->db,
            "INSERT INTO chunks(series, part, seq, s, e, n, ts_ref, data) VALUES(?1, ?2, "
            "(SELECT coalesce(max(seq), 0) + 1 FROM chunks WHERE series=?1 AND part=?2), ?3, ?4, "
            "?5, ?6, ?7)",
            -1, &s->ins_chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO times(hash, data) VALUES(?,?)", -1, &s->ins_time,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO vals(data) VALUES(?)", -1, &s->ins_val, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "SELECT id, data FROM times WHERE hash=?", -1, &s->sel_time,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO metrics(name) VALUES(?)", -1, &s->ins_name,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "SELECT id FROM metrics WHERE name=?", -1, &s->sel_name, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO tagkeys(name) VALUES(?)", -1,
                           &s->ins_tagkey, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "SELECT id FROM tagkeys WHERE name=?", -1, &s->sel_tagkey,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO series(id, metric, tags) VALUES(?,?,?)",
                           -1, &s->ins_series, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "store: %s", sqlite3_errmsg(s->db));
        goto fail;
    }
    if (load_series(s, err, errlen) < 0) goto fail;

    uint64_t *segs;
    size_t nseg;
    if (store_wal_segments(s, &segs, &nseg) < 0) {
        snprintf(err, errlen, "store: cannot list %s/wal: %s", s->dir, strerror(errno));
        goto fail;
    }
    for (size_t i = 0; i < nseg; i++) {
        wal_replay rs;
        if (store_wal_replay(s, segs[i], &rs) < 0) {
            /* the log stays as it is (nothing is checkpointed on this path) */
            snprintf(err, errlen, "store: cannot replay %s/wal: %s", s->dir,
                     errno ? strerror(errno) : "out of memory");
            free(segs);
            goto fail;
        }
        if (rs.damaged) {
            char where[4200];
            int moved = store_wal_set_aside(s, segs[i], where, sizeof where) == 0;
            s->damaged_segments++;
            s->damaged_lost += rs.lost_points + rs.refused;
            char lost[160] = "";
            if (rs.lost_points || rs.refused)
                snprintf(lost, sizeof lost,
                         " (lost: %" PRIu64 " points whose series record was damaged, %" PRIu64
                         " points out of range)",
                         rs.lost_points, rs.refused);
            store_log(
                s,
                "log segment %s/wal/%016" PRIu64 ".wal is damaged: %zu bytes in %d place(s) "
                "did not check out; every record that did is kept%s; %s %s",
                s->dir, segs[i], rs.bad_bytes, rs.places, lost,
                moved ? "moved to" : "could not be moved aside:", moved ? where : strerror(errno));
        }
    }
    uint64_t next = nseg ? segs[nseg - 1] + 1 : 1;
    free(segs);
    if (store_wal_open_segment(s, next) < 0) {
        snprintf(err, errlen, "store: cannot create the log in %s/wal: %s", s->dir,
                 strerror(errno));
        goto fail;
    }
    /* what was replayed goes to SQLite now, so the old segments can go */
    pthread_mutex_lock(&s->mu);
    int rc = nseg ? store_wal_checkpoint(s, next) : 0;
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        snprintf(err, errlen, "%s", s->broken_msg);
        goto fail;
    }
    store_read_warm(s);
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(store *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    if (s->broken) {
        s->recover_tried_ms = 0; /* one more try now */
        store_wal_recover(s);
    }
    int settle = 0;
    if (s->db && !s->broken) {
        store_wal_wait_durable(s, s->put_seq);
        if (!s->broken && s->wal_fd >= 0) settle = store_wal_checkpoint(s, s->seg + 1) == 0;
    }
    pthread_mutex_unlock(&s->mu);
    /* a clean stop leaves the store settled: as small as it gets */
    if (settle) store_settle_all(s);
    if (s->wal_fd >= 0) close(s->wal_fd);
    sqlite3_finalize(s->ins_chunk);
    sqlite3_finalize(s->ins_series);
    sqlite3_finalize(s->ins_time);
    sqlite3_finalize(s->ins_val);
    sqlite3_finalize(s->sel_time);
    sqlite3_finalize(s->ins_name);
    sqlite3_finalize(s->sel_name);
    sqlite3_finalize(s->ins_tagkey);
    sqlite3_finalize(s->sel_tagkey);
    for (int i = 0; i < s->npool; i++) store_db_close_reader(s->pool[i]);
    free(s->pool);
    if (s->db) {
        sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        sqlite3_close(s->db);
    }
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = store_series_by_id(s, id);
        if (se) store_head_free(se);
    }
    store_head_slabs_free(s);
    store_index_free(s);
    free(s->dirty);
    store_buf_free(&s->wbuf);
    store_wal_group_free(&s->wgroup);
    if (s->lock_fd >= 0) close(s->lock_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->wmu);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_cond_destroy(&s->synced_cv);
    free(s->dir);
    free(s);
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
    st->dropped_points_age = s->dropped_age;
    st->dropped_points_size = s->dropped_size;
    st->size_limit_unmet = s->size_unmet;
    st->damaged_segments = s->damaged_segments;
    st->damaged_lost_points = s->damaged_lost;
    st->write_failures = s->write_failures;
    st->writable = !s->broken;
    if (s->broken) snprintf(st->error, sizeof st->error, "%s", s->broken_msg);
    pthread_mutex_unlock(&s->mu);
    st->disk_bytes = store_dir_bytes(s->dir);
}
