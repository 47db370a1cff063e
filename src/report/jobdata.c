/* jobdata.c — reads one job's events back into characteristics and series
 * (see jobdata.h): one event at a time (jobdata_add), then the figures the
 * events do not state (jobdata_finish): rates, the allocation the job is
 * measured against, its own memory peak, the real executable.  Shared by
 * `jobscope report`, `stats`, `summary` and the repository of `jobscope
 * serve`.  Loading files is jobdata_load.c, warnings jobdata_warn.c, the
 * JSON out jobdata_json.c. */
#include "report/jobdata.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_EVENTS 2000
#define MAX_EXTRA  256

const char *const jobdata_col_names[JD_NCOL] = {
    "ts",        "elapsed",    "cpu_percent", "rss",         "vm",         "swap",
    "rchar",     "wchar",      "read_bytes",  "write_bytes", "rchar_rate", "wchar_rate",
    "read_rate", "write_rate", "iowait_frac", "procs",       "threads",    "gpu_mem",
    "gpu_util",  "cg_memory",  "cpu_time",    "iowait",
};
const char *const jobdata_col_titles[JD_NCOL] = {
    "time",
    "elapsed (s)",
    "CPU %",
    "RSS (bytes)",
    "virtual memory (bytes)",
    "swap (bytes)",
    "rchar (bytes)",
    "wchar (bytes)",
    "read from storage (bytes)",
    "written to storage (bytes)",
    "read rate (bytes/s)",
    "write rate (bytes/s)",
    "storage read rate (bytes/s)",
    "storage write rate (bytes/s)",
    "I/O wait (s per s)",
    "processes",
    "threads",
    "GPU memory (bytes)",
    "GPU utilisation %",
    "cgroup memory (bytes)",
    "CPU time (s)",
    "I/O wait (s)",
};

void jobdata_init(jobdata *j)
{
    memset(j, 0, sizeof *j);
    jd_summary *s = &j->sum;
    s->exit_code = -1;
    double *nan_fields[] = {
        &s->start,         &s->end,         &s->duration,     &s->cpu_time,      &s->cpu_eff,
        &s->cores,         &s->peak_mem,    &s->rchar,        &s->wchar,         &s->read_bytes,
        &s->write_bytes,   &s->gpu_devices, &s->gpu_peak_mem, &s->gpu_util_mean, &s->gpu_util_peak,
        &s->req_mem,       &s->req_cpus,    &s->req_wall,     &s->req_gpus,      &s->cg_peak_mem,
        &s->alloc_mem,     &s->alloc_gpus,  &s->threads_peak, &s->cpu_wait,      &j->cg_peak,
        &j->cg_own_peak,   &j->psi_first,   &j->psi_last,     &s->nodes,         &s->tasks_per_node,
        &s->node_peak_mem, &s->want_cores};
    for (size_t i = 0; i < sizeof nan_fields / sizeof *nan_fields; i++) *nan_fields[i] = NAN;
    j->events = json_array();
    j->jr_ts = NAN;
}

void jobdata_free(jobdata *j)
{
    json_decref(j->start_ev);
    json_decref(j->end_ev);
    json_decref(j->tags);
    json_decref(j->events);
    for (int c = 0; c < JD_NCOL; c++) free(j->col[c]);
    for (size_t i = 0; i < j->nextra; i++) {
        free(j->extra[i].name);
        free(j->extra[i].unit);
        free(j->extra[i].ts);
        free(j->extra[i].val);
    }
    free(j->extra);
    memset(j, 0, sizeof *j);
}

/* ---- small JSON helpers ---- */

double jd_num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

double jd_numpath(const json_t *o, const char *a, const char *b)
{
    return jd_num(json_object_get(o, a), b);
}

const char *jd_str(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static void setstr(char *dst, size_t cap, const char *v)
{
    if (v && *v && !*dst) snprintf(dst, cap, "%s", v);
}
#define SETSTR(field, v) setstr(field, sizeof field, v)

static double nmax(double a, double b)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    return a > b ? a : b;
}

/* ---- sizes and durations ---- */

double jd_parse_size_mib(const char *s)
{
    if (!s || !*s) return NAN;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0) return NAN;
    while (*end == ' ') end++;
    double mul = 1024.0 * 1024; /* a bare number is MiB, as request_memory */
    switch (toupper((unsigned char)*end)) {
    case 0:
        break;
    case 'B':
        mul = 1;
        end++;
        break;
    case 'K':
        mul = 1024.0;
        end++;
        break;
    case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
        mul = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default:
        return NAN;
    }
    if (*end == 'i') end++;
    if (toupper((unsigned char)*end) == 'B') end++;
    return *end ? NAN : v * mul;
}

double jd_parse_duration(const char *s)
{
    if (!s || !*s) return NAN;
    int h, m, sec, d;
    char tail;
    if (sscanf(s, "%d-%d:%d:%d%c", &d, &h, &m, &sec, &tail) == 4)
        return d * 86400.0 + h * 3600.0 + m * 60.0 + sec;
    if (sscanf(s, "%d:%d:%d%c", &h, &m, &sec, &tail) == 3) return h * 3600.0 + m * 60.0 + sec;
    double total = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || v < 0) return NAN;
        double mul = 1;
        switch (*end) {
        case 's':
            mul = 1;
            end++;
            break;
        case 'm':
            mul = 60;
            end++;
            break;
        case 'h':
            mul = 3600;
            end++;
            break;
        case 'd':
            mul = 86400;
            end++;
            break;
        case 0:
            break;
        default:
            return NAN;
        }
        total += v * mul;
        p = end;
    }
    return total;
}

/* RFC 3339 ("2020-02-05T02:11:55.797358503+01:00") -> epoch seconds. */
static double parse_rfc3339(const char *s)
{
    if (!s) return NAN;
    struct tm tm = {0};
    int n = 0;
    if (sscanf(s, "%d-%d-%dT%d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &n) != 6)
        return NAN;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    double t = (double)timegm(&tm);
    const char *p = s + n;
    if (*p == '.') {
        double frac = 0, scale = 0.1;
        for (p++; isdigit((unsigned char)*p); p++, scale /= 10) frac += (*p - '0') * scale;
        t += frac;
    }
    int oh, om;
    if ((*p == '+' || *p == '-') && sscanf(p + 1, "%d:%d", &oh, &om) == 2)
        t -= (*p == '+' ? 1 : -1) * (oh * 3600.0 + om * 60.0);
    return t;
}

/* ---- series ---- */

static int grow_samples(jobdata *j)
{
    if (j->n < j->cap) return 0;
    size_t cap = j->cap ? j->cap * 2 : 256;
    for (int c = 0; c < JD_NCOL; c++) {
        double *p = realloc(j->col[c], cap * sizeof *p);
        if (!p) return -1;
        j->col[c] = p;
    }
    j->cap = cap;
    return 0;
}

static size_t new_sample(jobdata *j, double ts)
{
    if (grow_samples(j)) return (size_t)-1;
    size_t i = j->n++;
    for (int c = 0; c < JD_NCOL; c++) j->col[c][i] = NAN;
    j->col[JD_TS][i] = ts;
    return i;
}

static jd_series *extra_series(jobdata *j, const char *name, const char *unit)
{
    for (size_t i = 0; i < j->nextra; i++)
        if (!strcmp(j->extra[i].name, name)) return &j->extra[i];
    if (j->nextra >= MAX_EXTRA) return NULL;
    if (j->nextra == j->capextra) {
        size_t cap = j->capextra ? j->capextra * 2 : 8;
        jd_series *p = realloc(j->extra, cap * sizeof *p);
        if (!p) return NULL;
        j->extra = p;
        j->capextra = cap;
    }
    jd_series *s = &j->extra[j->nextra++];
    memset(s, 0, sizeof *s);
    s->name = strdup(name);
    s->unit = strdup(unit ? unit : "");
    return s;
}

static void extra_push(jd_series *s, double ts, double v)
{
    if (!s || isnan(ts) || isnan(v)) return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        double *a = realloc(s->ts, cap * sizeof *a), *b;
        if (!a) return;
        s->ts = a;
        b = realloc(s->val, cap * sizeof *b);
        if (!b) return;
        s->val = b;
        s->cap = cap;
    }
    s->ts[s->n] = ts;
    s->val[s->n++] = v;
}

/* ---- events ---- */

static void identity(jobdata *j, json_t *ev, const char *name)
{
    jd_summary *s = &j->sum;
    SETSTR(s->job_id, jd_str(ev, "job_id"));
    SETSTR(s->job_id, jd_str(ev, "dag_job_id"));
    SETSTR(s->job_id, jd_str(ev, "condor_job_id"));
    SETSTR(s->host, jd_str(ev, "hostname"));
    SETSTR(s->wf, jd_str(ev, "wf_uuid"));
    SETSTR(s->wf, jd_str(ev, "xwf_id"));
    SETSTR(s->wf_label, jd_str(ev, "wf_label"));
    SETSTR(s->xformation, jd_str(ev, "xformation"));
    SETSTR(s->site, jd_str(ev, "site"));
    json_t *batch = json_object_get(ev, "batch");
    SETSTR(s->batch_system, jd_str(batch, "system"));
    SETSTR(s->batch_id, jd_str(batch, "job_id"));
    /* a custom metric's "tags" are the metric's, not the job's */
    json_t *tags = json_object_get(ev, "tags");
    if (json_is_object(tags) && !j->tags && strcmp(name, "jobscope.metric"))
        j->tags = json_incref(tags);
}

static void push_event(jobdata *j, json_t *ev)
{
    if (json_array_size(j->events) >= MAX_EVENTS) {
        j->events_dropped++;
        return;
    }
    json_array_append(j->events, ev);
}

static void add_sample(jobdata *j, json_t *ev)
{
    size_t i = new_sample(j, jd_num(ev, "ts"));
    if (i == (size_t)-1) return;
    double **c = j->col;
    c[JD_ELAPSED][i] = jd_num(ev, "elapsed");
    c[JD_CPU][i] = jd_num(ev, "cpu_percent");
    c[JD_RSS][i] = jd_num(ev, "rss") * 1024;
    c[JD_VM][i] = jd_num(ev, "vm") * 1024;
    c[JD_SWAP][i] = jd_num(ev, "swap") * 1024;
    c[JD_RCHAR][i] = jd_num(ev, "rchar");
    c[JD_WCHAR][i] = jd_num(ev, "wchar");
    double rb = jd_num(ev, "read_bytes"), wb = jd_num(ev, "write_bytes");
    c[JD_RBYTES][i] = isnan(rb) ? jd_num(ev, "bread") : rb;
    c[JD_WBYTES][i] = isnan(wb) ? jd_num(ev, "bwrite") : wb;
    c[JD_PROCS][i] = jd_num(ev, "procs");
    c[JD_THREADS][i] = jd_num(ev, "threads");
    c[JD_GPU_MEM][i] = jd_num(ev, "gpu_mem");
    c[JD_GPU_UTIL][i] = jd_num(ev, "gpu_util");
    c[JD_CG_MEM][i] = jd_num(ev, "cg_memory_current");
    c[JD_CPUTIME][i] = jd_num(ev, "utime") + jd_num(ev, "stime");
    c[JD_IOWAIT][i] = jd_num(ev, "iowait");
    /* the cgroup's figures: its peak (page cache included) and the job's
     * own memory in it (anonymous + shared), and the CPU pressure */
    j->cg_peak = nmax(j->cg_peak, nmax(jd_num(ev, "cg_memory_peak"), c[JD_CG_MEM][i]));
    j->cg_own_peak =
        nmax(j->cg_own_peak, jd_num(ev, "cg_memory_anon") + jd_num(ev, "cg_memory_shmem"));
    double psi = jd_num(ev, "cg_psi_cpu_some_total");
    if (!isnan(psi)) {
        if (isnan(j->psi_first)) j->psi_first = psi;
        j->psi_last = psi;
    }
    const char *exe = jd_str(ev, "exe");
    if (exe && strcmp(exe, j->exe_last)) snprintf(j->exe_last, sizeof j->exe_last, "%s", exe);
    SETSTR(j->sum.type, jd_str(ev, "type"));
}

static void add_gpu_stats(jobdata *j, json_t *ev)
{
    double ts = jd_num(ev, "ts");
    json_t *id = json_object_get(ev, "id");
    char name[96];
    long long dev = json_is_integer(id) ? json_integer_value(id) : 0;
    double util = jd_num(ev, "job_sm_util");
    if (isnan(util)) util = jd_num(ev, "gpu_utilization");
    double mem = jd_num(ev, "job_mem_usage");
    if (isnan(mem)) mem = jd_num(ev, "mem_usage");
    snprintf(name, sizeof name, "gpu%lld utilisation", dev);
    extra_push(extra_series(j, name, "%"), ts, util);
    snprintf(name, sizeof name, "gpu%lld memory", dev);
    extra_push(extra_series(j, name, "bytes"), ts, mem);
    double devs = (double)(dev + 1);
    j->sum.gpu_devices = nmax(j->sum.gpu_devices, devs);
}

static void add_metric(jobdata *j, json_t *ev)
{
    const char *name = jd_str(ev, "name");
    if (!name) return;
    char full[512];
    size_t len = (size_t)snprintf(full, sizeof full, "%s", name);
    json_t *tags = json_object_get(ev, "tags");
    if (json_is_object(tags) && json_object_size(tags)) {
        const char *k;
        json_t *v;
        int first = 1;
        json_object_foreach(tags, k, v)
        {
            if (len >= sizeof full - 4) break;
            len += (size_t)snprintf(full + len, sizeof full - len, "%c%s=%s", first ? '{' : ',', k,
                                    json_is_string(v) ? json_string_value(v) : "?");
            first = 0;
        }
        if (len < sizeof full - 1) {
            full[len++] = '}';
            full[len] = 0;
        }
    }
    extra_push(extra_series(j, full, jd_str(ev, "unit")), jd_num(ev, "ts"), jd_num(ev, "value"));
}

static void add_end(jobdata *j, json_t *ev)
{
    jd_summary *s = &j->sum;
    json_decref(j->end_ev);
    j->end_ev = json_incref(ev);
    s->has_end = 1;
    /* what the main process ran last: the end record names it */
    if (jd_str(ev, "exe")) snprintf(s->exe, sizeof s->exe, "%s", jd_str(ev, "exe"));
    if (jd_str(ev, "cmd")) snprintf(s->cmd, sizeof s->cmd, "%s", jd_str(ev, "cmd"));
    snprintf(s->exit_type, sizeof s->exit_type, "%s",
             jd_str(ev, "exit_type") ? jd_str(ev, "exit_type") : "");
    json_t *ec = json_object_get(ev, "exit_code");
    s->exit_code = json_is_integer(ec) ? (int)json_integer_value(ec) : -1;
    snprintf(s->signal_name, sizeof s->signal_name, "%s",
             jd_str(ev, "signal_name") ? jd_str(ev, "signal_name") : "");
    s->start = jd_num(ev, "start");
    s->end = jd_num(ev, "end");
    s->duration = jd_num(ev, "duration");
    s->cpu_time = jd_num(ev, "cpu_time");
    s->cpu_eff = jd_num(ev, "cpu_efficiency");
    json_t *peaks = json_object_get(ev, "peaks");
    s->peak_mem =
        nmax(jd_numpath(peaks, "rss", "value") * 1024, jd_num(peaks, "max_process_hwm") * 1024);
    s->threads_peak = jd_numpath(peaks, "threads", "value");
    j->cg_peak = nmax(j->cg_peak, jd_numpath(ev, "cgroup", "memory_peak"));
    if (!strcmp(s->exit_type, "limit")) {
        snprintf(s->stopped_by, sizeof s->stopped_by, "limit");
        snprintf(s->stop_limit, sizeof s->stop_limit, "%s",
                 jd_str(ev, "limit") ? jd_str(ev, "limit") : "?");
    } else if (jd_numpath(ev, "cgroup", "oom_kill") > 0) {
        snprintf(s->stopped_by, sizeof s->stopped_by, "oom_kill");
    } else if (!strcmp(s->exit_type, "signaled")) {
        snprintf(s->stopped_by, sizeof s->stopped_by, "signal");
    }
    s->rchar = jd_num(ev, "rchar");
    s->wchar = jd_num(ev, "wchar");
    s->read_bytes = jd_num(ev, "read_bytes");
    s->write_bytes = jd_num(ev, "write_bytes");
    json_t *gpu = json_object_get(ev, "gpu");
    if (json_is_object(gpu)) {
        s->gpu_devices = jd_num(gpu, "devices");
        s->gpu_peak_mem = jd_num(gpu, "peak_mem");
        s->gpu_util_mean = jd_num(gpu, "mean_util");
    }
    s->samples = (size_t)nmax(0, jd_num(ev, "samples"));
}

static void add_start(jobdata *j, json_t *ev)
{
    jd_summary *s = &j->sum;
    json_decref(j->start_ev);
    j->start_ev = json_incref(ev);
    if (jd_str(ev, "exe")) snprintf(j->exe_start, sizeof j->exe_start, "%s", jd_str(ev, "exe"));
    SETSTR(s->cmd, jd_str(ev, "cmd"));
    SETSTR(s->user, jd_str(ev, "user"));
    json_t *argv = json_object_get(ev, "argv");
    if (!s->cmd[0] && json_is_array(argv)) { /* cmd may be empty: join argv */
        size_t i, len = 0;
        json_t *a;
        json_array_foreach(argv, i, a)
        {
            if (!json_is_string(a) || len + 2 >= sizeof s->cmd) break;
            len += (size_t)snprintf(s->cmd + len, sizeof s->cmd - len, "%s%s", i ? " " : "",
                                    json_string_value(a));
        }
    }
    if (isnan(s->start)) s->start = jd_num(ev, "ts");
    SETSTR(s->type, "jobscope");
}

/* JoReMon rows (JSON Lines or CSV turned into objects): three per sample. */
static void add_joremon(jobdata *j, json_t *ev, const char *type)
{
    jd_summary *s = &j->sum;
    j->format = 1;
    SETSTR(s->type, "joremon");
    SETSTR(s->job_id, jd_str(ev, "JobID"));
    SETSTR(s->host, jd_str(ev, "Hostname"));
    SETSTR(s->cmd, jd_str(ev, "CMD"));
    SETSTR(s->exe, jd_str(ev, "CMD"));
    SETSTR(s->user, jd_str(ev, "User"));
    double ts = parse_rfc3339(jd_str(ev, "Timestamp"));
    int kind = strstr(type, "CPU") ? JD_CPU : strstr(type, "IO") ? JD_RCHAR : JD_RSS;
    size_t i = j->n ? j->n - 1 : (size_t)-1;
    if (i == (size_t)-1 || isnan(j->jr_ts) || fabs(ts - j->jr_ts) >= 1.0 ||
        !isnan(j->col[kind == JD_RCHAR ? JD_RCHAR : kind][i]))
        i = new_sample(j, ts), j->jr_ts = ts;
    if (i == (size_t)-1) return;
    double **c = j->col;
    if (kind == JD_CPU) {
        c[JD_CPU][i] = jd_num(ev, "CPUPercent");
        c[JD_CPUTIME][i] = jd_num(ev, "CPUTime");
        c[JD_ELAPSED][i] = jd_num(ev, "ClockTime");
    } else if (kind == JD_RCHAR) {
        c[JD_RCHAR][i] = jd_num(ev, "RBytesTotal");
        c[JD_WCHAR][i] = jd_num(ev, "WBytesTotal");
        c[JD_RBYTES][i] = jd_num(ev, "RBytesFromDisk");
        c[JD_WBYTES][i] = jd_num(ev, "WBytesFromDisk");
    } else {
        c[JD_RSS][i] = jd_num(ev, "RSS");
        c[JD_VM][i] = jd_num(ev, "VMS");
        s->peak_mem = nmax(s->peak_mem, jd_num(ev, "PeakRSS"));
    }
}

int jobdata_add(jobdata *j, json_t *ev)
{
    if (!json_is_object(ev)) return -1;
    const char *name = jd_str(ev, "event");
    if (!name) {
        const char *type = jd_str(ev, "Type");
        if (type && !strncmp(type, "joremon.", 8)) {
            add_joremon(j, ev, type);
            return 0;
        }
        name = jd_str(ev, "monitoring_event");
        if (!name) name = "";
    }
    identity(j, ev, name);
    if (!strcmp(name, "kickstart.inv.online"))
        add_sample(j, ev);
    else if (!strcmp(name, "jobscope.end"))
        add_end(j, ev);
    else if (!strcmp(name, "jobscope.start"))
        add_start(j, ev);
    else if (!strcmp(name, "jobscope.metric"))
        add_metric(j, ev);
    else if (!strcmp(name, "kickstart.inv.online.gpu.stats"))
        add_gpu_stats(j, ev);
    else
        push_event(j, ev);
    return 0;
}

/* ---- after the last event ---- */

/* A batch system's figure (Slurm, HTCondor, PBS): the truth of what the job
 * was given, above what the user says in --tag. */
static int from_batch(const char *from)
{
    return from && (!strncmp(from, "SLURM_", 6) || !strncmp(from, "HTCondor", 8) ||
                    !strncmp(from, "PBS", 3));
}

/* The allocation the job is measured against, and what counts as its
 * requests (docs/views.md "Allocation"): the start event's alloc_* when a
 * batch system said it, else a --tag request_*, else --limit, else the
 * start event's other sources (cgroup, cpuset, affinity, the host); events
 * of older versions: the CPUs jobscope saw. */
static void resolve_allocation(jobdata *j)
{
    jd_summary *s = &j->sum;
    json_t *st = j->start_ev, *end = j->end_ev, *tags = j->tags;
    double v;
    /* CPUs */
    double a = jd_num(st, "alloc_cpus");
    const char *af = jd_str(st, "alloc_cpus_from");
    const char *tc = jd_str(tags, "request_cpus");
    double t = tc ? atof(tc) : 0;
    s->req_cpus = NAN;
    if (a > 0 && from_batch(af)) {
        s->cores = a, s->req_cpus = a;
        snprintf(s->cores_from, sizeof s->cores_from, "%s", af);
    } else if (t > 0) {
        s->cores = t, s->req_cpus = t;
        snprintf(s->cores_from, sizeof s->cores_from, "--tag request_cpus");
    } else if (a > 0) {
        s->cores = a;
        snprintf(s->cores_from, sizeof s->cores_from, "%s", af ? af : "start event");
    } else if ((v = jd_num(end, "cores")) > 0 || (v = jd_num(st, "cpus_available")) > 0 ||
               (v = jd_num(st, "cpus_online")) > 0) {
        /* no start event: the end record's cores (its cores_from since
         * they are the allocation; before, the CPUs the job could run on) */
        s->cores = v;
        snprintf(s->cores_from, sizeof s->cores_from, "%s",
                 jd_num(end, "cores") == v && jd_str(end, "cores_from") ? jd_str(end, "cores_from")
                                                                        : "affinity");
        if (json_object_get(end ? end : st, "batch")) s->req_cpus = v;
    } else {
        s->cores = 1; /* JoReMon, kickstart traces: nothing says */
        snprintf(s->cores_from, sizeof s->cores_from, "assumed");
    }
    /* memory */
    double m = jd_num(st, "alloc_mem"), tm = jd_parse_size_mib(jd_str(tags, "request_memory"));
    const char *mf = jd_str(st, "alloc_mem_from");
    json_t *max = json_object_get(json_object_get(end, "limits"), "max");
    double lim = jd_num(max, "memory"), cgmax = jd_numpath(end, "cgroup", "memory_max");
    s->alloc_mem = NAN;
    s->alloc_mem_from[0] = 0;
#define SETMEM(val, what)                                                                          \
    (s->alloc_mem = (val), snprintf(s->alloc_mem_from, sizeof s->alloc_mem_from, "%s", what))
    if (m > 0 && from_batch(mf))
        SETMEM(m, mf);
    else if (tm > 0)
        SETMEM(tm, "--tag request_memory");
    else if (lim > 0)
        SETMEM(lim, "--limit memory");
    else if (m > 0)
        SETMEM(m, mf ? mf : "start event");
    else if (cgmax > 0)
        SETMEM(cgmax, "cgroup memory.max");
#undef SETMEM
    s->req_mem = s->alloc_mem;
    /* GPUs */
    double g = jd_num(st, "alloc_gpus");
    const char *gf = jd_str(st, "alloc_gpus_from"), *tg = jd_str(tags, "request_gpus");
    s->alloc_gpus = NAN;
    s->alloc_gpus_from[0] = 0;
    if (g >= 0 && (from_batch(gf) || !tg)) {
        s->alloc_gpus = g;
        snprintf(s->alloc_gpus_from, sizeof s->alloc_gpus_from, "%s", gf ? gf : "start event");
    } else if (tg && (v = atof(tg)) >= 0) {
        s->alloc_gpus = v;
        snprintf(s->alloc_gpus_from, sizeof s->alloc_gpus_from, "--tag request_gpus");
    }
    s->req_gpus = s->alloc_gpus;
    /* wall time */
    const char *w = jd_str(tags, "request_walltime");
    if (!w) w = jd_str(tags, "request_wall");
    s->req_wall = jd_parse_duration(w);
    if (isnan(s->req_wall) && jd_num(max, "wall") > 0) s->req_wall = jd_num(max, "wall");
}

void jobdata_finish(jobdata *j)
{
    jd_summary *s = &j->sum;
    double **c = j->col;
    size_t n = j->n;
    /* rates from the cumulative counters; CPU % from CPU time where missing */
    static const int cum[4] = {JD_RCHAR, JD_WCHAR, JD_RBYTES, JD_WBYTES};
    static const int rate[4] = {JD_RCHAR_RATE, JD_WCHAR_RATE, JD_RBYTES_RATE, JD_WBYTES_RATE};
    for (size_t i = 0; i < n; i++) {
        double dt = i ? c[JD_TS][i] - c[JD_TS][i - 1] : NAN;
        int ok = i && dt > 0;
        for (int k = 0; k < 4; k++)
            c[rate[k]][i] = ok ? fmax(0, (c[cum[k]][i] - c[cum[k]][i - 1]) / dt) : (i ? NAN : 0);
        c[JD_IOWAIT_FRAC][i] = ok ? fmax(0, (c[JD_IOWAIT][i] - c[JD_IOWAIT][i - 1]) / dt) : NAN;
        if (isnan(c[JD_CPU][i]) && ok)
            c[JD_CPU][i] = fmax(0, 100 * (c[JD_CPUTIME][i] - c[JD_CPUTIME][i - 1]) / dt);
    }
    /* the final sample, after every process was reaped, has nothing alive:
     * its gauges are no measurement (a chart would drop to 0 at the end) */
    if (n >= 2 && c[JD_PROCS][n - 1] == 0) {
        static const int gauges[] = {JD_RSS,     JD_VM,      JD_SWAP,  JD_PROCS,
                                     JD_THREADS, JD_GPU_MEM, JD_CG_MEM};
        for (size_t k = 0; k < sizeof gauges / sizeof *gauges; k++) c[gauges[k]][n - 1] = NAN;
    }
    /* the real executable: the end record's, else the last sample's (after
     * the main process's last exec), else the start's (maybe a shim) */
    if (!s->exe[0])
        snprintf(s->exe, sizeof s->exe, "%s", j->exe_last[0] ? j->exe_last : j->exe_start);
    /* summary from the samples where no end-of-job record said it */
    if (n) {
        double first = c[JD_TS][0], last = c[JD_TS][n - 1];
        double el0 = c[JD_ELAPSED][0];
        if (isnan(s->start)) s->start = first - (isnan(el0) || j->format ? 0 : el0);
        if (isnan(s->end)) s->end = last;
        if (isnan(s->duration)) {
            double el = c[JD_ELAPSED][n - 1];
            s->duration = (!j->format && !isnan(el)) ? el : s->end - s->start;
            if (j->format && !isnan(el)) s->duration = el; /* JoReMon's ClockTime */
        }
        double peak = NAN, gmem = NAN, gpeak = NAN, gsum = 0, thr = NAN;
        size_t gn = 0;
        for (size_t i = 0; i < n; i++) {
            peak = nmax(peak, c[JD_RSS][i]);
            gmem = nmax(gmem, c[JD_GPU_MEM][i]);
            thr = nmax(thr, c[JD_THREADS][i]);
            if (!isnan(c[JD_GPU_UTIL][i])) {
                gpeak = nmax(gpeak, c[JD_GPU_UTIL][i]);
                gsum += c[JD_GPU_UTIL][i];
                gn++;
            }
        }
        /* the job's own peak: never the page cache the cgroup also counts */
        s->peak_mem = nmax(s->peak_mem, nmax(peak, j->cg_own_peak));
        s->threads_peak = nmax(s->threads_peak, thr);
        if (isnan(s->gpu_peak_mem)) s->gpu_peak_mem = gmem;
        s->gpu_util_peak = gpeak;
        if (isnan(s->gpu_util_mean) && gn) s->gpu_util_mean = gsum / (double)gn;
        double *last_of[] = {&s->cpu_time, &s->rchar, &s->wchar, &s->read_bytes, &s->write_bytes};
        int cols[] = {JD_CPUTIME, JD_RCHAR, JD_WCHAR, JD_RBYTES, JD_WBYTES};
        for (int k = 0; k < 5; k++)
            for (size_t i = n; i-- > 0;)
                if (!isnan(c[cols[k]][i])) {
                    if (isnan(*last_of[k])) *last_of[k] = c[cols[k]][i];
                    break;
                }
        if (!s->samples) s->samples = n;
    }
    s->cg_peak_mem = j->cg_peak;
    s->cpu_wait = j->psi_last - j->psi_first;
    /* a Slurm task watched by the plugin: its cgroup's CPU, read after the
     * reap, is the whole; the /proc totals of an attach stop at the last
     * sample before the exit (docs/slurm.md "What agrees and why") */
    double cg_cpu = jd_numpath(j->end_ev, "cgroup", "cpu_usage");
    if (jd_str(j->tags, "slurm_step") && cg_cpu > 0 && !(s->cpu_time >= cg_cpu))
        s->cpu_time = cg_cpu;
    resolve_allocation(j);
    /* efficiency against the allocation (the end record's is against the
     * CPUs jobscope could run the job on) */
    if (s->duration > 0 && !isnan(s->cpu_time) && s->cores > 0)
        s->cpu_eff = s->cpu_time / (s->duration * s->cores);
    if (!isnan(s->gpu_peak_mem) && isnan(s->gpu_devices)) s->gpu_devices = s->gpu_peak_mem > 0;
    if (!s->type[0]) SETSTR(s->type, j->n ? "kickstart" : "events");
}
