/* assess.h — one job's assessment, as Princeton's jobstats gives it and
 * finer (docs/views.md "A job's assessment"): utilization bars against the
 * allocation (CPU, CPU memory, GPU, GPU memory), plain-language notes with
 * their reasons (idle phases, I/O waits, contention, memory growth, how the
 * job was stopped) and the request to make next time in the job's
 * scheduler's syntax.  The job page, `jobscope report` and `jobscope
 * summary` all show this one object. */
#ifndef JOBSCOPE_ASSESS_H
#define JOBSCOPE_ASSESS_H

#include "report/jobdata.h"
#include "report/request.h"

#define ASSESS_MARGIN 0.10 /* head room on memory and wall time */

/* The request that would have fitted this run (docs/views.md): memory =
 * the job's own peak + margin (after running out of memory: 1.5 x what it
 * had), CPUs = what it kept busy plus what waited for a CPU, at most its
 * threads, wall time + margin. */
jd_request assess_next_request(const jobdata *j, double margin);

/* CPUs the job could have kept busy: (CPU time + time its processes waited
 * for a CPU) / wall time, at most its peak threads; NAN when unknown. */
double assess_cores_wanted(const jd_summary *s);

/* {"allocation":{...}, "bars":[{key,label,pct,used,of,text,basis}],
 *  "notes":[{level: bad|warn|info, kind, text}], "next":{request},
 *  "scheduler": "slurm"|"htcondor"|null}; new reference. */
json_t *assess_json(const jobdata *j, double margin);

#endif
