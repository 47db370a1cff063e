/* tsq.h — OpenTSDB 2.4 query semantics (docs/serve.md, shared reference
 * opentsdb-api.md): parsing of /api/query bodies and m= strings, the engine
 * (filter, group, downsample + fill, rate, interpolate + aggregate) over raw
 * series, and the JSON answer.
 *
 * The engine works on raw series, wherever they come from: the local store
 * (tsq_fetch_local) or peer nodes (the server fetches their raw series for
 * the same sub-query and appends them before tsq_eval), so that a group that
 * spans nodes is aggregated once and correctly. */
#ifndef JOBSCOPE_TSQ_H
#define JOBSCOPE_TSQ_H

#include <stddef.h>
#include <stdint.h>
#include "store/store.h"

typedef struct tsq_error {
    int code; /* HTTP status: 400, 404, 413, 500 */
    char message[256];
    char details[256];
} tsq_error;

typedef enum tsq_filter_type {
    TSQ_LITERAL_OR,
    TSQ_ILITERAL_OR,
    TSQ_NOT_LITERAL_OR,
    TSQ_NOT_ILITERAL_OR,
    TSQ_WILDCARD,
    TSQ_IWILDCARD,
    TSQ_REGEXP,
    TSQ_NOT_KEY,
} tsq_filter_type;

/* What bounds one query's work (docs/serve.md "Limits").  The caller fills
 * it after parsing (tsq_query.guard); the engine checks it while it walks
 * series (tsq_match), between sub-queries and in tsq_eval, and stops with
 * the reason in `stop`. */
typedef struct tsq_guard {
    long max_points;     /* raw points + filled buckets of the whole query; 0: TSQ_MAX_POINTS */
    long used;           /* what its sub-queries took so far */
    int64_t deadline_ns; /* CLOCK_MONOTONIC; 0 = none */
    int (*client_gone)(void *arg); /* nonzero once the asking client has left; may be NULL */
    void *client_arg;
    int stop; /* TSQ_STOP_*: why the work stopped */
    unsigned ticks;
} tsq_guard;
enum { TSQ_STOP_NONE, TSQ_STOP_DEADLINE, TSQ_STOP_GONE, TSQ_STOP_REGEX };
#define TSQ_MAX_POINTS 10000000L

/* 1 when the query must stop (deadline passed, client gone, or a regexp
 * hit its match limit); cheap enough to call for every series. */
int tsq_guard_check(tsq_guard *g);
/* -1 with the error of a stopped query (503 past the deadline, 400 for a
 * regexp over its match limit, 499 for a client that left), else 0. */
int tsq_guard_error(const tsq_guard *g, tsq_error *err);

/* Regular expressions of `regexp` filters (PCRE2, Perl/Java syntax, found
 * anywhere in the value as Java's Matcher.find): at most this many bytes
 * of pattern; the compiled form is bounded by PCRE2 itself (64 KiB), one
 * match by these limits (backtracking steps, nesting, KiB of heap). */
#define TSQ_RE_MAX_PATTERN 1024
#define TSQ_RE_MATCH_LIMIT 100000
#define TSQ_RE_DEPTH_LIMIT 5000
#define TSQ_RE_HEAP_KIB    1024

typedef struct tsq_filter {
    tsq_filter_type type;
    char *tagk;
    char *filter; /* as given: "a|b", "web*", a regex */
    int group_by;
    void *compiled; /* engine-private (regex) */
} tsq_filter;

typedef struct tsq_rate_options {
    int counter;
    double counter_max; /* default Long.MAX_VALUE (2^63-1), as OpenTSDB */
    double reset_value; /* 0 = off */
    int drop_resets;
} tsq_rate_options;

typedef struct tsq_downsample {
    int64_t interval_ms; /* 0 = no downsampling */
    int all;             /* "0all-": one bucket over the whole range */
    char agg[16];
    enum { TSQ_FILL_NONE, TSQ_FILL_NAN, TSQ_FILL_NULL, TSQ_FILL_ZERO } fill;
} tsq_downsample;

typedef struct tsq_sub {
    char *metric;
    char aggregator[16];
    tsq_downsample ds;
    int rate;
    tsq_rate_options rate_opt;
    tsq_filter *filters;
    int nfilters;
    int explicit_tags;
    int index;        /* position in the request (query.index) */
    char *echo_json;  /* the sub-query as received, for showQuery */
    tsq_guard *guard; /* the query's, set by the engine while it runs (not owned) */
} tsq_sub;

typedef struct tsq_query {
    int64_t start_ms, end_ms;
    tsq_sub *subs;
    int nsubs;
    int ms_resolution;
    int show_query;
    int arrays;      /* ?arrays=true */
    tsq_guard guard; /* set by the caller after parsing; zero = defaults */
} tsq_query;

/* POST /api/query body; now_ms resolves relative times.  0 or -1 + err (400).
 * ?arrays=true is in the URL: the caller sets q->arrays after parsing. */
int tsq_parse_json(const char *body, size_t len, int64_t now_ms, tsq_query *q, tsq_error *err);
/* GET /api/query?start=..&end=..&m=AGG:[DS:][rate[{opts}]:]METRIC[{tags}][{filters}]...
 * `get` returns a query-string parameter's i-th value (NULL when absent). */
typedef const char *(*tsq_param_fn)(void *arg, const char *name, int i);
int tsq_parse_get(tsq_param_fn get, void *arg, int64_t now_ms, tsq_query *q, tsq_error *err);
/* "1h-ago", "now", seconds or ms epochs, "yyyy/MM/dd-HH:mm:ss": 0 or -1. */
int tsq_parse_time(const char *s, int64_t now_ms, int64_t *out_ms);
void tsq_query_free(tsq_query *q);

/* Does a series with these tags (sorted by key) pass the sub-query's filters? */
int tsq_match(const tsq_sub *sub, const store_tag *tags, int ntags);

/* A raw series (owned strings and arrays). */
typedef struct tsq_series {
    char *metric;
    store_tag *tags; /* sorted by key, owned strings */
    int ntags;
    store_points pts;
} tsq_series;

typedef struct tsq_set {
    tsq_series *v;
    size_t n, cap;
} tsq_set;

/* Appends to out every local series of sub that passes its filters, with its
 * points in the range OpenTSDB scans for [q->start_ms, q->end_ms] (widened to
 * the hour for rates and interpolation; docs/query.md).  A metric the store
 * has never seen: 400 "No such name for 'metrics': 'M'". */
int tsq_fetch_local(store *s, const tsq_query *q, const tsq_sub *sub, tsq_set *out, tsq_error *err);
void tsq_set_free(tsq_set *set);

/* One output series of a sub-query. */
typedef struct tsq_out {
    char *metric;
    store_tag *tags; /* keys with one value across the group */
    int ntags;
    char **aggregate_tags; /* keys with several values */
    int naggregate_tags;
    int64_t *ts;
    double *val; /* NAN = fill nan, with is_null for fill null */
    unsigned char *is_null;
    size_t n;
    int sub_index;
} tsq_out;

typedef struct tsq_result {
    tsq_out *v;
    size_t n, cap;
    /* Set by tsq_eval: the same answer comes for any start in
     * (start_after, start_upto] and end in [end_from, end_before), as long
     * as the data and every sub-query's scan range are unchanged. */
    int stable;
    int64_t start_after, start_upto, end_from, end_before;
} tsq_result;

/* The range OpenTSDB 2.4 scans for a sub-query (TsdbQuery's scan start and
 * end: aligned to the downsample interval, then to the hour): the engine
 * uses the points there for rates, interpolation and the last bucket, and
 * returns only points in [start, end]. */
void tsq_scan_range(const tsq_query *q, const tsq_sub *sub, int64_t *from_ms, int64_t *to_ms);

/* Evaluates one sub-query over raw series (local plus any peers'). */
int tsq_eval(const tsq_query *q, const tsq_sub *sub, const tsq_set *in, tsq_result *out,
             tsq_error *err);
/* The whole query against the local store. */
int tsq_run_local(store *s, const tsq_query *q, tsq_result *out, tsq_error *err);
void tsq_result_free(tsq_result *r);

/* The /api/query answer (malloc'ed JSON text) and an OpenTSDB error body. */
char *tsq_result_json(const tsq_query *q, const tsq_result *r, size_t *len);
char *tsq_error_json(const tsq_error *err, size_t *len);

/* Raw series as JSON, to carry them between peers: the server of one node
 * answers POST /api/query?raw=1 with tsq_set_json; the asking node parses it
 * with tsq_set_parse and appends to its own set before tsq_eval. */
char *tsq_set_json(const tsq_set *set, size_t *len);
int tsq_set_parse(const char *body, size_t len, tsq_set *out);

/* The aggregator names of /api/aggregators (NULL-terminated). */
extern const char *const tsq_aggregators[];

/* Added by the query helper for the server's other routes.  Each returns
 * malloc'ed JSON (length in *out_len), or NULL with err set (400 for a bad
 * request).  `body` non-NULL means a POST body; otherwise `get` reads the
 * query string.
 *
 * /api/query/last: POST {"queries":[{"metric":M,"tags":{k:v}}],"resolveNames":true}
 * or GET timeseries=M{k=v}&resolve=true → [{"timestamp":ms,"value":"1.5",
 * "tsuid":"…"[,"metric":M,"tags":{…}]}, …] (value a string, as OpenTSDB). */
char *tsq_last(store *s, const char *body, size_t len, tsq_param_fn get, void *arg, size_t *out_len,
               tsq_error *err);
/* /api/search/lookup: GET m=METRIC{tagk=*,…}&limit=N (key or value may be *;
 * METRIC may be * or empty) or POST {"metric":M,"tags":[{"key":k,"value":v}],
 * "limit":N} → {"type":"LOOKUP","metric":M,"tags":[…],"limit":N,"time":ms,
 * "results":[{"tsuid":…,"metric":…,"tags":{…}}],"startIndex":0,"totalResults":n}. */
char *tsq_lookup(store *s, const char *body, size_t len, tsq_param_fn get, void *arg,
                 size_t *out_len, tsq_error *err);
/* /api/config/filters: {"literal_or":{"examples":…,"description":…},…}. */
char *tsq_config_filters_json(size_t *len);
/* The OpenTSDB name of a filter type ("literal_or", …). */
const char *tsq_filter_type_name(tsq_filter_type t);

#endif
