/* event.h — the event model: what every producer hands to every sink.
 *
 * Producers (the process-tree sampler, GPU threads, the custom-metrics
 * listener, the payload scanner) build one JSON object per event with
 * event_begin() + json_*() calls, then emitter_send() stamps it with the
 * per-job sequence number, closes it and hands it to every sink, in the same
 * order for all sinks.  emitter_send() is thread-safe and never blocks on the
 * network: sinks that talk to servers queue the bytes and deliver them from
 * their own threads (see sink/sink.h).
 *
 * Every event starts with "event", "ts" and the job's annotations
 * (workflow ids, host, job ids, tags) so that it can be understood alone. */
#ifndef JOBSCOPE_EVENT_H
#define JOBSCOPE_EVENT_H

#include <stdint.h>
#include <pthread.h>
#include "json.h"
#include "../util/clock.h"

struct mset; /* model/metric.h */
struct sink; /* sink/sink.h */

/* Well-known event names (kickstart-compatible where kickstart had one). */
#define EV_SAMPLE "kickstart.inv.online"
#define EV_START  "jobscope.start"
#define EV_END    "jobscope.end"

typedef struct js_event {
    const char *name; /* event name, also the AMQP routing key */
    const char *json; /* the whole JSON object, no trailing newline */
    size_t len;
    uint64_t seq;               /* per-job sequence number, from 1, gap-free */
    double ts;                  /* epoch seconds */
    const struct mset *metrics; /* its values in the metric model (EV_SAMPLE, the GPU's
                                 * gpu.stats), for the encoders that walk them; else NULL */
} js_event;

/* The annotations stamped on every event. Strings are owned by the emitter. */
typedef struct annotations {
    char *fragment; /* pre-encoded  "key":value,...  (no braces) */
    size_t fragment_len;
    size_t tags_at; /* where its last member ,"tags":{...} begins (fragment_len: none) */
    char *job_id;   /* --job, or a scheduler id, or generated */
    char *hostname;
    long rank; /* MPI rank (0 without a launcher) */
} annotations;

typedef struct emitter {
    pthread_mutex_t lock;
    uint64_t seq;
    annotations ann;
    struct sink **sinks;
    int nsinks;
    unsigned long dropped; /* events a sink refused */
} emitter;

/* Builds the annotations from the environment (PEGASUS_*, CONDOR_JOBID, MPI
 * ranks, scheduler job ids), --job and --tag KEY=VALUE.  null_missing
 * (--null-missing): unset workflow annotations are null instead of ""
 * (kickstart's type). */
int annotations_init(annotations *a, const char *job_id, char *const *tags, int ntags,
                     int null_missing);
void annotations_free(annotations *a);
/* 1 if key is one of the string annotations every event carries (hostname,
 * job_id, launch, site, wf_uuid, wf_label, dag_job_id, condor_job_id,
 * xformation, task_id): what the time-series outputs make tags of. */
int annotations_is_key(const char *key);
/* Before annotations_init: FIELD (site, wf_label, xformation, ...) takes
 * VALUE instead of its environment variable (kickstart's -R, -L, -n), or a
 * FIELD that is no workflow annotation becomes a tag.  0, or -1 if full. */
int annotations_override(const char *field, const char *value);

int emitter_init(emitter *em, const annotations *ann); /* takes ownership of ann */
void emitter_add_sink(emitter *em, struct sink *s);
void emitter_close(emitter *em, double flush_timeout_s); /* flush + close all sinks */
/* Adds "key": {label: events lost} for the outputs that lost any: writes
 * that failed, and events accepted but lost later (a full spool). */
void emitter_put_errors(emitter *em, jbuf *b, const char *key);
/* Events lost so far, over every output: the record's events_dropped. */
unsigned long emitter_dropped(emitter *em);

/* Starts an event: {"event":NAME,"ts":TS,<annotations> ... */
void event_begin(const emitter *em, jbuf *b, const char *name, double ts);
/* The same without the annotations' "tags" (--tag): for an event that writes
 * one "tags" object of its own with them in it (a custom metric), so that
 * no key is there twice.  *tags, *len: that object's text ({...}), or NULL. */
void event_begin_untagged(const emitter *em, jbuf *b, const char *name, double ts,
                          const char **tags, size_t *len);
/* Appends "seq":N}, and hands the event to every sink. Thread-safe.
 * Returns the sequence number given. */
uint64_t emitter_send(emitter *em, jbuf *b, const char *name, double ts,
                      const struct mset *metrics);

/* now_epoch(), now_mono(): util/clock.h */
/* Flushing several sinks within one timeout: the first call fixes
 * *deadline (0 = not yet) at now + timeout_s; returns the seconds left. */
double flush_time_left(double *deadline, double timeout_s);

#endif
