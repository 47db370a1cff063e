/* sink.h — where events go: one small interface, one file per destination.
 *
 * A destination is chosen by the URL given to -o (or KICKSTART_MON_URL).
 * sink_open() asks each registered backend, in order, whether it handles the
 * URL; the first that does opens it.  To add a destination, write one file
 * that defines a `const sink_ops sink_XXX_ops` and add it to the table in
 * sink.c (as collectd registers its write plugins).
 *
 * Contract of write(): called from any producer thread while the emitter
 * lock is held, so events arrive in sequence order; it must never block on
 * the network or for long (network sinks enqueue and publish from their own
 * thread), must never harm the job, and returns -1 when the event could not
 * be accepted (it is then counted as dropped). */
#ifndef JOBSCOPE_SINK_H
#define JOBSCOPE_SINK_H

#include <stddef.h>
#include "../event/event.h"

enum sink_format {
    FORMAT_AUTO = 0, /* from the URL: *.csv -> CSV, else JSON Lines */
    FORMAT_JSON,
    FORMAT_CSV,
    FORMAT_JOREMON_JSON,
    FORMAT_JOREMON_CSV,
};

typedef struct sink_options {
    enum sink_format format;
    int verbose;
    double flush_timeout;  /* seconds, at job end */
    double flush_interval; /* file outputs: the most a line waits for others (s); 0: none */
    const char *spool_dir; /* where undeliverable events wait (network sinks) */
    long long spool_max;   /* bytes */
    int insecure;          /* do not verify TLS peers */
    const char *ca_file;
    int require_output;            /* an unreachable destination is an error at start-up */
    const struct annotations *ann; /* job id, hostname, for encoders that need them */
    unsigned joremon_types;        /* --mode: bit (1 << JOREMON_CPU/IO/MEM) per row type; 0 = all */
    int quiet;                     /* -q: no warnings about destinations and spools */
    /* Set once a signal ended the end-of-job flush: every publisher of the
     * same monitor then stops waiting.  Owned by whoever opens the sinks (the
     * monitor); NULL: each publisher keeps its own. */
    int *flush_abort;
    /* Only events whose name starts with one of these (NULL-terminated) reach
     * the destinations opened with these options (filter.c); NULL: all.
     * jobscope kickstart sends kickstart's events only (docs/kickstart.md). */
    const char *const *only_events;
} sink_options;

typedef struct sink sink;

typedef struct sink_ops {
    const char *name;                                     /* "file", "csv", "amqp", ... */
    int (*match)(const char *url, const sink_options *o); /* nonzero: mine */
    sink *(*open)(const char *url, const sink_options *o, char *err, size_t errlen);
    int (*write)(sink *s, const js_event *ev);
    int (*flush)(sink *s, double timeout_s); /* 0: all delivered */
    void (*close)(sink *s);                  /* frees s */
    /* optional: write what waits for a later write now (file outputs'
     * held samples), so that what it loses is counted; never blocks long */
    void (*settle)(sink *s);
} sink_ops;

/* Every backend's struct starts with this. */
struct sink {
    const sink_ops *ops;
    char *label;          /* the URL with any password removed, for messages */
    unsigned long errors; /* failed writes */
    int said_error;       /* a failure was reported once already */
    unsigned long lost;   /* accepted by write(), lost later (a full or unwritable spool);
                           * the output's own thread counts them: read atomically */
};

/* Opens url with the first backend that matches it (behind the event filter
 * of o->only_events). NULL + err on failure. */
sink *sink_open(const char *url, const sink_options *o, char *err, size_t errlen);
/* Copies url into a freshly allocated label with "user:pass@" reduced to
 * "user:***@" and credential query values to "***" (url.c). */
char *sink_redact_url(const char *url);
/* Where the userinfo of url is: *auth just after "://", *colon the ':' before
 * the password (NULL: none), *at the '@' that ends it (NULL: no userinfo).
 * As RFC 3986 reads it, except that a password holding a raw '/', '?' or '#'
 * is still a password: then userinfo ends at the last '@' that a valid
 * host[:port] follows.  0, or -1 when url has no "://". */
int sink_url_userinfo(const char *url, const char **auth, const char **colon, const char **at);
/* 1 if a query parameter named k (n bytes) holds a credential (token, apikey...). */
int sink_url_secret_key(const char *k, size_t n);
/* Overwrites, in place and with '*', the password and the credential-holding
 * query values of url (for argv: ps and /proc/PID/cmdline). */
void sink_url_scrub(char *url);

/* The filter of sink_options.only_events around inner (filter.c); takes
 * ownership of inner.  NULL when out of memory (inner is then closed). */
sink *sink_filter_wrap(sink *inner, const char *const *prefixes);

#endif
