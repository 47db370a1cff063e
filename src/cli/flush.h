/* flush.h — `jobscope flush [OPTIONS] SPOOL...`: re-sends the events a run
 * left in spool files (see sink/spool.h). */
#ifndef JOBSCOPE_FLUSH_H
#define JOBSCOPE_FLUSH_H

int flush_main(int argc, char **argv);

#endif
