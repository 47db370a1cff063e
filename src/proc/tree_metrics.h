/* tree_metrics.h — the process-tree sampler as a source of the metric model:
 * a tree_sample becomes an mset (src/model/metric.h) that every encoder
 * walks. */
#ifndef JOBSCOPE_TREE_METRICS_H
#define JOBSCOPE_TREE_METRICS_H

#include <sys/types.h>
#include "../model/metric.h"
#include "proctree.h"

/* Starts a kickstart.inv.online event in out from s: labels pid and exe
 * (visible), cmd, cwd and user
 * (hidden: JoReMon's), every field of the tree in the catalogue.  iowait
 * without delay accounting is 0, as kickstart wrote it, or null with
 * null_missing (--null-missing). */
void tree_metrics_fill(mset *out, const tree_sample *s, pid_t root, const char *exe,
                       int null_missing);

#endif
