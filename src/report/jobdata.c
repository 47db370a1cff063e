/* jobdata.c — reads one job's events back into characteristics, series,
 * other events and warnings (see jobdata.h).  Shared by `jobscope report`,
 * `jobscope stats` and the events repository of `jobscope serve`. */
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
    double *nan_fields[] = {&s->start,        &s->end,           &s->duration,      &s->cpu_time,
                            &s->cpu_eff,      &s->cores,         &s->peak_mem,      &s->rchar,
                            &s->wchar,        &s->read_bytes,    &s->write_bytes,   &s->gpu_devices,
                            &s->gpu_peak_mem, &s->gpu_util_mean, &s->gpu_util_peak, &s->req_mem,
                            &s->req_cpus,     &s->req_wall,      &s->req_gpus};
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

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double numpath(json_t *o, const char *a, const char *b)
{
    return num(json_object_get(o, a), b);
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
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

static void identity(jobdata *j, json_t *ev)
{
    jd_summary *s = &j->sum;
    SETSTR(s->job_id, str(ev, "job_id"));
    SETSTR(s->job_id, str(ev, "dag_job_id"));
    SETSTR(s->job_id, str(ev, "condor_job_id"));
    SETSTR(s->host, str(ev, "hostname"));
    SETSTR(s->wf, str(ev, "wf_uuid"));
    SETSTR(s->wf, str(ev, "xwf_id"));
    SETSTR(s->wf_label, str(ev, "wf_label"));
    SETSTR(s->xformation, str(ev, "xformation"));
    SETSTR(s->site, str(ev, "site"));
    json_t *tags = json_object_get(ev, "tags");
    if (json_is_object(tags) && !j->tags) j->tags = json_incref(tags);
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
    size_t i = new_sample(j, num(ev, "ts"));
    if (i == (size_t)-1) return;
    double **c = j->col;
    c[JD_ELAPSED][i] = num(ev, "elapsed");
    c[JD_CPU][i] = num(ev, "cpu_percent");
    c[JD_RSS][i] = num(ev, "rss") * 1024;
    c[JD_VM][i] = num(ev, "vm") * 1024;
    c[JD_SWAP][i] = num(ev, "swap") * 1024;
    c[JD_RCHAR][i] = num(ev, "rchar");
    c[JD_WCHAR][i] = num(ev, "wchar");
    double rb = num(ev, "read_bytes"), wb = num(ev, "write_bytes");
    c[JD_RBYTES][i] = isnan(rb) ? num(ev, "bread") : rb;
    c[JD_WBYTES][i] = isnan(wb) ? num(ev, "bwrite") : wb;
    c[JD_PROCS][i] = num(ev, "procs");
    c[JD_THREADS][i] = num(ev, "threads");
    c[JD_GPU_MEM][i] = num(ev, "gpu_mem");
    c[JD_GPU_UTIL][i] = num(ev, "gpu_util");
    c[JD_CG_MEM][i] = num(ev, "cg_memory_current");
    c[JD_CPUTIME][i] = num(ev, "utime") + num(ev, "stime");
    c[JD_IOWAIT][i] = num(ev, "iowait");
    SETSTR(j->sum.exe, str(ev, "exe"));
    SETSTR(j->sum.type, str(ev, "type"));
}

static void add_gpu_stats(jobdata *j, json_t *ev)
{
    double ts = num(ev, "ts");
    json_t *id = json_object_get(ev, "id");
    char name[96];
    long long dev = json_is_integer(id) ? json_integer_value(id) : 0;
    double util = num(ev, "job_sm_util");
    if (isnan(util)) util = num(ev, "gpu_utilization");
    double mem = num(ev, "job_mem_usage");
    if (isnan(mem)) mem = num(ev, "mem_usage");
    snprintf(name, sizeof name, "gpu%lld utilisation", dev);
    extra_push(extra_series(j, name, "%"), ts, util);
    snprintf(name, sizeof name, "gpu%lld memory", dev);
    extra_push(extra_series(j, name, "bytes"), ts, mem);
    double devs = (double)(dev + 1);
    j->sum.gpu_devices = nmax(j->sum.gpu_devices, devs);
}

static void add_metric(jobdata *j, json_t *ev)
{
    const char *name = str(ev, "name");
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
    extra_push(extra_series(j, full, str(ev, "unit")), num(ev, "ts"), num(ev, "value"));
}

static void add_end(jobdata *j, json_t *ev)
{
    jd_summary *s = &j->sum;
    json_decref(j->end_ev);
    j->end_ev = json_incref(ev);
    s->has_end = 1;
    SETSTR(s->exe, str(ev, "exe"));
    SETSTR(s->cmd, str(ev, "cmd"));
    snprintf(s->exit_type, sizeof s->exit_type, "%s",
             str(ev, "exit_type") ? str(ev, "exit_type") : "");
    json_t *ec = json_object_get(ev, "exit_code");
    s->exit_code = json_is_integer(ec) ? (int)json_integer_value(ec) : -1;
    snprintf(s->signal_name, sizeof s->signal_name, "%s",
             str(ev, "signal_name") ? str(ev, "signal_name") : "");
    s->start = num(ev, "start");
    s->end = num(ev, "end");
    s->duration = num(ev, "duration");
    s->cpu_time = num(ev, "cpu_time");
    s->cores = num(ev, "cores");
    s->cpu_eff = num(ev, "cpu_efficiency");
    s->peak_mem = numpath(json_object_get(ev, "peaks"), "rss", "value") * 1024;
    double cgpeak = numpath(ev, "cgroup", "memory_peak");
    s->peak_mem = nmax(s->peak_mem, cgpeak);
    s->rchar = num(ev, "rchar");
    s->wchar = num(ev, "wchar");
    s->read_bytes = num(ev, "read_bytes");
    s->write_bytes = num(ev, "write_bytes");
    json_t *gpu = json_object_get(ev, "gpu");
    if (json_is_object(gpu)) {
        s->gpu_devices = num(gpu, "devices");
        s->gpu_peak_mem = num(gpu, "peak_mem");
        s->gpu_util_mean = num(gpu, "mean_util");
    }
    double cgmax = numpath(ev, "cgroup", "memory_max");
    if (!isnan(cgmax) && cgmax > 0 && isnan(s->req_mem)) s->req_mem = cgmax;
    json_t *max = json_object_get(json_object_get(ev, "limits"), "max");
    if (json_is_object(max)) {
        if (!isnan(num(max, "memory"))) s->req_mem = num(max, "memory");
        if (!isnan(num(max, "wall"))) s->req_wall = num(max, "wall");
    }
    s->samples = (size_t)nmax(0, num(ev, "samples"));
}

static void add_start(jobdata *j, json_t *ev)
{
    jd_summary *s = &j->sum;
    json_decref(j->start_ev);
    j->start_ev = json_incref(ev);
    SETSTR(s->exe, str(ev, "exe"));
    SETSTR(s->cmd, str(ev, "cmd"));
    SETSTR(s->user, str(ev, "user"));
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
    if (isnan(s->start)) s->start = num(ev, "ts");
    SETSTR(s->type, "jobscope");
}

/* JoReMon rows (JSON Lines or CSV turned into objects): three per sample. */
static void add_joremon(jobdata *j, json_t *ev, const char *type)
{
    jd_summary *s = &j->sum;
    j->format = 1;
    SETSTR(s->type, "joremon");
    SETSTR(s->job_id, str(ev, "JobID"));
    SETSTR(s->host, str(ev, "Hostname"));
    SETSTR(s->cmd, str(ev, "CMD"));
    SETSTR(s->exe, str(ev, "CMD"));
    SETSTR(s->user, str(ev, "User"));
    double ts = parse_rfc3339(str(ev, "Timestamp"));
    int kind = strstr(type, "CPU") ? JD_CPU : strstr(type, "IO") ? JD_RCHAR : JD_RSS;
    size_t i = j->n ? j->n - 1 : (size_t)-1;
    if (i == (size_t)-1 || isnan(j->jr_ts) || fabs(ts - j->jr_ts) >= 1.0 ||
        !isnan(j->col[kind == JD_RCHAR ? JD_RCHAR : kind][i]))
        i = new_sample(j, ts), j->jr_ts = ts;
    if (i == (size_t)-1) return;
    double **c = j->col;
    if (kind == JD_CPU) {
        c[JD_CPU][i] = num(ev, "CPUPercent");
        c[JD_CPUTIME][i] = num(ev, "CPUTime");
        c[JD_ELAPSED][i] = num(ev, "ClockTime");
    } else if (kind == JD_RCHAR) {
        c[JD_RCHAR][i] = num(ev, "RBytesTotal");
        c[JD_WCHAR][i] = num(ev, "WBytesTotal");
        c[JD_RBYTES][i] = num(ev, "RBytesFromDisk");
        c[JD_WBYTES][i] = num(ev, "WBytesFromDisk");
    } else {
        c[JD_RSS][i] = num(ev, "RSS");
        c[JD_VM][i] = num(ev, "VMS");
        s->peak_mem = nmax(s->peak_mem, num(ev, "PeakRSS"));
    }
}

int jobdata_add(jobdata *j, json_t *ev)
{
    if (!json_is_object(ev)) return -1;
    const char *name = str(ev, "event");
    if (!name) {
        const char *type = str(ev, "Type");
        if (type && !strncmp(type, "joremon.", 8)) {
            add_joremon(j, ev, type);
            return 0;
        }
        name = str(ev, "monitoring_event");
        if (!name) name = "";
    }
    identity(j, ev);
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

/* ---- loading ---- */

static void split_csv(char *line, char **cells, int max, int *n)
{
    *n = 0;
    char *p = line;
    while (*n < max) {
        cells[(*n)++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
}

int jobdata_load(jobdata *j, const char *path, size_t *bad, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, nev = 0, nbad = 0;
    ssize_t len;
    char *hdr[32];
    int nhdr = 0;
    char *hdrline = NULL;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) continue;
        if (*p == '{') {
            json_error_t je;
            json_t *ev = json_loadb(p, (size_t)(len - (p - line)), 0, &je);
            if (ev && !jobdata_add(j, ev))
                nev++;
            else
                nbad++;
            json_decref(ev);
        } else if (!hdrline && !strncmp(p, "CMD,", 4)) {
            hdrline = strdup(p); /* JoReMon CSV header */
            if (hdrline) split_csv(hdrline, hdr, 32, &nhdr);
        } else if (hdrline) {
            char *cells[32];
            int nc;
            split_csv(p, cells, 32, &nc);
            json_t *ev = json_object();
            for (int k = 0; k < nc && k < nhdr; k++) {
                if (!*cells[k]) continue;
                char *end;
                double v = strtod(cells[k], &end);
                json_object_set_new(ev, hdr[k],
                                    (*end || end == cells[k] || !strcmp(hdr[k], "JobID"))
                                        ? json_string(cells[k])
                                        : json_real(v));
            }
            if (!jobdata_add(j, ev)) nev++;
            json_decref(ev);
        } else {
            nbad++;
        }
    }
    int rerr = ferror(f);
    free(line);
    free(hdrline);
    if (f != stdin) fclose(f);
    if (bad) *bad += nbad;
    if (rerr) {
        snprintf(err, errlen, "%s: read error", path);
        return -1;
    }
    if (!nev) {
        snprintf(err, errlen,
                 "%s: no events (JSON Lines of jobscope, kickstart or JoReMon, "
                 "or JoReMon CSV expected)",
                 path);
        return -1;
    }
    jobdata_finish(j);
    return 0;
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
    if (j->start_ev && isnan(s->cores)) {
        s->cores = num(j->start_ev, "cpus_available");
        if (isnan(s->cores)) s->cores = num(j->start_ev, "cpus_online");
    }
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
        double peak = NAN, gmem = NAN, gpeak = NAN, gsum = 0;
        size_t gn = 0;
        for (size_t i = 0; i < n; i++) {
            peak = nmax(peak, c[JD_RSS][i]);
            gmem = nmax(gmem, c[JD_GPU_MEM][i]);
            if (!isnan(c[JD_GPU_UTIL][i])) {
                gpeak = nmax(gpeak, c[JD_GPU_UTIL][i]);
                gsum += c[JD_GPU_UTIL][i];
                gn++;
            }
        }
        if (isnan(s->peak_mem)) s->peak_mem = peak;
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
    if (isnan(s->cores)) s->cores = 1; /* JoReMon, kickstart: one core assumed */
    if (isnan(s->cpu_eff) && s->duration > 0 && !isnan(s->cpu_time))
        s->cpu_eff = s->cpu_time / (s->duration * s->cores);
    if (!isnan(s->gpu_peak_mem) && isnan(s->gpu_devices)) s->gpu_devices = s->gpu_peak_mem > 0;
    if (!s->type[0]) SETSTR(s->type, j->n ? "kickstart" : "events");
    /* requests recorded as tags win over what limits say */
    if (j->tags) {
        double v;
        if (!isnan(v = jd_parse_size_mib(str(j->tags, "request_memory")))) s->req_mem = v;
        const char *cp = str(j->tags, "request_cpus");
        if (cp && (v = atof(cp)) > 0) s->req_cpus = v;
        const char *w = str(j->tags, "request_walltime");
        if (!w) w = str(j->tags, "request_wall");
        if (!isnan(v = jd_parse_duration(w))) s->req_wall = v;
        const char *g = str(j->tags, "request_gpus");
        if (g && (v = atof(g)) >= 0) s->req_gpus = v;
    }
    if (isnan(s->req_cpus) && j->end_ev && json_object_get(j->end_ev, "batch"))
        s->req_cpus = s->cores; /* under a batch system: what it allotted */
}

/* ---- warnings ---- */

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

json_t *jobdata_warnings(const jobdata *j)
{
    json_t *w = json_array();
    const jd_summary *s = &j->sum;
    if (!isnan(s->cpu_eff) && s->cpu_eff < 0.5 && s->duration >= 10)
        warn(w, "cpu_efficiency", NAN, NAN, "low CPU efficiency: %.0f%% of %g core%s over %.0f s",
             100 * s->cpu_eff, s->cores, s->cores == 1 ? "" : "s", s->duration);
    /* memory close to a limit */
    double lim = s->req_mem;
    const char *what = "the memory request";
    if (j->start_ev) {
        json_t *rl = json_object_get(j->start_ev, "rlimits");
        double as = numpath(rl, "as", "soft"), rss = numpath(rl, "rss", "soft");
        if (!isnan(rss) && (isnan(lim) || rss < lim)) lim = rss, what = "RLIMIT_RSS";
        if (!isnan(as) && isnan(lim)) lim = as, what = "RLIMIT_AS";
    }
    if (!isnan(lim) && lim > 0 && !isnan(s->peak_mem) && s->peak_mem >= 0.9 * lim)
        warn(w, "memory_limit", NAN, NAN, "peak memory %.0f MiB is %.0f%% of %s (%.0f MiB)",
             s->peak_mem / 1048576, 100 * s->peak_mem / lim, what, lim / 1048576);
    /* idle GPU */
    if (!isnan(s->gpu_devices) && s->gpu_devices > 0 && !isnan(s->gpu_util_mean) &&
        s->gpu_util_mean < 5)
        warn(w, "idle_gpu", NAN, NAN, "GPU mostly idle: mean utilisation %.1f%% on %g device%s",
             s->gpu_util_mean, s->gpu_devices, s->gpu_devices == 1 ? "" : "s");
    /* I/O-bound phases: consecutive intervals where the job waits on I/O
     * (iowait >= 0.3 s/s) or moves >= 1 MiB/s to/from storage at < 50% CPU
     * of its cores, lasting >= 3 intervals and >= 5% of the job. */
    double *const *c = j->col;
    size_t i = 1;
    while (i < j->n) {
        size_t a = i;
        while (i < j->n) {
            double io = 0;
            for (int k = JD_RCHAR_RATE; k <= JD_WBYTES_RATE; k++)
                if (!isnan(c[k][i]) && (k == JD_RBYTES_RATE || k == JD_WBYTES_RATE)) io += c[k][i];
            int waits = !isnan(c[JD_IOWAIT_FRAC][i]) && c[JD_IOWAIT_FRAC][i] >= 0.3;
            int busy = io >= 1048576 && !isnan(c[JD_CPU][i]) && c[JD_CPU][i] < 50 * s->cores;
            if (!waits && !busy) break;
            i++;
        }
        if (i - a >= 3) {
            double from = c[JD_TS][a - 1], to = c[JD_TS][i - 1];
            if (!(s->duration > 0) || to - from >= 0.05 * s->duration)
                warn(w, "io_bound", from, to,
                     "I/O-bound phase of %.0f s (waiting on I/O or "
                     "moving data at low CPU)",
                     to - from);
        }
        if (i == a) i++;
    }
    if (!strcmp(s->exit_type, "signaled"))
        warn(w, "signal", NAN, NAN, "killed by %s",
             s->signal_name[0] ? s->signal_name : "a signal");
    if (!strcmp(s->exit_type, "limit"))
        warn(w, "limit", NAN, NAN, "stopped by a --limit (%s)",
             str(j->end_ev, "limit") ? str(j->end_ev, "limit") : "?");
    if (j->end_ev && numpath(j->end_ev, "cgroup", "oom_kill") > 0)
        warn(w, "oom_kill", NAN, NAN, "the OOM killer killed %.0f process(es)",
             numpath(j->end_ev, "cgroup", "oom_kill"));
    return w;
}

/* ---- JSON out ---- */

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
    json_object_set_new(o, "exit_code", s->exit_code >= 0 ? json_integer(s->exit_code) : jd_null());
    json_object_set_new(o, "finished", json_boolean(s->has_end));
    N("start", s->start);
    N("end", s->end);
    N("duration", s->duration);
    N("cpu_time", s->cpu_time);
    N("cpu_efficiency", s->cpu_eff);
    N("cores", s->cores);
    N("peak_mem", s->peak_mem);
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
#undef S
#undef N
    return o;
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
    return o;
}

json_t *jd_null(void)
{
    static json_t *null;
    if (!null) null = json_loads("null", JSON_DECODE_ANY, NULL);
    return null; /* a singleton: jansson never frees it */
}

double jd_percentile(const double *v, size_t n, double p)
{
    if (!n) return NAN;
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1) return v[n - 1];
    return v[lo] + (h - (double)lo) * (v[lo + 1] - v[lo]);
}
