/* run.h — `jobscope run` and `jobscope attach`: the command line of the
 * engine (src/monitor).  Returns the job's exit status (128+N if killed by
 * signal N) or 125/126/127 for jobscope's own errors. */
#ifndef JOBSCOPE_RUN_H
#define JOBSCOPE_RUN_H

int monitor_main(int attach, int argc, char **argv);

#endif
