/* stats.h — entry points of `jobscope stats` and `jobscope report` (the
 * subcommands of build/jobscope-serve registered in server/server_main.h),
 * and the client that reads jobs back from a running `jobscope serve`. */
#ifndef JOBSCOPE_STATS_H
#define JOBSCOPE_STATS_H

#include "report/jobdata.h"

int stats_main(int argc, char **argv);
int report_main(int argc, char **argv);

/* Calls cb once per job known to the server at base_url (its /api/jobs list,
 * then each job's raw events from /api/jobs/ID/events), with a finished
 * jobdata that cb must not keep.  only_job: just that job (NULL: all).
 * 0, or -1 after printing one line on stderr. */
int report_fetch_jobs(const char *base_url, const char *only_job, void (*cb)(void *arg, jobdata *j),
                      void *arg);

#endif
