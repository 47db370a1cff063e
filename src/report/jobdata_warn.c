/* jobdata_warn.c — a job's warnings (docs/views.md "Warnings") and the
 * phases they are made of: low CPU efficiency against the allocation,
 * memory near a limit (the job's own peak, page cache excluded), an idle
 * GPU, I/O-bound and idle phases, and how the job was stopped.  The phases
 * are also the reasons the assessment (assess.c) gives. */
#include "report/jobdata.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_PHASE_WARNINGS 5

static void warn(json_t *arr, const char *kind, double from, double to, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void warn(json_t *arr, const char *kind, double from, double to, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *w = json_pack("{s:s,s:s}", "kind", kind, "message", msg);
    if (!isnan(from)) json_object_set_new(w, "from", json_real(from));
    if (!isnan(to)) json_object_set_new(w, "to", json_real(to));
    json_array_append_new(arr, w);
}

/* Is interval i (from sample i-1 to i) I/O-bound: waiting on I/O (iowait
 * >= 0.3 s per s) or moving >= 1 MiB/s to or from storage at less than 50%
 * CPU of the allocation? */
static int io_bound(const jobdata *j, size_t i)
{
    double *const *c = j->col;
    double io = 0;
    if (!isnan(c[JD_RBYTES_RATE][i])) io += c[JD_RBYTES_RATE][i];
    if (!isnan(c[JD_WBYTES_RATE][i])) io += c[JD_WBYTES_RATE][i];
    int waits = !isnan(c[JD_IOWAIT_FRAC][i]) && c[JD_IOWAIT_FRAC][i] >= 0.3;
    int busy = io >= 1048576 && !isnan(c[JD_CPU][i]) && c[JD_CPU][i] < 50 * j->sum.cores;
    return waits || busy;
}

/* Is interval i idle: less than 5% of one CPU, nothing read or written? */
static int idle(const jobdata *j, size_t i)
{
    double *const *c = j->col;
    double io = 0;
    for (int k = JD_RCHAR_RATE; k <= JD_WBYTES_RATE; k++)
        if (!isnan(c[k][i])) io += c[k][i];
    return !isnan(c[JD_CPU][i]) && c[JD_CPU][i] < 5 && io < 65536 && !io_bound(j, i);
}

/* Runs of intervals for which `is` holds, lasting at least 3 intervals and
 * min(5% of the job, 10 s): a fixed bar once the job is longer than 200 s,
 * so a repeating phase is found however long the job runs. */
static size_t phases(const jobdata *j, int (*is)(const jobdata *, size_t), jd_phase *out,
                     size_t max, double *total)
{
    double *const *c = j->col;
    double dur = j->sum.duration, bar = dur > 0 ? fmin(0.05 * dur, 10) : 0;
    size_t found = 0, i = 1;
    *total = 0;
    while (i < j->n) {
        size_t a = i;
        while (i < j->n && is(j, i)) i++;
        if (i - a >= 3) {
            double from = c[JD_TS][a - 1], to = c[JD_TS][i - 1];
            if (to - from >= bar) {
                if (found < max) out[found] = (jd_phase){from, to};
                found++;
                *total += to - from;
            }
        }
        if (i == a) i++;
    }
    return found;
}

size_t jobdata_io_phases(const jobdata *j, jd_phase *out, size_t max, double *total)
{
    return phases(j, io_bound, out, max, total);
}

size_t jobdata_idle_phases(const jobdata *j, jd_phase *out, size_t max, double *total)
{
    return phases(j, idle, out, max, total);
}

json_t *jobdata_warnings(const jobdata *j)
{
    json_t *w = json_array();
    const jd_summary *s = &j->sum;
    if (!isnan(s->cpu_eff) && s->cpu_eff < 0.5 && s->duration >= 10)
        warn(w, "cpu_efficiency", NAN, NAN,
             "low CPU efficiency: %.0f%% of %g allocated CPU%s (%s) over %.0f s", 100 * s->cpu_eff,
             s->cores, s->cores == 1 ? "" : "s", s->cores_from, s->duration);
    /* memory close to a limit: the job's own peak, page cache excluded
     * (the kernel reclaims cache before it kills anything) */
    double lim = s->alloc_mem;
    char what[96];
    snprintf(what, sizeof what, "the allocation (%s)", s->alloc_mem_from);
    if (j->start_ev) {
        json_t *rl = json_object_get(j->start_ev, "rlimits");
        double as = jd_numpath(rl, "as", "soft"), rss = jd_numpath(rl, "rss", "soft");
        if (!isnan(rss) && (isnan(lim) || rss < lim))
            lim = rss, snprintf(what, sizeof what, "RLIMIT_RSS");
        if (!isnan(as) && isnan(lim)) lim = as, snprintf(what, sizeof what, "RLIMIT_AS");
    }
    if (!isnan(lim) && lim > 0 && !isnan(s->peak_mem) && s->peak_mem >= 0.9 * lim)
        warn(w, "memory_limit", NAN, NAN, "peak memory %.0f MiB is %.0f%% of %s, %.0f MiB",
             s->peak_mem / 1048576, 100 * s->peak_mem / lim, what, lim / 1048576);
    if (!isnan(s->gpu_devices) && s->gpu_devices > 0 && !isnan(s->gpu_util_mean) &&
        s->gpu_util_mean < 5)
        warn(w, "idle_gpu", NAN, NAN, "GPU mostly idle: mean utilisation %.1f%% on %g device%s",
             s->gpu_util_mean, s->gpu_devices, s->gpu_devices == 1 ? "" : "s");
    jd_phase ph[MAX_PHASE_WARNINGS];
    double total;
    size_t n = jobdata_io_phases(j, ph, MAX_PHASE_WARNINGS, &total);
    for (size_t k = 0; k < n && k < MAX_PHASE_WARNINGS; k++)
        warn(w, "io_bound", ph[k].from, ph[k].to,
             "I/O-bound phase of %.0f s (waiting on I/O or moving data at low CPU)",
             ph[k].to - ph[k].from);
    if (n > MAX_PHASE_WARNINGS)
        warn(w, "io_bound", NAN, NAN, "%zu I/O-bound phases in all, %.0f s (%.0f%% of the job)", n,
             total, s->duration > 0 ? 100 * total / s->duration : 0);
    if (!strcmp(s->stopped_by, "limit"))
        warn(w, "limit", NAN, NAN, "stopped by a --limit (%s)", s->stop_limit);
    else if (!strcmp(s->exit_type, "signaled"))
        warn(w, "signal", NAN, NAN, "killed by %s",
             s->signal_name[0] ? s->signal_name : "a signal");
    if (j->end_ev && jd_numpath(j->end_ev, "cgroup", "oom_kill") > 0)
        warn(w, "oom_kill", NAN, NAN, "the OOM killer killed %.0f process(es)",
             jd_numpath(j->end_ev, "cgroup", "oom_kill"));
    return w;
}
