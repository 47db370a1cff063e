/* fake_nvml.c — a scripted stand-in for libnvidia-ml.so.1, built by the tests
 * (make fake-nvml -> build/fake-nvml/libnvidia-ml.so.1) and loaded by jobscope
 * through JOBSCOPE_NVML_LIBRARY.  It implements the NVML subset src/gpu/nvml.c
 * calls, with devices, processes and failures taken from the file named by
 * FAKE_NVML_SCRIPT, re-read at every call so a running job can append its own
 * processes to it.  One line per fact; DEV is an index or '*':
 *
 *   devices N                    number of GPUs (default 1; 0 allowed)
 *   init_error CODE              nvmlInit_v2 fails with CODE (9: driver not loaded)
 *   driver VERSION               nvmlSystemGetDriverVersion (default 550.54.15)
 *   cuda N                       nvmlSystemGetCudaDriverVersion_v2 (default 12040)
 *   name DEV TEXT...             device name (default "Fake GPU N")
 *   mig DEV UUID                 a MIG instance of DEV, known to nvmlDeviceGetHandleByUUID
 *   util DEV GPU MEM             utilisation rates (default 0 0)
 *   proc DEV PID BYTES [SM MEM ENC DEC]   a compute process, with a utilisation sample
 *   gproc DEV PID BYTES          a graphics process
 *   unsupported DEV FUNCTION     FUNCTION answers NVML_ERROR_NOT_SUPPORTED
 *   error DEV FUNCTION CODE      FUNCTION answers CODE
 *   block DEV FUNCTION SECONDS   FUNCTION sleeps that long before answering
 *
 * Every device call is appended to FAKE_NVML_LOG (if set) as "FUNCTION DEV",
 * so tests can count calls (an unsupported call must not be asked again). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum { OK = 0, NOT_SUPPORTED = 3, INVALID_ARG = 2, NOT_FOUND = 6, INSUFFICIENT = 7, UNINIT = 1 };

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned long long bar1Total, bar1Free, bar1Used; } nvmlBAR1Memory_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

#define MAXDEV  64
#define MAXPROC 512
#define MAXRULE 64

struct fdev { int index; int mig; };                 /* handle target; mig: -1 physical */
struct fproc { int dev, graphics; unsigned pid; unsigned long long mem; int sm, mu, enc, dec; };
struct rule { int dev; char fn[80]; int kind; double arg; };  /* kind 0 unsupported 1 error 2 block */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fdev handles[MAXDEV], mig_handles[MAXDEV];
struct script {
    int ndev, init_error, cuda;
    char driver[80];
    char names[MAXDEV][96];
    unsigned util_gpu[MAXDEV], util_mem[MAXDEV];
    char mig_uuid[MAXDEV][96];
    int  mig_parent[MAXDEV], nmig;
    struct fproc procs[MAXPROC];
    int nprocs;
    struct rule rules[MAXRULE];
    int nrules;
};
/* S is what the calls read; a reload parses into T and copies it over while
 * holding the lock (same bytes unless the script changed). */
static struct script S, T;
static int initialized;

static void parse_script(void);
static void load_script(void)
{
    parse_script();
    memcpy(&S, &T, sizeof S);
}

#define S T
static void parse_script(void)
{
    memset(&S, 0, sizeof S);
    S.ndev = 1;
    S.cuda = 12040;
    strcpy(S.driver, "550.54.15");
    const char *path = getenv("FAKE_NVML_SCRIPT");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return;
    char line[512], dev[16], fn[80], text[256];
    while (fgets(line, sizeof line, f)) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        int d = 0;
        double x;
        unsigned a, b2;
        unsigned long long mem;
        int sm = -1, mu = 0, enc = 0, dec = 0;
        if (sscanf(line, "devices %d", &S.ndev) == 1) {
            if (S.ndev > MAXDEV) S.ndev = MAXDEV;
        } else if (sscanf(line, "init_error %d", &S.init_error) == 1) {
        } else if (sscanf(line, "driver %79s", S.driver) == 1) {
        } else if (sscanf(line, "cuda %d", &S.cuda) == 1) {
        } else if (sscanf(line, "name %d %255[^\n]", &d, text) == 2 && d >= 0 && d < MAXDEV) {
            snprintf(S.names[d], sizeof S.names[d], "%.95s", text);
        } else if (sscanf(line, "mig %d %95s", &d, text) == 2 && S.nmig < MAXDEV) {
            snprintf(S.mig_uuid[S.nmig], 96, "%.95s", text);
            S.mig_parent[S.nmig++] = d;
        } else if (sscanf(line, "util %d %u %u", &d, &a, &b2) == 3 && d >= 0 && d < MAXDEV) {
            S.util_gpu[d] = a;
            S.util_mem[d] = b2;
        } else if (sscanf(line, "proc %d %u %llu %d %d %d %d", &d, &a, &mem, &sm, &mu, &enc, &dec) >= 3 &&
                   S.nprocs < MAXPROC) {
            S.procs[S.nprocs++] = (struct fproc){ d, 0, a, mem, sm, mu, enc, dec };
        } else if (sscanf(line, "gproc %d %u %llu", &d, &a, &mem) == 3 && S.nprocs < MAXPROC) {
            S.procs[S.nprocs++] = (struct fproc){ d, 1, a, mem, -1, 0, 0, 0 };
        } else if (S.nrules < MAXRULE && sscanf(line, "unsupported %15s %79s", dev, fn) == 2) {
            S.rules[S.nrules++] = (struct rule){ dev[0] == '*' ? -1 : atoi(dev), "", 0, 0 };
            snprintf(S.rules[S.nrules - 1].fn, 80, "%s", fn);
        } else if (S.nrules < MAXRULE && sscanf(line, "error %15s %79s %lf", dev, fn, &x) == 3) {
            S.rules[S.nrules++] = (struct rule){ dev[0] == '*' ? -1 : atoi(dev), "", 1, x };
            snprintf(S.rules[S.nrules - 1].fn, 80, "%s", fn);
        } else if (S.nrules < MAXRULE && sscanf(line, "block %15s %79s %lf", dev, fn, &x) == 3) {
            S.rules[S.nrules++] = (struct rule){ dev[0] == '*' ? -1 : atoi(dev), "", 2, x };
            snprintf(S.rules[S.nrules - 1].fn, 80, "%s", fn);
        }
    }
    fclose(f);
}
#undef S

static void log_call(const char *fn, int dev)
{
    const char *path = getenv("FAKE_NVML_LOG");
    if (!path) return;
    char line[128];
    int n = snprintf(line, sizeof line, "%s %d\n", fn, dev);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0) { /* nothing to do */ }
        close(fd);
    }
}

/* Re-reads the script, logs the call and applies its rules. Returns the
 * error to answer, or OK; dev -1 for system calls. Called without the lock. */
static nvmlReturn_t enter(const char *fn, int dev)
{
    double sleep_s = 0;
    nvmlReturn_t r = OK;
    pthread_mutex_lock(&lock);
    load_script();
    for (int i = 0; i < S.nrules; i++) {
        struct rule *ru = &S.rules[i];
        if (strcmp(ru->fn, fn) || (ru->dev >= 0 && ru->dev != dev)) continue;
        if (ru->kind == 0) r = NOT_SUPPORTED;
        else if (ru->kind == 1) r = (nvmlReturn_t)ru->arg;
        else sleep_s = ru->arg;
    }
    pthread_mutex_unlock(&lock);
    log_call(fn, dev);
    if (sleep_s > 0) {
        struct timespec ts = { (time_t)sleep_s, (long)((sleep_s - (time_t)sleep_s) * 1e9) };
        while (nanosleep(&ts, &ts) != 0) { }
    }
    return r;
}

static int devidx(void *h)
{
    struct fdev *d = h;
    if (!initialized || !d) return -1;
    if (d >= handles && d < handles + MAXDEV && d->index < S.ndev) return d->index;
    return -1;
}

#define DEVCALL(name, h) \
    int dev = devidx(h); \
    if (dev < 0) return initialized ? INVALID_ARG : UNINIT; \
    nvmlReturn_t r_ = enter(name, dev); \
    if (r_ != OK) return r_

static unsigned long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

nvmlReturn_t nvmlInit_v2(void)
{
    nvmlReturn_t r = enter("nvmlInit_v2", -1);
    if (r != OK) return r;
    if (S.init_error) return S.init_error;
    for (int i = 0; i < MAXDEV; i++) {
        handles[i] = (struct fdev){ i, -1 };
        mig_handles[i] = (struct fdev){ -1, i };
    }
    initialized = 1;
    return OK;
}

nvmlReturn_t nvmlShutdown(void) { initialized = 0; return OK; }

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case OK: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
    nvmlReturn_t r = enter("nvmlSystemGetDriverVersion", -1);
    if (r != OK) return r;
    snprintf(v, len, "%s", S.driver);
    return OK;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    nvmlReturn_t r = enter("nvmlSystemGetCudaDriverVersion_v2", -1);
    if (r != OK) return r;
    *v = S.cuda;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    if (!initialized) return UNINIT;
    nvmlReturn_t r = enter("nvmlDeviceGetCount_v2", -1);
    if (r != OK) return r;
    *n = (unsigned)S.ndev;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h)
{
    if (!initialized) return UNINIT;
    enter("nvmlDeviceGetHandleByIndex_v2", (int)i);
    if ((int)i >= S.ndev) return INVALID_ARG;
    *h = &handles[i];
    return OK;
}

static void uuid_of(int dev, char *out, unsigned len)
{
    snprintf(out, len, "GPU-%08x-1111-2222-3333-%012x", 0xfa4e0000u + (unsigned)dev, (unsigned)dev);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, void **h)
{
    if (!initialized) return UNINIT;
    enter("nvmlDeviceGetHandleByUUID", -1);
    for (int m = 0; m < S.nmig; m++)
        if (!strcmp(uuid, S.mig_uuid[m])) {
            mig_handles[m] = (struct fdev){ S.mig_parent[m], m };
            *h = &mig_handles[m];
            return OK;
        }
    for (int d = 0; d < S.ndev; d++) {
        char u[96];
        uuid_of(d, u, sizeof u);
        if (!strcmp(u, uuid)) {
            *h = &handles[d];
            return OK;
        }
    }
    return NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(void *mh, void **h)
{
    struct fdev *m = mh;
    if (!(m >= mig_handles && m < mig_handles + MAXDEV)) return INVALID_ARG;
    if (m->index < 0 || m->index >= S.ndev) return INVALID_ARG;
    *h = &handles[m->index];
    return OK;
}

nvmlReturn_t nvmlDeviceGetIndex(void *h, unsigned *i)
{
    DEVCALL("nvmlDeviceGetIndex", h);
    *i = (unsigned)dev;
    return OK;
}

nvmlReturn_t nvmlDeviceGetName(void *h, char *name, unsigned len)
{
    DEVCALL("nvmlDeviceGetName", h);
    if (S.names[dev][0]) snprintf(name, len, "%s", S.names[dev]);
    else snprintf(name, len, "Fake GPU %d", dev);
    return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(void *h, char *uuid, unsigned len)
{
    DEVCALL("nvmlDeviceGetUUID", h);
    uuid_of(dev, uuid, len);
    return OK;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *h, nvmlPciInfo_t *p)
{
    DEVCALL("nvmlDeviceGetPciInfo_v3", h);
    memset(p, 0, sizeof *p);
    p->bus = 0x10 + (unsigned)dev;
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
    return OK;
}

nvmlReturn_t nvmlDeviceGetComputeMode(void *h, int *mode)
{
    DEVCALL("nvmlDeviceGetComputeMode", h);
    *mode = dev % 2 ? 3 : 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void *h, int *ma, int *mi)
{
    DEVCALL("nvmlDeviceGetCudaComputeCapability", h);
    *ma = 9;
    *mi = 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *v)
{
    DEVCALL("nvmlDeviceGetEnforcedPowerLimit", h);
    *v = 700000;
    return OK;
}

static unsigned long long dev_used(int dev)
{
    unsigned long long used = 512ULL << 20;          /* the driver's own share */
    for (int i = 0; i < S.nprocs; i++)
        if (S.procs[i].dev == dev) used += S.procs[i].mem;
    return used;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void *h, nvmlMemory_t *m)
{
    DEVCALL("nvmlDeviceGetMemoryInfo", h);
    m->total = 80ULL << 30;
    m->used = dev_used(dev);
    m->free = m->total - m->used;
    return OK;
}

nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(void *h, nvmlBAR1Memory_t *b)
{
    DEVCALL("nvmlDeviceGetBAR1MemoryInfo", h);
    b->bar1Total = 128ULL << 30;
    b->bar1Used = 4ULL << 20;
    b->bar1Free = b->bar1Total - b->bar1Used;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned *v)
{
    DEVCALL("nvmlDeviceGetMaxClockInfo", h);
    static const unsigned mhz[4] = { 1980, 1980, 2619, 1755 };
    if (type < 0 || type > 3) return INVALID_ARG;
    *v = mhz[type];
    return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(void *h, int type, unsigned *v)
{
    DEVCALL("nvmlDeviceGetClockInfo", h);
    static const unsigned mhz[4] = { 1410, 1410, 2619, 1275 };
    if (type < 0 || type > 3) return INVALID_ARG;
    *v = mhz[type];
    return OK;
}

nvmlReturn_t nvmlDeviceGetMigMode(void *h, unsigned *cur, unsigned *pend)
{
    DEVCALL("nvmlDeviceGetMigMode", h);
    int on = 0;
    for (int m = 0; m < S.nmig; m++)
        if (S.mig_parent[m] == dev) on = 1;
    *cur = *pend = (unsigned)on;
    return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(void *h, int sensor, unsigned *t)
{
    DEVCALL("nvmlDeviceGetTemperature", h);
    if (sensor != 0) return INVALID_ARG;
    *t = 40 + (unsigned)dev;
    return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(void *h, unsigned *p)
{
    DEVCALL("nvmlDeviceGetPowerUsage", h);
    *p = 100000 + 1000 * (unsigned)dev;
    return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(void *h, nvmlUtilization_t *u)
{
    DEVCALL("nvmlDeviceGetUtilizationRates", h);
    u->gpu = S.util_gpu[dev];
    u->memory = S.util_mem[dev];
    return OK;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(void *h, int counter, unsigned *v)
{
    DEVCALL("nvmlDeviceGetPcieThroughput", h);
    struct timespec ts = { 0, 20 * 1000 * 1000 };   /* NVML measures over 20 ms */
    nanosleep(&ts, NULL);
    *v = counter == 0 ? 1000 + (unsigned)dev : 2000 + (unsigned)dev;
    return OK;
}

static nvmlReturn_t procs(void *h, unsigned *count, nvmlProcessInfo_t *out, int graphics,
                          const char *name)
{
    DEVCALL(name, h);
    unsigned n = 0;
    for (int i = 0; i < S.nprocs; i++)
        if (S.procs[i].dev == dev && S.procs[i].graphics == graphics) n++;
    if (!out || *count < n) {
        *count = n;
        return n ? INSUFFICIENT : OK;
    }
    unsigned k = 0;
    for (int i = 0; i < S.nprocs; i++)
        if (S.procs[i].dev == dev && S.procs[i].graphics == graphics)
            out[k++] = (nvmlProcessInfo_t){ S.procs[i].pid, S.procs[i].mem, 0xffffffffu, 0xffffffffu };
    *count = n;
    return OK;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *c, nvmlProcessInfo_t *o)
{
    return procs(h, c, o, 0, "nvmlDeviceGetComputeRunningProcesses_v3");
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(void *h, unsigned *c, nvmlProcessInfo_t *o)
{
    return procs(h, c, o, 1, "nvmlDeviceGetGraphicsRunningProcesses_v3");
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(void *h, nvmlProcessUtilizationSample_t *u,
                                             unsigned *count, unsigned long long last)
{
    DEVCALL("nvmlDeviceGetProcessUtilization", h);
    unsigned long long ts = now_us();
    unsigned n = 0;
    for (int i = 0; i < S.nprocs; i++)
        if (S.procs[i].dev == dev && S.procs[i].sm >= 0 && ts > last) n++;
    if (n == 0) return NOT_FOUND;
    if (!u || *count < n) {
        *count = n;
        return INSUFFICIENT;
    }
    unsigned k = 0;
    for (int i = 0; i < S.nprocs; i++)
        if (S.procs[i].dev == dev && S.procs[i].sm >= 0 && ts > last)
            u[k++] = (nvmlProcessUtilizationSample_t){ S.procs[i].pid, ts, (unsigned)S.procs[i].sm,
                     (unsigned)S.procs[i].mu, (unsigned)S.procs[i].enc, (unsigned)S.procs[i].dec };
    *count = n;
    return OK;
}
