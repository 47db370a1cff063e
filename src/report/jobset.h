/* jobset.h — a job made of several runs (docs/views.md "A job of several
 * runs"): the monitors of one batch job's steps, tasks and nodes (the Slurm
 * plugin starts one per task), an MPI job's ranks, a job run again under
 * the same id.  Each run is read as a job of its own (jobdata); the whole
 * job is then one summary across them — its allocation per node, CPU and
 * memory per node, the next-time request per node and per task — which the
 * one assessment (assess.c) and the one report (summary.c) show as they show
 * a run.  The events repository of `jobscope serve` (src/repo) and `jobscope
 * summary` over several servers both group and sum with this code.
 *
 * A run's key: "HOST:STEP.TASK" for a Slurm task (its tags slurm_step,
 * slurm_task), else "HOST:RANK"; a later attempt under the same key (a
 * jobscope.start for a key whose run already started, with another main
 * pid) is "KEY#2", "KEY#3"..., and supersedes the earlier ones. */
#ifndef JOBSCOPE_JOBSET_H
#define JOBSCOPE_JOBSET_H

#include "report/jobdata.h"

#include <stddef.h>
#include <jansson.h>

#define JOBSET_MAX_RUNS 4096 /* runs of one job; events of more go to the last */

typedef struct jobset_part {
    char run[200];  /* the run's key */
    char base[200]; /* the key without the attempt */
    char step[32], task[32];
    long long pid;     /* the job's main process as the run's events name it; -1 unknown */
    int started;       /* its jobscope.start was seen */
    int superseded;    /* a later attempt under the same base */
    double node_cores; /* the node's allocation as the batch system gave it */
    double node_mem;   /* (slurm_alloc_cores counted, slurm_alloc_mem_mb); NAN */
    jd_summary sum;
    json_t *warnings; /* the run's own (jobdata_warnings), owned; or NULL */
} jobset_part;

/* Of an event: 1 and its run's base key in out (and the main pid it names
 * in *pid, -1 when it names none: a custom metric's pid is its sender's),
 * or 0 when it belongs to the job and no run (stampede, payload events). */
int jobset_run_base(const json_t *ev, char *out, size_t len, long long *pid);
/* The base key of a monitor's run: HOST:STEP.TASK of a Slurm task (task
 * "0" when not given), else HOST:RANK. */
void jobset_base_key(const char *host, const char *step, const char *task, long long rank,
                     char *out, size_t len);

/* Which of the existing runs of one base (oldest first) an event goes to:
 * its index, or -1 for a new run.  *adopt is set when that run learns its
 * pid from this event.  The repository and jobset_add both decide so. */
typedef struct jobset_ref {
    long long pid;
    int started;
} jobset_ref;
int jobset_choose(const jobset_ref *refs, size_t n, long long pid, int is_start, int *adopt);

/* The key of the n-th run (0-based) of a base: base, base#2, ... */
void jobset_key(const char *base, size_t nth, char *out, size_t len);

/* A part from a run's finished jobdata (its sum, tags and warnings). */
void jobset_part_of(jobset_part *p, const char *run, const char *base, const jobdata *j);
void jobset_part_free(jobset_part *p);
/* A part as JSON and back (the repository keeps it); new reference / 0 or -1. */
json_t *jobset_part_json(const jobset_part *p);
int jobset_part_read(const json_t *o, jobset_part *p);

/* Puts the parts in the order they began (then by key; a run of unknown
 * start last), whichever order their events came in, and marks those a
 * later attempt under the same key supersedes.  runs: their jobdata, kept
 * in step (or NULL). */
void jobset_order(jobset_part *parts, jobdata *runs, size_t n);
/* The parts not superseded. */
size_t jobset_active(const jobset_part *parts, size_t n);

/* The whole job from its parts (superseded ones left out): docs/views.md
 * says each figure's rule.  `whole` is overwritten. */
void jobset_whole(const jobset_part *parts, size_t n, jd_summary *whole);
/* The whole job's warnings: its own (CPU efficiency, memory, GPU: the
 * whole's figures) and each run's I/O phases and how it was stopped,
 * prefixed with the run's key. New reference. */
json_t *jobset_warnings(const jobset_part *parts, size_t n, const jd_summary *whole);
/* {"runs":[...], "nodes":[...], "steps":[...]} rows (new reference). */
json_t *jobset_details(const jobset_part *parts, size_t n, const jd_summary *whole);

/* A job's events grouped into runs (client side, and the repository's
 * pages). */
typedef struct jobset {
    jobset_part *parts;
    jobdata *runs; /* one per part */
    size_t n, cap;
    json_t *job_events; /* events of no run */
    int finished;
} jobset;

void jobset_init(jobset *s);
void jobset_free(jobset *s);
/* Feeds one event: to its run (jobset_choose), or to the job's own. */
int jobset_add(jobset *s, json_t *ev);
/* The jobdata of the run with this key (made when new), for a caller that
 * groups events itself (the repository); NULL past JOBSET_MAX_RUNS. */
jobdata *jobset_run(jobset *s, const char *run, const char *base);
/* After the last event: finishes every run, fills the parts. */
void jobset_finish(jobset *s);
/* The page object (jobdata_json's): one run and nothing superseded: that
 * run as ever (the job's own events with it); else the whole job — its
 * summary, assessment and warnings, series summed over the runs on a common
 * time grid — plus "runs", "nodes" and "steps". New reference. */
json_t *jobset_json(jobset *s, size_t max_points);

#endif
