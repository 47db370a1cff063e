/* store_priv.h — what the parts of the store share (store.c, store_index.c,
 * store_head.c, store_wal.c, store_read.c, store_maintain.c): limits, the
 * in-memory types (series, frozen chunks, the index, the store itself) and
 * the functions one part calls in another.  Private to src/store. */
#ifndef JOBSCOPE_STORE_PRIV_H
#define JOBSCOPE_STORE_PRIV_H

#include "store/store.h"
#include "store/codec.h"

#include <pthread.h>
#include <sqlite3.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEG_LIMIT       (8u << 20)          /* log segment size before rotation */
#define SEG_MIN         (1u << 20)          /* ... or, when every head filled once, at least this */
#define PART_MS         (2LL * 3600 * 1000) /* time partition of chunks */
#define HEAD_BUDGET     8000000 /* head points over all series (encoded: ~3 bytes a point) */
#define HEAD_MIN        32
#define HEAD_MAX        2048
#define FLUSH_BYTES     (2u << 20) /* frozen chunk bytes before a SQLite commit */
#define FLUSH_CHUNKS    8192
#define ZLEVEL_FLUSH    1
#define ZLEVEL_SETTLE   9
#define MAX_NAME        4096
#define MAX_TAGS        64
#define SETTLE_MAX_WAIT 64 /* chunks a busy group may gather before it is merged anyway */

#define STORE_FORMAT "9" /* meta 'format' of chunks.db (docs/store.md) */
/* A chunk's value part is kept in its row up to VAL_INLINE_MAX bytes; a
 * larger one is a row of `vals` and the chunk's data the integer id of that
 * row (chunks is a WITHOUT ROWID table: a large row there would spill into
 * overflow pages of its own, and fragment the table).  Reads join it:
 * SELECT CHUNK_DATA FROM chunks c CHUNK_VALS ... */
#define VAL_INLINE_MAX 512
#define CHUNK_DATA     "coalesce(v.data, c.data)"
#define CHUNK_VALS     " LEFT JOIN vals v ON typeof(c.data) = 'integer' AND v.id = c.data "

/* Log records (docs/store.md "The write-ahead log"); NOP: the probe written
 * when a failed log comes back, skipped by replay; ZSTD: records as written
 * by one group commit (up to ZREC_RAW bytes), compressed.  No record is
 * longer than REC_MAX: a series key is at most ~530 KB, a put's slice ~170 KB.
 * POINTS_C (written by format 7 and 8) is POINTS with a run's values as
 * decimals; POINTS_G (format 9) is POINTS_C with a run's timestamps before
 * its values (store_wal_run), and a group commit's runs gathered by series
 * (store_wal_group.c); replay reads all three. */
enum {
    REC_SERIES = 1,
    REC_POINTS = 2,
    REC_NOP = 3,
    REC_ZSTD = 4,
    REC_POINTS_C = 5,
    REC_POINTS_G = 6
};
#define ZREC_RAW (1u << 20)
#define REC_MAX  (1u << 20)

/* --- decimals ------------------------------------------------------------
 * A value v that is x / 10^k exactly (bit for bit) for an integer x and k in
 * 0..9 is kept as x (the heads, store_head.c; the log's POINTS_C records,
 * store_wal.c): a few bytes instead of the double's eight. */
#define HEAD_RAW 0xff /* a value that is no such decimal: the double's bits */

/* x with v == x / 10^k exactly (bit for bit), or 0 and -1. */
static inline int store_to_scaled(double v, int k, int64_t *x)
{
    double m = v * store_p10[k];
    if (!(fabs(m) <= 9007199254740992.0)) return -1;
    int64_t r = (int64_t)nearbyint(m);
    double back = k ? (double)r / store_p10[k] : (double)r;
    if (memcmp(&back, &v, sizeof v) != 0) return -1;
    *x = r;
    return 0;
}

static inline double store_from_scaled(int64_t x, int k)
{
    return k ? (double)x / store_p10[k] : (double)x;
}

/* The mode for v at least at `from`: the fewest digits >= from, or HEAD_RAW. */
static inline int store_mode_for(double v, int from)
{
    int64_t x;
    for (int k = from; k < 10; k++)
        if (store_to_scaled(v, k, &x) == 0) return k;
    return HEAD_RAW;
}

/* v as a varint at b[n] (room for 10 bytes); the new n. */
static inline size_t store_put_varint(uint8_t *b, size_t n, uint64_t v)
{
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return n;
}

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

/* A series: its key and its head, 64 bytes (a million series: 64 MB).
 * The record of an id never moves (blocks of SER_BLOCK) and its key never
 * changes.  A head holds points of one partition only (hpart), so its last
 * timestamp is an offset in it; frozen chunks, few and short-lived, are
 * found by series id (store.fz), not from here. */
#define SER_BLOCK 4096
struct series {
    uint32_t key; /* its tags as in the canonical key ((k NUL v NUL)*): arena place
                     (store_series_tags) */
    uint32_t keylen;
    uint32_t hash;     /* low 32 bits of store_hash(key) */
    uint32_t id;       /* 0: no series here */
    uint32_t metric;   /* index of its metric in store.mets */
    uint32_t head_seg; /* log segment of the head's oldest point */
    /* the head: recent points, encoded (store_head.c) */
    int32_t hpart;       /* the partition of every point in it */
    uint32_t h_off;      /* its last point: ts - the partition's start */
    uint32_t h_dt;       /* and that timestamp - the one before */
    uint16_t hn;         /* points (at most HEAD_MAX + 1) */
    uint16_t hlen, hcap; /* bytes in hbuf */
    uint8_t hmode;       /* value coding: 0..9 decimal digits, HEAD_RAW */
    uint8_t touched;     /* maintenance round of its last point (mod 256): quiet heads are cut */
    uint8_t *hbuf;
    int64_t h_x; /* the last point's value (scaled integer, or the double's bits) */
};
_Static_assert(sizeof(series) == 64, "a series record is 64 bytes");

/* The key arena: blocks of ARENA_BLOCK bytes (or one big key each); a key's
 * place is its block << ARENA_SHIFT | its offset.  The table of blocks has
 * a fixed size, so readers find a key without the lock. */
#define ARENA_SHIFT  20
#define ARENA_BLOCK  (1u << ARENA_SHIFT)
#define ARENA_BLOCKS (1u << (32 - ARENA_SHIFT))

typedef struct strent {
    char *s;
    uint64_t h;
    void *val;
} strent;
typedef struct strmap {
    strent *slots;
    size_t cap, n;
} strmap;
/* A metric: its series, and a version bumped by every write (store_metric_version). */
typedef struct mlist {
    uint32_t *v; /* series ids */
    size_t n, cap;
    uint64_t version;
    const char *name;
    uint32_t index;     /* in store.mets */
    sqlite3_int64 dbid; /* its row in the metrics table, once known */
} mlist;
/* The series of a tag pair key=value that more than one series has
 * ("postings"; a pair of one series keeps its id in the pair table). */
typedef struct plist {
    uint32_t *ids;
    uint32_t n, cap;
} plist;

/* Head buffers by size class (store_head.c). */
typedef struct headslab {
    uint8_t *free[18];
    uint8_t **slabs;
    size_t nslabs, capslabs;
    uint8_t *cur;
    uint32_t left;
} headslab;

/* store_wal_group.c: a frame's runs gathered by series (scratch kept
 * between group commits; used by the committing thread only) */
typedef struct store_wal_group {
    void *pts; /* the frame's points, as gathered */
    size_t n, cap;
    uint32_t *next; /* the next point of the same series */
    size_t capnext;
    void *groups; /* a series each, in the order they first come */
    size_t ngroups, capgroups;
    uint32_t *tab; /* series id -> group + 1 (open addressing) */
    size_t tabcap;
    void *sorted; /* one series' points, in order */
    size_t capsorted;
    store_buf raw; /* the frame as it is compressed */
} store_wal_group;

struct store {
    char *dir;
    store_config cfg;
    pthread_mutex_t mu, wmu, pool_mu;
    pthread_cond_t synced_cv;
    sqlite3 *db;
    sqlite3_stmt *ins_chunk, *ins_series, *ins_time, *sel_time, *ins_val;
    sqlite3_stmt *ins_name, *sel_name, *ins_tagkey, *sel_tagkey;
    sqlite3 **pool;
    int npool, cappool;
    int lock_fd;
    /* index (store_index.c) */
    series **sblocks; /* records by id, SER_BLOCK a block */
    size_t nsblocks;
    uint32_t *tab; /* key → id, open addressing, at most half full */
    size_t tabcap, nseries;
    uint64_t next_id, persisted_below; /* ids below it are in the series table */
    uint8_t **arenas;                  /* key bytes: ARENA_BLOCKS pointers, allocated once */
    size_t narena, arena_left;
    uint32_t arena_cur;    /* the block small keys go to (arena_left bytes left) */
    strmap metrics, tagks; /* metric name → mlist; tag keys */
    mlist **mets;
    size_t nmets, capmets;
    uint64_t *ptab; /* tag pair → its series (store_index.c) */
    size_t pcap, npairs;
    plist *plists;
    size_t nplists, capplists;
    /* log */
    int wal_fd;
    uint64_t seg, seg_bytes;
    uint64_t seg_points; /* points put since the segment began */
    store_buf wbuf;
    store_wal_group wgroup; /* the committer's (syncing) */
    uint64_t put_seq, synced_seq;
    uint64_t seg_limit;
    int seg_limit_fixed; /* set by JOBSCOPE_STORE_SEGMENT_BYTES (tests): not grown with the series
                          */
    int syncing, broken;
    char broken_msg[160];
    int64_t broken_since_ms, recover_tried_ms;
    uint64_t write_failures;
    /* frozen chunks waiting for SQLite; by series: fz (open addressing) */
    frozen *pend_first, *pend_last;
    frozen **fz;
    size_t fzcap, fzn;
    size_t pend_bytes, pend_n;
    uint64_t head_points, head_bytes;
    headslab hslab;
    uint32_t head_max;
    uint64_t db_points, db_chunks;
    int64_t db_oldest;   /* the earliest end of a chunk in SQLite (INT64_MAX: none) */
    int times_gc_due;    /* chunks were deleted: rows of `times` may be garbage (under wmu) */
    int64_t times_gc_ms; /* when they were last collected */
    int64_t max_ts;
    /* (series, partition) that got chunks since settling looked at them */
    struct group *dirty;
    size_t ndirty, capdirty;
    int scanned;       /* settling has looked at the whole table once */
    uint64_t drop_gen; /* bumped when retention or the size limit drops points */
    /* what store_stats reports beyond sizes */
    uint64_t dropped_age, dropped_size, damaged_segments, damaged_lost;
    int size_unmet;
    int64_t last_put_ms; /* when the last put came (idle settling) */
    uint8_t round;       /* maintenance rounds, mod 256 (series.touched) */
    int idle_settled;    /* settled since then */
    int64_t
        opened_ms; /* when store_open ran: what settling finds at first counts as written then */
};

typedef struct group {
    uint64_t series;
    int64_t part;
    int64_t at;
} group; /* at: when it last got a chunk (ms) */

/* A 64-bit hash of bytes, a word at a time (keys are hashed for every point). */
static inline uint64_t store_hash(const void *p, size_t n)
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

/* The hash of a series key (metric NUL (k NUL v NUL)*): its metric's and
 * its tag part's hashes combined, so that a put hashes a tag set shared by
 * many points once (store_put.c), not with every point's key. */
static inline uint64_t store_key_hash_parts(uint64_t metric_h, uint64_t tags_h)
{
    return metric_h * 0x9e3779b97f4a7c15ULL ^ tags_h;
}

static inline uint64_t store_key_hash(const uint8_t *key, size_t len)
{
    const uint8_t *nul = memchr(key, 0, len);
    size_t ml = nul ? (size_t)(nul - key) : len;
    return store_key_hash_parts(store_hash(key, ml), store_hash(key + ml, len - ml));
}

static inline int64_t store_part_of(int64_t ts)
{
    int64_t q = ts / PART_MS;
    if (ts % PART_MS < 0) q--;
    return q;
}

/* The tag part of se's key (store_index.c keeps it). */
static inline const uint8_t *store_series_tags(const store *s, const series *se)
{
    return s->arenas[se->key >> ARENA_SHIFT] + (se->key & (ARENA_BLOCK - 1));
}

/* The timestamp of the last point of se's head (hn > 0). */
static inline int64_t store_head_last(const series *se)
{
    return (int64_t)se->hpart * PART_MS + se->h_off;
}

static inline int64_t store_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* store_index.c */
strent *store_strmap_find(strmap *m, const char *s, uint64_t h, int add);
void store_strmap_free(strmap *m, int free_vals);
int store_tag_cmp(const void *a, const void *b);
int store_key_make(store_buf *k, const char *metric, const store_tag *sorted, int ntags);
series *store_series_find(store *s, const uint8_t *key, size_t len, uint64_t h);
series *store_series_add(store *s, uint64_t id, const char *metric, const store_tag *sorted,
                         int ntags, const uint8_t *key, size_t keylen, uint64_t h);
series *store_series_by_id(store *s, uint64_t id);
void store_index_free(store *s);
int store_key_parse(const uint8_t *key, size_t len, const char **metric, store_tag *tags,
                    int *ntags);
int store_key_tags(const uint8_t *tp, size_t len, store_tag *tags, int *ntags);
int store_series_key(const store *s, const series *se, store_buf *k);

/* store_head.c */
int store_head_add(store *s, series *se, int64_t ts, double v, uint64_t seg);
int store_head_cut(store *s, series *se, uint32_t upto);
void store_head_decode(const series *se, int64_t *ts, double *val);
long store_head_drop_before(store *s, series *se, int64_t cutoff);
void store_head_free(series *se);
frozen *store_frozen_of(const store *s, const series *se);
void store_head_slabs_free(store *s);

/* store_put.c */
int store_chunk_insert(store *s, uint64_t series_id, int64_t t0, int64_t t1, size_t n,
                       const uint8_t *tp, size_t tl, const uint8_t *vp, size_t vl);
int store_flush_pending(store *s);

/* store_wal_group.c: the records p[0..n) (whole ones, as the log buffer holds them) appended
 * to out with the POINTS_G runs gathered into one run a series, after the
 * other records: 0, or -1 when it would not be smaller (out as it was). */
int store_wal_gather(store_wal_group *g, const uint8_t *p, size_t n, store_buf *out);
void store_wal_group_free(store_wal_group *g);

/* store_wal.c */
int store_wal_segments(const store *s, uint64_t **out, size_t *n);
int store_wal_open_segment(store *s, uint64_t seg);
size_t store_wal_run(uint8_t *b, size_t n, uint64_t id, const store_point *p, size_t count,
                     int guess, int64_t *ts_prev);
size_t store_wal_begin(store_buf *b, int type);
void store_wal_end(store_buf *b, size_t at);
void store_wal_log_series(store *s, const series *se);
int store_wal_checkpoint(store *s, uint64_t keep);
int store_wal_wait_durable(store *s, uint64_t seq);
int store_wal_recover(store *s);
int store_wal_retire(store *s);
typedef struct wal_replay {
    int damaged;          /* bytes that are not records, before the end */
    size_t bad_bytes;     /* how many */
    int places;           /* in how many stretches */
    uint64_t lost_points; /* points of series whose own record was damaged */
    uint64_t refused;     /* points no put takes (a time out of range, a value
                           * not finite) in records that check out: not kept */
} wal_replay;
int store_wal_replay(store *s, uint64_t seg, wal_replay *rs);
int store_wal_set_aside(store *s, uint64_t seg, char *where, size_t wlen);

/* store.c */
void store_log(store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int store_db_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);
sqlite3 *store_db_open(const store *s, int readonly, char *err, size_t errlen);
void store_db_close_reader(sqlite3 *db);
sqlite3_stmt *store_stmt_cached(sqlite3 *db, const char *sql);
sqlite3 *store_pool_get(store *s);
void store_pool_put(store *s, sqlite3 *db);

/* store_read.c */
/* Opens the readers a read of many series uses, their statements prepared:
 * the first query after opening does not pay for it. */
void store_read_warm(store *s);
typedef struct store_pointbuf {
    int64_t *ts;
    double *val;
    size_t n, cap;
} store_pointbuf;
int store_merge_out(store_pointbuf *b, int64_t from, int64_t to, store_points *out);

/* store_maintain.c */
void store_dirty_add(store *s, uint64_t sid, int64_t part);
void store_dirty_add_at(store *s, uint64_t sid, int64_t part, int64_t at);
long long store_dir_bytes(const char *dir);
int store_settle_all(store *s);

#endif
