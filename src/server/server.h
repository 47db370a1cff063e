/* server.h — the core of `jobscope serve` (docs/serve.md): configuration,
 * the server object, the ingest functions every path goes through, the
 * route table other modules add their endpoints to, and the hooks for
 * background tasks (node collector, AMQP consumers, forwarders) and for
 * fanning queries out to peer nodes.
 *
 * How the parts fit (each arrow a call; no file calls back up):
 *   serve.c       the command: its options, start-up and shutdown
 *     config.c    the configuration: defaults, options by name, config file
 *     server.c    the server object: store, modules, tasks, hooks, ingest of
 *                 points, counters; it starts the transport and owns
 *       route.c       the route table and dispatch (+ wrappers)
 *       http.c        the transport: libmicrohttpd listeners (TCP + Unix
 *                     socket), bodies, auth; it knows no route, only the
 *                     dispatch function server.c gives it
 *         conn_guard.c  connection deadlines (slowloris), body memory
 *       live.c        the live per-job values behind /metrics
 *   handler.c     what handlers call: request accessors, replies
 *   ingest.c      jobscope events into points (event_reader.c reads them)
 *   api_*.c       the core endpoints, ordinary modules: ingest (+
 *                 put_reader.c, lineproto.c), query, core (version, /metrics)
 *   import.c      `jobscope import`
 * A module in its own file (edge: node metrics, peers, forwarders,
 * consumers; views: repository, dashboard) registers itself with
 * SERVER_MODULE(...) and, from its init(), adds routes (server_route),
 * wrappers of other modules' routes (server_route_wrap), background tasks
 * (server_task_add) and hooks (server_on_event, server_on_points,
 * server_set_fanout, server_on_metrics).
 *
 * Threads: handlers run on the HTTP worker threads.  Registrations (routes,
 * hooks, tasks, fan-out) are made from a module's init(), before the server
 * starts, and never change afterwards; every other function here may be
 * called from any thread while the server runs. */
#ifndef JOBSCOPE_SERVER_H
#define JOBSCOPE_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include "store/store.h"
#include "sink/formats/sbuf.h"
#include "util/log.h"

#define SERVER_VERSION "2.4.1" /* the OpenTSDB API level answered */

/* ---- configuration (serve.c: defaults < config file < command line) ---- */

typedef struct server_strlist {
    char **v;
    int n;
} server_strlist;

typedef struct server_config {
    char *listen;         /* "ADDR:PORT"; default 127.0.0.1:4242; "" or "none" = no TCP */
    int listen_given;     /* --listen/config: a non-loopback address needs a token */
    char *socket_path;    /* Unix socket; default server_default_socket(); "none" = off */
    char *store_dir;      /* default $XDG_STATE_HOME/jobscope (root: /var/lib/jobscope) */
    double retention_s;   /* --retention 30d; 0 = forever */
    long long max_bytes;  /* --max-size 10G; 0 = no limit */
    char *token_file;     /* --token-file: Bearer token for TCP clients */
    char *token;          /* its contents (trimmed), NULL = no auth */
    server_strlist peers; /* --peers HOST:PORT,... and --peers-file */
    char *peers_file;
    double peer_timeout_s;  /* --peer-timeout, default 2 */
    server_strlist forward; /* --forward URL (repeatable) */
    server_strlist consume; /* --consume amqp://... (repeatable) */
    double node_interval_s; /* --node-interval, default 1; 0 = no node metrics */
    size_t body_limit;      /* --body-limit, default 32 MiB: larger bodies get 413 */
    size_t body_memory; /* --body-memory, default 256 MiB: all bodies held at once; beyond: 503 */
    double header_timeout_s; /* --header-timeout, default 10: a request's headers, from connect */
    double body_timeout_s;   /* --body-timeout, default 60: its body, from the headers */
    double query_timeout_s;  /* --query-timeout, default 30: a query's work; 0 = none */
    int max_connections;     /* --max-connections, default 2048 per listener */
    int max_per_client;      /* --max-connections-per-client, default 256 (per address) */
    int peers_insecure;      /* --peers-insecure: send the token to http:// peers anyway */
    char *config_file;       /* --config; default /etc/jobscope/serve.conf if it exists */
    int threads;             /* HTTP worker threads, default 4 */
    char *spool_dir;         /* forwarders' spool, default under the store */
    int verbose;
} server_config;

/* Fills defaults (for this user: root or not). */
void server_config_defaults(server_config *c);
void server_config_free(server_config *c);
/* Reads a config file (docs/serve.md: `key = value` lines, # comments, keys
 * are the long option names).  0, or -1 with "FILE:LINE: why" in err. */
int server_config_load(server_config *c, const char *path, char *err, size_t errlen);
/* Sets one option by its long name ("listen", "retention", ...); value may
 * be NULL for flags.  0, or -1 with a reason.  Used by both the command
 * line and the config file. */
int server_config_set(server_config *c, const char *key, const char *value, char *err,
                      size_t errlen);

/* After the file and the command line: reads --token-file and --peers-file,
 * refuses a non-loopback --listen without a token.  0, or -1 + err. */
int server_config_resolve(server_config *c, char *err, size_t errlen);

/* Parsers shared by options and API: "30d", "12h", "90s", "1w" → seconds;
 * "10G", "512M", "1024" → bytes.  0 or -1. */
int server_parse_duration(const char *s, double *out_s);
int server_parse_size(const char *s, long long *out);

/* The well-known Unix socket (util/serve_detect.h): $JOBSCOPE_SERVE_SOCKET,
 * else /run/jobscope/serve.sock as root, else $XDG_RUNTIME_DIR/jobscope/
 * serve.sock (else /tmp/jobscope-UID/serve.sock); its directory is 0700. */
int server_default_socket(char *buf, size_t len);

/* ---- the server object ---- */

typedef struct server_priv server_priv;
struct server_module;

typedef struct server {
    server_config cfg;
    store *st;
    char host[256]; /* gethostname(), the host tag of node metrics */
    int64_t started_ms;
    server_priv *priv; /* routes, tasks, hooks, live gauges, stats */
} server;

/* Opens the store and runs the init() of every module of the NULL-ended
 * list (NULL: none), in its order; NULL + err.  cfg is moved into the
 * server (do not free it afterwards); modules must outlive it. */
server *server_create(server_config *cfg, const struct server_module *const *modules, char *err,
                      size_t errlen);
/* Starts the listeners then the background tasks; 0 or -1 + err. */
int server_start(server *s, char *err, size_t errlen);
/* Stops tasks (in reverse order), listeners, closes the store; frees s. */
void server_destroy(server *s);
/* The TCP port actually bound (for --listen HOST:0), 0 without TCP. */
int server_tcp_port(server *s);
/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t server_now_ms(void);

/* ---- counters for /metrics ---- */

typedef struct server_stats {
    unsigned long long requests, errors_4xx, errors_5xx, unauthorized, too_large, bytes_in;
    double request_seconds;    /* sum of handler times */
    unsigned long long cut;    /* connections cut at their header/body deadline */
    unsigned long long busy;   /* bodies refused for --body-memory */
    size_t body_bytes;         /* body bytes held now */
    unsigned long long points; /* stored durably */
    unsigned long long store_errors, events, put_points, put_failed;
} server_stats;
/* What the ingest paths count (the transport counts its own). */
enum server_stat { SERVER_STAT_EVENTS, SERVER_STAT_PUT_POINTS, SERVER_STAT_PUT_FAILED };
void server_stat_add(server *s, enum server_stat k, unsigned long long n);
void server_stats_get(server *s, server_stats *out);

/* ---- ingest: every path (HTTP, local jobscope, AMQP, import) ends here ---- */

/* Stores a batch; 0 once it is durable (then the caller may acknowledge),
 * -1 + err when nothing was stored.  After storing, the batch goes to every
 * points hook (forwarders) and the live gauges. */
int server_ingest_points(server *s, const store_point *pts, size_t n, char *err, size_t errlen);

/* One jobscope event (a JSON object with "event"): every numeric top-level
 * field becomes a point (metric "<event>.<field>", jobscope.metric events:
 * "jobscope.metric.<name>"), tagged with host (from hostname), job_id, the
 * workflow annotations (site wf_uuid wf_label dag_job_id condor_job_id
 * xformation task_id), rank, GPU id and uuid, and the event's custom
 * "tags"; tag values are strings.  The points are stored durably, then the
 * whole event goes to the event hooks (repository, forwarders).  Returns the
 * number of points stored (0 for an event without numbers), -1 + err for a
 * malformed event or a store failure. */
int server_ingest_event(server *s, const char *json, size_t len, char *err, size_t errlen);

/* Many events, NDJSON (one per line; blank lines skipped): points of all
 * lines are stored in one durable batch.  *accepted / *failed count lines;
 * the first failure's reason goes to err.  -1 when the store failed. */
int server_ingest_ndjson(server *s, const char *body, size_t len, size_t *accepted, size_t *failed,
                         char *err, size_t errlen);

/* server_ingest_points in two steps: stored and handed to the hooks now,
 * durable after server_ingest_sync(ticket) (a body stored in slices waits
 * once, at its end). */
int server_ingest_points_nowait(server *s, const store_point *pts, size_t n, uint64_t *ticket,
                                char *err, size_t errlen);
int server_ingest_sync(server *s, uint64_t ticket, char *err, size_t errlen);

/* The timestamps the server takes, in milliseconds: up to the end of year
 * 9999 either side of 1970.  A point outside is a bad line or point (400,
 * the others are stored), never a failed batch. */
#define SERVER_TS_MAX_MS       253402300799999.0
#define server_valid_ts_ms(ms) ((ms) > -SERVER_TS_MAX_MS && (ms) < SERVER_TS_MAX_MS)

/* What the streaming reader (ingest.h) read of an event, handed to the
 * event hooks with its text so that they need not read it again: "ts" when
 * a number, "rank" when an integer (its text), and every other top-level
 * member that is a string or a number, and those of the custom "tags"
 * object (tag 1), in the event's order.  Members whose value is anything
 * else (true, false, null, an array) are not listed.  The spans point into
 * the event's text (an event with an escaped string in them has no fields);
 * valid during the hook only.  No member is given twice (such an event is
 * read with jansson, and has no fields). */
typedef struct server_member {
    const char *k, *s; /* key; a string's text (s NULL: a number) */
    size_t kn, n;
    double v;          /* a number's value (an integer's -0 is 0) */
    const char *itext; /* an integer's text (NULL: not an integer, or a string) */
    size_t in;
    int tag; /* a member of "tags" */
} server_member;
typedef struct server_event_fields {
    int has_ts;
    double ts;
    const char *rank; /* NULL: no integer rank */
    size_t rankn;
    const server_member *m;
    size_t n;
} server_event_fields;

/* For the ingest of events (ingest.c), once their points are durable: the
 * event goes to every event hook (f: its fields, NULL when jansson read
 * it); a job's end drops its live values. */
void server_events_hooks(server *s, const char *json, size_t len, const server_event_fields *f);
/* The live per-job values behind /metrics (live.c): a job's series leave
 * at its end, or once not updated since older_than_ms; the Prometheus text
 * of what is left; how many series that is. */
void server_live_end_job(server *s, const char *job_id);
void server_live_expire(server *s, int64_t older_than_ms);
void server_live_metrics(server *s, struct sbuf *out);
size_t server_live_count(server *s);

/* Called after points are durable (any thread; keep it quick, no blocking
 * on the network: queue and return). */
typedef void (*server_points_hook)(server *s, const store_point *pts, size_t n, void *arg);
/* Called with each ingested event after its points are durable (f: what
 * the streaming reader read of it, or NULL). */
typedef void (*server_event_hook)(server *s, const char *json, size_t len,
                                  const server_event_fields *f, void *arg);
int server_on_points(server *s, server_points_hook fn, void *arg);
int server_on_event(server *s, server_event_hook fn, void *arg);

/* ---- routes ---- */

struct server_request;
/* What the transport that received a request answers about it (http.c). */
typedef struct server_request_ops {
    const char *(*param)(const struct server_request *r, const char *name, int i);
    const char *(*param_name)(const struct server_request *r, int i);
    const char *(*header)(const struct server_request *r, const char *name);
    int (*client_gone)(const struct server_request *r);
} server_request_ops;

typedef struct server_request {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* without the query string, e.g. "/api/put" */
    const char *body;   /* NUL-terminated (body[body_len] == 0) */
    size_t body_len;
    int from_peer;                 /* sent by a peer's fan-out: answer locally */
    int local;                     /* came over the Unix socket */
    void *conn;                    /* the transport's (private) */
    const server_request_ops *ops; /* NULL: no parameters, headers or connection */
} server_request;

/* The i-th value of a query-string parameter (NULL when absent); a
 * parameter given without value ("?summary") is "". */
const char *server_param(const server_request *r, const char *name);
const char *server_param_n(const server_request *r, const char *name, int i);
/* The name of the i-th query-string parameter, NULL past the last: a route
 * that answers 400 to parameters it does not know walks them with it. */
const char *server_param_name(const server_request *r, int i);
const char *server_header(const server_request *r, const char *name);
/* Nonzero once the client of r has closed its connection (a long query
 * stops working for nobody); 0 without a connection. */
int server_client_gone(const server_request *r);

#define SERVER_MAX_HEADERS 8
typedef struct server_response {
    int status;            /* default 200 */
    char content_type[64]; /* default application/json */
    char *body;            /* malloc'ed; freed by the server */
    size_t len;
    int nheaders;
    char headers[SERVER_MAX_HEADERS][2][128];
} server_response;

/* Helpers: the body is copied (or taken when *_take). */
void server_reply(server_response *w, int status, const char *ctype, const char *body, size_t len);
void server_reply_take(server_response *w, int status, const char *ctype, char *body, size_t len);
void server_replyf(server_response *w, int status, const char *ctype, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* OpenTSDB's error body {"error":{"code":..,"message":..,"details":..}}. */
void server_reply_error(server_response *w, int status, const char *message, const char *details);
void server_add_header(server_response *w, const char *name, const char *value);

typedef void (*server_handler)(server *s, const server_request *r, server_response *w, void *arg);

/* method: "GET", "POST", ... or NULL for any.  path: exact, or a prefix
 * when it ends with a star ("/web/" + star).  Later registrations of the same
 * method + path replace earlier ones.  A path that exists with another
 * method answers 405.  0 or -1 (table full). */
int server_route(server *s, const char *method, const char *path, server_handler fn, void *arg);
/* A wrapper of the route of method + path, registered before or after the
 * route itself (the peers module wraps the query module's routes to merge
 * the peers' answers): when the route exists, the wrapper runs instead of
 * it, with next the route it wraps; without the route it never runs.  One
 * wrapper per route; 0 or -1 (table full, or already wrapped). */
typedef struct server_next {
    server_handler fn;
    void *arg;
} server_next;
typedef void (*server_wrapper)(server *s, const server_request *r, server_response *w,
                               const server_next *next, void *arg);
int server_route_wrap(server *s, const char *method, const char *path, server_wrapper fn,
                      void *arg);

/* Answers a request through the route table without HTTP (unit tests, the
 * fuzz targets): r->ops NULL means no query parameters and no headers.
 * w must start zeroed with status 200; free w->body afterwards. */
void server_dispatch(server *s, const server_request *r, server_response *w);

/* ---- modules, background tasks, fan-out ---- */

typedef struct server_module {
    const char *name;
    /* After the store is open, before listening: routes, hooks, tasks.
     * *state is the module's own (NULL to start with); it is handed to
     * fini and is what the module passes as `arg` to the routes and hooks
     * it registers (redis' clientData, collectd's user_data_t): no module
     * keeps state in a global. */
    int (*init)(server *s, void **state, char *err, size_t errlen);
    /* Frees what init made, after the tasks and listeners stopped (also
     * right away when init fails having set *state). */
    void (*fini)(server *s, void *state);
} server_module;
/* In a module's .c file: SERVER_MODULE(node_module, "node", node_init, node_fini);
 * the program lists it (server_main.h SERVER_MODULES), so that a program,
 * a test or a fuzz target assembles the server it needs. */
#define SERVER_MODULE(var, name, init, fini) const server_module var = {name, init, fini};

/* The modules of src/server: the core API and the edge. */
extern const server_module core_module, ingest_module, query_module, node_module, peers_module,
    forward_module, consume_module;

/* A background task: start() after the listeners are up (return 0, or -1 +
 * err to abort start-up), stop() at shutdown, in reverse order, before the
 * store closes (a consumer stops acking, a forwarder flushes to its spool). */
typedef struct server_task {
    const char *name;
    int (*start)(server *s, void *arg, char *err, size_t errlen);
    void (*stop)(server *s, void *arg);
    void *arg;
} server_task;
int server_task_add(server *s, const server_task *t);

/* Fan-out to peers (--peers), installed by the peers module.  Sends the
 * same request (method, path with query string, body) to every peer in
 * parallel with the header "X-Jobscope-Peer: 1" (so peers answer from
 * their own data only) and the configured deadline.  Fills replies[i] for
 * each peer (status 0 = no answer in time / unreachable; body malloc'ed)
 * and returns the number of peers; warn gets "peer X: why; ..." when any
 * failed.  The API handlers merge the answers (query: raw series merged
 * before aggregation; suggest/lookup: union). */
typedef struct server_peer_reply {
    const char *peer;
    int status;
    char *body;
    size_t len;
} server_peer_reply;
typedef int (*server_fanout_fn)(server *s, const char *method, const char *path_query,
                                const char *body, size_t len, server_peer_reply **replies,
                                char *warn, size_t warnlen, void *arg);
void server_set_fanout(server *s, server_fanout_fn fn, void *arg);
/* Runs the fan-out when one is installed and the request is not itself from
 * a peer; 0 peers otherwise.  Free with server_peer_replies_free. */
int server_fanout(server *s, const server_request *r, const char *path_query, const char *body,
                  size_t len, server_peer_reply **replies, char *warn, size_t warnlen);
void server_peer_replies_free(server_peer_reply *r, int n);

/* Counters for /metrics (any module may add its own lines); the core's
 * /metrics handler runs them all. */
typedef void (*server_metrics_fn)(server *s, struct sbuf *out, void *arg);
int server_on_metrics(server *s, server_metrics_fn fn, void *arg);
void server_metrics_hooks(server *s, struct sbuf *out);

/* The server logs with js_log (util/log.h): `jobscope serve` names itself,
 * "2026-11-25T10:00:00Z jobscope serve: TOPIC: ...".  server_log is its
 * old name, kept only until the branches in flight that call it are
 * merged; new code calls js_log. */
#define server_log(s, ...) ((void)(s), js_log(1, NULL, __VA_ARGS__))

#endif
