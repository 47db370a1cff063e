/* repo.h — the events repository of `jobscope serve` (docs/views.md
 * "Repository"): every JSON event the server ingests (jobscope.start/end/
 * limit, samples, payloads such as darshan.perf, Pegasus stampede.* and
 * transfer.inv.* events, anything with an "event" name) is kept whole in
 * SQLite (a JSON text column: unknown fields are never dropped), indexed by
 * workflow id, job id, host, event name and time; a jobs table and a
 * workflows table are kept up to date from them for the lists.
 *
 * repo_module.c plugs it into the server (an event hook and the /api/jobs,
 * /api/workflows, /api/events routes, the dashboard's pages).  These
 * functions are thread-safe (one connection behind a mutex). */
#ifndef JOBSCOPE_REPO_H
#define JOBSCOPE_REPO_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

typedef struct repo repo;

/* Opens (creates) the database file; NULL + a reason. */
repo *repo_open(const char *path, char *err, size_t errlen);
void repo_close(repo *r);
/* Events (and jobs, workflows) older than this many seconds are deleted,
 * checked every 10,000 events written (`serve --retention`); 0 = keep all. */
void repo_set_retention(repo *r, double seconds);

/* Stores one event (a JSON object).  0, or -1 when it is not an object or
 * the database failed.  repo_add writes it at once; repo_add_json queues it
 * and a writer thread stores the queue in one transaction per batch (every
 * 20 ms, or at once past 2,000 events); every read first writes what is
 * queued, so an answer always includes every event handed in before it. */
int repo_add(repo *r, json_t *ev);
int repo_add_json(repo *r, const char *json, size_t len);
/* repo_add_json with what the server's streaming reader read of the event
 * (server.h's fields; NULL: none): a sample's members are then taken from
 * them instead of from the text, with the same meaning. */
struct server_event_fields;
int repo_add_fields(repo *r, const char *json, size_t len, const struct server_event_fields *f);

/* Filters of the job list; NULL / 0 = any (docs/views.md "API"). */
typedef struct repo_job_filter {
    const char *q;                 /* search: job id prefix, workflow id or label prefix */
    const char *wf;                /* workflow: id or label, exact or a prefix */
    const char *host, *user, *job; /* exact */
    const char *xformation;        /* exact or a prefix */
    const char *exe;               /* a substring */
    const char *state;             /* running | done | failed | stopped */
    const char *warning;           /* a warning kind (io_bound, cpu_efficiency...) */
    double since, until;           /* jobs active at or after / started at or before (epoch s) */
    const char *sort;              /* one of repo_sort_keys (default start) */
    int desc;                      /* sort descending */
    long limit, offset;            /* limit 1..REPO_MAX_LIMIT (default 100) */
} repo_job_filter;

#define REPO_MAX_LIMIT 10000
/* The sort keys the list accepts, NULL-terminated. */
extern const char *const repo_sort_keys[];
/* The states the list filters on, NULL-terminated. */
extern const char *const repo_states[];

/* {"jobs":[{job row}], "total":N}; new reference. */
json_t *repo_jobs(repo *r, const repo_job_filter *f);

/* Changes with every batch of events written: a list answered at one
 * version is the same at that version (the dashboard's ETag). */
uint64_t repo_version(repo *r);

/* Aggregates over the jobs the filter selects (its sort, limit and offset
 * ignored), grouped by `by` (wf, xformation, host, exe, user): per group
 * totals, and over time (buckets between the first start and the last end)
 * jobs running, CPUs used and allocated, memory used and allocated, and
 * failures, for the `top` largest groups.  Without since/until: the last
 * 14 days that have jobs ("recent": true).  NULL for an unknown `by`. */
json_t *repo_aggregate(repo *r, const repo_job_filter *f, const char *by, int buckets, int top);

/* The raw events of a page of jobs, for `stats --server`: NDJSON, per job
 * a line {"jobscope.export.job":{"job_id","wf","state"}} then its events
 * as stored, one a line, in time order; last {"jobscope.export.next": row
 * id to continue after, or null}.  Jobs in row order after row id `after`,
 * at most `limit`.  A malloc'ed text (the events are copied, never parsed),
 * or NULL. */
char *repo_export(repo *r, const repo_job_filter *f, long long after, long limit);

/* Every event of a job (by job id, within workflow wf when not NULL; the most
 * recent job of that id otherwise) with ts >= since, in time order, as a
 * JSON array (new reference); NULL when no such job. */
json_t *repo_job_events(repo *r, const char *job, const char *wf, double since);

/* The job's row (as in repo_jobs), or NULL. */
json_t *repo_job_row(repo *r, const char *job, const char *wf);

/* A finished job's page (jobdata_json thinned to REPO_VIEW_POINTS), made on
 * its first request and kept: malloc'ed JSON text, or NULL (not finished,
 * or no such job). */
#define REPO_VIEW_POINTS 20000
char *repo_job_view(repo *r, const char *job, const char *wf);

/* A job of several runs (docs/views.md "A job of several runs": a Slurm
 * job's steps, tasks and nodes, an MPI job's ranks, a job run again): with
 * run NULL, the whole job's page (report/jobset.h: summary, assessment,
 * series summed over the runs, "runs", "nodes", "steps"), or NULL for a job
 * of one run (repo_job_view and repo_job_events give it as ever); with run
 * a run's key, that run's page (events with ts >= since), NULL when there
 * is no such run.  New reference. */
json_t *repo_job_page(repo *r, const char *job, const char *wf, const char *run, double since,
                      size_t max_points);
/* How many runs the job has (0 for a job stored by an older version), -1
 * when there is no such job. */
int repo_job_nruns(repo *r, const char *job, const char *wf);
/* The raw events of one run of a job, in time order; NULL when none. */
json_t *repo_run_events(repo *r, const char *job, const char *wf, const char *run);

/* {"workflows":[...]} and one workflow {"workflow":{...},"jobs":[...],
 * "events":[stampede, payload and other non-sample events]} (NULL if unknown). */
json_t *repo_workflows(repo *r);
json_t *repo_workflow(repo *r, const char *wf);

/* Raw events, paged by id: {"events":[{"id":..,"event":{...}}], "next": id
 * or null}.  Filters: wf, job, host, name (exact, or a prefix ending in
 * '*'), since/until (epoch s), after (id), limit (default 500, max 10000). */
typedef struct repo_event_filter {
    const char *wf, *job, *host, *name;
    double since, until;
    long long after;
    long limit;
} repo_event_filter;
json_t *repo_events(repo *r, const repo_event_filter *f);

/* {"nodes":[{"host", "jobs", "running", "last"}]}. */
json_t *repo_nodes(repo *r);

#endif
