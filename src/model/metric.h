/* metric.h — the metric model: every number jobscope measures, described
 * once, and the value set every event is made of.
 *
 * The catalogue (catalogue.c) describes each numeric field of the samples:
 * the process tree's, the cgroup source's (scalars and the per-device
 * cg_io rows), the GPU source's (gpu_mem/gpu_util in the process sample,
 * and the kickstart.inv.online.gpu.stats event of each device) and the
 * allocation of the start event: its name in the events, the event that
 * carries it, unit, counter or gauge, how many decimals the text encodings
 * print, and a help line (Prometheus' HELP/TYPE, the server's API and the
 * docs come from it).
 *
 * Every event is an `mset`: its catalogue values (by metric id), labels,
 * rows of per-device groups and its other members (strings, objects,
 * arrays, numbers the catalogue does not describe), in the order the event
 * has them.  Producers (the tree, the sources) fill sets and write no text;
 * every encoder walks them: the JSON writer (mset_write_json, with the
 * frame of event/event.h), CSV (mset_write_cell), JoReMon
 * (sink/formats/joremon.c), Influx, OpenTSDB and remote write
 * (sink/formats/tsconv_set.c).  A new field is one catalogue line plus the
 * line of the source that sets it.
 *
 * Layer: depends on util and the JSON writer only; never on a source, the
 * monitor or an output (see docs/hacking.md). */
#ifndef JOBSCOPE_METRIC_H
#define JOBSCOPE_METRIC_H

#include <stddef.h>
#include <stdint.h>
#include "../event/json.h"
#include "../util/arena.h"

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

/* ---- an event: its values and its other members, in order ------------ */

typedef struct mvalue {
    uint64_t u;        /* MS_U64 */
    double d;          /* MS_F64 */
    uint8_t set, null; /* null: known to be unknown (MF_NULLABLE) */
    uint8_t missing;   /* not measured, written 0 in JSON (kickstart's
                        * convention) but an empty CSV cell */
} mvalue;

/* A member of an event, in the order it is written.  MI_VALUE and
 * MI_GROUP name a catalogue field (its name, decimals and null rule come
 * from the catalogue); the others carry their own key and value: the
 * strings and labels of an event, and what the catalogue does not describe
 * (the start event's host facts, the end record's objects, a GPU's process
 * lists, a custom metric's tags). */
enum mitem_kind {
    MI_VALUE, /* v[id] */
    MI_GROUP, /* the rows of the group whose first field is id */
    MI_STR,   /* s (NULL: null); hidden: MLABEL_HIDDEN */
    MI_I64,
    MI_U64,
    MI_FIXED, /* d with `decimals` decimals (NaN, inf: null) */
    MI_NUM,   /* d, the shortest text that reads back the same */
    MI_BOOL,  /* i */
    MI_NULL,
    MI_OBJ, /* an object opens (key NULL: an array's element) */
    MI_ARR, /* an array opens */
    MI_END, /* the innermost object or array closes */
    MI_RAW, /* members already encoded as JSON, written as they are (s, n bytes):
             * the fields of a payload block, the job's own JSON */
};

/* `hidden` of a string: MLABEL_SHOWN, written; MLABEL_HIDDEN, carried for
 * the encoders that want it (JoReMon's cmd, cwd, user), not written. */
enum { MLABEL_SHOWN = 0, MLABEL_HIDDEN = 1, MSTR_LEN = 2 };

typedef struct mitem {
    const char *key; /* NULL: an array's element */
    union {
        const char *s;
        int64_t i;
        uint64_t u;
        double d;
    };
    uint32_t n;  /* MI_RAW, MI_STR with MSTR_LEN: the length of s */
    uint16_t id; /* MI_VALUE, MI_GROUP */
    uint8_t kind;
    uint8_t aux; /* MI_FIXED: decimals; MI_STR: hidden */
} mitem;

#define MSET_MAX_ROWS   16 /* rows of groups (cg_io: CG_MAX_IO_DEVS) */
#define MROW_MAX_VALUES 4  /* fields of a group */

/* One row of a group: its label and the values of the group's fields,
 * by (id - first). */
typedef struct mrow {
    metric_id first; /* the group's first field */
    char label[32];
    mvalue v[MROW_MAX_VALUES];
} mrow;

/* How the event's frame is written around the members: "event", "ts",
 * then the job's annotations (all of them; without their "tags" object,
 * for an event that writes one "tags" of its own with them in it: a custom
 * metric; none at all: a payload event in Panorama's shape), then the
 * members, then "seq". */
enum { MSET_ANNOTATED = 0, MSET_UNTAGGED = 1, MSET_BARE = 2 };

/* An event in the metric model: what every producer fills and every encoder
 * walks.  Values of the catalogue are also kept by id (v), so that an
 * encoder of fixed columns (CSV, JoReMon, kickstart's wire) reads them
 * directly.  Zero-initialise it (or mset_init), then mset_clear for each
 * event; mset_free at the end.  Steady state allocates nothing. */
typedef struct mset {
    const char *event;        /* its name (EV_SAMPLE, ...), also the AMQP routing key */
    double ts;                /* epoch seconds */
    int frame;                /* MSET_ANNOTATED, MSET_UNTAGGED, MSET_BARE */
    mvalue v[M_COUNT];        /* by metric id */
    mrow rows[MSET_MAX_ROWS]; /* in the order they were added */
    int nrows;
    mitem *items; /* the members, in order */
    int nitems, cap;
    int depth;         /* objects and arrays open */
    uint32_t open_arr; /* bit d: the one open at depth d is an array */
    int oom;           /* an allocation failed: the event is incomplete */
    arena text;        /* mset_copy's copies (blocks that never move) */
} mset;

void mset_init(mset *s);
void mset_free(mset *s);
/* Starts a new event: no members, frame MSET_ANNOTATED. */
void mset_clear(mset *s, const char *event, double ts);

/* Catalogue values: set where it is first set (a second call changes the
 * value, not its place). */
void mset_u64(mset *s, metric_id id, uint64_t v);
void mset_f64(mset *s, metric_id id, double v);
void mset_null(mset *s, metric_id id);
void mset_missing(mset *s, metric_id id); /* not measured: 0 in JSON, empty in CSV */
/* The values of [from, to] that src holds, in id order (the end record's
 * counters are the final sample's). */
void mset_copy_range(mset *s, const mset *src, metric_id from, metric_id to);
/* Where the rows of the group whose first field is `first` are written
 * (an empty array without rows); rows are added with mset_row. */
void mset_group(mset *s, metric_id first);
/* Adds a row to the group whose first field is `first` (M_CG_IO_DEV_RBYTES);
 * NULL when the set has no room left (the row is then not written). */
mrow *mset_row(mset *s, metric_id first, const char *label);
void mrow_u64(mrow *r, metric_id id, uint64_t v);

/* Labels: a top-level string or integer naming what is measured (pid,
 * exe, a GPU's uuid); a second call with the same key changes its value.
 * hidden: MLABEL_*. */
void mset_label_num(mset *s, const char *key, long long v);
void mset_label_str(mset *s, const char *key, const char *v, int hidden);
/* The top-level string (NULL if absent or null) / integer (0 if absent). */
const char *mset_label(const mset *s, const char *key);
long long mset_label_num_get(const mset *s, const char *key);

/* Other members, appended where the event has them.  Strings and keys are
 * not copied: they must live until the event is sent (mset_copy makes a
 * copy that lives as long as the event). */
void mset_put_str(mset *s, const char *key, const char *v); /* v NULL: null */
/* The n bytes at v (any bytes, NUL included), copied. */
void mset_put_strn(mset *s, const char *key, const char *v, size_t n);
void mset_put_i64(mset *s, const char *key, int64_t v);
void mset_put_u64(mset *s, const char *key, uint64_t v);
void mset_put_fixed(mset *s, const char *key, double v, int decimals);
void mset_put_num(mset *s, const char *key, double v);
void mset_put_bool(mset *s, const char *key, int v);
void mset_put_null(mset *s, const char *key);
void mset_open_obj(mset *s, const char *key);
void mset_open_arr(mset *s, const char *key);
void mset_close(mset *s);
/* Members already encoded as JSON ("k":v,...), written as they are. */
void mset_put_raw(mset *s, const char *json, size_t n);
/* A NUL-terminated copy of p[0..n) that lives until the next mset_clear
 * (a key or string made on the spot); NULL when out of memory. */
const char *mset_copy(mset *s, const char *p, size_t n);

/* The value as a double (raw: no divisor); 0 when unset or null. */
double mset_get(const mset *s, metric_id id);
/* The value in its unit (MS_U64 divided by the divisor). */
double mset_value(const mset *s, metric_id id);
uint64_t mset_raw(const mset *s, metric_id id);
int mset_has(const mset *s, metric_id id); /* set and not null */

/* ---- the encodings the model itself writes --------------------------- */

/* Appends the event's members as JSON ("k":v,... with the catalogue's
 * names and decimals for its values): the one JSON writer of events
 * (event/event.h adds the frame). */
void mset_write_json(jbuf *b, const mset *s);
/* Appends one value as text (CSV cell); nothing for null, missing or unset. */
void mset_write_cell(jbuf *b, const mset *s, metric_id id);
/* The text mset_write_json writes for a number, into t (>= 64 bytes):
 * its length, 0 when it writes null, -1 when the item is no number. */
int mset_number_text(const mset *s, const mitem *it, char *t);

#endif
