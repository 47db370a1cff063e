/* ingest.h — jobscope events into points, inside (ingest.c, event_reader.c;
 * server.h has what the rest of the server calls: server_ingest_event,
 * server_ingest_ndjson).
 *
 * An event is read into an ev_view — its name, time, the strings and
 * numbers the rule needs, its numeric members in order, the rows of its
 * catalogue groups — by one of two readers: event_reader.c streams the
 * known shapes (flat events, custom "tags", the catalogue's groups of rows:
 * nearly every line a run sends) straight from the text; any other line
 * (nested objects, a key given twice, anything it cannot prove it reads as
 * jansson would) is read with jansson (event_json.c).  One rule (ingest.c)
 * turns the view into points, so both readers give the same points; the
 * unit tests compare them line by line. */
#ifndef JOBSCOPE_INGEST_H
#define JOBSCOPE_INGEST_H

#include <stddef.h>
#include <stdint.h>
#include "json_read.h"
#include "store/store.h"
#include "util/arena.h"

/* A span of text; s NULL: absent. */
typedef struct ev_span {
    const char *s;
    size_t n;
} ev_span;

/* A numeric member: key (a top-level member, or the dotted path of one
 * nested in objects, "rlimits.nofile.soft"), or a field of a row of a
 * catalogue group (key "cg_io", field "rbytes", label the row's "dev"). */
typedef struct ev_value {
    ev_span key, field, label;
    double v;
    ev_span itext; /* a top-level integer's text (the streaming reader's) */
} ev_value;

/* A custom tag ("tags": {...}): a string, or a number. */
typedef struct ev_ctag {
    ev_span k, v;
    int is_num;
    double num;
} ev_ctag;

#define EV_NANNOT 8 /* job_id site wf_uuid wf_label dag_job_id condor_job_id xformation task_id */
extern const char *const ev_annotations[EV_NANNOT];

typedef struct ev_view {
    ev_span event;
    int has_ts; /* "ts" is a number */
    double ts;
    ev_span hostname, host, annot[EV_NANNOT], uuid, job_id; /* strings */
    ev_span rank;                                           /* an integer's text */
    ev_span gpu;    /* "id": an integer's text or a string */
    ev_span mname;  /* jobscope.metric: "name" (a string) */
    int has_mvalue; /* and "value" (a number) */
    double mvalue;
    ev_ctag *ctags;
    size_t nctags, capctags;
    ev_value *vals; /* in the order of the event */
    size_t nvals, capvals;
    ev_ctag *strs; /* every top-level string member (the streaming reader's) */
    size_t nstrs, capstrs;
    int oom;
} ev_view;

/* (event_view.c) */
void ev_view_reset(ev_view *v);
void ev_view_free(ev_view *v);
/* Appends a value / a custom tag (ev_view.oom on failure). */
ev_value *ev_view_value(ev_view *v);
ev_ctag *ev_view_ctag(ev_view *v);
ev_ctag *ev_view_str(ev_view *v);
/* The catalogue group of this event named key ("cg_io" of
 * kickstart.inv.online), as its first field's definition; NULL if none. */
const struct metric_def *ev_group(ev_span event, const char *key, size_t klen);
/* The label naming the group's rows ("dev"). */
const char *ev_group_label(const struct metric_def *g);
/* Is name a field of that group (its catalogue definition, or NULL)? */
const struct metric_def *ev_row_field(const struct metric_def *group, const char *name, size_t n);
/* Is s the text lit? */
int ev_span_is(ev_span s, const char *lit);
/* Is key one of the members that are not values (ts seq rank id tags batch)? */
int ev_not_a_value(const char *key, size_t klen);

/* The streaming reader (event_reader.c): the line [p, p+len) into *v.
 * 1: read; 0: not a known shape, or not valid JSON (read it with jansson,
 * which also names the error).  jr is scratch for unescaped strings (reset
 * here); the view's spans point into the line or into jr. */
int event_reader_read(jread *jr, const char *p, size_t len, ev_view *v);

/* The shape of the last event line read in full (event_reader.c): its
 * text between its values, and what each value is to the view. */
#define EV_SHAPE_TEXT   4096
#define EV_SHAPE_VALUES 160
typedef struct ev_shape_value {
    uint16_t before;   /* bytes of text before it (after the value before) */
    uint8_t kind;      /* a string, a number, an array, the custom tags */
    uint8_t role;      /* a number's: ts, rank, id, a value... */
    uint16_t key_back; /* its key begins this many bytes before it */
    uint16_t key_len;
    int32_t slot; /* a string's field in ev_view (an offset), or -1 */
} ev_shape_value;
typedef struct ev_shape {
    int ok, nval;
    uint16_t tail; /* the text after the last value */
    unsigned unused, rest;
    uint64_t shaped, learned; /* lines read by a shape, shapes learned */
    ev_shape_value val[EV_SHAPE_VALUES];
    char text[EV_SHAPE_TEXT];
} ev_shape;

/* The line as event_reader_read reads it, the same view and answer: by
 * the shape of the line before where its text between the values is the
 * same, else in full (and its shape learned).  sh starts zeroed. */
int event_reader_next(ev_shape *sh, jread *jr, const char *p, size_t len, ev_view *v);

/* jansson's reading (event_json.c) of the line [p, p+len) into *v: 0, -1
 * valid JSON but not an object, -2 not JSON (err: jansson's message).
 * The view's spans point into *doc, freed with event_json_free after its
 * points are made; a's strings (nested paths) live until a is reset. */
int event_json_read(const char *p, size_t len, ev_view *v, arena *a, void **doc, char *err,
                    size_t errlen);
void event_json_free(void *doc);

/* Reading a whole NDJSON body into points, without storing them: what
 * server_ingest_ndjson stores, and what the tests compare. */
enum { INGEST_JANSSON_ONLY = 1 };
typedef struct ingest_result {
    store_point *pts;
    size_t n;
    size_t accepted, failed;
    char err[256];
    struct ingest_batch *b; /* owns the points' strings and tags */
} ingest_result;
/* 0, or -1 when out of memory. */
int ingest_ndjson_points(const char *body, size_t len, int64_t now_ms, unsigned flags,
                         ingest_result *res);
void ingest_result_free(ingest_result *res);

#endif
