/* monitor.h — `jobscope run` and `jobscope attach`: spawn or find the job,
 * sample it every interval, forward signals, reap, and write the
 * end-of-job record.  Returns the job's exit status (128+N if killed by
 * signal N) or 125/126/127 for jobscope's own errors. */
#ifndef JOBSCOPE_MONITOR_H
#define JOBSCOPE_MONITOR_H

int monitor_main(int attach, int argc, char **argv);

/* The process-tree fields of a kickstart.inv.online event (pid ... brecv):
 * fills *set from s and appends its JSON members to b.  The golden-output
 * test drives it with fixed samples. */
#include <sys/types.h>
#include "../event/json.h"
#include "../model/metric.h"
#include "../proc/proctree.h"
void monitor_sample_fields(jbuf *b, mset *set, pid_t root, const char *exe, const tree_sample *s);

#endif
