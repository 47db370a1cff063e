/* assess.c — one job's assessment (see assess.h, docs/views.md "A job's
 * assessment"): bars against the allocation, notes with their reasons, the
 * next-time request; and its terminal form for `jobscope summary`.
 *
 * Thresholds, as jobstats' defaults: CPU efficiency below 65% is bad, below
 * 80% worth a note; memory below 70% of the allocation is worth a smaller
 * request, above 90% a larger one; a GPU below 5% is idle, below 25% low.
 * Jobs shorter than 10 s get no efficiency note (start-up dominates). */
#include "report/assess.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MIB 1048576.0
#define GIB (1024.0 * MIB)

static void fmt_dur(double s, char *buf, size_t len)
{
    if (!isfinite(s)) {
        snprintf(buf, len, "-");
        return;
    }
    if (s < 60) {
        snprintf(buf, len, "%.1f s", s);
        return;
    }
    jd_fmt_hms(s, buf, len);
}

double assess_cores_wanted(const jd_summary *s)
{
    if (isfinite(s->want_cores)) return s->want_cores; /* a whole job's, per task (jobset.c) */
    if (!(s->duration > 0) || isnan(s->cpu_time)) return NAN;
    double want = (s->cpu_time + (s->cpu_wait > 0 ? s->cpu_wait : 0)) / s->duration;
    if (s->threads_peak >= 1 && want > s->threads_peak) want = s->threads_peak;
    return want;
}

static int out_of_memory(const jd_summary *s)
{
    return !strcmp(s->stopped_by, "oom_kill") || s->oom_run[0] ||
           (!strcmp(s->stopped_by, "limit") &&
            (!strcmp(s->stop_limit, "memory") || !strcmp(s->stop_limit, "rss")));
}

/* A whole job's nodes (jobset.c); 1 for a run. */
static double nodes_of(const jd_summary *s)
{
    return s->nodes > 1 ? s->nodes : 1;
}

jd_request assess_next_request(const jobdata *j, double margin)
{
    const jd_summary *s = &j->sum;
    /* memory is asked per node (sbatch --mem): a whole job's largest node */
    double mem = isfinite(s->node_peak_mem) ? s->node_peak_mem : s->peak_mem, wall = s->duration;
    double node_alloc = s->alloc_mem / nodes_of(s);
    if (out_of_memory(s)) /* the peak is a lower bound: half as much again */
        mem = fmax(isnan(mem) ? 0 : mem, isnan(node_alloc) ? 0 : node_alloc) * 1.5 / (1 + margin);
    if (!strcmp(s->stopped_by, "limit") && !strcmp(s->stop_limit, "wall"))
        wall =
            fmax(isnan(wall) ? 0 : wall, isnan(s->req_wall) ? 0 : s->req_wall) * 1.5 / (1 + margin);
    double want = assess_cores_wanted(s);
    double cores = isnan(want) ? s->cores : fmax(1, ceil(want - 0.05));
    double gpus = 0;
    if (s->gpu_devices > 0 && (s->gpu_util_mean > 0 || s->gpu_peak_mem > 0)) gpus = s->gpu_devices;
    jd_request r = jd_request_make(mem, cores, wall, gpus, s->gpu_peak_mem, margin);
    if (s->tasks_per_node > 1) r.tasks = s->tasks_per_node;
    return r;
}

/* ---- the scheduler's words ---- */

enum sched { SCHED_NONE, SCHED_SLURM, SCHED_HTCONDOR, SCHED_PEGASUS };

static enum sched scheduler_of(const jd_summary *s)
{
    if (!strcmp(s->batch_system, "slurm") || !strncmp(s->cores_from, "SLURM_", 6))
        return SCHED_SLURM;
    if (!strcmp(s->batch_system, "condor") || !strncmp(s->cores_from, "HTCondor", 8))
        return SCHED_HTCONDOR;
    if (s->wf[0] || s->xformation[0]) return SCHED_PEGASUS;
    return SCHED_NONE;
}

static const char *const sched_name[] = {NULL, "slurm", "htcondor", "pegasus"};

/* One setting in the scheduler's syntax: what 'm' memory, 'c' CPUs, 'w'
 * wall time, 'g' GPUs. */
static void setting(enum sched sc, char what, const jd_request *r, char *buf, size_t len)
{
    char hms[32], b[32];
    jd_fmt_hms(r->wall, hms, sizeof hms);
    double mib = ceil(r->mem / MIB);
    switch (sc) {
    case SCHED_SLURM:
        if (what == 'm') snprintf(buf, len, "--mem=%.0fM", mib);
        if (what == 'c' && r->tasks > 1)
            snprintf(buf, len, "--ntasks-per-node=%.0f --cpus-per-task=%.0f", r->tasks, r->cores);
        else if (what == 'c')
            snprintf(buf, len, "--cpus-per-task=%.0f", r->cores);
        if (what == 'w') snprintf(buf, len, "--time=%s", hms);
        if (what == 'g') snprintf(buf, len, "--gres=gpu:%.0f", r->gpus);
        break;
    case SCHED_HTCONDOR:
        if (what == 'm') snprintf(buf, len, "request_memory = %.0fM", mib);
        if (what == 'c') snprintf(buf, len, "request_cpus = %.0f", r->cores * fmax(1, r->tasks));
        if (what == 'w') snprintf(buf, len, "allowed_execute_duration = %.0f", r->wall);
        if (what == 'g') snprintf(buf, len, "request_gpus = %.0f", r->gpus);
        break;
    case SCHED_PEGASUS:
        if (what == 'm') snprintf(buf, len, "profile pegasus \"memory\" \"%.0f\"", mib);
        if (what == 'c')
            snprintf(buf, len, "profile pegasus \"cores\" \"%.0f\"", r->cores * fmax(1, r->tasks));
        if (what == 'w') snprintf(buf, len, "profile pegasus \"runtime\" \"%.0f\"", r->wall);
        if (what == 'g') snprintf(buf, len, "profile pegasus \"gpus\" \"%.0f\"", r->gpus);
        break;
    default:
        jd_fmt_bytes(r->mem, b, sizeof b);
        if (what == 'm') snprintf(buf, len, "%s of memory", b);
        if (what == 'c') {
            double c = r->cores * fmax(1, r->tasks);
            snprintf(buf, len, "%.0f CPU%s", c, c == 1 ? "" : "s");
        }
        if (what == 'w') snprintf(buf, len, "%s of wall time", hms);
        if (what == 'g') snprintf(buf, len, "%.0f GPU%s", r->gpus, r->gpus == 1 ? "" : "s");
        break;
    }
}

/* ---- notes ---- */

static void note(json_t *notes, const char *level, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note(json_t *notes, const char *level, const char *kind, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(notes,
                          json_pack("{s:s,s:s,s:s}", "level", level, "kind", kind, "text", text));
}

/* Memory growing through the run: the mean RSS of the last quarter of the
 * job at least 1.5 x the first quarter's and 64 MiB more, and rising from
 * quarter to quarter. */
static int memory_grows(const jobdata *j, double *from, double *to)
{
    const jd_summary *s = &j->sum;
    double q[4] = {0}, t0 = s->start, d = s->duration;
    int cnt[4] = {0};
    if (!(d > 0) || j->n < 8) return 0;
    for (size_t i = 0; i < j->n; i++) {
        double v = j->col[JD_RSS][i];
        if (isnan(v)) continue;
        int k = (int)((j->col[JD_TS][i] - t0) / d * 4);
        k = k < 0 ? 0 : k > 3 ? 3 : k;
        q[k] += v, cnt[k]++;
    }
    for (int k = 0; k < 4; k++) {
        if (!cnt[k]) return 0;
        q[k] /= cnt[k];
    }
    *from = q[0], *to = q[3];
    return q[3] >= 1.5 * q[0] && q[3] - q[0] >= 64 * MIB && q[1] >= q[0] && q[2] >= q[1] &&
           q[3] >= q[2];
}

static void cpu_notes(const jobdata *j, json_t *notes, enum sched sc, const jd_request *next)
{
    const jd_summary *s = &j->sum;
    if (!(s->duration >= 10) || isnan(s->cpu_eff)) return;
    double used = s->cpu_time / s->duration, eff = s->cpu_eff;
    char reasons[512] = "", buf[128], set[96];
    size_t rl = 0;
    jd_phase ph[1];
    double idle_s, io_s;
    size_t nidle = jobdata_idle_phases(j, ph, 1, &idle_s);
    size_t nio = jobdata_io_phases(j, ph, 1, &io_s);
    if (nidle)
        rl += (size_t)snprintf(reasons + rl, sizeof reasons - rl,
                               " It was idle for %.0f s (%.0f%% of its time, %zu phase%s).", idle_s,
                               100 * idle_s / s->duration, nidle, nidle == 1 ? "" : "s");
    if (nio && rl < sizeof reasons)
        rl += (size_t)snprintf(reasons + rl, sizeof reasons - rl,
                               " It waited on I/O or moved data at low CPU for %.0f s (%.0f%%).",
                               io_s, 100 * io_s / s->duration);
    if (s->threads_peak >= 1 && s->threads_peak < s->cores && rl < sizeof reasons)
        rl += (size_t)snprintf(reasons + rl, sizeof reasons - rl,
                               " It never ran more than %.0f thread%s at once.", s->threads_peak,
                               s->threads_peak == 1 ? "" : "s");
    if (eff < 0.80) {
        setting(sc, 'c', next, set, sizeof set);
        if (next->cores * fmax(1, next->tasks) * nodes_of(s) < s->cores)
            snprintf(buf, sizeof buf, " Request %s next time.", set);
        else
            snprintf(buf, sizeof buf, "%s", "");
        note(notes, eff < 0.65 ? "bad" : "warn", "cpu",
             "This job used %.0f%% of the %g CPU%s allocated to it (%s): %.2f CPU%s busy on "
             "average.%s%s",
             100 * eff, s->cores, s->cores == 1 ? "" : "s", s->cores_from, used,
             used >= 0.995 && used < 1.005 ? "" : "s", reasons, buf);
    } else if (eff > 1.05) {
        note(notes, "warn", "cpu",
             "This job kept %.2f CPUs busy, more than the %g allocated to it (%s): the "
             "allocation is not enforced; request %.0f.",
             used, s->cores, s->cores_from, next->cores);
    }
    if (s->cpu_wait > 0 && s->cpu_wait >= 0.2 * s->duration) {
        setting(sc, 'c', next, set, sizeof set);
        note(notes, "warn", "contention",
             "Its processes waited for a CPU %.0f%% of the time (the node was crowded or the "
             "allocation too small): it could have kept %.1f CPUs busy (%s).",
             100 * s->cpu_wait / s->duration, assess_cores_wanted(s), set);
    }
}

static void memory_notes(const jobdata *j, json_t *notes, enum sched sc, const jd_request *next)
{
    const jd_summary *s = &j->sum;
    char peak[32], alloc[32], set[96], cg[32], a[32], b[32];
    jd_fmt_bytes(s->peak_mem, peak, sizeof peak);
    jd_fmt_bytes(s->alloc_mem, alloc, sizeof alloc);
    setting(sc, 'm', next, set, sizeof set);
    if (s->oom_run[0] && strcmp(s->stopped_by, "oom_kill")) {
        note(notes, "bad", "memory",
             "Its run %s ran out of memory (the OOM killer); the job used %s%s%s%s in all: it "
             "needs more than that. Request %s next time.",
             s->oom_run, peak, isfinite(s->alloc_mem) ? " of " : "",
             isfinite(s->alloc_mem) ? alloc : "", isfinite(s->alloc_mem) ? " allocated" : "", set);
    } else if (out_of_memory(s)) {
        note(notes, "bad", "memory",
             "This job ran out of memory (%s) at %s%s%s%s: it needs more than that. Request %s "
             "next time.",
             !strcmp(s->stopped_by, "oom_kill") ? "the OOM killer" : "--limit memory", peak,
             isfinite(s->alloc_mem) ? " of " : "", isfinite(s->alloc_mem) ? alloc : "",
             isfinite(s->alloc_mem) ? " allocated" : "", set);
    } else if (isfinite(s->alloc_mem) && s->alloc_mem > 0 && isfinite(s->peak_mem)) {
        double f = s->peak_mem / s->alloc_mem;
        if (f < 0.70 && s->alloc_mem / nodes_of(s) - next->mem >= 64 * MIB)
            note(notes, "warn", "memory",
                 "This job used %s of the %s of memory allocated to it (%s), %.0f%%: request "
                 "%s next time.",
                 peak, alloc, s->alloc_mem_from, 100 * f, set);
        else if (f > 1.0)
            note(notes, "bad", "memory",
                 "This job used %s, more than the %s allocated to it (%s): the limit was not "
                 "enforced, or the job shared pages its processes each count. Request %s next "
                 "time.",
                 peak, alloc, s->alloc_mem_from, set);
        else if (f >= 0.90)
            note(notes, "warn", "memory",
                 "This job used %s of the %s allocated to it (%s), %.0f%%: close to the limit. "
                 "Request %s next time.",
                 peak, alloc, s->alloc_mem_from, 100 * f, set);
    } else if (isfinite(s->peak_mem)) {
        note(notes, "info", "memory",
             "No memory allocation was recorded; the job's peak was %s: request %s next time.",
             peak, set);
    }
    if (isfinite(s->cg_peak_mem) && isfinite(s->peak_mem) && s->cg_peak_mem >= 1.5 * s->peak_mem &&
        s->cg_peak_mem - s->peak_mem >= 64 * MIB) {
        jd_fmt_bytes(s->cg_peak_mem, cg, sizeof cg);
        note(notes, "info", "page_cache",
             "The cgroup's memory peak, %s, also counts page cache (file data the kernel keeps "
             "and gives back when memory runs short); the job itself needed %s.",
             cg, peak);
    }
    double from, to;
    /* not for a whole job of several runs: its steps differ by design */
    if (!isfinite(s->nodes) && memory_grows(j, &from, &to)) {
        jd_fmt_bytes(from, a, sizeof a);
        jd_fmt_bytes(to, b, sizeof b);
        note(notes, "info", "memory_growth",
             "Memory grew steadily through the run, from %s on average in its first quarter to "
             "%s in its last (a leak, or data that accumulates): a longer run needs more.",
             a, b);
    }
}

static void other_notes(const jobdata *j, json_t *notes, enum sched sc, const jd_request *next)
{
    const jd_summary *s = &j->sum;
    char set[96], d[32], r[32];
    fmt_dur(s->duration, d, sizeof d);
    if (!strcmp(s->stopped_by, "limit") && !strcmp(s->stop_limit, "wall")) {
        setting(sc, 'w', next, set, sizeof set);
        note(notes, "bad", "wall",
             "This job was stopped by its time limit after %s. Request more time: %s.", d, set);
    } else if (!strcmp(s->stopped_by, "limit") && !out_of_memory(s)) {
        note(notes, "bad", "stopped", "This job was stopped by --limit %s after %s.", s->stop_limit,
             d);
    } else if (!strcmp(s->stopped_by, "signal")) {
        note(notes, "warn", "stopped",
             "This job was killed by %s after %s: its figures cover what ran until then.",
             s->signal_name[0] ? s->signal_name : "a signal", d);
    } else if (isfinite(s->req_wall) && s->req_wall > 0 && s->duration > 0 && s->has_end &&
               s->duration < 0.5 * s->req_wall) {
        setting(sc, 'w', next, set, sizeof set);
        fmt_dur(s->req_wall, r, sizeof r);
        note(notes, "warn", "wall",
             "This job needed %.0f%% of the time it requested (%s): request %s next time.",
             100 * s->duration / s->req_wall, r, set);
    }
    double gpus = s->alloc_gpus > 0 ? s->alloc_gpus : s->gpu_devices;
    if (gpus > 0 && s->duration >= 10) {
        double util = isnan(s->gpu_util_mean) ? 0 : s->gpu_util_mean / gpus;
        if (!(s->gpu_devices > 0) || util < 5)
            note(notes, "bad", "gpu",
                 "This job did not use the %g GPU%s allocated to it (mean utilisation %.1f%%): "
                 "is the code GPU-enabled?%s",
                 gpus, gpus == 1 ? "" : "s", util,
                 next->gpus < gpus ? " Request none unless it needs one." : "");
        else if (util < 25)
            note(notes, "warn", "gpu",
                 "The GPU utilisation of this job is %.0f%% on average: low for a job that holds "
                 "%g GPU%s.",
                 util, gpus, gpus == 1 ? "" : "s");
    }
}

/* ---- bars ---- */

static void bar(json_t *bars, const char *key, const char *label, double used, double of,
                const char *text, const char *basis)
{
    json_t *b =
        json_pack("{s:s,s:s,s:s,s:s}", "key", key, "label", label, "text", text, "basis", basis);
    json_object_set_new(b, "used", isfinite(used) ? json_real(used) : jd_null());
    json_object_set_new(b, "of", isfinite(of) ? json_real(of) : jd_null());
    json_object_set_new(b, "pct",
                        isfinite(used) && of > 0 ? json_real(100 * used / of) : jd_null());
    json_array_append_new(bars, b);
}

/* The GPUs' total memory from the gpu.env event (0 when unknown). */
static double gpu_total_memory(const jobdata *j, double devices)
{
    size_t i, k;
    json_t *ev, *d;
    double total = 0;
    json_array_foreach(j->events, i, ev)
    {
        if (!jd_str(ev, "event") || strcmp(jd_str(ev, "event"), "kickstart.inv.online.gpu.env"))
            continue;
        json_array_foreach(json_object_get(ev, "devices"), k,
                           d) if ((double)k < devices && jd_num(d, "total_memory") > 0) total +=
            jd_num(d, "total_memory");
    }
    return total;
}

static json_t *bars_of(const jobdata *j)
{
    const jd_summary *s = &j->sum;
    json_t *bars = json_array();
    char t[160], a[32], b[32];
    double used = s->duration > 0 ? s->cpu_time / s->duration : NAN;
    snprintf(t, sizeof t, "%.2f of %g CPU%s (%s)", used, s->cores, s->cores == 1 ? "" : "s",
             s->cores_from);
    bar(bars, "cpu", "CPU utilization", used, s->cores, t, s->cores_from);
    double of = s->alloc_mem;
    const char *basis = s->alloc_mem_from;
    if (!isfinite(of)) {
        of = jd_num(j->start_ev, "mem_total_kb") * 1024;
        basis = "host";
    }
    jd_fmt_bytes(s->peak_mem, a, sizeof a);
    jd_fmt_bytes(of, b, sizeof b);
    snprintf(t, sizeof t, "peak %s of %s (%s)", a, b,
             !strcmp(basis, "host") ? "the host's memory: no allocation recorded" : basis);
    if (isfinite(s->peak_mem)) bar(bars, "memory", "CPU memory usage", s->peak_mem, of, t, basis);
    double gpus = s->alloc_gpus > 0 ? s->alloc_gpus : s->gpu_devices;
    if (gpus > 0) {
        double util = isnan(s->gpu_util_mean) ? 0 : s->gpu_util_mean / 100;
        snprintf(t, sizeof t, "%.0f%% of %g GPU%s on average", 100 * util / gpus, gpus,
                 gpus == 1 ? "" : "s");
        bar(bars, "gpu", "GPU utilization", util, gpus, t,
            s->alloc_gpus > 0 ? s->alloc_gpus_from : "devices used");
        double total = gpu_total_memory(j, gpus);
        if (total > 0 && isfinite(s->gpu_peak_mem)) {
            jd_fmt_bytes(s->gpu_peak_mem, a, sizeof a);
            jd_fmt_bytes(total, b, sizeof b);
            snprintf(t, sizeof t, "peak %s of %s", a, b);
            bar(bars, "gpu_memory", "GPU memory usage", s->gpu_peak_mem, total, t, "devices");
        }
    }
    return bars;
}

json_t *assess_json(const jobdata *j, double margin)
{
    const jd_summary *s = &j->sum;
    enum sched sc = scheduler_of(s);
    jd_request next = assess_next_request(j, margin);
    json_t *notes = json_array();
    if (!s->has_end && !strcmp(s->type, "jobscope")) {
        char d[32];
        fmt_dur(s->duration, d, sizeof d);
        note(notes, "info", "running",
             "The job is still running: these are the figures of its first %s.", d);
    }
    other_notes(j, notes, sc, &next);
    memory_notes(j, notes, sc, &next);
    cpu_notes(j, notes, sc, &next);
    json_t *alloc = json_pack("{s:f,s:s}", "cpus", s->cores, "cpus_from", s->cores_from);
    json_object_set_new(alloc, "mem", isfinite(s->alloc_mem) ? json_real(s->alloc_mem) : jd_null());
    json_object_set_new(alloc, "mem_from",
                        s->alloc_mem_from[0] ? json_string(s->alloc_mem_from) : jd_null());
    json_object_set_new(alloc, "gpus",
                        isfinite(s->alloc_gpus) ? json_real(s->alloc_gpus) : jd_null());
    json_object_set_new(alloc, "gpus_from",
                        s->alloc_gpus_from[0] ? json_string(s->alloc_gpus_from) : jd_null());
    json_t *o = json_object();
    json_object_set_new(o, "allocation", alloc);
    json_object_set_new(o, "bars", bars_of(j));
    json_object_set_new(o, "notes", notes);
    json_t *nx = jd_request_json(&next);
    json_object_set_new(nx, "margin", json_real(margin));
    json_object_set_new(o, "next", nx);
    json_object_set_new(o, "scheduler", sched_name[sc] ? json_string(sched_name[sc]) : jd_null());
    return o;
}
