/* publisher.h — the asynchronous publisher behind every network sink.
 *
 * Each destination gets one publisher: a bounded in-memory queue filled by
 * the emitter (write() only copies the event and signals), one thread that
 * delivers batches through a small backend interface (AMQP, HTTP, ...), and
 * a spool file on disk (spool.h).  Ordering invariant: everything in the
 * spool is older than everything in the memory queue, and the thread always
 * drains the spool first, so events reach a destination in sequence order.
 *
 * When a delivery fails the thread disconnects, moves the memory queue to
 * the spool (so the events survive a crash of jobscope), and retries with
 * exponential backoff (0.1 s .. 5 s); while the destination is down new
 * events go straight to the spool.  A full memory queue also spills to the
 * spool.  Only a full spool (--spool-max) or an unwritable spool directory
 * loses events, and that is reported.  Delivery is at-least-once.
 *
 * Backends implement pub_backend; publisher_sink_create() wraps one into a
 * sink (sink.h) whose write/flush/close are the publisher's.  A backend may
 * also encode events on the producer's thread (publisher_set_encoder): the
 * queue then holds that text beside the JSON. */
#ifndef JOBSCOPE_PUBLISHER_H
#define JOBSCOPE_PUBLISHER_H

#include "../sink.h"
#include "spool.h"

typedef struct pub_backend {
    const char *kind; /* "amqp", "http", ... */
    int max_batch;    /* events per send() */
    /* Connects (or checks reachability) within about timeout_s seconds.
     * 0, or -1 with a reason in err. */
    int (*connect)(void *ctx, double timeout_s, char *err, size_t errlen);
    /* Delivers items in order.  Returns how many leading items are done
     * (delivered, or rejected for good by the server, which the backend
     * reports itself); fewer than n means it[ret] failed and err says why:
     * the publisher reconnects and retries from there. */
    int (*send)(void *ctx, const pub_item *it, int n, double timeout_s, char *err, size_t errlen);
    void (*disconnect)(void *ctx); /* NULL: nothing to close (HTTP) */
    void (*destroy)(void *ctx);
} pub_backend;

typedef struct publisher publisher;

typedef struct pub_stats {
    unsigned long long delivered, spooled, dropped;
    long long pending; /* in memory + in the spool */
} pub_stats;

/* A sink whose events go through a publisher to the backend; the backend
 * context is owned from then on (destroyed on failure too).  Connects once
 * at start-up: if that fails the sink is still returned (events wait in the
 * spool) unless o->require_output, then NULL with the reason in err. */
sink *publisher_sink_create(const sink_ops *ops, const char *url, const pub_backend *be, void *ctx,
                            const sink_options *o, char *err, size_t errlen);
/* A destination that cannot work (malformed URL, unknown scheme; why says
 * what is wrong).  With o->require_output: NULL and err.  Otherwise a
 * one-line warning and a sink whose events all wait in the spool, for a
 * later `jobscope flush -o GOOD_URL SPOOL`. */
sink *publisher_sink_unusable(const sink_ops *ops, const char *url, const char *why,
                              const sink_options *o, char *err, size_t errlen);
/* The same, for an open() whose err already says "LABEL: why". */
sink *publisher_bad_url(const sink_ops *ops, const char *url, const sink_options *o, char *err,
                        size_t errlen);
int publisher_sink_write(sink *s, const js_event *ev);
int publisher_sink_flush(sink *s, double timeout_s);
void publisher_sink_close(sink *s);

/* The publisher of a sink made by publisher_sink_create(), else NULL. */
publisher *publisher_of(sink *s);
struct sbuf;
/* Gives the publisher an encoder of its backend's own (the time-series
 * backends, net/tsdb.c), called by write() for each event that carries a
 * value set (ev->metrics), on the producer's thread under the emitter lock:
 * it appends to out and returns the points/lines added (0: none), or -1
 * when it leaves the event to send(), which gets the result beside the JSON
 * (pub_item.enc).  What goes to the spool is the JSON only.  Call it right
 * after publisher_sink_create, before any write. */
void publisher_set_encoder(publisher *p,
                           int (*encode)(void *ctx, const js_event *ev, struct sbuf *out));
/* Makes an existing spool file this publisher's spool (for `jobscope
 * flush`): its pending records are delivered before anything else. */
int publisher_adopt_spool(publisher *p, const char *path, char *err, size_t errlen);
void publisher_get_stats(publisher *p, pub_stats *st);

/* Backend helpers. */
/* "jobscope: LABEL: message" on stderr, unless quiet (sink_options.quiet, -q). */
void publisher_warn(int quiet, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Default spool directory, a copy to free: $JOBSCOPE_SPOOL_DIR, else
 * $XDG_STATE_HOME/jobscope/spool, else /var/tmp/jobscope-spool-UID. */
char *publisher_default_spool_dir(void);

#endif
