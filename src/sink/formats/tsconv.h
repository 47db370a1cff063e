/* tsconv.h — turns an event into time-series points, for the OpenTSDB,
 * Influx line-protocol and Prometheus remote-write sinks (net/tsdb.c).  Two
 * ways in, one result:
 *
 *  - from the event's value set (model/metric.h): tsconv_influx_set,
 *    tsconv_opentsdb_set, tsconv_set_point, on the producer's thread when
 *    the event is queued, without parsing.  Every event the monitor and its
 *    sources make has one (samples, start, end, limits, GPU, custom
 *    metrics);
 *  - from the event's JSON text (jansson), on the publisher thread, for
 *    what has no set or a set the text alone describes: every event
 *    replayed from a spool (the spool holds JSON text only, its format
 *    unchanged), and a payload block's event, whose fields are the job's
 *    own JSON passed on as written (a raw member of its set).
 *
 * Both produce the same bytes for the same event: the set path takes the
 * job's annotations as the JSON path reads them (tsconv_ann, parsed once),
 * then the set's members in order, each number read back from the text the
 * JSON writer prints, and leaves to the JSON path (returns -1) what the two
 * would read differently (a key twice, an integer jansson refuses, a raw
 * member).  tests/helpers/golden.c runs both over fixed samples, cgroup
 * fixtures, the GPU source's events and the other events of a run, and
 * fails on any difference.
 *
 * Rule: every top-level number of the event is a value (metric
 * "<event>.<field>" for OpenTSDB, field <field> of measurement <event> for
 * Influx), except ts and seq.  Tags are the job's string annotations
 * (annotations_is_key: hostname, job_id, site, wf_uuid, ...), the names of
 * what is measured (`name`: a custom metric's, a GPU's model; `uuid`: a
 * GPU's), the members of a "tags" object (--tag KEY=VALUE, a custom
 * metric's tags) and the numeric identifiers rank, pid and id (GPU index),
 * as tsconv_string_tag() says; other strings (exe,
 * cmd, cwd, version, kernel...) are not sent: a tag per command line would
 * give the receiving store one series per command line.  Booleans, arrays
 * and other nested objects are left out; an event without a number is
 * skipped.  `keep_tags` (comma-separated,
 * NULL for all) limits the tags, for servers with a tag limit (OpenTSDB
 * accepts 8 by default).  A field named "_value" is the event's own value:
 * OpenTSDB metric "<event>" (no suffix), Influx field "value" (jobscope
 * serve --forward sends dot-less metrics such as Dragon's load_average so). */
#ifndef JOBSCOPE_TSCONV_H
#define JOBSCOPE_TSCONV_H

#include <stddef.h>

#define TSCONV_OWN_VALUE "_value"

typedef struct ts_kv {
    const char *key;
    const char *val;
} ts_kv;
typedef struct ts_field {
    const char *key;
    double val;
} ts_field;

typedef struct ts_point {
    const char *name; /* the event name */
    double ts;        /* epoch seconds */
    ts_kv tags[64];
    int ntags;
    int tags_from; /* tags[tags_from..]: those of the "tags" object (ntags: none) */
    ts_field fields[256];
    int nfields;
    void *doc; /* json_t *, owns the keys (JSON path; the set path: NULL) */
} ts_point;

/* 0 on success; -1 when the JSON is not an object with "event". */
int tsconv_parse(ts_point *p, const char *json, size_t len, const char *keep_tags);
void tsconv_free(ts_point *p);

struct sbuf;
/* Appends the event as one line-protocol line; returns 0 (nothing written)
 * when it has no numbers. */
int tsconv_influx_line(struct sbuf *b, const char *json, size_t len, const char *keep_tags);
/* Appends the event's data points to a JSON array being built in b (b
 * starts empty; the caller closes it with ']'); returns the points added. */
int tsconv_opentsdb_points(struct sbuf *b, const char *json, size_t len, const char *keep_tags);

/* The writers both paths share: a point as one line (it has numbers), as
 * OpenTSDB data points (returns how many); `keep_tags` membership; whether
 * a parsed document has a top-level key. */
void tsconv_influx_point(struct sbuf *b, const ts_point *p);
int tsconv_opentsdb_point(struct sbuf *b, const ts_point *p);
int tsconv_listed(const char *keep_tags, const char *key);
/* 1 if a top-level string member named key is a tag (the rule above). */
int tsconv_string_tag(const char *key);
int tsconv_has_key(const ts_point *p, const char *key);

/* ---- from a value set (tsconv_set.c) ------------------------------------- */

struct mset;
/* The job's annotations (the "key":value,... every event starts with) as
 * the JSON path reads them: their tags (keep_tags applied) and numbers. */
typedef struct tsconv_ann {
    ts_point p;
} tsconv_ann;

/* Parses the annotations fragment once; 0, or -1 if it is no JSON or has a
 * member named like a field of the catalogue (jansson would keep one of the
 * two: such a job's events take the JSON path). */
int tsconv_ann_init(tsconv_ann *a, const char *fragment, size_t len, const char *keep_tags);
void tsconv_ann_free(tsconv_ann *a);

/* Room for the tag texts the set path makes (integers, repaired UTF-8). */
typedef struct tsconv_text {
    char buf[4096];
    size_t len;
} tsconv_text;

/* Fills p (its strings in t, a's and s's) as tsconv_parse fills it from
 * the event's JSON text.  0, or -1 when the JSON path would read the event
 * otherwise: the caller then encodes the JSON. */
int tsconv_set_point(ts_point *p, tsconv_text *t, const struct mset *s, const tsconv_ann *a,
                     const char *keep_tags);
/* The event s as tsconv_influx_line and tsconv_opentsdb_points would
 * encode its JSON text: the same return values, or -1 (nothing written)
 * when tsconv_set_point says -1. */
int tsconv_influx_set(struct sbuf *b, const struct mset *s, const tsconv_ann *a,
                      const char *keep_tags);
int tsconv_opentsdb_set(struct sbuf *b, const struct mset *s, const tsconv_ann *a,
                        const char *keep_tags);

#endif
