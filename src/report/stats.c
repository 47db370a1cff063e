/* stats.c — `jobscope stats`: statistics over many jobs and right-sizing
 * advice (docs/views.md "Statistics and advice").
 *
 * Streaming: each event file is read, reduced to one row of figures and a
 * 20-point "average run" curve per metric, and freed before the next, so
 * memory grows with the number of jobs (about 0.5 kB each), never with the
 * number of events.  Per group (--by exe|xformation|tag:K) it prints the
 * distributions (p50/p90/p95/p99/max), the median and p10-p90 band of each
 * curve over normalised job time, and the requests (memory, cores, wall time,
 * GPUs) that would have fitted 95% and 99% of the runs with a margin, in
 * HTCondor, Slurm and Pegasus syntax, plus what recorded requests wasted.
 *
 * Only jobs that ran to their end make the figures: a job still running
 * (no end record yet) would pass its time so far for its wall time, and a
 * job stopped by a signal, a --limit or the OOM killer has its peaks capped;
 * both are counted and named, and a job that ran out of memory or time
 * raises the advice to what it would have needed (1.5 x what it had).  A
 * group of fewer than 5 runs carries a caution.  Cores are advised from the
 * job's own parallelism (CPU time plus the time it waited for a CPU, at most
 * its threads), not from the share a crowded node left it. */
#include "report/stats.h"
#include "report/stats_priv.h"
#include "report/assess.h"
#include "report/jobdata.h"
#include "report/request.h"
#include "report/svg.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <jansson.h>

#define EXIT_BAD 125

const char *const stats_met_name[NMET] = {
    "peak_memory", "cpu_time", "cpu_efficiency", "wall_time",       "cores_used", "cores_wanted",
    "io_read",     "io_write", "gpu_memory",     "gpu_utilization", "gpus"};
const char *const stats_met_title[NMET] = {"peak memory (own, no cache)",
                                           "CPU time",
                                           "CPU efficiency",
                                           "wall time",
                                           "cores used (CPU time / wall)",
                                           "cores wanted (+ CPU waits)",
                                           "read (rchar)",
                                           "written (wchar)",
                                           "GPU memory (peak)",
                                           "GPU utilisation (mean)",
                                           "GPUs used"};
const enum svg_unit stats_met_unit[NMET] = {SVG_BYTES, SVG_SECONDS, SVG_PERCENT, SVG_SECONDS,
                                            SVG_PLAIN, SVG_PLAIN,   SVG_BYTES,   SVG_BYTES,
                                            SVG_BYTES, SVG_PERCENT, SVG_PLAIN};

const char *const stats_curve_name[NCURVE] = {"cpu_percent", "memory", "io_rate", "gpu_util"};
const char *const stats_curve_title[NCURVE] = {"CPU %", "memory (RSS)", "I/O rate (read+write)",
                                               "GPU utilisation %"};
const enum svg_unit stats_curve_unit[NCURVE] = {SVG_PERCENT, SVG_BYTES, SVG_BYTES, SVG_PERCENT};

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

typedef struct group {
    char *key;
    size_t jobs;                  /* ran to their end: the figures */
    size_t running;               /* no end record yet: not counted */
    size_t stopped[3];            /* by a signal, a --limit, the OOM killer: not counted */
    double mem_floor, wall_floor; /* what jobs that ran out of memory / time needed at least */
    dvec m[NMET];
    dvec curve[NCURVE][NBINS];
    /* waste of recorded requests */
    size_t mem_req_n, mem_over, cpu_req_n, wall_req_n, wall_over, gpu_req_n;
    double mem_unused_frac, mem_unused_gibh, mem_req_gibh;
    double cpu_unused_coreh, cpu_req_coreh, wall_unused_s, gpu_req_h, gpu_used_h;
} group;

typedef struct stats {
    group *g;
    size_t ng, capg;
    const char *by;
    double margin;
    size_t files, bad_files, bad_lines;
} stats;

static void dpush(dvec *d, double x)
{
    if (isnan(x)) return;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        double *p = realloc(d->v, cap * sizeof *p);
        if (!p) return;
        d->v = p, d->cap = cap;
    }
    d->v[d->n++] = x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { STOP_SIGNAL, STOP_LIMIT, STOP_OOM };

static group *group_of(stats *st, const char *key)
{
    for (size_t i = 0; i < st->ng; i++)
        if (!strcmp(st->g[i].key, key)) return &st->g[i];
    if (st->ng == st->capg) {
        size_t cap = st->capg ? st->capg * 2 : 16;
        group *p = realloc(st->g, cap * sizeof *p);
        if (!p) return NULL;
        st->g = p, st->capg = cap;
    }
    group *g = &st->g[st->ng++];
    memset(g, 0, sizeof *g);
    g->key = strdup(key);
    g->mem_floor = g->wall_floor = NAN;
    return g;
}

static const char *group_key(const stats *st, const jobdata *j, char *buf, size_t len)
{
    const jd_summary *s = &j->sum;
    const char *by = st->by;
    if (!strcmp(by, "all")) return "all";
    if (!strcmp(by, "auto")) by = s->xformation[0] ? "xformation" : "exe";
    if (!strcmp(by, "exe")) {
        char first[256];
        const char *e = s->exe[0] ? s->exe : s->cmd;
        size_t k = strcspn(e, " ");
        snprintf(first, sizeof first, "%.*s", (int)(k < 255 ? k : 255), e);
        const char *sl = strrchr(first, '/');
        snprintf(buf, len, "%s", sl ? sl + 1 : first);
    } else if (!strcmp(by, "xformation")) {
        snprintf(buf, len, "%s", s->xformation);
    } else {
        json_t *v = json_object_get(j->tags, by + 4);
        snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
    }
    return buf[0] ? buf : "(none)";
}

/* One job's curve: mean of the samples in each of NBINS slices of its
 * normalised time; empty slices take the nearest earlier one (the first
 * ones the first filled). */
static void job_curve(const jobdata *j, int which, double out[NBINS])
{
    double sum[NBINS] = {0};
    int cnt[NBINS] = {0};
    double t0 = j->sum.start, dur = j->sum.duration;
    for (size_t i = 0; i < j->n; i++) {
        double v;
        switch (which) {
        case C_CPU:
            v = j->col[JD_CPU][i];
            break;
        case C_MEM:
            v = j->col[JD_RSS][i];
            break;
        case C_IO:
            v = j->col[JD_RCHAR_RATE][i] + j->col[JD_WCHAR_RATE][i];
            break;
        default:
            v = j->col[JD_GPU_UTIL][i];
            break;
        }
        if (isnan(v)) continue;
        double x = (j->col[JD_TS][i] - t0) / dur;
        int b = (int)floor(x * NBINS);
        if (b < 0) b = 0;
        if (b >= NBINS) b = NBINS - 1;
        sum[b] += v, cnt[b]++;
    }
    int first = -1;
    for (int b = 0; b < NBINS; b++) {
        out[b] = cnt[b] ? sum[b] / cnt[b] : (b ? out[b - 1] : NAN);
        if (cnt[b] && first < 0) first = b;
    }
    for (int b = 0; b < first; b++) out[b] = out[first];
}

static void add_job(stats *st, const jobdata *j)
{
    char kb[256];
    group *g = group_of(st, group_key(st, j, kb, sizeof kb));
    if (!g) return;
    const jd_summary *s = &j->sum;
    if (!s->has_end && !strcmp(s->type, "jobscope")) {
        g->running++; /* its wall time so far is no wall time */
        return;
    }
    if (s->stopped_by[0]) {
        g->stopped[!strcmp(s->stopped_by, "limit")      ? STOP_LIMIT
                   : !strcmp(s->stopped_by, "oom_kill") ? STOP_OOM
                                                        : STOP_SIGNAL]++;
        /* what it would have needed: at least 1.5 x what it had */
        jd_request r = assess_next_request(j, st->margin);
        if (!strcmp(s->stopped_by, "oom_kill") || !strcmp(s->stop_limit, "memory") ||
            !strcmp(s->stop_limit, "rss"))
            g->mem_floor = fmax(isnan(g->mem_floor) ? 0 : g->mem_floor, r.mem);
        if (!strcmp(s->stop_limit, "wall"))
            g->wall_floor = fmax(isnan(g->wall_floor) ? 0 : g->wall_floor, r.wall);
        return;
    }
    g->jobs++;
    double cores_used = s->duration > 0 ? s->cpu_time / s->duration : NAN;
    double vals[NMET] = {s->peak_mem,
                         s->cpu_time,
                         s->cpu_eff,
                         s->duration,
                         cores_used,
                         assess_cores_wanted(s),
                         s->rchar,
                         s->wchar,
                         s->gpu_peak_mem,
                         s->gpu_util_mean,
                         isnan(s->gpu_devices) ? 0 : s->gpu_devices};
    for (int m = 0; m < NMET; m++) dpush(&g->m[m], vals[m]);
    if (j->n >= 2 && s->duration > 0) {
        for (int c = 0; c < NCURVE; c++) {
            double out[NBINS];
            job_curve(j, c, out);
            for (int b = 0; b < NBINS; b++) dpush(&g->curve[c][b], out[b]);
        }
    }
    double wall_h = isnan(s->duration) ? 0 : s->duration / 3600;
    if (!isnan(s->req_mem) && s->req_mem > 0 && !isnan(s->peak_mem)) {
        double unused = fmax(0, s->req_mem - s->peak_mem);
        g->mem_req_n++;
        g->mem_over += s->peak_mem > s->req_mem;
        g->mem_unused_frac += unused / s->req_mem;
        g->mem_unused_gibh += unused / 1073741824.0 * wall_h;
        g->mem_req_gibh += s->req_mem / 1073741824.0 * wall_h;
    }
    if (!isnan(s->req_cpus) && s->req_cpus > 0 && !isnan(s->cpu_time)) {
        g->cpu_req_n++;
        g->cpu_req_coreh += s->req_cpus * wall_h;
        g->cpu_unused_coreh += fmax(0, s->req_cpus * wall_h - s->cpu_time / 3600);
    }
    if (!isnan(s->req_wall) && s->req_wall > 0 && !isnan(s->duration)) {
        g->wall_req_n++;
        g->wall_over += s->duration > s->req_wall;
        g->wall_unused_s += fmax(0, s->req_wall - s->duration);
    }
    if (!isnan(s->req_gpus) && s->req_gpus > 0) {
        g->gpu_req_n++;
        g->gpu_req_h += s->req_gpus * wall_h;
        if (!isnan(s->gpu_util_mean)) g->gpu_used_h += s->gpu_util_mean / 100 * wall_h;
    }
}

/* ---- inputs ---- */

static void add_fetched(void *arg, jobdata *j)
{
    stats *st = arg;
    st->files++;
    add_job(st, j);
}

static int load_one(stats *st, const char *path, int quiet)
{
    jobdata j;
    jobdata_init(&j);
    char err[512];
    if (jobdata_load(&j, path, &st->bad_lines, err, sizeof err)) {
        if (!quiet) fprintf(stderr, "jobscope stats: %s\n", err);
        st->bad_files++;
        jobdata_free(&j);
        return -1;
    }
    st->files++;
    add_job(st, &j);
    jobdata_free(&j);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file under dir (recursively, sorted, hidden ones skipped). */
static int walk(stats *st, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "jobscope stats: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **p = realloc(names, cap * sizeof *p);
            if (!p) break;
            names = p;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (!stat(path, &sb)) {
            if (S_ISDIR(sb.st_mode))
                walk(st, path);
            else if (S_ISREG(sb.st_mode))
                load_one(st, path, 1);
        }
        free(names[i]);
    }
    free(names);
    return 0;
}

/* ---- advice ---- */

static double pct(dvec *d, double p)
{
    return jd_percentile(d->v, d->n, p);
}

/* The request that fits a fraction q of the runs (docs/views.md). */
static jd_request make_advice(group *g, double q, double margin)
{
    double c = pct(&g->m[M_WANT], q);
    jd_request r = jd_request_make(pct(&g->m[M_MEM], q), isnan(c) ? NAN : fmax(1, ceil(c - 0.05)),
                                   pct(&g->m[M_WALL], q), pct(&g->m[M_GPUS], q),
                                   pct(&g->m[M_GPUMEM], q), margin);
    /* jobs that ran out of memory or time needed more than they had */
    if (!isnan(g->mem_floor) && !(r.mem >= g->mem_floor)) r.mem = g->mem_floor;
    if (!isnan(g->wall_floor) && !(r.wall >= g->wall_floor)) r.wall = g->wall_floor;
    return r;
}

static json_t *advice_json(group *g, double q, double margin)
{
    jd_request r = make_advice(g, q, margin);
    json_t *o = jd_request_json(&r);
    json_object_set_new(o, "fits", json_real(q));
    return o;
}

/* Why the advice of a group may mislead (JSON array of strings). */
static json_t *cautions(const group *g)
{
    json_t *a = json_array();
    char b[256];
    size_t stopped = g->stopped[0] + g->stopped[1] + g->stopped[2];
    if (g->jobs < 5) {
        snprintf(b, sizeof b,
                 "advice from %zu run%s only: p95 and p99 are %s; collect more runs before "
                 "trusting it",
                 g->jobs, g->jobs == 1 ? "" : "s",
                 g->jobs == 1 ? "that run's figures" : "its largest");
        json_array_append_new(a, json_string(b));
    }
    if (g->running) {
        snprintf(b, sizeof b, "%zu job%s still running, not counted", g->running,
                 g->running == 1 ? "" : "s");
        json_array_append_new(a, json_string(b));
    }
    if (stopped) {
        snprintf(b, sizeof b,
                 "%zu job%s stopped before the end, not counted (%zu by a signal, %zu by a "
                 "--limit, %zu by the OOM killer)",
                 stopped, stopped == 1 ? "" : "s", g->stopped[STOP_SIGNAL], g->stopped[STOP_LIMIT],
                 g->stopped[STOP_OOM]);
        json_array_append_new(a, json_string(b));
    }
    if (!isnan(g->mem_floor)) {
        snprintf(b, sizeof b,
                 "jobs ran out of memory: memory advice is at least %.0f MiB (1.5 x what they had)",
                 g->mem_floor / 1048576);
        json_array_append_new(a, json_string(b));
    }
    if (!isnan(g->wall_floor)) {
        snprintf(b, sizeof b,
                 "jobs ran out of time: wall-time advice is at least %.0f s (1.5 x what they had)",
                 g->wall_floor);
        json_array_append_new(a, json_string(b));
    }
    return a;
}

/* ---- output ---- */

static json_t *dist_json(dvec *d)
{
    if (d->n) qsort(d->v, d->n, sizeof *d->v, cmp_d);
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer((json_int_t)d->n));
    static const double ps[] = {0.5, 0.9, 0.95, 0.99};
    static const char *const pn[] = {"p50", "p90", "p95", "p99"};
    for (int i = 0; i < 4; i++)
        json_object_set_new(o, pn[i], d->n ? json_real(pct(d, ps[i])) : jd_null());
    json_object_set_new(o, "max", d->n ? json_real(d->v[d->n - 1]) : jd_null());
    double sum = 0;
    for (size_t i = 0; i < d->n; i++) sum += d->v[i];
    json_object_set_new(o, "mean", d->n ? json_real(sum / (double)d->n) : jd_null());
    return o;
}

static json_t *group_json(group *g, double margin)
{
    json_t *o = json_object();
    json_object_set_new(o, "group", json_string(g->key));
    json_object_set_new(o, "count", json_integer((json_int_t)g->jobs));
    json_object_set_new(o, "running", json_integer((json_int_t)g->running));
    json_object_set_new(o, "stopped",
                        json_pack("{s:I,s:I,s:I}", "signal", (json_int_t)g->stopped[STOP_SIGNAL],
                                  "limit", (json_int_t)g->stopped[STOP_LIMIT], "oom_kill",
                                  (json_int_t)g->stopped[STOP_OOM]));
    json_object_set_new(o, "cautions", cautions(g));
    json_t *dist = json_object();
    for (int m = 0; m < NMET; m++)
        json_object_set_new(dist, stats_met_name[m], dist_json(&g->m[m]));
    json_object_set_new(o, "distributions", dist);
    json_t *curves = json_object();
    for (int c = 0; c < NCURVE; c++) {
        json_t *med = json_array(), *lo = json_array(), *hi = json_array(), *x = json_array();
        int any = 0;
        for (int b = 0; b < NBINS; b++) {
            dvec *d = &g->curve[c][b];
            if (d->n) qsort(d->v, d->n, sizeof *d->v, cmp_d);
            any |= d->n > 0;
            json_array_append_new(x, json_real((b + 0.5) / NBINS));
            json_array_append_new(med, d->n ? json_real(pct(d, 0.5)) : jd_null());
            json_array_append_new(lo, d->n ? json_real(pct(d, 0.1)) : jd_null());
            json_array_append_new(hi, d->n ? json_real(pct(d, 0.9)) : jd_null());
        }
        if (any)
            json_object_set_new(curves, stats_curve_name[c],
                                json_pack("{s:o,s:o,s:o,s:o,s:I}", "x", x, "median", med, "p10", lo,
                                          "p90", hi, "jobs", (json_int_t)g->curve[c][0].n));
        else
            json_decref(med), json_decref(lo), json_decref(hi), json_decref(x);
    }
    json_object_set_new(o, "average_run", curves);
    json_t *adv = json_object();
    json_object_set_new(adv, "margin", json_real(margin));
    json_object_set_new(adv, "p95", advice_json(g, 0.95, margin));
    json_object_set_new(adv, "p99", advice_json(g, 0.99, margin));
    json_object_set_new(o, "advice", adv);
    json_t *w = json_object();
    if (g->mem_req_n)
        json_object_set_new(w, "memory",
                            json_pack("{s:I,s:I,s:f,s:f,s:f}", "jobs", (json_int_t)g->mem_req_n,
                                      "over_request", (json_int_t)g->mem_over,
                                      "mean_unused_fraction", g->mem_unused_frac / g->mem_req_n,
                                      "unused_gib_hours", g->mem_unused_gibh, "requested_gib_hours",
                                      g->mem_req_gibh));
    if (g->cpu_req_n)
        json_object_set_new(w, "cores",
                            json_pack("{s:I,s:f,s:f}", "jobs", (json_int_t)g->cpu_req_n,
                                      "unused_core_hours", g->cpu_unused_coreh,
                                      "requested_core_hours", g->cpu_req_coreh));
    if (g->wall_req_n)
        json_object_set_new(w, "wall",
                            json_pack("{s:I,s:I,s:f}", "jobs", (json_int_t)g->wall_req_n,
                                      "over_request", (json_int_t)g->wall_over,
                                      "mean_unused_seconds", g->wall_unused_s / g->wall_req_n));
    if (g->gpu_req_n)
        json_object_set_new(w, "gpus",
                            json_pack("{s:I,s:f,s:f}", "jobs", (json_int_t)g->gpu_req_n,
                                      "requested_gpu_hours", g->gpu_req_h, "used_gpu_hours",
                                      g->gpu_used_h));
    json_object_set_new(o, "waste", w);
    return o;
}

static void usage(FILE *f)
{
    fputs("usage: jobscope stats DIR|FILE...|--server URL [--by auto|all|exe|xformation|tag:KEY]\n"
          "                      [--json|--html] [--margin PCT] [-o FILE]\n"
          "  Statistics over many jobs' event files (jobscope, kickstart or JoReMon format)\n"
          "  or every job of a running `jobscope serve` (--server http://HOST:PORT):\n"
          "  distributions of peak memory, CPU time and efficiency, wall time, I/O and GPU;\n"
          "  the average run; requests that fit 95% and 99% of runs (docs/views.md).\n"
          "  Running jobs and jobs stopped by a signal, a limit or the OOM killer are\n"
          "  counted apart.\n"
          "  --by       auto (default: the transformation when a job has one, else the\n"
          "             executable's base name), all (one group), exe, xformation, or a\n"
          "             --tag value (tag:KEY)\n"
          "  --margin   head room added to memory and wall-time advice, percent (default 10)\n"
          "  --json     machine-readable output; --html a page with plots\n"
          "  --server   the jobs of a running 'jobscope serve' at URL (http://HOST:PORT),\n"
          "             with or instead of files\n"
          "  -o, --output FILE  write there instead of stdout\n",
          f);
}

int stats_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"by", required_argument, 0, 'b'},     {"json", no_argument, 0, 'j'},
        {"html", no_argument, 0, 'H'},         {"margin", required_argument, 0, 'm'},
        {"output", required_argument, 0, 'o'}, {"server", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    stats st = {.margin = 0.10, .by = "auto"};
    int fmt = 0, c;
    const char *out = NULL, *server = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:o:m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (strcmp(optarg, "exe") && strcmp(optarg, "xformation") && strcmp(optarg, "auto") &&
                strcmp(optarg, "all") && (strncmp(optarg, "tag:", 4) || !optarg[4])) {
                fprintf(stderr,
                        "jobscope stats: --by: expected auto, all, exe, xformation or tag:KEY, "
                        "got '%s'\n",
                        optarg);
                return EXIT_BAD;
            }
            st.by = optarg;
            break;
        case 'j':
            fmt = 1;
            break;
        case 'H':
            fmt = 2;
            break;
        case 'o':
            out = optarg;
            break;
        case 's':
            server = optarg;
            break;
        case 'm': {
            char *e;
            double v = strtod(optarg, &e);
            if (*e || e == optarg || v < 0 || v > 1000) {
                fprintf(stderr, "jobscope stats: --margin: expected a percentage, got '%s'\n",
                        optarg);
                return EXIT_BAD;
            }
            st.margin = v / 100;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_BAD;
        }
    }
    if (optind >= argc && !server) {
        usage(stderr);
        return EXIT_BAD;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (server) {
        if (report_fetch_jobs(server, NULL, add_fetched, &st)) return EXIT_BAD;
    }
    for (int i = optind; i < argc; i++) {
        struct stat sb;
        if (strcmp(argv[i], "-") && stat(argv[i], &sb)) {
            fprintf(stderr, "jobscope stats: %s: %s\n", argv[i], strerror(errno));
            return EXIT_BAD;
        }
        if (strcmp(argv[i], "-") && S_ISDIR(sb.st_mode))
            walk(&st, argv[i]);
        else
            load_one(&st, argv[i], 0);
    }
    if (!st.ng) {
        fprintf(stderr, "jobscope stats: no job could be read\n");
        return EXIT_BAD;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    json_t *groups = json_array();
    for (size_t i = 0; i < st.ng; i++)
        json_array_append_new(groups, group_json(&st.g[i], st.margin));
    json_t *all = json_pack(
        "{s:I,s:I,s:I,s:f,s:o}", "files", (json_int_t)st.files, "unreadable_files",
        (json_int_t)st.bad_files, "bad_lines", (json_int_t)st.bad_lines, "read_seconds",
        (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, "groups", groups);
    json_object_set_new(all, "by", json_string(st.by));
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "jobscope stats: %s: %s\n", out, strerror(errno));
        return EXIT_BAD;
    }
    if (fmt == 1) {
        json_dumpf(all, f, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        fputc('\n', f);
    } else if (fmt == 2) {
        stats_print_html(f, groups, all);
    } else {
        fprintf(f, "%zu job files%s", st.files, st.bad_files ? "" : "\n\n");
        if (st.bad_files) fprintf(f, " (%zu unreadable skipped)\n\n", st.bad_files);
        stats_print_text(f, groups);
    }
    int werr = (out ? fclose(f) : fflush(f)) != 0;
    json_decref(all);
    for (size_t i = 0; i < st.ng; i++) {
        free(st.g[i].key);
        for (int m = 0; m < NMET; m++) free(st.g[i].m[m].v);
        for (int k = 0; k < NCURVE; k++)
            for (int b = 0; b < NBINS; b++) free(st.g[i].curve[k][b].v);
    }
    free(st.g);
    if (werr) {
        fprintf(stderr, "jobscope stats: write error\n");
        return EXIT_BAD;
    }
    return 0;
}
