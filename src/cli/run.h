/* run.h — `jobscope run` and `jobscope attach`: the command line of the
 * engine (src/monitor).  Returns the job's exit status (128+N if killed by
 * signal N) or 125/126/127 for jobscope's own errors. */
#ifndef JOBSCOPE_RUN_H
#define JOBSCOPE_RUN_H

int monitor_main(int attach, int argc, char **argv);

/* Parses `jobscope run` options (argv[0] is "run") into *cfg without
 * running anything, for front ends that run the engine themselves
 * (jobscope kickstart).  0, or the exit status of a bad option; *exit_now
 * after --help/--version.  Strings in *cfg live until the next call. */
struct monitor_config;
int run_config(int argc, char **argv, struct monitor_config *cfg, int *exit_now);

#endif
