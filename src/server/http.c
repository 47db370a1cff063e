/* http.c — the transport of `jobscope serve` (http.h): libmicrohttpd
 * daemons on the TCP listener and on the Unix socket, both with a pool of
 * worker threads; the request body collected up to --body-limit (413
 * beyond) and inflated (gzip, deflate); Bearer-token authentication for TCP
 * clients (constant-time comparison, checked on the headers: a client
 * without the token never sends a body); then the request goes to the one
 * dispatch function it was given.  It knows no route and no module.
 *
 * What a hostile client can hold is bounded (docs/serve.md "Limits"):
 * connections per listener and per client address (libmicrohttpd), the
 * time to send the headers and the body, and the bytes of bodies that all
 * connections together hold (conn_guard.c). */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "conn_guard.h"
#include "util/log.h"

/* The handler's closure: which listener a request came through. */
typedef struct listener {
    http_transport *t;
    int local; /* the Unix socket: no token needed */
} listener;

struct http_transport {
    const server_config *cfg;
    http_dispatch_fn dispatch;
    void *dispatch_arg;
    conn_guard *guard;
    struct MHD_Daemon *tcp, *unix_d;
    listener tcp_ls, unix_ls;
    int tcp_port; /* the port actually bound */
    char socket_path[256];
    pthread_mutex_t mu; /* request_seconds */
    unsigned long long requests, errors_4xx, errors_5xx, unauthorized, too_large, bytes_in;
    double request_seconds;
};

typedef struct req_ctx {
    char *body;
    size_t len, cap;
    size_t expect; /* Content-Length, when given */
    size_t held;   /* bytes counted against --body-memory */
    int too_large;
    int busy;  /* --body-memory exhausted: discard, answer 503 */
    int local; /* Unix socket */
} req_ctx;

#define COUNT(t, field, n) __atomic_add_fetch(&(t)->field, (n), __ATOMIC_RELAXED)

/* ---- connections ---- */

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    http_transport *t = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx = conn_guard_open(t->guard, ci ? ci->connect_fd : -1, t->cfg->header_timeout_s);
    } else if (*socket_ctx) {
        conn_guard_close(t->guard, *socket_ctx);
        *socket_ctx = NULL;
    }
}

/* The guard's slot of a request's connection. */
static conn_slot *slot_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    return ci ? ci->socket_context : NULL;
}

/* ---- what handlers ask of their request (server_request_ops) ---- */

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

static const char *req_param(const server_request *r, const char *name, int i)
{
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

static const char *req_param_name(const server_request *r, int i)
{
    struct name_walk w = {i, 0, NULL};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, name_iter, &w);
    return w.found;
}

static const char *req_header(const server_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static int req_client_gone(const server_request *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    char b;
    ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static const server_request_ops mhd_ops = {req_param, req_param_name, req_header, req_client_gone};

/* ---- bodies ---- */

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

/* The answer decided on the headers, before any byte of the body is read
 * (the answer is queued now and libmicrohttpd closes the connection
 * without reading the body): no token, a body announced as too large, or
 * one that all the bodies held now leave no room for.  0: go on. */
static int refuse_on_headers(http_transport *t, struct MHD_Connection *conn, req_ctx *c,
                             server_response *w)
{
    const server_config *cfg = t->cfg;
    if (!c->local && cfg->token &&
        !token_ok(cfg->token,
                  MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"))) {
        COUNT(t, unauthorized, 1);
        server_reply_error(w, 401, "Unauthorized",
                           "a valid 'Authorization: Bearer TOKEN' header is required");
        server_add_header(w, "WWW-Authenticate", "Bearer realm=\"jobscope\"");
    } else if (c->too_large) {
        COUNT(t, too_large, 1);
        char d[96];
        snprintf(d, sizeof d, "the request body is larger than the limit of %zu bytes",
                 cfg->body_limit);
        server_reply_error(w, 413, "Request body too large", d);
    } else if (c->expect && conn_guard_reserve(t->guard, &c->held, c->expect + 1) < 0) {
        server_reply_error(w, 503, "Server busy",
                           "request bodies held by other clients fill --body-memory; "
                           "try again later");
        server_add_header(w, "Retry-After", "1");
    } else
        return 0;
    return 1;
}

/* n more bytes of body: kept, or discarded when too large or refused. */
static void take_body(http_transport *t, req_ctx *c, const char *upload, size_t n)
{
    size_t limit = t->cfg->body_limit;
    if (c->too_large || c->busy || c->len + n > limit) {
        if (!c->busy) c->too_large = 1;
        return; /* discard, answer 413 at the end */
    }
    /* a body without Content-Length (chunked) is counted as it grows */
    if (c->len + n + 1 > c->held &&
        conn_guard_reserve(t->guard, &c->held, c->len + n + 1 - c->held) < 0) {
        c->busy = 1;
        return;
    }
    if (c->len + n + 1 > c->cap) {
        /* the announced length at once: no copies, no doubling slack */
        size_t cap = c->cap ? c->cap : c->expect >= n ? c->expect + 1 : 4096;
        while (cap < c->len + n + 1) cap *= 2;
        if (cap > limit + 1) cap = limit + 1;
        char *b = realloc(c->body, cap);
        if (!b) {
            c->too_large = 1;
            return;
        }
        c->body = b;
        c->cap = cap;
    }
    memcpy(c->body + c->len, upload, n);
    c->len += n;
}

/* The whole body is in: the answer (refused, or dispatched). */
static void answer(http_transport *t, struct MHD_Connection *conn, req_ctx *c, server_request *r,
                   server_response *w)
{
    const server_config *cfg = t->cfg;
    if (c->busy) {
        server_reply_error(w, 503, "Server busy",
                           "request bodies held by other clients fill --body-memory; "
                           "try again later");
        server_add_header(w, "Retry-After", "1");
        server_add_header(w, "Connection", "close");
        return;
    }
    if (c->too_large) {
        COUNT(t, too_large, 1);
        char d[96];
        snprintf(d, sizeof d, "the request body is larger than the limit of %zu bytes",
                 cfg->body_limit);
        server_reply_error(w, 413, "Request body too large", d);
        server_add_header(w, "Connection", "close");
        return;
    }
    int st = decode_body(c, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Encoding"),
                         cfg->body_limit);
    if (st == 413) {
        COUNT(t, too_large, 1);
        server_reply_error(w, 413, "Request body too large",
                           "the decompressed body is larger than the limit");
    } else if (st == 415) {
        server_reply_error(w, 415, "Unsupported Content-Encoding",
                           "gzip and deflate are supported");
    } else if (st) {
        server_reply_error(w, 400, "Unable to decompress the request body", NULL);
    } else {
        r->body = c->body ? c->body : "";
        r->body_len = c->len;
        if (c->body) c->body[c->len] = 0;
        t->dispatch(t->dispatch_arg, r, w);
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    listener *ls = cls;
    http_transport *t = ls->t;
    req_ctx *c = *con_cls;
    (void)version;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) return MHD_NO;
        c->local = ls->local;
        *con_cls = c;
        /* the headers are in: the body has its own deadline */
        conn_guard_deadline(t->guard, slot_of(conn), t->cfg->body_timeout_s, 0);
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long cln = cl ? strtoull(cl, NULL, 10) : 0;
        if (cln > t->cfg->body_limit)
            c->too_large = 1;
        else
            c->expect = (size_t)cln;
        server_response w = {.status = 200};
        if (!refuse_on_headers(t, conn, c, &w)) return MHD_YES;
        COUNT(t, requests, 1);
        if (w.status >= 500)
            COUNT(t, errors_5xx, 1);
        else
            COUNT(t, errors_4xx, 1);
        server_add_header(&w, "Connection", "close");
        return send_response(conn, &w);
    }
    if (*upload_size) {
        take_body(t, c, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }

    /* the handler and the answer: no deadline */
    conn_guard_deadline(t->guard, slot_of(conn), 0, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    COUNT(t, requests, 1);
    COUNT(t, bytes_in, c->len);
    server_response w = {.status = 200};
    strcpy(w.content_type, "application/json");
    server_request r = {
        .method = method,
        .path = url,
        .body = c->body ? c->body : "",
        .body_len = c->len,
        .local = c->local,
        .conn = conn,
        .ops = &mhd_ops,
    };
    if (c->body) c->body[c->len] = 0;
    const char *peer_hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Jobscope-Peer");
    r.from_peer = peer_hdr && *peer_hdr && strcmp(peer_hdr, "0");
    answer(t, conn, c, &r, &w);
    if (w.status >= 500)
        COUNT(t, errors_5xx, 1);
    else if (w.status >= 400)
        COUNT(t, errors_4xx, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    pthread_mutex_lock(&t->mu);
    t->request_seconds += dt;
    pthread_mutex_unlock(&t->mu);
    js_log(t->cfg->verbose, NULL, "%s %s -> %d (%.1f ms, %zu bytes in)", method, url, w.status,
           dt * 1e3, c->len);
    return send_response(conn, &w);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_transport *t = cls;
    (void)toe;
    req_ctx *c = *con_cls;
    if (c) {
        conn_guard_release(t->guard, &c->held);
        free(c->body);
        free(c);
        *con_cls = NULL;
    }
    /* kept alive: the next request's headers have the same deadline */
    conn_guard_deadline(t->guard, slot_of(conn), t->cfg->header_timeout_s, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    http_transport *t = cls;
    if (!t->cfg->verbose) return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t l = strlen(line);
    while (l && line[l - 1] == '\n') line[--l] = 0;
    js_log(1, "http", "%s", line);
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

static struct MHD_Daemon *start_daemon(http_transport *t, int fd, listener *ls)
{
    const server_config *cfg = t->cfg;
    unsigned threads = cfg->threads > 0 ? (unsigned)cfg->threads : 4;
    /* libmicrohttpd's per-thread share of the connection limit must leave
     * each worker some room */
    unsigned maxc = (unsigned)cfg->max_connections;
    if (maxc < threads * 4) maxc = threads * 4;
    return MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC, 0, NULL, NULL, on_request,
        ls, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, t, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, maxc,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_per_client,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)HTTP_HEADER_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, on_completed, t,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, t, MHD_OPTION_END);
}

http_transport *http_start(const server_config *cfg, http_dispatch_fn fn, void *arg, char *err,
                           size_t errlen)
{
    http_transport *t = calloc(1, sizeof *t);
    if (!t || !(t->guard = conn_guard_new(cfg->body_memory))) {
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->cfg = cfg;
    t->dispatch = fn;
    t->dispatch_arg = arg;
    t->tcp_ls = (listener){t, 0};
    t->unix_ls = (listener){t, 1};
    pthread_mutex_init(&t->mu, NULL);
    const char *l = cfg->listen;
    if (l && *l && strcmp(l, "none")) {
        int fd = tcp_listen(l, &t->tcp_port, err, errlen);
        if (fd < 0) goto fail;
        if (!(t->tcp = start_daemon(t, fd, &t->tcp_ls))) {
            close(fd);
            snprintf(err, errlen, "--listen %s: cannot start the HTTP server", l);
            goto fail;
        }
    }
    const char *sp = cfg->socket_path;
    if (sp && *sp && strcmp(sp, "none")) {
        int fd = unix_listen(sp, err, errlen);
        if (fd < 0) goto fail;
        if (!(t->unix_d = start_daemon(t, fd, &t->unix_ls))) {
            close(fd);
            unlink(sp);
            snprintf(err, errlen, "--socket %s: cannot start the HTTP server", sp);
            goto fail;
        }
        snprintf(t->socket_path, sizeof t->socket_path, "%s", sp);
    }
    if (!t->tcp && !t->unix_d) {
        snprintf(err, errlen, "nothing to listen on (--listen none and --socket none)");
        goto fail;
    }
    return t;
fail:
    http_stop(t);
    return NULL;
}

void http_stop(http_transport *t)
{
    if (!t) return;
    if (t->tcp) MHD_stop_daemon(t->tcp);
    if (t->unix_d) {
        MHD_stop_daemon(t->unix_d);
        unlink(t->socket_path);
    }
    conn_guard_free(t->guard);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

int http_tcp_port(const http_transport *t)
{
    return t ? t->tcp_port : 0;
}

void http_stats(http_transport *t, server_stats *st)
{
    if (!t) return;
    st->requests = __atomic_load_n(&t->requests, __ATOMIC_RELAXED);
    st->errors_4xx = __atomic_load_n(&t->errors_4xx, __ATOMIC_RELAXED);
    st->errors_5xx = __atomic_load_n(&t->errors_5xx, __ATOMIC_RELAXED);
    st->unauthorized = __atomic_load_n(&t->unauthorized, __ATOMIC_RELAXED);
    st->too_large = __atomic_load_n(&t->too_large, __ATOMIC_RELAXED);
    st->bytes_in = __atomic_load_n(&t->bytes_in, __ATOMIC_RELAXED);
    pthread_mutex_lock(&t->mu);
    st->request_seconds = t->request_seconds;
    pthread_mutex_unlock(&t->mu);
    conn_guard_stats(t->guard, &st->cut, &st->busy, &st->body_bytes);
}
