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

/* A job's page object from the server (GET /api/jobs/ID: summary,
 * assessment, series...), or NULL: *status 404 (no such job, nothing
 * printed), another HTTP status or 0 (no answer) after one line on stderr.
 * server: http://HOST:PORT or unix:PATH; token: sent as a bearer (NULL:
 * none). */
json_t *report_fetch_job(const char *server, const char *token, const char *id, long *status);
/* The first 20 jobs whose id, workflow or executable match q (GET
 * /api/jobs?q=), or NULL. */
json_t *report_fetch_list(const char *server, const char *token, const char *q);
/* Every event of a job, all its runs (GET /api/jobs/ID/events): a JSON
 * array, or NULL as report_fetch_job. */
json_t *report_fetch_events(const char *server, const char *token, const char *id, long *status);

#endif
