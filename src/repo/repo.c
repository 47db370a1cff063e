/* repo.c — the events repository in SQLite (see repo.h, docs/views.md):
 * opening it (schema, migration of older files), storing events and keeping
 * the jobs and workflows tables current.  Every read is repo_query.c; the
 * queue that gathers events into batches, and its writer, repo_queue.c.
 *
 * events(id, ts, name, wf, job, host, body): every event, body = its JSON
 *   text as received, but the samples a batch folds: those are kept as
 *   blocks (evblocks, repo_block.c), up to 64 KiB of a run's samples a
 *   row, pending and logged until written (repo_pending.c), and every read
 *   merges both.
 * jobs(wf, job, ...): one row per job, kept up to date from jobscope's
 *   start/samples/end and from stampede job events; the end-of-job record
 *   triggers a full summary (jobdata) with its warnings.
 * job_views(id, view): a finished job's page, made on its first request
 *   (GET /api/jobs/ID) and kept, apart so that scans of jobs stay small.
 * workflows(wf, ...): from stampede.xwf.*, stampede.wf.plan and the
 *   annotations of any event.
 * runs(id, jobid, key, base, pid, ...): the monitors of a job (repo_runs.c):
 *   a Slurm job's steps, tasks and nodes, an MPI job's ranks, a job run
 *   again; each event of one has its run's id (events.run).
 * A job is (workflow id, job id): the job id is dag_job_id when set (what
 * stampede events call job_id), else jobscope's job_id.  A job of several
 * runs is summed from them (report/jobset.h) for its row and its page.
 *
 * Statements of constant SQL are prepared once and kept (repo_prep): at
 * 100,000 jobs, preparing each statement of each event cost more than
 * running it. */
#include "repo/repo_priv.h"
#include "report/jobdata.h"
#include "report/jobset.h"
#include "server/json_read.h"
#include "util/log.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const schema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, ts REAL, name TEXT, wf TEXT,"
    "  job TEXT, host TEXT, body TEXT NOT NULL);"
    /* what the reads search by (each index costs every event stored):
     * a workflow's events (only events of one are indexed: most have
     * none), the retention's cut; and a job's or a run's (run_index) */
    "CREATE INDEX IF NOT EXISTS ev_wf_named ON events(wf, ts) WHERE wf != '';"
    "CREATE INDEX IF NOT EXISTS ev_ts ON events(ts);"
    /* indexes of earlier versions that no read used (GET /api/events
     * filters host and name along the ids) or that indexed every event */
    "DROP INDEX IF EXISTS ev_host;"
    "DROP INDEX IF EXISTS ev_name;"
    "DROP INDEX IF EXISTS ev_wf;"
    /* a run's samples of one batch (repo_block.c): every read of events
     * reads these too */
    "CREATE TABLE IF NOT EXISTS evblocks(id INTEGER PRIMARY KEY, last INTEGER NOT NULL, ts REAL,"
    "  ts_last REAL, name TEXT, wf TEXT, job TEXT, host TEXT, run INTEGER, data BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS evb_jrun ON evblocks(job, wf, run, ts);"
    "CREATE INDEX IF NOT EXISTS evb_ts ON evblocks(ts);"
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, wf TEXT NOT NULL, job TEXT NOT NULL,"
    "  host TEXT, exe TEXT, cmd TEXT, user TEXT, xformation TEXT, type TEXT, state TEXT,"
    "  start REAL, end REAL, last REAL, duration REAL, cpu_time REAL, cpu_eff REAL, cores REAL,"
    "  peak_mem REAL, rchar REAL, wchar REAL, gpu_peak_mem REAL, exit_code INTEGER,"
    "  exit_type TEXT, signal_name TEXT, nsamples INTEGER DEFAULT 0, stampede TEXT,"
    "  warnings TEXT, summary TEXT, view TEXT, UNIQUE(wf, job));"
    "CREATE TABLE IF NOT EXISTS job_views(id INTEGER PRIMARY KEY, view TEXT);"
    "CREATE TABLE IF NOT EXISTS job_warnings(id INTEGER, kind TEXT, PRIMARY KEY(id, kind))"
    "  WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS job_warnings_kind ON job_warnings(kind, id);"
    "CREATE TABLE IF NOT EXISTS workflows(wf TEXT PRIMARY KEY, label TEXT, first REAL, last REAL,"
    "  start REAL, end REAL, state TEXT, submit_host TEXT, user TEXT, body TEXT);"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, jobid INTEGER NOT NULL,"
    "  key TEXT NOT NULL, base TEXT NOT NULL, pid INTEGER, started INTEGER DEFAULT 0,"
    "  ended INTEGER DEFAULT 0, host TEXT, part TEXT, UNIQUE(jobid, base, key));"
    /* the repository's own facts: the pending log's generation written
     * (repo_pending.c) */
    "CREATE TABLE IF NOT EXISTS repo_meta(k TEXT PRIMARY KEY, v);";

/* After the migration (an older file's events have no run column yet). */
/* A job's events, and a run's within it: one index for both (a run's
 * events are always read with its job's name) instead of one each, which
 * cost every sample 1.3 us. */
static const char *const run_index =
    "CREATE INDEX IF NOT EXISTS ev_jrun ON events(job, wf, run, ts);"
    "DROP INDEX IF EXISTS ev_job;"
    "DROP INDEX IF EXISTS ev_run;";

/* Columns added since the first version: added to an older file on open. */
static const char *const new_columns[][2] = {
    {"cores_from", "TEXT"},        {"alloc_mem", "REAL"},  {"cg_peak_mem", "REAL"},
    {"warn_kinds", "TEXT"},        {"stopped_by", "TEXT"}, {"batch_id", "TEXT"},
    {"runs", "INTEGER DEFAULT 0"}, {"alias", "TEXT"},
};

/* The indexes behind search and server-side sorting (docs/views.md). */
static const char *const indexes =
    "CREATE INDEX IF NOT EXISTS jobs_job ON jobs(job);"
    "CREATE INDEX IF NOT EXISTS jobs_host ON jobs(host, start);"
    "CREATE INDEX IF NOT EXISTS jobs_start ON jobs(start);"
    "CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end);"
    "CREATE INDEX IF NOT EXISTS jobs_eff ON jobs(cpu_eff);"
    "CREATE INDEX IF NOT EXISTS jobs_mem ON jobs(peak_mem);"
    "CREATE INDEX IF NOT EXISTS jobs_dur ON jobs(duration);"
    "CREATE INDEX IF NOT EXISTS jobs_xf ON jobs(xformation, start);"
    "CREATE INDEX IF NOT EXISTS jobs_user ON jobs(user, start);"
    "CREATE INDEX IF NOT EXISTS jobs_batch ON jobs(batch_id);"
    "CREATE INDEX IF NOT EXISTS jobs_alias ON jobs(alias) WHERE alias IS NOT NULL;"
    "CREATE INDEX IF NOT EXISTS jobs_exe ON jobs(exe);"
    /* the states a list filters on, as partial indexes: a state alone is
     * never selective, "failed" or "running" is */
    "CREATE INDEX IF NOT EXISTS jobs_failed ON jobs(start)"
    "  WHERE state = 'done' AND (exit_code IS NULL OR exit_code != 0);"
    "CREATE INDEX IF NOT EXISTS jobs_running ON jobs(start) WHERE state = 'running';"
    "CREATE INDEX IF NOT EXISTS jobs_stopped ON jobs(start) WHERE stopped_by IS NOT NULL;"
    "DROP INDEX IF EXISTS jobs_state;" /* a state is never selective: it misled the planner */
    "CREATE INDEX IF NOT EXISTS wf_label ON workflows(label);";

static int migrate(repo *r)
{
    int old = 0;
    for (size_t i = 0; i < sizeof new_columns / sizeof *new_columns; i++) {
        char sql[256];
        sqlite3_stmt *st = NULL;
        int have = 0;
        if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM pragma_table_info('jobs') WHERE name=?1", -1,
                               &st, NULL) != SQLITE_OK)
            return -1;
        sqlite3_bind_text(st, 1, new_columns[i][0], -1, SQLITE_STATIC);
        have = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (have) continue;
        snprintf(sql, sizeof sql, "ALTER TABLE jobs ADD COLUMN %s %s", new_columns[i][0],
                 new_columns[i][1]);
        if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) != SQLITE_OK) return -1;
        old = 1;
    }
    /* events' runs (a file of an older version: none, each job one run) */
    sqlite3_stmt *ev = NULL;
    int have_run = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM pragma_table_info('events') WHERE name='run'", -1,
                           &ev, NULL) == SQLITE_OK)
        have_run = sqlite3_step(ev) == SQLITE_ROW;
    sqlite3_finalize(ev);
    if (!have_run && sqlite3_exec(r->db, "ALTER TABLE events ADD COLUMN run INTEGER", NULL, NULL,
                                  NULL) != SQLITE_OK)
        return -1;
    /* a file of an older version: its jobs' warning kinds, from their JSON */
    sqlite3_stmt *st = NULL;
    int empty = 0;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT NOT EXISTS (SELECT 1 FROM job_warnings) AND EXISTS"
                           " (SELECT 1 FROM jobs WHERE warnings LIKE '%\"kind\"%')",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        empty = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if ((old || empty) && sqlite3_exec(r->db,
                                       "INSERT OR IGNORE INTO job_warnings(kind, id)"
                                       " SELECT json_extract(w.value, '$.kind'), jobs.id"
                                       " FROM jobs, json_each(jobs.warnings) w"
                                       " WHERE json_valid(jobs.warnings);",
                                       NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_exec(r->db, run_index, NULL, NULL, NULL) != SQLITE_OK) return -1;
    return sqlite3_exec(r->db, indexes, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

repo *repo_open(const char *path, char *err, size_t errlen)
{
    repo *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->pfd = -1;
    if (sqlite3_open_v2(path, &r->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, r->db ? sqlite3_errmsg(r->db) : "cannot open");
        sqlite3_close(r->db);
        free(r);
        return NULL;
    }
    sqlite3_busy_timeout(r->db, 5000);
    char *e = NULL;
    if (sqlite3_exec(r->db, schema, NULL, NULL, &e) != SQLITE_OK || migrate(r)) {
        snprintf(err, errlen, "%s: %s", path, e ? e : sqlite3_errmsg(r->db));
        sqlite3_free(e);
        sqlite3_close(r->db);
        free(r);
        return NULL;
    }
    /* the log SQLite keeps after a checkpoint: at most 1 MiB, and none
     * at open (creating the schema leaves ~300 KB of it on a new file); no
     * wait when another process reads */
    sqlite3_exec(r->db, "PRAGMA journal_size_limit=1048576", NULL, NULL, NULL);
    sqlite3_busy_timeout(r->db, 0);
    sqlite3_exec(r->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_busy_timeout(r->db, 5000);
    /* the next event's id: after the last of events and of blocks (whose
     * last ids are within REPO_BLOCK_SPAN of their first) */
    sqlite3_stmt *st = NULL;
    r->next_id = 1;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT max(coalesce((SELECT max(id) FROM events), 0),"
                           " coalesce((SELECT max(last) FROM evblocks WHERE id >"
                           " (SELECT max(id) FROM evblocks) - ?1), 0))",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_int64(st, 1, REPO_BLOCK_SPAN) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        r->next_id = sqlite3_column_int64(st, 0) + 1;
    sqlite3_finalize(st);
    pthread_mutex_init(&r->mu, NULL);
    repo_pending_open(r, path); /* (what a crash left pending, written) */
    repo_queue_start(r);
    return r;
}

void repo_set_retention(repo *r, double seconds)
{
    pthread_mutex_lock(&r->mu);
    r->retention_s = seconds;
    r->since_prune = 10000; /* prune at the next write */
    pthread_mutex_unlock(&r->mu);
}

void repo_close(repo *r)
{
    if (!r) return;
    repo_queue_stop(r); /* (the queue and what is pending written) */
    repo_pending_close(r);
    repo_batch_forget(&r->batch);
    for (int i = 0; i < r->ncache; i++) sqlite3_finalize(r->cache[i].st);
    sqlite3_close(r->db);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

uint64_t repo_version(repo *r)
{
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    uint64_t v = r->version;
    pthread_mutex_unlock(&r->mu);
    return v;
}

/* ---- statements ---- */

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

static void bind_num(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

sqlite3_stmt *repo_prep(repo *r, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    for (int i = 0; i < r->ncache; i++)
        if (r->cache[i].sql == sql) {
            st = r->cache[i].st;
            break;
        }
    if (!st) {
        if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
            js_log(1, "repository", "%s", sqlite3_errmsg(r->db));
            return NULL;
        }
        if (r->ncache < REPO_STMT_CACHE) {
            r->cache[r->ncache].sql = sql;
            r->cache[r->ncache++].st = st;
        }
    }
    va_list ap;
    va_start(ap, types);
    for (int i = 0; types && types[i]; i++) {
        switch (types[i]) {
        case 's':
            bind_text(st, i + 1, va_arg(ap, const char *));
            break;
        case 'd':
            bind_num(st, i + 1, va_arg(ap, double));
            break;
        case 'i':
            sqlite3_bind_int64(st, i + 1, va_arg(ap, long long));
            break;
        }
    }
    va_end(ap);
    return st;
}

sqlite3_stmt *repo_prep_dyn(repo *r, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        js_log(1, "repository", "%s", sqlite3_errmsg(r->db));
        return NULL;
    }
    return st;
}

void repo_done(repo *r, sqlite3_stmt *st)
{
    if (!st) return;
    for (int i = 0; i < r->ncache; i++)
        if (r->cache[i].st == st) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return;
        }
    sqlite3_finalize(st);
}

#define RUN(r, sql, ...)                                                                           \
    do {                                                                                           \
        sqlite3_stmt *st_ = repo_prep(r, sql, __VA_ARGS__);                                        \
        if (st_) {                                                                                 \
            sqlite3_step(st_);                                                                     \
            repo_done(r, st_);                                                                     \
        }                                                                                          \
    } while (0)

/* ---- helpers ---- */

static const char *ev_wf(json_t *ev)
{
    const char *w = jd_str(ev, "wf_uuid");
    if (!w) w = jd_str(ev, "xwf_id");
    if (!w) w = jd_str(ev, "xwf.id");
    return w;
}

static const char *ev_job(json_t *ev)
{
    const char *j = jd_str(ev, "dag_job_id");
    if (!j) j = jd_str(ev, "job_id");
    if (!j) j = jd_str(ev, "job.id");
    if (!j) j = jd_str(ev, "JobID");
    return j;
}

/* ",kind1,kind2," of a warnings array: searched with instr(). */
static void warn_kinds(json_t *warn, char *out, size_t len)
{
    size_t i, n = (size_t)snprintf(out, len, ",");
    json_t *w;
    json_array_foreach(warn, i, w)
    {
        const char *k = jd_str(w, "kind");
        char pat[64];
        snprintf(pat, sizeof pat, ",%s,", k ? k : "");
        if (k && !strstr(out, pat) && n + strlen(k) + 2 < len)
            n += (size_t)snprintf(out + n, len - n, "%s,", k);
    }
}

/* ---- the end-of-job summary ---- */

void repo_store_summary(repo *r, const char *wf, const char *job, const jd_summary *s, json_t *warn,
                        int done)
{
    char *wj = json_dumps(warn, JSON_COMPACT), kinds[512];
    warn_kinds(warn, kinds, sizeof kinds);
    RUN(r,
        "UPDATE jobs SET exe=coalesce(?3,exe), cmd=coalesce(?4,cmd), start=coalesce(?5,start),"
        " end=?6, duration=?7, cpu_time=?8, cpu_eff=?9, cores=?10, peak_mem=?11, rchar=?12,"
        " wchar=?13, gpu_peak_mem=?14, alloc_mem=?15, cg_peak_mem=?16,"
        " state=CASE WHEN ?17 THEN 'done' ELSE 'running' END,"
        " last=max(coalesce(last,0),coalesce(?6,0)) WHERE wf=?1 AND job=?2",
        "ssssdddddddddddddi", wf, job, s->exe[0] ? s->exe : NULL, s->cmd[0] ? s->cmd : NULL,
        s->start, s->end, s->duration, s->cpu_time, s->cpu_eff, s->cores, s->peak_mem, s->rchar,
        s->wchar, s->gpu_peak_mem, s->alloc_mem, s->cg_peak_mem, (long long)done);
    /* the remaining columns (mixed types) */
    sqlite3_stmt *st = repo_prep(
        r,
        "UPDATE jobs SET exit_code=?3, exit_type=?4, signal_name=?5,"
        " warnings=?6, warn_kinds=?7, cores_from=?8, stopped_by=?9,"
        " batch_id=coalesce(?10, batch_id) WHERE wf=?1 AND job=?2",
        "ssisssssss", wf, job, (long long)s->exit_code, s->exit_type[0] ? s->exit_type : NULL,
        s->signal_name[0] ? s->signal_name : NULL, wj, kinds, s->cores_from,
        s->stopped_by[0] ? s->stopped_by : NULL, s->batch_id[0] ? s->batch_id : NULL);
    if (st) {
        if (s->exit_code < 0) sqlite3_bind_null(st, 3);
        sqlite3_step(st);
        repo_done(r, st);
    }
    RUN(r, "DELETE FROM job_warnings WHERE id = (SELECT id FROM jobs WHERE wf=?1 AND job=?2)", "ss",
        wf, job);
    size_t wi;
    json_t *wv;
    json_array_foreach(warn, wi, wv)
        RUN(r,
            "INSERT OR IGNORE INTO job_warnings(kind, id) SELECT ?3, id FROM jobs"
            " WHERE wf=?1 AND job=?2",
            "sss", wf, job, jd_str(wv, "kind"));
    /* a page made while the job ran is out of date now */
    RUN(r, "DELETE FROM job_views WHERE id = (SELECT id FROM jobs WHERE wf=?1 AND job=?2)", "ss",
        wf, job);
    free(wj);
}

static void summarise(repo *r, const char *wf, const char *job)
{
    jobdata j;
    repo_jobdata_of(r, wf, job, &j);
    /* the row of the list; the job's page (GET /api/jobs/ID) is made on
     * its first request and kept (repo_job_view) */
    json_t *warn = jobdata_warnings(&j);
    repo_store_summary(r, wf, job, &j.sum, warn, 1);
    json_decref(warn);
    jobdata_free(&j);
}

/* ---- adding ---- */

/* What the start event says of the allocation, resolved as the end-of-job
 * summary will (jobdata): the list is right while the job runs. */
static void start_figures(json_t *ev, jd_summary *out)
{
    jobdata j;
    jobdata_init(&j);
    jobdata_add(&j, ev);
    jobdata_finish(&j);
    *out = j.sum;
    jobdata_free(&j);
}

/* The job's row, made or touched by one of its events: its id and how many
 * runs it has (-1 when the database failed). */
static long long job_row(repo *r, json_t *ev, const char *wf, const char *job, const char *host,
                         double ts, int *nruns)
{
    /* an array element's name as sacct shows it (10_2): the search finds it */
    json_t *tags = json_object_get(ev, "tags");
    const char *aj = jd_str(tags, "slurm_array_job_id"), *at = jd_str(tags, "slurm_array_task_id");
    char alias[96];
    snprintf(alias, sizeof alias, "%.40s_%.40s", aj ? aj : "", at ? at : "");
    /* (the alias is the first event's: every event of a plugin's monitor
     * carries the tags) */
    RUN(r,
        "INSERT INTO jobs(wf, job, host, last, xformation, batch_id, alias)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        " ON CONFLICT(wf, job) DO UPDATE SET host=coalesce(host, ?3),"
        " last=max(coalesce(last, 0), ?4), xformation=coalesce(xformation, ?5),"
        " batch_id=coalesce(batch_id, ?6)",
        "sssdsss", wf, job, host, ts, jd_str(ev, "xformation"),
        jd_str(json_object_get(ev, "batch"), "job_id"), aj && at ? alias : NULL);
    /* (a RETURNING on the upsert cost more than this lookup) */
    long long id = -1;
    sqlite3_stmt *st =
        repo_prep(r, "SELECT id, runs FROM jobs WHERE wf=?1 AND job=?2", "ss", wf, job);
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        *nruns = sqlite3_column_int(st, 1);
    }
    repo_done(r, st);
    return id;
}

/* A job of several runs: its row's figures are the whole job's, summed
 * from its runs as each ends (repo_runs.c); an event of one run only says
 * the job is alive. */
static void update_job_of_runs(repo *r, json_t *ev, const char *name, const char *wf,
                               const char *job, long long jobid, long long run, double ts)
{
    if (!strcmp(name, "jobscope.start"))
        RUN(r,
            "UPDATE jobs SET exe=coalesce(exe, ?3), user=coalesce(user, ?4), type='jobscope',"
            " start=min(coalesce(start, ?5), ?5) WHERE wf=?1 AND job=?2",
            "ssssd", wf, job, jd_str(ev, "exe"), jd_str(ev, "user"), ts);
    else if (!strcmp(name, "kickstart.inv.online"))
        RUN(r, "UPDATE jobs SET nsamples=nsamples+1 WHERE wf=?1 AND job=?2", "ss", wf, job);
    else if (!strcmp(name, "jobscope.end") && run >= 0)
        repo_run_ended(r, wf, job, jobid, run);
}

static void update_job(repo *r, json_t *ev, const char *name, const char *wf, const char *job,
                       double ts)
{
    if (!strcmp(name, "jobscope.start")) {
        jd_summary s;
        start_figures(ev, &s);
        RUN(r,
            "UPDATE jobs SET exe=coalesce(exe, ?3), cmd=coalesce(?4, cmd), user=?5,"
            " type='jobscope', state=CASE WHEN state='done' THEN state ELSE 'running' END,"
            " start=?6, cores=coalesce(?7, cores), cores_from=coalesce(cores_from, ?8),"
            " alloc_mem=coalesce(alloc_mem, ?9) WHERE wf=?1 AND job=?2",
            "sssssddsd", wf, job, s.exe[0] ? s.exe : NULL, jd_str(ev, "cmd"), jd_str(ev, "user"),
            ts, s.cores, s.cores_from, s.alloc_mem);
    } else if (!strcmp(name, "kickstart.inv.online")) {
        /* the latest exe (the main process's last exec), the job's own
         * memory (RSS, or the cgroup's anonymous + shared), efficiency so
         * far against the allocation */
        double el = jd_num(ev, "elapsed"), rss = jd_num(ev, "rss") * 1024;
        double own = jd_num(ev, "cg_memory_anon") + jd_num(ev, "cg_memory_shmem");
        if (!(rss >= own)) rss = isnan(own) ? rss : own;
        RUN(r,
            "UPDATE jobs SET exe=coalesce(?3, exe), type=coalesce(type, 'kickstart'),"
            " state=coalesce(state, 'running'), start=coalesce(start, ?4 - coalesce(?5, 0)),"
            " nsamples=nsamples+1, peak_mem=max(coalesce(peak_mem, 0), coalesce(?6, 0)),"
            " cg_peak_mem=max(coalesce(cg_peak_mem, 0), coalesce(?10, 0)),"
            " cpu_time=coalesce(?7, cpu_time), rchar=coalesce(?8, rchar),"
            " wchar=coalesce(?9, wchar),"
            " duration=CASE WHEN state='done' THEN duration"
            "  ELSE ?4 - coalesce(start, ?4 - coalesce(?5, 0)) END,"
            " cpu_eff=CASE WHEN state='done' THEN cpu_eff"
            "  ELSE coalesce(?7, cpu_time) / nullif((?4 - coalesce(start, ?4 - coalesce(?5, 0)))"
            "   * coalesce(cores, 1), 0) END"
            " WHERE wf=?1 AND job=?2",
            "sssdddddddd", wf, job, jd_str(ev, "exe"), ts, el, rss,
            jd_num(ev, "utime") + jd_num(ev, "stime"), jd_num(ev, "rchar"), jd_num(ev, "wchar"),
            jd_num(ev, "cg_memory_peak"));
    } else if (!strcmp(name, "jobscope.end")) {
        summarise(r, wf, job);
    } else if (!strncmp(name, "stampede.", 9)) {
        RUN(r,
            "UPDATE jobs SET stampede=?3, type=coalesce(type, 'stampede') WHERE wf=?1 AND job=?2",
            "sss", wf, job, name);
        if (!strcmp(name, "stampede.job_inst.main.start"))
            RUN(r,
                "UPDATE jobs SET start=coalesce(start, ?3), state=CASE WHEN state='done' THEN state"
                " ELSE 'running' END WHERE wf=?1 AND job=?2",
                "ssd", wf, job, ts);
        else if (!strcmp(name, "stampede.job_inst.main.end") ||
                 !strcmp(name, "stampede.job_inst.post.end")) {
            double ec = jd_num(ev, "exitcode");
            if (isnan(ec)) ec = jd_num(ev, "status");
            sqlite3_stmt *st =
                repo_prep(r,
                          "UPDATE jobs SET state='done', end=coalesce(end, ?3),"
                          " duration=coalesce(duration, ?3 - start),"
                          " exit_code=coalesce(exit_code, ?4) WHERE wf=?1 AND job=?2",
                          "ssd", wf, job, ts);
            if (st) {
                if (isfinite(ec)) sqlite3_bind_int(st, 4, (int)ec);
                sqlite3_step(st);
                repo_done(r, st);
            }
        } else if (!strcmp(name, "stampede.inv.end")) {
            RUN(r,
                "UPDATE jobs SET exe=coalesce(exe, ?3), cpu_time=coalesce(cpu_time, ?4),"
                " duration=coalesce(duration, ?5), start=coalesce(start, ?6) WHERE wf=?1 AND "
                "job=?2",
                "sssddd", wf, job, jd_str(ev, "executable"), jd_num(ev, "remote_cpu_time"),
                jd_num(ev, "dur"), jd_num(ev, "start_time"));
        } else if (!strcmp(name, "stampede.job.info")) {
            RUN(r, "UPDATE jobs SET exe=coalesce(exe, ?3), type=?4 WHERE wf=?1 AND job=?2", "ssss",
                wf, job, jd_str(ev, "executable"),
                jd_str(ev, "type_desc") ? jd_str(ev, "type_desc") : "stampede");
        } else if (!strcmp(name, "stampede.job_inst.host.info")) {
            RUN(r, "UPDATE jobs SET host=coalesce(?3, host) WHERE wf=?1 AND job=?2", "sss", wf, job,
                jd_str(ev, "hostname"));
        }
    }
}

/* The workflow's row, made or touched by any event of it. */
static void wf_seen(repo *r, const char *wf, double ts, const char *label)
{
    RUN(r,
        "INSERT INTO workflows(wf, first, last, label) VALUES(?1, ?2, ?2, ?3)"
        " ON CONFLICT(wf) DO UPDATE SET last=max(coalesce(last, 0), ?2),"
        " first=min(coalesce(first, ?2), ?2), label=coalesce(label, ?3)",
        "sds", wf, ts, label);
}

static void update_wf(repo *r, json_t *ev, const char *name, const char *wf, double ts)
{
    const char *label = jd_str(ev, "wf_label");
    if (!label) label = jd_str(ev, "dax_label");
    wf_seen(r, wf, ts, label);
    if (!strcmp(name, "stampede.xwf.start"))
        RUN(r, "UPDATE workflows SET start=coalesce(start, ?2), state='running' WHERE wf=?1", "sd",
            wf, ts);
    else if (!strcmp(name, "stampede.xwf.end")) {
        double st = jd_num(ev, "status");
        RUN(r, "UPDATE workflows SET end=?2, state=?3 WHERE wf=?1", "sds", wf, ts,
            isfinite(st) && st != 0 ? "failed" : "done");
    } else if (!strcmp(name, "stampede.wf.plan")) {
        RUN(r,
            "UPDATE workflows SET submit_host=coalesce(?2, submit_host), user=coalesce(?3, user),"
            " label=coalesce(?4, label) WHERE wf=?1",
            "ssss", wf, jd_str(ev, "submit_hostname"), jd_str(ev, "user"), jd_str(ev, "dax_label"));
    }
}

static void insert_event(repo *r, double ts, const char *name, const char *wf, const char *job,
                         const char *host, const char *body, long long run)
{
    sqlite3_stmt *st =
        repo_prep(r,
                  "INSERT INTO events(ts, name, wf, job, host, body, run, id)"
                  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                  "dsssssii", ts, name, wf ? wf : "", job, host, body, run, r->next_id++);
    if (st) {
        if (run < 0) sqlite3_bind_null(st, 7);
        sqlite3_step(st);
        repo_done(r, st);
    }
}

/* A sample read from its text (repo_flat.c) of a job and run already seen
 * in this batch: inserted and folded, 0; 1 when it is not such a sample
 * (nothing written: add_locked writes it). */
static int add_flat(repo *r, const repo_flat *f, const char *raw, size_t len, repo_batch *b)
{
    const repo_sample *s = &f->s;
    if (!f->name || strcmp(f->name, "kickstart.inv.online") || !f->job || !isfinite(s->ts) ||
        !s->host)
        return 1;
    repo_batch_job *bj = repo_batch_get(b, f->wf ? f->wf : "", f->job);
    if (!bj) return 1;
    char base[200];
    int nruns;
    long long jobid = repo_batch_jobid(bj, &nruns);
    jobset_base_key(s->host, f->step, f->task, f->has_rank ? f->rank : 0, base, sizeof base);
    long long run = repo_run_cached_key(r, jobid, base, f->has_pid ? f->pid : -1);
    if (run < 0) return 1;
    if (repo_pending_logged(r) && repo_block_splits(bj, run, r->next_id, s->host, len))
        repo_pending_write(r); /* (a block is written only with all that is pending) */
    repo_block_add(r, bj, run, r->next_id++, s->ts, s->host, raw);
    if (f->wf && !repo_batch_wf_fold(r, f->wf, s->ts, f->label)) wf_seen(r, f->wf, s->ts, f->label);
    repo_batch_fold(bj, s);
    repo_pending_note(r, raw, len);
    return 0;
}

/* Writes one event (raw: its text as received, or NULL); the caller holds
 * r->mu inside a transaction.  With a batch (repo_flush), a sample of a job
 * and run already seen in it is only inserted and folded (repo_batch.c). */
static int add_locked(repo *r, json_t *ev, const char *raw, repo_batch *b)
{
    if (!json_is_object(ev)) return -1;
    const char *name = jd_str(ev, "event");
    if (!name) name = jd_str(ev, "monitoring_event");
    if (!name) name = jd_str(ev, "Type");
    if (!name) name = "";
    const char *wf = ev_wf(ev), *job = ev_job(ev), *host = jd_str(ev, "hostname");
    if (!host) host = jd_str(ev, "Hostname");
    double ts = jd_num(ev, "ts");
    if (isnan(ts)) ts = jd_num(ev, "timestamp");
    char *body = raw ? NULL : json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!raw && !body) return -1;
    long long jobid = -1, run = -1;
    int nruns = 0;
    repo_batch_job *bj = NULL;
    int fold = 0;
    if (job) {
        bj = b ? repo_batch_get(b, wf ? wf : "", job) : NULL;
        if (bj && isfinite(ts) && !strcmp(name, "kickstart.inv.online") &&
            (run = repo_run_cached(r, repo_batch_jobid(bj, &nruns), ev)) >= 0) {
            fold = 1;
            jobid = repo_batch_jobid(bj, &nruns);
        } else {
            /* the row as the samples before left it: written with all
             * that is pending (its samples leave the log together) */
            if (bj && (bj->n || bj->nblk)) repo_pending_write(r);
            jobid = job_row(r, ev, wf ? wf : "", job, host, ts, &nruns);
            if (jobid >= 0) run = repo_run_of(r, jobid, ev, name, &nruns);
        }
    }
    insert_event(r, ts, name, wf, job, host, raw ? raw : body, run);
    if (wf) {
        repo_batch_wf_write(r, wf); /* the row as the samples before left it */
        update_wf(r, ev, name, wf, ts);
    }
    if (fold) {
        repo_sample smp;
        repo_sample_of(ev, host, ts, &smp);
        repo_batch_fold(bj, &smp);
    } else if (job && nruns > 1 && run >= 0) /* the job's own events (stampede...) as ever */
        update_job_of_runs(r, ev, name, wf ? wf : "", job, jobid, run, ts);
    else if (job)
        update_job(r, ev, name, wf ? wf : "", job, ts);
    if (b && job && !fold && jobid >= 0) {
        /* the row as this event left it (its runs, for a job that has a new one) */
        repo_batch_put(r, b, wf ? wf : "", job, jobid, nruns);
    }
    free(body);
    return 0;
}

/* Writes the n queued events (texts q with lengths ql, samples qf: see
 * repo_queue.c) in one transaction, and frees them; the caller holds
 * r->mu.  Prunes by --retention every 10,000 events. */
void repo_write_queued(repo *r, char **q, const size_t *ql, repo_flat **qf, size_t n, int all)
{
    jread jr;
    repo_flat flat;
    jread_init(&jr, NULL, 0);
    sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        /* a sample of a job already in the batch: read from the
         * server's fields (or from its text) and folded; anything else
         * through jansson as ever */
        const repo_flat *fl = qf[i] ? qf[i] : &flat;
        if ((!qf[i] && !repo_flat_read(&jr, q[i], ql[i], &flat)) ||
            add_flat(r, fl, q[i], ql[i], &r->batch)) {
            json_error_t je;
            json_t *ev = json_loadb(q[i], ql[i], 0, &je);
            if (ev) add_locked(r, ev, q[i], &r->batch);
            json_decref(ev);
        }
        free(qf[i] ? (void *)qf[i] : q[i]); /* (one block: the sample, then its text) */
    }
    jread_free(&jr);
    /* what the batches folded stays pending until due (repo_pending.c); the
     * job entries stay for the next batch until the table is half full */
    int prune = r->retention_s > 0 && r->since_prune + n >= 10000;
    int full = r->batch.n >= REPO_BATCH_SLOTS / 2;
    if (all || prune || full || repo_pending_due(r)) repo_pending_write(r);
    if (full) repo_batch_forget(&r->batch);
    int ok = sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok) {
        js_log(1, "repository", "%s", sqlite3_errmsg(r->db));
        /* (SQLite may leave it open: the next batch starts afresh) */
        if (!sqlite3_get_autocommit(r->db)) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    }
    repo_pending_committed(r, ok);
    r->version++;
    r->since_prune += n;
    if (prune) {
        /* --retention: events, jobs and workflows last seen before it go */
        double cut = (double)time(NULL) - r->retention_s;
        r->since_prune = 0;
        sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
        repo_evs_prune(r, cut);
        RUN(r,
            "DELETE FROM job_views WHERE id IN (SELECT id FROM jobs"
            " WHERE coalesce(last, end, start, 0) < ?1)",
            "d", cut);
        RUN(r,
            "DELETE FROM job_warnings WHERE id IN (SELECT id FROM jobs"
            " WHERE coalesce(last, end, start, 0) < ?1)",
            "d", cut);
        RUN(r,
            "DELETE FROM runs WHERE jobid IN (SELECT id FROM jobs"
            " WHERE coalesce(last, end, start, 0) < ?1)",
            "d", cut);
        RUN(r, "DELETE FROM jobs WHERE coalesce(last, end, start, 0) < ?1", "d", cut);
        memset(r->runcache, 0, sizeof r->runcache);
        repo_batch_forget(&r->batch);
        RUN(r, "DELETE FROM workflows WHERE coalesce(last, 0) < ?1", "d", cut);
        sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
    }
}

int repo_add(repo *r, json_t *ev)
{
    if (!json_is_object(ev)) return -1;
    repo_flush(r);
    pthread_mutex_lock(&r->mu);
    repo_batch_forget(&r->batch); /* (written by repo_flush) this event may change a job's runs */
    sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
    int rc = add_locked(r, ev, NULL, NULL);
    if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) rc = -1;
    r->version++;
    pthread_mutex_unlock(&r->mu);
    return rc;
}
