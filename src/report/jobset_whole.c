/* jobset_whole.c — the whole job from its runs (see jobset.h,
 * docs/views.md "A job of several runs"): per node the allocation the batch
 * system gave it, the memory of the runs alive at once, the CPUs its steps
 * could have kept busy; then over the nodes; the whole job's warnings; and
 * the rows of its runs, nodes and steps that the report and the job page
 * list.  Grouping events into runs and the page are jobset.c. */
#include "report/jobset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : jd_null();
}
/* ---- the whole job ---- */

static double nadd(double a, double b)
{
    if (!isfinite(b)) return a;
    return isfinite(a) ? a + b : b;
}

static double nmax(double a, double b)
{
    if (!isfinite(b)) return a;
    return isfinite(a) && a >= b ? a : b;
}

/* Where a run ended: its end, else (still running) never. */
static double run_end(const jd_summary *s)
{
    if (s->has_end && isfinite(s->end)) return s->end;
    if (s->has_end && isfinite(s->start) && isfinite(s->duration)) return s->start + s->duration;
    return INFINITY;
}

typedef struct point {
    double t, v;
} point;

static int point_cmp(const void *a, const void *b)
{
    const point *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v; /* at one instant, what ends first */
}

enum fig { F_PEAK, F_CG_PEAK, F_THREADS };

static double fig_of(const jd_summary *s, enum fig f)
{
    return f == F_PEAK ? s->peak_mem : f == F_CG_PEAK ? s->cg_peak_mem : s->threads_peak;
}

/* The largest sum of a figure over the runs alive at once, among those
 * that `in` selects (each at its own peak: an upper bound that is exact
 * when each run holds its peak). NAN when no run has the figure. */
static double alive_sum(const jobset_part *p, size_t n, const char *host, const char *step,
                        enum fig f)
{
    point *pt = malloc((2 * n + 1) * sizeof *pt);
    size_t m = 0;
    if (!pt) return NAN;
    for (size_t i = 0; i < n; i++) {
        const jd_summary *s = &p[i].sum;
        double v = fig_of(s, f);
        if (p[i].superseded || !isfinite(v) || !isfinite(s->start)) continue;
        if (host && strcmp(s->host, host)) continue;
        if (step && strcmp(p[i].step, step)) continue;
        pt[m++] = (point){s->start, v};
        pt[m++] = (point){run_end(s), -v};
    }
    double best = NAN, cur = 0;
    qsort(pt, m, sizeof *pt, point_cmp);
    for (size_t i = 0; i < m; i++) {
        cur += pt[i].v;
        best = nmax(best, cur);
    }
    free(pt);
    return best;
}

/* How bad an end is: the OOM killer, a --limit, a signal, a non-zero
 * exit, running, done. */
static int badness(const jd_summary *s)
{
    if (!strcmp(s->stopped_by, "oom_kill")) return 5;
    if (!strcmp(s->stopped_by, "limit")) return 4;
    if (s->stopped_by[0]) return 3;
    if (s->has_end && s->exit_code != 0) return 2;
    return !s->has_end;
}

/* One node's figures. */
typedef struct node {
    const char *host;
    double cores, mem, gpus, cpu, peak, want, tasks;
    const char *cores_from, *mem_from, *gpus_from;
    double gpu_dev, gpu_mem, gpu_util;
    size_t runs;
} node;

/* One (host, step) or (step): the CPUs its runs could have kept busy, at
 * most their threads; and how many tasks it ran. */
static void step_want(const jobset_part *p, size_t n, const char *host, const char *step,
                      double *want, double *tasks)
{
    double cpu = NAN, t0 = INFINITY, t1 = -INFINITY, thr = 0;
    int thr_known = 1;
    *tasks = 0;
    for (size_t i = 0; i < n; i++) {
        const jd_summary *s = &p[i].sum;
        if (p[i].superseded || strcmp(p[i].step, step) || (host && strcmp(s->host, host))) continue;
        (*tasks)++;
        cpu = nadd(cpu, s->cpu_time);
        if (s->cpu_wait > 0) cpu = nadd(cpu, s->cpu_wait);
        if (isfinite(s->start)) t0 = fmin(t0, s->start);
        double e = isfinite(s->start) && isfinite(s->duration) ? s->start + s->duration : NAN;
        if (isfinite(e)) t1 = fmax(t1, e);
        if (s->threads_peak >= 1)
            thr += s->threads_peak;
        else
            thr_known = 0;
    }
    *want = t1 > t0 && isfinite(cpu) ? cpu / (t1 - t0) : NAN;
    if (thr_known && thr >= 1 && *want > thr) *want = thr;
}

/* The distinct hosts (pointers into the parts), and the distinct steps. */
static size_t distinct(const jobset_part *p, size_t n, int steps, const char **out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].superseded) continue;
        const char *v = steps ? p[i].step : p[i].sum.host;
        size_t k = 0;
        while (k < m && strcmp(out[k], v)) k++;
        if (k == m) out[m++] = v;
    }
    return m;
}

static int is_batch(const char *step)
{
    return !strcmp(step, "batch") || !strcmp(step, "extern") || !strcmp(step, "interactive");
}

static void node_of(const jobset_part *p, size_t n, const char *host, const char **steps,
                    size_t nsteps, node *o)
{
    memset(o, 0, sizeof *o);
    o->host = host;
    o->cores = o->mem = o->gpus = o->cpu = o->want = NAN;
    o->gpu_dev = o->gpu_mem = o->gpu_util = NAN;
    o->tasks = 1;
    o->cores_from = o->mem_from = o->gpus_from = "";
    for (size_t i = 0; i < n; i++) {
        const jd_summary *s = &p[i].sum;
        if (p[i].superseded || strcmp(s->host, host)) continue;
        o->runs++;
        /* the batch system's figure for the node, else the largest a run saw */
        if (isfinite(p[i].node_cores))
            o->cores = p[i].node_cores, o->cores_from = "slurm_alloc_cores";
        else if (!(o->cores >= s->cores) && strcmp(o->cores_from, "slurm_alloc_cores"))
            o->cores = s->cores, o->cores_from = s->cores_from;
        if (isfinite(p[i].node_mem))
            o->mem = p[i].node_mem, o->mem_from = "slurm_alloc_mem_mb";
        else if (!(o->mem >= s->alloc_mem) && isfinite(s->alloc_mem) &&
                 strcmp(o->mem_from, "slurm_alloc_mem_mb"))
            o->mem = s->alloc_mem, o->mem_from = s->alloc_mem_from;
        if (!(o->gpus >= s->alloc_gpus) && isfinite(s->alloc_gpus))
            o->gpus = s->alloc_gpus, o->gpus_from = s->alloc_gpus_from;
        o->cpu = nadd(o->cpu, s->cpu_time);
        o->gpu_dev = nmax(o->gpu_dev, s->gpu_devices);
        o->gpu_mem = nmax(o->gpu_mem, s->gpu_peak_mem);
        o->gpu_util = nmax(o->gpu_util, s->gpu_util_mean);
    }
    o->peak = alive_sum(p, n, host, NULL, F_PEAK);
    for (size_t k = 0; k < nsteps; k++) {
        double w, t;
        step_want(p, n, host, steps[k], &w, &t);
        if (!t) continue;
        o->want = nmax(o->want, w);
        if (!is_batch(steps[k]) && t > o->tasks) o->tasks = t;
    }
}

void jobset_whole(const jobset_part *p, size_t n, jd_summary *w)
{
    jobdata tmp;
    jobdata_init(&tmp);
    *w = tmp.sum;
    jobdata_free(&tmp);
    const char **hosts = calloc(n + 1, sizeof *hosts), **steps = calloc(n + 1, sizeof *steps);
    if (!hosts || !steps) {
        free(hosts);
        free(steps);
        return;
    }
    size_t nh = distinct(p, n, 0, hosts), ns = distinct(p, n, 1, steps);
    const jobset_part *first = NULL, *chosen = NULL, *busiest = NULL;
    int all_ended = 1;
    double t0 = INFINITY, t_last = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        const jd_summary *s = &p[i].sum;
        if (p[i].superseded) continue;
        if (!first) first = &p[i];
        all_ended &= s->has_end;
        if (isfinite(s->start)) t0 = fmin(t0, s->start);
        if (isfinite(s->start) && isfinite(s->duration))
            t_last = fmax(t_last, s->start + s->duration);
        if (!busiest || s->cpu_time > busiest->sum.cpu_time) busiest = &p[i];
        /* how the job ended: its batch script's end, else its worst run's */
        if (!strcmp(p[i].step, "batch")) {
            if (!chosen || strcmp(chosen->step, "batch")) chosen = &p[i];
        } else if (!chosen ||
                   (strcmp(chosen->step, "batch") && badness(s) > badness(&chosen->sum))) {
            chosen = &p[i];
        }
        w->cpu_time = nadd(w->cpu_time, s->cpu_time);
        if (s->cpu_wait > 0) w->cpu_wait = nadd(w->cpu_wait, s->cpu_wait);
        w->rchar = nadd(w->rchar, s->rchar);
        w->wchar = nadd(w->wchar, s->wchar);
        w->read_bytes = nadd(w->read_bytes, s->read_bytes);
        w->write_bytes = nadd(w->write_bytes, s->write_bytes);
        w->req_wall = nmax(w->req_wall, s->req_wall);
        w->samples += s->samples;
    }
    if (!first) {
        free(hosts);
        free(steps);
        return;
    }
    const jd_summary *f = &first->sum;
#define CP(field) snprintf(w->field, sizeof w->field, "%s", f->field)
    CP(job_id);
    CP(host);
    CP(wf);
    CP(wf_label);
    CP(xformation);
    CP(user);
    CP(site);
    CP(batch_system);
    CP(batch_id);
#undef CP
    snprintf(w->type, sizeof w->type, "jobscope");
    snprintf(w->exe, sizeof w->exe, "%s", busiest->sum.exe);
    snprintf(w->cmd, sizeof w->cmd, "%s", busiest->sum.cmd);
    const jd_summary *c = &chosen->sum;
    snprintf(w->exit_type, sizeof w->exit_type, "%s", c->exit_type);
    snprintf(w->signal_name, sizeof w->signal_name, "%s", c->signal_name);
    snprintf(w->stopped_by, sizeof w->stopped_by, "%s", c->stopped_by);
    snprintf(w->stop_limit, sizeof w->stop_limit, "%s", c->stop_limit);
    w->exit_code = c->exit_code;
    /* a step the OOM killer stopped: the job's state stays its script's (as
     * Slurm's), its memory advice is for a job that ran out of memory */
    for (size_t i = 0; i < n; i++)
        if (!p[i].superseded && !strcmp(p[i].sum.stopped_by, "oom_kill") && !w->oom_run[0])
            snprintf(w->oom_run, sizeof w->oom_run, "%s", p[i].run);
    w->has_end = all_ended;
    w->start = t0;
    w->end = all_ended ? t_last : NAN;
    w->duration = t_last > t0 ? t_last - t0 : 0;
    /* per node, then over the nodes */
    double tasks = 1, want = NAN;
    int mem_known = 1;
    w->cores = 0;
    for (size_t k = 0; k < nh; k++) {
        node o;
        node_of(p, n, hosts[k], steps, ns, &o);
        if (!k) {
            snprintf(w->cores_from, sizeof w->cores_from, "%s", o.cores_from);
            snprintf(w->alloc_mem_from, sizeof w->alloc_mem_from, "%s", o.mem_from);
            snprintf(w->alloc_gpus_from, sizeof w->alloc_gpus_from, "%s", o.gpus_from);
        }
        w->cores += isfinite(o.cores) ? o.cores : 1;
        mem_known &= isfinite(o.mem);
        w->alloc_mem = nadd(w->alloc_mem, o.mem);
        w->alloc_gpus = nadd(w->alloc_gpus, o.gpus);
        w->peak_mem = nadd(w->peak_mem, o.peak);
        w->node_peak_mem = nmax(w->node_peak_mem, o.peak);
        w->cg_peak_mem = nadd(w->cg_peak_mem, alive_sum(p, n, hosts[k], NULL, F_CG_PEAK));
        w->threads_peak = nadd(w->threads_peak, alive_sum(p, n, hosts[k], NULL, F_THREADS));
        w->gpu_devices = nadd(w->gpu_devices, o.gpu_dev);
        w->gpu_peak_mem = nadd(w->gpu_peak_mem, o.gpu_mem);
        w->gpu_util_mean = nadd(w->gpu_util_mean, o.gpu_util);
        if (o.tasks > tasks) tasks = o.tasks;
        want = nmax(want, o.want / o.tasks);
    }
    if (!mem_known) w->alloc_mem = NAN, w->alloc_mem_from[0] = 0;
    w->req_mem = w->alloc_mem;
    w->req_cpus = w->cores;
    w->req_gpus = w->alloc_gpus;
    w->nodes = (double)nh;
    w->tasks_per_node = tasks;
    w->want_cores = want;
    if (w->duration > 0 && isfinite(w->cpu_time) && w->cores > 0)
        w->cpu_eff = w->cpu_time / (w->duration * w->cores);
    free(hosts);
    free(steps);
}

json_t *jobset_warnings(const jobset_part *p, size_t n, const jd_summary *whole)
{
    jobdata j;
    jobdata_init(&j);
    j.sum = *whole;
    json_t *all = jobdata_warnings(&j), *out = json_array();
    jobdata_free(&j);
    size_t i, k;
    json_t *w;
    json_array_foreach(all, i, w)
    {
        const char *kind = jd_str(w, "kind");
        if (kind && (!strcmp(kind, "cpu_efficiency") || !strcmp(kind, "memory_limit") ||
                     !strcmp(kind, "idle_gpu")))
            json_array_append(out, w);
    }
    json_decref(all);
    for (k = 0; k < n; k++) {
        if (p[k].superseded) continue;
        json_array_foreach(p[k].warnings, i, w)
        {
            const char *kind = jd_str(w, "kind");
            if (!kind || (strcmp(kind, "io_bound") && strcmp(kind, "limit") &&
                          strcmp(kind, "signal") && strcmp(kind, "oom_kill")))
                continue;
            json_t *c = json_deep_copy(w);
            char msg[600];
            snprintf(msg, sizeof msg, "%s: %s", p[k].run,
                     jd_str(w, "message") ? jd_str(w, "message") : "");
            json_object_set_new(c, "message", json_string(msg));
            json_object_set_new(c, "run", json_string(p[k].run));
            json_array_append_new(out, c);
        }
    }
    return out;
}

/* ---- rows of the details ---- */

static void put_end(json_t *o, const jd_summary *s)
{
    json_object_set_new(o, "finished", json_boolean(s->has_end));
    json_object_set_new(o, "exit_code", s->exit_code >= 0 ? json_integer(s->exit_code) : jd_null());
    json_object_set_new(o, "exit_type", s->exit_type[0] ? json_string(s->exit_type) : jd_null());
    json_object_set_new(o, "signal_name",
                        s->signal_name[0] ? json_string(s->signal_name) : jd_null());
    json_object_set_new(o, "stopped_by", s->stopped_by[0] ? json_string(s->stopped_by) : jd_null());
    json_object_set_new(o, "stop_limit", s->stop_limit[0] ? json_string(s->stop_limit) : jd_null());
}

static json_t *run_row(const jobset_part *p)
{
    const jd_summary *s = &p->sum;
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b}", "run", p->run, "host", s->host, "step", p->step,
                          "task", p->task, "superseded", p->superseded);
    json_object_set_new(o, "start", jnum(s->start));
    json_object_set_new(o, "end", jnum(s->end));
    json_object_set_new(o, "duration", jnum(s->duration));
    json_object_set_new(o, "cpu_time", jnum(s->cpu_time));
    json_object_set_new(o, "cores", jnum(s->cores));
    json_object_set_new(o, "cores_from", json_string(s->cores_from));
    json_object_set_new(o, "cpu_efficiency", jnum(s->cpu_eff));
    json_object_set_new(o, "peak_mem", jnum(s->peak_mem));
    json_object_set_new(o, "exe", s->exe[0] ? json_string(s->exe) : jd_null());
    put_end(o, s);
    return o;
}

/* Steps in Slurm's order: batch, 0, 1, ..., then the others. */
static int step_rank(const char *s, long *num)
{
    char *e;
    *num = strtol(s, &e, 10);
    if (!strcmp(s, "batch")) return 0;
    if (*s && !*e) return 1;
    return 2;
}

static int step_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    long nx, ny;
    int rx = step_rank(x, &nx), ry = step_rank(y, &ny);
    if (rx != ry) return rx - ry;
    if (rx == 1 && nx != ny) return nx < ny ? -1 : 1;
    return strcmp(x, y);
}

json_t *jobset_details(const jobset_part *p, size_t n, const jd_summary *whole)
{
    json_t *runs = json_array(), *nodes = json_array(), *steps = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(runs, run_row(&p[i]));
    const char **hosts = calloc(n + 1, sizeof *hosts), **st = calloc(n + 1, sizeof *st);
    size_t nh = hosts ? distinct(p, n, 0, hosts) : 0, ns = st ? distinct(p, n, 1, st) : 0;
    for (size_t k = 0; k < nh; k++) {
        node o;
        node_of(p, n, hosts[k], st, ns, &o);
        json_t *r = json_pack("{s:s,s:s,s:s,s:I,s:f}", "host", o.host, "cores_from", o.cores_from,
                              "mem_from", o.mem_from, "runs", (json_int_t)o.runs, "tasks", o.tasks);
        json_object_set_new(r, "cores", jnum(o.cores));
        json_object_set_new(r, "mem", jnum(o.mem));
        json_object_set_new(r, "cpu_time", jnum(o.cpu));
        json_object_set_new(
            r, "cpu_efficiency",
            jnum(whole->duration > 0 && o.cores > 0 ? o.cpu / (whole->duration * o.cores) : NAN));
        json_object_set_new(r, "peak_mem", jnum(o.peak));
        json_object_set_new(r, "cores_wanted", jnum(o.want));
        json_array_append_new(nodes, r);
    }
    /* steps, when the runs are a batch system's steps */
    int slurm = 0;
    for (size_t i = 0; i < ns; i++) slurm |= st[i][0] != 0;
    if (slurm) qsort(st, ns, sizeof *st, step_cmp);
    for (size_t k = 0; slurm && k < ns; k++) {
        const jobset_part *worst = NULL, *busiest = NULL;
        double cpu = NAN, t0 = INFINITY, t1 = -INFINITY, tasks = 0, want = NAN;
        const char *seen[64];
        size_t nseen = 0;
        for (size_t i = 0; i < n; i++) {
            const jd_summary *s = &p[i].sum;
            if (p[i].superseded || strcmp(p[i].step, st[k])) continue;
            tasks++;
            cpu = nadd(cpu, s->cpu_time);
            if (isfinite(s->start)) t0 = fmin(t0, s->start);
            if (isfinite(s->start) && isfinite(s->duration)) t1 = fmax(t1, s->start + s->duration);
            if (!worst || badness(s) > badness(&worst->sum)) worst = &p[i];
            if (!busiest || s->cpu_time > busiest->sum.cpu_time) busiest = &p[i];
            size_t h = 0;
            while (h < nseen && strcmp(seen[h], s->host)) h++;
            if (h == nseen && nseen < 64) seen[nseen++] = s->host;
        }
        double peak = NAN;
        for (size_t h = 0; h < nseen; h++) {
            double wnt, t;
            peak = nadd(peak, alive_sum(p, n, seen[h], st[k], F_PEAK));
            step_want(p, n, seen[h], st[k], &wnt, &t);
            want = nadd(want, wnt);
        }
        json_t *r =
            json_pack("{s:s,s:f,s:I}", "step", st[k], "tasks", tasks, "nodes", (json_int_t)nseen);
        json_object_set_new(r, "start", jnum(t0));
        json_object_set_new(r, "end", jnum(worst->sum.has_end ? t1 : NAN));
        json_object_set_new(r, "duration", jnum(t1 > t0 ? t1 - t0 : NAN));
        json_object_set_new(r, "cpu_time", jnum(cpu));
        json_object_set_new(r, "peak_mem", jnum(peak));
        json_object_set_new(r, "cores_wanted", jnum(want));
        json_object_set_new(r, "exe",
                            busiest->sum.exe[0] ? json_string(busiest->sum.exe) : jd_null());
        put_end(r, &worst->sum);
        json_array_append_new(steps, r);
    }
    free(hosts);
    free(st);
    return json_pack("{s:o,s:o,s:o}", "runs", runs, "nodes", nodes, "steps", steps);
}
