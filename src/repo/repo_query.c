/* repo_query.c — every read of the events repository (see repo.h,
 * docs/views.md "API"): the job list (search, filters, server-side sort,
 * pages), a job's row, events and stored page, workflows, raw events paged
 * by id, nodes, aggregates over time, and the export `stats --server`
 * reads.  Every read first writes what is queued (repo_flush), so an
 * answer includes every event handed in before it.
 *
 * At 100,000 jobs the list must answer in a few milliseconds: filters are
 * written only when given (so SQLite can use an index), prefixes become
 * ranges (job >= 'ab' AND job < 'ac'), and each sort key has its index. */
#include "repo/repo_priv.h"
#include "report/jobdata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const repo_sort_keys[] = {
    "start", "end", "duration", "cpu_efficiency", "peak_mem", "cpu_time", "host",
    "job",   "exe", "user",     "state",          "wf",       "cores",    NULL};
static const char *const sort_cols[] = {"start",    "end",  "duration", "cpu_eff", "peak_mem",
                                        "cpu_time", "host", "job",      "exe",     "user",
                                        "state",    "wf",   "cores"};
const char *const repo_states[] = {"running", "done", "failed", "stopped", NULL};

json_t *repo_col_json(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, i));
    case SQLITE_TEXT:
        return json_string((const char *)sqlite3_column_text(st, i));
    default:
        return jd_null();
    }
}

#define JOB_COLS                                                                                   \
    "wf, job, host, exe, cmd, user, xformation, type, state, start, end, last, duration,"          \
    " cpu_time, cpu_eff, cores, cores_from, alloc_mem, peak_mem, cg_peak_mem, rchar, wchar,"       \
    " gpu_peak_mem, exit_code, exit_type, signal_name, stopped_by, batch_id, nsamples, stampede,"  \
    " (SELECT label FROM workflows w WHERE w.wf = jobs.wf), warnings, id"
static const char *const job_keys[] = {
    "wf",          "job_id",     "host",         "exe",       "cmd",
    "user",        "xformation", "type",         "state",     "start",
    "end",         "last",       "duration",     "cpu_time",  "cpu_efficiency",
    "cores",       "cores_from", "alloc_mem",    "peak_mem",  "cg_peak_mem",
    "rchar",       "wchar",      "gpu_peak_mem", "exit_code", "exit_type",
    "signal_name", "stopped_by", "batch_id",     "samples",   "stampede",
    "wf_label",    "warnings",   "row"};

static json_t *job_row(sqlite3_stmt *st)
{
    json_t *o = json_object();
    for (int i = 0; i < (int)(sizeof job_keys / sizeof *job_keys); i++) {
        if (!strcmp(job_keys[i], "warnings")) {
            const char *w = (const char *)sqlite3_column_text(st, i);
            json_t *a = w ? json_loads(w, 0, NULL) : NULL;
            json_object_set_new(o, "warnings", a ? a : json_array());
        } else {
            json_object_set_new(o, job_keys[i], repo_col_json(st, i));
        }
    }
    return o;
}

/* ---- the filters, as a WHERE clause and its arguments ---- */

static void qb_cond(repo_qb *b, const char *cond)
{
    b->n += (size_t)snprintf(b->sql + b->n, sizeof b->sql - b->n, "%s%s",
                             b->n ? " AND " : " WHERE ", cond);
    if (b->n >= sizeof b->sql) b->n = sizeof b->sql - 1;
}

static void qb_arg(repo_qb *b, const char *v)
{
    if (b->nargs < REPO_QB_MAX) b->arg[b->nargs++] = v;
}

/* The exclusive upper bound of the strings starting with p: p with its
 * last byte one higher ("ab" -> "ac"). */
static const char *qb_upper(repo_qb *b, const char *p)
{
    if (b->nargs >= REPO_QB_MAX) return p;
    char *u = b->own[b->nargs];
    size_t n = strlen(p);
    if (n >= sizeof b->own[0]) n = sizeof b->own[0] - 1;
    memcpy(u, p, n);
    u[n] = 0;
    while (n && (unsigned char)u[n - 1] == 0xff) u[--n] = 0;
    if (n) u[n - 1] = (char)((unsigned char)u[n - 1] + 1);
    return u;
}

/* "col >= ? AND col < ?" for a prefix */
static void qb_prefix(repo_qb *b, const char *col, const char *p, char *out, size_t len)
{
    snprintf(out, len, "(%s >= ? AND %s < ?)", col, col);
    qb_arg(b, p);
    const char *u = qb_upper(b, p);
    qb_arg(b, u);
}

void repo_where(repo_qb *b, const repo_job_filter *f)
{
    repo_where_warn(b, f, 0);
}

void repo_where_warn(repo_qb *b, const repo_job_filter *f, int warn_exists)
{
    char c[512];
    memset(b, 0, sizeof *b);
    b->warn_exists = warn_exists;
    if (f->q) {
        char j[96], w[96], l[128];
        qb_prefix(b, "job", f->q, j, sizeof j);
        qb_prefix(b, "wf", f->q, w, sizeof w);
        qb_prefix(b, "label", f->q, l, sizeof l);
        snprintf(c, sizeof c,
                 "(%s OR %s OR wf IN (SELECT wf FROM workflows WHERE %s) OR batch_id = ?"
                 " OR alias = ?)",
                 j, w, l);
        qb_arg(b, f->q);
        qb_arg(b, f->q); /* an array element as sacct names it: 10_2 */
        qb_cond(b, c);
    }
    if (f->wf) {
        char w[96], l[128];
        qb_prefix(b, "wf", f->wf, w, sizeof w);
        qb_prefix(b, "label", f->wf, l, sizeof l);
        snprintf(c, sizeof c, "(%s OR wf IN (SELECT wf FROM workflows WHERE %s))", w, l);
        qb_cond(b, c);
    }
    if (f->xformation) {
        qb_prefix(b, "xformation", f->xformation, c, sizeof c);
        qb_cond(b, c);
    }
    if (f->host) qb_cond(b, "host = ?"), qb_arg(b, f->host);
    if (f->user) qb_cond(b, "user = ?"), qb_arg(b, f->user);
    if (f->job) qb_cond(b, "job = ?"), qb_arg(b, f->job);
    if (f->exe) qb_cond(b, "instr(exe, ?) > 0"), qb_arg(b, f->exe);
    if (f->warning) {
        /* for a page of a common kind, walking the sort order and probing
         * is cheaper; for counts and rare kinds, the kind's list of jobs */
        qb_cond(b, b->warn_exists ? "EXISTS (SELECT 1 FROM job_warnings w WHERE w.kind = ?"
                                    " AND w.id = jobs.id)"
                                  : "id IN (SELECT id FROM job_warnings WHERE kind = ?)");
        qb_arg(b, f->warning);
    }
    if (f->state) {
        if (!strcmp(f->state, "running")) qb_cond(b, "state = 'running'");
        if (!strcmp(f->state, "done")) qb_cond(b, "state = 'done'");
        if (!strcmp(f->state, "failed"))
            qb_cond(b, "state = 'done' AND (exit_code IS NULL OR exit_code != 0)");
        if (!strcmp(f->state, "stopped")) qb_cond(b, "stopped_by IS NOT NULL");
    }
    if (f->since > 0 && b->nargs < REPO_QB_MAX) {
        snprintf(b->own[b->nargs], sizeof b->own[0], "%.6f", f->since);
        qb_cond(b, "coalesce(last, end, start) >= CAST(? AS REAL)");
        qb_arg(b, b->own[b->nargs]);
    }
    if (f->until > 0 && b->nargs < REPO_QB_MAX) {
        snprintf(b->own[b->nargs], sizeof b->own[0], "%.6f", f->until);
        qb_cond(b, "start <= CAST(? AS REAL)");
        qb_arg(b, b->own[b->nargs]);
    }
}

sqlite3_stmt *repo_where_prepare(repo *r, const repo_qb *b, const char *sql)
{
    sqlite3_stmt *st = repo_prep_dyn(r, sql);
    for (int i = 0; st && i < b->nargs; i++)
        sqlite3_bind_text(st, i + 1, b->arg[i], -1, SQLITE_TRANSIENT);
    return st;
}

json_t *repo_jobs(repo *r, const repo_job_filter *f)
{
    const char *col = "start";
    for (int i = 0; f->sort && repo_sort_keys[i]; i++)
        if (!strcmp(f->sort, repo_sort_keys[i])) col = sort_cols[i];
    repo_qb b;
    char sql[3072];
    long long kind_jobs = -1;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    if (f->warning) {
        sqlite3_stmt *st =
            repo_prep(r, "SELECT count(*) FROM job_warnings WHERE kind = ?1", "s", f->warning);
        if (st && sqlite3_step(st) == SQLITE_ROW) kind_jobs = sqlite3_column_int64(st, 0);
        repo_done(r, st);
    }
    repo_where_warn(&b, f, kind_jobs > 2000);
    /* NULLs last both ways; the row id breaks ties, so pages never overlap.
     * The page's ids are chosen first (sorting keys and ids only), then its
     * rows are read. */
    const char *dir = f->desc ? "DESC" : "ASC";
    snprintf(sql, sizeof sql,
             "SELECT " JOB_COLS " FROM jobs JOIN (SELECT id AS pid, %s AS pkey FROM jobs%s"
             " ORDER BY %s %s NULLS LAST, id %s LIMIT %ld OFFSET %ld) p ON jobs.id = p.pid"
             " ORDER BY p.pkey %s NULLS LAST, p.pid %s",
             col, b.sql, col, dir, dir,
             f->limit > 0 ? (f->limit > REPO_MAX_LIMIT ? REPO_MAX_LIMIT : f->limit) : 100,
             f->offset > 0 ? f->offset : 0, dir, dir);
    json_t *jobs = json_array();
    long long total = 0;
    sqlite3_stmt *st = repo_where_prepare(r, &b, sql);
    while (st && sqlite3_step(st) == SQLITE_ROW) json_array_append_new(jobs, job_row(st));
    repo_done(r, st);
    int only_kind = !f->q && !f->wf && !f->host && !f->user && !f->job && !f->xformation &&
                    !f->exe && !f->state && !(f->since > 0) && !(f->until > 0);
    if (kind_jobs >= 0 && only_kind) {
        total = kind_jobs; /* the kind alone: its list's length */
    } else {
        repo_where_warn(&b, f, 0);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs%s", b.sql);
        st = repo_where_prepare(r, &b, sql);
        if (st && sqlite3_step(st) == SQLITE_ROW) total = sqlite3_column_int64(st, 0);
        repo_done(r, st);
    }
    uint64_t version = r->version;
    pthread_mutex_unlock(&r->mu);
    return json_pack("{s:o,s:I,s:I}", "jobs", jobs, "total", (json_int_t)total, "version",
                     (json_int_t)version);
}

/* ---- one job ---- */

int repo_find_wf(repo *r, const char *job, const char *wf, char *out, size_t len)
{
    sqlite3_stmt *st = repo_prep(r,
                                 "SELECT wf FROM jobs WHERE job=?1 AND (?2 IS NULL OR wf=?2)"
                                 " ORDER BY coalesce(start, last) DESC LIMIT 1",
                                 "ss", job, wf);
    int found = 0;
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
        found = 1;
    }
    repo_done(r, st);
    return found;
}

static json_t *events_of(repo *r, const char *wf, const char *job, double since)
{
    json_t *a = json_array();
    repo_evs e;
    repo_evs_job(r, job, wf, -1, since, 0, &e);
    for (size_t i = 0; i < e.n; i++) {
        json_t *ev = json_loads(e.v[i].body, 0, NULL);
        if (ev) json_array_append_new(a, ev);
    }
    repo_evs_free(&e);
    return a;
}

void repo_jobdata_of(repo *r, const char *wf, const char *job, jobdata *j)
{
    repo_run_jobdata(r, wf, job, -1, 0.0, j); /* every run's */
}

json_t *repo_job_events(repo *r, const char *job, const char *wf, double since)
{
    char w[512];
    json_t *a = NULL;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    if (repo_find_wf(r, job, wf, w, sizeof w)) a = events_of(r, w, job, since);
    pthread_mutex_unlock(&r->mu);
    return a;
}

json_t *repo_job_row(repo *r, const char *job, const char *wf)
{
    char w[512];
    json_t *o = NULL;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    if (repo_find_wf(r, job, wf, w, sizeof w)) {
        sqlite3_stmt *st =
            repo_prep(r, "SELECT " JOB_COLS " FROM jobs WHERE wf=?1 AND job=?2", "ss", w, job);
        if (st && sqlite3_step(st) == SQLITE_ROW) o = job_row(st);
        repo_done(r, st);
    }
    pthread_mutex_unlock(&r->mu);
    return o;
}

char *repo_job_view(repo *r, const char *job, const char *wf)
{
    char w[512], *v = NULL;
    long long id = -1;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    if (repo_find_wf(r, job, wf, w, sizeof w)) {
        /* job_views; a file of an older version kept it in jobs.view */
        sqlite3_stmt *st =
            repo_prep(r,
                      "SELECT id, coalesce((SELECT view FROM job_views v WHERE v.id = jobs.id),"
                      " view) FROM jobs WHERE wf=?1 AND job=?2 AND state='done'",
                      "ss", w, job);
        if (st && sqlite3_step(st) == SQLITE_ROW) {
            id = sqlite3_column_int64(st, 0);
            if (sqlite3_column_text(st, 1)) v = strdup((const char *)sqlite3_column_text(st, 1));
        }
        repo_done(r, st);
        if (!v && id >= 0) {
            /* made on the first request of the finished job, then kept */
            json_t *view = NULL;
            if (repo_job_runs(r, w, job) > 1) { /* the whole job, from its runs */
                view = repo_runs_page(r, w, job, REPO_VIEW_POINTS);
            } else {
                jobdata j;
                repo_jobdata_of(r, w, job, &j);
                view = jobdata_json(&j, REPO_VIEW_POINTS);
                jobdata_free(&j);
            }
            v = json_dumps(view, JSON_COMPACT | JSON_REAL_PRECISION(16));
            json_decref(view);
            if (v) {
                st = repo_prep(r, "INSERT OR REPLACE INTO job_views(id, view) VALUES(?1, ?2)", "is",
                               id, v);
                if (st) sqlite3_step(st);
                repo_done(r, st);
            }
        }
    }
    pthread_mutex_unlock(&r->mu);
    return v;
}

/* ---- workflows, events, nodes ---- */

static const char *const wf_keys[] = {"wf",    "label",       "first", "last", "start",   "end",
                                      "state", "submit_host", "user",  "jobs", "running", "failed"};
#define WF_SQL                                                                                     \
    "SELECT w.wf, w.label, w.first, w.last, w.start, w.end, w.state, w.submit_host, w.user,"       \
    " (SELECT count(*) FROM jobs j WHERE j.wf=w.wf),"                                              \
    " (SELECT count(*) FROM jobs j WHERE j.wf=w.wf AND j.state='running'),"                        \
    " (SELECT count(*) FROM jobs j WHERE j.wf=w.wf AND j.state='done' AND (j.exit_code IS NULL "   \
    "OR j.exit_code != 0))"                                                                        \
    " FROM workflows w"

static json_t *wf_row(sqlite3_stmt *st)
{
    json_t *o = json_object();
    for (int i = 0; i < (int)(sizeof wf_keys / sizeof *wf_keys); i++)
        json_object_set_new(o, wf_keys[i], repo_col_json(st, i));
    return o;
}

json_t *repo_workflows(repo *r)
{
    json_t *a = json_array();
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = repo_prep(r, WF_SQL " ORDER BY w.first DESC LIMIT 10000", "");
    while (st && sqlite3_step(st) == SQLITE_ROW) json_array_append_new(a, wf_row(st));
    repo_done(r, st);
    pthread_mutex_unlock(&r->mu);
    return json_pack("{s:o}", "workflows", a);
}

json_t *repo_workflow(repo *r, const char *wf)
{
    json_t *o = NULL;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = repo_prep(r, WF_SQL " WHERE w.wf=?1", "s", wf);
    if (st && sqlite3_step(st) == SQLITE_ROW) o = wf_row(st);
    repo_done(r, st);
    if (o) {
        json_t *jobs = json_array(), *evs = json_array();
        st = repo_prep(
            r, "SELECT " JOB_COLS " FROM jobs WHERE wf=?1 ORDER BY start IS NULL, start, id", "s",
            wf);
        while (st && sqlite3_step(st) == SQLITE_ROW) json_array_append_new(jobs, job_row(st));
        repo_done(r, st);
        st = repo_prep(r,
                       "SELECT body FROM events WHERE wf=?1 AND wf != '' AND name NOT IN "
                       "('kickstart.inv.online', 'kickstart.inv.online.gpu.stats', "
                       "'jobscope.metric') ORDER BY ts, id LIMIT 5000",
                       "s", wf);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            json_t *ev = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
            if (ev) json_array_append_new(evs, ev);
        }
        repo_done(r, st);
        o = json_pack("{s:o,s:o,s:o}", "workflow", o, "jobs", jobs, "events", evs);
    }
    pthread_mutex_unlock(&r->mu);
    return o;
}

json_t *repo_events(repo *r, const repo_event_filter *f)
{
    long limit = f->limit > 0 ? (f->limit > 10000 ? 10000 : f->limit) : 500;
    json_t *a = json_array();
    long long last = -1;
    repo_evs e;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    repo_evs_page(r, f, limit, &e);
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < e.n; i++) {
        last = e.v[i].id;
        json_t *ev = json_loads(e.v[i].body, 0, NULL);
        json_array_append_new(
            a, json_pack("{s:I,s:o}", "id", (json_int_t)last, "event", ev ? ev : jd_null()));
    }
    long count = (long)e.n;
    repo_evs_free(&e);
    return json_pack("{s:o,s:o}", "events", a, "next",
                     count == limit ? json_integer(last) : jd_null());
}

json_t *repo_nodes(repo *r)
{
    json_t *a = json_array();
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = repo_prep(r,
                                 "SELECT host, count(*), sum(state='running'), max(last) FROM jobs"
                                 " WHERE host IS NOT NULL GROUP BY host ORDER BY host",
                                 "");
    while (st && sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(a, json_pack("{s:o,s:o,s:o,s:o}", "host", repo_col_json(st, 0),
                                           "jobs", repo_col_json(st, 1), "running",
                                           repo_col_json(st, 2), "last", repo_col_json(st, 3)));
    repo_done(r, st);
    pthread_mutex_unlock(&r->mu);
    return json_pack("{s:o}", "nodes", a);
}
