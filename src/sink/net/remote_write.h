/* remote_write.h — Prometheus remote write 1.0: a WriteRequest (protobuf),
 * snappy-compressed, as Prometheus' receiver (--web.enable-remote-write-
 * receiver), VictoriaMetrics, Mimir, Thanos and Cortex accept at
 * /api/v1/write.  The encoder behind the promrw:// row of net/tsdb.c.
 *
 * The four messages are written by hand (remote_write.c says why): a
 * WriteRequest is its TimeSeries one after another (field 1), so the texts
 * of several events joined are one valid request. */
#ifndef JOBSCOPE_REMOTE_WRITE_H
#define JOBSCOPE_REMOTE_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct sbuf;

typedef struct rw_label {
    const char *name, *value;
} rw_label;

/* Appends one TimeSeries (field 1 of a WriteRequest) of one sample; labels
 * as given (the caller sorts them, as Prometheus requires). */
void remote_write_series(struct sbuf *b, const rw_label *labels, int n, double value,
                         int64_t ts_ms);

/* An event's numbers as TimeSeries: metric <event>_<field> (characters
 * outside [a-zA-Z0-9_:] become '_'), labels the event's tags (tsconv.h: the
 * annotations, rank, pid, id) and the string values of its "tags" object
 * (--tag, a custom metric's tags), sorted; empty values are left out.
 * Returns the samples appended. */
int remote_write_encode(struct sbuf *b, const char *json, size_t len, const char *keep_tags);
/* The same from the event's value set (tsconv.h); -1: left to the JSON. */
struct mset;
struct tsconv_ann;
int remote_write_set(struct sbuf *b, const struct mset *s, const struct tsconv_ann *a,
                     const char *keep_tags);

/* The body as it goes on the wire: snappy's block format.  0, or -1. */
int remote_write_finish(const struct sbuf *body, struct sbuf *out);

#endif
