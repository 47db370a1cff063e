/* event.h — what an event is on its way out: its name, its sequence number,
 * its value set (model/metric.h) and the JSON text written from it, with the
 * job's annotations around it.
 *
 * Producers (the process-tree sampler, the sources' threads: GPUs, custom
 * metrics, the payload scanner, limits) fill an mset and hand it to the
 * monitor's emitter (src/monitor/emitter.h) through their context
 * (source.h: ctx->emit).  The emitter stamps the per-job sequence number,
 * writes the JSON with event_write_json and hands one js_event to every
 * output (sink/sink.h), in the same order for all.
 *
 * Every event starts with "event", "ts" and the job's annotations
 * (workflow ids, host, job ids, tags) so that it can be understood alone. */
#ifndef JOBSCOPE_EVENT_H
#define JOBSCOPE_EVENT_H

#include <stdint.h>
#include "json.h"
#include "../model/metric.h"
#include "../util/clock.h"

/* Well-known event names (kickstart-compatible where kickstart had one). */
#define EV_SAMPLE "kickstart.inv.online"
#define EV_START  "jobscope.start"
#define EV_END    "jobscope.end"

typedef struct js_event {
    const char *name; /* event name, also the AMQP routing key */
    const char *json; /* the whole JSON object, no trailing newline */
    size_t len;
    uint64_t seq;        /* per-job sequence number, from 1, gap-free */
    double ts;           /* epoch seconds */
    const mset *metrics; /* the event in the metric model, for the encoders that walk
                          * it (CSV, JoReMon, time series); NULL for an event that
                          * is JSON text only (replayed from a spool) */
    int again;           /* a still job's sample: the one before with its time put in
                          * (emitter_send_again); a file may hold it longer */
} js_event;

/* The annotations stamped on every event (strings owned: annotations_free). */
typedef struct annotations {
    char *fragment; /* pre-encoded  "key":value,...  (no braces) */
    size_t fragment_len;
    size_t tags_at; /* where its last member ,"tags":{...} begins (fragment_len: none) */
    char *job_id;   /* --job, or a scheduler id, or generated */
    char *hostname;
    long rank; /* MPI rank (0 without a launcher) */
    /* the members of its "tags" object, in order (a custom metric writes
     * them into its own "tags"): keys and values (a value may be NULL: null) */
    char **tag_keys, **tag_vals;
    int ntags;
} annotations;

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

/* Writes the whole event: {"event":NAME,"ts":TS, the annotations as
 * ev->frame says, its members (mset_write_json), "seq":SEQ}. */
void event_write_json(jbuf *b, const annotations *a, const mset *ev, uint64_t seq);
/* b holds the line event_write_json wrote for an event that differs from ev
 * only in its ts, its elapsed (M_ELAPSED) and its seq (a still job's
 * sample: monitor.c): the same line with ev's ts and elapsed and seq put
 * in, byte for byte what event_write_json(b, a, ev, seq) writes, built in
 * tmp and swapped with b.  *el_hint: where "elapsed" was found the last
 * time (kept by the caller, 0 at first; a wrong one costs a search).  0;
 * -1 when b does not hold such a line of ev (b untouched: write it whole). */
int event_restamp_json(jbuf *b, jbuf *tmp, const annotations *a, const mset *ev, uint64_t seq,
                       size_t *el_hint);

/* now_epoch(), now_mono(): util/clock.h */
/* Flushing several sinks within one timeout: the first call fixes
 * *deadline (0 = not yet) at now + timeout_s; returns the seconds left. */
double flush_time_left(double *deadline, double timeout_s);

#endif
