/* nvml.c — the NVIDIA backend of the GPU source: libnvidia-ml.so.1 loaded at
 * run time with dlopen (JOBSCOPE_NVML_LIBRARY names another file, which is how
 * the tests load tests/fake_nvml).  The few NVML types and calls used are
 * declared below from NVIDIA's public nvml.h, so building jobscope needs no
 * NVIDIA package.  A call that a driver does not support (NOT_SUPPORTED,
 * NO_PERMISSION, a missing symbol) is skipped for that device from then on.
 *
 * Devices watched: CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES (indices,
 * GPU-UUIDs or unique UUID prefixes, MIG-UUIDs which select their parent GPU),
 * parsed as CUDA does (it stops at the first entry it cannot use); --gpu=all
 * ignores both. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu/gpu.h"
#include "../util/log.h"

/* ---- the NVML ABI subset (nvml.h, CUDA 11/12) ---- */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
};
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned long long bar1Total, bar1Free, bar1Used;
} nvmlBAR1Memory_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct { /* _v2 and _v3 calls */
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct { /* the unversioned (v1) calls */
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU time, microseconds */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef nvmlReturn_t (*procs_fn)(nvmlDevice_t, unsigned int *, void *);

struct nvml_api {
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t);
    nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned int);
    nvmlReturn_t (*SystemGetCudaDriverVersion)(int *);
    nvmlReturn_t (*DeviceGetCount)(unsigned int *);
    nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetHandleByUUID)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetDeviceHandleFromMigDeviceHandle)(nvmlDevice_t, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetIndex)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*DeviceGetComputeMode)(nvmlDevice_t, int *);
    nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int *, int *);
    nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*DeviceGetBAR1MemoryInfo)(nvmlDevice_t, nvmlBAR1Memory_t *);
    nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned int *, unsigned int *);
    nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*DeviceGetPcieThroughput)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t *,
                                                unsigned int *, unsigned long long);
    procs_fn ComputeProcs, GraphicsProcs;
    int procs_v1; /* only the unversioned calls exist */
};

/* Calls remembered per device once unsupported. */
enum {
    C_TEMP,
    C_POWER,
    C_MEM,
    C_BAR1,
    C_UTIL,
    C_CLK0,
    C_CLK1,
    C_CLK2,
    C_CLK3,
    C_PCIE_TX,
    C_PCIE_RX,
    C_CPROCS,
    C_GPROCS,
    C_PUTIL,
    C_NCALLS
};
static const char *const call_names[C_NCALLS] = {
    "temperature",
    "power usage",
    "memory info",
    "BAR1 memory",
    "utilization",
    "graphics clock",
    "SM clock",
    "memory clock",
    "video clock",
    "PCIe tx",
    "PCIe rx",
    "compute processes",
    "graphics processes",
    "process utilization",
};

typedef struct nvml_dev {
    nvmlDevice_t h;
    unsigned int index;
    char mig_uuid[96];
    unsigned unsup;               /* bit per C_* call */
    unsigned long long last_seen; /* newest process sample seen, us */
    nvmlProcessInfo_t *pbuf;
    unsigned int pcap;
    nvmlProcessUtilizationSample_t *ubuf;
    unsigned int ucap;
} nvml_dev;

typedef struct nvml_backend {
    gpu_backend b;
    void *dl;
    struct nvml_api f;
    gpu_config cfg;
    nvml_dev dev[GPU_MAX_DEVICES];
    char errbuf[32]; /* nvml_err's message when NVML has none */
} nvml_backend;

static const char *nvml_err(nvml_backend *n, nvmlReturn_t r)
{
    if (n->f.ErrorString) {
        const char *s = n->f.ErrorString(r);
        if (s) return s;
    }
    snprintf(n->errbuf, sizeof n->errbuf, "NVML error %d", r);
    return n->errbuf;
}

/* Returns 1 when the call answered. Marks NOT_SUPPORTED & co for good. */
static int nvml_ok(nvml_backend *n, nvml_dev *d, int call, nvmlReturn_t r)
{
    if (r == NVML_SUCCESS) return 1;
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION ||
        r == NVML_ERROR_FUNCTION_NOT_FOUND) {
        d->unsup |= 1u << call;
        js_log(n->cfg.verbose, "gpu", "NVML device %u: %s: %s, not asked again", d->index,
               call_names[call], nvml_err(n, r));
    }
    return 0;
}
#define ASK(n, d, call, fn, ...)                                                                   \
    (!((d)->unsup & (1u << (call))) && (n)->f.fn                                                   \
         ? nvml_ok((n), (d), (call), (n)->f.fn(__VA_ARGS__))                                       \
         : ((d)->unsup |= 1u << (call), 0))

static void *nvml_sym(void *dl, const char *a, const char *b, const char *c)
{
    void *p = dlsym(dl, a);
    if (!p && b) p = dlsym(dl, b);
    if (!p && c) p = dlsym(dl, c);
    return p;
}

static void nvml_load(nvml_backend *n)
{
    void *dl = n->dl;
    struct nvml_api *f = &n->f;
#define LOAD(field, ...) *(void **)&f->field = nvml_sym(dl, __VA_ARGS__)
    LOAD(Init, "nvmlInit_v2", "nvmlInit", NULL);
    LOAD(Shutdown, "nvmlShutdown", NULL, NULL);
    LOAD(ErrorString, "nvmlErrorString", NULL, NULL);
    LOAD(SystemGetDriverVersion, "nvmlSystemGetDriverVersion", NULL, NULL);
    LOAD(SystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion_v2",
         "nvmlSystemGetCudaDriverVersion", NULL);
    LOAD(DeviceGetCount, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL);
    LOAD(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex",
         NULL);
    LOAD(DeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID", NULL, NULL);
    LOAD(DeviceGetDeviceHandleFromMigDeviceHandle, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
         NULL, NULL);
    LOAD(DeviceGetIndex, "nvmlDeviceGetIndex", NULL, NULL);
    LOAD(DeviceGetName, "nvmlDeviceGetName", NULL, NULL);
    LOAD(DeviceGetUUID, "nvmlDeviceGetUUID", NULL, NULL);
    LOAD(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", NULL, NULL);
    LOAD(DeviceGetComputeMode, "nvmlDeviceGetComputeMode", NULL, NULL);
    LOAD(DeviceGetCudaComputeCapability, "nvmlDeviceGetCudaComputeCapability", NULL, NULL);
    LOAD(DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", NULL, NULL);
    LOAD(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", NULL, NULL);
    LOAD(DeviceGetBAR1MemoryInfo, "nvmlDeviceGetBAR1MemoryInfo", NULL, NULL);
    LOAD(DeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo", NULL, NULL);
    LOAD(DeviceGetClockInfo, "nvmlDeviceGetClockInfo", NULL, NULL);
    LOAD(DeviceGetMigMode, "nvmlDeviceGetMigMode", NULL, NULL);
    LOAD(DeviceGetTemperature, "nvmlDeviceGetTemperature", NULL, NULL);
    LOAD(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", NULL, NULL);
    LOAD(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates", NULL, NULL);
    LOAD(DeviceGetPcieThroughput, "nvmlDeviceGetPcieThroughput", NULL, NULL);
    LOAD(DeviceGetProcessUtilization, "nvmlDeviceGetProcessUtilization", NULL, NULL);
    LOAD(ComputeProcs, "nvmlDeviceGetComputeRunningProcesses_v3",
         "nvmlDeviceGetComputeRunningProcesses_v2", NULL);
    LOAD(GraphicsProcs, "nvmlDeviceGetGraphicsRunningProcesses_v3",
         "nvmlDeviceGetGraphicsRunningProcesses_v2", NULL);
    if (!f->ComputeProcs) {
        LOAD(ComputeProcs, "nvmlDeviceGetComputeRunningProcesses", NULL, NULL);
        LOAD(GraphicsProcs, "nvmlDeviceGetGraphicsRunningProcesses", NULL, NULL);
        f->procs_v1 = 1;
    }
#undef LOAD
}

/* ---- device selection ---- */

static int nvml_uuid_of(nvml_backend *n, nvmlDevice_t h, char *out, size_t len)
{
    out[0] = 0;
    return n->f.DeviceGetUUID && n->f.DeviceGetUUID(h, out, (unsigned)len) == NVML_SUCCESS;
}

/* Index of the physical GPU a visible-devices token names, -1 if none. */
static int nvml_resolve(nvml_backend *n, unsigned count, const char *tok, char *mig)
{
    char *end;
    mig[0] = 0;
    if (tok[0] >= '0' && tok[0] <= '9') {
        unsigned long i = strtoul(tok, &end, 10);
        return (*end || i >= count) ? -1 : (int)i;
    }
    if (!strncmp(tok, "MIG-", 4)) {
        nvmlDevice_t h, parent;
        unsigned idx;
        snprintf(mig, 96, "%s", tok);
        if (n->f.DeviceGetHandleByUUID && n->f.DeviceGetHandleByUUID(tok, &h) == NVML_SUCCESS &&
            n->f.DeviceGetDeviceHandleFromMigDeviceHandle &&
            n->f.DeviceGetDeviceHandleFromMigDeviceHandle(h, &parent) == NVML_SUCCESS &&
            n->f.DeviceGetIndex && n->f.DeviceGetIndex(parent, &idx) == NVML_SUCCESS)
            return (int)idx;
        /* Old form MIG-GPU-<uuid>/<gi>/<ci>: the parent's UUID is inside. */
        if (!strncmp(tok + 4, "GPU-", 4)) {
            char gpu[96];
            snprintf(gpu, sizeof gpu, "%s", tok + 4);
            char *slash = strchr(gpu, '/');
            if (slash) *slash = 0;
            return nvml_resolve(n, count, gpu, (char[96]){0});
        }
        mig[0] = 0;
        return -1;
    }
    /* A UUID, or a unique prefix of one (CUDA accepts both). */
    int found = -1;
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t h;
        char uuid[96];
        if (n->f.DeviceGetHandleByIndex(i, &h) != NVML_SUCCESS) continue;
        if (!nvml_uuid_of(n, h, uuid, sizeof uuid)) continue;
        size_t tl = strlen(tok);
        if (!strncmp(uuid, tok, tl) ||
            (strncmp(tok, "GPU-", 4) && !strncmp(uuid, "GPU-", 4) && !strncmp(uuid + 4, tok, tl))) {
            if (found >= 0) return -1; /* ambiguous prefix */
            found = (int)i;
        }
    }
    return found;
}

static int nvml_add(nvml_backend *n, unsigned idx, const char *mig)
{
    for (int k = 0; k < n->b.ndev; k++)
        if (n->dev[k].index == idx) return 0; /* two MIG instances of one GPU */
    if (n->b.ndev >= GPU_MAX_DEVICES) return -1;
    nvml_dev *d = &n->dev[n->b.ndev];
    if (n->f.DeviceGetHandleByIndex(idx, &d->h) != NVML_SUCCESS) return -1;
    d->index = idx;
    snprintf(d->mig_uuid, sizeof d->mig_uuid, "%s", mig ? mig : "");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    d->last_seen =
        (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
    n->b.ndev++;
    return 0;
}

/* ---- backend ops ---- */

static int nvml_info(gpu_backend *b, int i, gpu_dev_info *o)
{
    nvml_backend *n = (nvml_backend *)b;
    nvml_dev *d = &n->dev[i];
    nvmlDevice_t h = d->h;
    struct nvml_api *f = &n->f;
    memset(o, 0, sizeof *o);
    o->id = (int)d->index;
    snprintf(o->vendor, sizeof o->vendor, "nvidia");
    o->cuda_major = o->cuda_minor = -1;
    o->mig_mode = -1;
    o->power_limit_mw = o->total_mem = o->total_bar1 = GPU_NA;
    o->max_gpu_clock = o->max_sm_clock = o->max_mem_clock = o->max_video_clock = GPU_NA;
    snprintf(o->mig_uuid, sizeof o->mig_uuid, "%s", d->mig_uuid);
    if (f->DeviceGetName && f->DeviceGetName(h, o->name, sizeof o->name) != NVML_SUCCESS)
        o->name[0] = 0;
    nvml_uuid_of(n, h, o->uuid, sizeof o->uuid);
    nvmlPciInfo_t pci;
    if (f->DeviceGetPciInfo && f->DeviceGetPciInfo(h, &pci) == NVML_SUCCESS) {
        pci.busId[sizeof pci.busId - 1] = 0;
        snprintf(o->pci_bus_id, sizeof o->pci_bus_id, "%s", pci.busId);
    }
    int mode;
    if (f->DeviceGetComputeMode && f->DeviceGetComputeMode(h, &mode) == NVML_SUCCESS) {
        static const char *const modes[] = {"Default", "Exclusive_Thread", "Prohibited",
                                            "Exclusive_Process"};
        snprintf(o->compute_mode, sizeof o->compute_mode, "%s",
                 mode >= 0 && mode < 4 ? modes[mode] : "Unknown");
    }
    int ma, mi;
    if (f->DeviceGetCudaComputeCapability &&
        f->DeviceGetCudaComputeCapability(h, &ma, &mi) == NVML_SUCCESS) {
        o->cuda_major = ma;
        o->cuda_minor = mi;
    }
    unsigned v;
    if (f->DeviceGetEnforcedPowerLimit && f->DeviceGetEnforcedPowerLimit(h, &v) == NVML_SUCCESS)
        o->power_limit_mw = v;
    nvmlMemory_t m;
    if (f->DeviceGetMemoryInfo && f->DeviceGetMemoryInfo(h, &m) == NVML_SUCCESS)
        o->total_mem = m.total;
    nvmlBAR1Memory_t bar;
    if (f->DeviceGetBAR1MemoryInfo && f->DeviceGetBAR1MemoryInfo(h, &bar) == NVML_SUCCESS)
        o->total_bar1 = bar.bar1Total;
    uint64_t *clk[4] = {&o->max_gpu_clock, &o->max_sm_clock, &o->max_mem_clock,
                        &o->max_video_clock};
    for (int c = 0; c < 4; c++)
        if (f->DeviceGetMaxClockInfo && f->DeviceGetMaxClockInfo(h, c, &v) == NVML_SUCCESS)
            *clk[c] = v;
    unsigned cur, pend;
    if (f->DeviceGetMigMode && f->DeviceGetMigMode(h, &cur, &pend) == NVML_SUCCESS)
        o->mig_mode = cur ? 1 : 0;
    return 0;
}

/* Adds the processes of one list (compute or graphics) to s->procs. */
static void nvml_procs(nvml_backend *n, nvml_dev *d, int call, procs_fn fn, int graphics,
                       const gpu_job *job, gpu_stats *s)
{
    if (!fn || (d->unsup & (1u << call))) {
        d->unsup |= 1u << call;
        return;
    }
    size_t esz = n->f.procs_v1 ? sizeof(nvmlProcessInfo_v1_t) : sizeof(nvmlProcessInfo_t);
    unsigned count = 0;
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int tries = 0; tries < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; tries++) {
        if (d->pcap == 0 || (tries > 0 && count > d->pcap)) {
            unsigned ncap = count > 64 ? count + 16 : 64;
            void *p = realloc(d->pbuf, ncap * sizeof(nvmlProcessInfo_t));
            if (!p) return;
            d->pbuf = p;
            d->pcap = ncap;
        }
        count = d->pcap;
        r = fn(d->h, &count, d->pbuf);
    }
    if (!nvml_ok(n, d, call, r)) return;
    for (unsigned k = 0; k < count; k++) {
        const char *e = (const char *)d->pbuf + k * esz;
        unsigned pid;
        unsigned long long mem;
        memcpy(&pid, e, sizeof pid);
        memcpy(&mem, e + offsetof(nvmlProcessInfo_t, usedGpuMemory), sizeof mem);
        int mine = job->contains(job->arg, (pid_t)pid);
        if (!mine && !n->cfg.all_procs) continue; /* the kernel still counts it below */
        int dup = 0;
        for (int j = 0; j < s->nprocs; j++)
            if (s->procs[j].pid == (pid_t)pid && s->procs[j].graphics == graphics) dup = 1;
        if (dup || s->nprocs >= GPU_MAX_PROCS) continue;
        gpu_proc *p = &s->procs[s->nprocs++];
        p->pid = (pid_t)pid;
        p->mem = mem == NVML_VALUE_NOT_AVAILABLE ? GPU_NA : mem;
        p->graphics = graphics;
    }
    if (!n->cfg.all_procs)
        for (unsigned k = 0; k < count; k++) {
            unsigned pid;
            memcpy(&pid, (const char *)d->pbuf + k * esz, sizeof pid);
            if (!job->contains(job->arg, (pid_t)pid)) s->other_procs++;
        }
}

static void nvml_putil(nvml_backend *n, nvml_dev *d, const gpu_job *job, gpu_stats *s)
{
    if ((d->unsup & (1u << C_PUTIL)) || !n->f.DeviceGetProcessUtilization) {
        d->unsup |= 1u << C_PUTIL;
        return;
    }
    unsigned count = 0;
    nvmlReturn_t r = n->f.DeviceGetProcessUtilization(d->h, NULL, &count, d->last_seen);
    if (r == NVML_ERROR_NOT_FOUND) { /* no sample newer than last_seen */
        s->samples_ok = 1;
        return;
    }
    if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE) {
        nvml_ok(n, d, C_PUTIL, r);
        return;
    }
    if (count == 0) {
        s->samples_ok = 1;
        return;
    }
    count += 8;
    if (count > d->ucap) {
        void *p = realloc(d->ubuf, count * sizeof *d->ubuf);
        if (!p) return;
        d->ubuf = p;
        d->ucap = count;
    }
    count = d->ucap;
    r = n->f.DeviceGetProcessUtilization(d->h, d->ubuf, &count, d->last_seen);
    if (r == NVML_ERROR_NOT_FOUND) {
        s->samples_ok = 1;
        return;
    }
    if (!nvml_ok(n, d, C_PUTIL, r)) return;
    s->samples_ok = 1;
    for (unsigned k = 0; k < count; k++) {
        const nvmlProcessUtilizationSample_t *u = &d->ubuf[k];
        if (u->timeStamp > d->last_seen) d->last_seen = u->timeStamp;
        if (!n->cfg.all_procs && !job->contains(job->arg, (pid_t)u->pid)) continue;
        if (s->nsamples >= GPU_MAX_PROCS) continue;
        gpu_psample *p = &s->samples[s->nsamples++];
        p->pid = (pid_t)u->pid;
        p->ts_us = u->timeStamp;
        p->sm = (int)u->smUtil;
        p->mem = (int)u->memUtil;
        p->enc = (int)u->encUtil;
        p->dec = (int)u->decUtil;
    }
}

static int nvml_stats(gpu_backend *b, int i, const gpu_job *job, gpu_stats *s)
{
    nvml_backend *n = (nvml_backend *)b;
    nvml_dev *d = &n->dev[i];
    nvmlDevice_t h = d->h;
    unsigned v;
    gpu_stats_reset(s);
    if (ASK(n, d, C_TEMP, DeviceGetTemperature, h, 0, &v)) s->temp = v;
    if (ASK(n, d, C_POWER, DeviceGetPowerUsage, h, &v)) s->power_mw = v;
    nvmlMemory_t m;
    if (ASK(n, d, C_MEM, DeviceGetMemoryInfo, h, &m)) s->mem_used = m.used;
    nvmlBAR1Memory_t bar;
    if (ASK(n, d, C_BAR1, DeviceGetBAR1MemoryInfo, h, &bar)) s->bar1_used = bar.bar1Used;
    nvmlUtilization_t u;
    if (ASK(n, d, C_UTIL, DeviceGetUtilizationRates, h, &u)) {
        s->gpu_util = u.gpu;
        s->mem_util = u.memory;
    }
    uint64_t *clk[4] = {&s->gpu_clock, &s->sm_clock, &s->mem_clock, &s->video_clock};
    for (int c = 0; c < 4; c++)
        if (ASK(n, d, C_CLK0 + c, DeviceGetClockInfo, h, c, &v)) *clk[c] = v;
    if (n->cfg.pcie) {
        if (ASK(n, d, C_PCIE_TX, DeviceGetPcieThroughput, h, 0, &v)) s->pcie_tx = v;
        if (ASK(n, d, C_PCIE_RX, DeviceGetPcieThroughput, h, 1, &v)) s->pcie_rx = v;
    }
    nvml_procs(n, d, C_CPROCS, n->f.ComputeProcs, 0, job, s);
    s->others_known = !(d->unsup & (1u << C_CPROCS));
    if (n->cfg.graphics_procs) nvml_procs(n, d, C_GPROCS, n->f.GraphicsProcs, 1, job, s);
    nvml_putil(n, d, job, s);
    return 0;
}

static void nvml_close(gpu_backend *b, int forget)
{
    nvml_backend *n = (nvml_backend *)b;
    if (forget) return; /* a thread may still be inside NVML: leave it loaded */
    for (int i = 0; i < n->b.ndev; i++) {
        free(n->dev[i].pbuf);
        free(n->dev[i].ubuf);
    }
    if (n->f.Shutdown) n->f.Shutdown();
    dlclose(n->dl);
    free(n);
}

gpu_backend *gpu_nvml_open(const gpu_config *c, char *err, size_t errlen)
{
    const char *lib = c->nvml_library && *c->nvml_library ? c->nvml_library : "libnvidia-ml.so.1";
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        snprintf(err, errlen, "NVML: %s", e ? e : lib);
        return NULL;
    }
    nvml_backend *n = calloc(1, sizeof *n);
    if (!n) {
        dlclose(dl);
        snprintf(err, errlen, "NVML: out of memory");
        return NULL;
    }
    n->dl = dl;
    n->cfg = *c;
    nvml_load(n);
    if (!n->f.Init || !n->f.DeviceGetCount || !n->f.DeviceGetHandleByIndex) {
        snprintf(err, errlen, "NVML: %s is not a usable NVML library (nvmlInit missing)", lib);
        dlclose(dl);
        free(n);
        return NULL;
    }
    nvmlReturn_t r = n->f.Init();
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML: nvmlInit failed: %s", nvml_err(n, r));
        dlclose(dl);
        free(n);
        return NULL;
    }
    unsigned count = 0;
    r = n->f.DeviceGetCount(&count);
    if (r != NVML_SUCCESS || count == 0) {
        if (r != NVML_SUCCESS)
            snprintf(err, errlen, "NVML: nvmlDeviceGetCount failed: %s", nvml_err(n, r));
        else
            snprintf(err, errlen, "NVML: no NVIDIA GPU on this node");
        goto fail;
    }
    if (c->all_devices || !c->cuda_visible) {
        for (unsigned i = 0; i < count; i++) nvml_add(n, i, NULL);
    } else {
        char tok[GPU_MAX_DEVICES][96], mig[96];
        int nt = gpu_visible_tokens(c->cuda_visible, tok, GPU_MAX_DEVICES);
        /* Inside a container started with NVIDIA_VISIBLE_DEVICES=2,3 NVML
         * already shows just those GPUs, renumbered from 0: watch them all. */
        int indices = nt > 0;
        for (int k = 0; k < nt; k++)
            if (tok[k][0] < '0' || tok[k][0] > '9') indices = 0;
        if (c->visible_is_nvidia && indices && (unsigned)nt == count) nt = -1;
        if (nt < 0)
            for (unsigned i = 0; i < count; i++) nvml_add(n, i, NULL);
        for (int k = 0; k < nt; k++) {
            int idx = nvml_resolve(n, count, tok[k], mig);
            if (idx < 0) {
                js_log(c->verbose, "gpu",
                       "visible device '%s' matches no GPU: ignoring it and those after it",
                       tok[k]);
                break;
            }
            nvml_add(n, (unsigned)idx, mig);
        }
        if (n->b.ndev == 0) {
            snprintf(err, errlen, "NVML: the visible-devices list '%s' selects none of the %u GPUs",
                     c->cuda_visible, count);
            goto fail;
        }
    }
    if (n->b.ndev == 0) {
        snprintf(err, errlen, "NVML: no usable device handle");
        goto fail;
    }
    n->b.name = "nvml";
    n->b.info = nvml_info;
    n->b.stats = nvml_stats;
    n->b.close = nvml_close;
    n->b.cuda_version = -1;
    if (!n->f.SystemGetDriverVersion ||
        n->f.SystemGetDriverVersion(n->b.driver_version, sizeof n->b.driver_version) !=
            NVML_SUCCESS)
        n->b.driver_version[0] = 0;
    int cv;
    if (n->f.SystemGetCudaDriverVersion && n->f.SystemGetCudaDriverVersion(&cv) == NVML_SUCCESS)
        n->b.cuda_version = cv / 1000 + (cv % 1000) / 10 / 10.0;
    return &n->b;
fail:
    if (n->f.Shutdown) n->f.Shutdown();
    dlclose(dl);
    free(n);
    return NULL;
}
