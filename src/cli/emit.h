/* emit.h — `jobscope emit`: send a custom metric or a payload object from a
 * shell script running under `jobscope run` (see docs/metrics.md). */
#ifndef JOBSCOPE_EMIT_H
#define JOBSCOPE_EMIT_H

int emit_main(int argc, char **argv);

#endif
