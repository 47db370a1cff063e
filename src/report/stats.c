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
 * HTCondor, Slurm and Pegasus syntax, plus what recorded requests wasted. */
#include "report/stats.h"
#include "report/jobdata.h"
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
#define NBINS    20

enum { M_MEM, M_CPU, M_EFF, M_WALL, M_CORES, M_READ, M_WRITE, M_GPUMEM, M_GPUUTIL, M_GPUS, NMET };
static const char *const met_name[NMET] = {
    "peak_memory", "cpu_time", "cpu_efficiency", "wall_time",       "cores_used",
    "io_read",     "io_write", "gpu_memory",     "gpu_utilization", "gpus"};
static const char *const met_title[NMET] = {"peak memory",
                                            "CPU time",
                                            "CPU efficiency",
                                            "wall time",
                                            "cores used (CPU time / wall)",
                                            "read (rchar)",
                                            "written (wchar)",
                                            "GPU memory (peak)",
                                            "GPU utilisation (mean)",
                                            "GPUs used"};
static const enum svg_unit met_unit[NMET] = {SVG_BYTES,   SVG_SECONDS, SVG_PERCENT, SVG_SECONDS,
                                             SVG_PLAIN,   SVG_BYTES,   SVG_BYTES,   SVG_BYTES,
                                             SVG_PERCENT, SVG_PLAIN};

enum { C_CPU, C_MEM, C_IO, C_GPU, NCURVE };
static const char *const curve_name[NCURVE] = {"cpu_percent", "memory", "io_rate", "gpu_util"};
static const char *const curve_title[NCURVE] = {"CPU %", "memory (RSS)", "I/O rate (read+write)",
                                                "GPU utilisation %"};
static const enum svg_unit curve_unit[NCURVE] = {SVG_PERCENT, SVG_BYTES, SVG_BYTES, SVG_PERCENT};

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

typedef struct group {
    char *key;
    size_t jobs;
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
    return g;
}

static const char *group_key(const stats *st, const jobdata *j, char *buf, size_t len)
{
    const jd_summary *s = &j->sum;
    if (!st->by) return "all";
    if (!strcmp(st->by, "exe")) {
        char first[256];
        const char *e = s->exe[0] ? s->exe : s->cmd;
        size_t k = strcspn(e, " ");
        snprintf(first, sizeof first, "%.*s", (int)(k < 255 ? k : 255), e);
        const char *sl = strrchr(first, '/');
        snprintf(buf, len, "%s", sl ? sl + 1 : first);
    } else if (!strcmp(st->by, "xformation")) {
        snprintf(buf, len, "%s", s->xformation);
    } else {
        json_t *v = json_object_get(j->tags, st->by + 4);
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
    g->jobs++;
    double cores_used = s->duration > 0 ? s->cpu_time / s->duration : NAN;
    double vals[NMET] = {s->peak_mem,      s->cpu_time,
                         s->cpu_eff,       s->duration,
                         cores_used,       s->rchar,
                         s->wchar,         s->gpu_peak_mem,
                         s->gpu_util_mean, isnan(s->gpu_devices) ? 0 : s->gpu_devices};
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

typedef struct advice {
    double q;
    double mem, cores, wall, gpus, gpu_mem; /* bytes, count, seconds, count, bytes */
} advice;

static double pct(dvec *d, double p)
{
    return jd_percentile(d->v, d->n, p);
}

static void make_advice(group *g, double q, double margin, advice *a)
{
    const double mib = 1048576;
    a->q = q;
    double m = pct(&g->m[M_MEM], q);
    a->mem = isnan(m) ? NAN : ceil(m * (1 + margin) / mib) * mib;
    double c = pct(&g->m[M_CORES], q);
    a->cores = isnan(c) ? NAN : fmax(1, ceil(c - 0.05));
    double w = pct(&g->m[M_WALL], q);
    a->wall = isnan(w) ? NAN : ceil(w * (1 + margin) / 60) * 60;
    double gp = pct(&g->m[M_GPUS], q);
    a->gpus = isnan(gp) ? 0 : ceil(gp - 1e-9);
    double gm = pct(&g->m[M_GPUMEM], q);
    a->gpu_mem = (isnan(gm) || a->gpus == 0) ? NAN : ceil(gm * (1 + margin) / mib) * mib;
}

static void fmt_hms(double s, char *buf, size_t len)
{
    long t = (long)s;
    snprintf(buf, len, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static json_t *advice_json(const advice *a)
{
    const double mib = 1048576;
    char buf[256], hms[32];
    json_t *o = json_object();
    json_object_set_new(o, "fits", json_real(a->q));
    json_object_set_new(o, "memory_bytes", isnan(a->mem) ? jd_null() : json_real(a->mem));
    json_object_set_new(o, "cores",
                        isnan(a->cores) ? jd_null() : json_integer((json_int_t)a->cores));
    json_object_set_new(o, "wall_seconds", isnan(a->wall) ? jd_null() : json_real(a->wall));
    json_object_set_new(o, "gpus", json_integer((json_int_t)a->gpus));
    json_object_set_new(o, "gpu_memory_bytes",
                        isnan(a->gpu_mem) ? jd_null() : json_real(a->gpu_mem));
    fmt_hms(isnan(a->wall) ? 0 : a->wall, hms, sizeof hms);
    /* HTCondor: request_memory in MiB; allowed_execute_duration in seconds */
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "request_memory = %.0fM\nrequest_cpus = %.0f\n",
                          a->mem / mib, a->cores);
    n += (size_t)snprintf(buf + n, sizeof buf - n, "allowed_execute_duration = %.0f\n", a->wall);
    if (a->gpus > 0) {
        n += (size_t)snprintf(buf + n, sizeof buf - n, "request_gpus = %.0f\n", a->gpus);
        if (!isnan(a->gpu_mem))
            snprintf(buf + n, sizeof buf - n, "gpus_minimum_memory = %.0f\n", a->gpu_mem / mib);
    }
    json_object_set_new(o, "htcondor", json_string(buf));
    n = (size_t)snprintf(buf, sizeof buf, "--mem=%.0fM --cpus-per-task=%.0f --time=%s",
                         a->mem / mib, a->cores, hms);
    if (a->gpus > 0) snprintf(buf + n, sizeof buf - n, " --gres=gpu:%.0f", a->gpus);
    json_object_set_new(o, "slurm", json_string(buf));
    n = (size_t)snprintf(
        buf, sizeof buf,
        "profile pegasus \"memory\" \"%.0f\"\n"
        "profile pegasus \"cores\" \"%.0f\"\nprofile pegasus \"runtime\" \"%.0f\"\n",
        a->mem / mib, a->cores, a->wall);
    if (a->gpus > 0)
        snprintf(buf + n, sizeof buf - n, "profile pegasus \"gpus\" \"%.0f\"\n", a->gpus);
    json_object_set_new(o, "pegasus", json_string(buf));
    return o;
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
    json_t *dist = json_object();
    for (int m = 0; m < NMET; m++) json_object_set_new(dist, met_name[m], dist_json(&g->m[m]));
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
            json_object_set_new(curves, curve_name[c],
                                json_pack("{s:o,s:o,s:o,s:o,s:I}", "x", x, "median", med, "p10", lo,
                                          "p90", hi, "jobs", (json_int_t)g->curve[c][0].n));
        else
            json_decref(med), json_decref(lo), json_decref(hi), json_decref(x);
    }
    json_object_set_new(o, "average_run", curves);
    json_t *adv = json_object();
    advice a95, a99;
    make_advice(g, 0.95, margin, &a95);
    make_advice(g, 0.99, margin, &a99);
    json_object_set_new(adv, "margin", json_real(margin));
    json_object_set_new(adv, "p95", advice_json(&a95));
    json_object_set_new(adv, "p99", advice_json(&a99));
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

static void fmt_metric(int m, double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "-");
        return;
    }
    switch (met_unit[m]) {
    case SVG_BYTES:
        svg_fmt_bytes(v, buf, len);
        break;
    case SVG_PERCENT:
        snprintf(buf, len, m == M_EFF ? "%.1f%%" : "%.1f%%", m == M_EFF ? 100 * v : v);
        break;
    case SVG_SECONDS:
        snprintf(buf, len, "%.1fs", v);
        break;
    default:
        snprintf(buf, len, "%.2f", v);
        break;
    }
}

static void print_text(FILE *f, json_t *groups)
{
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        fprintf(f, "== %s: %lld jobs\n", json_string_value(json_object_get(g, "group")),
                (long long)json_integer_value(json_object_get(g, "count")));
        fprintf(f, "  %-30s %10s %10s %10s %10s %10s\n", "", "p50", "p90", "p95", "p99", "max");
        json_t *dist = json_object_get(g, "distributions");
        for (int m = 0; m < NMET; m++) {
            json_t *d = json_object_get(dist, met_name[m]);
            if (!json_integer_value(json_object_get(d, "n"))) continue;
            if (m >= M_GPUMEM && json_number_value(json_object_get(d, "max")) <= 0) continue;
            fprintf(f, "  %-30s", met_title[m]);
            static const char *const k[] = {"p50", "p90", "p95", "p99", "max"};
            for (int q = 0; q < 5; q++) {
                char b[32];
                fmt_metric(m, json_number_value(json_object_get(d, k[q])), b, sizeof b);
                fprintf(f, " %10s", b);
            }
            fputc('\n', f);
        }
        json_t *curves = json_object_get(g, "average_run");
        for (int c = 0; c < NCURVE; c++) {
            json_t *cv = json_object_get(curves, curve_name[c]);
            if (!cv) continue;
            fprintf(f, "  average run, %s (median by 10%% of the job):", curve_title[c]);
            json_t *med = json_object_get(cv, "median");
            for (int b = 1; b < NBINS; b += 2) {
                double v = json_number_value(json_array_get(med, (size_t)b));
                char buf[32];
                if (curve_unit[c] == SVG_BYTES)
                    svg_fmt_bytes(v, buf, sizeof buf);
                else
                    snprintf(buf, sizeof buf, "%.0f", v);
                fprintf(f, " %s", buf);
            }
            fputc('\n', f);
        }
        json_t *adv = json_object_get(g, "advice");
        fprintf(f, "  advice (margin %.0f%% on memory and wall time):\n",
                100 * json_number_value(json_object_get(adv, "margin")));
        static const char *const qs[] = {"p95", "p99"};
        for (int q = 0; q < 2; q++) {
            json_t *a = json_object_get(adv, qs[q]);
            fprintf(f, "   fits %s of runs:\n", q ? "99%" : "95%");
            const char *hc = json_string_value(json_object_get(a, "htcondor"));
            fprintf(f, "     HTCondor: ");
            for (const char *p = hc; p && *p; p++)
                fputs(*p == '\n' ? (p[1] ? "; " : "") : (char[2]){*p, 0}, f);
            fprintf(f, "\n     Slurm:    %s\n     Pegasus:  ",
                    json_string_value(json_object_get(a, "slurm")));
            const char *pg = json_string_value(json_object_get(a, "pegasus"));
            for (const char *p = pg; p && *p; p++)
                fputs(*p == '\n' ? (p[1] ? "; " : "") : (char[2]){*p, 0}, f);
            fputc('\n', f);
        }
        json_t *w = json_object_get(g, "waste"), *x;
        if ((x = json_object_get(w, "memory")))
            fprintf(f,
                    "  current memory requests (%lld jobs): %.0f%% unused on average, %.1f of %.1f "
                    "GiB-hours "
                    "unused, %lld jobs above their request\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    100 * json_number_value(json_object_get(x, "mean_unused_fraction")),
                    json_number_value(json_object_get(x, "unused_gib_hours")),
                    json_number_value(json_object_get(x, "requested_gib_hours")),
                    (long long)json_integer_value(json_object_get(x, "over_request")));
        if ((x = json_object_get(w, "cores")))
            fprintf(f, "  current core requests (%lld jobs): %.1f of %.1f core-hours unused\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    json_number_value(json_object_get(x, "unused_core_hours")),
                    json_number_value(json_object_get(x, "requested_core_hours")));
        if ((x = json_object_get(w, "wall")))
            fprintf(f,
                    "  current wall-time requests (%lld jobs): %.0f s unused on average, %lld jobs "
                    "over\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    json_number_value(json_object_get(x, "mean_unused_seconds")),
                    (long long)json_integer_value(json_object_get(x, "over_request")));
        if ((x = json_object_get(w, "gpus")))
            fprintf(f, "  current GPU requests (%lld jobs): %.1f GPU-hours requested, %.1f used\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    json_number_value(json_object_get(x, "requested_gpu_hours")),
                    json_number_value(json_object_get(x, "used_gpu_hours")));
        fputc('\n', f);
    }
}

static void html_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        default:
            fputc(*s, f);
        }
}

static void print_html(FILE *f, json_t *groups, json_t *all)
{
    fputs(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>jobscope stats</title>\n"
        "<style>body{font-family:sans-serif;margin:1.5em;max-width:1100px}table{border-collapse:"
        "collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th:first-child,td:first-child"
        "{text-align:left}pre{background:#f4f4f4;padding:6px}.charts "
        "svg{margin:4px}</style></head><body>\n",
        f);
    fprintf(f, "<h1>jobscope stats</h1><p>%lld job files.</p>\n",
            (long long)json_integer_value(json_object_get(all, "files")));
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        fputs("<h2>", f);
        html_esc(f, json_string_value(json_object_get(g, "group")));
        fprintf(f,
                " — %lld jobs</h2>\n<table><tr><th></th><th>p50</th><th>p90</th><th>p95</th>"
                "<th>p99</th><th>max</th></tr>\n",
                (long long)json_integer_value(json_object_get(g, "count")));
        json_t *dist = json_object_get(g, "distributions");
        for (int m = 0; m < NMET; m++) {
            json_t *d = json_object_get(dist, met_name[m]);
            if (!json_integer_value(json_object_get(d, "n"))) continue;
            fprintf(f, "<tr><td>%s</td>", met_title[m]);
            static const char *const k[] = {"p50", "p90", "p95", "p99", "max"};
            for (int q = 0; q < 5; q++) {
                char b[32];
                fmt_metric(m, json_number_value(json_object_get(d, k[q])), b, sizeof b);
                fprintf(f, "<td>%s</td>", b);
            }
            fputs("</tr>\n", f);
        }
        fputs("</table>\n<h3>Average run (median, p10–p90 band, over normalised job time)</h3>"
              "<div class=\"charts\">\n",
              f);
        json_t *curves = json_object_get(g, "average_run");
        for (int c = 0; c < NCURVE; c++) {
            json_t *cv = json_object_get(curves, curve_name[c]);
            if (!cv) continue;
            double x[NBINS], y[NBINS], lo[NBINS], hi[NBINS];
            for (int b = 0; b < NBINS; b++) {
                x[b] = 100.0 * (b + 0.5) / NBINS;
                json_t *v = json_array_get(json_object_get(cv, "median"), (size_t)b);
                y[b] = json_is_number(v) ? json_number_value(v) : NAN;
                v = json_array_get(json_object_get(cv, "p10"), (size_t)b);
                lo[b] = json_is_number(v) ? json_number_value(v) : NAN;
                v = json_array_get(json_object_get(cv, "p90"), (size_t)b);
                hi[b] = json_is_number(v) ? json_number_value(v) : NAN;
            }
            svg_line L = {"median", x, y, lo, hi, NBINS};
            svg_chart(f, curve_title[c], "% of the job's wall time", curve_unit[c], &L, 1, 520, 240,
                      0);
        }
        fputs("</div>\n<h3>Right-sizing advice</h3>\n", f);
        json_t *adv = json_object_get(g, "advice");
        fprintf(f, "<p>Margin %.0f%% on memory and wall time.</p>\n",
                100 * json_number_value(json_object_get(adv, "margin")));
        static const char *const qs[] = {"p95", "p99"};
        for (int q = 0; q < 2; q++) {
            json_t *a = json_object_get(adv, qs[q]);
            fprintf(f, "<h4>Fits %s of runs</h4><pre># HTCondor\n", q ? "99%" : "95%");
            html_esc(f, json_string_value(json_object_get(a, "htcondor")));
            fputs("\n# Slurm\n", f);
            html_esc(f, json_string_value(json_object_get(a, "slurm")));
            fputs("\n\n# Pegasus (transformation catalog)\n", f);
            html_esc(f, json_string_value(json_object_get(a, "pegasus")));
            fputs("</pre>\n", f);
        }
        char *w = json_dumps(json_object_get(g, "waste"), JSON_INDENT(1));
        if (w && strcmp(w, "{}")) {
            fputs("<h3>What current requests waste</h3><pre>", f);
            html_esc(f, w);
            fputs("</pre>\n", f);
        }
        free(w);
    }
    fputs("</body></html>\n", f);
}

static void usage(FILE *f)
{
    fputs("usage: jobscope stats DIR|FILE...|--server URL [--by exe|xformation|tag:KEY]\n"
          "                      [--json|--html] [--margin PCT] [-o FILE]\n"
          "  Statistics over many jobs' event files (jobscope, kickstart or JoReMon format):\n"
          "  distributions of peak memory, CPU time and efficiency, wall time, I/O and GPU;\n"
          "  the average run; requests that fit 95% and 99% of runs (docs/views.md).\n"
          "  --by       group by executable (base name), transformation, or a --tag value\n"
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
    stats st = {.margin = 0.10};
    int fmt = 0, c;
    const char *out = NULL, *server = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:o:m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (strcmp(optarg, "exe") && strcmp(optarg, "xformation") &&
                (strncmp(optarg, "tag:", 4) || !optarg[4])) {
                fprintf(stderr,
                        "jobscope stats: --by: expected exe, xformation or tag:KEY, got '%s'\n",
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
    json_object_set_new(all, "by", json_string(st.by ? st.by : "all"));
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "jobscope stats: %s: %s\n", out, strerror(errno));
        return EXIT_BAD;
    }
    if (fmt == 1) {
        json_dumpf(all, f, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        fputc('\n', f);
    } else if (fmt == 2) {
        print_html(f, groups, all);
    } else {
        fprintf(f, "%zu job files%s", st.files, st.bad_files ? "" : "\n\n");
        if (st.bad_files) fprintf(f, " (%zu unreadable skipped)\n\n", st.bad_files);
        print_text(f, groups);
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
