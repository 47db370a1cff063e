/* catalogue.c — the one description of every numeric field of the samples:
 * the process tree's, the cgroup source's (scalars and per-device cg_io
 * rows), the GPU source's, and the allocation in the start event (see
 * metric.h).  The docs are checked against
 * this table by tests/unit/test_model.c: a field added here must be
 * documented in docs/events.md, docs/cgroups.md or docs/gpu.md. */
#include "metric.h"

#include <string.h>

#define S "kickstart.inv.online"
#define G "kickstart.inv.online.gpu.stats"
#define U(n, unit, kind, help)                                                                     \
    {                                                                                              \
        n, S, unit, kind, MS_U64, 1, -1, 0, help, NULL, NULL                                       \
    }
#define SEC(n, kind, flags, help)                                                                  \
    {                                                                                              \
        n, S, "seconds", kind, MS_U64, 1e6, 3, flags, help, NULL, NULL                             \
    }
#define CGB(n, kind, help)                                                                         \
    {                                                                                              \
        n, S, "bytes", kind, MS_U64, 1, -1, 0, help, NULL, NULL                                    \
    }
#define CGN(n, unit, kind, help)                                                                   \
    {                                                                                              \
        n, S, unit, kind, MS_U64, 1, -1, 0, help, NULL, NULL                                       \
    }
#define CGS(n, help)                                                                               \
    {                                                                                              \
        n, S, "seconds", METRIC_COUNTER, MS_U64, 1e6, 6, 0, help, NULL, NULL                       \
    }
#define PSI(n, what)                                                                               \
    {n "_avg10",                                                                                   \
     S,                                                                                            \
     "percent",                                                                                    \
     METRIC_GAUGE,                                                                                 \
     MS_F64,                                                                                       \
     1,                                                                                            \
     2,                                                                                            \
     0,                                                                                            \
     "Pressure: percent of the last 10 s " what " stalled (cgroup v2).",                           \
     NULL,                                                                                         \
     NULL},                                                                                        \
    {                                                                                              \
        n "_total", S, "seconds", METRIC_COUNTER, MS_U64, 1e6, 6, 0,                               \
            "Pressure: seconds " what " stalled in all (cgroup v2).", NULL, NULL                   \
    }
#define CGIO(n, unit, help)                                                                        \
    {                                                                                              \
        n, S, unit, METRIC_COUNTER, MS_U64, 1, -1, 0, help, "cg_io", "dev"                         \
    }
#define GU(n, unit, help)                                                                          \
    {                                                                                              \
        n, G, unit, METRIC_GAUGE, MS_U64, 1, -1, 0, help, NULL, NULL                               \
    }
#define GPCT(n, help)                                                                              \
    {                                                                                              \
        n, G, "percent", METRIC_GAUGE, MS_F64, 1, 1, MF_NULLABLE, help, NULL, NULL                 \
    }

/* Designated for the tree's fields; the cgroup's follow in order from
 * M_TOTAL_PROCESSES (each PSI(...) is two entries). */
const metric_def metric_catalogue[M_COUNT] = {
    [M_ELAPSED] = {"elapsed", S, "seconds", METRIC_GAUGE, MS_F64, 1, 3, 0,
                   "Seconds since the job started.", NULL, NULL},
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
    [M_READ_BYTES] =
        U("read_bytes", "bytes", METRIC_COUNTER, "Bytes fetched from the storage layer."),
    [M_WRITE_BYTES] = U("write_bytes", "bytes", METRIC_COUNTER, "Bytes sent to the storage layer."),
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
    [M_ZOMBIES] = U("zombies", "count", METRIC_GAUGE,
                    "Processes of the tree that exited and are not reaped yet."),
    [M_CPU_PERCENT] = {"cpu_percent", S, "percent", METRIC_GAUGE, MS_F64, 1, 2, 0,
                       "CPU since the previous sample, 100 = one core.", NULL, NULL},
    [M_MAX_HWM] =
        U("max_hwm", "kB", METRIC_GAUGE, "Largest per-process memory high-water mark so far."),
    [M_TOTAL_PROCS] =
        U("total_procs", "count", METRIC_COUNTER, "Processes known to have been in the tree."),
    [M_BSEND] = U("bsend", "bytes", METRIC_COUNTER, "Always 0 (kickstart compatibility)."),
    [M_BRECV] = U("brecv", "bytes", METRIC_COUNTER, "Always 0 (kickstart compatibility)."),
    [M_ROOT_START] = {"start", S, "seconds", METRIC_GAUGE, MS_F64, 1, 6, MF_HIDDEN,
                      "Epoch seconds the job's main process started.", NULL, NULL},
    [M_PEAK_CPU_PERCENT] = {"peak_cpu_percent", S, "percent", METRIC_GAUGE, MS_F64, 1, 2, MF_HIDDEN,
                            "Largest cpu_percent so far.", NULL, NULL},
    [M_PEAK_RSS] = {"peak_rss", S, "kB", METRIC_GAUGE, MS_F64, 1, 0, MF_HIDDEN,
                    "Largest rss so far.", NULL, NULL},
    /* the cgroup source's fields (docs/cgroups.md), in its order */
    [M_TOTAL_PROCESSES] =
        CGN("total_processes", "count", METRIC_COUNTER,
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
    CGN("cg_pids_current", "tasks", METRIC_GAUGE,
        "Tasks (processes and threads) in the cgroup now."),
    CGN("cg_pids_peak", "tasks", METRIC_GAUGE, "Most tasks in the cgroup at once."),
    CGN("cg_pids_max", "tasks", METRIC_GAUGE, "The cgroup's pids limit."),
    CGN("cg_pids_max_events", "forks", METRIC_COUNTER, "Forks the cgroup's pids limit refused."),
    CGB("cg_io_rbytes", METRIC_COUNTER, "Bytes the cgroup read from block devices."),
    CGB("cg_io_wbytes", METRIC_COUNTER, "Bytes the cgroup wrote to block devices."),
    CGN("cg_io_rios", "operations", METRIC_COUNTER, "Block read operations of the cgroup."),
    CGN("cg_io_wios", "operations", METRIC_COUNTER, "Block write operations of the cgroup."),
    PSI("cg_psi_cpu_some", "some task was"),
    PSI("cg_psi_cpu_full", "all tasks were"),
    PSI("cg_psi_memory_some", "some task was"),
    PSI("cg_psi_memory_full", "all tasks were"),
    PSI("cg_psi_io_some", "some task was"),
    PSI("cg_psi_io_full", "all tasks were"),
    [M_CG_IO_DEV_RBYTES] = CGIO("rbytes", "bytes", "Bytes the cgroup read from this block device."),
    [M_CG_IO_DEV_WBYTES] = CGIO("wbytes", "bytes", "Bytes the cgroup wrote to this block device."),
    [M_CG_IO_DEV_RIOS] =
        CGIO("rios", "operations", "Read operations of the cgroup on this block device."),
    [M_CG_IO_DEV_WIOS] =
        CGIO("wios", "operations", "Write operations of the cgroup on this block device."),
    /* the GPU source's (docs/gpu.md) */
    [M_GPU_MEM] = {"gpu_mem", S, "bytes", METRIC_GAUGE, MS_U64, 1, -1, 0,
                   "GPU memory held by the job's processes, summed over its GPUs.", NULL, NULL},
    [M_GPU_UTIL] = {"gpu_util", S, "percent", METRIC_GAUGE, MS_F64, 1, 1, MF_NULLABLE,
                    "GPU use of the job summed over its GPUs, 100 = one GPU (null: unknown).", NULL,
                    NULL},
    [M_GPU_SAMPLING_DURATION] = {"sampling_duration", G, "seconds", METRIC_GAUGE, MS_F64, 1, 6, 0,
                                 "Seconds this device's queries took.", NULL, NULL},
    [M_GPU_TEMP] = GU("temp", "celsius", "Temperature of the GPU."),
    [M_GPU_POWER_USAGE] = GU("power_usage", "milliwatts", "Power drawn by the GPU."),
    [M_GPU_MEM_USAGE] = GU("mem_usage", "bytes", "Memory used on the GPU by all processes."),
    [M_GPU_BAR1_MEM_USAGE] = GU("bar1_mem_usage", "bytes", "BAR1 memory used on the GPU."),
    [M_GPU_GPU_UTILIZATION] = GU("gpu_utilization", "percent",
                                 "GPU busy in the driver's last sample period (all processes)."),
    [M_GPU_MEM_UTILIZATION] = GU("mem_utilization", "percent",
                                 "Memory busy in the driver's last sample period (all processes)."),
    [M_GPU_GPU_CLOCK] = GU("gpu_clock", "MHz", "Graphics clock of the GPU."),
    [M_GPU_SM_CLOCK] = GU("sm_clock", "MHz", "SM clock of the GPU."),
    [M_GPU_MEM_CLOCK] = GU("mem_clock", "MHz", "Memory clock of the GPU."),
    [M_GPU_VIDEO_CLOCK] = GU("video_clock", "MHz", "Video clock of the GPU."),
    [M_GPU_PCIE_TX] = GU("pcie_tx", "KB/s", "PCIe transmit throughput (--gpu-pcie)."),
    [M_GPU_PCIE_RX] = GU("pcie_rx", "KB/s", "PCIe receive throughput (--gpu-pcie)."),
    [M_GPU_OTHER_PROCS] = GU("other_procs", "count", "Processes of other jobs using this GPU."),
    [M_GPU_JOB_PROCS] = GU("job_procs", "count", "The job's processes on this GPU."),
    [M_GPU_JOB_MEM_USAGE] =
        GU("job_mem_usage", "bytes", "GPU memory held by the job's processes on this GPU."),
    [M_GPU_JOB_SM_UTIL] =
        GPCT("job_sm_util", "Percent of this GPU's SMs used by the job (null: unknown)."),
    [M_GPU_JOB_MEM_UTIL] = GPCT(
        "job_mem_util", "Percent of this GPU's memory bandwidth used by the job (null: unknown)."),
    [M_GPU_JOB_ENC_UTIL] =
        GPCT("job_enc_util", "Percent of this GPU's encoder used by the job (null: unknown)."),
    [M_GPU_JOB_DEC_UTIL] =
        GPCT("job_dec_util", "Percent of this GPU's decoder used by the job (null: unknown)."),
    /* the job's allocation, in jobscope.start (src/proc/alloc.c, docs/events.md) */
    [M_ALLOC_CPUS] = {"alloc_cpus", "jobscope.start", "count", METRIC_GAUGE, MS_F64, 1, 2, 0,
                      "CPUs allocated to the job (see alloc_cpus_from).", NULL, NULL},
    [M_ALLOC_MEM] = {"alloc_mem", "jobscope.start", "bytes", METRIC_GAUGE, MS_U64, 1, -1,
                     MF_NULLABLE, "Memory allocated to the job (null: none known).", NULL, NULL},
    [M_ALLOC_GPUS] = {"alloc_gpus", "jobscope.start", "count", METRIC_GAUGE, MS_U64, 1, -1,
                      MF_NULLABLE, "GPUs allocated to the job (null: none known).", NULL, NULL},
};

const char *metric_kind_name(enum metric_kind k)
{
    return k == METRIC_COUNTER ? "counter" : "gauge";
}

/* Does `s` (length n) name field d: NAME, or GROUP.NAME for a group's? */
static int names(const metric_def *d, const char *s, size_t n)
{
    if (!d->group) return strlen(d->name) == n && !memcmp(d->name, s, n);
    size_t g = strlen(d->group);
    return n == g + 1 + strlen(d->name) && !memcmp(s, d->group, g) && s[g] == '.' &&
           !memcmp(s + g + 1, d->name, n - g - 1);
}

const metric_def *metric_lookup(const char *name)
{
    if (!name) return NULL;
    size_t len = strlen(name);
    for (int i = 0; i < M_COUNT; i++)
        if (names(&metric_catalogue[i], name, len)) return &metric_catalogue[i];
    /* a series name: EVENT.FIELD or EVENT_FIELD, the event's name whole */
    for (int i = 0; i < M_COUNT; i++) {
        const metric_def *d = &metric_catalogue[i];
        size_t e = strlen(d->event);
        if (len > e + 1 && !strncmp(name, d->event, e) && (name[e] == '.' || name[e] == '_') &&
            names(d, name + e + 1, len - e - 1))
            return d;
    }
    return NULL;
}
