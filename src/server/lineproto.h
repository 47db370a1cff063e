/* lineproto.h — the Influx line protocol of POST /write, parsed in place
 * into batches of store points (lineproto.c; the handler is in
 * api_ingest.c). */
#ifndef JOBSCOPE_LINEPROTO_H
#define JOBSCOPE_LINEPROTO_H

#include <stddef.h>
#include <stdint.h>
#include "store/store.h"
#include "util/arena.h"

typedef struct lp_name_ent {
    const char *s;
    size_t len;
    uint64_t h;
    int valid;
} lp_name_ent;

typedef struct lp_batch {
    store_point *pts; /* tags point into `tags` once parsed */
    uint32_t *toff;   /* per point: its line's first tag */
    size_t n, cap;
    store_tag *tags;
    size_t ntags, captags;
    lp_name_ent *names; /* interned metric names */
    size_t nnames, capnames;
    arena arena;        /* the strings (kept over slices) */
    size_t pos, lineno; /* where the next slice starts */
    int oom;
} lp_batch;

/* Parses the lines of body from b->pos on, appending points until at least
 * max_points are there (whole lines; counts lines, bad lines and the first
 * error in `first`).  1: more lines remain (empty b->n and b->ntags, call
 * again), 0: done, -1: out of memory.  mult_ns: nanoseconds per timestamp
 * unit; host tags lines without tags. */
int lineproto_parse(lp_batch *b, const char *body, size_t len, int64_t mult_ns, int64_t now_ms,
                    const char *host, size_t max_points, size_t *lines, size_t *bad, char *first,
                    size_t firstlen);
void lineproto_free(lp_batch *b);

#endif
