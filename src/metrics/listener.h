/* listener.h — the "metrics" source: custom metrics sent from inside the job
 * (libjobscope, jobscope.py, `jobscope emit`) and payload blocks printed by
 * it (--scan-output).  See docs/metrics.md.
 *
 * open() (before the spawn) creates a private 0700 directory holding a Unix
 * SOCK_SEQPACKET socket, and with --scan-output the pipes of the pump.  The
 * monitor's spawn then asks this module for the child's environment
 * (JOBSCOPE_SOCKET, JOBSCOPE_TELEMETRY_LEVEL added) and its file actions
 * (pipes on 1 and 2); both are no-ops when the source is not open, so
 * nothing about the job changes when metrics are off.  Every metric becomes
 * a jobscope.metric event; record() adds per-metric count/min/max/mean/last
 * and the counts of everything dropped. */
#ifndef JOBSCOPE_METRICS_LISTENER_H
#define JOBSCOPE_METRICS_LISTENER_H

#include <spawn.h>
#include "source.h"

#define EV_METRIC        "jobscope.metric"
#define EV_PAYLOAD_ERROR "jobscope.payload.error"
#define METRICS_ENV_SOCKET "JOBSCOPE_SOCKET"
#define METRICS_ENV_LEVEL  "JOBSCOPE_TELEMETRY_LEVEL"
#define METRICS_DEFAULT_LEVEL 1

extern const source_ops metrics_source_ops;

/* The environment for the job: env itself when the listener is not open,
 * else a copy (owned by this module) with our two variables set. */
char **metrics_child_env(char **env);
/* Adds the pump's dup2s to fa when --scan-output is on; 0 on success. */
int metrics_spawn_actions(posix_spawn_file_actions_t *fa);

#endif
