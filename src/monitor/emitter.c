/* emitter.c — the job's events, sequenced and handed to every output (see
 * emitter.h). */
#include "emitter.h"
#include "../util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int emitter_init(emitter *em, const annotations *ann)
{
    memset(em, 0, sizeof *em);
    pthread_mutex_init(&em->lock, NULL);
    em->ann = *ann;
    jbuf_init(&em->json, 2048);
    jbuf_init(&em->again, 2048);
    return 0;
}

void emitter_add_sink(emitter *em, sink *s)
{
    sink **n = realloc(em->sinks, sizeof *n * (size_t)(em->nsinks + 1));
    if (!n) return;
    em->sinks = n;
    em->sinks[em->nsinks++] = s;
}

/* Hands the line in em->json, number seq, to every output (under the lock). */
static void deliver(emitter *em, const mset *ev, uint64_t seq, int again)
{
    jbuf *b = &em->json;
    js_event e = {ev->event, b->p, b->len, seq, ev->ts, ev, again};
    for (int i = 0; i < em->nsinks; i++) {
        sink *s = em->sinks[i];
        errno = 0;
        if (s->ops->write(s, &e) != 0) {
            /* a lost output is an error, not noise: said once, even
             * with -q (unless the output said a loss of its own); the
             * count goes into the end-of-job record */
            if (s->errors++ == 0 && !__atomic_load_n(&s->lost, __ATOMIC_RELAXED))
                js_log(1, s->label ? s->label : "output",
                       "cannot write events%s%s%s; what does not fit is lost", errno ? " (" : "",
                       errno ? strerror(errno) : "", errno ? ")" : "");
            em->dropped++;
        }
    }
}

uint64_t emitter_send(emitter *em, const mset *ev, jbuf *copy)
{
    pthread_mutex_lock(&em->lock);
    uint64_t seq = ++em->seq;
    jbuf *b = &em->json;
    event_write_json(b, &em->ann, ev, seq);
    em->json_of = ev;
    if (!b->oom && !ev->oom) {
        deliver(em, ev, seq, 0);
        if (copy) {
            jbuf_reset(copy);
            jbuf_put(copy, b->p, b->len);
        }
    } else {
        em->json_of = NULL;
        em->dropped++;
    }
    pthread_mutex_unlock(&em->lock);
    return seq;
}

uint64_t emitter_send_again(emitter *em, const mset *ev)
{
    pthread_mutex_lock(&em->lock);
    if (em->json_of != ev || ev->oom ||
        event_restamp_json(&em->json, &em->again, &em->ann, ev, em->seq + 1, &em->again_el) != 0) {
        pthread_mutex_unlock(&em->lock);
        return emitter_send(em, ev, NULL);
    }
    uint64_t seq = ++em->seq;
    deliver(em, ev, seq, 1);
    pthread_mutex_unlock(&em->lock);
    return seq;
}

/* Events an output lost: refused by write(), or accepted and lost later. */
static unsigned long sink_losses(sink *s)
{
    return s->errors + __atomic_load_n(&s->lost, __ATOMIC_RELAXED);
}

void emitter_put_errors(emitter *em, mset *rec, const char *key)
{
    pthread_mutex_lock(&em->lock);
    int any = 0;
    for (int i = 0; i < em->nsinks; i++) {
        sink *s = em->sinks[i];
        unsigned long n = sink_losses(s);
        if (!n) continue;
        if (!any++) mset_open_obj(rec, key);
        mset_put_u64(rec, s->label ? s->label : "output", n);
    }
    if (any) mset_close(rec);
    pthread_mutex_unlock(&em->lock);
}

void emitter_settle(emitter *em)
{
    pthread_mutex_lock(&em->lock);
    for (int i = 0; i < em->nsinks; i++)
        if (em->sinks[i]->ops->settle) em->sinks[i]->ops->settle(em->sinks[i]);
    pthread_mutex_unlock(&em->lock);
}

unsigned long emitter_dropped(emitter *em)
{
    pthread_mutex_lock(&em->lock);
    unsigned long n = em->dropped;
    for (int i = 0; i < em->nsinks; i++)
        n += __atomic_load_n(&em->sinks[i]->lost, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&em->lock);
    return n;
}

void emitter_close(emitter *em, double flush_timeout_s)
{
    pthread_mutex_lock(&em->lock);
    double deadline = 0; /* the first flush fixes it for all */
    for (int i = 0; i < em->nsinks; i++) {
        sink *s = em->sinks[i];
        if (s->ops->flush) s->ops->flush(s, flush_time_left(&deadline, flush_timeout_s));
        s->ops->close(s);
    }
    free(em->sinks);
    em->sinks = NULL;
    em->nsinks = 0;
    jbuf_free(&em->json);
    jbuf_free(&em->again);
    pthread_mutex_unlock(&em->lock);
    annotations_free(&em->ann);
}
