/* jobdata_json.c — a job as JSON (see jobdata.h): its summary, and the
 * whole page object the dashboard and reports draw (series thinned to a
 * number of points keeping the CPU extremes, custom metrics, events,
 * warnings, the assessment); plus the helpers every JSON writer of the
 * views shares. */
#include "report/jobdata.h"
#include "report/assess.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : jd_null();
}

json_t *jobdata_summary_json(const jd_summary *s)
{
    json_t *o = json_object();
#define S(k, v)                                                                                    \
    if ((v)[0])                                                                                    \
        json_object_set_new(o, k, json_string(v));                                                 \
    else                                                                                           \
        json_object_set_new(o, k, jd_null())
#define N(k, v) json_object_set_new(o, k, jnum(v))
    S("job_id", s->job_id);
    S("exe", s->exe);
    S("cmd", s->cmd);
    S("host", s->host);
    S("wf", s->wf);
    S("wf_label", s->wf_label);
    S("xformation", s->xformation);
    S("type", s->type);
    S("user", s->user);
    S("site", s->site);
    S("exit_type", s->exit_type);
    S("signal_name", s->signal_name);
    S("stopped_by", s->stopped_by);
    S("stop_limit", s->stop_limit);
    S("batch_system", s->batch_system);
    S("batch_id", s->batch_id);
    json_object_set_new(o, "exit_code", s->exit_code >= 0 ? json_integer(s->exit_code) : jd_null());
    json_object_set_new(o, "finished", json_boolean(s->has_end));
    N("start", s->start);
    N("end", s->end);
    N("duration", s->duration);
    N("cpu_time", s->cpu_time);
    N("cpu_efficiency", s->cpu_eff);
    N("cores", s->cores);
    S("cores_from", s->cores_from);
    N("alloc_mem", s->alloc_mem);
    S("alloc_mem_from", s->alloc_mem_from);
    N("alloc_gpus", s->alloc_gpus);
    S("alloc_gpus_from", s->alloc_gpus_from);
    N("peak_mem", s->peak_mem);
    N("cg_peak_mem", s->cg_peak_mem);
    N("threads_peak", s->threads_peak);
    N("cpu_wait", s->cpu_wait);
    N("cores_wanted", assess_cores_wanted(s));
    N("rchar", s->rchar);
    N("wchar", s->wchar);
    N("read_bytes", s->read_bytes);
    N("write_bytes", s->write_bytes);
    N("gpu_devices", s->gpu_devices);
    N("gpu_peak_mem", s->gpu_peak_mem);
    N("gpu_util_mean", s->gpu_util_mean);
    N("gpu_util_peak", s->gpu_util_peak);
    N("req_mem", s->req_mem);
    N("req_cpus", s->req_cpus);
    N("req_wall", s->req_wall);
    N("req_gpus", s->req_gpus);
    json_object_set_new(o, "samples", json_integer((json_int_t)s->samples));
    /* a whole job of several runs only (jobset.h): a run's answer is as before */
    if (isfinite(s->nodes)) {
        N("nodes", s->nodes);
        N("tasks_per_node", s->tasks_per_node);
        N("node_peak_mem", s->node_peak_mem);
        S("oom_run", s->oom_run);
    }
#undef S
#undef N
    return o;
}

void jobdata_summary_read(const json_t *o, jd_summary *s)
{
    static const struct {
        const char *key;
        size_t off, len;
    } strs[] = {
#define S(k, f) {k, offsetof(jd_summary, f), sizeof((jd_summary *)0)->f}
        S("job_id", job_id),
        S("exe", exe),
        S("cmd", cmd),
        S("host", host),
        S("wf", wf),
        S("wf_label", wf_label),
        S("xformation", xformation),
        S("type", type),
        S("user", user),
        S("site", site),
        S("exit_type", exit_type),
        S("signal_name", signal_name),
        S("stopped_by", stopped_by),
        S("stop_limit", stop_limit),
        S("batch_system", batch_system),
        S("batch_id", batch_id),
        S("cores_from", cores_from),
        S("alloc_mem_from", alloc_mem_from),
        S("alloc_gpus_from", alloc_gpus_from),
        S("oom_run", oom_run),
#undef S
    };
    static const struct {
        const char *key;
        size_t off;
    } nums[] = {
#define N(k, f) {k, offsetof(jd_summary, f)}
        N("start", start),
        N("end", end),
        N("duration", duration),
        N("cpu_time", cpu_time),
        N("cpu_efficiency", cpu_eff),
        N("cores", cores),
        N("alloc_mem", alloc_mem),
        N("alloc_gpus", alloc_gpus),
        N("peak_mem", peak_mem),
        N("cg_peak_mem", cg_peak_mem),
        N("threads_peak", threads_peak),
        N("cpu_wait", cpu_wait),
        N("rchar", rchar),
        N("wchar", wchar),
        N("read_bytes", read_bytes),
        N("write_bytes", write_bytes),
        N("gpu_devices", gpu_devices),
        N("gpu_peak_mem", gpu_peak_mem),
        N("gpu_util_mean", gpu_util_mean),
        N("gpu_util_peak", gpu_util_peak),
        N("req_mem", req_mem),
        N("req_cpus", req_cpus),
        N("req_wall", req_wall),
        N("req_gpus", req_gpus),
        N("nodes", nodes),
        N("tasks_per_node", tasks_per_node),
        N("node_peak_mem", node_peak_mem),
#undef N
    };
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
        const char *v = jd_str(o, strs[i].key);
        snprintf((char *)s + strs[i].off, strs[i].len, "%s", v ? v : "");
    }
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        *(double *)((char *)s + nums[i].off) = jd_num(o, nums[i].key);
    json_t *ec = json_object_get(o, "exit_code");
    s->exit_code = json_is_integer(ec) ? (int)json_integer_value(ec) : -1;
    s->has_end = json_is_true(json_object_get(o, "finished"));
    double n = jd_num(o, "samples");
    s->samples = n > 0 ? (size_t)n : 0;
}

/* Indexes to keep when thinning n points to about max: per bucket the first,
 * and the min and max of `key` (CPU %), so spikes survive. */
static size_t *thin(const double *key, size_t n, size_t max, size_t *out_n)
{
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), m = 0;
    if (!idx) {
        *out_n = 0;
        return NULL;
    }
    if (!max || n <= max) {
        for (size_t i = 0; i < n; i++) idx[m++] = i;
        *out_n = m;
        return idx;
    }
    size_t buckets = max / 3 ? max / 3 : 1;
    for (size_t b = 0; b < buckets; b++) {
        size_t a = b * n / buckets, e = (b + 1) * n / buckets;
        if (a >= e) continue;
        size_t lo = a, hi = a;
        for (size_t i = a; i < e; i++) {
            if (key && !isnan(key[i]) && (isnan(key[lo]) || key[i] < key[lo])) lo = i;
            if (key && !isnan(key[i]) && (isnan(key[hi]) || key[i] > key[hi])) hi = i;
        }
        size_t t[3] = {a, lo < hi ? lo : hi, lo < hi ? hi : lo};
        for (int k = 0; k < 3; k++)
            if (!m || idx[m - 1] < t[k]) idx[m++] = t[k];
    }
    if (idx[m - 1] != n - 1) idx[m++] = n - 1;
    *out_n = m;
    return idx;
}

json_t *jobdata_json(const jobdata *j, size_t max_points)
{
    json_t *o = json_object();
    json_object_set_new(o, "summary", jobdata_summary_json(&j->sum));
    json_object_set(o, "start", j->start_ev ? j->start_ev : jd_null());
    json_object_set(o, "end", j->end_ev ? j->end_ev : jd_null());
    json_object_set(o, "tags", j->tags ? j->tags : jd_null());
    size_t m;
    size_t *idx = thin(j->col[JD_CPU], j->n, max_points, &m);
    json_t *series = json_object();
    for (int c = 0; c < JD_NCOL; c++) {
        int any = 0;
        for (size_t i = 0; i < j->n && !any; i++) any = !isnan(j->col[c][i]);
        if (!any && c != JD_TS) continue;
        json_t *a = json_array();
        for (size_t k = 0; k < m; k++) json_array_append_new(a, jnum(j->col[c][idx[k]]));
        json_object_set_new(series, jobdata_col_names[c], a);
    }
    free(idx);
    json_object_set_new(o, "series", series);
    json_t *extra = json_array();
    for (size_t e = 0; e < j->nextra; e++) {
        const jd_series *s = &j->extra[e];
        size_t *ix = thin(s->val, s->n, max_points, &m);
        json_t *ts = json_array(), *val = json_array();
        for (size_t k = 0; k < m; k++) {
            json_array_append_new(ts, jnum(s->ts[ix[k]]));
            json_array_append_new(val, jnum(s->val[ix[k]]));
        }
        free(ix);
        json_array_append_new(extra, json_pack("{s:s,s:s,s:o,s:o}", "name", s->name, "unit",
                                               s->unit, "ts", ts, "val", val));
    }
    json_object_set_new(o, "extra", extra);
    json_object_set(o, "events", j->events);
    json_object_set_new(o, "events_dropped", json_integer((json_int_t)j->events_dropped));
    json_object_set_new(o, "warnings", jobdata_warnings(j));
    json_object_set_new(o, "assessment", assess_json(j, ASSESS_MARGIN));
    return o;
}

json_t *jd_null(void)
{
    return json_null();
}

double jd_percentile(const double *v, size_t n, double p)
{
    if (!n) return NAN;
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1) return v[n - 1];
    return v[lo] + (h - (double)lo) * (v[lo + 1] - v[lo]);
}
