/* jobdata.h — one monitored job read back from its events (docs/views.md).
 *
 * `jobscope report`, `jobscope stats` and the events repository of
 * `jobscope serve` all look at a job the same way: its characteristics (the
 * end-of-job record, or what the samples say when there is none), its time
 * series (the process-tree samples with I/O rates computed from the
 * cumulative counters, GPU, every custom metric), the other events it
 * produced (limits, payloads, stampede...) and warnings.  This module turns
 * JSON events (jobscope's own, pegasus-kickstart's online traces, JoReMon's
 * JSON Lines or CSV rows) into that, one event at a time, so a caller can
 * feed it from a file or from a database.
 *
 * Units in jobdata: seconds, bytes (memory too: the events' kB are converted),
 * percent (100 = one core / one GPU). */
#ifndef JOBSCOPE_JOBDATA_H
#define JOBSCOPE_JOBDATA_H

#include <stddef.h>
#include <jansson.h>

/* Columns of the process-tree series; NAN where a sample has no value. */
enum jd_col {
    JD_TS,
    JD_ELAPSED,
    JD_CPU,
    JD_RSS,
    JD_VM,
    JD_SWAP,
    JD_RCHAR,
    JD_WCHAR,
    JD_RBYTES,
    JD_WBYTES, /* cumulative bytes */
    JD_RCHAR_RATE,
    JD_WCHAR_RATE,
    JD_RBYTES_RATE,
    JD_WBYTES_RATE, /* bytes/s */
    JD_IOWAIT_FRAC, /* iowait s per s */
    JD_PROCS,
    JD_THREADS,
    JD_GPU_MEM,
    JD_GPU_UTIL,
    JD_CG_MEM,
    JD_CPUTIME,
    JD_IOWAIT, /* cumulative seconds */
    JD_NCOL
};
extern const char *const jobdata_col_names[JD_NCOL];  /* JSON keys */
extern const char *const jobdata_col_titles[JD_NCOL]; /* for people */

/* Another series: a custom metric (jobscope.metric) or a GPU device's. */
typedef struct jd_series {
    char *name; /* "loss", "loss{phase=train}", "gpu0 util %"... */
    char *unit; /* "", "%", "bytes" */
    double *ts, *val;
    size_t n, cap;
} jd_series;

/* What stats and the jobs list need of a job; NAN where unknown. */
typedef struct jd_summary {
    char job_id[256], exe[512], cmd[1024], host[256], wf[128], wf_label[256];
    char xformation[256], type[32], user[64], site[128];
    char exit_type[16], signal_name[16];
    char batch_system[16], batch_id[128]; /* the event's "batch" annotation */
    /* how the job ended when not on its own: "signal", "limit" (a --limit:
     * stop_limit names it), "oom_kill"; "" otherwise */
    char stopped_by[16], stop_limit[32];
    int exit_code; /* -1 when signaled or unknown */
    int has_end;   /* a jobscope.end (or JoReMon's last row) was seen */
    double start, end, duration, cpu_time, cpu_eff, cores;
    /* bytes: the job's own peak, without page cache (tree RSS, process
     * high-water marks, the cgroup's anon + shmem); cg_peak_mem the
     * cgroup's figure, which also counts reclaimable page cache */
    double peak_mem, cg_peak_mem;
    double rchar, wchar, read_bytes, write_bytes;
    double gpu_devices, gpu_peak_mem, gpu_util_mean, gpu_util_peak;
    /* the allocation the job is measured against (cores = alloc CPUs) and
     * where each figure came from (docs/views.md "Allocation") */
    char cores_from[64], alloc_mem_from[64], alloc_gpus_from[64];
    double alloc_mem, alloc_gpus;
    /* current requests, when recorded (a batch system's allocation, tags
     * request_*, --limit): what stats' waste is computed against */
    double req_mem, req_cpus, req_wall, req_gpus;
    double threads_peak; /* most threads at once */
    double cpu_wait;     /* seconds some process of the job waited for a CPU (PSI) */
    size_t samples;
    /* a whole job of several runs (jobset.h): its nodes, the most tasks a
     * step ran on one node, the largest node's memory peak (what --mem
     * asks for) and the CPUs one task could have kept busy; NAN for a run */
    double nodes, tasks_per_node, node_peak_mem, want_cores;
    /* a whole job: the run the OOM killer stopped ("" none) — the job's
     * state is its batch script's, as Slurm's, its memory advice not */
    char oom_run[200];
} jd_summary;

typedef struct jobdata {
    jd_summary sum;
    json_t *start_ev, *end_ev; /* jobscope.start / jobscope.end (owned), or NULL */
    json_t *tags;              /* the job's tags object (owned), or NULL */
    json_t *events;            /* array of other events (limits, payloads...), at most 2000 */
    size_t events_dropped;
    double *col[JD_NCOL];
    size_t n, cap;
    jd_series *extra;
    size_t nextra, capextra;
    int format; /* 0 jobscope/kickstart, 1 JoReMon */
    /* JoReMon rows are merged by timestamp into one sample */
    double jr_ts;
    /* the executable as the start event, the last sample and the end record
     * name it: the job's is the latest (a shim execs the real program) */
    char exe_start[512], exe_last[512];
    double cg_peak, cg_own_peak, psi_first, psi_last; /* from the samples */
} jobdata;

void jobdata_init(jobdata *j);
void jobdata_free(jobdata *j);

/* Feeds one event.  Returns 0, or -1 when it is not an object. */
int jobdata_add(jobdata *j, json_t *ev);

/* Reads a whole file (JSON Lines or JoReMon CSV; "-" = stdin) into j, which
 * must be initialised.  -1 and a one-line reason in err when it cannot be read
 * or holds no event at all.  Lines that are not JSON are counted in *bad. */
int jobdata_load(jobdata *j, const char *path, size_t *bad, char *err, size_t errlen);

/* After the last event: computes rates and the summary where no end-of-job
 * record gave it.  Idempotent. */
void jobdata_finish(jobdata *j);

/* Warnings (docs/views.md "Warnings"): a JSON array of
 * {"kind":..., "message":..., "from":ts, "to":ts}. New reference. */
json_t *jobdata_warnings(const jobdata *j);

/* Phases of the job, runs of at least 3 intervals and min(5% of the job,
 * 10 s): I/O-bound (waiting on I/O, or moving >= 1 MiB/s to or from storage
 * at less than half the allocated CPUs) and idle (less than 5% of a CPU,
 * no I/O).  Returns how many there are; the first max go to out, their
 * total length to *total. */
typedef struct jd_phase {
    double from, to;
} jd_phase;
size_t jobdata_io_phases(const jobdata *j, jd_phase *out, size_t max, double *total);
size_t jobdata_idle_phases(const jobdata *j, jd_phase *out, size_t max, double *total);

/* The summary as a JSON object (new reference), and back (the fields it
 * writes; others as jobdata_init leaves them). */
json_t *jobdata_summary_json(const jd_summary *s);
void jobdata_summary_read(const json_t *o, jd_summary *s);

/* Everything a page needs: {"summary", "start", "end", "tags", "series":
 * {"ts":[...], "cpu_percent":[...]...}, "extra":[{name,unit,ts,val}],
 * "events", "warnings"}.  Series are thinned to at most max_points (0 = all)
 * keeping each bucket's extremes.  New reference. */
json_t *jobdata_json(const jobdata *j, size_t max_points);

/* The number at key (NAN if absent or not a number), o[a][b], the string
 * at key (NULL unless a non-empty string). */
double jd_num(const json_t *o, const char *key);
double jd_numpath(const json_t *o, const char *a, const char *b);
const char *jd_str(const json_t *o, const char *key);

/* jansson's null (json_null(), a singleton). */
json_t *jd_null(void);

/* Linear-interpolation percentile of sorted v[0..n-1], p in [0,1] (the
 * "inclusive" method: numpy's default, Python's statistics.quantiles
 * method='inclusive'). NAN when n == 0. */
double jd_percentile(const double *sorted, size_t n, double p);

/* "4G", "4096M", "4096" (MiB, as HTCondor's request_memory) -> bytes; NAN if bad. */
double jd_parse_size_mib(const char *s);
/* "2h", "1h30m", "01:30:00", "90" (seconds) -> seconds; NAN if bad. */
double jd_parse_duration(const char *s);

#endif
