/* metric.h — the metric model: every number jobscope measures, described
 * once, and the set of values one sample carries.
 *
 * The catalogue (catalogue.c) describes each numeric field of the samples:
 * the process tree's, the cgroup source's (scalars and the per-device
 * cg_io rows) and the GPU source's (gpu_mem/gpu_util in the process sample,
 * and the kickstart.inv.online.gpu.stats event of each device): its name in
 * the events, the event that carries it, unit, counter or gauge, how many
 * decimals the text encodings print, and a help line (Prometheus' HELP/TYPE,
 * the server's API and the docs come from it).  A source fills an `mset`
 * (metric id, value; labels beside; rows for per-device groups), and every
 * encoder walks that set: the JSON Lines writer (mset_write_json, _range,
 * _group), CSV (mset_write_cell), JoReMon (sink/formats/joremon.c), the
 * Influx and OpenTSDB encoders (sink/formats/tsconv.c, tsconv_*_set).  A new
 * field is one catalogue line plus the line of the source that sets it.
 *
 * Layer: depends on util and the JSON writer only; never on a source, the
 * monitor or an output (see docs/hacking.md). */
#ifndef JOBSCOPE_METRIC_H
#define JOBSCOPE_METRIC_H

#include <stddef.h>
#include <stdint.h>
#include "../event/json.h"

/* The fields of kickstart.inv.online, in the order of the JSON event. */
typedef enum metric_id {
    M_ELAPSED,
    M_UTIME,
    M_STIME,
    M_IOWAIT,
    M_BREAD,
    M_BWRITE,
    M_RCHAR,
    M_WCHAR,
    M_SYSCR,
    M_SYSCW,
    M_READ_BYTES,
    M_WRITE_BYTES,
    M_CANCELLED_WRITE_BYTES,
    M_MINFLT,
    M_MAJFLT,
    M_NVCSW,
    M_NIVCSW,
    M_VM,
    M_RSS,
    M_SWAP,
    M_PROCS,
    M_THREADS,
    M_ZOMBIES,
    M_CPU_PERCENT,
    M_MAX_HWM,
    M_TOTAL_PROCS,
    M_BSEND,
    M_BRECV,
    /* carried by the sample but not written in its JSON event: for the
     * encoders that need them (JoReMon) */
    M_ROOT_START,
    M_PEAK_CPU_PERCENT,
    M_PEAK_RSS,
    /* the cgroup source's fields (cgroup/cgroup_source.c), in the order it
     * writes them; it writes them itself, between its non-scalar parts */
    M_TOTAL_PROCESSES,
    M_CG_CPU_USAGE,
    M_CG_CPU_USER,
    M_CG_CPU_SYSTEM,
    M_CG_CPU_NR_THROTTLED,
    M_CG_CPU_THROTTLED,
    M_CG_MEMORY_CURRENT,
    M_CG_MEMORY_PEAK,
    M_CG_MEMORY_MAX,
    M_CG_MEMORY_ANON,
    M_CG_MEMORY_FILE,
    M_CG_MEMORY_SHMEM,
    M_CG_MEMORY_KERNEL,
    M_CG_MEMORY_OOM,
    M_CG_MEMORY_OOM_KILL,
    M_CG_MEMORY_MAX_EVENTS,
    M_CG_PIDS_CURRENT,
    M_CG_PIDS_PEAK,
    M_CG_PIDS_MAX,
    M_CG_PIDS_MAX_EVENTS,
    M_CG_IO_RBYTES,
    M_CG_IO_WBYTES,
    M_CG_IO_RIOS,
    M_CG_IO_WIOS,
    /* pressure, two per cgroup/cgroup.h CG_PSI_* in that order: avg10, total */
    M_CG_PSI_CPU_SOME_AVG10,
    M_CG_PSI_CPU_SOME_TOTAL,
    M_CG_PSI_CPU_FULL_AVG10,
    M_CG_PSI_CPU_FULL_TOTAL,
    M_CG_PSI_MEMORY_SOME_AVG10,
    M_CG_PSI_MEMORY_SOME_TOTAL,
    M_CG_PSI_MEMORY_FULL_AVG10,
    M_CG_PSI_MEMORY_FULL_TOTAL,
    M_CG_PSI_IO_SOME_AVG10,
    M_CG_PSI_IO_SOME_TOTAL,
    M_CG_PSI_IO_FULL_AVG10,
    M_CG_PSI_IO_FULL_TOTAL,
    /* the cgroup's per-device I/O: rows of the "cg_io" group, one per device
     * (label "dev"), in the order of their members */
    M_CG_IO_DEV_RBYTES,
    M_CG_IO_DEV_WBYTES,
    M_CG_IO_DEV_RIOS,
    M_CG_IO_DEV_WIOS,
    /* the GPU source's share of the job, in the process sample */
    M_GPU_MEM,
    M_GPU_UTIL,
    /* kickstart.inv.online.gpu.stats, one event per device (labels: the
     * device), in the order of the event; the source writes them itself,
     * between its non-scalar parts (process lists) */
    M_GPU_SAMPLING_DURATION,
    M_GPU_TEMP,
    M_GPU_POWER_USAGE,
    M_GPU_MEM_USAGE,
    M_GPU_BAR1_MEM_USAGE,
    M_GPU_GPU_UTILIZATION,
    M_GPU_MEM_UTILIZATION,
    M_GPU_GPU_CLOCK,
    M_GPU_SM_CLOCK,
    M_GPU_MEM_CLOCK,
    M_GPU_VIDEO_CLOCK,
    M_GPU_PCIE_TX,
    M_GPU_PCIE_RX,
    M_GPU_OTHER_PROCS,
    M_GPU_JOB_PROCS,
    M_GPU_JOB_MEM_USAGE,
    M_GPU_JOB_SM_UTIL,
    M_GPU_JOB_MEM_UTIL,
    M_GPU_JOB_ENC_UTIL,
    M_GPU_JOB_DEC_UTIL,
    /* jobscope.start: the job's allocation (src/proc/alloc.c), each with an
     * `_from` string beside it in the event */
    M_ALLOC_CPUS,
    M_ALLOC_MEM,
    M_ALLOC_GPUS,
    M_COUNT
} metric_id;

enum metric_kind { METRIC_GAUGE, METRIC_COUNTER };

/* How a value is held: an exact integer (scaled by `divisor` when printed
 * with decimals: microseconds -> seconds) or a double. */
enum metric_store { MS_U64, MS_F64 };

enum metric_flags {
    MF_NULLABLE = 1, /* may be unknown: null in JSON, an empty CSV cell */
    MF_HIDDEN = 2,   /* not written in the JSON event */
};

typedef struct metric_def {
    const char *name;  /* field name in the event */
    const char *event; /* the event that carries it */
    const char *unit;  /* "seconds", "bytes", "kB", "percent", "count", ... */
    enum metric_kind kind;
    enum metric_store store;
    double divisor; /* MS_U64 printed with decimals: value / divisor */
    int decimals;   /* -1: an integer */
    unsigned flags;
    const char *help;
    /* A field of a group of rows (an array of objects in the event, one per
     * instance): the array's name ("cg_io") and the label naming the row
     * ("dev"); NULL for a field of the event itself.  Its series name is
     * GROUP.NAME ("cg_io.rbytes"). */
    const char *group;
    const char *row_label;
} metric_def;

extern const metric_def metric_catalogue[M_COUNT];

/* The definition of a field, by name ("rss", "cg_io.rbytes") or by series
 * name, its event's name and the field's joined by '.' or '_'
 * ("kickstart.inv.online.rss", "kickstart.inv.online_rss",
 * "kickstart.inv.online.gpu.stats.temp"); NULL if unknown.  For the server:
 * Prometheus HELP/TYPE, units in the API. */
const metric_def *metric_lookup(const char *name);
/* "counter" or "gauge" (Prometheus TYPE). */
const char *metric_kind_name(enum metric_kind k);

/* ---- a sample: values and labels ------------------------------------- */

typedef struct mvalue {
    uint64_t u;        /* MS_U64 */
    double d;          /* MS_F64 */
    uint8_t set, null; /* null: known to be unknown (MF_NULLABLE) */
    uint8_t missing;   /* not measured, written 0 in JSON (kickstart's
                        * convention) but an empty CSV cell */
} mvalue;

/* A label: a string (NULL: JSON null) or an integer.  `hidden`: 0, written
 * first in the JSON event (mset_write_labels); MLABEL_HIDDEN, not written
 * (cmd, cwd, user: JoReMon's); MLABEL_AFTER, written by its source itself
 * after the values (gpu.stats' job_util_source), so that the time-series
 * encoders (sink/formats/tsconv.c) know it is there and where. */
enum { MLABEL_SHOWN = 0, MLABEL_HIDDEN = 1, MLABEL_AFTER = 2 };
typedef struct mlabel {
    const char *key;
    const char *str;
    long long num;
    uint8_t is_num, hidden;
} mlabel;

#define MSET_MAX_LABELS 10 /* gpu.stats has up to 8 (7 + job_util_source) */
#define MSET_MAX_ROWS   16 /* rows of groups (cg_io: CG_MAX_IO_DEVS) */
#define MROW_MAX_VALUES 4  /* fields of a group */

/* One row of a group: its label and the values of the group's fields,
 * by (id - first). */
typedef struct mrow {
    metric_id first; /* the group's first field */
    char label[32];
    mvalue v[MROW_MAX_VALUES];
} mrow;

typedef struct mset {
    double ts;                      /* epoch seconds */
    mlabel labels[MSET_MAX_LABELS]; /* written first, in order */
    int nlabels;
    mvalue v[M_COUNT];        /* by metric id */
    mrow rows[MSET_MAX_ROWS]; /* in the order they were added */
    int nrows;
} mset;

void mset_clear(mset *s, double ts);
void mset_u64(mset *s, metric_id id, uint64_t v);
void mset_f64(mset *s, metric_id id, double v);
void mset_null(mset *s, metric_id id);
void mset_missing(mset *s, metric_id id); /* not measured: 0 in JSON, empty in CSV */
void mset_label_num(mset *s, const char *key, long long v);
void mset_label_str(mset *s, const char *key, const char *v, int hidden); /* MLABEL_* */
/* The label's string (NULL if absent or null) / number (0 if absent). */
const char *mset_label(const mset *s, const char *key);
long long mset_label_num_get(const mset *s, const char *key);

/* Adds a row to the group whose first field is `first` (M_CG_IO_DEV_RBYTES);
 * NULL when the set has no room left (the row is then not written). */
mrow *mset_row(mset *s, metric_id first, const char *label);
void mrow_u64(mrow *r, metric_id id, uint64_t v);

/* The value as a double (raw: no divisor); 0 when unset or null. */
double mset_get(const mset *s, metric_id id);
/* The value in its unit (MS_U64 divided by the divisor). */
double mset_value(const mset *s, metric_id id);
uint64_t mset_raw(const mset *s, metric_id id);
int mset_has(const mset *s, metric_id id); /* set and not null */

/* Appends the visible labels then every set, visible value, in catalogue
 * order, as JSON members with the catalogue's decimals.  The monitor calls
 * it for the tree's fields before the sources' sample hooks run; a source
 * writes its own fields with mset_write_json_range where they belong
 * among its non-scalar parts (cgroup: cg_io). */
void mset_write_json(jbuf *b, const mset *s);
/* Appends the members for ids [from, to] only (the end record's counters). */
void mset_write_json_range(jbuf *b, const mset *s, metric_id from, metric_id to);
/* Appends the visible labels only (an event whose fields are written in
 * ranges between its other parts: gpu.stats). */
void mset_write_labels(jbuf *b, const mset *s);
/* Appends the group whose first field is `first` as "GROUP":[{LABEL:..,
 * fields..}, ...], every row (none: an empty array). */
void mset_write_json_group(jbuf *b, const mset *s, metric_id first);
/* Appends one value as text (CSV cell); nothing for null, missing or unset. */
void mset_write_cell(jbuf *b, const mset *s, metric_id id);

#endif
