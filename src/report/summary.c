/* summary.c — `jobscope summary JOB|FILE...`: a job's efficiency report on
 * one screen, laid out as Princeton's `jobstats JOBID` (docs/views.md
 * "jobscope summary"): the job, utilization bars against its allocation,
 * the detail behind them, notes and the request to make next time in the
 * job's scheduler's syntax.
 *
 * A FILE is read with jobdata; a JOB id is looked up on a `jobscope serve`
 * (--server URL; default: the local server's socket, else
 * http://127.0.0.1:4242), by its exact id, else by id prefix (a batch job id
 * finds its array tasks and jobs named after it).  --oneline prints one line
 * for a batch system's comment field (Slurm's AdminComment, from an
 * epilog); --json the page object. */
#include "report/summary.h"
#include "report/assess.h"
#include "report/jobdata.h"
#include "report/request.h"
#include "report/stats.h"
#include "util/serve_detect.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define EXIT_BAD 125

static double num(const json_t *o, const char *k)
{
    return jd_num(o, k);
}

static const char *str(const json_t *o, const char *k)
{
    return jd_str(o, k);
}

static void fmt_hms(double s, char *buf, size_t len)
{
    if (!isfinite(s)) {
        snprintf(buf, len, "-");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 86400)
        snprintf(buf, len, "%ld-%02ld:%02ld:%02ld", t / 86400, t / 3600 % 24, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* "12.3 s" under a minute, else as fmt_hms */
static void fmt_dur(double s, char *buf, size_t len)
{
    if (isfinite(s) && s < 60)
        snprintf(buf, len, "%.1f s", s);
    else
        fmt_hms(s, buf, len);
}

static void fmt_time(double ts, char *buf, size_t len)
{
    if (!isfinite(ts)) {
        snprintf(buf, len, "-");
        return;
    }
    time_t t = (time_t)ts;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static void rule(FILE *f, int width, char c)
{
    for (int i = 0; i < width; i++) fputc(c, f);
    fputc('\n', f);
}

static void centered(FILE *f, int width, const char *title)
{
    int pad = (width - (int)strlen(title)) / 2;
    fprintf(f, "%*s%s\n", pad > 0 ? pad : 0, "", title);
}

/* Words wrapped at width, the first line after `first`, the next indented. */
static void wrapped(FILE *f, int width, const char *first, const char *indent, const char *text)
{
    int col = fprintf(f, "%s", first), ind = (int)strlen(indent);
    const char *p = text;
    while (*p) {
        while (*p == ' ') p++;
        size_t w = strcspn(p, " ");
        if (!w) break;
        if (col > ind && col + 1 + (int)w > width) {
            fprintf(f, "\n%s", indent);
            col = ind;
        } else if (col > (int)strlen(first)) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, w, f);
        col += (int)w;
        p += w;
    }
    fputc('\n', f);
}

/* Items separated by "; " (never split inside one), wrapped at width. */
static void wrapped_items(FILE *f, int width, const char *first, const char *indent,
                          const char *text)
{
    int col = fprintf(f, "%s", first), ind = (int)strlen(indent), start = col;
    for (const char *p = text; p && *p;) {
        const char *e = strstr(p, "; ");
        int w = e ? (int)(e - p) : (int)strlen(p);
        if (col > start && col + 2 + w > width) {
            fprintf(f, ";\n%s", indent);
            col = start = ind;
        } else if (col > start) {
            fputs("; ", f);
            col += 2;
        }
        fwrite(p, 1, (size_t)w, f);
        col += w;
        p = e ? e + 2 : p + w;
    }
    fputc('\n', f);
}

/* "a\nb\n" -> "a; b" */
static void joined(const char *s, char *buf, size_t len)
{
    size_t k = 0;
    for (; s && *s && k + 3 < len; s++) {
        if (*s != '\n') {
            buf[k++] = *s;
        } else if (s[1]) {
            buf[k++] = ';';
            buf[k++] = ' ';
        }
    }
    buf[k] = 0;
}

static const char *state_of(const json_t *s, char *buf, size_t len)
{
    const char *stop = str(s, "stopped_by");
    json_t *ec = json_object_get(s, "exit_code");
    if (!json_is_true(json_object_get(s, "finished")))
        snprintf(buf, len, "RUNNING");
    else if (stop && !strcmp(stop, "oom_kill"))
        snprintf(buf, len, "OUT_OF_MEMORY (the OOM killer)");
    else if (stop && !strcmp(stop, "limit"))
        snprintf(buf, len, "STOPPED (--limit %s)",
                 str(s, "stop_limit") ? str(s, "stop_limit") : "?");
    else if (stop)
        snprintf(buf, len, "KILLED (%s)", str(s, "signal_name") ? str(s, "signal_name") : "signal");
    else if (json_is_integer(ec))
        snprintf(buf, len, "%s (exit code %lld)", json_integer_value(ec) ? "FAILED" : "COMPLETED",
                 (long long)json_integer_value(ec));
    else
        snprintf(buf, len, "ENDED");
    return buf;
}

static void bar_line(FILE *f, int width, const char *label, double pct)
{
    int cells = width - 26;
    if (cells < 10) cells = 10;
    int fill = isfinite(pct) ? (int)(fmin(pct, 100) / 100 * cells + 0.5) : 0;
    char end[16];
    snprintf(end, sizeof end, isfinite(pct) ? "%.0f%%" : "-", pct);
    fprintf(f, "  %-17s[", label);
    for (int i = 0; i < cells - (int)strlen(end); i++) fputc(i < fill ? '|' : ' ', f);
    fprintf(f, "%s]\n", end);
}

/* "2 steps, 3 tasks, 1 node" of a whole job (its runs, earlier attempts apart). */
static void shape_of(const json_t *job, char *buf, size_t len)
{
    size_t i, runs = 0, old = 0;
    const json_t *r;
    json_array_foreach(json_object_get(job, "runs"), i, r)
    {
        if (json_is_true(json_object_get(r, "superseded")))
            old++;
        else
            runs++;
    }
    size_t steps = json_array_size(json_object_get(job, "steps"));
    size_t nodes = json_array_size(json_object_get(job, "nodes"));
    int n = 0;
    if (steps) n = snprintf(buf, len, "%zu step%s, ", steps, steps == 1 ? "" : "s");
    n += snprintf(buf + n, len - (size_t)n, "%zu %s%s, %zu node%s", runs, steps ? "task" : "run",
                  runs == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
    if (old && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " (%zu earlier attempt%s not counted)", old,
                 old == 1 ? "" : "s");
}

/* A whole job's detail: a line per node (against its own allocation) and
 * per step. */
static void detail_rows(FILE *f, int width, const json_t *job, double wall)
{
    char line[512], b1[64], b2[64], b3[64], b4[64], st[64];
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(job, "nodes"), i, r)
    {
        fmt_dur(num(r, "cpu_time"), b1, sizeof b1);
        fmt_dur(wall * num(r, "cores"), b2, sizeof b2);
        jd_fmt_bytes(num(r, "peak_mem"), b3, sizeof b3);
        jd_fmt_bytes(num(r, "mem"), b4, sizeof b4);
        snprintf(line, sizeof line,
                 "%s: CPU %s/%s on %g CPU%s (%.1f%%), memory %s/%s, %.0f run%s, at most %.0f "
                 "task%s a step",
                 str(r, "host") ? str(r, "host") : "?", b1, b2, num(r, "cores"),
                 num(r, "cores") == 1 ? "" : "s", 100 * num(r, "cpu_efficiency"), b3,
                 isfinite(num(r, "mem")) ? b4 : "-", num(r, "runs"), num(r, "runs") == 1 ? "" : "s",
                 num(r, "tasks"), num(r, "tasks") == 1 ? "" : "s");
        wrapped(f, width, "  ", "      ", line);
    }
    json_array_foreach(json_object_get(job, "steps"), i, r)
    {
        fmt_dur(num(r, "duration"), b1, sizeof b1);
        fmt_dur(num(r, "cpu_time"), b2, sizeof b2);
        jd_fmt_bytes(num(r, "peak_mem"), b3, sizeof b3);
        snprintf(line, sizeof line, "step %s: %.0f task%s, %s, CPU %s, memory %s, %s%s%.200s",
                 str(r, "step") ? str(r, "step") : "?", num(r, "tasks"),
                 num(r, "tasks") == 1 ? "" : "s", b1, b2, b3, state_of(r, st, sizeof st),
                 str(r, "exe") ? ", " : "", str(r, "exe") ? str(r, "exe") : "");
        wrapped(f, width, "  ", "      ", line);
    }
}

void summary_print(FILE *f, const json_t *job, int width)
{
    const json_t *s = json_object_get(job, "summary"), *a = json_object_get(job, "assessment");
    const json_t *al = json_object_get(a, "allocation");
    char b1[64], b2[64], line[512];
    if (width < 60) width = 60;
    fputc('\n', f);
    rule(f, width, '=');
    centered(f, width, "jobscope: job efficiency report");
    rule(f, width, '=');
#define KV(k, ...)                                                                                 \
    do {                                                                                           \
        snprintf(line, sizeof line, __VA_ARGS__);                                                  \
        fprintf(f, "%15s: %s\n", k, line);                                                         \
    } while (0)
    KV("Job ID", "%s", str(s, "job_id") ? str(s, "job_id") : "-");
    if (str(s, "batch_id"))
        KV("Batch job", "%s %s", str(s, "batch_system") ? str(s, "batch_system") : "",
           str(s, "batch_id"));
    if (str(s, "wf") || str(s, "xformation"))
        KV("Workflow", "%s%s%s%s", str(s, "wf_label") ? str(s, "wf_label") : "",
           str(s, "wf_label") ? " " : "", str(s, "wf") ? str(s, "wf") : "",
           str(s, "xformation") ? "" : "");
    if (str(s, "xformation")) KV("Transformation", "%s", str(s, "xformation"));
    const json_t *nodes = json_object_get(job, "nodes"), *steps = json_object_get(job, "steps");
    const json_t *tags = json_object_get(job, "tags");
    if (str(tags, "slurm_array_job_id"))
        KV("Array job", "%s_%s", str(tags, "slurm_array_job_id"),
           str(tags, "slurm_array_task_id") ? str(tags, "slurm_array_task_id") : "?");
    if (json_array_size(nodes) > 1)
        KV("User/Host", "%s / %s (+%zu node%s)", str(s, "user") ? str(s, "user") : "-",
           str(s, "host") ? str(s, "host") : "-", json_array_size(nodes) - 1,
           json_array_size(nodes) == 2 ? "" : "s");
    else
        KV("User/Host", "%s / %s", str(s, "user") ? str(s, "user") : "-",
           str(s, "host") ? str(s, "host") : "-");
    if (json_is_array(nodes)) {
        char shape[160];
        shape_of(job, shape, sizeof shape);
        KV("Runs", "%s", shape);
    }
    KV("Executable", "%.200s", str(s, "exe") ? str(s, "exe") : "-");
    KV("State", "%s", state_of(s, b1, sizeof b1));
    KV("CPU cores", "%g (%s)", num(al, "cpus"), str(al, "cpus_from") ? str(al, "cpus_from") : "?");
    jd_fmt_bytes(num(al, "mem"), b1, sizeof b1);
    if (isfinite(num(al, "mem")))
        KV("CPU memory", "%s (%s)", b1, str(al, "mem_from") ? str(al, "mem_from") : "?");
    else
        KV("CPU memory", "- (no allocation recorded)");
    if (num(al, "gpus") > 0 || num(s, "gpu_devices") > 0)
        KV("GPUs", "%g (%s)", isfinite(num(al, "gpus")) ? num(al, "gpus") : num(s, "gpu_devices"),
           str(al, "gpus_from") ? str(al, "gpus_from") : "devices used");
    fmt_time(num(s, "start"), b1, sizeof b1);
    KV("Start Time", "%s", b1);
    fmt_hms(num(s, "duration"), b1, sizeof b1);
    KV("Run Time", "%s", b1);
    if (isfinite(num(s, "req_wall"))) {
        fmt_hms(num(s, "req_wall"), b1, sizeof b1);
        KV("Time Limit", "%s", b1);
    }
    fputc('\n', f);
    centered(f, width, "Overall Utilization");
    rule(f, width, '=');
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(a, "bars"), i, b)
    {
        const char *k = str(b, "key");
        const char *basis = str(b, "basis") ? str(b, "basis") : "";
        const char *lab = !strcmp(k, "cpu")                                ? "CPU utilization"
                          : !strcmp(k, "memory") && !strcmp(basis, "host") ? "CPU memory (host)"
                          : !strcmp(k, "memory")                           ? "CPU memory usage"
                          : !strcmp(k, "gpu")                              ? "GPU utilization"
                                                                           : "GPU memory usage";
        bar_line(f, width, lab, num(b, "pct"));
    }
    if (json_array_size(nodes) > 1) {
        /* as jobstats: each node against its own allocation */
        fputc('\n', f);
        centered(f, width, "Utilization per node");
        rule(f, width, '=');
        json_array_foreach(nodes, i, b)
        {
            char lab[64];
            snprintf(lab, sizeof lab, "%.11s CPU", str(b, "host") ? str(b, "host") : "?");
            bar_line(f, width, lab, 100 * num(b, "cpu_efficiency"));
            snprintf(lab, sizeof lab, "%.11s mem", str(b, "host") ? str(b, "host") : "?");
            bar_line(f, width, lab, 100 * num(b, "peak_mem") / num(b, "mem"));
        }
    }
    fputc('\n', f);
    centered(f, width, "Detailed Utilization");
    rule(f, width, '=');
    fmt_dur(num(s, "cpu_time"), b1, sizeof b1);
    fmt_dur(num(s, "duration") * num(al, "cpus"), b2, sizeof b2);
    snprintf(line, sizeof line, "CPU time used/allocated: %s/%s on %g CPU%s (efficiency=%.1f%%)",
             b1, b2, num(al, "cpus"), num(al, "cpus") == 1 ? "" : "s",
             100 * num(s, "cpu_efficiency"));
    wrapped(f, width, "  ", "    ", line);
    if (num(s, "threads_peak") > 0 || num(s, "cpu_wait") > 0) {
        int n = snprintf(line, sizeof line, "%.2f CPUs busy on average",
                         num(s, "cpu_time") / num(s, "duration"));
        if (num(s, "threads_peak") > 0)
            n += snprintf(line + n, sizeof line - (size_t)n, ", at most %.0f thread%s at once",
                          num(s, "threads_peak"), num(s, "threads_peak") == 1 ? "" : "s");
        if (num(s, "cpu_wait") > 0)
            snprintf(line + n, sizeof line - (size_t)n, ", waited %.0f s for a CPU",
                     num(s, "cpu_wait"));
        wrapped(f, width, "    ", "    ", line);
    }
    jd_fmt_bytes(num(s, "peak_mem"), b1, sizeof b1);
    jd_fmt_bytes(num(al, "mem"), b2, sizeof b2);
    snprintf(line, sizeof line, "Memory peak/allocated: %s/%s (the job's own, page cache excluded)",
             b1, isfinite(num(al, "mem")) ? b2 : "-");
    wrapped(f, width, "  ", "    ", line);
    if (num(s, "cg_peak_mem") > 1.1 * num(s, "peak_mem")) {
        jd_fmt_bytes(num(s, "cg_peak_mem"), b1, sizeof b1);
        snprintf(line, sizeof line, "cgroup peak %s (includes reclaimable page cache)", b1);
        wrapped(f, width, "    ", "    ", line);
    }
    jd_fmt_bytes(num(s, "rchar"), b1, sizeof b1);
    jd_fmt_bytes(num(s, "wchar"), b2, sizeof b2);
    snprintf(line, sizeof line, "I/O read/written: %s/%s", b1, b2);
    int n = (int)strlen(line);
    if (isfinite(num(s, "read_bytes")) || isfinite(num(s, "write_bytes"))) {
        jd_fmt_bytes(num(s, "read_bytes"), b1, sizeof b1);
        jd_fmt_bytes(num(s, "write_bytes"), b2, sizeof b2);
        snprintf(line + n, sizeof line - (size_t)n, " (storage %s/%s)", b1, b2);
    }
    wrapped(f, width, "  ", "    ", line);
    if (num(s, "gpu_devices") > 0) {
        jd_fmt_bytes(num(s, "gpu_peak_mem"), b1, sizeof b1);
        snprintf(line, sizeof line, "GPU: mean utilisation %.1f%%, peak memory %s",
                 num(s, "gpu_util_mean"), b1);
        wrapped(f, width, "  ", "    ", line);
    }
    if (json_is_array(nodes)) detail_rows(f, width, job, num(s, "duration"));
    (void)steps;
    json_t *notes = json_object_get(a, "notes");
    if (json_array_size(notes)) {
        fputc('\n', f);
        centered(f, width, "Notes");
        rule(f, width, '=');
        json_array_foreach(notes, i, b)
        {
            wrapped(f, width, "  * ", "    ", str(b, "text"));
            fputc('\n', f);
        }
    } else {
        fputc('\n', f);
    }
    const json_t *nx = json_object_get(a, "next");
    const char *sched = str(a, "scheduler");
    fputs("  Next time (fits this run, 10% head room on memory and time):\n", f);
    if (!sched || !strcmp(sched, "slurm"))
        wrapped(f, width, "    Slurm:    ", "              ", str(nx, "slurm"));
    if (!sched || !strcmp(sched, "htcondor") || !strcmp(sched, "pegasus")) {
        joined(str(nx, "htcondor"), line, sizeof line);
        wrapped_items(f, width, "    HTCondor: ", "              ", line);
    }
    if (!sched || !strcmp(sched, "pegasus")) {
        joined(str(nx, "pegasus"), line, sizeof line);
        wrapped_items(f, width, "    Pegasus:  ", "              ", line);
    }
    fputc('\n', f);
#undef KV
}

void summary_oneline(FILE *f, const json_t *job)
{
    const json_t *s = json_object_get(job, "summary"), *a = json_object_get(job, "assessment");
    const json_t *al = json_object_get(a, "allocation"), *nx = json_object_get(a, "next");
    char b1[64], b2[64], st[64];
    fprintf(f, "jobscope: %s", state_of(s, st, sizeof st));
    fprintf(f, ", cpu %.0f%% of %g (%s)", 100 * num(s, "cpu_efficiency"), num(al, "cpus"),
            str(al, "cpus_from") ? str(al, "cpus_from") : "?");
    jd_fmt_bytes(num(s, "peak_mem"), b1, sizeof b1);
    if (isfinite(num(al, "mem")) && num(al, "mem") > 0) {
        jd_fmt_bytes(num(al, "mem"), b2, sizeof b2);
        fprintf(f, ", mem %s of %s (%.0f%%)", b1, b2, 100 * num(s, "peak_mem") / num(al, "mem"));
    } else {
        fprintf(f, ", mem %s", b1);
    }
    if (num(s, "gpu_devices") > 0)
        fprintf(f, ", gpu %.0f%% of %g", num(s, "gpu_util_mean") / num(s, "gpu_devices"),
                num(s, "gpu_devices"));
    fmt_hms(num(s, "duration"), b1, sizeof b1);
    const char *sched = str(a, "scheduler");
    const char *next = sched && !strcmp(sched, "htcondor") ? NULL : str(nx, "slurm");
    fprintf(f, ", wall %s", b1);
    if (json_is_array(json_object_get(job, "nodes"))) {
        char shape[160];
        shape_of(job, shape, sizeof shape);
        for (char *c = shape; *c; c++)
            if (*c == ',') *c = ' ';
        char *d = shape;
        for (char *c = shape; *c; c++) /* "2 steps 3 tasks 1 node" */
            if (!(*c == ' ' && c[1] == ' ')) *d++ = *c;
        *d = 0;
        fprintf(f, ", %s", shape);
    }
    char req[512];
    joined(next ? next : str(nx, "htcondor"), req, sizeof req);
    fprintf(f, "; next: %s", req);
    fputc('\n', f);
}
