/* repo_queue.c — the repository's queue of events and its writer thread
 * (see repo_priv.h): the server hands each event over with
 * repo_add_fields (its text, and the sample the streaming reader already
 * read of it, copied in one block), never waiting on SQLite; the writer
 * writes what gathered in one transaction 20 ms after the first event
 * (repo.c's repo_write_queued), or the producer does it at once when
 * 2,000 are queued (back-pressure on a fast one).  What the batches fold
 * stays pending (repo_pending.c) until a read, which writes the queue and
 * it first (repo_flush) so that it sees every event handed over, or until
 * the queue idles REPO_PENDING_IDLE_S. */
#include "repo/repo_priv.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUEUE_BATCH     2000           /* events queued that the producer writes itself */
#define QUEUE_GATHER_NS (20 * 1000000) /* the writer's wait for a batch to gather */

static void *writer_main(void *arg)
{
    repo *r = arg;
    pthread_mutex_lock(&r->qmu);
    while (!r->stop) {
        if (!r->qn && r->idle_due) {
            /* what the batches left pending, written once the queue idles */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += REPO_PENDING_IDLE_S;
            if (pthread_cond_timedwait(&r->qcond, &r->qmu, &until) == ETIMEDOUT && !r->qn &&
                !r->stop) {
                r->idle_due = 0;
                pthread_mutex_unlock(&r->qmu);
                repo_flush(r);
                pthread_mutex_lock(&r->qmu);
            }
            continue;
        }
        if (!r->qn) {
            pthread_cond_wait(&r->qcond, &r->qmu);
            continue;
        }
        pthread_mutex_unlock(&r->qmu);
        struct timespec ts = {0, QUEUE_GATHER_NS}; /* let a batch gather */
        nanosleep(&ts, NULL);
        repo_flush_queue(r, 0);
        pthread_mutex_lock(&r->qmu);
    }
    pthread_mutex_unlock(&r->qmu);
    return NULL;
}

void repo_queue_start(repo *r)
{
    pthread_mutex_init(&r->qmu, NULL);
    pthread_cond_init(&r->qcond, NULL);
    r->has_writer = pthread_create(&r->writer, NULL, writer_main, r) == 0;
}

void repo_queue_stop(repo *r)
{
    pthread_mutex_lock(&r->qmu);
    r->stop = 1;
    pthread_cond_signal(&r->qcond);
    pthread_mutex_unlock(&r->qmu);
    if (r->has_writer) pthread_join(r->writer, NULL);
    repo_flush(r);
    pthread_mutex_destroy(&r->qmu);
    pthread_cond_destroy(&r->qcond);
}

/* Writes every queued event in one transaction, and (all) what is pending. */
void repo_flush_queue(repo *r, int all)
{
    pthread_mutex_lock(&r->mu);
    pthread_mutex_lock(&r->qmu);
    char **q = r->q;
    repo_flat **qf = r->qf;
    size_t *ql = r->qlen, n = r->qn;
    r->q = NULL, r->qlen = NULL, r->qf = NULL, r->qn = r->qcap = 0;
    pthread_mutex_unlock(&r->qmu);
    if (n || (all && repo_pending_any(r))) repo_write_queued(r, q, ql, qf, n, all);
    int pending = repo_pending_any(r);
    pthread_mutex_lock(&r->qmu);
    if (pending && !r->idle_due) pthread_cond_signal(&r->qcond); /* (the writer may be waiting) */
    r->idle_due = pending;
    pthread_mutex_unlock(&r->qmu);
    pthread_mutex_unlock(&r->mu);
    free(q);
    free(ql);
    free(qf);
}

void repo_flush(repo *r)
{
    repo_flush_queue(r, 1);
}

/* The sample f read from the server's fields as add_flat may take it (a
 * kickstart.inv.online of a job and host, with a time), copied with the
 * text after it in one block; NULL: not such a sample (only the text is
 * queued: repo_flush reads it as ever). */
static repo_flat *queued_sample(const struct server_event_fields *e, const char *json, size_t len,
                                char **text)
{
    repo_flat f;
    if (!e || !repo_flat_of(e, &f) || !f.name || strcmp(f.name, "kickstart.inv.online") || !f.job ||
        !isfinite(f.s.ts) || !f.s.host)
        return NULL;
    size_t head = offsetof(repo_flat, buf) + f.used;
    repo_flat *c = malloc(head + len + 1);
    if (!c) return NULL;
    memcpy(c, &f, head);
#define MOVED(p) ((p) ? c->buf + ((p)-f.buf) : NULL)
    c->name = MOVED(f.name), c->wf = MOVED(f.wf), c->job = MOVED(f.job);
    c->label = MOVED(f.label), c->step = MOVED(f.step), c->task = MOVED(f.task);
    c->s.host = MOVED(f.s.host), c->s.exe = MOVED(f.s.exe);
    c->s.xformation = MOVED(f.s.xformation), c->s.batch_id = MOVED(f.s.batch_id);
#undef MOVED
    *text = (char *)c + head;
    memcpy(*text, json, len);
    (*text)[len] = 0;
    return c;
}

int repo_add_json(repo *r, const char *json, size_t len)
{
    return repo_add_fields(r, json, len, NULL);
}

int repo_add_fields(repo *r, const char *json, size_t len, const struct server_event_fields *e)
{
    char *copy = NULL;
    repo_flat *f = queued_sample(e, json, len, &copy);
    if (!f && (copy = malloc(len + 1))) {
        memcpy(copy, json, len);
        copy[len] = 0;
    }
    if (!copy) return -1;
    pthread_mutex_lock(&r->qmu);
    if (r->qn == r->qcap) {
        size_t cap = r->qcap ? r->qcap * 2 : 256;
        char **a = realloc(r->q, cap * sizeof *a);
        size_t *b = a ? realloc(r->qlen, cap * sizeof *b) : NULL;
        repo_flat **c = b ? realloc(r->qf, cap * sizeof *c) : NULL;
        if (a) r->q = a;
        if (b) r->qlen = b;
        if (!c) {
            pthread_mutex_unlock(&r->qmu);
            free(f ? (void *)f : copy);
            return -1;
        }
        r->qf = c;
        r->qcap = cap;
    }
    r->q[r->qn] = copy;
    r->qf[r->qn] = f;
    r->qlen[r->qn++] = len;
    int full = r->qn >= QUEUE_BATCH || !r->has_writer;
    pthread_cond_signal(&r->qcond);
    pthread_mutex_unlock(&r->qmu);
    if (full) repo_flush_queue(r, 0); /* back-pressure on a fast producer */
    return 0;
}
