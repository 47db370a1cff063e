/* listener.h — the "metrics" source: custom metrics sent from inside the job
 * (libjobscope, jobscope.py, `jobscope emit`) and payload blocks printed by
 * it (--scan-output).  See docs/metrics.md.
 *
 * open() (before the spawn) creates a private 0700 directory holding a Unix
 * SOCK_SEQPACKET socket, and with --scan-output the pipes of the pump.  The
 * monitor's spawn then calls the source's spawn hook for the child's
 * environment (JOBSCOPE_SOCKET, JOBSCOPE_TELEMETRY_LEVEL added) and its file
 * actions (pipes on 1 and 2); when the source is not open there is no hook
 * to call, so nothing about the job changes when metrics are off.  Every metric becomes
 * a jobscope.metric event; record() adds per-metric count/min/max/mean/last
 * and the counts of everything dropped. */
#ifndef JOBSCOPE_METRICS_LISTENER_H
#define JOBSCOPE_METRICS_LISTENER_H

#include <spawn.h>
#include "source.h"

#define EV_METRIC             "jobscope.metric"
#define EV_PAYLOAD_ERROR      "jobscope.payload.error"
#define METRICS_ENV_SOCKET    "JOBSCOPE_SOCKET"
#define METRICS_ENV_LEVEL     "JOBSCOPE_TELEMETRY_LEVEL"
#define METRICS_DEFAULT_LEVEL 1

/* The metrics source's config (its part of monitor_config). */
typedef struct metrics_config {
    int telemetry_level;  /* --telemetry-level; -1: JOBSCOPE_TELEMETRY_LEVEL or 1; 0: off */
    int scan_output;      /* --scan-output: the job's stdout/stderr through pipes */
    int strip_payloads;   /* --strip-payloads: remove the blocks from that output */
    int payload_panorama; /* --payload-shape panorama */
} metrics_config;

extern const source_ops metrics_source_ops;

#endif
