/* gpu_source.c — the "gpu" source (source.h): GPU monitoring for -G/--gpu.
 *
 * start() launches one init thread, so that a slow nvmlInit (a second or more
 * without persistence mode) never delays the job or its first sample.  It
 * opens the backends (gpu.h: NVML, then DRM), emits one
 * kickstart.inv.online.gpu.env per backend and starts one polling thread per
 * device at the monitor's interval; slow NVML calls (PCIe: ~20 ms per
 * direction) thus overlap across GPUs, and the process sampler never waits
 * for a GPU: sample() and record() only read the latest numbers under a
 * mutex.  Each device thread emits kickstart.inv.online.gpu.stats and works
 * out the job's share: GPU memory of the job's processes (proctree_contains)
 * and their utilisation from the per-process samples.  stop() asks each
 * thread for a final sample, waits a bounded time, abandons a thread stuck
 * in a driver call (the library then stays loaded), and emits
 * kickstart.inv.online.gpu.stats.max.  No GPU, no driver, a broken library:
 * one diagnostic line and no GPU events; the job never notices. */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "source.h"
#include "gpu/gpu.h"
#include "util/log.h"
#include "model/metric.h"

#define EV_GPU_ENV   "kickstart.inv.online.gpu.env"
#define EV_GPU_STATS "kickstart.inv.online.gpu.stats"
#define EV_GPU_MAX   "kickstart.inv.online.gpu.stats.max"

typedef struct gpu_src gpu_src;

typedef struct gpu_dev {
    gpu_src *src;
    gpu_backend *b;
    int i; /* index within the backend */
    gpu_dev_info info;
    pthread_t thread;
    int running, done, abandoned;
    gpu_stats st; /* the thread's own */
    mset set;     /* its gpu.stats event (model/metric.h) */
    /* below: under src->lock */
    int have;
    uint64_t job_mem;
    double job_util; /* percent, 100 = this GPU fully used by the job */
    int job_util_ok;
    double last_t; /* monotonic time of the previous sample */
    double gpu_seconds;
    unsigned long samples;
    uint64_t max_temp, max_power, max_mem, max_bar1, max_util, max_job_mem;
    double max_job_util;
} gpu_dev;

struct gpu_src {
    source base;
    gpu_config cfg;
    monitor_ctx *ctx;
    int quiet;
    char visible_buf[512]; /* CUDA_VISIBLE_DEVICES read from an attached job */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    int stopping;
    int detached; /* a thread was left behind: stop touching the job */
    /* pids seen in the job's tree: the final sample, taken after the job
     * ended, still attributes their last per-process samples to the job */
    pthread_mutex_t known_lock;
    pid_t known[1024];
    int nknown;
    int init_running, init_done, init_abandoned;
    pthread_t init_thread;
    gpu_backend *backends[2];
    int nbackends;
    gpu_dev *devs[GPU_MAX_DEVICES * 2];
    int ndev;
    double start_mono;
    uint64_t peak_mem;
    double peak_mem_ts;
    /* the job's GPU figures as the last sample gave them (gpu_again) */
    struct gpu_job_figures {
        uint64_t mem;
        double util;
        int have, util_ok;
    } put;
};

static void abs_time(struct timespec *ts, double mono_s)
{
    ts->tv_sec = (time_t)mono_s;
    ts->tv_nsec = (long)((mono_s - (double)ts->tv_sec) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int job_contains(void *arg, pid_t pid)
{
    gpu_src *s = arg;
    if (__atomic_load_n(&s->detached, __ATOMIC_ACQUIRE)) return 0;
    int live = s->ctx->tree && proctree_contains(s->ctx->tree, pid);
    int found = 0;
    pthread_mutex_lock(&s->known_lock);
    for (int k = 0; k < s->nknown && !found; k++)
        if (s->known[k] == pid) found = 1;
    if (live && !found && s->nknown < (int)(sizeof s->known / sizeof s->known[0]))
        s->known[s->nknown++] = pid;
    pthread_mutex_unlock(&s->known_lock);
    if (live) return 1;
    return found && __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE);
}

static int job_pids(void *arg, pid_t *out, int max)
{
    gpu_src *s = arg;
    if (__atomic_load_n(&s->detached, __ATOMIC_ACQUIRE)) return 0;
    return s->ctx->tree ? proctree_pids(s->ctx->tree, out, max) : 0;
}

static void put_u64(mset *e, const char *key, uint64_t v)
{
    if (v != GPU_NA) mset_put_u64(e, key, v);
}

/* A number the device may not give: GPU_NA leaves the field unset (out of
 * the event). */
static void set_u64(mset *m, metric_id id, uint64_t v)
{
    if (v != GPU_NA) mset_u64(m, id, v);
}

/* ---- events ---- */

static void emit_env(gpu_src *s, gpu_backend *b, gpu_dev **devs, int n)
{
    mset e;
    mset_init(&e);
    mset_clear(&e, EV_GPU_ENV, now_epoch());
    const char *vendor = n ? devs[0]->info.vendor : "";
    for (int k = 1; k < n; k++)
        if (strcmp(devs[k]->info.vendor, vendor)) vendor = "mixed";
    mset_put_str(&e, "vendor", vendor);
    mset_put_str(&e, "backend", b->name);
    if (!strcmp(b->name, "nvml")) {
        mset_put_str(&e, "nvidia_driver_version", b->driver_version[0] ? b->driver_version : NULL);
        if (b->cuda_version >= 0)
            mset_put_fixed(&e, "cuda_version", b->cuda_version, 1);
        else
            mset_put_null(&e, "cuda_version");
    } else {
        mset_put_str(&e, "driver_version", b->driver_version[0] ? b->driver_version : NULL);
    }
    mset_put_i64(&e, "device_count", n);
    mset_open_arr(&e, "devices");
    for (int k = 0; k < n; k++) {
        const gpu_dev_info *d = &devs[k]->info;
        mset_open_obj(&e, NULL);
        mset_put_i64(&e, "id", d->id);
        mset_put_str(&e, "vendor", d->vendor);
        if (d->driver[0]) mset_put_str(&e, "driver", d->driver);
        mset_put_str(&e, "name", d->name);
        if (d->uuid[0]) mset_put_str(&e, "uuid", d->uuid);
        mset_put_str(&e, "pci_bus_id", d->pci_bus_id);
        if (d->compute_mode[0]) mset_put_str(&e, "compute_mode", d->compute_mode);
        mset_put_bool(&e, "is_cuda_capable", d->cuda_major >= 0);
        if (d->cuda_major >= 0)
            mset_put_fixed(&e, "cuda_capability", d->cuda_major + d->cuda_minor / 10.0, 1);
        put_u64(&e, "power_limit", d->power_limit_mw);
        put_u64(&e, "total_memory", d->total_mem);
        put_u64(&e, "total_bar1_memory", d->total_bar1);
        put_u64(&e, "max_gpu_clock", d->max_gpu_clock);
        put_u64(&e, "max_sm_clock", d->max_sm_clock);
        put_u64(&e, "max_mem_clock", d->max_mem_clock);
        put_u64(&e, "max_video_clock", d->max_video_clock);
        if (d->mig_mode >= 0) mset_put_bool(&e, "mig_mode", d->mig_mode);
        if (d->mig_uuid[0]) mset_put_str(&e, "mig_uuid", d->mig_uuid);
        mset_close(&e);
    }
    mset_close(&e);
    s->ctx->emit(s->ctx, &e);
    mset_free(&e);
}

/* The job's share of one interval; returns the job's utilisation source. */
static const char *job_share(gpu_src *s, const gpu_stats *st, uint64_t *mem, int *nprocs,
                             double util[4], int *util_ok)
{
    const gpu_job job = {job_contains, job_pids, s};
    *mem = 0;
    *nprocs = 0;
    for (int k = 0; k < st->nprocs; k++) {
        const gpu_proc *p = &st->procs[k];
        if (!job.contains(job.arg, p->pid)) continue;
        int dup = 0; /* one process in both lists: count it once */
        for (int j = 0; j < k; j++)
            if (st->procs[j].pid == p->pid) dup = 1;
        if (dup) continue;
        (*nprocs)++;
        uint64_t m = p->mem == GPU_NA ? 0 : p->mem;
        for (int j = k + 1; j < st->nprocs; j++)
            if (st->procs[j].pid == p->pid && st->procs[j].mem != GPU_NA && st->procs[j].mem > m)
                m = st->procs[j].mem;
        *mem += m;
    }
    for (int c = 0; c < 4; c++) util[c] = -1;
    *util_ok = 0;
    if (st->samples_ok) {
        /* per pid: mean of its samples; then summed over the job's pids */
        double sum[4] = {0, 0, 0, 0};
        int any[4] = {0, 0, 0, 0};
        for (int k = 0; k < st->nsamples; k++) {
            pid_t pid = st->samples[k].pid;
            int first = 1;
            for (int j = 0; j < k; j++)
                if (st->samples[j].pid == pid) first = 0;
            if (!first || !job.contains(job.arg, pid)) continue;
            double acc[4] = {0, 0, 0, 0};
            int cnt[4] = {0, 0, 0, 0};
            for (int j = k; j < st->nsamples; j++) {
                if (st->samples[j].pid != pid) continue;
                const int v[4] = {st->samples[j].sm, st->samples[j].mem, st->samples[j].enc,
                                  st->samples[j].dec};
                for (int c = 0; c < 4; c++)
                    if (v[c] >= 0) {
                        acc[c] += v[c];
                        cnt[c]++;
                    }
            }
            for (int c = 0; c < 4; c++)
                if (cnt[c]) {
                    sum[c] += acc[c] / cnt[c];
                    any[c] = 1;
                }
        }
        for (int c = 0; c < 4; c++) {
            util[c] = sum[c] > 100 ? 100 : sum[c];
            if (!any[c] && c > 0 && st->nsamples) util[c] = -1;
        }
        if (util[0] < 0) util[0] = 0;
        *util_ok = 1;
        return "process";
    }
    /* No per-process samples: the device's utilisation is the job's only when
     * the job is the device's only user. */
    if (*nprocs > 0 && st->others_known && st->other_procs == 0 && st->gpu_util != GPU_NA) {
        int others = 0;
        for (int k = 0; k < st->nprocs; k++)
            if (!job.contains(job.arg, st->procs[k].pid)) others = 1;
        if (!others) {
            util[0] = (double)st->gpu_util;
            if (st->mem_util != GPU_NA) util[1] = (double)st->mem_util;
            *util_ok = 1;
            return "device";
        }
    }
    return NULL;
}

static void put_procs(mset *e, const char *key, const gpu_stats *st, int graphics)
{
    mset_open_arr(e, key);
    for (int k = 0; k < st->nprocs; k++) {
        if (st->procs[k].graphics != graphics) continue;
        mset_open_obj(e, NULL);
        mset_put_i64(e, "pid", st->procs[k].pid);
        if (st->procs[k].mem != GPU_NA)
            mset_put_u64(e, "mem_usage", st->procs[k].mem);
        else
            mset_put_null(e, "mem_usage");
        mset_close(e);
    }
    mset_close(e);
}

static void put_pct(mset *e, const char *key, int v)
{
    if (v >= 0)
        mset_put_i64(e, key, v);
    else
        mset_put_null(e, key);
}

/* The device's numbers of gpu_stats, by catalogue field (pcie_* only with
 * --gpu-pcie). */
static const struct {
    metric_id id;
    size_t off;
} dev_fields[] = {
    {M_GPU_TEMP, offsetof(gpu_stats, temp)},
    {M_GPU_POWER_USAGE, offsetof(gpu_stats, power_mw)},
    {M_GPU_MEM_USAGE, offsetof(gpu_stats, mem_used)},
    {M_GPU_BAR1_MEM_USAGE, offsetof(gpu_stats, bar1_used)},
    {M_GPU_GPU_UTILIZATION, offsetof(gpu_stats, gpu_util)},
    {M_GPU_MEM_UTILIZATION, offsetof(gpu_stats, mem_util)},
    {M_GPU_GPU_CLOCK, offsetof(gpu_stats, gpu_clock)},
    {M_GPU_SM_CLOCK, offsetof(gpu_stats, sm_clock)},
    {M_GPU_MEM_CLOCK, offsetof(gpu_stats, mem_clock)},
    {M_GPU_VIDEO_CLOCK, offsetof(gpu_stats, video_clock)},
    {M_GPU_PCIE_TX, offsetof(gpu_stats, pcie_tx)},
    {M_GPU_PCIE_RX, offsetof(gpu_stats, pcie_rx)},
};

/* One interval of one device: query, emit, aggregate. */
static void dev_sample(gpu_dev *d)
{
    gpu_src *s = d->src;
    const gpu_job job = {job_contains, job_pids, s};
    gpu_stats *st = &d->st;
    double ts = now_epoch();
    double t0 = now_mono();
    d->b->stats(d->b, d->i, &job, st);
    double t1 = now_mono();

    pthread_mutex_lock(&s->lock);
    if (d->abandoned || s->detached) { /* the monitor has moved on */
        pthread_mutex_unlock(&s->lock);
        return;
    }
    uint64_t jmem;
    int jprocs, util_ok;
    double util[4];
    const char *how = job_share(s, st, &jmem, &jprocs, util, &util_ok);

    /* the event in the model (catalogue: src/model/catalogue.c), in its
     * order: the device, its numbers, its processes, the job's share */
    mset *m = &d->set;
    mset_clear(m, EV_GPU_STATS, ts);
    mset_label_str(m, "vendor", d->info.vendor, 0);
    mset_label_num(m, "id", d->info.id);
    mset_label_str(m, "name", d->info.name, 0);
    if (d->info.uuid[0]) mset_label_str(m, "uuid", d->info.uuid, 0);
    mset_label_str(m, "pci_bus_id", d->info.pci_bus_id, 0);
    if (d->info.compute_mode[0]) mset_label_str(m, "compute_mode", d->info.compute_mode, 0);
    if (d->info.mig_uuid[0]) mset_label_str(m, "mig_uuid", d->info.mig_uuid, 0);
    mset_f64(m, M_GPU_SAMPLING_DURATION, t1 - t0);
    for (size_t k = 0; k < sizeof dev_fields / sizeof dev_fields[0]; k++)
        if (s->cfg.pcie || dev_fields[k].id < M_GPU_PCIE_TX)
            set_u64(m, dev_fields[k].id, *(const uint64_t *)((const char *)st + dev_fields[k].off));
    put_procs(m, "compute_procs", st, 0);
    if (s->cfg.graphics_procs) put_procs(m, "graphics_procs", st, 1);
    if (st->others_known && !s->cfg.all_procs)
        mset_u64(m, M_GPU_OTHER_PROCS, (uint64_t)st->other_procs);
    if (s->cfg.proc_util) {
        mset_open_arr(m, "proc_samples");
        for (int k = 0; k < st->nsamples; k++) {
            const gpu_psample *p = &st->samples[k];
            mset_open_obj(m, NULL);
            mset_put_i64(m, "pid", p->pid);
            mset_put_u64(m, "sample_ts", p->ts_us);
            put_pct(m, "sm_util", p->sm);
            put_pct(m, "mem_util", p->mem);
            put_pct(m, "enc_util", p->enc);
            put_pct(m, "dec_util", p->dec);
            mset_close(m);
        }
        mset_close(m);
    }
    mset_u64(m, M_GPU_JOB_PROCS, (uint64_t)jprocs);
    mset_u64(m, M_GPU_JOB_MEM_USAGE, jmem);
    for (int c = 0; c < 4; c++) {
        if (util_ok && util[c] >= 0)
            mset_f64(m, (metric_id)(M_GPU_JOB_SM_UTIL + c), util[c]);
        else
            mset_null(m, (metric_id)(M_GPU_JOB_SM_UTIL + c));
    }
    mset_label_str(m, "job_util_source", how, MLABEL_SHOWN);
    if (st->nengines) {
        mset_open_obj(m, "job_engine_util");
        for (int k = 0; k < st->nengines; k++)
            mset_put_fixed(m, st->engines[k].name, st->engines[k].job_util, 1);
        mset_close(m);
    }

    {
        s->ctx->emit(s->ctx, m);
        double dt = t1 - (d->have ? d->last_t : s->start_mono);
        if (dt < 0) dt = 0;
        d->have = 1;
        d->last_t = t1;
        d->samples++;
        d->job_mem = jmem;
        d->job_util_ok = util_ok;
        d->job_util = util_ok ? util[0] : 0;
        if (util_ok) d->gpu_seconds += util[0] / 100.0 * dt;
#define UPMAX(field, v)                                                                            \
    if ((v) != GPU_NA && (d->field == GPU_NA || (v) > d->field)) d->field = (v)
        UPMAX(max_temp, st->temp);
        UPMAX(max_power, st->power_mw);
        UPMAX(max_mem, st->mem_used);
        UPMAX(max_bar1, st->bar1_used);
        UPMAX(max_util, st->gpu_util);
        UPMAX(max_job_mem, jmem);
#undef UPMAX
        if (util_ok && util[0] > d->max_job_util) d->max_job_util = util[0];
        uint64_t total = 0;
        for (int k = 0; k < s->ndev; k++)
            if (s->devs[k]->have) total += s->devs[k]->job_mem;
        if (total > s->peak_mem) {
            s->peak_mem = total;
            s->peak_mem_ts = ts;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

static void *dev_thread(void *arg)
{
    gpu_dev *d = arg;
    gpu_src *s = d->src;
    double interval = s->ctx->interval > 0 ? s->ctx->interval : 1.0;
    double next = now_mono();
    int final = 0;
    for (;;) {
        dev_sample(d);
        pthread_mutex_lock(&s->lock);
        if (final || s->stopping || d->abandoned) break;
        next += interval;
        double now = now_mono();
        while (next <= now) next += interval; /* a slow call: skip the missed ticks */
        struct timespec until;
        abs_time(&until, next);
        while (!s->stopping && now_mono() < next)
            if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT) break;
        final = s->stopping; /* woken by stop(): one last sample */
        pthread_mutex_unlock(&s->lock);
    }
    d->done = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void *init_thread(void *arg)
{
    gpu_src *s = arg;
    char err_nvml[256] = "", err_drm[256] = "";
    gpu_backend *bs[2];
    int nb = 0;
    bs[nb] = gpu_nvml_open(&s->cfg, err_nvml, sizeof err_nvml);
    if (bs[nb]) nb++;
    bs[nb] = gpu_drm_open(&s->cfg, err_drm, sizeof err_drm);
    if (bs[nb]) nb++;
    if (nb == 0)
        js_log(!s->quiet, "gpu", "no GPU monitored (%s; %s)", err_nvml, err_drm);
    else if (err_nvml[0] || err_drm[0])
        js_log(s->cfg.verbose, "gpu", "%s%s%s", err_nvml, err_nvml[0] && err_drm[0] ? "; " : "",
               err_drm);

    gpu_dev *mine[GPU_MAX_DEVICES * 2];
    int n = 0;
    for (int k = 0; k < nb; k++) {
        int first = n;
        for (int i = 0; i < bs[k]->ndev && n < GPU_MAX_DEVICES * 2; i++) {
            gpu_dev *d = calloc(1, sizeof *d);
            if (!d) break;
            d->src = s;
            d->b = bs[k];
            d->i = i;
            bs[k]->info(bs[k], i, &d->info);
            d->max_temp = d->max_power = d->max_mem = d->max_bar1 = d->max_util = GPU_NA;
            d->max_job_mem = GPU_NA;
            mset_init(&d->set);
            mine[n++] = d;
        }
        js_log(s->cfg.verbose, "gpu", "%s: %d device(s)", bs[k]->name, n - first);
    }
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < nb; k++) s->backends[s->nbackends++] = bs[k];
    /* A job shorter than nvmlInit still gets its env event and one sample
     * per device (stop() waits for this, within its bound). */
    if (!s->init_abandoned) {
        for (int k = 0; k < nb; k++) {
            gpu_dev *group[GPU_MAX_DEVICES * 2];
            int g = 0;
            for (int i = 0; i < n; i++)
                if (mine[i]->b == bs[k]) group[g++] = mine[i];
            emit_env(s, bs[k], group, g);
        }
    }
    for (int i = 0; i < n; i++) {
        s->devs[s->ndev++] = mine[i];
        if (!s->init_abandoned && pthread_create(&mine[i]->thread, NULL, dev_thread, mine[i]) == 0)
            mine[i]->running = 1;
    }
    s->init_done = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- source ops ---- */

static source *gpu_open(monitor_ctx *ctx, const void *config);
static void gpu_start(source *base, monitor_ctx *ctx);
static void gpu_sample_hook(source *base, monitor_ctx *ctx, const tree_sample *ts, mset *ev);
static int gpu_again(source *base, monitor_ctx *ctx, const tree_sample *ts);
static void gpu_stop(source *base, monitor_ctx *ctx);
static void gpu_record(source *base, monitor_ctx *ctx, mset *rec);
static void gpu_close(source *base);

const source_ops gpu_source_ops = {
    .name = "gpu",
    .open = gpu_open,
    .start = gpu_start,
    .sample = gpu_sample_hook,
    .again = gpu_again,
    .stop = gpu_stop,
    .record = gpu_record,
    .close = gpu_close,
};

static const char *env_or(const char *a, const char *b)
{
    const char *v = getenv(a);
    return v ? v : b ? getenv(b) : NULL;
}

static source *gpu_open(monitor_ctx *ctx, const void *config)
{
    const gpu_source_config *o = config;
    if (!o->mode) return NULL;
    gpu_src *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base.ops = &gpu_source_ops;
    s->ctx = ctx;
    s->quiet = ctx->quiet;
    gpu_config *c = &s->cfg;
    c->all_devices = o->mode == 2;
    c->graphics_procs = o->graphics_procs;
    c->proc_util = o->proc_util;
    c->pcie = o->pcie;
    c->all_procs = o->all_procs;
    c->verbose = ctx->verbose;
    c->nvml_library = getenv("JOBSCOPE_NVML_LIBRARY");
    c->sysfs_root = env_or("JOBSCOPE_SYSFS_ROOT", NULL);
    c->proc_root = env_or("JOBSCOPE_PROC_ROOT", NULL);
    if (!c->sysfs_root) c->sysfs_root = "";
    if (!c->proc_root) c->proc_root = "";
    c->cuda_visible = getenv("CUDA_VISIBLE_DEVICES");
    if (!c->cuda_visible && (c->cuda_visible = getenv("NVIDIA_VISIBLE_DEVICES")))
        c->visible_is_nvidia = 1;
    c->amd_visible = env_or("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES");
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->known_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    return &s->base;
}

/* attach: the job's GPUs are those of its own environment. */
static void gpu_attach_visible(gpu_src *s, pid_t pid)
{
    char path[64], env[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    ssize_t n = gpu_read_file("", path, env, sizeof env);
    if (n <= 0) return;
    const char *nv = NULL;
    for (char *p = env; p < env + n; p += strlen(p) + 1) {
        if (!strncmp(p, "CUDA_VISIBLE_DEVICES=", 21)) {
            snprintf(s->visible_buf, sizeof s->visible_buf, "%s", p + 21);
            s->cfg.cuda_visible = s->visible_buf;
            s->cfg.visible_is_nvidia = 0;
            return;
        }
        if (!strncmp(p, "NVIDIA_VISIBLE_DEVICES=", 23)) nv = p + 23;
    }
    if (nv && !getenv("CUDA_VISIBLE_DEVICES")) {
        snprintf(s->visible_buf, sizeof s->visible_buf, "%s", nv);
        s->cfg.cuda_visible = s->visible_buf;
        s->cfg.visible_is_nvidia = 1;
    }
}

static void gpu_start(source *base, monitor_ctx *ctx)
{
    gpu_src *s = (gpu_src *)base;
    s->start_mono = now_mono();
    if (!ctx->run_mode && !getenv("CUDA_VISIBLE_DEVICES")) gpu_attach_visible(s, ctx->root);
    if (pthread_create(&s->init_thread, NULL, init_thread, s) == 0) s->init_running = 1;
}

/* The job's GPU memory and utilisation now, over every device. */
static struct gpu_job_figures gpu_job_now(gpu_src *s)
{
    struct gpu_job_figures f = {0, 0, 0, 0};
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < s->ndev; k++) {
        gpu_dev *d = s->devs[k];
        if (!d->have) continue;
        f.have = 1;
        f.mem += d->job_mem;
        if (d->job_util_ok) {
            f.util += d->job_util;
            f.util_ok = 1;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return f;
}

static void gpu_sample_hook(source *base, monitor_ctx *ctx, const tree_sample *ts, mset *ev)
{
    gpu_src *s = (gpu_src *)base;
    struct gpu_job_figures f = gpu_job_now(s);
    s->put = f;
    if (!f.have) return; /* nothing measured yet (or no GPU) */
    mset_u64(ev, M_GPU_MEM, f.mem);
    if (f.util_ok)
        mset_f64(ev, M_GPU_UTIL, f.util);
    else
        mset_null(ev, M_GPU_UTIL);
}

/* A still job's sample: the GPUs' figures stand when they are those of the
 * last sample (a kernel the job queued may run while none of its CPUs do). */
static int gpu_again(source *base, monitor_ctx *ctx, const tree_sample *ts)
{
    gpu_src *s = (gpu_src *)base;
    struct gpu_job_figures f = gpu_job_now(s);
    return f.have == s->put.have && f.mem == s->put.mem && f.util_ok == s->put.util_ok &&
           (f.util == s->put.util || (f.util != f.util && s->put.util != s->put.util));
}

static void gpu_stop(source *base, monitor_ctx *ctx)
{
    gpu_src *s = (gpu_src *)base;
    /* How long the end of the job may wait for a GPU: a final sample normally
     * takes milliseconds; a driver stuck in a call is left behind. */
    double wait = ctx->interval > 2 ? 2 : ctx->interval;
    if (wait < 1) wait = 1;
    double deadline = now_mono() + wait;
    struct timespec until;
    abs_time(&until, deadline);
    pthread_mutex_lock(&s->lock);
    __atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->cond);
    while (s->init_running && !s->init_done)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT) break;
    if (s->init_running && !s->init_done) {
        s->init_abandoned = 1;
        js_log(!s->quiet, "gpu", "the GPU library did not answer; giving up on it");
    }
    for (;;) {
        int pending = 0;
        for (int k = 0; k < s->ndev; k++)
            if (s->devs[k]->running && !s->devs[k]->done) pending = 1;
        if (!pending) break;
        if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT) break;
    }
    int stuck = 0;
    for (int k = 0; k < s->ndev; k++) {
        gpu_dev *d = s->devs[k];
        if (d->running && !d->done) {
            d->abandoned = 1;
            stuck++;
        }
    }
    if (stuck || s->init_abandoned) __atomic_store_n(&s->detached, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->lock);
    if (s->init_running) {
        if (s->init_abandoned)
            pthread_detach(s->init_thread);
        else
            pthread_join(s->init_thread, NULL);
    }
    for (int k = 0; k < s->ndev; k++) {
        gpu_dev *d = s->devs[k];
        if (!d->running) continue;
        if (d->abandoned)
            pthread_detach(d->thread);
        else
            pthread_join(d->thread, NULL);
    }
    if (stuck)
        js_log(!s->quiet, "gpu", "%d device(s) stuck in a driver call at the end: left behind",
               stuck);
    if (s->init_abandoned) return;

    /* kickstart.inv.online.gpu.stats.max, one per backend */
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < s->nbackends; k++) {
        mset e;
        mset_init(&e);
        mset_clear(&e, EV_GPU_MAX, now_epoch());
        const char *vendor = NULL;
        for (int i = 0; i < s->ndev; i++)
            if (s->devs[i]->b == s->backends[k])
                vendor = !vendor || !strcmp(vendor, s->devs[i]->info.vendor)
                             ? s->devs[i]->info.vendor
                             : "mixed";
        mset_put_str(&e, "vendor", vendor ? vendor : "");
        mset_put_str(&e, "backend", s->backends[k]->name);
        mset_open_arr(&e, "devices");
        for (int i = 0; i < s->ndev; i++) {
            gpu_dev *d = s->devs[i];
            if (d->b != s->backends[k]) continue;
            mset_open_obj(&e, NULL);
            mset_put_i64(&e, "id", d->info.id);
            mset_put_str(&e, "vendor", d->info.vendor);
            mset_put_str(&e, "name", d->info.name);
            if (d->info.uuid[0]) mset_put_str(&e, "uuid", d->info.uuid);
            mset_put_str(&e, "pci_bus_id", d->info.pci_bus_id);
            put_u64(&e, "max_temp", d->max_temp);
            put_u64(&e, "max_power_usage", d->max_power);
            put_u64(&e, "max_mem_usage", d->max_mem);
            put_u64(&e, "max_bar1_mem_usage", d->max_bar1);
            put_u64(&e, "max_gpu_utilization", d->max_util);
            put_u64(&e, "max_job_mem_usage", d->max_job_mem);
            mset_put_fixed(&e, "max_job_sm_util", d->max_job_util, 1);
            mset_put_fixed(&e, "job_gpu_seconds", d->gpu_seconds, 3);
            mset_put_u64(&e, "samples", d->samples);
            mset_close(&e);
        }
        mset_close(&e);
        ctx->emit(ctx, &e);
        mset_free(&e);
    }
    pthread_mutex_unlock(&s->lock);
}

static void gpu_record(source *base, monitor_ctx *ctx, mset *rec)
{
    gpu_src *s = (gpu_src *)base;
    pthread_mutex_lock(&s->lock);
    mset_open_obj(rec, "gpu");
    mset_put_i64(rec, "devices", s->ndev);
    double secs = 0, last = s->start_mono;
    unsigned long samples = 0;
    for (int k = 0; k < s->ndev; k++) {
        secs += s->devs[k]->gpu_seconds;
        samples += s->devs[k]->samples;
        if (s->devs[k]->have && s->devs[k]->last_t > last) last = s->devs[k]->last_t;
    }
    mset_put_u64(rec, "samples", samples);
    mset_put_u64(rec, "peak_mem", s->peak_mem);
    if (s->peak_mem_ts > 0)
        mset_put_fixed(rec, "peak_mem_ts", s->peak_mem_ts, 6);
    else
        mset_put_null(rec, "peak_mem_ts");
    double span = last - s->start_mono;
    if (samples && span > 0)
        mset_put_fixed(rec, "mean_util", 100.0 * secs / span, 2);
    else
        mset_put_null(rec, "mean_util");
    mset_put_fixed(rec, "gpu_seconds", secs, 3);
    mset_open_arr(rec, "per_device");
    for (int k = 0; k < s->ndev; k++) {
        gpu_dev *d = s->devs[k];
        mset_open_obj(rec, NULL);
        mset_put_str(rec, "vendor", d->info.vendor);
        mset_put_i64(rec, "id", d->info.id);
        if (d->info.uuid[0]) mset_put_str(rec, "uuid", d->info.uuid);
        mset_put_u64(rec, "peak_mem", d->max_job_mem == GPU_NA ? 0 : d->max_job_mem);
        mset_put_fixed(rec, "gpu_seconds", d->gpu_seconds, 3);
        mset_close(rec);
    }
    mset_close(rec);
    mset_close(rec);
    pthread_mutex_unlock(&s->lock);
}

static void gpu_close(source *base)
{
    gpu_src *s = (gpu_src *)base;
    if (s->init_abandoned) return; /* the init thread still owns the backends: leave all */
    int forget = 0;
    for (int k = 0; k < s->ndev; k++)
        if (s->devs[k]->abandoned) forget = 1;
    for (int k = 0; k < s->nbackends; k++) s->backends[k]->close(s->backends[k], forget);
    if (forget) return; /* a thread still holds pointers into s: leave it (we exit soon) */
    for (int k = 0; k < s->ndev; k++) {
        mset_free(&s->devs[k]->set);
        free(s->devs[k]);
    }
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->known_lock);
    free(s);
}
