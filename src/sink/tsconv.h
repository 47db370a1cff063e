/* tsconv.h — turns an event into time-series points, for the OpenTSDB and
 * Influx line-protocol sinks.  Runs on the publisher thread (jansson).
 *
 * Rule: every top-level number of the event is a value (metric
 * "<event>.<field>" for OpenTSDB, field <field> of measurement <event> for
 * Influx), except ts and seq; every non-empty top-level string is a tag, and
 * so are the numeric identifiers rank, pid and id (GPU index).  Booleans,
 * arrays and nested objects are left out.  `keep_tags` (comma-separated,
 * NULL for all) limits the tags, for servers with a tag limit (OpenTSDB
 * accepts 8 by default).  A field named "_value" is the event's own value:
 * OpenTSDB metric "<event>" (no suffix), Influx field "value" (jobscope
 * serve --forward sends dot-less metrics such as Dragon's load_average so). */
#ifndef JOBSCOPE_TSCONV_H
#define JOBSCOPE_TSCONV_H

#include <stddef.h>

#define TSCONV_OWN_VALUE "_value"

typedef struct ts_kv { const char *key; char *val; } ts_kv;
typedef struct ts_field { const char *key; double val; } ts_field;

typedef struct ts_point {
    char    *name;        /* the event name */
    double   ts;          /* epoch seconds */
    ts_kv    tags[64];
    int      ntags;
    ts_field fields[256];
    int      nfields;
    void    *doc;         /* json_t *, owns the keys */
} ts_point;

/* 0 on success; -1 when the JSON is not an object with "event". */
int  tsconv_parse(ts_point *p, const char *json, size_t len, const char *keep_tags);
void tsconv_free(ts_point *p);


struct sbuf;
/* Appends the event as one line-protocol line; returns 0 (nothing written)
 * when it has no numbers. */
int  tsconv_influx_line(struct sbuf *b, const char *json, size_t len, const char *keep_tags);
/* Appends the event's data points to a JSON array being built in b (b
 * starts empty; the caller closes it with ']'); returns the points added. */
int  tsconv_opentsdb_points(struct sbuf *b, const char *json, size_t len, const char *keep_tags);

#endif
