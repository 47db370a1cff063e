/* catalogue.c — the one description of every field of the process-tree
 * sample (see metric.h).  docs/events.md is checked against this table by
 * tests/unit/test_model.c: a field added here must be documented there. */
#include "metric.h"

#include <string.h>

#define S  "kickstart.inv.online"
#define U(n, unit, kind, help)          { n, S, unit, kind, MS_U64, 1, -1, 0, help }
#define SEC(n, kind, flags, help)       { n, S, "seconds", kind, MS_U64, 1e6, 3, flags, help }

const metric_def metric_catalogue[M_COUNT] = {
    [M_ELAPSED] = { "elapsed", S, "seconds", METRIC_GAUGE, MS_F64, 1, 3, 0,
                    "Seconds since the job started." },
    [M_UTIME] = SEC("utime", METRIC_COUNTER, 0,
                    "User CPU seconds of every process that ever ran in the job's tree."),
    [M_STIME] = SEC("stime", METRIC_COUNTER, 0,
                    "System CPU seconds of every process that ever ran in the job's tree."),
    [M_IOWAIT] = SEC("iowait", METRIC_COUNTER, MF_NULLABLE,
                     "Seconds the tree waited for block I/O (delay accounting; null when off)."),
    [M_BREAD] = U("bread", "bytes", METRIC_COUNTER,
                  "Bytes read from the storage layer (kickstart's name for read_bytes)."),
    [M_BWRITE] = U("bwrite", "bytes", METRIC_COUNTER,
                   "Bytes written to the storage layer (kickstart's name for write_bytes)."),
    [M_RCHAR] = U("rchar", "bytes", METRIC_COUNTER, "Bytes passed to read-like system calls."),
    [M_WCHAR] = U("wchar", "bytes", METRIC_COUNTER, "Bytes passed to write-like system calls."),
    [M_SYSCR] = U("syscr", "calls", METRIC_COUNTER, "Read-like system calls."),
    [M_SYSCW] = U("syscw", "calls", METRIC_COUNTER, "Write-like system calls."),
    [M_READ_BYTES] = U("read_bytes", "bytes", METRIC_COUNTER,
                       "Bytes fetched from the storage layer."),
    [M_WRITE_BYTES] = U("write_bytes", "bytes", METRIC_COUNTER,
                        "Bytes sent to the storage layer."),
    [M_CANCELLED_WRITE_BYTES] = U("cancelled_write_bytes", "bytes", METRIC_COUNTER,
                                  "Dirty page cache truncated before writeback."),
    [M_MINFLT] = U("minflt", "faults", METRIC_COUNTER, "Minor page faults."),
    [M_MAJFLT] = U("majflt", "faults", METRIC_COUNTER, "Major page faults."),
    [M_NVCSW] = U("nvcsw", "switches", METRIC_COUNTER, "Voluntary context switches."),
    [M_NIVCSW] = U("nivcsw", "switches", METRIC_COUNTER, "Involuntary context switches."),
    [M_VM] = U("vm", "kB", METRIC_GAUGE, "Virtual memory of the live processes."),
    [M_RSS] = U("rss", "kB", METRIC_GAUGE, "Resident memory of the live processes."),
    [M_SWAP] = U("swap", "kB", METRIC_GAUGE, "Swapped-out memory of the live processes."),
    [M_PROCS] = U("procs", "count", METRIC_GAUGE, "Live processes in the tree."),
    [M_THREADS] = U("threads", "count", METRIC_GAUGE, "Threads of the live processes."),
    [M_CPU_PERCENT] = { "cpu_percent", S, "percent", METRIC_GAUGE, MS_F64, 1, 2, 0,
                        "CPU since the previous sample, 100 = one core." },
    [M_MAX_HWM] = U("max_hwm", "kB", METRIC_GAUGE,
                    "Largest per-process memory high-water mark so far."),
    [M_TOTAL_PROCS] = U("total_procs", "count", METRIC_COUNTER,
                        "Processes known to have been in the tree."),
    [M_BSEND] = U("bsend", "bytes", METRIC_COUNTER, "Always 0 (kickstart compatibility)."),
    [M_BRECV] = U("brecv", "bytes", METRIC_COUNTER, "Always 0 (kickstart compatibility)."),
    [M_ROOT_START] = { "start", S, "seconds", METRIC_GAUGE, MS_F64, 1, 6, MF_HIDDEN,
                       "Epoch seconds the job's main process started." },
    [M_PEAK_CPU_PERCENT] = { "peak_cpu_percent", S, "percent", METRIC_GAUGE, MS_F64, 1, 2,
                             MF_HIDDEN, "Largest cpu_percent so far." },
    [M_PEAK_RSS] = { "peak_rss", S, "kB", METRIC_GAUGE, MS_F64, 1, 0, MF_HIDDEN,
                     "Largest rss so far." },
};

const char *metric_kind_name(enum metric_kind k)
{
    return k == METRIC_COUNTER ? "counter" : "gauge";
}

const metric_def *metric_lookup(const char *name)
{
    if (!name) return NULL;
    size_t n = strlen(S);
    if (!strncmp(name, S, n) && (name[n] == '.' || name[n] == '_')) name += n + 1;
    for (int i = 0; i < M_COUNT; i++)
        if (!strcmp(metric_catalogue[i].name, name)) return &metric_catalogue[i];
    return NULL;
}
