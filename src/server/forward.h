/* forward.h — `jobscope serve --forward URL` (forward.c): what a collector
 * needs to know of the forwarders' wire format. */
#ifndef JOBSCOPE_FORWARD_H
#define JOBSCOPE_FORWARD_H

/* The event that carries points which came without a jobscope event (an
 * OpenTSDB put, an Influx line, node metrics) to an event destination:
 * {"event":"jobscope.points","ts":T,"points":[{"metric":M,"ts":MS,
 * "value":V,"tags":{K:V}}...]}.  --consume stores them as those points. */
#define FORWARD_POINTS_EVENT "jobscope.points"

/* Nonzero while the calling thread is inside server_ingest_event() or
 * server_ingest_ndjson() (the points hooks then see an event's points,
 * which event destinations get as the event itself). */
int server_ingest_in_event(void);

/* One destination (forward_out.c: the monitor's sinks + publisher). */
#include <stddef.h>
typedef struct forward_out forward_out;
forward_out *forward_out_open(const char *url, const char *spool_dir, int verbose, char *err,
                              size_t errlen);
const char *forward_out_kind(const forward_out *f);  /* the sink's name: "influx", "amqp", ... */
const char *forward_out_label(const forward_out *f); /* URL without password */
int forward_out_write(forward_out *f, const char *name, const char *json, size_t len,
                      unsigned long long seq, double ts);
int forward_out_adopt(forward_out *f, const char *spool_path, char *err, size_t errlen);
void forward_out_stats(forward_out *f, unsigned long long *delivered, unsigned long long *dropped,
                       long long *pending);
/* Flushes within timeout_s (the rest stays in the spool) and frees; 0 when
 * everything was delivered. */
int forward_out_close(forward_out *f, double timeout_s);

#endif
