/* dropin.h — front ends that speak other tools' command lines, so that a
 * site can put jobscope where those tools were (docs/kickstart.md,
 * docs/events.md):
 *
 *   jobscope kickstart [pegasus-kickstart's options] CMD [ARG...]   kickstart.c
 *   jobscope monitor [-g] [-i N] [run options] CMD [ARG...]        kickstart.c
 *   jobscope joremon [-pid N -interval S -job ID -format F ...]    joremon_cli.c
 *
 * Each translates its options into those of `jobscope run`/`attach` and
 * calls monitor_main().  main.c also dispatches on the program's name, so a
 * link named pegasus-kickstart, pegasus-monitor or joremon works alone. */
#ifndef JOBSCOPE_DROPIN_H
#define JOBSCOPE_DROPIN_H

int kickstart_main(int argc, char **argv);
int pmonitor_main(int argc, char **argv);
int joremon_main(int argc, char **argv);

#endif
