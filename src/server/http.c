/* http.c — the HTTP layer of `jobscope serve`: libmicrohttpd daemons on the
 * TCP listener and on the Unix socket, both with a pool of worker threads,
 * the request body collected up to --body-limit (413 beyond), Bearer-token
 * authentication for TCP clients (constant-time comparison, checked on the
 * headers: a client without the token never sends a body), and dispatch
 * through the route table (server_route).
 *
 * What a hostile client can hold is bounded (docs/serve.md "Limits"):
 * connections per listener and per client address (libmicrohttpd), the
 * time to send the headers and the body (a watchdog thread shuts down the
 * sockets of connections past their deadline: slowloris), and the bytes of
 * bodies that all connections together hold (--body-memory: 503 beyond). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <pthread.h>
#include "server_priv.h"

/* The handler's closure: which listener a request came through. */
typedef struct listener {
    server *s;
    int local; /* the Unix socket: no token needed */
} listener;

typedef struct req_ctx {
    char *body;
    size_t len, cap;
    size_t expect;   /* Content-Length, when given */
    size_t reserved; /* bytes counted against --body-memory */
    int too_large;
    int busy;  /* --body-memory exhausted: discard, answer 503 */
    int local; /* Unix socket */
} req_ctx;

/* ---- deadlines of connections (slowloris) ----
 * One slot per open connection (libmicrohttpd's notify callback): its
 * socket and the moment by which the current phase must be over.  The
 * watchdog shuts down the socket of a connection past it; libmicrohttpd
 * then closes the connection (the slot goes in its CLOSED notification,
 * before the socket is closed, under the same lock, so the watchdog never
 * touches a descriptor that was reused). */
typedef struct conn_slot {
    struct conn_slot *next, *prev;
    int fd;
    int64_t deadline_ms; /* 0 = none (the handler runs, the answer is sent) */
    int waiting;         /* for a request's first bytes (new, or kept alive) */
} conn_slot;

struct server_http {
    pthread_mutex_t mu;
    conn_slot head; /* circular list */
    pthread_t watchdog;
    pthread_cond_t cond;
    int running, stop;
    size_t body_bytes; /* held by all connections (--body-memory) */
    unsigned long long cut, busy;
};

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void slot_deadline(server *s, conn_slot *c, double secs, int waiting)
{
    struct server_http *h = s->priv->http;
    if (!c || !h) return;
    pthread_mutex_lock(&h->mu);
    c->deadline_ms = secs > 0 ? mono_ms() + (int64_t)(secs * 1000) : 0;
    c->waiting = waiting;
    pthread_mutex_unlock(&h->mu);
}

/* A connection waiting for a request whose client has closed its side:
 * libmicrohttpd may not notice until its own timeout (a FIN that came
 * with the previous request), and meanwhile the slot counts against the
 * client's limit. */
static int peer_closed(int fd)
{
    char b;
    return fd >= 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    server *s = cls;
    struct server_http *h = s->priv->http;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_slot *c = calloc(1, sizeof *c);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx = c;
        if (!c) return;
        c->fd = ci ? ci->connect_fd : -1;
        c->deadline_ms = mono_ms() + (int64_t)(s->cfg.header_timeout_s * 1000);
        c->waiting = 1;
        pthread_mutex_lock(&h->mu);
        c->next = h->head.next;
        c->prev = &h->head;
        h->head.next->prev = c;
        h->head.next = c;
        pthread_mutex_unlock(&h->mu);
    } else if (*socket_ctx) {
        conn_slot *c = *socket_ctx;
        pthread_mutex_lock(&h->mu);
        c->prev->next = c->next;
        c->next->prev = c->prev;
        pthread_mutex_unlock(&h->mu);
        free(c);
        *socket_ctx = NULL;
    }
}

static void *watchdog(void *arg)
{
    server *s = arg;
    struct server_http *h = s->priv->http;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 250 * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->cond, &h->mu, &dl);
        int64_t now = mono_ms();
        for (conn_slot *c = h->head.next; c != &h->head; c = c->next) {
            if (!c->deadline_ms || c->fd < 0) continue;
            int late = now > c->deadline_ms;
            if (late || (c->waiting && peer_closed(c->fd))) {
                shutdown(c->fd, SHUT_RDWR);
                c->deadline_ms = 0;
                h->cut += late;
            }
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* The connection of a request (from its MHD connection), NULL in tests. */
static conn_slot *slot_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    return ci ? ci->socket_context : NULL;
}

int server_client_gone(const server_request *r)
{
    if (!r || !r->conn) return 0;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    char b;
    ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Counts n more bytes of body against --body-memory; 0, or -1 when that
 * would pass it. */
static int body_reserve(server *s, req_ctx *c, size_t n)
{
    struct server_http *h = s->priv->http;
    if (!h) return 0;
    int ok;
    pthread_mutex_lock(&h->mu);
    ok = h->body_bytes + n <= s->cfg.body_memory;
    if (ok) {
        h->body_bytes += n;
        c->reserved += n;
    } else
        h->busy++;
    pthread_mutex_unlock(&h->mu);
    return ok ? 0 : -1;
}

static void body_release(server *s, req_ctx *c)
{
    struct server_http *h = s->priv->http;
    if (!h || !c->reserved) return;
    pthread_mutex_lock(&h->mu);
    h->body_bytes -= c->reserved;
    pthread_mutex_unlock(&h->mu);
    c->reserved = 0;
}

void server_http_stats(server *s, unsigned long long *cut, unsigned long long *busy,
                       size_t *body_bytes)
{
    struct server_http *h = s->priv->http;
    *cut = *busy = 0;
    *body_bytes = 0;
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    *cut = h->cut;
    *busy = h->busy;
    *body_bytes = h->body_bytes;
    pthread_mutex_unlock(&h->mu);
}

/* ---- request accessors ---- */

struct param_walk {
    const char *name;
    int want, seen;
    const char *found;
};

static enum MHD_Result param_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    struct param_walk *w = cls;
    (void)kind;
    if (key && !strcmp(key, w->name)) {
        if (w->seen++ == w->want) {
            w->found = value ? value : "";
            return MHD_NO;
        }
    }
    return MHD_YES;
}

const char *server_param_n(const server_request *r, const char *name, int i)
{
    if (!r->conn) return NULL;
    struct param_walk w = {name, i, 0, NULL};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, param_iter, &w);
    return w.found;
}

struct name_walk {
    int want, seen;
    const char *found;
};

static enum MHD_Result name_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    struct name_walk *w = cls;
    (void)kind;
    (void)value;
    if (w->seen++ == w->want) {
        w->found = key ? key : "";
        return MHD_NO;
    }
    return MHD_YES;
}

const char *server_param_name(const server_request *r, int i)
{
    if (!r->conn) return NULL;
    struct name_walk w = {i, 0, NULL};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, name_iter, &w);
    return w.found;
}

const char *server_param(const server_request *r, const char *name)
{
    return server_param_n(r, name, 0);
}

const char *server_header(const server_request *r, const char *name)
{
    if (!r->conn) return NULL;
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* ---- responses ---- */

void server_reply_take(server_response *w, int status, const char *ctype, char *body, size_t len)
{
    free(w->body);
    w->status = status;
    snprintf(w->content_type, sizeof w->content_type, "%s", ctype ? ctype : "application/json");
    w->body = body;
    w->len = len;
}

void server_reply(server_response *w, int status, const char *ctype, const char *body, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        server_reply_take(w, 500, "text/plain", NULL, 0);
        return;
    }
    memcpy(copy, body, len);
    copy[len] = 0;
    server_reply_take(w, status, ctype, copy, len);
}

void server_replyf(server_response *w, int status, const char *ctype, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = NULL;
    int n = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (n < 0) {
        server_reply_take(w, 500, "text/plain", NULL, 0);
        return;
    }
    server_reply_take(w, status, ctype, p, (size_t)n);
}

/* JSON string escaping for messages we build ourselves. */
static void json_esc(sbuf *b, const char *s)
{
    sbuf_putc(b, '"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            sbuf_putc(b, '\\');
            sbuf_putc(b, (char)c);
        } else if (c < 0x20)
            sbuf_printf(b, "\\u%04x", c);
        else
            sbuf_putc(b, (char)c);
    }
    sbuf_putc(b, '"');
}

void server_reply_error(server_response *w, int status, const char *message, const char *details)
{
    sbuf b = {0};
    sbuf_printf(&b, "{\"error\":{\"code\":%d,\"message\":", status);
    json_esc(&b, message);
    if (details && *details) {
        sbuf_puts(&b, ",\"details\":");
        json_esc(&b, details);
    }
    sbuf_puts(&b, "}}");
    server_reply_take(w, status, "application/json", b.p, b.len);
}

void server_add_header(server_response *w, const char *name, const char *value)
{
    if (w->nheaders >= SERVER_MAX_HEADERS) return;
    snprintf(w->headers[w->nheaders][0], sizeof w->headers[0][0], "%s", name);
    snprintf(w->headers[w->nheaders][1], sizeof w->headers[0][1], "%s", value);
    w->nheaders++;
}

/* ---- dispatch ---- */

static int path_match(const char *pattern, const char *path)
{
    size_t l = strlen(pattern);
    if (l && pattern[l - 1] == '*') return !strncmp(pattern, path, l - 1);
    return !strcmp(pattern, path);
}

void server_dispatch(server *s, const server_request *r, server_response *w)
{
    server_priv *p = s->priv;
    int path_known = 0;
    /* Exact routes win over prefix routes; among equals the first. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < p->nroutes; i++) {
            server_route_entry *e = &p->routes[i];
            size_t l = strlen(e->path);
            int prefix = l && e->path[l - 1] == '*';
            if (prefix != pass || !path_match(e->path, r->path)) continue;
            if (e->method && strcmp(e->method, r->method) &&
                !(!strcmp(r->method, "HEAD") && !strcmp(e->method, "GET"))) {
                path_known = 1;
                continue;
            }
            e->fn(s, r, w, e->arg);
            return;
        }
    }
    if (path_known)
        server_reply_error(w, 405, "Method not allowed", r->method);
    else
        server_reply_error(w, 404, "Endpoint not found", r->path);
}

/* A body sent with Content-Encoding gzip or deflate (Influx and OpenTSDB
 * clients compress): inflated in place of the original, never beyond the
 * body limit.  0, or the HTTP status to answer (400, 413, 415). */
static int decode_body(req_ctx *c, const char *enc, size_t limit)
{
    if (!enc || !*enc || !strcasecmp(enc, "identity")) return 0;
    if (strcasecmp(enc, "gzip") && strcasecmp(enc, "x-gzip") && strcasecmp(enc, "deflate"))
        return 415;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) return 400; /* gzip or zlib header */
    size_t cap = c->len * 4 + 4096, len = 0;
    if (cap > limit + 1) cap = limit + 1;
    char *out = malloc(cap);
    int rc = Z_OK, status = 0;
    z.next_in = (Bytef *)(c->body ? c->body : "");
    z.avail_in = (uInt)c->len;
    while (out && rc != Z_STREAM_END) {
        if (len == cap) {
            if (cap > limit) {
                status = 413;
                break;
            }
            size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            char *n = realloc(out, ncap);
            if (!n) break;
            out = n;
            cap = ncap;
        }
        z.next_out = (Bytef *)out + len;
        z.avail_out = (uInt)(cap - len);
        rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
        if (rc == Z_BUF_ERROR && z.avail_in == 0) {
            status = 400;
            break;
        } /* truncated */
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
            status = 400;
            break;
        }
    }
    inflateEnd(&z);
    if (!out) return 413;
    if (!status && len > limit) status = 413;
    if (status) {
        free(out);
        return status;
    }
    char *n = realloc(out, len + 1);
    if (n)
        out = n;
    else if (len + 1 > cap) {
        free(out);
        return 413;
    }
    free(c->body);
    c->body = out;
    c->len = len;
    c->cap = len + 1;
    return 0;
}

/* Constant-time comparison of the presented token with ours. */
static int token_ok(const char *want, const char *auth)
{
    if (!auth || strncasecmp(auth, "Bearer ", 7)) return 0;
    const char *got = auth + 7;
    while (*got == ' ') got++;
    size_t lw = strlen(want), lg = strlen(got);
    unsigned char diff = (unsigned char)(lw != lg);
    for (size_t i = 0; i < lw; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < lg ? got[i] : 0);
    return diff == 0;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, server_response *w)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(w->len, w->body ? w->body : (char *)"",
                                        w->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(w->body);
        return MHD_NO;
    }
    w->body = NULL;
    if (w->len || w->status != 204)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, w->content_type);
    for (int i = 0; i < w->nheaders; i++)
        MHD_add_response_header(resp, w->headers[i][0], w->headers[i][1]);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)w->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    listener *ls = cls;
    server *s = ls->s;
    server_priv *p = s->priv;
    req_ctx *c = *con_cls;
    (void)version;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) return MHD_NO;
        c->local = ls->local;
        *con_cls = c;
        /* the headers are in: the body has its own deadline */
        slot_deadline(s, slot_of(conn), s->cfg.body_timeout_s, 0);
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long cln = cl ? strtoull(cl, NULL, 10) : 0;
        if (cln > s->cfg.body_limit)
            c->too_large = 1;
        else
            c->expect = (size_t)cln;
        /* Decided on the headers, before any byte of the body is read (the
         * answer is queued now and libmicrohttpd closes the connection
         * without reading the body): no token, a body announced as too
         * large, or one that all the bodies held now leave no room for. */
        server_response w = {.status = 200};
        if (!c->local && s->cfg.token &&
            !token_ok(s->cfg.token,
                      MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"))) {
            __atomic_add_fetch(&p->stats.unauthorized, 1, __ATOMIC_RELAXED);
            server_reply_error(&w, 401, "Unauthorized",
                               "a valid 'Authorization: Bearer TOKEN' header is required");
            server_add_header(&w, "WWW-Authenticate", "Bearer realm=\"jobscope\"");
        } else if (c->too_large) {
            __atomic_add_fetch(&p->stats.too_large, 1, __ATOMIC_RELAXED);
            char d[96];
            snprintf(d, sizeof d, "the request body is larger than the limit of %zu bytes",
                     s->cfg.body_limit);
            server_reply_error(&w, 413, "Request body too large", d);
        } else if (c->expect && body_reserve(s, c, c->expect + 1) < 0) {
            server_reply_error(&w, 503, "Server busy",
                               "request bodies held by other clients fill --body-memory; "
                               "try again later");
            server_add_header(&w, "Retry-After", "1");
        } else
            return MHD_YES;
        __atomic_add_fetch(&p->stats.requests, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(w.status >= 500 ? &p->stats.errors_5xx : &p->stats.errors_4xx, 1,
                           __ATOMIC_RELAXED);
        server_add_header(&w, "Connection", "close");
        return send_response(conn, &w);
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (c->too_large || c->busy || c->len + n > s->cfg.body_limit) {
            if (!c->busy) c->too_large = 1;
            return MHD_YES; /* discard, answer 413 at the end */
        }
        /* a body without Content-Length (chunked) is counted as it grows */
        if (c->len + n + 1 > c->reserved && body_reserve(s, c, c->len + n + 1 - c->reserved) < 0) {
            c->busy = 1;
            return MHD_YES;
        }
        if (c->len + n + 1 > c->cap) {
            /* the announced length at once: no copies, no doubling slack */
            size_t cap = c->cap ? c->cap : c->expect >= n ? c->expect + 1 : 4096;
            while (cap < c->len + n + 1) cap *= 2;
            if (cap > s->cfg.body_limit + 1) cap = s->cfg.body_limit + 1;
            char *b = realloc(c->body, cap);
            if (!b) {
                c->too_large = 1;
                return MHD_YES;
            }
            c->body = b;
            c->cap = cap;
        }
        memcpy(c->body + c->len, upload, n);
        c->len += n;
        return MHD_YES;
    }

    slot_deadline(s, slot_of(conn), 0, 0); /* the handler and the answer: no deadline */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    __atomic_add_fetch(&p->stats.requests, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->stats.bytes_in, c->len, __ATOMIC_RELAXED);
    server_response w = {.status = 200};
    strcpy(w.content_type, "application/json");
    server_request r = {
        .method = method,
        .path = url,
        .body = c->body ? c->body : "",
        .body_len = c->len,
        .local = c->local,
        .conn = conn,
    };
    if (c->body) c->body[c->len] = 0;
    const char *peer_hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Jobscope-Peer");
    r.from_peer = peer_hdr && *peer_hdr && strcmp(peer_hdr, "0");

    if (c->busy) {
        server_reply_error(&w, 503, "Server busy",
                           "request bodies held by other clients fill --body-memory; "
                           "try again later");
        server_add_header(&w, "Retry-After", "1");
        server_add_header(&w, "Connection", "close");
    } else if (c->too_large) {
        __atomic_add_fetch(&p->stats.too_large, 1, __ATOMIC_RELAXED);
        char d[96];
        snprintf(d, sizeof d, "the request body is larger than the limit of %zu bytes",
                 s->cfg.body_limit);
        server_reply_error(&w, 413, "Request body too large", d);
        server_add_header(&w, "Connection", "close");
    } else {
        int st =
            decode_body(c, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Encoding"),
                        s->cfg.body_limit);
        if (st == 413) {
            __atomic_add_fetch(&p->stats.too_large, 1, __ATOMIC_RELAXED);
            server_reply_error(&w, 413, "Request body too large",
                               "the decompressed body is larger than the limit");
        } else if (st == 415) {
            server_reply_error(&w, 415, "Unsupported Content-Encoding",
                               "gzip and deflate are supported");
        } else if (st) {
            server_reply_error(&w, 400, "Unable to decompress the request body", NULL);
        } else {
            r.body = c->body ? c->body : "";
            r.body_len = c->len;
            if (c->body) c->body[c->len] = 0;
            server_dispatch(s, &r, &w);
        }
    }
    if (w.status >= 500)
        __atomic_add_fetch(&p->stats.errors_5xx, 1, __ATOMIC_RELAXED);
    else if (w.status >= 400)
        __atomic_add_fetch(&p->stats.errors_4xx, 1, __ATOMIC_RELAXED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    pthread_mutex_lock(&p->lock);
    p->stats.request_seconds += dt;
    pthread_mutex_unlock(&p->lock);
    if (s->cfg.verbose)
        server_log(s, "%s %s -> %d (%.1f ms, %zu bytes in)", method, url, w.status, dt * 1e3,
                   c->len);
    return send_response(conn, &w);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    server *s = cls;
    (void)toe;
    req_ctx *c = *con_cls;
    if (c) {
        body_release(s, c);
        free(c->body);
        free(c);
        *con_cls = NULL;
    }
    /* kept alive: the next request's headers have the same deadline */
    slot_deadline(s, slot_of(conn), s->cfg.header_timeout_s, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    server *s = cls;
    if (!s->cfg.verbose) return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t l = strlen(line);
    while (l && line[l - 1] == '\n') line[--l] = 0;
    server_log(s, "http: %s", line);
}

/* ---- listeners ---- */

/* "ADDR:PORT", "[V6]:PORT", ":PORT" or "PORT".  Returns a listening socket. */
static int tcp_listen(const char *spec, int *port_out, char *err, size_t errlen)
{
    char host[256] = "", port[32] = "";
    const char *colon;
    if (spec[0] == '[') {
        const char *end = strchr(spec, ']');
        if (!end || end[1] != ':') goto bad;
        snprintf(host, sizeof host, "%.*s", (int)(end - spec - 1), spec + 1);
        snprintf(port, sizeof port, "%s", end + 2);
    } else if ((colon = strrchr(spec, ':'))) {
        snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
        snprintf(port, sizeof port, "%s", colon + 1);
    } else {
        snprintf(port, sizeof port, "%s", spec);
    }
    char *end;
    long pn = strtol(port, &end, 10);
    if (!*port || *end || pn < 0 || pn > 65535) goto bad;
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(*host ? host : NULL, port, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "--listen %s: %s", spec, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    char why[128] = "no address";
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 256) == 0) break;
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, errlen, "--listen %s: %s", spec, why);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
bad:
    snprintf(err, errlen, "--listen %s: expected ADDR:PORT, [IPV6]:PORT or PORT", spec);
    return -1;
}

/* A Unix socket in a 0700 directory; a stale socket (nobody answers) is
 * replaced, a live one is an error (another server runs). */
static int unix_listen(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "--socket %s: path too long", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    char dir[sizeof sa.sun_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "--socket %s: cannot create %s: %s", path, dir, strerror(errno));
            return -1;
        }
        /* The directory is the socket's protection: it must be this user's
         * and closed to everyone else (0700), like the one made above. */
        struct stat st;
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 077)) {
            snprintf(err, errlen,
                     "--socket %s: %s must be a directory of this user with mode 0700 "
                     "(give the socket a directory of its own)",
                     path, dir);
            return -1;
        }
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        close(fd);
        snprintf(err, errlen, "--socket %s: another server is listening there", path);
        return -1;
    }
    close(fd);
    unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    mode_t old = umask(0077);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || listen(fd, 256) < 0) {
        snprintf(err, errlen, "--socket %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static struct MHD_Daemon *start_daemon(server *s, int fd, int local)
{
    listener *ls = calloc(1, sizeof *ls);
    if (!ls) return NULL;
    ls->s = s;
    ls->local = local;
    if (local)
        s->priv->unix_ls = ls;
    else
        s->priv->tcp_ls = ls;
    unsigned threads = s->cfg.threads > 0 ? (unsigned)s->cfg.threads : 4;
    /* libmicrohttpd's per-thread share of the connection limit must leave
     * each worker some room */
    unsigned maxc = (unsigned)s->cfg.max_connections;
    if (maxc < threads * 4) maxc = threads * 4;
    return MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC, 0, NULL, NULL, on_request,
        ls, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, maxc,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->cfg.max_per_client,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)SERVER_HEADER_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
}

int server_http_start(server *s, char *err, size_t errlen)
{
    server_priv *p = s->priv;
    struct server_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cond, NULL);
    h->head.next = h->head.prev = &h->head;
    p->http = h;
    if (pthread_create(&h->watchdog, NULL, watchdog, s) == 0) h->running = 1;
    const char *l = s->cfg.listen;
    if (l && *l && strcmp(l, "none")) {
        int fd = tcp_listen(l, &p->tcp_port, err, errlen);
        if (fd < 0) return -1;
        p->http_tcp = start_daemon(s, fd, 0);
        if (!p->http_tcp) {
            close(fd);
            snprintf(err, errlen, "--listen %s: cannot start the HTTP server", l);
            return -1;
        }
    }
    const char *sp = s->cfg.socket_path;
    if (sp && *sp && strcmp(sp, "none")) {
        int fd = unix_listen(sp, err, errlen);
        if (fd < 0) {
            server_http_stop(s);
            return -1;
        }
        p->http_unix = start_daemon(s, fd, 1);
        if (!p->http_unix) {
            close(fd);
            unlink(sp);
            snprintf(err, errlen, "--socket %s: cannot start the HTTP server", sp);
            server_http_stop(s);
            return -1;
        }
        snprintf(p->socket_path, sizeof p->socket_path, "%s", sp);
    }
    if (!p->http_tcp && !p->http_unix) {
        snprintf(err, errlen, "nothing to listen on (--listen none and --socket none)");
        return -1;
    }
    return 0;
}

void server_http_stop(server *s)
{
    server_priv *p = s->priv;
    if (p->http_tcp) {
        MHD_stop_daemon(p->http_tcp);
        p->http_tcp = NULL;
    }
    if (p->http_unix) {
        MHD_stop_daemon(p->http_unix);
        p->http_unix = NULL;
        unlink(p->socket_path);
    }
    free(p->tcp_ls);
    free(p->unix_ls);
    p->tcp_ls = p->unix_ls = NULL;
    struct server_http *h = p->http;
    if (h) {
        if (h->running) {
            pthread_mutex_lock(&h->mu);
            h->stop = 1;
            pthread_cond_broadcast(&h->cond);
            pthread_mutex_unlock(&h->mu);
            pthread_join(h->watchdog, NULL);
        }
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cond);
        free(h);
        p->http = NULL;
    }
}

int server_tcp_port(server *s)
{
    return s->priv->tcp_port;
}
