/* emitter.h — the monitor's emitter: sequences the job's events and hands
 * each to every output.
 *
 * Producers fill an mset (model/metric.h) and call emitter_send (the
 * sources through ctx->emit, source.h): the emitter stamps the per-job
 * sequence number, writes the event's JSON once (event_write_json, with the
 * job's annotations) and hands one js_event -- the JSON text and the set --
 * to every output opened for the job (sink/sink.h), in the same order for
 * all.  emitter_send is thread-safe (GPU threads, the custom-metrics
 * listener and the sampler call it) and never blocks on the network: the
 * network outputs queue the event and deliver it from their own threads. */
#ifndef JOBSCOPE_EMITTER_H
#define JOBSCOPE_EMITTER_H

#include <pthread.h>
#include <stdint.h>
#include "../event/event.h"
#include "../model/metric.h"
#include "../sink/sink.h"

typedef struct emitter {
    pthread_mutex_t lock;
    uint64_t seq;
    annotations ann;
    sink **sinks;
    int nsinks;
    unsigned long dropped; /* events a sink refused */
    jbuf json;             /* the event being handed out (under the lock) */
    jbuf again;            /* emitter_send_again's new line, swapped with json */
    size_t again_el;       /* where "elapsed" was in it (event_restamp_json) */
    const mset *json_of;   /* the set json was last written for (NULL: another) */
} emitter;

int emitter_init(emitter *em, const annotations *ann); /* takes ownership of ann */
void emitter_add_sink(emitter *em, sink *s);
void emitter_close(emitter *em, double flush_timeout_s); /* flush + close all sinks */
/* Stamps ev with the next sequence number and hands it to every output;
 * copy (NULL: none) gets its JSON text too.  Returns the number given. */
uint64_t emitter_send(emitter *em, const mset *ev, jbuf *copy);
/* As emitter_send(em, ev, NULL), for a set sent before and changed since
 * in its ts and elapsed only (a still job's sample): when the last event
 * handed out was ev's, its JSON line is used again with those two and the
 * sequence number put in (event_restamp_json), instead of written anew. */
uint64_t emitter_send_again(emitter *em, const mset *ev);
/* Adds key: {label: events lost} for the outputs that lost any: writes
 * that failed, and events accepted but lost later (a full spool). */
void emitter_put_errors(emitter *em, mset *rec, const char *key);
/* Every output writes what it holds for a later write (a file's held
 * samples) now, so that what it could not write is counted: before the
 * end record counts the losses. */
void emitter_settle(emitter *em);
/* Events lost so far, over every output: the record's events_dropped. */
unsigned long emitter_dropped(emitter *em);

#endif
