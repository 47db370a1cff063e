/* gpu.h — GPU monitoring: the small interface between the "gpu" source
 * (gpu_source.c: threads, events, the job's share) and its vendor backends.
 *
 *   nvml.c  NVIDIA, through libnvidia-ml.so.1 loaded with dlopen at run time
 *           (JOBSCOPE_NVML_LIBRARY overrides the name; the ABI subset used is
 *           declared there, so the build needs no NVIDIA package).
 *   drm.c   AMD and any other DRM driver: amdgpu's sysfs files and hwmon,
 *           and the per-client usage in /proc/PID/fdinfo (drm-engine-*,
 *           drm-memory-*), which attributes GPU time and memory to processes.
 *
 * A backend enumerates the devices it will watch (already filtered by
 * CUDA_VISIBLE_DEVICES & co unless --gpu=all) and answers info() once per
 * device and stats() once per interval per device.  stats() for device i is
 * only ever called from device i's own thread, so a backend keeps per-device
 * state without locks; calls for different devices run concurrently.
 *
 * Numbers a device cannot give are GPU_NA (uint64) or -1 (int): the event
 * then leaves the field out.  A call the driver does not support is skipped
 * for that device from then on; it is never fatal. */
#ifndef JOBSCOPE_GPU_H
#define JOBSCOPE_GPU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GPU_NA          UINT64_MAX
#define GPU_MAX_DEVICES 64
#define GPU_MAX_PROCS   256 /* processes listed per device per interval */
#define GPU_MAX_ENGINES 12  /* DRM engine classes kept per device */

/* The GPU source's config (its part of monitor_config): what the user
 * asked for on the command line. */
typedef struct gpu_source_config {
    int mode;           /* 0 off, 1 the job's GPUs (-G), 2 every GPU (--gpu=all) */
    int graphics_procs; /* --gpu-graphics-procs, KICKSTART_MON_GRAPHICS_PROCS */
    int proc_util;      /* --gpu-proc-util, KICKSTART_MON_GRAPHICS_UTIL */
    int pcie;           /* --gpu-pcie, KICKSTART_MON_GRAPHICS_PCIE */
    int all_procs;      /* --gpu-all-procs */
} gpu_source_config;

/* What the user asked for (options + environment), see gpu_config_init(). */
typedef struct gpu_config {
    int all_devices;    /* --gpu=all: every device of the node */
    int graphics_procs; /* list graphics processes (KICKSTART_MON_GRAPHICS_PROCS) */
    int proc_util;      /* list per-process samples (KICKSTART_MON_GRAPHICS_UTIL) */
    int pcie;           /* PCIe throughput, ~40 ms per device (KICKSTART_MON_GRAPHICS_PCIE) */
    int all_procs;      /* do not filter process lists to the job's tree */
    int verbose;
    const char *nvml_library; /* JOBSCOPE_NVML_LIBRARY, else "libnvidia-ml.so.1" */
    const char *sysfs_root;   /* JOBSCOPE_SYSFS_ROOT, prefix of /sys ("" = real) */
    const char *proc_root;    /* JOBSCOPE_PROC_ROOT, prefix of /proc ("" = real) */
    const char *cuda_visible; /* CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES; NULL: unset */
    int visible_is_nvidia;    /* cuda_visible came from NVIDIA_VISIBLE_DEVICES */
    const char *amd_visible;  /* ROCR_VISIBLE_DEVICES, else HIP_VISIBLE_DEVICES; NULL: unset */
} gpu_config;

/* Static facts about one device (kickstart.inv.online.gpu.env). */
typedef struct gpu_dev_info {
    int id;          /* NVML index, or DRM card number */
    char vendor[16]; /* "nvidia", "amd", "intel", or the DRM driver name */
    char driver[32]; /* kernel driver (DRM), "" for NVML */
    char name[96];
    char uuid[96];
    char pci_bus_id[32];
    char compute_mode[24];      /* "" unknown */
    int cuda_major, cuda_minor; /* -1 unknown */
    uint64_t power_limit_mw;
    uint64_t total_mem, total_bar1;                                       /* bytes */
    uint64_t max_gpu_clock, max_sm_clock, max_mem_clock, max_video_clock; /* MHz */
    int mig_mode;      /* -1 unknown, 0 off, 1 on */
    char mig_uuid[96]; /* the MIG instance the job was given, "" none */
} gpu_dev_info;

typedef struct gpu_proc {
    pid_t pid;
    uint64_t mem; /* bytes, GPU_NA if the driver hides it */
    int graphics; /* 1: from the graphics list */
} gpu_proc;

/* One per-process utilisation sample; -1 where unknown. */
typedef struct gpu_psample {
    pid_t pid;
    uint64_t ts_us;        /* CPU time of the sample, microseconds */
    int sm, mem, enc, dec; /* percent */
} gpu_psample;

typedef struct gpu_engine {
    char name[24];
    double job_util; /* percent of that engine used by the job's clients */
} gpu_engine;

/* One interval of one device (kickstart.inv.online.gpu.stats). */
typedef struct gpu_stats {
    uint64_t temp; /* degrees C */
    uint64_t power_mw;
    uint64_t mem_used, bar1_used;                         /* bytes */
    uint64_t gpu_util, mem_util;                          /* percent */
    uint64_t gpu_clock, sm_clock, mem_clock, video_clock; /* MHz */
    uint64_t pcie_tx, pcie_rx;                            /* KB/s */
    int nprocs;       /* compute (and graphics) processes: the job's only,
                         unless cfg->all_procs */
    int other_procs;  /* processes of other jobs left out of procs[] */
    int others_known; /* the backend saw every process of the device */
    gpu_proc procs[GPU_MAX_PROCS];
    int samples_ok; /* per-process utilisation is supported */
    int nsamples;
    gpu_psample samples[GPU_MAX_PROCS];
    int nengines; /* DRM only: per-engine job utilisation */
    gpu_engine engines[GPU_MAX_ENGINES];
} gpu_stats;

/* The job's tree, as seen by a backend that must look processes up itself. */
typedef struct gpu_job {
    int (*contains)(void *arg, pid_t pid);
    int (*pids)(void *arg, pid_t *out, int max);
    void *arg;
} gpu_job;

typedef struct gpu_backend gpu_backend;
struct gpu_backend {
    const char *name; /* "nvml", "drm" */
    int ndev;
    char driver_version[80]; /* "" unknown */
    double cuda_version;     /* -1 unknown */
    int (*info)(gpu_backend *b, int i, gpu_dev_info *out);
    /* Fills *out (every field reset to "unknown" first). 0, or -1 if the device
     * answered nothing at all this time. */
    int (*stats)(gpu_backend *b, int i, const gpu_job *job, gpu_stats *out);
    /* forget: 1 when a device thread may still be inside the library (a
     * blocked call): then the library must stay loaded. */
    void (*close)(gpu_backend *b, int forget);
};

/* Open a backend. NULL with a one-line reason in err (no device, no library,
 * broken library). */
gpu_backend *gpu_nvml_open(const gpu_config *c, char *err, size_t errlen);
gpu_backend *gpu_drm_open(const gpu_config *c, char *err, size_t errlen);

/* The DRM backend's clock for engine-time deltas (seconds, monotonic);
 * unit tests replace it to make utilisation exact. */
extern double (*gpu_drm_clock)(void);

/* Helpers shared by the backends (gpu_common.c). */
void gpu_stats_reset(gpu_stats *s);
/* Parses a CUDA_VISIBLE_DEVICES-style list into tokens (trimmed, up to max);
 * stops at "" or an empty token. Returns the count; -1 for "all". */
int gpu_visible_tokens(const char *list, char tok[][96], int max);
/* Reads a small file under root (root may be ""): returns bytes read, -1. */
ssize_t gpu_read_file(const char *root, const char *path, char *buf, size_t len);
/* Reads an unsigned integer from a file; GPU_NA on failure. */
uint64_t gpu_read_u64(const char *root, const char *path);

#endif
