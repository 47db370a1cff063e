/* catalogue.c — the one description of every field of the process-tree
 * sample and of the cgroup source's scalar fields (see metric.h).  The docs
 * are checked against this table by tests/unit/test_model.c: a field added
 * here must be documented in docs/events.md or docs/cgroups.md. */
#include "metric.h"

#include <string.h>

#define S  "kickstart.inv.online"
#define U(n, unit, kind, help)          { n, S, unit, kind, MS_U64, 1, -1, 0, help }
#define SEC(n, kind, flags, help)       { n, S, "seconds", kind, MS_U64, 1e6, 3, flags, help }
#define CGB(n, kind, help)   { n, S, "bytes", kind, MS_U64, 1, -1, 0, help }
#define CGN(n, unit, kind, help)  { n, S, unit, kind, MS_U64, 1, -1, 0, help }
#define CGS(n, help)         { n, S, "seconds", METRIC_COUNTER, MS_U64, 1e6, 6, 0, help }
#define PSI(n, what)         { n "_avg10", S, "percent", METRIC_GAUGE, MS_F64, 1, 2, 0, \
                               "Pressure: percent of the last 10 s " what " stalled (cgroup v2)." }, \
                             { n "_total", S, "seconds", METRIC_COUNTER, MS_U64, 1e6, 6, 0, \
                               "Pressure: seconds " what " stalled in all (cgroup v2)." }


/* Designated for the tree's fields; the cgroup's follow in order from
 * M_TOTAL_PROCESSES (each PSI(...) is two entries). */
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
    /* the cgroup source's fields (docs/cgroups.md), in its order */
    [M_TOTAL_PROCESSES] = CGN("total_processes", "count", METRIC_COUNTER,
        "Processes the job ever started, short-lived ones included (process connector)."),
    CGS("cg_cpu_usage", "CPU seconds of everything that ever ran in the cgroup."),
    CGS("cg_cpu_user", "User CPU seconds of the cgroup."),
    CGS("cg_cpu_system", "System CPU seconds of the cgroup."),
    CGN("cg_cpu_nr_throttled", "periods", METRIC_COUNTER, "CFS periods the cgroup was throttled."),
    CGS("cg_cpu_throttled", "Seconds the cgroup was throttled."),
    CGB("cg_memory_current", METRIC_GAUGE, "Memory charged to the cgroup now."),
    CGB("cg_memory_peak", METRIC_GAUGE, "The cgroup's exact memory peak."),
    CGB("cg_memory_max", METRIC_GAUGE, "The cgroup's memory limit."),
    CGB("cg_memory_anon", METRIC_GAUGE, "Anonymous memory of the cgroup."),
    CGB("cg_memory_file", METRIC_GAUGE, "Page cache of the cgroup (shmem included)."),
    CGB("cg_memory_shmem", METRIC_GAUGE, "Shared memory of the cgroup."),
    CGB("cg_memory_kernel", METRIC_GAUGE, "Kernel memory of the cgroup."),
    CGN("cg_memory_oom", "events", METRIC_COUNTER,
        "Times the cgroup hit its limit and the OOM killer was invoked (v2)."),
    CGN("cg_memory_oom_kill", "processes", METRIC_COUNTER,
        "Processes the OOM killer killed in the cgroup."),
    CGN("cg_memory_max_events", "events", METRIC_COUNTER,
        "Times the cgroup's memory usage hit its limit."),
    CGN("cg_pids_current", "tasks", METRIC_GAUGE, "Tasks (processes and threads) in the cgroup now."),
    CGN("cg_pids_peak", "tasks", METRIC_GAUGE, "Most tasks in the cgroup at once."),
    CGN("cg_pids_max", "tasks", METRIC_GAUGE, "The cgroup's pids limit."),
    CGN("cg_pids_max_events", "forks", METRIC_COUNTER, "Forks the cgroup's pids limit refused."),
    CGB("cg_io_rbytes", METRIC_COUNTER, "Bytes the cgroup read from block devices."),
    CGB("cg_io_wbytes", METRIC_COUNTER, "Bytes the cgroup wrote to block devices."),
    CGN("cg_io_rios", "operations", METRIC_COUNTER, "Block read operations of the cgroup."),
    CGN("cg_io_wios", "operations", METRIC_COUNTER, "Block write operations of the cgroup."),
    PSI("cg_psi_cpu_some", "some task was"), PSI("cg_psi_cpu_full", "all tasks were"),
    PSI("cg_psi_memory_some", "some task was"), PSI("cg_psi_memory_full", "all tasks were"),
    PSI("cg_psi_io_some", "some task was"), PSI("cg_psi_io_full", "all tasks were"),
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
