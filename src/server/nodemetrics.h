/* nodemetrics.h — the node collector of `jobscope serve` (docs/serve-site.md):
 * Dragon's level >= 2 metrics, under Dragon's names so that its Grafana
 * dashboards work unchanged, sampled every --node-interval and handed to the
 * server's common ingest path (the same one /api/put uses).
 *
 *   load_average           1-minute load average (/proc/loadavg)
 *   used_RAM               percent of memory in use: (MemTotal - MemAvailable) / MemTotal
 *   cpu_percent            percent of all CPUs busy since the previous sample (/proc/stat)
 *   num_running_processes  processes owned by the server's user (as Dragon counts
 *                          them); every process of the node when it runs as root
 *   DeviceUtilization      per GPU, percent (tag gpu=INDEX)
 *   DeviceMemoryUtilization per GPU, memory used / total, percent, 2 decimals
 *   DevicePowerUsage       per GPU, watts
 *
 * Every point is tagged host=HOSTNAME (and gpu=N).  The GPUs come from
 * src/gpu's backends (NVML through dlopen, then DRM/amdgpu sysfs), every
 * device of the node.  $JOBSCOPE_PROC_ROOT prefixes /proc (tests). */
#ifndef JOBSCOPE_NODEMETRICS_H
#define JOBSCOPE_NODEMETRICS_H

#include <stddef.h>
#include "store/store.h"

/* Where the points go; 0 when stored. */
typedef int (*node_ingest_fn)(void *arg, const store_point *pts, size_t n);

typedef struct node_config {
    double interval_s; /* <= 0: the collector is off */
    const char *host;  /* tag value; NULL = gethostname() */
    int no_gpu;        /* do not look for GPUs */
    int verbose;
} node_config;

typedef struct node_collector node_collector;

/* Opens the sources (GPU backends) and, when fn is given, starts the thread
 * that samples every interval.  NULL + err only on allocation failure: a node
 * without GPUs just has no GPU metrics. */
node_collector *node_collector_start(const node_config *c, node_ingest_fn fn, void *arg, char *err,
                                     size_t errlen);
/* Takes one sample now into pts (at most max); returns the count.  The
 * strings in pts stay valid until the next sample or stop. */
int node_collector_sample(node_collector *nc, store_point *pts, int max);
/* Number of GPUs found. */
int node_collector_gpus(const node_collector *nc);
void node_collector_stop(node_collector *nc);

#endif
