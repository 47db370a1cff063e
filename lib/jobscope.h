/* jobscope.h — custom metrics from inside a job monitored by `jobscope run`.
 *
 *     #include <jobscope.h>        cc app.c $(pkg-config --cflags --libs jobscope)
 *     js_metric("loss", 0.13);
 *     js_metric_tagv("loss", 0.13, "phase", "train", "rank", "3", NULL);
 *
 * Each call becomes a `jobscope.metric` event on every destination of the
 * monitor, and the end-of-job record gets per-metric count/min/max/mean/last.
 *
 * Guarantees: every function is safe from any number of threads and across
 * fork(); none ever blocks (a full queue drops the metric and counts it);
 * none ever fails the caller or changes errno.  Without a monitor
 * (JOBSCOPE_SOCKET unset) every call is a cheap no-op.  Metrics whose level
 * is above the run's telemetry level (JOBSCOPE_TELEMETRY_LEVEL) are dropped
 * here, before any formatting.
 *
 * Names and tag keys: 1-128 (keys: 1-64) characters of A-Z a-z 0-9 _ . : / -
 * Tag values: up to 256 bytes, no TAB/newline.  At most 16 tags.
 * Return value: 1 if the metric was handed to the monitor, 0 otherwise. */
#ifndef JOBSCOPE_H
#define JOBSCOPE_H

#ifdef __cplusplus
extern "C" {
#endif

#define JS_LEVEL_DEFAULT 1

/* value now, level 1, no tags */
int js_metric(const char *name, double value);
/* with an explicit timestamp (epoch seconds; <= 0: now) */
int js_metric_at(const char *name, double value, double ts);
/* with a telemetry level (1 = always at the default level, higher = more detail) */
int js_metric_level(const char *name, double value, int level);
/* tags: { "key1", "value1", "key2", "value2", ..., NULL } (may be NULL) */
int js_metric_tags(const char *name, double value, const char *const *tags);
/* tags as arguments: key, value, ..., NULL */
int js_metric_tagv(const char *name, double value, ...);
/* everything: ts <= 0 means now */
int js_metric_full(const char *name, double value, double ts, int level, const char *const *tags);

/* A whole monitoring payload object, as printed in a MONITORING_PAYLOAD block:
 * {"monitoring_event": "...", "ts": ..., "payload": [ {...}, ... ]} */
int js_payload(const char *json);

/* 1 if a metric of this level would be sent now (to skip computing it). */
int js_enabled(int level);
/* Metrics this process could not hand over (queue full, monitor gone). */
unsigned long js_dropped(void);

#ifdef __cplusplus
}
#endif
#endif
