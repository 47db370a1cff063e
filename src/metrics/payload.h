/* payload.h — Panorama monitoring payload blocks in a job's output.
 *
 * A job (or a tool such as pegasus-darshan) prints
 *     @@@MONITORING_PAYLOAD - START@@@
 *     {"monitoring_event": "darshan.perf", "ts": 1552878285, "payload": [{...}, ...]}
 *     @@@MONITORING_PAYLOAD - END@@@
 * on stdout or stderr.  The scanner is fed the stream in chunks of any size
 * (markers may be split across reads), hands complete blocks to a callback,
 * and passes every other byte on through another.  A block is buffered up to
 * a cap (1 MiB by default); a bigger or unterminated block is reported as an
 * error and its bytes are passed on, never lost.  With strip on, blocks (and
 * the newline after END) are removed from the passed-on stream; bytes that
 * might begin a marker are then held until the next byte decides, or until
 * payload_flush() (the pump calls it when the stream goes quiet).
 *
 * payload_parse() turns one block's JSON into events: one per item of
 * "payload", named by "monitoring_event" (default monitoring.additional). */
#ifndef JOBSCOPE_METRICS_PAYLOAD_H
#define JOBSCOPE_METRICS_PAYLOAD_H

#include <stddef.h>

#define PAYLOAD_START         "@@@MONITORING_PAYLOAD - START@@@"
#define PAYLOAD_END           "@@@MONITORING_PAYLOAD - END@@@"
#define PAYLOAD_DEFAULT_EVENT "monitoring.additional"
#define PAYLOAD_CAP           (1024 * 1024)

typedef struct payload_cbs {
    /* bytes to pass on, in order (all of them unless stripping) */
    void (*out)(void *ctx, const char *p, size_t n);
    /* a complete block: the bytes between the markers */
    void (*block)(void *ctx, const char *p, size_t n);
    /* a block that could not be extracted: too large, or no END before EOF */
    void (*error)(void *ctx, const char *reason, size_t size);
    void *ctx;
} payload_cbs;

typedef struct payload_scanner payload_scanner;

payload_scanner *payload_new(int strip, size_t cap, const payload_cbs *cb);
void payload_feed(payload_scanner *s, const char *p, size_t n);
void payload_flush(payload_scanner *s);  /* release held partial-marker bytes */
void payload_finish(payload_scanner *s); /* end of stream */
/* strip: stop holding an open block (error reported, bytes passed on, the
 * rest of it let through): the pump calls it when a block stays open long */
void payload_abandon(payload_scanner *s, const char *reason);
void payload_free(payload_scanner *s);
size_t payload_held(const payload_scanner *s); /* bytes currently held back (strip) */

/* One event per payload item.  fields: the item's members, minified, without
 * the braces; keys "event", "ts", "seq" and those reserved(ctx) says 1 for
 * are removed.  ts: the item's numeric "ts", else the block's, else now. */
typedef void (*payload_event_fn)(void *ctx, const char *name, double ts, const char *fields,
                                 size_t n);
typedef int (*payload_reserved_fn)(void *ctx, const char *key, size_t klen);

/* Returns the number of events, or -1 with *err set (nothing emitted). */
int payload_parse(const char *json, size_t n, double now, payload_event_fn fn,
                  payload_reserved_fn reserved, void *ctx, const char **err);

#endif
