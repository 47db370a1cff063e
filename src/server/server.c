/* server.c — the server object of `jobscope serve` (server.h): the store,
 * the modules and their state, background tasks, hooks, the ingest of
 * points every path ends in, and the counters of /metrics.  It owns the
 * parts below it and calls down into them only: the route table
 * (route.c), the transport (http.c, which gets server_dispatch as its one
 * entry) and the live values (live.c).  Events become points in ingest.c,
 * which calls this file, never the other way round.
 *
 * Its private state (server_priv) is defined here and nowhere else. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "server.h"
#include "http.h"
#include "live.h"
#include "route.h"
#include "util/log.h"

#define SERVER_MAX_TASKS   32
#define SERVER_MAX_HOOKS   16
#define SERVER_MAX_MODULES 32

struct server_priv {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stopping;
    pthread_t maintainer;
    int maintainer_running;

    route_table *routes;
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
    const server_module *const *modules;    /* the program's, in order */
    int ninited;                            /* modules whose init() succeeded */
    void *module_state[SERVER_MAX_MODULES]; /* in their order */

    http_transport *http;
    live_table *live;
    /* counted here (the transport counts its own) */
    unsigned long long points, store_errors, events, put_points, put_failed;
};

int64_t server_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The store's own messages (a damaged log, points dropped by --max-size,
 * writes failing and coming back) go to the server's log. */
static void store_log_line(void *arg, const char *line)
{
    (void)arg;
    js_log(1, NULL, "%s", line);
}

/* ---- background maintenance: retention and size limits ---- */

static void *maintain_thread(void *arg)
{
    server *s = arg;
    server_priv *p = s->priv;
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 10;
        pthread_cond_timedwait(&p->cond, &p->lock, &dl);
        if (p->stopping) break;
        pthread_mutex_unlock(&p->lock);
        if (s->st && store_maintain(s->st) < 0) js_log(1, NULL, "store maintenance failed");
        server_live_expire(s, server_now_ms() - 600000);
        malloc_trim(0); /* hand back what requests and settling freed */
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ---- create / start / destroy ---- */

server *server_create(server_config *cfg, const server_module *const *modules, char *err,
                      size_t errlen)
{
    server *s = calloc(1, sizeof *s);
    server_priv *p = calloc(1, sizeof *p);
    if (!s || !p) {
        free(s);
        free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    s->priv = p;
    s->started_ms = server_now_ms();
    if (gethostname(s->host, sizeof s->host - 1) < 0) strcpy(s->host, "localhost");
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    if (!(p->routes = route_table_new()) || !(p->live = live_new())) {
        route_table_free(p->routes);
        live_free(p->live);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p);
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    /* settling waits for a minute without new chunks: a bulk load or a backfill is merged once, at
     * its end */
    store_config sc = {
        s->cfg.store_dir, s->cfg.retention_s, s->cfg.max_bytes, 60, store_log_line, s};
    if (!(s->st = store_open(&sc, err, errlen))) {
        server_destroy(s);
        return NULL;
    }
    p->modules = modules;
    for (int k = 0; modules && modules[k]; k++) {
        const server_module *m = modules[k];
        if (k >= SERVER_MAX_MODULES) {
            snprintf(err, errlen, "too many server modules");
            server_destroy(s);
            return NULL;
        }
        if (m->init && m->init(s, &p->module_state[k], err, errlen) < 0) {
            /* what it made before failing is its fini's to free */
            if (m->fini && p->module_state[k]) m->fini(s, p->module_state[k]);
            char why[256];
            snprintf(why, sizeof why, "%s", err);
            snprintf(err, errlen, "%s: %s", m->name, why);
            server_destroy(s);
            return NULL;
        }
        p->ninited = k + 1;
    }
    return s;
}

/* The transport's one entry. */
static void dispatch_fn(void *arg, const server_request *r, server_response *w)
{
    server_dispatch(arg, r, w);
}

int server_start(server *s, char *err, size_t errlen)
{
    server_priv *p = s->priv;
    if (!(p->http = http_start(&s->cfg, dispatch_fn, s, err, errlen))) return -1;
    if (pthread_create(&p->maintainer, NULL, maintain_thread, s) == 0) p->maintainer_running = 1;
    for (int i = 0; i < p->ntasks; i++) {
        server_task *t = &p->tasks[i];
        if (t->start && t->start(s, t->arg, err, errlen) < 0) {
            char why[256];
            snprintf(why, sizeof why, "%s", err);
            snprintf(err, errlen, "%s: %s", t->name, why);
            return -1;
        }
        p->tasks_started = i + 1;
    }
    return 0;
}

void server_destroy(server *s)
{
    if (!s) return;
    server_priv *p = s->priv;
    /* Tasks first (consumers stop taking work, forwarders spool), then the
     * listeners (no new requests), then the modules and the store. */
    for (int i = p->tasks_started - 1; i >= 0; i--)
        if (p->tasks[i].stop) p->tasks[i].stop(s, p->tasks[i].arg);
    p->tasks_started = 0;
    http_stop(p->http);
    p->http = NULL;
    if (p->maintainer_running) {
        pthread_mutex_lock(&p->lock);
        p->stopping = 1;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->maintainer, NULL);
    }
    for (int k = 0; k < p->ninited; k++)
        if (p->modules[k]->fini) p->modules[k]->fini(s, p->module_state[k]);
    if (s->st) store_close(s->st);
    live_free(p->live);
    route_table_free(p->routes);
    server_config_free(&s->cfg);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
    free(s);
}

/* ---- registries ---- */

int server_task_add(server *s, const server_task *t)
{
    server_priv *p = s->priv;
    if (p->ntasks >= SERVER_MAX_TASKS) return -1;
    p->tasks[p->ntasks++] = *t;
    return 0;
}

int server_on_points(server *s, server_points_hook fn, void *arg)
{
    server_priv *p = s->priv;
    if (p->npoints_hooks >= SERVER_MAX_HOOKS) return -1;
    p->points_hooks[p->npoints_hooks].fn = fn;
    p->points_hooks[p->npoints_hooks++].arg = arg;
    return 0;
}

int server_on_event(server *s, server_event_hook fn, void *arg)
{
    server_priv *p = s->priv;
    if (p->nevent_hooks >= SERVER_MAX_HOOKS) return -1;
    p->event_hooks[p->nevent_hooks].fn = fn;
    p->event_hooks[p->nevent_hooks++].arg = arg;
    return 0;
}

int server_on_metrics(server *s, server_metrics_fn fn, void *arg)
{
    server_priv *p = s->priv;
    if (p->nmetrics_hooks >= SERVER_MAX_HOOKS) return -1;
    p->metrics_hooks[p->nmetrics_hooks].fn = fn;
    p->metrics_hooks[p->nmetrics_hooks++].arg = arg;
    return 0;
}

void server_metrics_hooks(server *s, sbuf *out)
{
    server_priv *p = s->priv;
    for (int i = 0; i < p->nmetrics_hooks; i++)
        p->metrics_hooks[i].fn(s, out, p->metrics_hooks[i].arg);
}

/* ---- routes (route.c) ---- */

int server_route(server *s, const char *method, const char *path, server_handler fn, void *arg)
{
    return route_add(s->priv->routes, method, path, fn, arg);
}

int server_route_wrap(server *s, const char *method, const char *path, server_wrapper fn, void *arg)
{
    return route_wrap(s->priv->routes, method, path, fn, arg);
}

void server_dispatch(server *s, const server_request *r, server_response *w)
{
    route_dispatch(s->priv->routes, s, r, w);
}

int server_tcp_port(server *s)
{
    return http_tcp_port(s->priv->http);
}

void server_set_fanout(server *s, server_fanout_fn fn, void *arg)
{
    s->priv->fanout = fn;
    s->priv->fanout_arg = arg;
}

int server_fanout(server *s, const server_request *r, const char *path_query, const char *body,
                  size_t len, server_peer_reply **replies, char *warn, size_t warnlen)
{
    *replies = NULL;
    if (warnlen) warn[0] = 0;
    if (!s->priv->fanout || (r && r->from_peer)) return 0;
    return s->priv->fanout(s, r ? r->method : "GET", path_query, body, len, replies, warn, warnlen,
                           s->priv->fanout_arg);
}

void server_peer_replies_free(server_peer_reply *r, int n)
{
    if (!r) return;
    for (int i = 0; i < n; i++) free(r[i].body);
    free(r);
}

/* ---- ingest of points ---- */

int server_ingest_points(server *s, const store_point *pts, size_t n, char *err, size_t errlen)
{
    uint64_t ticket;
    if (server_ingest_points_nowait(s, pts, n, &ticket, err, errlen) < 0) return -1;
    return server_ingest_sync(s, ticket, err, errlen);
}

int server_ingest_sync(server *s, uint64_t ticket, char *err, size_t errlen)
{
    if (!ticket) return 0;
    if (store_sync(s->st, ticket, err, errlen) < 0) {
        __atomic_add_fetch(&s->priv->store_errors, 1, __ATOMIC_RELAXED);
        return -1;
    }
    return 0;
}

/* The hooks (forwarders, live values) see the points before they are
 * durable: only a failing disk makes the difference, and then the client
 * is told so and sends them again (a timestamp written twice keeps one). */
int server_ingest_points_nowait(server *s, const store_point *pts, size_t n, uint64_t *ticket,
                                char *err, size_t errlen)
{
    server_priv *p = s->priv;
    *ticket = 0;
    if (n == 0) return 0;
    if (!s->st) {
        snprintf(err, errlen, "no store");
        return -1;
    }
    if (store_put_nowait(s->st, pts, n, ticket, err, errlen) < 0) {
        __atomic_add_fetch(&p->store_errors, 1, __ATOMIC_RELAXED);
        return -1;
    }
    __atomic_add_fetch(&p->points, n, __ATOMIC_RELAXED);
    for (int i = 0; i < p->npoints_hooks; i++)
        p->points_hooks[i].fn(s, pts, n, p->points_hooks[i].arg);
    live_update(p->live, pts, n, server_now_ms());
    return 0;
}

void server_events_hooks(server *s, const char *json, size_t len, const server_event_fields *f)
{
    server_priv *p = s->priv;
    for (int i = 0; i < p->nevent_hooks; i++)
        p->event_hooks[i].fn(s, json, len, f, p->event_hooks[i].arg);
}

/* ---- live values (live.c) ---- */

void server_live_end_job(server *s, const char *job_id)
{
    live_end_job(s->priv->live, job_id);
}

void server_live_expire(server *s, int64_t older_than_ms)
{
    live_expire(s->priv->live, older_than_ms);
}

void server_live_metrics(server *s, sbuf *out)
{
    live_metrics(s->priv->live, out);
}

size_t server_live_count(server *s)
{
    return live_count(s->priv->live);
}

/* ---- counters ---- */

void server_stat_add(server *s, enum server_stat k, unsigned long long n)
{
    server_priv *p = s->priv;
    unsigned long long *c = k == SERVER_STAT_EVENTS       ? &p->events
                            : k == SERVER_STAT_PUT_POINTS ? &p->put_points
                                                          : &p->put_failed;
    __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

void server_stats_get(server *s, server_stats *out)
{
    server_priv *p = s->priv;
    memset(out, 0, sizeof *out);
    http_stats(p->http, out);
    out->points = __atomic_load_n(&p->points, __ATOMIC_RELAXED);
    out->store_errors = __atomic_load_n(&p->store_errors, __ATOMIC_RELAXED);
    out->events = __atomic_load_n(&p->events, __ATOMIC_RELAXED);
    out->put_points = __atomic_load_n(&p->put_points, __ATOMIC_RELAXED);
    out->put_failed = __atomic_load_n(&p->put_failed, __ATOMIC_RELAXED);
}
