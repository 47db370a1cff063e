/* live.h — the live per-job values behind Prometheus /metrics (live.c): the
 * latest value of every series that carries a job_id tag.  server.c owns
 * the table and feeds it from every ingest path. */
#ifndef JOBSCOPE_LIVE_H
#define JOBSCOPE_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include "store/store.h"
#include "sink/formats/sbuf.h"

#define LIVE_MAX 200000 /* bound on tracked series (memory), tag sets included */

typedef struct live_table live_table;

live_table *live_new(void);
void live_free(live_table *t);
/* The points' values become the latest of their series (now_ms: when). */
void live_update(live_table *t, const store_point *pts, size_t n, int64_t now_ms);
/* A job's series leave at its end. */
void live_end_job(live_table *t, const char *job_id);
/* Series not updated since older_than_ms leave. */
void live_expire(live_table *t, int64_t older_than_ms);
/* Appends the Prometheus text of every series (TYPE, HELP from the metric
 * catalogue), after the count of points left out because the table was
 * full (jobscope_serve_live_left_out_points_total). */
void live_metrics(live_table *t, sbuf *out);
/* Series held now. */
size_t live_count(live_table *t);
/* Series and tag sets held now, and the points left out (table full). */
typedef struct live_stats {
    size_t series, sets;
    unsigned long long left_out;
} live_stats;
live_stats live_get_stats(live_table *t);

#endif
