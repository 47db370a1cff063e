/* outpath.h — per-process output names: `-o events-%r.jsonl` (docs/mpi.md).
 *
 * In a file destination (a plain path or file://PATH) %r becomes the MPI
 * rank, %h the host name, %j the job id, %p jobscope's pid and %% a '%'.
 * Network URLs are returned unchanged: their %XX are percent-encoding. */
#ifndef JOBSCOPE_OUTPATH_H
#define JOBSCOPE_OUTPATH_H

#include <sys/types.h>

/* A new string (NULL when out of memory). */
char *outpath_expand(const char *dest, long rank, const char *host, const char *job, pid_t pid);

/* Where events go when no destination was given: "JOB_ID.jsonl" in the
 * working directory, with '/', ' ' and control characters as '_' and no
 * leading dot.  A new string (NULL when out of memory). */
char *outpath_default(const char *job_id);

#endif
