/* jobset.c — a job of several runs (see jobset.h, docs/views.md "A job of
 * several runs"): which run an event belongs to, each run read as a job of
 * its own (a part), and the page of the whole job: its summary
 * (jobset_whole.c), assessment and warnings as for one run, its series
 * summed over the runs, and the rows of its runs, nodes and steps. */
#include "report/jobset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB      1048576.0
#define GRID_MAX 2000 /* points of a whole job's summed series */

/* ---- runs and their keys ---- */

static const char *event_name(const json_t *ev)
{
    const char *n = jd_str(ev, "event");
    if (!n) n = jd_str(ev, "monitoring_event");
    if (!n) n = jd_str(ev, "Type");
    return n;
}

void jobset_base_key(const char *host, const char *step, const char *task, long long rank,
                     char *out, size_t len)
{
    size_t h = strlen(host);
    if (step || h + 24 > len) {
        if (step)
            snprintf(out, len, "%s:%s.%s", host, step, task ? task : "0");
        else
            snprintf(out, len, "%s:%lld", host, rank);
        return;
    }
    /* HOST:RANK without printf: the key of every sample stored */
    char d[24];
    int n = 0;
    unsigned long long u = rank < 0 ? 0 - (unsigned long long)rank : (unsigned long long)rank;
    do d[n++] = (char)('0' + u % 10);
    while (u /= 10);
    memcpy(out, host, h);
    out[h++] = ':';
    if (rank < 0) out[h++] = '-';
    while (n) out[h++] = d[--n];
    out[h] = 0;
}

int jobset_run_base(const json_t *ev, char *out, size_t len, long long *pid)
{
    const char *name = event_name(ev);
    *pid = -1;
    if (!name || (strncmp(name, "jobscope.", 9) && strncmp(name, "kickstart.inv.online", 20) &&
                  strncmp(name, "joremon.", 8)))
        return 0;
    const char *host = jd_str(ev, "hostname");
    if (!host) host = jd_str(ev, "Hostname");
    if (!host) return 0;
    /* a custom metric's tags are the metric's own: no Slurm tags there */
    const json_t *tags = strcmp(name, "jobscope.metric") ? json_object_get(ev, "tags") : NULL;
    jobset_base_key(host, jd_str(tags, "slurm_step"), jd_str(tags, "slurm_task"),
                    json_is_integer(json_object_get(ev, "rank"))
                        ? (long long)json_integer_value(json_object_get(ev, "rank"))
                        : 0LL,
                    out, len);
    /* the job's main process: on the monitor's own records, not on a
     * custom metric (its sender's) or a GPU event (the device's users) */
    json_t *p = json_object_get(ev, "pid");
    if (json_is_integer(p) &&
        (!strcmp(name, "jobscope.start") || !strcmp(name, "kickstart.inv.online") ||
         !strcmp(name, "jobscope.end") || !strcmp(name, "jobscope.limit")))
        *pid = (long long)json_integer_value(p);
    return 1;
}

int jobset_choose(const jobset_ref *refs, size_t n, long long pid, int is_start, int *adopt)
{
    *adopt = 0;
    if (!n) return -1;
    size_t last = n - 1;
    if (pid >= 0) {
        for (size_t i = n; i-- > 0;)
            if (refs[i].pid == pid) return is_start && refs[i].started ? -1 : (int)i;
        if (refs[last].pid < 0 && !(is_start && refs[last].started)) {
            *adopt = 1; /* its first events named no pid */
            return (int)last;
        }
        return -1; /* another main process: another attempt */
    }
    return is_start && refs[last].started ? -1 : (int)last;
}

void jobset_key(const char *base, size_t nth, char *out, size_t len)
{
    if (nth)
        snprintf(out, len, "%.180s#%zu", base, nth + 1);
    else
        snprintf(out, len, "%s", base);
}

/* ---- parts ---- */

/* "0-3,8,10-11" -> 7; NAN for an empty or bad list. */
static double cpulist_count(const char *s)
{
    if (!s || !*s) return NAN;
    double n = 0;
    while (*s) {
        char *e;
        long a = strtol(s, &e, 10), b = a;
        if (e == s || a < 0) return NAN;
        if (*e == '-') {
            const char *f = e + 1;
            b = strtol(f, &e, 10);
            if (e == f || b < a) return NAN;
        }
        n += (double)(b - a + 1);
        if (*e == ',')
            e++;
        else if (*e)
            return NAN;
        s = e;
    }
    return n;
}

void jobset_part_of(jobset_part *p, const char *run, const char *base, const jobdata *j)
{
    memset(p, 0, sizeof *p);
    snprintf(p->run, sizeof p->run, "%s", run);
    snprintf(p->base, sizeof p->base, "%s", base);
    const char *step = jd_str(j->tags, "slurm_step"), *task = jd_str(j->tags, "slurm_task");
    snprintf(p->step, sizeof p->step, "%s", step ? step : "");
    snprintf(p->task, sizeof p->task, "%s", task ? task : "");
    json_t *pid = json_object_get(j->start_ev ? j->start_ev : j->end_ev, "pid");
    p->pid = json_is_integer(pid) ? (long long)json_integer_value(pid) : -1;
    p->started = j->start_ev != NULL;
    p->node_cores = cpulist_count(jd_str(j->tags, "slurm_alloc_cores"));
    const char *mb = jd_str(j->tags, "slurm_alloc_mem_mb");
    p->node_mem = mb && atof(mb) > 0 ? atof(mb) * MIB : NAN;
    p->sum = j->sum;
    p->warnings = jobdata_warnings(j);
}

void jobset_part_free(jobset_part *p)
{
    json_decref(p->warnings);
    p->warnings = NULL;
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : jd_null();
}

json_t *jobset_part_json(const jobset_part *p)
{
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:I,s:b}", "run", p->run, "base", p->base, "step", p->step,
                  "task", p->task, "pid", (json_int_t)p->pid, "started", p->started);
    json_object_set_new(o, "node_cores", jnum(p->node_cores));
    json_object_set_new(o, "node_mem", jnum(p->node_mem));
    json_object_set_new(o, "summary", jobdata_summary_json(&p->sum));
    json_object_set(o, "warnings", p->warnings ? p->warnings : jd_null());
    return o;
}

int jobset_part_read(const json_t *o, jobset_part *p)
{
    memset(p, 0, sizeof *p);
    const json_t *s = json_object_get(o, "summary");
    if (!json_is_object(s) || !jd_str(o, "run")) return -1;
    snprintf(p->run, sizeof p->run, "%s", jd_str(o, "run"));
    snprintf(p->base, sizeof p->base, "%s", jd_str(o, "base") ? jd_str(o, "base") : p->run);
    snprintf(p->step, sizeof p->step, "%s", jd_str(o, "step") ? jd_str(o, "step") : "");
    snprintf(p->task, sizeof p->task, "%s", jd_str(o, "task") ? jd_str(o, "task") : "");
    json_t *pid = json_object_get(o, "pid");
    p->pid = json_is_integer(pid) ? (long long)json_integer_value(pid) : -1;
    p->started = json_is_true(json_object_get(o, "started"));
    p->node_cores = jd_num(o, "node_cores");
    p->node_mem = jd_num(o, "node_mem");
    jobdata tmp;
    jobdata_init(&tmp); /* the NANs of an unknown figure */
    p->sum = tmp.sum;
    jobdata_free(&tmp);
    jobdata_summary_read(s, &p->sum);
    json_t *w = json_object_get(o, "warnings");
    p->warnings = json_is_array(w) ? json_incref(w) : NULL;
    return 0;
}

/* 1 for KEY, N for KEY#N */
static long attempt(const jobset_part *p)
{
    size_t n = strlen(p->base);
    return !strncmp(p->run, p->base, n) && p->run[n] == '#' ? atol(p->run + n + 1) : 1;
}

static int part_cmp(const jobset_part *a, const jobset_part *b)
{
    double x = a->sum.start, y = b->sum.start;
    if (isnan(x) != isnan(y)) return isnan(x) ? 1 : -1;
    if (!isnan(x) && x != y) return x < y ? -1 : 1;
    return strcmp(a->run, b->run);
}

void jobset_order(jobset_part *parts, jobdata *runs, size_t n)
{
    /* insertion sort: the parts mostly come in order already */
    for (size_t i = 1; i < n; i++) {
        jobset_part p = parts[i];
        jobdata j;
        if (runs) j = runs[i];
        size_t k = i;
        while (k > 0 && part_cmp(&parts[k - 1], &p) > 0) {
            parts[k] = parts[k - 1];
            if (runs) runs[k] = runs[k - 1];
            k--;
        }
        parts[k] = p;
        if (runs) runs[k] = j;
    }
    for (size_t i = 0; i < n; i++) {
        parts[i].superseded = 0;
        for (size_t k = 0; k < n && !parts[i].superseded; k++)
            parts[i].superseded =
                !strcmp(parts[k].base, parts[i].base) && attempt(&parts[k]) > attempt(&parts[i]);
    }
}

size_t jobset_active(const jobset_part *parts, size_t n)
{
    size_t a = 0;
    for (size_t i = 0; i < n; i++) a += !parts[i].superseded;
    return a;
}

/* ---- grouping events, the page ---- */

void jobset_init(jobset *s)
{
    memset(s, 0, sizeof *s);
    s->job_events = json_array();
}

void jobset_free(jobset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        jobset_part_free(&s->parts[i]);
        jobdata_free(&s->runs[i]);
    }
    free(s->parts);
    free(s->runs);
    json_decref(s->job_events);
    memset(s, 0, sizeof *s);
}

static jobdata *new_run(jobset *s, const char *run, const char *base)
{
    if (s->n >= JOBSET_MAX_RUNS) return s->n ? &s->runs[s->n - 1] : NULL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        jobset_part *p = realloc(s->parts, cap * sizeof *p);
        if (!p) return NULL;
        s->parts = p;
        jobdata *r = realloc(s->runs, cap * sizeof *r);
        if (!r) return NULL;
        s->runs = r;
        s->cap = cap;
    }
    jobset_part *p = &s->parts[s->n];
    memset(p, 0, sizeof *p);
    snprintf(p->run, sizeof p->run, "%s", run);
    snprintf(p->base, sizeof p->base, "%s", base);
    p->pid = -1;
    jobdata_init(&s->runs[s->n]);
    return &s->runs[s->n++];
}

jobdata *jobset_run(jobset *s, const char *run, const char *base)
{
    for (size_t i = s->n; i-- > 0;)
        if (!strcmp(s->parts[i].run, run)) return &s->runs[i];
    return new_run(s, run, base);
}

int jobset_add(jobset *s, json_t *ev)
{
    if (!json_is_object(ev)) return -1;
    char base[200];
    long long pid;
    if (!jobset_run_base(ev, base, sizeof base, &pid)) {
        json_array_append(s->job_events, ev);
        return 0;
    }
    const char *name = event_name(ev);
    int is_start = name && !strcmp(name, "jobscope.start");
    /* the runs of this base, oldest first */
    jobset_ref refs[64] = {{0}};
    size_t idx[64], m = 0, nth = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->parts[i].base, base)) {
            nth++;
            if (m == 64)
                memmove(refs, refs + 1, 63 * sizeof *refs), memmove(idx, idx + 1, 63 * sizeof *idx),
                    m--;
            refs[m] = (jobset_ref){s->parts[i].pid, s->parts[i].started};
            idx[m++] = i;
        }
    int adopt;
    int k = jobset_choose(refs, m, pid, is_start, &adopt);
    jobdata *j;
    jobset_part *p;
    if (k < 0) {
        char key[200];
        jobset_key(base, nth, key, sizeof key);
        j = new_run(s, key, base);
        if (!j) return -1;
        p = &s->parts[j - s->runs];
        p->pid = pid;
    } else {
        j = &s->runs[idx[k]];
        p = &s->parts[idx[k]];
        if (adopt) p->pid = pid;
    }
    if (is_start) p->started = 1;
    return jobdata_add(j, ev);
}

void jobset_finish(jobset *s)
{
    if (s->finished) return;
    s->finished = 1;
    if (!s->n && json_array_size(s->job_events)) new_run(s, "", "");
    if (s->n == 1) { /* one run: the job's own events with it, as ever */
        size_t i;
        json_t *ev;
        json_array_foreach(s->job_events, i, ev) jobdata_add(&s->runs[0], ev);
    }
    for (size_t i = 0; i < s->n; i++) {
        char run[200], base[200];
        long long pid = s->parts[i].pid;
        int started = s->parts[i].started;
        snprintf(run, sizeof run, "%s", s->parts[i].run);
        snprintf(base, sizeof base, "%s", s->parts[i].base);
        jobdata_finish(&s->runs[i]);
        jobset_part_of(&s->parts[i], run, base, &s->runs[i]);
        if (pid >= 0) s->parts[i].pid = pid;
        s->parts[i].started |= started;
    }
    jobset_order(s->parts, s->runs, s->n);
}

/* The runs' series summed on a common time grid: counters held at their
 * last value, gauges counted while a run is alive; CPU % and rates are
 * then computed from the summed counters (jobdata_finish). */
static void merge_series(jobdata *w, const jobset *s)
{
    static const int cum[] = {JD_RCHAR, JD_WCHAR, JD_RBYTES, JD_WBYTES, JD_CPUTIME, JD_IOWAIT};
    static const int gauge[] = {JD_RSS,     JD_VM,      JD_SWAP,     JD_PROCS,
                                JD_THREADS, JD_GPU_MEM, JD_GPU_UTIL, JD_CG_MEM};
    double t0 = INFINITY, t1 = -INFINITY, step = INFINITY;
    for (size_t i = 0; i < s->n; i++) {
        const jobdata *r = &s->runs[i];
        if (s->parts[i].superseded || !r->n) continue;
        t0 = fmin(t0, r->col[JD_TS][0]);
        t1 = fmax(t1, r->col[JD_TS][r->n - 1]);
        for (size_t k = 1; k < r->n; k++) {
            double d = r->col[JD_TS][k] - r->col[JD_TS][k - 1];
            if (d > 0.01 && d < step) step = d;
        }
    }
    if (!(t1 > t0)) return;
    size_t n = isfinite(step) ? (size_t)((t1 - t0) / step) + 1 : 2;
    if (n > GRID_MAX) n = GRID_MAX;
    if (n < 2) n = 2;
    double dt = (t1 - t0) / (double)(n - 1);
    for (int c = 0; c < JD_NCOL; c++) {
        w->col[c] = malloc(n * sizeof(double));
        if (!w->col[c]) return;
        for (size_t g = 0; g < n; g++) w->col[c][g] = NAN;
    }
    w->n = w->cap = n;
    double *alive = calloc(n, sizeof *alive);
    int any[JD_NCOL] = {0};
    for (size_t g = 0; g < n; g++) {
        w->col[JD_TS][g] = g + 1 == n ? t1 : t0 + dt * (double)g;
        w->col[JD_ELAPSED][g] = w->col[JD_TS][g] - t0;
        for (size_t k = 0; k < sizeof cum / sizeof *cum; k++) w->col[cum[k]][g] = 0;
        for (size_t k = 0; k < sizeof gauge / sizeof *gauge; k++) w->col[gauge[k]][g] = 0;
    }
    for (size_t i = 0; i < s->n && alive; i++) {
        const jobdata *r = &s->runs[i];
        if (s->parts[i].superseded || !r->n) continue;
        double end = isfinite(s->parts[i].sum.end) ? s->parts[i].sum.end : r->col[JD_TS][r->n - 1];
        double last[JD_NCOL];
        for (int c = 0; c < JD_NCOL; c++) last[c] = NAN;
        size_t k = 0;
        for (size_t g = 0; g < n; g++) {
            double t = w->col[JD_TS][g];
            while (k < r->n && r->col[JD_TS][k] <= t + 1e-9) {
                for (int c = 0; c < JD_NCOL; c++)
                    if (!isnan(r->col[c][k])) last[c] = r->col[c][k];
                k++;
            }
            if (!k) continue; /* not started yet */
            for (size_t q = 0; q < sizeof cum / sizeof *cum; q++)
                if (!isnan(last[cum[q]])) w->col[cum[q]][g] += last[cum[q]], any[cum[q]] = 1;
            if (t > end + 1e-9) continue; /* ended: no gauge */
            alive[g]++;
            for (size_t q = 0; q < sizeof gauge / sizeof *gauge; q++)
                if (!isnan(last[gauge[q]]))
                    w->col[gauge[q]][g] += last[gauge[q]], any[gauge[q]] = 1;
        }
    }
    for (size_t g = 0; g < n; g++)
        for (size_t q = 0; q < sizeof gauge / sizeof *gauge; q++)
            if (!alive || !alive[g]) w->col[gauge[q]][g] = NAN;
    for (int c = 0; c < JD_NCOL; c++)
        if (c != JD_TS && c != JD_ELAPSED && !any[c])
            for (size_t g = 0; g < n; g++) w->col[c][g] = NAN;
    free(alive);
}

json_t *jobset_json(jobset *s, size_t max_points)
{
    jobset_finish(s);
    size_t active = jobset_active(s->parts, s->n), one = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->parts[i].superseded) one = i;
    if (s->n == 1) return jobdata_json(&s->runs[0], max_points);
    json_t *page;
    jd_summary whole;
    jobset_whole(s->parts, s->n, &whole);
    if (active == 1) {
        /* a job run again: its latest attempt, the earlier ones listed */
        page = jobdata_json(&s->runs[one], max_points);
    } else {
        jobdata w;
        jobdata_init(&w);
        merge_series(&w, s);
        jobdata_finish(&w);
        w.sum = whole;
        /* the job's other events: its own, then its runs' (limits, GPUs...) */
        size_t i, k;
        json_t *ev;
        json_array_foreach(s->job_events, i, ev) json_array_append(w.events, ev);
        for (k = 0; k < s->n; k++) {
            if (s->parts[k].superseded) continue;
            json_array_foreach(s->runs[k].events, i, ev)
            {
                if (json_array_size(w.events) >= 2000) {
                    w.events_dropped++;
                    continue;
                }
                json_array_append(w.events, ev);
            }
            w.events_dropped += s->runs[k].events_dropped;
        }
        /* the tags all runs share: a task's own are its run's */
        const json_t *t0 = s->runs[one].tags;
        if (json_is_object(t0)) {
            w.tags = json_deep_copy(t0);
            static const char *const own[] = {"slurm_step", "slurm_task", "slurm_step_cores",
                                              "slurm_step_mem_mb"};
            for (size_t q = 0; q < sizeof own / sizeof *own; q++) json_object_del(w.tags, own[q]);
        }
        page = jobdata_json(&w, max_points);
        json_object_set_new(page, "warnings", jobset_warnings(s->parts, s->n, &whole));
        jobdata_free(&w);
    }
    json_t *details = jobset_details(s->parts, s->n, &whole);
    json_object_update(page, details);
    json_decref(details);
    return page;
}
