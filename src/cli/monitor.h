/* monitor.h — `jobscope run` and `jobscope attach`: spawn or find the job,
 * sample it every interval, forward signals, reap, and write the
 * end-of-job record.  Returns the job's exit status (128+N if killed by
 * signal N) or 125/126/127 for jobscope's own errors. */
#ifndef JOBSCOPE_MONITOR_H
#define JOBSCOPE_MONITOR_H

int monitor_main(int attach, int argc, char **argv);

#endif
