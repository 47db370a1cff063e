/* repo_runs.c — the runs of a job in the repository (see repo.h, docs/views.md
 * "A job of several runs"): the monitors of one job id — a Slurm job's
 * steps, tasks and nodes (the SPANK plugin starts one per task), an MPI
 * job's ranks, a job run again.  Each event of a monitor is given its run
 * as it is stored (the rule of report/jobset.h: host and Slurm step and task
 * or rank, then the main pid that tells attempts apart); when a run ends
 * its summary (its part) is kept, and the job's row is summed from the
 * parts; a job's page is the whole job (jobset_json) and each run has one
 * of its own.  A job of one run is stored and shown as it always was. */
#include "repo/repo_priv.h"
#include "report/jobset.h"
#include "util/hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Above this many runs, the row is summed again every 16th run's end and
 * at the last: summing reads every part. */
#define EVERY_END_UP_TO 64

#define RUN(r, sql, ...)                                                                           \
    do {                                                                                           \
        sqlite3_stmt *st_ = repo_prep(r, sql, __VA_ARGS__);                                        \
        if (st_) {                                                                                 \
            while (sqlite3_step(st_) == SQLITE_ROW) {}                                             \
            repo_done(r, st_);                                                                     \
        }                                                                                          \
    } while (0)

static const char *col_text(sqlite3_stmt *st, int i)
{
    const char *v = (const char *)sqlite3_column_text(st, i);
    return v ? v : "";
}

/* ---- which run an event belongs to ---- */

static unsigned cache_set(long long jobid, const char *base)
{
    return (unsigned)((hash_bytes(base, strlen(base)) ^ (uint64_t)jobid * 0x9E3779B97F4A7C15ull) %
                      REPO_RUN_SETS);
}

static long long cache_get(repo *r, long long jobid, const char *base, long long pid)
{
    unsigned s = cache_set(jobid, base);
    for (int i = 0; i < 4; i++)
        if (r->runcache[s][i].jobid == jobid && r->runcache[s][i].pid == pid &&
            !strcmp(r->runcache[s][i].base, base))
            return r->runcache[s][i].run;
    return -1;
}

static void cache_put(repo *r, long long jobid, const char *base, long long pid, long long run)
{
    unsigned s = cache_set(jobid, base);
    int i = r->runcache_next[s]++ % 4;
    r->runcache[s][i].jobid = jobid;
    r->runcache[s][i].pid = pid;
    r->runcache[s][i].run = run;
    snprintf(r->runcache[s][i].base, sizeof r->runcache[s][i].base, "%s", base);
}

static void cache_forget(repo *r, long long jobid, const char *base)
{
    unsigned s = cache_set(jobid, base);
    for (int i = 0; i < 4; i++)
        if (r->runcache[s][i].jobid == jobid && !strcmp(r->runcache[s][i].base, base))
            r->runcache[s][i].jobid = 0;
}

long long repo_run_cached(repo *r, long long jobid, json_t *ev)
{
    char base[200];
    long long pid;
    if (!jobset_run_base(ev, base, sizeof base, &pid)) return -1;
    return cache_get(r, jobid, base, pid);
}

long long repo_run_cached_key(repo *r, long long jobid, const char *base, long long pid)
{
    return cache_get(r, jobid, base, pid);
}

long long repo_run_of(repo *r, long long jobid, json_t *ev, const char *name, int *nruns)
{
    char base[200];
    long long pid, run;
    if (!jobset_run_base(ev, base, sizeof base, &pid)) return -1;
    int is_start = !strcmp(name, "jobscope.start");
    if (!is_start && (run = cache_get(r, jobid, base, pid)) >= 0) return run;
    if (is_start) cache_forget(r, jobid, base);
    /* the runs of this base, oldest first (the latest 64 decide) */
    jobset_ref refs[64] = {{0}};
    long long ids[64];
    size_t m = 0, nth = 0;
    /* a job's first event has no run to look for (most jobs: one run) */
    sqlite3_stmt *st =
        *nruns > 0 ? repo_prep(r,
                               "SELECT id, pid, started FROM runs WHERE jobid=?1 AND base=?2"
                               " ORDER BY id",
                               "is", jobid, base)
                   : NULL;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        nth++;
        if (m == 64) {
            memmove(refs, refs + 1, 63 * sizeof *refs);
            memmove(ids, ids + 1, 63 * sizeof *ids);
            m--;
        }
        ids[m] = sqlite3_column_int64(st, 0);
        refs[m].pid = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1);
        refs[m++].started = sqlite3_column_int(st, 2);
    }
    repo_done(r, st);
    int adopt;
    int k = jobset_choose(refs, m, pid, is_start, &adopt);
    if (k < 0) {
        char key[200];
        jobset_key(base, nth, key, sizeof key);
        const char *host = jd_str(ev, "hostname");
        run = -1;
        st = repo_prep(
            r,
            "INSERT INTO runs(jobid, key, base, pid, started, host) VALUES(?1, ?2, ?3,"
            " ?4, ?5, ?6) ON CONFLICT(jobid, base, key) DO UPDATE SET key=key RETURNING id",
            "isssis", jobid, key, base, NULL, (long long)is_start,
            host ? host : jd_str(ev, "Hostname"));
        if (st) {
            if (pid >= 0) sqlite3_bind_int64(st, 4, pid);
            if (sqlite3_step(st) == SQLITE_ROW) run = sqlite3_column_int64(st, 0);
            while (sqlite3_step(st) == SQLITE_ROW) {}
            repo_done(r, st);
        }
        /* a second run: the job is running again, as a whole from now on */
        st = repo_prep(r,
                       "UPDATE jobs SET state=CASE WHEN runs >= 1 THEN 'running' ELSE state END,"
                       " runs=runs+1 WHERE id=?1 RETURNING runs",
                       "i", jobid);
        if (st && sqlite3_step(st) == SQLITE_ROW) *nruns = sqlite3_column_int(st, 0);
        if (st)
            while (sqlite3_step(st) == SQLITE_ROW) {}
        if (r->last_jobid == jobid) r->last_nruns = *nruns; /* repo.c's job_row */
        repo_done(r, st);
        /* the job's first run may have ended while it was the only one
         * (runs are marked ended by repo_run_ended, for jobs of several) */
        if (*nruns == 2)
            RUN(r,
                "UPDATE runs SET ended=1 WHERE jobid=?1 AND id != ?2 AND EXISTS (SELECT 1 FROM"
                " events e, jobs j WHERE j.id = ?1 AND e.job = j.job AND e.wf = j.wf"
                " AND e.run = runs.id AND e.name = 'jobscope.end')",
                "ii", jobid, run);
    } else {
        run = ids[k];
        if (adopt) RUN(r, "UPDATE runs SET pid=?2 WHERE id=?1", "ii", run, pid);
        if (is_start && !refs[k].started) RUN(r, "UPDATE runs SET started=1 WHERE id=?1", "i", run);
    }
    if (run >= 0) cache_put(r, jobid, base, pid, run);
    return run;
}

/* ---- a run's part, the whole row ---- */

void repo_run_jobdata(repo *r, const char *wf, const char *job, long long run, double since,
                      jobdata *j)
{
    jobdata_init(j);
    repo_evs e;
    repo_evs_job(r, job, wf, run, since, 0, &e);
    for (size_t i = 0; i < e.n; i++) {
        json_t *ev = json_loads(e.v[i].body, 0, NULL);
        if (ev) jobdata_add(j, ev);
        json_decref(ev);
    }
    repo_evs_free(&e);
    jobdata_finish(j);
}

static void store_part(repo *r, const char *wf, const char *job, long long run, const char *key,
                       const char *base)
{
    jobdata j;
    repo_run_jobdata(r, wf, job, run, 0, &j);
    jobset_part p;
    jobset_part_of(&p, key, base, &j);
    json_t *o = jobset_part_json(&p);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(16));
    RUN(r, "UPDATE runs SET part=?2 WHERE id=?1", "is", run, text);
    free(text);
    json_decref(o);
    jobset_part_free(&p);
    jobdata_free(&j);
}

void repo_run_ended(repo *r, const char *wf, const char *job, long long jobid, long long run)
{
    RUN(r, "UPDATE runs SET ended=1 WHERE id=?1", "i", run);
    long long total = 0, ended = 0;
    sqlite3_stmt *st =
        repo_prep(r, "SELECT count(*), sum(ended) FROM runs WHERE jobid=?1", "i", jobid);
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        total = sqlite3_column_int64(st, 0);
        ended = sqlite3_column_int64(st, 1);
    }
    repo_done(r, st);
    if (total > EVERY_END_UP_TO && ended % 16 && ended < total) return;
    /* the parts of the runs that ended (a run that ended before the job
     * had a second has none yet) */
    size_t n = 0, cap = 0;
    struct todo {
        long long id;
        char key[200], base[200];
    } *todo = NULL;
    st = repo_prep(r, "SELECT id, key, base FROM runs WHERE jobid=?1 AND ended=1 AND part IS NULL",
                   "i", jobid);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            struct todo *t = realloc(todo, (cap = cap ? 2 * cap : 8) * sizeof *t);
            if (!t) break;
            todo = t;
        }
        todo[n].id = sqlite3_column_int64(st, 0);
        snprintf(todo[n].key, sizeof todo[n].key, "%s", col_text(st, 1));
        snprintf(todo[n].base, sizeof todo[n].base, "%s", col_text(st, 2));
        n++;
    }
    repo_done(r, st);
    for (size_t i = 0; i < n; i++) store_part(r, wf, job, todo[i].id, todo[i].key, todo[i].base);
    free(todo);
    /* every part, oldest first; a run still going is only its key */
    jobset_part *parts = NULL;
    n = cap = 0;
    st = repo_prep(r, "SELECT key, base, host, ended, part FROM runs WHERE jobid=?1 ORDER BY id",
                   "i", jobid);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            jobset_part *t = realloc(parts, (cap = cap ? 2 * cap : 8) * sizeof *t);
            if (!t) break;
            parts = t;
        }
        jobset_part *p = &parts[n];
        json_t *o = sqlite3_column_int(st, 3) ? json_loads(col_text(st, 4), 0, NULL) : NULL;
        if (!o || jobset_part_read(o, p)) {
            jobdata j;
            jobdata_init(&j); /* running: nothing known but where */
            memset(p, 0, sizeof *p);
            p->sum = j.sum;
            jobdata_free(&j);
            snprintf(p->run, sizeof p->run, "%s", col_text(st, 0));
            snprintf(p->base, sizeof p->base, "%s", col_text(st, 1));
            snprintf(p->sum.host, sizeof p->sum.host, "%s", col_text(st, 2));
            snprintf(p->sum.job_id, sizeof p->sum.job_id, "%s", job);
            /* a Slurm task's key says its step: HOST:STEP.TASK */
            const char *c = strrchr(p->base, ':'), *dot = c ? strchr(c, '.') : NULL;
            if (dot) {
                snprintf(p->step, sizeof p->step, "%.*s", (int)(dot - c - 1), c + 1);
                snprintf(p->task, sizeof p->task, "%s", dot + 1);
            }
            p->pid = -1;
            p->node_cores = p->node_mem = NAN;
        }
        json_decref(o);
        n++;
    }
    repo_done(r, st);
    jobset_order(parts, NULL, n);
    jd_summary whole;
    jobset_whole(parts, n, &whole);
    json_t *warn = jobset_warnings(parts, n, &whole);
    repo_store_summary(r, wf, job, &whole, warn, whole.has_end);
    json_decref(warn);
    for (size_t i = 0; i < n; i++) jobset_part_free(&parts[i]);
    free(parts);
}

/* ---- reads ---- */

int repo_job_runs(repo *r, const char *wf, const char *job)
{
    int n = 0;
    sqlite3_stmt *st = repo_prep(r, "SELECT runs FROM jobs WHERE wf=?1 AND job=?2", "ss", wf, job);
    if (st && sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    repo_done(r, st);
    return n;
}

long long repo_run_id(repo *r, const char *wf, const char *job, const char *key)
{
    long long id = -1;
    sqlite3_stmt *st = repo_prep(r,
                                 "SELECT runs.id FROM runs JOIN jobs ON jobs.id = runs.jobid"
                                 " WHERE jobs.wf=?1 AND jobs.job=?2 AND runs.key=?3",
                                 "sss", wf, job, key);
    if (st && sqlite3_step(st) == SQLITE_ROW) id = sqlite3_column_int64(st, 0);
    repo_done(r, st);
    return id;
}

json_t *repo_runs_page(repo *r, const char *wf, const char *job, size_t max_points)
{
    jobset s;
    jobset_init(&s);
    /* run by run, in the order they began (attempts are told apart so),
     * the job's own events (no run) first */
    repo_evs e;
    repo_evs_job(r, job, wf, -1, NAN, 1, &e);
    size_t nev = 0;
    long long cur = -1;
    char *key = NULL, *base = NULL;
    for (size_t i = 0; i < e.n; i++) {
        json_t *ev = json_loads(e.v[i].body, 0, NULL);
        if (!ev) continue;
        nev++;
        if (e.v[i].run < 0) {
            json_array_append(s.job_events, ev);
        } else {
            if (e.v[i].run != cur) { /* the run's key and base ("" with no row of it) */
                cur = e.v[i].run;
                free(key), free(base);
                sqlite3_stmt *st = repo_prep(r, "SELECT key, base FROM runs WHERE id=?1", "i", cur);
                int row = st && sqlite3_step(st) == SQLITE_ROW;
                key = strdup(row ? col_text(st, 0) : "");
                base = strdup(row ? col_text(st, 1) : "");
                repo_done(r, st);
            }
            jobdata *j = jobset_run(&s, key ? key : "", base ? base : "");
            if (j) jobdata_add(j, ev);
        }
        json_decref(ev);
    }
    free(key), free(base);
    repo_evs_free(&e);
    json_t *page = nev ? jobset_json(&s, max_points) : NULL;
    jobset_free(&s);
    return page;
}

json_t *repo_job_page(repo *r, const char *job, const char *wf, const char *run, double since,
                      size_t max_points)
{
    char w[512];
    json_t *page = NULL;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    if (repo_find_wf(r, job, wf, w, sizeof w)) {
        if (run) {
            long long id = repo_run_id(r, w, job, run);
            if (id >= 0) {
                jobdata j;
                repo_run_jobdata(r, w, job, id, since, &j);
                page = jobdata_json(&j, max_points);
                json_object_set_new(page, "run", json_string(run));
                jobdata_free(&j);
            }
        } else if (repo_job_runs(r, w, job) > 1) {
            page = repo_runs_page(r, w, job, max_points);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return page;
}

int repo_job_nruns(repo *r, const char *job, const char *wf)
{
    char w[512];
    int n = -1;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    if (repo_find_wf(r, job, wf, w, sizeof w)) n = repo_job_runs(r, w, job);
    pthread_mutex_unlock(&r->mu);
    return n;
}

json_t *repo_run_events(repo *r, const char *job, const char *wf, const char *run)
{
    char w[512];
    json_t *a = NULL;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    long long id = repo_find_wf(r, job, wf, w, sizeof w) ? repo_run_id(r, w, job, run) : -1;
    if (id >= 0) {
        a = json_array();
        repo_evs e;
        repo_evs_job(r, job, w, id, NAN, 0, &e);
        for (size_t i = 0; i < e.n; i++) {
            json_t *ev = json_loads(e.v[i].body, 0, NULL);
            if (ev) json_array_append_new(a, ev);
        }
        repo_evs_free(&e);
    }
    pthread_mutex_unlock(&r->mu);
    return a;
}
