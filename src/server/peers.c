/* peers.c — the peers module (see peers.h): the fan-out to peer nodes, the
 * merging of /api/query's raw series and the wrappers of the query
 * module's routes; the other answers are merged by peers_merge.c.  One
 * libcurl multi handle per request: every peer (and, for /api/query, every
 * sub-query) is asked at once, and nothing waits beyond the deadline
 * (--peer-timeout). */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "peers.h"
#include "api_query.h"
#include "sink/url.h"
#include "util/log.h"

#define PEERS_MAX_BODY (64L << 20) /* a peer answer larger than this, inflated, is refused */

typedef struct peer {
    char *spec; /* as configured, for messages */
    char *base; /* http://HOST:PORT */
} peer;

/* The read endpoints are the core's (api_query.c); this module wraps them:
 * a request from a client (not a peer) with peers configured is answered
 * by the core locally (as if from a peer) and merged with the peers'
 * answers.  /api/query?raw=1 and /api/query with peers are answered here. */

struct peers_state;
/* The arg of a wrapper (server_route_wrap): what it merges, for whom. */
typedef struct route_wrap {
    enum peers_kind kind;
    struct peers_state *ps;
} route_wrap;

#define MAX_WRAPS 16

/* The module's state (server_module's *state, every route's and hook's arg). */
typedef struct peers_state {
    route_wrap wraps[MAX_WRAPS];
    int nwraps;
    server *srv;
    peer *v;
    int n;
    int self_check; /* --listen with port 0: drop our own entry once the port is known */
    pthread_mutex_t mu;
    double timeout_s;
    char *auth; /* "Authorization: Bearer ..." or NULL */
} peers_state;

static int is_self(const char *base, int own_port);

/* With --listen ADDR:0 the port is known only once listening: the first
 * request removes this server's own entry then. */
static void late_self_check(peers_state *ps)
{
    if (!__atomic_load_n(&ps->self_check, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&ps->mu);
    if (ps->self_check) {
        int port = server_tcp_port(ps->srv), k = 0;
        for (int i = 0; i < ps->n; i++) {
            if (port > 0 && is_self(ps->v[i].base, port)) {
                js_log(1, "peers", "%s is this server; left out", ps->v[i].spec);
                free(ps->v[i].spec);
                free(ps->v[i].base);
                continue;
            }
            ps->v[k++] = ps->v[i];
        }
        ps->n = k;
        __atomic_store_n(&ps->self_check, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&ps->mu);
}

/* The configured peers (after self-removal); 0 when not fanning out. */
static int peers_count(peers_state *p)
{
    if (p) late_self_check(p);
    return p ? p->n : 0;
}

/* ---- configuration ---- */

int peers_base_url(const char *spec, char *out, size_t outlen, char *err, size_t errlen)
{
    const char *h = spec;
    int tls = 0;
    if (!strncmp(h, "http://", 7))
        h += 7;
    else if (!strncmp(h, "https://", 8)) {
        h += 8;
        tls = 1;
    } else if (strstr(h, "://")) {
        snprintf(err, errlen, "peer '%s': only http:// and https:// peers are supported", spec);
        return -1;
    }
    size_t hl = strcspn(h, "/");
    char host[256];
    if (hl == 0 || hl >= sizeof host) {
        snprintf(err, errlen, "peer '%s': expected HOST[:PORT]", spec);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    const char *colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
    if (colon && host[0] == '[') colon++;
    long port = 4242;
    if (colon) {
        char *end;
        port = strtol(colon + 1, &end, 10);
        if (*end || port <= 0 || port > 65535) {
            snprintf(err, errlen, "peer '%s': bad port", spec);
            return -1;
        }
        host[colon - host] = 0;
    } else if (host[0] == '[' && !strchr(host, ']')) {
        snprintf(err, errlen, "peer '%s': expected [ADDRESS]:PORT", spec);
        return -1;
    }
    if (!host[0] ||
        strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_[]:") !=
            strlen(host)) {
        snprintf(err, errlen, "peer '%s': bad host name", spec);
        return -1;
    }
    snprintf(out, outlen, "%s://%s:%ld", tls ? "https" : "http", host, port);
    return 0;
}

static int peers_routes(peers_state *ps, server *s, char *err, size_t errlen);

static int strlist_add(server_strlist *l, const char *v)
{
    char **nv = realloc(l->v, (size_t)(l->n + 1) * sizeof *nv);
    if (!nv) return -1;
    l->v = nv;
    if (!(l->v[l->n] = strdup(v))) return -1;
    l->n++;
    return 0;
}

/* Is host:port this very server?  The port must be ours and the address one
 * of this machine's (a socket can be bound to it). */
static int is_self(const char *base, int own_port)
{
    if (own_port <= 0) return 0;
    const char *h = strstr(base, "://") + 3;
    char host[256];
    const char *colon = strrchr(h, ':');
    if (!colon || atoi(colon + 1) != own_port) return 0;
    size_t hl = (size_t)(colon - h);
    if (hl >= sizeof host) return 0;
    memcpy(host, h, hl);
    host[hl] = 0;
    if (host[0] == '[') {
        memmove(host, host + 1, hl);
        char *rb = strchr(host, ']');
        if (rb) *rb = 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0) return 0;
    int self = 0;
    for (struct addrinfo *a = res; a && !self; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0) self = 1; /* port 0 in the result */
        close(fd);
    }
    freeaddrinfo(res);
    return self;
}

static int own_port(const server *s)
{
    const char *l = s->cfg.listen;
    if (!l || !*l || !strcmp(l, "none")) return 0;
    const char *c = strrchr(l, ':');
    return c ? atoi(c + 1) : 4242;
}

/* ---- the multi transfer ---- */

typedef struct xfer {
    const peer *p;
    char *url;
    const char *method;
    const char *body;
    size_t len;
    /* out */
    int status; /* HTTP status, 0 = none */
    char *resp;
    size_t rlen, rcap;
    char why[200];
    CURL *h;
    char errbuf[CURL_ERROR_SIZE];
} xfer;

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    xfer *x = arg;
    size_t n = size * nmemb;
    if (x->rlen + n + 1 > x->rcap) {
        size_t cap = x->rcap ? x->rcap * 2 : 16384;
        while (cap < x->rlen + n + 1) cap *= 2;
        if (cap > (size_t)PEERS_MAX_BODY) cap = (size_t)PEERS_MAX_BODY;
        if (x->rlen + n + 1 > cap) { /* curl stops the transfer: a partial answer */
            snprintf(x->why, sizeof x->why, "answer larger than %ld MiB", PEERS_MAX_BODY >> 20);
            return 0;
        }
        char *nb = realloc(x->resp, cap);
        if (!nb) return 0;
        x->resp = nb;
        x->rcap = cap;
    }
    memcpy(x->resp + x->rlen, data, n);
    x->rlen += n;
    x->resp[x->rlen] = 0;
    return n;
}

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Runs every transfer at once; returns when all finished or the deadline
 * passed (the unfinished ones then say so). */
static void run_all(peers_state *ps, xfer *x, int n)
{
    CURLM *m = curl_multi_init();
    struct curl_slist *hdr = NULL;
    hdr = curl_slist_append(hdr, "X-Jobscope-Peer: 1");
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Expect:");
    if (ps->auth) hdr = curl_slist_append(hdr, ps->auth);
    long ms = (long)(ps->timeout_s * 1000);
    if (ms < 1) ms = 1;
    for (int i = 0; i < n; i++) {
        CURL *h = curl_easy_init();
        x[i].h = h;
        if (!h) {
            snprintf(x[i].why, sizeof x[i].why, "out of memory");
            continue;
        }
        curl_easy_setopt(h, CURLOPT_URL, x[i].url);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &x[i]);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x[i].errbuf);
        curl_easy_setopt(h, CURLOPT_PRIVATE, &x[i]);
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
        if (!strcmp(x[i].method, "POST")) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x[i].len);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, x[i].body ? x[i].body : "");
        } else if (strcmp(x[i].method, "GET")) {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x[i].method);
        }
        curl_multi_add_handle(m, h);
    }
    double deadline = mono() + ps->timeout_s + 0.25;
    int running = 1;
    while (running) {
        if (curl_multi_perform(m, &running) != CURLM_OK) break;
        if (!running || mono() > deadline) break;
        curl_multi_poll(m, NULL, 0, 50, NULL);
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        xfer *xi = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&xi);
        if (!xi) continue;
        if (msg->data.result == CURLE_OK) {
            long code = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
            xi->status = (int)code;
            if (code != 200)
                snprintf(xi->why, sizeof xi->why, "HTTP %ld%s%.120s", code, xi->rlen ? ": " : "",
                         xi->rlen ? xi->resp : "");
        } else if (xi->why[0]) { /* said already (too large) */
        } else if (msg->data.result == CURLE_OPERATION_TIMEDOUT) {
            snprintf(xi->why, sizeof xi->why, "no answer within %.1f s", ps->timeout_s);
        } else {
            snprintf(xi->why, sizeof xi->why, "%.190s",
                     xi->errbuf[0] ? xi->errbuf : curl_easy_strerror(msg->data.result));
        }
    }
    for (int i = 0; i < n; i++) {
        if (!x[i].h) continue;
        if (!x[i].status && !x[i].why[0])
            snprintf(x[i].why, sizeof x[i].why, "no answer within %.1f s", ps->timeout_s);
        curl_multi_remove_handle(m, x[i].h);
        curl_easy_cleanup(x[i].h);
        x[i].h = NULL;
    }
    curl_multi_cleanup(m);
    curl_slist_free_all(hdr);
}

static void warn_add(char *warn, size_t wlen, const char *spec, const char *why)
{
    size_t l = strlen(warn);
    if (strstr(warn, spec)) return; /* one line per peer */
    snprintf(warn + l, wlen > l ? wlen - l : 0, "%speer %s: %s", l ? "; " : "", spec, why);
}

/* The server's fan-out hook (server.h: server_fanout_fn). */
static int fanout(server *s, const char *method, const char *path_query, const char *body,
                  size_t len, server_peer_reply **replies, char *warn, size_t warnlen, void *arg)
{
    peers_state *ps = arg;
    *replies = NULL;
    if (warn && warnlen) warn[0] = 0;
    late_self_check(ps);
    if (ps->n == 0) return 0;
    xfer *x = calloc((size_t)ps->n, sizeof *x);
    server_peer_reply *r = calloc((size_t)ps->n, sizeof *r);
    if (!x || !r) {
        free(x);
        free(r);
        return 0;
    }
    for (int i = 0; i < ps->n; i++) {
        x[i].p = &ps->v[i];
        size_t ul = strlen(ps->v[i].base) + strlen(path_query) + 1;
        x[i].url = malloc(ul);
        if (x[i].url) snprintf(x[i].url, ul, "%s%s", ps->v[i].base, path_query);
        x[i].method = method;
        x[i].body = body;
        x[i].len = len;
    }
    run_all(ps, x, ps->n);
    for (int i = 0; i < ps->n; i++) {
        r[i].peer = ps->v[i].spec;
        r[i].status = x[i].status;
        r[i].body = x[i].resp;
        r[i].len = x[i].rlen;
        if (x[i].status != 200 && warn) warn_add(warn, warnlen, ps->v[i].spec, x[i].why);
        free(x[i].url);
    }
    free(x);
    *replies = r;
    return ps->n;
}

/* ---- /api/query ---- */

static const char *filter_name(tsq_filter_type t)
{
    switch (t) {
    case TSQ_LITERAL_OR:
        return "literal_or";
    case TSQ_ILITERAL_OR:
        return "iliteral_or";
    case TSQ_NOT_LITERAL_OR:
        return "not_literal_or";
    case TSQ_NOT_ILITERAL_OR:
        return "not_iliteral_or";
    case TSQ_WILDCARD:
        return "wildcard";
    case TSQ_IWILDCARD:
        return "iwildcard";
    case TSQ_REGEXP:
        return "regexp";
    case TSQ_NOT_KEY:
        return "not_key";
    }
    return "literal_or";
}

/* The body that asks a peer for the raw series of one sub-query: absolute
 * times (the asking node's "now"), the metric and the filters. */
static char *raw_body(const tsq_query *q, const tsq_sub *sub, size_t *len)
{
    json_t *fl = json_array();
    for (int i = 0; i < sub->nfilters; i++) {
        const tsq_filter *f = &sub->filters[i];
        json_array_append_new(fl, json_pack("{s:s,s:s,s:s,s:b}", "type", filter_name(f->type),
                                            "tagk", f->tagk ? f->tagk : "", "filter",
                                            f->filter ? f->filter : "", "groupBy", f->group_by));
    }
    json_t *sq = json_pack("{s:s,s:s,s:o,s:b}", "metric", sub->metric, "aggregator", "none",
                           "filters", fl, "explicitTags", sub->explicit_tags);
    /* the downsampling interval widens the range read (bucket alignment):
     * the peer must read what this node reads */
    json_t *echo = sub->echo_json ? json_loads(sub->echo_json, 0, NULL) : NULL;
    json_t *ds = json_object_get(echo, "downsample");
    if (sq && json_is_string(ds)) json_object_set(sq, "downsample", ds);
    json_decref(echo);
    json_t *root = json_pack("{s:I,s:I,s:b,s:[o]}", "start", (json_int_t)q->start_ms, "end",
                             (json_int_t)q->end_ms, "msResolution", 1, "queries", sq);
    char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    *len = s ? strlen(s) : 0;
    return s;
}

/* OpenTSDB's answer for a metric the store has never seen. */
static int unknown_metric(int code, const char *text)
{
    return code == 400 && text && strstr(text, "No such name for 'metrics'");
}

/* /api/query over the allocation: local raw series plus every peer's, then
 * tsq_eval per sub-query into out.  warn gets the missing peers ("" when
 * none).  0, or -1 + err (the query itself is wrong). */
static int peers_query(peers_state *ps, server *s, const server_request *r, const tsq_query *q,
                       tsq_result *out, tsq_error *err, char *warn, size_t warnlen)
{
    if (warn && warnlen) warn[0] = 0;
    if (ps) late_self_check(ps);
    int remote = ps && ps->n > 0 && !(r && r->from_peer);
    int nx = remote ? ps->n * q->nsubs : 0;
    xfer *x = nx ? calloc((size_t)nx, sizeof *x) : NULL;
    char **bodies = remote ? calloc((size_t)q->nsubs, sizeof *bodies) : NULL;
    if (remote && (!x || !bodies)) {
        free(x);
        free(bodies);
        err->code = 500;
        snprintf(err->message, sizeof err->message, "out of memory");
        return -1;
    }
    if (remote) {
        for (int k = 0; k < q->nsubs; k++) {
            size_t bl = 0;
            bodies[k] = raw_body(q, &q->subs[k], &bl);
            for (int i = 0; i < ps->n; i++) {
                xfer *xi = &x[k * ps->n + i];
                xi->p = &ps->v[i];
                size_t ul = strlen(ps->v[i].base) + 32;
                xi->url = malloc(ul);
                if (xi->url) snprintf(xi->url, ul, "%s/api/query?raw=1", ps->v[i].base);
                xi->method = "POST";
                xi->body = bodies[k];
                xi->len = bl;
            }
        }
        run_all(ps, x, nx);
    }
    int rc = 0;
    for (int k = 0; k < q->nsubs && rc == 0; k++) {
        tsq_set set = {0};
        /* A metric this node has never seen may live on a peer: it is an
         * error only when no node knows it. */
        int known = 0;
        tsq_error lerr;
        memset(&lerr, 0, sizeof lerr);
        if (tsq_fetch_local(s->st, q, &q->subs[k], &set, &lerr) == 0)
            known = 1;
        else if (!remote || !unknown_metric(lerr.code, lerr.message)) {
            *err = lerr;
            tsq_set_free(&set);
            rc = -1;
            break;
        }
        for (int i = 0; remote && i < ps->n; i++) {
            xfer *xi = &x[k * ps->n + i];
            if (xi->status == 200 && xi->resp && tsq_set_parse(xi->resp, xi->rlen, &set) == 0) {
                known = 1;
                continue;
            }
            if (xi->status == 400 && unknown_metric(400, xi->resp)) continue;
            if (xi->status == 200) snprintf(xi->why, sizeof xi->why, "unreadable raw answer");
            if (warn) warn_add(warn, warnlen, ps->v[i].spec, xi->why);
        }
        if (!known) {
            *err = lerr;
            tsq_set_free(&set);
            rc = -1;
            break;
        }
        if (tsq_eval(q, &q->subs[k], &set, out, err) != 0) rc = -1;
        tsq_set_free(&set);
    }
    for (int i = 0; i < nx; i++) {
        free(x[i].url);
        free(x[i].resp);
    }
    for (int k = 0; bodies && k < q->nsubs; k++) free(bodies[k]);
    free(bodies);
    free(x);
    return rc;
}

char *peers_raw_answer(server *s, const tsq_query *q, size_t *len, tsq_error *err)
{
    sbuf b = {0};
    if (q->nsubs != 1) sbuf_putc(&b, '[');
    for (int k = 0; k < q->nsubs; k++) {
        tsq_set set = {0};
        if (tsq_fetch_local(s->st, q, &q->subs[k], &set, err) != 0) {
            tsq_set_free(&set);
            free(b.p);
            return NULL;
        }
        size_t l = 0;
        char *j = tsq_set_json(&set, &l);
        tsq_set_free(&set);
        if (!j) {
            free(b.p);
            err->code = 500;
            snprintf(err->message, sizeof err->message, "cannot encode the raw series");
            return NULL;
        }
        if (k) sbuf_putc(&b, ',');
        sbuf_put(&b, j, l);
        free(j);
    }
    if (q->nsubs != 1) sbuf_putc(&b, ']');
    *len = b.len;
    return b.p;
}

/* ---- the routes ---- */

static const char *param_fn(void *arg, const char *name, int i)
{
    return server_param_n(arg, name, i);
}

static int truthy(const char *v)
{
    return v && strcmp(v, "0") && strcmp(v, "false") && strcmp(v, "no");
}

static void reply_tsq_error(server_response *w, tsq_error *e)
{
    size_t l = 0;
    char *j = tsq_error_json(e, &l);
    if (j)
        server_reply_take(w, e->code ? e->code : 400, "application/json", j, l);
    else
        server_reply_error(w, e->code ? e->code : 400, e->message, e->details);
}

static void h_query(server *s, const server_request *r, server_response *w, const server_next *next,
                    void *arg)
{
    route_wrap *wp = arg;
    int raw = truthy(server_param(r, "raw"));
    if (!raw && (peers_count(wp->ps) == 0 || r->from_peer)) {
        next->fn(s, r, w, next->arg);
        return;
    }
    tsq_query q;
    memset(&q, 0, sizeof q);
    tsq_error e;
    memset(&e, 0, sizeof e);
    int64_t now = server_now_ms();
    int rc = !strcmp(r->method, "POST") && r->body_len
                 ? tsq_parse_json(r->body, r->body_len, now, &q, &e)
                 : tsq_parse_get(param_fn, (void *)r, now, &q, &e);
    if (rc == 0) rc = server_query_check_size(&q, &e);
    if (rc != 0) {
        reply_tsq_error(w, &e);
        tsq_query_free(&q);
        return;
    }
    const char *arrays = server_param(r, "arrays");
    if (arrays) q.arrays = truthy(arrays);
    server_query_guard(s, r, &q);
    size_t len = 0;
    char *body = NULL;
    if (raw) {
        body = peers_raw_answer(s, &q, &len, &e);
    } else {
        tsq_result res;
        memset(&res, 0, sizeof res);
        char warn[1024];
        if (peers_query(wp->ps, s, r, &q, &res, &e, warn, sizeof warn) == 0 &&
            server_query_check_answer(&res, &e) == 0) {
            body = tsq_result_json(&q, &res, &len);
            if (!body) {
                e.code = 500;
                snprintf(e.message, sizeof e.message, "cannot encode the answer");
            }
            peers_mark_partial(s, w, "/api/query", warn);
        }
        tsq_result_free(&res);
    }
    if (body)
        server_reply_take(w, 200, "application/json", body, len);
    else
        reply_tsq_error(w, &e);
    tsq_query_free(&q);
}

/* The query string of the parameters an endpoint understands. */
static void add_params(sbuf *b, const server_request *r, const char *const *names)
{
    for (int k = 0; names[k]; k++)
        for (int i = 0;; i++) {
            const char *v = server_param_n(r, names[k], i);
            if (!v) break;
            char *ev = net_url_encode(v);
            sbuf_putc(b, b->len && strchr(b->p, '?') ? '&' : '?');
            sbuf_puts(b, names[k]);
            if (*v) {
                sbuf_putc(b, '=');
                sbuf_puts(b, ev ? ev : "");
            }
            free(ev);
        }
}

static void h_merge(server *s, const server_request *r, server_response *w, const server_next *next,
                    void *arg)
{
    route_wrap *wp = arg;
    if (peers_count(wp->ps) == 0 || r->from_peer) {
        next->fn(s, r, w, next->arg);
        return;
    }
    server_request local = *r;
    local.from_peer = 1; /* the core answers from this node only */
    next->fn(s, &local, w, next->arg);
    if (w->status != 200 || !w->body) return;
    static const char *const suggest_p[] = {"type", "q", "max", NULL};
    static const char *const lookup_p[] = {"m", "limit", "useMeta", NULL};
    static const char *const last_p[] = {"timeseries", "tsuids", "back_scan", "resolve", NULL};
    sbuf pq = {0};
    sbuf_puts(&pq, r->path);
    add_params(&pq, r,
               wp->kind == PEERS_SUGGEST  ? suggest_p
               : wp->kind == PEERS_LOOKUP ? lookup_p
                                          : last_p);
    server_peer_reply *rep = NULL;
    char warn[1024] = "";
    int n =
        server_fanout(s, r, pq.p ? pq.p : r->path, r->body, r->body_len, &rep, warn, sizeof warn);
    for (int i = 0; i < n; i++)
        if (rep[i].status == 200 && !peers_answer_valid(wp->kind, &rep[i])) {
            rep[i].status = 0; /* left out of the merge */
            warn_add(warn, sizeof warn, rep[i].peer, "unreadable answer");
        }
    size_t len = 0;
    char *merged = NULL;
    if (wp->kind == PEERS_SUGGEST) {
        const char *mx = server_param(r, "max");
        merged = peers_merge_suggest(w->body, w->len, rep, n, mx && *mx ? atoi(mx) : 25, &len);
    } else if (wp->kind == PEERS_LOOKUP) {
        merged = peers_merge_lookup(w->body, w->len, rep, n, &len);
    } else {
        merged = peers_merge_concat(w->body, w->len, rep, n, &len);
    }
    if (merged) {
        free(w->body);
        w->body = merged;
        w->len = len;
    }
    peers_mark_partial(s, w, r->path, warn);
    server_peer_replies_free(rep, n);
    sbuf_free(&pq);
}

/* Wraps the query module's route of method + path (through the module
 * interface: the route stays the query module's, whenever it registers). */
static int wrap_route(peers_state *ps, server *s, const char *method, const char *path,
                      enum peers_kind kind, server_wrapper fn)
{
    if (ps->nwraps >= MAX_WRAPS) return -1;
    route_wrap *wp = &ps->wraps[ps->nwraps++];
    wp->kind = kind;
    wp->ps = ps;
    return server_route_wrap(s, method, path, fn, wp);
}

static int peers_routes(peers_state *ps, server *s, char *err, size_t errlen)
{
    if (wrap_route(ps, s, "POST", "/api/query", PEERS_QUERY, h_query) < 0 ||
        wrap_route(ps, s, "GET", "/api/query", PEERS_QUERY, h_query) < 0 ||
        wrap_route(ps, s, "GET", "/api/suggest", PEERS_SUGGEST, h_merge) < 0 ||
        wrap_route(ps, s, "POST", "/api/suggest", PEERS_SUGGEST, h_merge) < 0 ||
        wrap_route(ps, s, "GET", "/api/search/lookup", PEERS_LOOKUP, h_merge) < 0 ||
        wrap_route(ps, s, "POST", "/api/search/lookup", PEERS_LOOKUP, h_merge) < 0 ||
        wrap_route(ps, s, "GET", "/api/query/last", PEERS_LAST, h_merge) < 0 ||
        wrap_route(ps, s, "POST", "/api/query/last", PEERS_LAST, h_merge) < 0) {
        snprintf(err, errlen, "peers: route table full");
        return -1;
    }
    return 0;
}

/* ---- the module ---- */

static void peers_fini(server *s, void *state);

static int peers_init(server *s, void **state, char *err, size_t errlen)
{
    server_strlist all = {0};
    peers_state *ps = NULL;
    for (int i = 0; i < s->cfg.peers.n; i++) {
        /* each entry may itself be a comma-separated list */
        const char *p = s->cfg.peers.v[i];
        while (*p) {
            size_t l = strcspn(p, ", \t");
            if (l) {
                char one[512];
                snprintf(one, sizeof one, "%.*s", (int)(l < 511 ? l : 511), p);
                strlist_add(&all, one);
            }
            p += l;
            p += strspn(p, ", \t");
        }
    }
    /* serve.c has read --peers-file into cfg.peers already */
    ps = calloc(1, sizeof *ps);
    if (!ps || !(ps->v = calloc((size_t)(all.n ? all.n : 1), sizeof *ps->v))) {
        free(ps);
        ps = NULL;
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&ps->mu, NULL);
    *state = ps;
    if (all.n == 0) {
        free(all.v);
        return peers_routes(ps, s, err, errlen); /* ?raw=1 for the nodes that ask this one */
    }
    ps->srv = s;
    ps->timeout_s = s->cfg.peer_timeout_s > 0 ? s->cfg.peer_timeout_s : 2.0;
    if (s->cfg.token && *s->cfg.token) {
        size_t l = strlen(s->cfg.token) + 32;
        if ((ps->auth = malloc(l))) snprintf(ps->auth, l, "Authorization: Bearer %s", s->cfg.token);
    }
    int port = own_port(s), self = 0;
    ps->self_check = port == 0;
    for (int i = 0; i < all.n; i++) {
        char base[600];
        if (peers_base_url(all.v[i], base, sizeof base, err, errlen) < 0) goto fail;
        /* the token is a password: it crosses the network in clear to an
         * http:// peer, so that needs saying so (issue 23) */
        if (ps->auth && !strncmp(base, "http://", 7) && !s->cfg.peers_insecure) {
            snprintf(err, errlen,
                     "peer '%s': --token-file would send the token in clear over http; use "
                     "https://%s or --peers-insecure",
                     all.v[i], base + 7);
            goto fail;
        }
        int dup = 0;
        for (int k = 0; k < ps->n; k++) dup |= !strcmp(ps->v[k].base, base);
        if (dup) continue;
        if (is_self(base, port)) {
            self++;
            continue;
        }
        ps->v[ps->n].spec = strdup(all.v[i]);
        ps->v[ps->n].base = strdup(base);
        ps->n++;
    }
    for (int i = 0; i < all.n; i++) free(all.v[i]);
    free(all.v);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    server_set_fanout(s, fanout, ps);
    if (peers_routes(ps, s, err, errlen) < 0) return -1;
    if (s->cfg.verbose || self)
        js_log(1, "peers", "%d peer(s), deadline %.1f s%s", ps->n, ps->timeout_s,
               self ? " (this server's own entry left out)" : "");
    return 0;
fail:
    for (int i = 0; i < all.n; i++) free(all.v[i]);
    free(all.v);
    if (ps) { /* a module whose init failed is not finished by the server */
        peers_fini(s, ps);
        *state = NULL;
    }
    return -1;
}

static void peers_fini(server *s, void *state)
{
    peers_state *ps = state;
    (void)s;
    if (!ps) return;
    for (int k = 0; k < ps->n; k++) {
        free(ps->v[k].spec);
        free(ps->v[k].base);
    }
    free(ps->v);
    free(ps->auth);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}

SERVER_MODULE(peers_module, "peers", peers_init, peers_fini)
