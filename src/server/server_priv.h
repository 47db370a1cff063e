/* server_priv.h — the inside of the server object, shared by the files of
 * the server core (server.c, http.c, ingest.c, lineproto.c, live.c,
 * api_*.c).  Modules in other files use server.h only. */
#ifndef JOBSCOPE_SERVER_PRIV_H
#define JOBSCOPE_SERVER_PRIV_H

#include <pthread.h>
#include "server.h"

#define SERVER_MAX_ROUTES  128
#define SERVER_MAX_TASKS   32
#define SERVER_MAX_HOOKS   16
#define SERVER_MAX_MODULES 32

typedef struct server_route_entry {
    const char *method; /* NULL = any */
    const char *path;
    server_handler fn;
    void *arg;
} server_route_entry;

typedef struct server_stats {
    unsigned long long requests, errors_4xx, errors_5xx, unauthorized, too_large;
    unsigned long long points, events, store_errors, bytes_in;
    unsigned long long put_points, put_failed;
    double request_seconds; /* sum of handler times */
} server_stats;

struct live_set;
struct live_name;

struct server_priv {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stopping;
    pthread_t maintainer;
    int maintainer_running;

    server_route_entry routes[SERVER_MAX_ROUTES];
    int nroutes;
    server_task tasks[SERVER_MAX_TASKS];
    int ntasks, tasks_started;
    struct {
        server_points_hook fn;
        void *arg;
    } points_hooks[SERVER_MAX_HOOKS];
    int npoints_hooks;
    struct {
        server_event_hook fn;
        void *arg;
    } event_hooks[SERVER_MAX_HOOKS];
    int nevent_hooks;
    struct {
        server_metrics_fn fn;
        void *arg;
    } metrics_hooks[SERVER_MAX_HOOKS];
    int nmetrics_hooks;
    server_fanout_fn fanout;
    void *fanout_arg;
    server_module *inited;                  /* last module whose init() succeeded */
    void *module_state[SERVER_MAX_MODULES]; /* in registration order */

    struct server_http *http; /* connection deadlines, body memory (http.c) */
    void *http_tcp;           /* struct MHD_Daemon * */
    void *http_unix;
    void *tcp_ls, *unix_ls; /* their handler closures (http.c) */
    int tcp_port;           /* the port actually bound */
    char socket_path[256];

    server_stats stats;

    /* Live per-job gauges for /metrics (live.c). */
    pthread_mutex_t live_lock;
    struct live_set **live;              /* hash table of tag sets */
    size_t live_cap, live_nsets, live_n; /* live_n: series */
    struct live_name **live_names;       /* interned metric names */
    size_t live_names_cap, live_names_n;
    unsigned long long live_left_out; /* points of series that found the table full */
};

/* http.c */
#define SERVER_HEADER_MEMORY (256 * 1024) /* a connection's headers (libmicrohttpd) */
int server_http_start(server *s, char *err, size_t errlen);
void server_http_stop(server *s);
/* Connections cut at their header/body deadline, bodies refused for
 * --body-memory, body bytes held now. */
void server_http_stats(server *s, unsigned long long *cut, unsigned long long *busy,
                       size_t *body_bytes);
/* api_*.c: the core endpoints, ordinary modules ("core", "ingest", "query") */
/* The size bound of a query (a filled downsample's buckets): 0, or -1 and
 * a 400 in e.  Every /api/query path applies it (api_query.c, peers.c). */
struct tsq_query;
struct tsq_error;
/* The timestamps the server takes, in milliseconds: up to the end of year
 * 9999 either side of 1970.  A point outside is a bad line or point (400,
 * the others are stored), never a failed batch. */
#define SERVER_TS_MAX_MS       253402300799999.0
#define server_valid_ts_ms(ms) ((ms) > -SERVER_TS_MAX_MS && (ms) < SERVER_TS_MAX_MS)
/* OpenTSDB's rule for metric names, tag keys and values (api_ingest.c):
 * a-z A-Z 0-9 - _ . / and Unicode letters (any byte >= 0x80), 1..256 bytes.
 * /write applies the same length to its tags (any characters). */
#define SERVER_MAX_NAME 256
int server_valid_name(const char *s, size_t n);
/* A 64-bit hash of bytes, a word at a time, for the in-memory tables of the
 * ingest path (live.c, lineproto.c); never stored. */
uint64_t server_hash_bytes(const char *s, size_t n);
/* The ingest batches' arrays (api_ingest.c): room for need elements of elem
 * bytes in p, whose capacity *cap doubles; on failure p is kept, *oom set. */
void *server_grow(void *p, size_t *cap, size_t need, size_t elem, int *oom);

int server_query_check_size(const struct tsq_query *q, struct tsq_error *e);
/* The bounds of one /api/query request, all sub-queries together
 * (docs/serve.md "Limits"): buckets of filled downsamples, points
 * processed, points answered. */
#define SERVER_MAX_FILLED_BUCKETS 500000
#define SERVER_MAX_QUERY_POINTS   10000000L
#define SERVER_MAX_ANSWER_POINTS  2000000
struct tsq_result;
/* Fills q->guard: the request's point bound, --query-timeout, and the
 * client's connection (work stops when it leaves). */
void server_query_guard(server *s, const server_request *r, struct tsq_query *q);
/* 0, or -1 and a 413 when the answer holds more than SERVER_MAX_ANSWER_POINTS. */
int server_query_check_answer(const struct tsq_result *res, struct tsq_error *e);
/* live.c */
void server_live_update(server *s, const store_point *pts, size_t n);
void server_live_end_job(server *s, const char *job_id);
void server_live_expire(server *s, int64_t older_than_ms);
void server_live_metrics(server *s, sbuf *out);
void server_live_free(server *s);
/* lineproto.c: the Influx line protocol of /write, parsed into one batch */
typedef struct lp_name_ent {
    const char *s;
    size_t len;
    uint64_t h;
    int valid;
} lp_name_ent;
typedef struct lp_batch {
    store_point *pts; /* tags point into `tags` once parsed */
    uint32_t *toff;   /* per point: its line's first tag */
    size_t n, cap;
    store_tag *tags;
    size_t ntags, captags;
    lp_name_ent *names; /* interned metric names */
    size_t nnames, capnames;
    struct lp_block *arena; /* the strings (kept over slices) */
    size_t pos, lineno;     /* where the next slice starts */
    int oom;
} lp_batch;
/* Parses the lines of body from b->pos on, appending points until at least
 * max_points are there (whole lines; counts lines, bad lines and the first
 * error in `first`).  1: more lines remain (empty b->n and b->ntags, call
 * again), 0: done, -1: out of memory.  mult_ns: nanoseconds per timestamp
 * unit; host tags lines without tags. */
int server_lp_parse(lp_batch *b, const char *body, size_t len, int64_t mult_ns, int64_t now_ms,
                    const char *host, size_t max_points, size_t *lines, size_t *bad, char *first,
                    size_t firstlen);
void server_lp_free(lp_batch *b);
/* server.c: server_ingest_points in two steps (stored and handed to the
 * hooks now; durable after server_ingest_sync(ticket)) */
int server_ingest_points_nowait(server *s, const store_point *pts, size_t n, uint64_t *ticket,
                                char *err, size_t errlen);
int server_ingest_sync(server *s, uint64_t ticket, char *err, size_t errlen);
void server_events_hooks(server *s, const char *json, size_t len);

#endif
