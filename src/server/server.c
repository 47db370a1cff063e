/* server.c — the server object of `jobscope serve` (server.h): store,
 * modules, background tasks, hooks, the route table and the common ingest of
 * points.  Event conversion is in ingest.c, the HTTP layer in http.c. */
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
#include "server_priv.h"

static server_module *modules;

void server_module_register(server_module *m)
{
    /* Keep registration order (link order) so start-up is deterministic. */
    server_module **p = &modules;
    while (*p) p = &(*p)->next;
    m->next = NULL;
    *p = m;
}

int64_t server_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void server_log(server *s, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s jobscope serve: %s\n", ts, line);
}

/* The store's own messages (a damaged log, points dropped by --max-size,
 * writes failing and coming back) go to the server's log. */
static void store_log_line(void *arg, const char *line)
{
    server_log(arg, "%s", line);
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
        if (s->st && store_maintain(s->st) < 0) server_log(s, "store maintenance failed");
        server_live_expire(s, server_now_ms() - 600000);
        malloc_trim(0); /* hand back what requests and settling freed */
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ---- create / start / destroy ---- */

server *server_create(server_config *cfg, char *err, size_t errlen)
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
    pthread_mutex_init(&p->live_lock, NULL);

    /* settling waits for a minute without new chunks: a bulk load or a backfill is merged once, at
     * its end */
    store_config sc = {
        s->cfg.store_dir, s->cfg.retention_s, s->cfg.max_bytes, 60, store_log_line, s};
    if (!(s->st = store_open(&sc, err, errlen))) {
        server_destroy(s);
        return NULL;
    }
    int k = 0;
    for (server_module *m = modules; m; m = m->next, k++) {
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
        p->inited = m;
    }
    return s;
}

int server_start(server *s, char *err, size_t errlen)
{
    server_priv *p = s->priv;
    if (server_http_start(s, err, errlen) < 0) return -1;
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
    server_http_stop(s);
    if (p->maintainer_running) {
        pthread_mutex_lock(&p->lock);
        p->stopping = 1;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->maintainer, NULL);
    }
    if (p->inited) {
        int k = 0;
        for (server_module *m = modules; m; m = m->next, k++) {
            if (m->fini) m->fini(s, p->module_state[k]);
            if (m == p->inited) break;
        }
    }
    if (s->st) store_close(s->st);
    server_live_free(s);
    server_config_free(&s->cfg);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->live_lock);
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

int server_route(server *s, const char *method, const char *path, server_handler fn, void *arg)
{
    server_priv *p = s->priv;
    for (int i = 0; i < p->nroutes; i++) {
        server_route_entry *e = &p->routes[i];
        int same_method =
            (!method && !e->method) || (method && e->method && !strcmp(method, e->method));
        if (same_method && !strcmp(e->path, path)) {
            e->fn = fn;
            e->arg = arg;
            return 0;
        }
    }
    if (p->nroutes >= SERVER_MAX_ROUTES) return -1;
    server_route_entry *e = &p->routes[p->nroutes++];
    e->method = method;
    e->path = path;
    e->fn = fn;
    e->arg = arg;
    return 0;
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
        __atomic_add_fetch(&s->priv->stats.store_errors, 1, __ATOMIC_RELAXED);
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
        __atomic_add_fetch(&p->stats.store_errors, 1, __ATOMIC_RELAXED);
        return -1;
    }
    __atomic_add_fetch(&p->stats.points, n, __ATOMIC_RELAXED);
    for (int i = 0; i < p->npoints_hooks; i++)
        p->points_hooks[i].fn(s, pts, n, p->points_hooks[i].arg);
    server_live_update(s, pts, n);
    return 0;
}

void server_events_hooks(server *s, const char *json, size_t len)
{
    server_priv *p = s->priv;
    for (int i = 0; i < p->nevent_hooks; i++)
        p->event_hooks[i].fn(s, json, len, p->event_hooks[i].arg);
}
