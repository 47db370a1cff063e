/* nodemetrics.c — the node collector (see nodemetrics.h): reads /proc and
 * the GPU backends of src/gpu once per interval on its own thread and hands
 * the points to the server's ingest function. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "nodemetrics.h"
#include "gpu/gpu.h"
#include "util/log.h"

#define NODE_MAX_GPUS   64
#define NODE_MAX_POINTS (4 + 3 * NODE_MAX_GPUS)

struct node_gpu {
    gpu_backend *b;
    int i;
    uint64_t total_mem;
    char id[16];
};

struct node_collector {
    node_config cfg;
    char host[256];
    char proc_root[1024];
    uid_t uid;
    gpu_backend *backends[2];
    int nbackends;
    struct node_gpu gpus[NODE_MAX_GPUS];
    int ngpus;
    gpu_stats *st;                          /* one, reused (large) */
    unsigned long long cpu_busy, cpu_total; /* previous /proc/stat reading */
    int have_cpu;
    store_tag tags[1 + NODE_MAX_GPUS][2];
    store_point pts[NODE_MAX_POINTS];

    node_ingest_fn fn;
    void *arg;
    pthread_t thread;
    int running, stop;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

static int gpu_job_none(void *arg, pid_t pid)
{
    (void)arg;
    (void)pid;
    return 0;
}
static int gpu_job_pids(void *arg, pid_t *out, int max)
{
    (void)arg;
    (void)out;
    (void)max;
    return 0;
}

static FILE *proc_open(node_collector *nc, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/proc/%s", nc->proc_root, name);
    return fopen(path, "re");
}

/* Sum of the jiffies of the "cpu" line: busy = total - idle - iowait. */
static int read_cpu(node_collector *nc, unsigned long long *busy, unsigned long long *total)
{
    FILE *f = proc_open(nc, "stat");
    if (!f) return -1;
    char line[512];
    int ok = -1;
    if (fgets(line, sizeof line, f) && !strncmp(line, "cpu ", 4)) {
        unsigned long long v[10] = {0};
        int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
        if (n >= 4) {
            /* guest and guest_nice (8, 9) are already counted in user and nice */
            unsigned long long t = 0;
            for (int i = 0; i < n && i < 8; i++) t += v[i];
            *total = t;
            *busy = t - v[3] - (n > 4 ? v[4] : 0);
            ok = 0;
        }
    }
    fclose(f);
    return ok;
}

static int read_load(node_collector *nc, double *load1)
{
    FILE *f = proc_open(nc, "loadavg");
    if (!f) return -1;
    int ok = fscanf(f, "%lf", load1) == 1 ? 0 : -1;
    fclose(f);
    return ok;
}

static int read_mem(node_collector *nc, double *pct)
{
    FILE *f = proc_open(nc, "meminfo");
    if (!f) return -1;
    char line[256];
    long long total = -1, avail = -1, v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %lld", &v) == 1)
            total = v;
        else if (sscanf(line, "MemAvailable: %lld", &v) == 1)
            avail = v;
    }
    fclose(f);
    if (total <= 0 || avail < 0) return -1;
    *pct = round((double)(total - avail) / (double)total * 1000.0) / 10.0; /* psutil: 1 decimal */
    return 0;
}

static int count_procs(node_collector *nc)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/proc", nc->proc_root);
    DIR *d = opendir(path);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        struct stat sb;
        /* Dragon counts its user's processes; a service running as root
         * counts every process of the node */
        if (nc->uid == 0 || (fstatat(dirfd(d), e->d_name, &sb, 0) == 0 && sb.st_uid == nc->uid))
            n++;
    }
    closedir(d);
    return n;
}

static void open_gpus(node_collector *nc)
{
    gpu_config gc; /* the backends copy it */
    memset(&gc, 0, sizeof gc);
    gc.all_devices = 1;
    gc.all_procs = 1;
    gc.verbose = nc->cfg.verbose;
    gc.nvml_library = getenv("JOBSCOPE_NVML_LIBRARY");
    gc.sysfs_root = getenv("JOBSCOPE_SYSFS_ROOT") ? getenv("JOBSCOPE_SYSFS_ROOT") : "";
    gc.proc_root = nc->proc_root;
    char e1[256] = "", e2[256] = "";
    gpu_backend *b = gpu_nvml_open(&gc, e1, sizeof e1);
    if (b) nc->backends[nc->nbackends++] = b;
    b = gpu_drm_open(&gc, e2, sizeof e2);
    if (b) nc->backends[nc->nbackends++] = b;
    if (!nc->nbackends) js_log(nc->cfg.verbose, NULL, "node metrics: no GPU (%s; %s)", e1, e2);
    for (int k = 0; k < nc->nbackends; k++)
        for (int i = 0; i < nc->backends[k]->ndev && nc->ngpus < NODE_MAX_GPUS; i++) {
            gpu_dev_info info;
            memset(&info, 0, sizeof info);
            nc->backends[k]->info(nc->backends[k], i, &info);
            struct node_gpu *g = &nc->gpus[nc->ngpus++];
            g->b = nc->backends[k];
            g->i = i;
            g->total_mem = info.total_mem;
            /* Dragon tags a GPU with its index on the node */
            snprintf(g->id, sizeof g->id, "%d", nc->ngpus - 1);
        }
}

static void *collector_thread(void *arg);

node_collector *node_collector_start(const node_config *c, node_ingest_fn fn, void *arg, char *err,
                                     size_t errlen)
{
    node_collector *nc = calloc(1, sizeof *nc);
    if (!nc || !(nc->st = malloc(sizeof *nc->st))) {
        free(nc);
        snprintf(err, errlen, "node metrics: out of memory");
        return NULL;
    }
    nc->cfg = *c;
    if (c->host && *c->host)
        snprintf(nc->host, sizeof nc->host, "%s", c->host);
    else if (gethostname(nc->host, sizeof nc->host - 1) != 0)
        snprintf(nc->host, sizeof nc->host, "localhost");
    const char *pr = getenv("JOBSCOPE_PROC_ROOT");
    snprintf(nc->proc_root, sizeof nc->proc_root, "%s", pr ? pr : "");
    nc->uid = geteuid();
    if (!c->no_gpu) open_gpus(nc);
    nc->have_cpu = read_cpu(nc, &nc->cpu_busy, &nc->cpu_total) == 0;
    pthread_mutex_init(&nc->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&nc->cond, &ca);
    pthread_condattr_destroy(&ca);
    nc->fn = fn;
    nc->arg = arg;
    if (fn && c->interval_s > 0) {
        if (pthread_create(&nc->thread, NULL, collector_thread, nc) != 0) {
            snprintf(err, errlen, "node metrics: cannot start a thread");
            node_collector_stop(nc);
            return NULL;
        }
        nc->running = 1;
    }
    return nc;
}

int node_collector_gpus(const node_collector *nc)
{
    return nc ? nc->ngpus : 0;
}

static void add(node_collector *nc, int *n, int max, const char *metric, int tagset, double v,
                int64_t ts)
{
    if (*n >= max || !isfinite(v)) return;
    store_point *p = &nc->pts[*n];
    p->metric = metric;
    p->tags = nc->tags[tagset];
    p->ntags = tagset ? 2 : 1;
    p->ts_ms = ts;
    p->value = v;
    (*n)++;
}

int node_collector_sample(node_collector *nc, store_point *pts, int max)
{
    if (max > NODE_MAX_POINTS) max = NODE_MAX_POINTS;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t ts = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    int n = 0;
    nc->tags[0][0] = (store_tag){"host", nc->host};

    double v;
    if (read_load(nc, &v) == 0) add(nc, &n, max, "load_average", 0, v, ts);
    if (read_mem(nc, &v) == 0) add(nc, &n, max, "used_RAM", 0, v, ts);
    unsigned long long busy, total;
    if (read_cpu(nc, &busy, &total) == 0) {
        if (nc->have_cpu && total > nc->cpu_total && busy >= nc->cpu_busy)
            add(nc, &n, max, "cpu_percent", 0,
                round((double)(busy - nc->cpu_busy) / (double)(total - nc->cpu_total) * 1000.0) /
                    10.0,
                ts);
        nc->cpu_busy = busy;
        nc->cpu_total = total;
        nc->have_cpu = 1;
    }
    int np = count_procs(nc);
    if (np >= 0) add(nc, &n, max, "num_running_processes", 0, np, ts);

    const gpu_job none = {gpu_job_none, gpu_job_pids, NULL};
    for (int g = 0; g < nc->ngpus; g++) {
        struct node_gpu *d = &nc->gpus[g];
        if (d->b->stats(d->b, d->i, &none, nc->st) != 0) continue;
        int ts_set = 1 + g;
        nc->tags[ts_set][0] = (store_tag){"gpu", d->id}; /* sorted: gpu < host */
        nc->tags[ts_set][1] = (store_tag){"host", nc->host};
        if (nc->st->gpu_util != GPU_NA)
            add(nc, &n, max, "DeviceUtilization", ts_set, (double)nc->st->gpu_util, ts);
        if (nc->st->mem_used != GPU_NA && d->total_mem != GPU_NA && d->total_mem > 0)
            add(nc, &n, max, "DeviceMemoryUtilization", ts_set,
                round((double)nc->st->mem_used / (double)d->total_mem * 10000.0) / 100.0, ts);
        if (nc->st->power_mw != GPU_NA)
            add(nc, &n, max, "DevicePowerUsage", ts_set, nc->st->power_mw / 1000.0, ts);
    }
    if (pts != nc->pts) memcpy(pts, nc->pts, (size_t)n * sizeof *pts);
    return n;
}

static void *collector_thread(void *arg)
{
    node_collector *nc = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    unsigned long failures = 0;
    for (;;) {
        double iv = nc->cfg.interval_s;
        next.tv_sec += (time_t)iv;
        next.tv_nsec += (long)((iv - (time_t)iv) * 1e9);
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&nc->lock);
        while (!nc->stop && pthread_cond_timedwait(&nc->cond, &nc->lock, &next) != ETIMEDOUT) {}
        int stop = nc->stop;
        pthread_mutex_unlock(&nc->lock);
        if (stop) break;
        int n = node_collector_sample(nc, nc->pts, NODE_MAX_POINTS);
        if (n > 0 && nc->fn(nc->arg, nc->pts, (size_t)n) != 0 && failures++ % 60 == 0)
            js_log(1, NULL, "node metrics: %d points not stored", n);
        /* a late tick (suspended machine) starts a new schedule rather than a burst */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + 2) next = now;
    }
    return NULL;
}

void node_collector_stop(node_collector *nc)
{
    if (!nc) return;
    if (nc->running) {
        pthread_mutex_lock(&nc->lock);
        nc->stop = 1;
        pthread_cond_signal(&nc->cond);
        pthread_mutex_unlock(&nc->lock);
        pthread_join(nc->thread, NULL);
    }
    for (int k = 0; k < nc->nbackends; k++) nc->backends[k]->close(nc->backends[k], 0);
    pthread_mutex_destroy(&nc->lock);
    pthread_cond_destroy(&nc->cond);
    free(nc->st);
    free(nc);
}

/* ---- the module: a server task that runs the collector (--node-interval) ---- */

#include "server/server.h"

static int node_ingest(void *arg, const store_point *pts, size_t n)
{
    char err[256];
    return server_ingest_points(arg, pts, n, err, sizeof err);
}

/* The module's state: the running collector (the task's arg). */
typedef struct node_state {
    node_collector *running;
} node_state;

static int node_task_start(server *s, void *arg, char *err, size_t errlen)
{
    node_state *st = arg;
    node_config c = {
        .interval_s = s->cfg.node_interval_s, .host = s->host, .verbose = s->cfg.verbose};
    st->running = node_collector_start(&c, node_ingest, s, err, errlen);
    if (!st->running) return -1;
    if (s->cfg.verbose)
        js_log(1, NULL, "node metrics every %.3g s, %d GPU(s)", c.interval_s,
               node_collector_gpus(st->running));
    return 0;
}

static void node_task_stop(server *s, void *arg)
{
    node_state *st = arg;
    (void)s;
    node_collector_stop(st->running);
    st->running = NULL;
}

static int node_init(server *s, void **state, char *err, size_t errlen)
{
    if (s->cfg.node_interval_s <= 0) return 0;
    node_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *state = st;
    server_task t = {"node metrics", node_task_start, node_task_stop, st};
    if (server_task_add(s, &t) < 0) {
        snprintf(err, errlen, "node metrics: too many background tasks");
        return -1;
    }
    return 0;
}

static void node_fini(server *s, void *state)
{
    (void)s;
    free(state);
}

SERVER_MODULE(node_module, "node", node_init, node_fini)
