/* request.h — a job's resource request in the syntaxes users paste: an
 * HTCondor submit file, Slurm's sbatch options, Pegasus profiles.  `stats`
 * writes its advice with it, the job assessment (assess.c) its next-time
 * request. */
#ifndef JOBSCOPE_REQUEST_H
#define JOBSCOPE_REQUEST_H

#include <stddef.h>
#include <jansson.h>

typedef struct jd_request {
    double mem;     /* bytes, rounded up to a whole MiB */
    double cores;   /* whole CPUs, >= 1 */
    double wall;    /* seconds, rounded up to a whole minute */
    double gpus;    /* 0: none */
    double gpu_mem; /* bytes, NAN: no GPU memory request */
    double tasks;   /* tasks per node, each of `cores` CPUs (a job of several tasks); 0: one */
} jd_request;

/* A request from figures: memory and wall time with a margin (0.10 = 10%),
 * cores as given (already whole), GPUs rounded up. */
jd_request jd_request_make(double mem, double cores, double wall, double gpus, double gpu_mem,
                           double margin);

/* "request_memory = 341M\nrequest_cpus = 1\n..." (one setting a line). */
void jd_request_htcondor(const jd_request *r, char *buf, size_t len);
/* "--mem=341M --cpus-per-task=1 --time=00:02:00 --gres=gpu:1" (with
 * "--ntasks-per-node=N" before --cpus-per-task for several tasks) */
void jd_request_slurm(const jd_request *r, char *buf, size_t len);
/* "profile pegasus \"memory\" \"341\"\n..." */
void jd_request_pegasus(const jd_request *r, char *buf, size_t len);
/* {"memory_bytes", "cores", "wall_seconds", "gpus", "gpu_memory_bytes",
 * "htcondor", "slurm", "pegasus"}; new reference. */
json_t *jd_request_json(const jd_request *r);
/* "1.5 GiB", "12 MiB", "-" for NAN */
void jd_fmt_bytes(double v, char *buf, size_t len);
/* "01:02:03" (hours may exceed 24) */
void jd_fmt_hms(double s, char *buf, size_t len);

#endif
