/* repo_agg.c — the repository's views over many jobs (see repo.h): the
 * aggregates per workflow, transformation, host, executable or user over
 * time (the dashboard's Overview, as Kibana and Grafana give Panorama's and
 * Dragon's users), and the export of every job's raw events, a page of jobs
 * at a time, that `stats --server` reads instead of one request per job:
 * NDJSON, each job's line {"jobscope.export.job":{job_id, wf, state}} then
 * its events one a line, last {"jobscope.export.next": row id or null}. */
#include "repo/repo_priv.h"
#include "report/jobdata.h"
#include "sink/formats/sbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS    100000
#define REPO_AGG_DAYS 14 /* the default range: the last days that have jobs */

typedef struct agg_job {
    double start, end, cpu, cores, mem, alloc_mem;
    int group, failed, running, stopped;
} agg_job;

typedef struct agg_group {
    char *key;
    size_t jobs, running, failed, stopped;
    double cpu, core_s, peak_max, mem_sum, alloc_mem_sum;
    size_t mem_n, alloc_n;
} agg_group;

typedef struct agg {
    agg_group *g;
    size_t ng, capg;
    int *slot; /* open addressing: index into g, -1 empty */
    size_t nslot;
} agg;

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int group_of(agg *a, const char *key)
{
    if (a->ng * 2 >= a->nslot) { /* grow and rehash */
        size_t n = a->nslot ? a->nslot * 2 : 256;
        int *s = malloc(n * sizeof *s);
        if (!s) return -1;
        for (size_t i = 0; i < n; i++) s[i] = -1;
        for (size_t i = 0; i < a->ng; i++) {
            size_t h = hash(a->g[i].key) & (n - 1);
            while (s[h] >= 0) h = (h + 1) & (n - 1);
            s[h] = (int)i;
        }
        free(a->slot);
        a->slot = s, a->nslot = n;
    }
    size_t h = hash(key) & (a->nslot - 1);
    while (a->slot[h] >= 0) {
        if (!strcmp(a->g[a->slot[h]].key, key)) return a->slot[h];
        h = (h + 1) & (a->nslot - 1);
    }
    if (a->ng >= MAX_GROUPS) return -1;
    if (a->ng == a->capg) {
        size_t cap = a->capg ? a->capg * 2 : 64;
        agg_group *g = realloc(a->g, cap * sizeof *g);
        if (!g) return -1;
        a->g = g, a->capg = cap;
    }
    agg_group *g = &a->g[a->ng];
    memset(g, 0, sizeof *g);
    g->key = strdup(key);
    a->slot[h] = (int)a->ng;
    return (int)a->ng++;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : jd_null();
}

static int cmp_jobs_desc(const void *x, const void *y, void *arg)
{
    const agg_group *g = arg;
    size_t a = g[*(const int *)x].jobs, b = g[*(const int *)y].jobs;
    return a < b ? 1 : a > b ? -1 : 0;
}

json_t *repo_aggregate(repo *r, const repo_job_filter *f, const char *by, int buckets, int top)
{
    static const char *const keys[] = {"wf", "xformation", "host", "exe", "user"};
    const char *col = NULL;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(by, keys[i])) col = keys[i];
    if (!col) return NULL;
    if (buckets < 1) buckets = 100;
    if (buckets > 1000) buckets = 1000;
    if (top < 1) top = 8;
    repo_job_filter fw = *f;
    int recent = 0;
    char sql[3072];
    repo_qb b;
    if (!(f->since > 0) && !(f->until > 0)) {
        /* no range given: the last REPO_AGG_DAYS days that have jobs */
        repo_where(&b, f);
        snprintf(sql, sizeof sql, "SELECT max(coalesce(end, last, start)) FROM jobs%s", b.sql);
        repo_flush(r);
        pthread_mutex_lock(&r->mu);
        sqlite3_stmt *q = repo_where_prepare(r, &b, sql);
        if (q && sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
            fw.since = sqlite3_column_double(q, 0) - REPO_AGG_DAYS * 86400.0, recent = 1;
        repo_done(r, q);
        pthread_mutex_unlock(&r->mu);
    }
    f = &fw;
    repo_where(&b, f);
    snprintf(sql, sizeof sql,
             "SELECT coalesce(%s, '(none)'), start, coalesce(end, last, start), cpu_time, cores,"
             " peak_mem, alloc_mem, state, exit_code, stopped_by FROM jobs%s",
             col, b.sql);
    agg a = {0};
    agg_job *jobs = NULL;
    size_t n = 0, cap = 0;
    double t0 = INFINITY, t1 = -INFINITY;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = repo_where_prepare(r, &b, sql);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            size_t c2 = cap ? cap * 2 : 1024;
            agg_job *p = realloc(jobs, c2 * sizeof *p);
            if (!p) break;
            jobs = p, cap = c2;
        }
        int gi = group_of(&a, (const char *)sqlite3_column_text(st, 0));
        if (gi < 0) continue;
        agg_job *j = &jobs[n++];
#define COL(i) (sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i))
        *j = (agg_job){.start = COL(1),
                       .end = COL(2),
                       .cpu = COL(3),
                       .cores = COL(4),
                       .mem = COL(5),
                       .alloc_mem = COL(6),
                       .group = gi};
        const char *state = (const char *)sqlite3_column_text(st, 7);
        j->running = state && !strcmp(state, "running");
        j->stopped = sqlite3_column_type(st, 9) != SQLITE_NULL;
        j->failed = state && !strcmp(state, "done") &&
                    (sqlite3_column_type(st, 8) == SQLITE_NULL || sqlite3_column_int(st, 8) != 0);
#undef COL
        agg_group *g = &a.g[gi];
        g->jobs++, g->running += j->running, g->failed += j->failed, g->stopped += j->stopped;
        double dur = j->end - j->start;
        if (isfinite(j->cpu)) g->cpu += j->cpu;
        if (isfinite(j->cores) && dur > 0) g->core_s += j->cores * dur;
        if (isfinite(j->mem)) {
            g->peak_max = fmax(g->peak_max, j->mem);
            g->mem_sum += j->mem, g->mem_n++;
        }
        if (isfinite(j->alloc_mem)) g->alloc_mem_sum += j->alloc_mem, g->alloc_n++;
        if (isfinite(j->start)) t0 = fmin(t0, j->start);
        if (isfinite(j->end)) t1 = fmax(t1, j->end);
    }
    repo_done(r, st);
    pthread_mutex_unlock(&r->mu);
    if (f->since > 0) t0 = f->since;
    if (f->until > 0) t1 = fmin(t1, f->until);
    if (!isfinite(t0) || !(t1 > t0)) t0 = isfinite(t0) ? t0 : 0, t1 = t0 + 1;
    /* the largest groups get a timeline; the rest are summed as "(other)" */
    int *order = malloc((a.ng ? a.ng : 1) * sizeof *order);
    for (size_t i = 0; order && i < a.ng; i++) order[i] = (int)i;
    if (order) qsort_r(order, a.ng, sizeof *order, cmp_jobs_desc, a.g);
    int ntl = (int)a.ng < top ? (int)a.ng : top, other = (int)a.ng > top;
    int *tl_of = malloc((a.ng ? a.ng : 1) * sizeof *tl_of);
    for (size_t i = 0; tl_of && order && i < a.ng; i++)
        tl_of[order[i]] = (int)i < top ? (int)i : top;
    enum { T_RUN, T_CORES, T_ALLOC, T_MEM, T_AMEM, T_FAIL, NT };
    size_t nser = (size_t)(ntl + other + 1) * NT * (size_t)buckets;
    double *tl = calloc(nser ? nser : 1, sizeof *tl), bl = (t1 - t0) / buckets;
#define TL(s, k, i) tl[((size_t)(s)*NT + (k)) * (size_t)buckets + (size_t)(i)]
    for (size_t k = 0; tl && tl_of && k < n; k++) {
        agg_job *j = &jobs[k];
        if (!isfinite(j->start) || !isfinite(j->end)) continue;
        int s = tl_of[j->group], all = ntl + other;
        double dur = j->end - j->start, used = dur > 0 && isfinite(j->cpu) ? j->cpu / dur : 0;
        int b0 = (int)floor((j->start - t0) / bl), b1 = (int)floor((j->end - t0) / bl);
        if (b0 < 0) b0 = 0;
        if (b1 >= buckets) b1 = buckets - 1;
        for (int i = b0; i <= b1; i++) {
            double lo = t0 + i * bl, hi = lo + bl;
            double ov = (fmin(hi, j->end) - fmax(lo, j->start)) / bl;
            if (dur <= 0) ov = 1.0 / buckets; /* an instant job: counted once */
            if (ov <= 0) continue;
            double v[NT] = {ov,
                            used * ov,
                            (isfinite(j->cores) ? j->cores : 0) * ov,
                            (isfinite(j->mem) ? j->mem : 0) * ov,
                            (isfinite(j->alloc_mem) ? j->alloc_mem : 0) * ov,
                            0};
            for (int t = 0; t < T_FAIL; t++) TL(s, t, i) += v[t], TL(all, t, i) += v[t];
        }
        if (j->failed || j->stopped) TL(s, T_FAIL, b1) += 1, TL(ntl + other, T_FAIL, b1) += 1;
    }
    static const char *const tnames[NT] = {"running",  "cores_used",    "cores_allocated",
                                           "mem_used", "mem_allocated", "failed"};
    json_t *groups = json_array(), *series = json_array(), *ts = json_array();
    for (int i = 0; i < buckets; i++) json_array_append_new(ts, json_real(t0 + (i + 0.5) * bl));
    for (size_t k = 0; order && k < a.ng; k++) {
        agg_group *g = &a.g[order[k]];
        json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I}", "key", g->key, "jobs", (json_int_t)g->jobs,
                              "running", (json_int_t)g->running, "failed", (json_int_t)g->failed,
                              "stopped", (json_int_t)g->stopped);
        json_object_set_new(o, "cpu_time", json_real(g->cpu));
        json_object_set_new(o, "core_seconds_allocated", json_real(g->core_s));
        json_object_set_new(o, "cpu_efficiency", num(g->core_s > 0 ? g->cpu / g->core_s : NAN));
        json_object_set_new(o, "peak_mem_max", num(g->mem_n ? g->peak_max : NAN));
        json_object_set_new(o, "peak_mem_mean", num(g->mem_n ? g->mem_sum / g->mem_n : NAN));
        json_object_set_new(o, "alloc_mem_mean",
                            num(g->alloc_n ? g->alloc_mem_sum / g->alloc_n : NAN));
        json_array_append_new(groups, o);
    }
    for (int s = 0; tl && s < ntl + other + 1; s++) {
        json_t *o = json_object();
        json_object_set_new(o, "key",
                            json_string(s < ntl             ? a.g[order[s]].key
                                        : s == ntl && other ? "(other)"
                                                            : "(all)"));
        for (int t = 0; t < NT; t++) {
            json_t *arr = json_array();
            for (int i = 0; i < buckets; i++) json_array_append_new(arr, json_real(TL(s, t, i)));
            json_object_set_new(o, tnames[t], arr);
        }
        json_array_append_new(series, o);
    }
#undef TL
    /* workflows are shown by their label */
    if (!strcmp(col, "wf")) {
        pthread_mutex_lock(&r->mu);
        size_t i;
        json_t *g;
        json_array_foreach(groups, i, g)
        {
            if (i >= 1000) break;
            sqlite3_stmt *q =
                repo_prep(r, "SELECT label FROM workflows WHERE wf=?1", "s", jd_str(g, "key"));
            if (q && sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
                json_object_set_new(g, "label",
                                    json_string((const char *)sqlite3_column_text(q, 0)));
            repo_done(r, q);
        }
        pthread_mutex_unlock(&r->mu);
    }
    json_t *out = json_pack("{s:s,s:I,s:f,s:f,s:f,s:o,s:o,s:o,s:b}", "by", by, "jobs",
                            (json_int_t)n, "from", t0, "to", t1, "bucket_seconds", bl, "groups",
                            groups, "ts", ts, "timeline", series, "recent", recent);
    for (size_t i = 0; i < a.ng; i++) free(a.g[i].key);
    free(a.g);
    free(a.slot);
    free(jobs);
    free(order);
    free(tl_of);
    free(tl);
    return out;
}

/* A JSON string literal of s. */
static void put_str(sbuf *b, const char *s)
{
    json_t *j = json_string(s ? s : "");
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    sbuf_puts(b, t ? t : "\"\"");
    free(t);
    json_decref(j);
}

static void export_head(sbuf *out, const char *job, const char *wf, const char *state,
                        const char *run)
{
    sbuf_puts(out, "{\"jobscope.export.job\":{\"job_id\":");
    put_str(out, job);
    sbuf_puts(out, ",\"wf\":");
    put_str(out, wf);
    sbuf_puts(out, ",\"state\":");
    put_str(out, state ? state : "unknown");
    if (run) {
        sbuf_puts(out, ",\"run\":");
        put_str(out, run);
    }
    sbuf_puts(out, "}}\n");
}

static void export_line(sbuf *out, const char *body)
{
    /* one line each: a body may have been received pretty-printed, and a
     * raw line break can only be whitespace in JSON */
    size_t at = out->len, n = strlen(body);
    sbuf_put(out, body, n);
    for (size_t i = at; !out->oom && i < at + n; i++)
        if (out->p[i] == '\n' || out->p[i] == '\r') out->p[i] = ' ';
    sbuf_putc(out, '\n');
}

/* A job of several runs (docs/views.md "A job of several runs"): each run
 * as a job of its own, as the files of its monitors would be read; the
 * job's events of no run (or of a run with no row) are left out. */
static void export_runs(repo *r, sbuf *out, const char *wf, const char *job)
{
    repo_evs e;
    repo_evs_job(r, job, wf, -1, NAN, 1, &e);
    long long cur = -1;
    int known = 0;
    for (size_t i = 0; i < e.n; i++) {
        long long run = e.v[i].run;
        if (run < 0) continue;
        if (run != cur) {
            cur = run;
            sqlite3_stmt *k = repo_prep(r, "SELECT key, ended FROM runs WHERE id=?1", "i", run);
            known = k && sqlite3_step(k) == SQLITE_ROW;
            if (known)
                export_head(out, job, wf, sqlite3_column_int(k, 1) ? "done" : "running",
                            (const char *)sqlite3_column_text(k, 0));
            repo_done(r, k);
        }
        if (known) export_line(out, e.v[i].body);
    }
    repo_evs_free(&e);
}

char *repo_export(repo *r, const repo_job_filter *f, long long after, long limit)
{
    if (limit < 1) limit = 200;
    if (limit > 2000) limit = 2000;
    repo_qb b;
    repo_where(&b, f);
    char sql[3072];
    snprintf(sql, sizeof sql,
             "SELECT id, wf, job, state, runs FROM jobs%s%s id > %lld ORDER BY id LIMIT %ld", b.sql,
             b.n ? " AND" : " WHERE", after, limit);
    sbuf out = {0};
    long count = 0;
    long long last = after;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = repo_where_prepare(r, &b, sql);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        last = sqlite3_column_int64(st, 0);
        const char *wf = (const char *)sqlite3_column_text(st, 1);
        const char *job = (const char *)sqlite3_column_text(st, 2);
        const char *state = (const char *)sqlite3_column_text(st, 3);
        if (sqlite3_column_int(st, 4) > 1) { /* a job of several runs: a run at a time */
            export_runs(r, &out, wf, job);
            count++;
            continue;
        }
        export_head(&out, job, wf, state, NULL);
        repo_evs e;
        repo_evs_job(r, job, wf, -1, NAN, 0, &e);
        for (size_t i = 0; i < e.n; i++) export_line(&out, e.v[i].body);
        repo_evs_free(&e);
        count++;
    }
    repo_done(r, st);
    pthread_mutex_unlock(&r->mu);
    if (count == limit)
        sbuf_printf(&out, "{\"jobscope.export.next\":%lld}\n", last);
    else
        sbuf_puts(&out, "{\"jobscope.export.next\":null}\n");
    if (out.oom) {
        sbuf_free(&out);
        return NULL;
    }
    return out.p;
}
