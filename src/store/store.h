/* store.h — the embedded time-series store of `jobscope serve` (docs/store.md).
 *
 * One store is one directory.  Points arrive in batches from the ingest
 * paths (OpenTSDB /api/put, Influx /write, Dragon /api/metrics, events from
 * local jobscope runs, AMQP); store_put() returns only once the batch is
 * durable, so the caller may acknowledge it (HTTP 2xx, AMQP ack): a kill -9
 * of the server after that loses nothing.  Series are (metric, sorted tags);
 * their points are kept in time-partitioned, compressed chunks.  Reads give
 * the raw points of one series; filtering, grouping, downsampling and
 * aggregation are the query engine's (src/query/tsq.h), so that the same
 * engine can merge raw series fetched from peer nodes.
 *
 * Thread-safety: every function may be called from any thread (ingest and
 * queries run concurrently; one writer at a time inside). */
#ifndef JOBSCOPE_STORE_H
#define JOBSCOPE_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct store store;

typedef struct store_tag {
    const char *key;
    const char *value;
} store_tag;

typedef struct store_config {
    const char *dir;       /* created (0700) if missing */
    double retention_s;    /* points older than this are dropped; 0 = keep forever */
    long long max_bytes;   /* everything under dir; beyond it the oldest points are dropped
                              (never the newest partition); 0 = no limit */
    double settle_delay_s; /* store_maintain merges a series' chunks of a partition only once
                              it got none for this long (0: at once) */
    /* The store's own messages, one line each ("store: ..."): a damaged log
     * segment, points dropped by the size limit, writes failing and coming
     * back.  NULL: stderr (js_log). */
    void (*log)(void *arg, const char *line);
    void *log_arg;
} store_config;

/* NULL with a one-line reason in err when the directory cannot be used. */
store *store_open(const store_config *c, char *err, size_t errlen);
void store_close(store *s); /* flushes; safe with NULL */

typedef struct store_point {
    const char *metric;
    const store_tag *tags; /* any order; keys unique */
    int ntags;
    int64_t ts_ms; /* epoch milliseconds */
    double value;  /* finite */
} store_point;

/* Appends a batch (many series, any order).  0 once every point is durable;
 * -1 and err when nothing of the batch was stored. */
int store_put(store *s, const store_point *pts, size_t n, char *err, size_t errlen);
/* store_put in two steps, for a caller that hands one request's points over
 * in several slices and acknowledges once: store_put_nowait applies a batch
 * and gives a ticket (0 for an empty batch), store_sync(ticket) returns once
 * everything put up to that ticket is durable (0) or the log failed (-1). */
int store_put_nowait(store *s, const store_point *pts, size_t n, uint64_t *ticket, char *err,
                     size_t errlen);
int store_sync(store *s, uint64_t ticket, char *err, size_t errlen);

/* One series as the index knows it; valid only during the callback. */
typedef struct store_series {
    uint64_t id;
    const char *metric;
    const store_tag *tags; /* sorted by key */
    int ntags;
} store_series;

/* Calls cb for every series of `metric` (exact name); a nonzero return stops
 * the walk and is returned.  Tag filtering is the caller's. */
typedef int (*store_series_cb)(void *arg, const store_series *se);
int store_series_of(store *s, const char *metric, store_series_cb cb, void *arg);
/* The same for the series of `metric` that have every pair key=value ("*"
 * as key or value: any): the index's postings of the most selective literal
 * pair are read instead of every series of the metric.  Pairs are matched
 * again by the caller only if it wants to (a series passed here has every
 * literal pair). */
int store_series_with(store *s, const char *metric, const store_tag *pairs, int npairs,
                      store_series_cb cb, void *arg);

/* A number that grows whenever a point of a series of `metric` is written
 * or dropped (retention, size limit) and when the metric gets a series:
 * caches of query results read it before the query and compare it after. */
uint64_t store_metric_version(store *s, const char *metric);

/* Sorted distinct names starting with prefix (case-sensitive), at most max:
 * metric names, tag keys or tag values (of any series).  *out is a
 * malloc'ed array of malloc'ed strings; returns the count or -1. */
enum store_name_kind { STORE_METRICS, STORE_TAGKS, STORE_TAGVS };
int store_names(store *s, enum store_name_kind kind, const char *prefix, int max, char ***out);

/* The points of one series with from_ms <= ts <= to_ms, in time order
 * (a timestamp written twice keeps the last value).  Appends to *out. */
typedef struct store_points {
    int64_t *ts;
    double *val;
    size_t n, cap;
} store_points;
int store_read(store *s, uint64_t series_id, int64_t from_ms, int64_t to_ms, store_points *out);
/* The points of many series, as store_read gives them, handed to cb one
 * series at a time (i: the series' index in ids; *p is valid during the
 * call only: cb copies what it keeps).  Large sets that fill most of an id range are read in
 * one scan of the chunks table instead of one query a series; a few
 * threads read at once, so cb runs concurrently (for distinct i).  0, or -1
 * when a series could not be read (the others were handed over). */
typedef void (*store_points_cb)(void *arg, size_t i, store_points *p);
int store_read_many(store *s, const uint64_t *ids, size_t n, int64_t from_ms, int64_t to_ms,
                    store_points_cb cb, void *arg);
/* store_read_many, downsampled while the chunks are decoded: each series'
 * points become one point a bucket (stamped with the bucket's start,
 * t - t % iv_ms; a bucket runs from its first point to before start +
 * iv_ms), holding the sum, average, min or max of the bucket's values,
 * added in time order from 0 (sum, average) or compared from +-infinity
 * (min, max: NaN when nothing compared), as the query engine's
 * downsampler computes them.  A series' points are never all in memory at
 * once, only a chunk's.  cb gets the buckets (*b valid during the call)
 * and raw, the points they hold. */
typedef enum store_ds_kind { STORE_DS_SUM, STORE_DS_AVG, STORE_DS_MIN, STORE_DS_MAX } store_ds_kind;
typedef void (*store_buckets_cb)(void *arg, size_t i, store_points *b, size_t raw);
int store_read_many_ds(store *s, const uint64_t *ids, size_t n, int64_t from_ms, int64_t to_ms,
                       int64_t iv_ms, store_ds_kind kind, store_buckets_cb cb, void *arg);
/* The newest point of a series: 1 found, 0 none, -1 error. */
int store_last(store *s, uint64_t series_id, int64_t *ts_ms, double *value);
void store_points_free(store_points *p);

/* Applies retention and size limits now (the server calls it periodically). */
int store_maintain(store *s);

typedef struct store_stats {
    uint64_t series;
    uint64_t points; /* stored points, all series */
    uint64_t chunks;
    long long disk_bytes; /* everything under the directory */
    /* since the store was opened */
    uint64_t dropped_points_age;  /* by retention_s */
    uint64_t dropped_points_size; /* by max_bytes */
    int size_limit_unmet;         /* 1: over max_bytes with nothing left it may drop */
    uint64_t damaged_segments;    /* log segments that did not check out at open (in DIR/damaged) */
    uint64_t damaged_lost_points; /* points of those segments that could not be kept */
    uint64_t write_failures;      /* writes of the log that failed (each one failed its puts) */
    int writable;                 /* 0 while puts fail: the last write of the log failed */
    char error[160];              /* why, when not writable */
} store_stats;
void store_stats_get(store *s, store_stats *st);

#endif
