/* conn_guard.c — connection deadlines and body memory (conn_guard.h).
 *
 * One slot per open connection (the transport's connection callbacks): its
 * socket and the moment by which the current phase must be over.  The
 * watchdog, four times a second, shuts down the socket of a connection
 * past it; the transport then closes the connection (the slot goes in its
 * close notification, before the socket is closed, under the same lock, so
 * the watchdog never touches a descriptor that was reused). */
#include "conn_guard.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include "util/clock.h"

struct conn_slot {
    struct conn_slot *next, *prev;
    int fd;
    int64_t deadline_ms; /* 0 = none (the handler runs, the answer is sent) */
    int waiting;         /* for a request's first bytes (new, or kept alive) */
};

struct conn_guard {
    pthread_mutex_t mu;
    conn_slot head; /* circular list */
    pthread_t watchdog;
    pthread_cond_t cond;
    int running, stop;
    size_t body_memory, body_bytes; /* --body-memory, held by all connections */
    unsigned long long cut, busy;
};

static int64_t deadline_after(double secs)
{
    return secs > 0 ? (int64_t)now_mono_ms() + (int64_t)(secs * 1000) : 0;
}

/* A connection waiting for a request whose client has closed its side:
 * the transport may not notice until its own timeout (a FIN that came
 * with the previous request), and meanwhile the slot counts against the
 * client's limit. */
static int peer_closed(int fd)
{
    char b;
    return fd >= 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static void *watchdog(void *arg)
{
    conn_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec dl;
        mono_deadline(&dl, 0.25);
        pthread_cond_timedwait(&g->cond, &g->mu, &dl);
        int64_t now = now_mono_ms();
        for (conn_slot *c = g->head.next; c != &g->head; c = c->next) {
            if (!c->deadline_ms || c->fd < 0) continue;
            int late = now > c->deadline_ms;
            if (late || (c->waiting && peer_closed(c->fd))) {
                shutdown(c->fd, SHUT_RDWR);
                c->deadline_ms = 0;
                g->cut += late;
            }
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

conn_guard *conn_guard_new(size_t body_memory)
{
    conn_guard *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cond, &ca);
    pthread_condattr_destroy(&ca);
    g->head.next = g->head.prev = &g->head;
    g->body_memory = body_memory;
    if (pthread_create(&g->watchdog, NULL, watchdog, g) == 0) g->running = 1;
    return g;
}

void conn_guard_free(conn_guard *g)
{
    if (!g) return;
    if (g->running) {
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->watchdog, NULL);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cond);
    free(g);
}

conn_slot *conn_guard_open(conn_guard *g, int fd, double secs)
{
    conn_slot *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->deadline_ms = deadline_after(secs);
    c->waiting = 1;
    pthread_mutex_lock(&g->mu);
    c->next = g->head.next;
    c->prev = &g->head;
    g->head.next->prev = c;
    g->head.next = c;
    pthread_mutex_unlock(&g->mu);
    return c;
}

void conn_guard_close(conn_guard *g, conn_slot *c)
{
    if (!c) return;
    pthread_mutex_lock(&g->mu);
    c->prev->next = c->next;
    c->next->prev = c->prev;
    pthread_mutex_unlock(&g->mu);
    free(c);
}

void conn_guard_deadline(conn_guard *g, conn_slot *c, double secs, int waiting)
{
    if (!c || !g) return;
    pthread_mutex_lock(&g->mu);
    c->deadline_ms = deadline_after(secs);
    c->waiting = waiting;
    pthread_mutex_unlock(&g->mu);
}

int conn_guard_reserve(conn_guard *g, size_t *held, size_t n)
{
    if (!g) return 0;
    pthread_mutex_lock(&g->mu);
    int ok = g->body_bytes + n <= g->body_memory;
    if (ok) {
        g->body_bytes += n;
        *held += n;
    } else
        g->busy++;
    pthread_mutex_unlock(&g->mu);
    return ok ? 0 : -1;
}

void conn_guard_release(conn_guard *g, size_t *held)
{
    if (!g || !*held) return;
    pthread_mutex_lock(&g->mu);
    g->body_bytes -= *held;
    pthread_mutex_unlock(&g->mu);
    *held = 0;
}

void conn_guard_stats(conn_guard *g, unsigned long long *cut, unsigned long long *busy,
                      size_t *body_bytes)
{
    *cut = *busy = 0;
    *body_bytes = 0;
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    *cut = g->cut;
    *busy = g->busy;
    *body_bytes = g->body_bytes;
    pthread_mutex_unlock(&g->mu);
}
