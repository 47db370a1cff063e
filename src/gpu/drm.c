/* drm.c — the GPU backend for AMD and every other DRM driver, without a
 * vendor library:
 *   - device facts and counters from sysfs: /sys/class/drm/cardN/device/
 *     (amdgpu: gpu_busy_percent, mem_busy_percent, mem_info_vram_*, hwmon
 *     power/temperature/clocks, pp_dpm_* levels; i915/xe: gt_*_freq_mhz);
 *   - the job's share from /proc/PID/fdinfo: every open DRM file of a job's
 *     process publishes drm-client-id, drm-pdev, drm-engine-<class> (ns busy),
 *     drm-cycles-/drm-total-cycles- (xe), drm-engine-capacity-, and
 *     drm-memory-/drm-resident-/drm-total-<region>, which this file turns
 *     into per-process memory and per-engine utilisation (deltas between two
 *     intervals, clients deduplicated by id).
 * JOBSCOPE_SYSFS_ROOT and JOBSCOPE_PROC_ROOT prefix /sys and /proc, so the
 * tests read fixture trees (tests/fixtures/gpu/). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpu/gpu.h"
#include "util/clock.h"

#define DRM_MAX_CLIENTS 256

double (*gpu_drm_clock)(void) = now_mono;

typedef struct drm_client {
    unsigned long long id;
    pid_t pid;
    uint64_t mem; /* device-local bytes */
    int neng;
    char eng[GPU_MAX_ENGINES][24];
    uint64_t busy[GPU_MAX_ENGINES];  /* ns, or cycles */
    uint64_t total[GPU_MAX_ENGINES]; /* total cycles (xe), 0 for ns */
    unsigned cap[GPU_MAX_ENGINES];   /* engine capacity, >= 1 */
} drm_client;

typedef struct drm_dev {
    int card;
    char dir[64];    /* /sys/class/drm/cardN */
    char hwmon[160]; /* /sys/class/drm/cardN/device/hwmon/hwmonM, "" */
    char driver[32], pci[32], pci_id[16];
    /* fdinfo state of the previous interval */
    drm_client *prev;
    int nprev;
    double prev_t;
    drm_client *cur;
} drm_dev;

typedef struct drm_backend {
    gpu_backend b;
    gpu_config cfg;
    drm_dev dev[GPU_MAX_DEVICES];
} drm_backend;

static const char *drm_vendor(const char *driver)
{
    if (!strcmp(driver, "amdgpu") || !strcmp(driver, "radeon")) return "amd";
    if (!strcmp(driver, "i915") || !strcmp(driver, "xe")) return "intel";
    if (!strcmp(driver, "nvidia") || !strcmp(driver, "nouveau")) return "nvidia";
    return driver;
}

static uint64_t drm_u64(drm_backend *d, const char *dir, const char *file)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return gpu_read_u64(d->cfg.sysfs_root, path);
}

static void drm_str(drm_backend *d, const char *dir, const char *file, char *out, size_t len)
{
    char path[256], buf[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    out[0] = 0;
    if (gpu_read_file(d->cfg.sysfs_root, path, buf, sizeof buf) <= 0) return;
    size_t n = strcspn(buf, "\n");
    if (n >= len) n = len - 1;
    memcpy(out, buf, n);
    out[n] = 0;
}

/* Highest level of an amdgpu pp_dpm_* file ("2: 1800Mhz *"), MHz. */
static uint64_t drm_dpm_max(drm_backend *d, const char *dir, const char *file)
{
    char path[256], buf[1024];
    snprintf(path, sizeof path, "%s/device/%s", dir, file);
    if (gpu_read_file(d->cfg.sysfs_root, path, buf, sizeof buf) <= 0) return GPU_NA;
    uint64_t best = GPU_NA;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        unsigned long v = strtoul(colon + 1, NULL, 10);
        if (v && (best == GPU_NA || v > best)) best = v;
    }
    return best;
}

static uint64_t drm_div(uint64_t v, uint64_t by)
{
    return v == GPU_NA ? GPU_NA : (v + by / 2) / by;
}

/* ---- fdinfo ---- */

/* "1024 KiB" -> bytes. */
static uint64_t drm_size(const char *v)
{
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    if (!strncmp(end, "KiB", 3))
        n <<= 10;
    else if (!strncmp(end, "MiB", 3))
        n <<= 20;
    else if (!strncmp(end, "GiB", 3))
        n <<= 30;
    return n;
}

static int drm_engine_slot(drm_client *c, const char *name)
{
    for (int i = 0; i < c->neng; i++)
        if (!strcmp(c->eng[i], name)) return i;
    if (c->neng >= GPU_MAX_ENGINES) return -1;
    int i = c->neng++;
    snprintf(c->eng[i], sizeof c->eng[i], "%s", name);
    c->busy[i] = c->total[i] = 0;
    c->cap[i] = 1;
    return i;
}

static int drm_region_local(const char *r)
{
    return !strncmp(r, "vram", 4) || !strncmp(r, "local", 5);
}

/* Parses one fdinfo file. Returns 1 when it is a DRM client of device pci. */
static int drm_parse_fdinfo(char *text, const char *pci, int only_device, drm_client *c)
{
    int is_drm = 0, have_pdev = 0, pdev_ok = 0, have_id = 0;
    uint64_t local[3] = {0, 0, 0}, other[3] = {0, 0, 0}; /* resident, memory, total */
    int has_local[3] = {0, 0, 0}, has_other[3] = {0, 0, 0};
    char *save = NULL;
    memset(c, 0, sizeof *c);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon || strncmp(line, "drm-", 4)) continue;
        *colon = 0;
        char *key = line + 4, *val = colon + 1;
        while (*val == ' ' || *val == '\t') val++;
        if (!strcmp(key, "driver"))
            is_drm = 1;
        else if (!strcmp(key, "client-id")) {
            c->id = strtoull(val, NULL, 10);
            have_id = 1;
        } else if (!strcmp(key, "pdev")) {
            have_pdev = 1;
            pdev_ok = !strcasecmp(val, pci);
        } else if (!strncmp(key, "engine-capacity-", 16)) {
            int s = drm_engine_slot(c, key + 16);
            if (s >= 0) {
                c->cap[s] = (unsigned)strtoul(val, NULL, 10);
                if (!c->cap[s]) c->cap[s] = 1;
            }
        } else if (!strncmp(key, "engine-", 7)) {
            int s = drm_engine_slot(c, key + 7);
            if (s >= 0) c->busy[s] = strtoull(val, NULL, 10);
        } else if (!strncmp(key, "total-cycles-", 13)) {
            int s = drm_engine_slot(c, key + 13);
            if (s >= 0) c->total[s] = strtoull(val, NULL, 10);
        } else if (!strncmp(key, "cycles-", 7)) {
            int s = drm_engine_slot(c, key + 7);
            if (s >= 0) c->busy[s] = strtoull(val, NULL, 10);
        } else {
            int kind = !strncmp(key, "resident-", 9) ? 0
                       : !strncmp(key, "memory-", 7) ? 1
                       : !strncmp(key, "total-", 6)  ? 2
                                                     : -1;
            if (kind < 0) continue;
            const char *region = strchr(key, '-') + 1;
            if (!strcmp(region, "cpu")) continue; /* amdgpu: CPU-side copies */
            uint64_t bytes = drm_size(val);
            if (drm_region_local(region)) {
                local[kind] += bytes;
                has_local[kind] = 1;
            } else {
                other[kind] += bytes;
                has_other[kind] = 1;
            }
        }
    }
    if (!is_drm) return 0;
    if (have_pdev ? !pdev_ok : !only_device) return 0;
    if (!have_id) c->id = 0;
    for (int k = 0; k < 3; k++)
        if (has_local[k]) {
            c->mem = local[k];
            return 1;
        }
    for (int k = 0; k < 3; k++) /* integrated GPUs: no local region */
        if (has_other[k]) {
            c->mem = other[k];
            return 1;
        }
    return 1;
}

/* Adds the DRM clients of pid on this device to cur[] (deduplicated). */
static void drm_scan_pid(drm_backend *d, drm_dev *dv, pid_t pid, int *ncur)
{
    char path[256];
    const char *root = d->cfg.proc_root ? d->cfg.proc_root : "";
    snprintf(path, sizeof path, "%s/proc/%d/fd", root, (int)pid);
    DIR *dir = opendir(path);
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        char link[320], target[128];
        snprintf(link, sizeof link, "%s/%.32s", path, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (strncmp(target, "/dev/dri/", 9)) continue; /* cheap filter before fdinfo */
        char info[4096], rel[128];
        snprintf(rel, sizeof rel, "/proc/%d/fdinfo/%.32s", (int)pid, e->d_name);
        if (gpu_read_file(root, rel, info, sizeof info) <= 0) continue;
        drm_client c;
        if (!drm_parse_fdinfo(info, dv->pci, d->b.ndev == 1, &c)) continue;
        int dup = 0;
        for (int i = 0; i < *ncur; i++)
            if (c.id && dv->cur[i].id == c.id) dup = 1; /* one client, many fds/processes */
        if (dup || *ncur >= DRM_MAX_CLIENTS) continue;
        c.pid = pid;
        dv->cur[(*ncur)++] = c;
    }
    closedir(dir);
}

static int drm_class(const char *e)
{
    /* 0: compute/3D ("sm"), 1: encode, 2: decode, -1: other (copy, ...) */
    if (!strncmp(e, "gfx", 3) || !strcmp(e, "compute") || !strcmp(e, "render") ||
        !strcmp(e, "ccs") || !strcmp(e, "rcs"))
        return 0;
    if (!strncmp(e, "enc", 3) || !strcmp(e, "video-enhance") || !strcmp(e, "vecs")) return 1;
    if (!strncmp(e, "dec", 3) || !strcmp(e, "video") || !strcmp(e, "vcs") || !strncmp(e, "jpeg", 4))
        return 2;
    return -1;
}

static void drm_fdinfo(drm_backend *d, drm_dev *dv, const gpu_job *job, gpu_stats *s)
{
    int ncur = 0;
    if (!dv->cur && !(dv->cur = calloc(DRM_MAX_CLIENTS, sizeof *dv->cur))) return;
    double t = gpu_drm_clock();
    if (d->cfg.all_procs) {
        char path[256];
        snprintf(path, sizeof path, "%s/proc", d->cfg.proc_root ? d->cfg.proc_root : "");
        DIR *dir = opendir(path);
        struct dirent *e;
        while (dir && (e = readdir(dir)))
            if (isdigit((unsigned char)e->d_name[0]))
                drm_scan_pid(d, dv, (pid_t)atoi(e->d_name), &ncur);
        if (dir) closedir(dir);
    } else {
        pid_t pids[4096];
        int np = job->pids(job->arg, pids, 4096);
        for (int i = 0; i < np; i++) drm_scan_pid(d, dv, pids[i], &ncur);
    }
    s->others_known = d->cfg.all_procs;
    double dt = dv->prev ? t - dv->prev_t : 0;
    s->samples_ok = dv->prev != NULL && dt > 0;
    uint64_t ts_us = (uint64_t)time(NULL) * 1000000ULL;
    for (int i = 0; i < ncur; i++) {
        drm_client *c = &dv->cur[i];
        /* memory, one entry per pid */
        gpu_proc *p = NULL;
        for (int k = 0; k < s->nprocs; k++)
            if (s->procs[k].pid == c->pid) p = &s->procs[k];
        if (!p && s->nprocs < GPU_MAX_PROCS) {
            p = &s->procs[s->nprocs++];
            *p = (gpu_proc){c->pid, 0, 0};
        }
        if (p) p->mem += c->mem;
        if (!s->samples_ok) continue;
        const drm_client *o = NULL;
        for (int k = 0; k < dv->nprev; k++)
            if (dv->prev[k].id == c->id && dv->prev[k].pid == c->pid) o = &dv->prev[k];
        if (!o) continue; /* a new client: usage from the next interval */
        double cls[3] = {0, 0, 0};
        int seen[3] = {0, 0, 0};
        for (int e = 0; e < c->neng; e++) {
            int oe = -1;
            for (int k = 0; k < o->neng; k++)
                if (!strcmp(o->eng[k], c->eng[e])) oe = k;
            if (oe < 0 || c->busy[e] < o->busy[oe]) continue;
            double pct;
            if (c->total[e] > o->total[oe])
                pct = 100.0 * (double)(c->busy[e] - o->busy[oe]) /
                      (double)(c->total[e] - o->total[oe]);
            else if (c->total[e] == 0)
                pct = 100.0 * (double)(c->busy[e] - o->busy[oe]) * 1e-9 / dt;
            else
                continue;
            pct /= c->cap[e];
            if (pct > 100) pct = 100;
            int cl = drm_class(c->eng[e]);
            if (cl >= 0) {
                cls[cl] += pct;
                seen[cl] = 1;
            }
            int slot = -1;
            for (int k = 0; k < s->nengines; k++)
                if (!strcmp(s->engines[k].name, c->eng[e])) slot = k;
            if (slot < 0 && s->nengines < GPU_MAX_ENGINES) {
                slot = s->nengines++;
                snprintf(s->engines[slot].name, sizeof s->engines[slot].name, "%s", c->eng[e]);
                s->engines[slot].job_util = 0;
            }
            if (slot >= 0) s->engines[slot].job_util += pct;
        }
        gpu_psample *ps = NULL;
        for (int k = 0; k < s->nsamples; k++)
            if (s->samples[k].pid == c->pid) ps = &s->samples[k];
        if (!ps && s->nsamples < GPU_MAX_PROCS) {
            ps = &s->samples[s->nsamples++];
            *ps = (gpu_psample){c->pid, ts_us, -1, -1, -1, -1};
        }
        if (!ps) continue;
        int *dst[3] = {&ps->sm, &ps->enc, &ps->dec};
        for (int k = 0; k < 3; k++)
            if (seen[k]) {
                int v = (*dst[k] < 0 ? 0 : *dst[k]) + (int)(cls[k] + 0.5);
                *dst[k] = v > 100 ? 100 : v;
            }
    }
    for (int k = 0; k < s->nengines; k++)
        if (s->engines[k].job_util > 100) s->engines[k].job_util = 100;
    /* keep this interval's clients for the next delta */
    drm_client *swap = dv->prev;
    dv->prev = dv->cur;
    dv->nprev = ncur;
    dv->prev_t = t;
    dv->cur = swap;
}

/* ---- backend ops ---- */

static int drm_info(gpu_backend *b, int i, gpu_dev_info *o)
{
    drm_backend *d = (drm_backend *)b;
    drm_dev *dv = &d->dev[i];
    char dev[96];
    snprintf(dev, sizeof dev, "%s/device", dv->dir);
    memset(o, 0, sizeof *o);
    o->id = dv->card;
    snprintf(o->vendor, sizeof o->vendor, "%s", drm_vendor(dv->driver));
    snprintf(o->driver, sizeof o->driver, "%s", dv->driver);
    snprintf(o->pci_bus_id, sizeof o->pci_bus_id, "%s", dv->pci);
    drm_str(d, dev, "product_name", o->name, sizeof o->name);
    if (!o->name[0]) snprintf(o->name, sizeof o->name, "%s %s", dv->driver, dv->pci_id);
    char uid[64];
    drm_str(d, dev, "unique_id", uid, sizeof uid);
    if (uid[0]) snprintf(o->uuid, sizeof o->uuid, "GPU-%s", uid);
    o->cuda_major = o->cuda_minor = -1;
    o->mig_mode = -1;
    o->total_mem = drm_u64(d, dev, "mem_info_vram_total");
    o->total_bar1 = drm_u64(d, dev, "mem_info_vis_vram_total");
    o->power_limit_mw = dv->hwmon[0] ? drm_div(drm_u64(d, dv->hwmon, "power1_cap"), 1000) : GPU_NA;
    o->max_gpu_clock = drm_dpm_max(d, dv->dir, "pp_dpm_sclk");
    if (o->max_gpu_clock == GPU_NA) o->max_gpu_clock = drm_u64(d, dv->dir, "gt_max_freq_mhz");
    o->max_sm_clock = GPU_NA;
    o->max_mem_clock = drm_dpm_max(d, dv->dir, "pp_dpm_mclk");
    o->max_video_clock = GPU_NA;
    return 0;
}

static int drm_stats(gpu_backend *b, int i, const gpu_job *job, gpu_stats *s)
{
    drm_backend *d = (drm_backend *)b;
    drm_dev *dv = &d->dev[i];
    char dev[96];
    snprintf(dev, sizeof dev, "%s/device", dv->dir);
    gpu_stats_reset(s);
    s->gpu_util = drm_u64(d, dev, "gpu_busy_percent");
    s->mem_util = drm_u64(d, dev, "mem_busy_percent");
    s->mem_used = drm_u64(d, dev, "mem_info_vram_used");
    s->bar1_used = drm_u64(d, dev, "mem_info_vis_vram_used");
    if (dv->hwmon[0]) {
        uint64_t t = drm_u64(d, dv->hwmon, "temp1_input");
        s->temp = drm_div(t, 1000);
        uint64_t p = drm_u64(d, dv->hwmon, "power1_average");
        if (p == GPU_NA) p = drm_u64(d, dv->hwmon, "power1_input");
        s->power_mw = drm_div(p, 1000);
        s->gpu_clock = drm_div(drm_u64(d, dv->hwmon, "freq1_input"), 1000000);
        s->mem_clock = drm_div(drm_u64(d, dv->hwmon, "freq2_input"), 1000000);
    }
    if (s->gpu_clock == GPU_NA) s->gpu_clock = drm_u64(d, dv->dir, "gt_act_freq_mhz");
    drm_fdinfo(d, dv, job, s);
    return 0;
}

static void drm_close(gpu_backend *b, int forget)
{
    drm_backend *d = (drm_backend *)b;
    if (forget) return;
    for (int i = 0; i < d->b.ndev; i++) {
        free(d->dev[i].prev);
        free(d->dev[i].cur);
    }
    free(d);
}

static int drm_card_cmp(const void *a, const void *b)
{
    return ((const drm_dev *)a)->card - ((const drm_dev *)b)->card;
}

/* ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES: indices among the AMD cards or
 * GPU-<unique_id>; other vendors' cards are not affected. */
static int drm_amd_visible(drm_backend *d, int amd_index, const char *uuid)
{
    if (d->cfg.all_devices || !d->cfg.amd_visible) return 1;
    char tok[GPU_MAX_DEVICES][96];
    int n = gpu_visible_tokens(d->cfg.amd_visible, tok, GPU_MAX_DEVICES);
    if (n < 0) return 1;
    for (int k = 0; k < n; k++) {
        if (isdigit((unsigned char)tok[k][0]) && atoi(tok[k]) == amd_index) return 1;
        if (uuid[0] && !strcasecmp(tok[k], uuid)) return 1;
    }
    return 0;
}

gpu_backend *gpu_drm_open(const gpu_config *c, char *err, size_t errlen)
{
    drm_backend *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "DRM: out of memory");
        return NULL;
    }
    d->cfg = *c;
    if (!d->cfg.sysfs_root) d->cfg.sysfs_root = "";
    char path[512];
    snprintf(path, sizeof path, "%s/sys/class/drm", d->cfg.sysfs_root);
    DIR *dir = opendir(path);
    if (!dir) {
        snprintf(err, errlen, "DRM: no %s", path);
        free(d);
        return NULL;
    }
    struct dirent *e;
    int skipped = 0;
    while ((e = readdir(dir)) && d->b.ndev < GPU_MAX_DEVICES) {
        if (strncmp(e->d_name, "card", 4) || !e->d_name[4]) continue;
        char *end;
        long card = strtol(e->d_name + 4, &end, 10);
        if (*end) continue; /* card0-DP-1: a connector */
        drm_dev *dv = &d->dev[d->b.ndev];
        memset(dv, 0, sizeof *dv);
        dv->card = (int)card;
        snprintf(dv->dir, sizeof dv->dir, "/sys/class/drm/%.40s", e->d_name);
        char rel[128], ue[2048];
        snprintf(rel, sizeof rel, "%s/device/uevent", dv->dir);
        if (gpu_read_file(d->cfg.sysfs_root, rel, ue, sizeof ue) <= 0) continue;
        char *save = NULL;
        for (char *l = strtok_r(ue, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            if (!strncmp(l, "DRIVER=", 7))
                snprintf(dv->driver, sizeof dv->driver, "%s", l + 7);
            else if (!strncmp(l, "PCI_SLOT_NAME=", 14))
                snprintf(dv->pci, sizeof dv->pci, "%s", l + 14);
            else if (!strncmp(l, "PCI_ID=", 7))
                snprintf(dv->pci_id, sizeof dv->pci_id, "%s", l + 7);
        }
        if (!dv->driver[0]) continue;
        /* the proprietary driver publishes nothing useful here: NVML's job */
        if (!strcmp(dv->driver, "nvidia")) {
            skipped++;
            continue;
        }
        if (!strcmp(dv->driver, "simpledrm") || !strcmp(dv->driver, "vgem")) continue;
        d->b.ndev++;
    }
    closedir(dir);
    qsort(d->dev, (size_t)d->b.ndev, sizeof d->dev[0], drm_card_cmp);
    /* visible-device filter for AMD cards, then locate hwmon */
    int keep = 0, amd = 0;
    for (int i = 0; i < d->b.ndev; i++) {
        drm_dev *dv = &d->dev[i];
        char uid[64] = "", uuid[96] = "", devdir[96];
        snprintf(devdir, sizeof devdir, "%s/device", dv->dir);
        if (!strcmp(dv->driver, "amdgpu")) {
            drm_str(d, devdir, "unique_id", uid, sizeof uid);
            if (uid[0]) snprintf(uuid, sizeof uuid, "GPU-%s", uid);
            if (!drm_amd_visible(d, amd++, uuid)) continue;
        }
        char hw[512];
        snprintf(hw, sizeof hw, "%s%s/hwmon", d->cfg.sysfs_root, devdir);
        DIR *h = opendir(hw);
        struct dirent *he;
        while (h && (he = readdir(h)))
            if (!strncmp(he->d_name, "hwmon", 5)) {
                snprintf(dv->hwmon, sizeof dv->hwmon, "%s/hwmon/%.24s", devdir, he->d_name);
                break;
            }
        if (h) closedir(h);
        if (keep != i) d->dev[keep] = *dv;
        keep++;
    }
    d->b.ndev = keep;
    if (d->b.ndev == 0) {
        if (amd)
            snprintf(err, errlen, "DRM: ROCR/HIP_VISIBLE_DEVICES selects none of the AMD GPUs");
        else if (skipped)
            snprintf(err, errlen, "DRM: only cards of the nvidia driver (NVML's)");
        else
            snprintf(err, errlen, "DRM: no GPU under %s", path);
        free(d);
        return NULL;
    }
    d->b.name = "drm";
    d->b.cuda_version = -1;
    d->b.info = drm_info;
    d->b.stats = drm_stats;
    d->b.close = drm_close;
    /* amdgpu has no system-wide version file; the module's is the closest */
    char ver[80];
    if (gpu_read_file(d->cfg.sysfs_root, "/sys/module/amdgpu/version", ver, sizeof ver) > 0) {
        ver[strcspn(ver, "\n")] = 0;
        snprintf(d->b.driver_version, sizeof d->b.driver_version, "%s", ver);
    }
    return &d->b;
}
