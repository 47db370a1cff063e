/* wire.h — the custom-metrics wire format between the clients (libjobscope,
 * jobscope.py, `jobscope emit`) and the listener (listener.c).
 *
 * Transport: a Unix SOCK_SEQPACKET socket whose path is in JOBSCOPE_SOCKET;
 * one message per metric, text, fields separated by TAB (docs/metrics.md):
 *
 *   M1 \t NAME \t VALUE \t TS \t LEVEL \t PID \t LOST [\t KEY=VALUE]...
 *   P1 \t {payload JSON object, as in a MONITORING_PAYLOAD block}
 *
 * TS may be empty (time of receipt); LOST is the number of metrics the
 * sending process could not send since its last successful one. */
#ifndef JOBSCOPE_METRICS_WIRE_H
#define JOBSCOPE_METRICS_WIRE_H

#include <stddef.h>

#define WIRE_MAX_NAME   128
#define WIRE_MAX_TAGKEY 64
#define WIRE_MAX_TAGVAL 256
#define WIRE_MAX_TAGS   16
#define WIRE_MAX_LEVEL  255
#define WIRE_MAX_MSG    (256 * 1024) /* payload messages; metrics are small */
/* A timestamp is epoch seconds in [1, 1e11) (1970 to the year 5138): what
 * "%.6f" writes whole and exact to the microsecond. */
#define WIRE_MIN_TS 1.0
#define WIRE_MAX_TS 1e11

typedef struct wire_tag {
    const char *k, *v;
    size_t klen, vlen;
} wire_tag;

typedef struct wire_metric {
    const char *name;
    size_t name_len;
    double value;
    double ts; /* 0: not given */
    int level;
    long pid;
    unsigned long lost;
    int ntags;
    wire_tag tags[WIRE_MAX_TAGS];
} wire_metric;

enum wire_result {
    WIRE_METRIC = 0, /* *m filled */
    WIRE_PAYLOAD,    /* *payload / *plen point at the JSON text */
    WIRE_BAD_FORMAT, /* not a message of ours, missing fields */
    WIRE_BAD_NAME,   /* empty, too long or a character outside [A-Za-z0-9_.:/-] */
    WIRE_BAD_VALUE,  /* not a finite number */
    WIRE_BAD_LEVEL,  /* not an integer in 1..WIRE_MAX_LEVEL */
    WIRE_BAD_TAG,    /* KEY=VALUE malformed, bad key, too many tags */
};

/* Parses one message (not NUL-terminated).  Pointers in *m point into buf. */
int wire_parse(const char *buf, size_t len, wire_metric *m, const char **payload, size_t *plen);

/* 1 if s[0..n) is a valid metric or tag-key name of at most max bytes. */
int wire_name_ok(const char *s, size_t n, size_t max);
/* 1 if s[0..n) may be a tag value: at most WIRE_MAX_TAGVAL bytes and no
 * control character (a byte below 0x20, or 0x7f).  The one rule of every
 * client (emit refuses, the libraries do not send) and of the listener. */
int wire_tagval_ok(const char *s, size_t n);

/* Formats a metric message into out (cap bytes).  ts <= 0: leave empty.
 * tags: "KEY=VALUE" strings.  Returns the length, or 0 if it did not fit. */
size_t wire_format(char *out, size_t cap, const char *name, double value, double ts, int level,
                   long pid, unsigned long lost, char *const *tags, int ntags);

/* Human-readable reason for a wire_result. */
const char *wire_strerror(int r);

#endif
