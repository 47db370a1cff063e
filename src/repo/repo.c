/* repo.c — the events repository in SQLite (see repo.h, docs/views.md).
 *
 * events(id, ts, name, wf, job, host, body): every event, body = its JSON.
 * jobs(wf, job, ...): one row per job, kept up to date from jobscope's
 *   start/samples/end and from stampede job events; the end-of-job record
 *   triggers a full summary (jobdata) with warnings.
 * workflows(wf, ...): from stampede.xwf.*, stampede.wf.plan and the
 *   annotations of any event.
 * A job is (workflow id, job id): the job id is dag_job_id when set (what
 * stampede events call job_id), else jobscope's job_id. */
#include "repo/repo.h"
#include "report/jobdata.h"

#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sqlite3.h>

struct repo {
    sqlite3 *db;
    pthread_mutex_t mu; /* the connection and its transactions */
    /* Events waiting to be written: the event hook only queues them; a
     * writer thread (or a reader, first) writes them in one transaction per
     * batch — one transaction per event costed ~0.5 ms in page writes. */
    pthread_mutex_t qmu;
    pthread_cond_t qcond;
    char **q;
    size_t *qlen, qn, qcap;
    pthread_t writer;
    int stop, has_writer;
    double retention_s; /* 0 = keep everything */
    size_t since_prune; /* events written since the last pruning */
};

static void flush(repo *r);

static void *writer_main(void *arg)
{
    repo *r = arg;
    pthread_mutex_lock(&r->qmu);
    while (!r->stop) {
        if (!r->qn) {
            pthread_cond_wait(&r->qcond, &r->qmu);
            continue;
        }
        pthread_mutex_unlock(&r->qmu);
        struct timespec ts = {0, 20 * 1000000}; /* let a batch gather */
        nanosleep(&ts, NULL);
        flush(r);
        pthread_mutex_lock(&r->qmu);
    }
    pthread_mutex_unlock(&r->qmu);
    return NULL;
}

static const char *const schema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, ts REAL, name TEXT, wf TEXT,"
    "  job TEXT, host TEXT, body TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS ev_job ON events(job, wf, ts);"
    "CREATE INDEX IF NOT EXISTS ev_wf ON events(wf, ts);"
    "CREATE INDEX IF NOT EXISTS ev_host ON events(host, ts);"
    "CREATE INDEX IF NOT EXISTS ev_name ON events(name, ts);"
    "CREATE INDEX IF NOT EXISTS ev_ts ON events(ts);"
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, wf TEXT NOT NULL, job TEXT NOT NULL,"
    "  host TEXT, exe TEXT, cmd TEXT, user TEXT, xformation TEXT, type TEXT, state TEXT,"
    "  start REAL, end REAL, last REAL, duration REAL, cpu_time REAL, cpu_eff REAL, cores REAL,"
    "  peak_mem REAL, rchar REAL, wchar REAL, gpu_peak_mem REAL, exit_code INTEGER,"
    "  exit_type TEXT, signal_name TEXT, nsamples INTEGER DEFAULT 0, stampede TEXT,"
    "  warnings TEXT, summary TEXT, view TEXT, UNIQUE(wf, job));"
    "CREATE INDEX IF NOT EXISTS jobs_job ON jobs(job);"
    "CREATE INDEX IF NOT EXISTS jobs_host ON jobs(host, start);"
    "CREATE INDEX IF NOT EXISTS jobs_start ON jobs(start);"
    "CREATE TABLE IF NOT EXISTS workflows(wf TEXT PRIMARY KEY, label TEXT, first REAL, last REAL,"
    "  start REAL, end REAL, state TEXT, submit_host TEXT, user TEXT, body TEXT);";

repo *repo_open(const char *path, char *err, size_t errlen)
{
    repo *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (sqlite3_open_v2(path, &r->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, r->db ? sqlite3_errmsg(r->db) : "cannot open");
        sqlite3_close(r->db);
        free(r);
        return NULL;
    }
    sqlite3_busy_timeout(r->db, 5000);
    char *e = NULL;
    if (sqlite3_exec(r->db, schema, NULL, NULL, &e) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, e ? e : "schema");
        sqlite3_free(e);
        sqlite3_close(r->db);
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->qmu, NULL);
    pthread_cond_init(&r->qcond, NULL);
    r->has_writer = pthread_create(&r->writer, NULL, writer_main, r) == 0;
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
    pthread_mutex_lock(&r->qmu);
    r->stop = 1;
    pthread_cond_signal(&r->qcond);
    pthread_mutex_unlock(&r->qmu);
    if (r->has_writer) pthread_join(r->writer, NULL);
    flush(r);
    sqlite3_close(r->db);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->qmu);
    pthread_cond_destroy(&r->qcond);
    free(r->q);
    free(r->qlen);
    free(r);
}

/* ---- helpers ---- */

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static double jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

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

/* Prepares sql and binds the arguments: 's' text, 'd' double, 'i' int64. */
static sqlite3_stmt *prep(repo *r, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "jobscope serve: repository: %s\n", sqlite3_errmsg(r->db));
        return NULL;
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

#define RUN(r, sql, ...)                                                                           \
    do {                                                                                           \
        sqlite3_stmt *st_ = prep(r, sql, __VA_ARGS__);                                             \
        if (st_) {                                                                                 \
            sqlite3_step(st_);                                                                     \
            sqlite3_finalize(st_);                                                                 \
        }                                                                                          \
    } while (0)

static const char *ev_wf(json_t *ev)
{
    const char *w = jstr(ev, "wf_uuid");
    if (!w) w = jstr(ev, "xwf_id");
    if (!w) w = jstr(ev, "xwf.id");
    return w;
}

static const char *ev_job(json_t *ev)
{
    const char *j = jstr(ev, "dag_job_id");
    if (!j) j = jstr(ev, "job_id");
    if (!j) j = jstr(ev, "job.id");
    if (!j) j = jstr(ev, "JobID");
    return j;
}

/* ---- the end-of-job summary ---- */

static json_t *events_of(repo *r, const char *wf, const char *job, double since);

static void summarise(repo *r, const char *wf, const char *job)
{
    json_t *evs = events_of(r, wf, job, 0);
    jobdata j;
    jobdata_init(&j);
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) jobdata_add(&j, ev);
    jobdata_finish(&j);
    json_decref(evs);
    const jd_summary *s = &j.sum;
    json_t *sum = jobdata_summary_json(s), *warn = jobdata_warnings(&j);
    /* the finished job's page, computed once: what GET /api/jobs/ID answers */
    json_t *view = jobdata_json(&j, REPO_VIEW_POINTS);
    char *vj = json_dumps(view, JSON_COMPACT | JSON_REAL_PRECISION(16));
    json_decref(view);
    char *sj = json_dumps(sum, JSON_COMPACT), *wj = json_dumps(warn, JSON_COMPACT);
    RUN(r,
        "UPDATE jobs SET exe=coalesce(?3,exe), cmd=coalesce(?4,cmd), start=coalesce(?5,start),"
        " end=?6, duration=?7, cpu_time=?8, cpu_eff=?9, cores=?10, peak_mem=?11, rchar=?12,"
        " wchar=?13, gpu_peak_mem=?14, state='done', last=max(coalesce(last,0),coalesce(?6,0))"
        " WHERE wf=?1 AND job=?2",
        "ssssdddddddddd", wf, job, s->exe[0] ? s->exe : NULL, s->cmd[0] ? s->cmd : NULL, s->start,
        s->end, s->duration, s->cpu_time, s->cpu_eff, s->cores, s->peak_mem, s->rchar, s->wchar,
        s->gpu_peak_mem);
    /* the remaining columns (mixed types) */
    sqlite3_stmt *st =
        prep(r,
             "UPDATE jobs SET exit_code=?3, exit_type=?4, signal_name=?5, summary=?6,"
             " warnings=?7, view=?8 WHERE wf=?1 AND job=?2",
             "ss", wf, job);
    if (st) {
        if (s->exit_code >= 0) sqlite3_bind_int(st, 3, s->exit_code);
        bind_text(st, 4, s->exit_type[0] ? s->exit_type : NULL);
        bind_text(st, 5, s->signal_name[0] ? s->signal_name : NULL);
        bind_text(st, 6, sj);
        bind_text(st, 7, wj);
        bind_text(st, 8, vj);
        sqlite3_step(st);
        sqlite3_finalize(st);
    }
    free(sj);
    free(wj);
    free(vj);
    json_decref(sum);
    json_decref(warn);
    jobdata_free(&j);
}

/* ---- adding ---- */

static void update_job(repo *r, json_t *ev, const char *name, const char *wf, const char *job,
                       const char *host, double ts)
{
    RUN(r, "INSERT OR IGNORE INTO jobs(wf, job, host, last) VALUES(?1, ?2, ?3, ?4)", "sssd", wf,
        job, host, ts);
    RUN(r,
        "UPDATE jobs SET host=coalesce(host, ?3), last=max(coalesce(last, 0), ?4),"
        " xformation=coalesce(xformation, ?5) WHERE wf=?1 AND job=?2",
        "sssds", wf, job, host, ts, jstr(ev, "xformation"));
    if (!strcmp(name, "jobscope.start")) {
        RUN(r,
            "UPDATE jobs SET exe=?3, cmd=coalesce(?4, cmd), user=?5, type='jobscope',"
            " state=CASE WHEN state='done' THEN state ELSE 'running' END, start=?6,"
            " cores=coalesce(?7, cores) WHERE wf=?1 AND job=?2",
            "sssssdd", wf, job, jstr(ev, "exe"), jstr(ev, "cmd"), jstr(ev, "user"), ts,
            jnum(ev, "cpus_available"));
    } else if (!strcmp(name, "kickstart.inv.online")) {
        double el = jnum(ev, "elapsed");
        RUN(r,
            "UPDATE jobs SET exe=coalesce(exe, ?3), type=coalesce(type, 'kickstart'),"
            " state=coalesce(state, 'running'), start=coalesce(start, ?4 - coalesce(?5, 0)),"
            " nsamples=nsamples+1, peak_mem=max(coalesce(peak_mem, 0), coalesce(?6, 0)),"
            " cpu_time=coalesce(?7, cpu_time), rchar=coalesce(?8, rchar), wchar=coalesce(?9, "
            "wchar),"
            " duration=CASE WHEN state='done' THEN duration"
            "  ELSE ?4 - coalesce(start, ?4 - coalesce(?5, 0)) END"
            " WHERE wf=?1 AND job=?2",
            "sssdddddd", wf, job, jstr(ev, "exe"), ts, el, jnum(ev, "rss") * 1024,
            jnum(ev, "utime") + jnum(ev, "stime"), jnum(ev, "rchar"), jnum(ev, "wchar"));
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
            double ec = jnum(ev, "exitcode");
            if (isnan(ec)) ec = jnum(ev, "status");
            sqlite3_stmt *st =
                prep(r,
                     "UPDATE jobs SET state='done', end=coalesce(end, ?3),"
                     " duration=coalesce(duration, ?3 - start), exit_code=coalesce(exit_code, ?4)"
                     " WHERE wf=?1 AND job=?2",
                     "ssd", wf, job, ts);
            if (st) {
                if (isfinite(ec)) sqlite3_bind_int(st, 4, (int)ec);
                sqlite3_step(st);
                sqlite3_finalize(st);
            }
        } else if (!strcmp(name, "stampede.inv.end")) {
            RUN(r,
                "UPDATE jobs SET exe=coalesce(exe, ?3), cpu_time=coalesce(cpu_time, ?4),"
                " duration=coalesce(duration, ?5), start=coalesce(start, ?6) WHERE wf=?1 AND "
                "job=?2",
                "sssddd", wf, job, jstr(ev, "executable"), jnum(ev, "remote_cpu_time"),
                jnum(ev, "dur"), jnum(ev, "start_time"));
        } else if (!strcmp(name, "stampede.job.info")) {
            RUN(r, "UPDATE jobs SET exe=coalesce(exe, ?3), type=?4 WHERE wf=?1 AND job=?2", "ssss",
                wf, job, jstr(ev, "executable"),
                jstr(ev, "type_desc") ? jstr(ev, "type_desc") : "stampede");
        } else if (!strcmp(name, "stampede.job_inst.host.info")) {
            RUN(r, "UPDATE jobs SET host=coalesce(?3, host) WHERE wf=?1 AND job=?2", "sss", wf, job,
                jstr(ev, "hostname"));
        }
    }
}

static void update_wf(repo *r, json_t *ev, const char *name, const char *wf, double ts)
{
    const char *label = jstr(ev, "wf_label");
    if (!label) label = jstr(ev, "dax_label");
    RUN(r, "INSERT OR IGNORE INTO workflows(wf, first, last) VALUES(?1, ?2, ?2)", "sd", wf, ts);
    RUN(r,
        "UPDATE workflows SET last=max(coalesce(last, 0), ?2), first=min(coalesce(first, ?2), ?2),"
        " label=coalesce(label, ?3) WHERE wf=?1",
        "sds", wf, ts, label);
    if (!strcmp(name, "stampede.xwf.start"))
        RUN(r, "UPDATE workflows SET start=coalesce(start, ?2), state='running' WHERE wf=?1", "sd",
            wf, ts);
    else if (!strcmp(name, "stampede.xwf.end")) {
        double st = jnum(ev, "status");
        RUN(r, "UPDATE workflows SET end=?2, state=?3 WHERE wf=?1", "sds", wf, ts,
            isfinite(st) && st != 0 ? "failed" : "done");
    } else if (!strcmp(name, "stampede.wf.plan")) {
        RUN(r,
            "UPDATE workflows SET submit_host=coalesce(?2, submit_host), user=coalesce(?3, user),"
            " label=coalesce(?4, label) WHERE wf=?1",
            "ssss", wf, jstr(ev, "submit_hostname"), jstr(ev, "user"), jstr(ev, "dax_label"));
    }
}

/* Writes one event; the caller holds r->mu inside a transaction. */
static int add_locked(repo *r, json_t *ev)
{
    if (!json_is_object(ev)) return -1;
    const char *name = jstr(ev, "event");
    if (!name) name = jstr(ev, "monitoring_event");
    if (!name) name = jstr(ev, "Type");
    if (!name) name = "";
    const char *wf = ev_wf(ev), *job = ev_job(ev), *host = jstr(ev, "hostname");
    if (!host) host = jstr(ev, "Hostname");
    double ts = jnum(ev, "ts");
    if (isnan(ts)) ts = jnum(ev, "timestamp");
    char *body = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!body) return -1;
    RUN(r, "INSERT INTO events(ts, name, wf, job, host, body) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
        "dsssss", ts, name, wf ? wf : "", job, host, body);
    if (wf) update_wf(r, ev, name, wf, ts);
    if (job) update_job(r, ev, name, wf ? wf : "", job, host, ts);
    free(body);
    return 0;
}

/* Writes every queued event in one transaction. */
static void flush(repo *r)
{
    pthread_mutex_lock(&r->mu);
    pthread_mutex_lock(&r->qmu);
    char **q = r->q;
    size_t *ql = r->qlen, n = r->qn;
    r->q = NULL, r->qlen = NULL, r->qn = r->qcap = 0;
    pthread_mutex_unlock(&r->qmu);
    if (n) {
        sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
        for (size_t i = 0; i < n; i++) {
            json_error_t je;
            json_t *ev = json_loadb(q[i], ql[i], 0, &je);
            if (ev) add_locked(r, ev);
            json_decref(ev);
            free(q[i]);
        }
        if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            fprintf(stderr, "jobscope serve: repository: %s\n", sqlite3_errmsg(r->db));
        r->since_prune += n;
        if (r->retention_s > 0 && r->since_prune >= 10000) {
            /* --retention: events, jobs and workflows last seen before it go */
            double cut = (double)time(NULL) - r->retention_s;
            r->since_prune = 0;
            sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
            RUN(r, "DELETE FROM events WHERE ts < ?1", "d", cut);
            RUN(r, "DELETE FROM jobs WHERE coalesce(last, end, start, 0) < ?1", "d", cut);
            RUN(r, "DELETE FROM workflows WHERE coalesce(last, 0) < ?1", "d", cut);
            sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
        }
    }
    pthread_mutex_unlock(&r->mu);
    free(q);
    free(ql);
}

int repo_add(repo *r, json_t *ev)
{
    if (!json_is_object(ev)) return -1;
    flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
    int rc = add_locked(r, ev);
    if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) rc = -1;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int repo_add_json(repo *r, const char *json, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, json, len);
    copy[len] = 0;
    pthread_mutex_lock(&r->qmu);
    if (r->qn == r->qcap) {
        size_t cap = r->qcap ? r->qcap * 2 : 256;
        char **a = realloc(r->q, cap * sizeof *a);
        size_t *b = a ? realloc(r->qlen, cap * sizeof *b) : NULL;
        if (a) r->q = a;
        if (!a || !b) {
            pthread_mutex_unlock(&r->qmu);
            free(copy);
            return -1;
        }
        r->qlen = b;
        r->qcap = cap;
    }
    r->q[r->qn] = copy;
    r->qlen[r->qn++] = len;
    int full = r->qn >= 2000 || !r->has_writer;
    pthread_cond_signal(&r->qcond);
    pthread_mutex_unlock(&r->qmu);
    if (full) flush(r); /* back-pressure on a fast producer */
    return 0;
}

/* ---- reading ---- */

static json_t *col_json(sqlite3_stmt *st, int i)
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
    " cpu_time, cpu_eff, cores, peak_mem, rchar, wchar, gpu_peak_mem, exit_code, exit_type,"       \
    " signal_name, nsamples, stampede, warnings"
static const char *const job_keys[] = {
    "wf",         "job_id",       "host",           "exe",       "cmd",         "user",
    "xformation", "type",         "state",          "start",     "end",         "last",
    "duration",   "cpu_time",     "cpu_efficiency", "cores",     "peak_mem",    "rchar",
    "wchar",      "gpu_peak_mem", "exit_code",      "exit_type", "signal_name", "samples",
    "stampede",   "warnings"};

static json_t *job_row(sqlite3_stmt *st)
{
    json_t *o = json_object();
    for (int i = 0; i < (int)(sizeof job_keys / sizeof *job_keys); i++) {
        if (!strcmp(job_keys[i], "warnings")) {
            const char *w = (const char *)sqlite3_column_text(st, i);
            json_t *a = w ? json_loads(w, 0, NULL) : NULL;
            json_object_set_new(o, "warnings", a ? a : json_array());
        } else {
            json_object_set_new(o, job_keys[i], col_json(st, i));
        }
    }
    return o;
}

json_t *repo_jobs(repo *r, const repo_job_filter *f)
{
    static const struct {
        const char *key, *col;
    } sorts[] = {{"start", "start"},
                 {"cpu_efficiency", "cpu_eff"},
                 {"peak_mem", "peak_mem"},
                 {"duration", "duration"},
                 {"cpu_time", "cpu_time"},
                 {"host", "host"},
                 {"job", "job"}};
    const char *col = "start";
    for (size_t i = 0; f->sort && i < sizeof sorts / sizeof *sorts; i++)
        if (!strcmp(f->sort, sorts[i].key)) col = sorts[i].col;
    char where[1024] =
        " WHERE (?1 IS NULL OR wf=?1) AND (?2 IS NULL OR host=?2) AND (?3 IS NULL OR instr(exe, "
        "?3) > 0)"
        " AND (?4 IS NULL OR user=?4) AND (?5 IS NULL OR coalesce(last, end, start) >= ?5)"
        " AND (?6 IS NULL OR job=?6)"
        " AND (?7 IS NULL OR (?7='running' AND state='running') OR (?7='done' AND state='done')"
        "      OR (?7='failed' AND state='done' AND (exit_code IS NULL OR exit_code != 0)))";
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SELECT " JOB_COLS " FROM jobs%s ORDER BY %s IS NULL, %s %s, id LIMIT ?8 OFFSET ?9",
             where, col, col, f->desc ? "DESC" : "ASC");
    json_t *jobs = json_array();
    long total = 0;
    flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = prep(r, sql, "sssssss", f->wf, f->host, f->exe, f->user, (const char *)NULL,
                            f->job, f->state);
    if (st) {
        if (f->since > 0) sqlite3_bind_double(st, 5, f->since);
        sqlite3_bind_int64(st, 8, f->limit > 0 ? f->limit : 1000);
        sqlite3_bind_int64(st, 9, f->offset > 0 ? f->offset : 0);
        while (sqlite3_step(st) == SQLITE_ROW) json_array_append_new(jobs, job_row(st));
        sqlite3_finalize(st);
    }
    snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs%s", where);
    st = prep(r, sql, "sssssss", f->wf, f->host, f->exe, f->user, (const char *)NULL, f->job,
              f->state);
    if (st) {
        if (f->since > 0) sqlite3_bind_double(st, 5, f->since);
        if (sqlite3_step(st) == SQLITE_ROW) total = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&r->mu);
    return json_pack("{s:o,s:I}", "jobs", jobs, "total", (json_int_t)total);
}

/* Resolves the workflow of a job id (the latest job of that id). Locked. */
static int find_wf(repo *r, const char *job, const char *wf, char *out, size_t len)
{
    sqlite3_stmt *st = prep(r,
                            "SELECT wf FROM jobs WHERE job=?1 AND (?2 IS NULL OR wf=?2)"
                            " ORDER BY coalesce(start, last) DESC LIMIT 1",
                            "ss", job, wf);
    int found = 0;
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}

static json_t *events_of(repo *r, const char *wf, const char *job, double since)
{
    json_t *a = json_array();
    sqlite3_stmt *st = prep(r,
                            "SELECT body FROM events WHERE job=?1 AND wf=?2 AND ts >= ?3"
                            " ORDER BY ts, id",
                            "ssd", job, wf, since);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        json_t *ev = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
        if (ev) json_array_append_new(a, ev);
    }
    sqlite3_finalize(st);
    return a;
}

json_t *repo_job_events(repo *r, const char *job, const char *wf, double since)
{
    char w[512];
    json_t *a = NULL;
    flush(r);
    pthread_mutex_lock(&r->mu);
    if (find_wf(r, job, wf, w, sizeof w)) a = events_of(r, w, job, since);
    pthread_mutex_unlock(&r->mu);
    return a;
}

json_t *repo_job_row(repo *r, const char *job, const char *wf)
{
    char w[512];
    json_t *o = NULL;
    flush(r);
    pthread_mutex_lock(&r->mu);
    if (find_wf(r, job, wf, w, sizeof w)) {
        sqlite3_stmt *st =
            prep(r, "SELECT " JOB_COLS ", summary FROM jobs WHERE wf=?1 AND job=?2", "ss", w, job);
        if (st && sqlite3_step(st) == SQLITE_ROW) o = job_row(st);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&r->mu);
    return o;
}

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
        json_object_set_new(o, wf_keys[i], col_json(st, i));
    return o;
}

json_t *repo_workflows(repo *r)
{
    json_t *a = json_array();
    flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = prep(r, WF_SQL " ORDER BY w.first DESC LIMIT 10000", "");
    while (st && sqlite3_step(st) == SQLITE_ROW) json_array_append_new(a, wf_row(st));
    sqlite3_finalize(st);
    pthread_mutex_unlock(&r->mu);
    return json_pack("{s:o}", "workflows", a);
}

json_t *repo_workflow(repo *r, const char *wf)
{
    json_t *o = NULL;
    flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = prep(r, WF_SQL " WHERE w.wf=?1", "s", wf);
    if (st && sqlite3_step(st) == SQLITE_ROW) o = wf_row(st);
    sqlite3_finalize(st);
    if (o) {
        json_t *jobs = json_array(), *evs = json_array();
        st = prep(r, "SELECT " JOB_COLS " FROM jobs WHERE wf=?1 ORDER BY start IS NULL, start, id",
                  "s", wf);
        while (st && sqlite3_step(st) == SQLITE_ROW) json_array_append_new(jobs, job_row(st));
        sqlite3_finalize(st);
        st =
            prep(r,
                 "SELECT body FROM events WHERE wf=?1 AND name NOT IN ('kickstart.inv.online',"
                 " 'kickstart.inv.online.gpu.stats', 'jobscope.metric') ORDER BY ts, id LIMIT 5000",
                 "s", wf);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            json_t *ev = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
            if (ev) json_array_append_new(evs, ev);
        }
        sqlite3_finalize(st);
        o = json_pack("{s:o,s:o,s:o}", "workflow", o, "jobs", jobs, "events", evs);
    }
    pthread_mutex_unlock(&r->mu);
    return o;
}

json_t *repo_events(repo *r, const repo_event_filter *f)
{
    long limit = f->limit > 0 ? (f->limit > 10000 ? 10000 : f->limit) : 500;
    char name[256] = "", like[260] = "";
    if (f->name) {
        size_t n = strlen(f->name);
        if (n && f->name[n - 1] == '*')
            snprintf(like, sizeof like, "%.*s%%", (int)(n - 1), f->name);
        else
            snprintf(name, sizeof name, "%s", f->name);
    }
    json_t *a = json_array();
    long long last = -1;
    long count = 0;
    flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = prep(r,
                            "SELECT id, body FROM events WHERE id > ?1 AND (?2 IS NULL OR wf=?2)"
                            " AND (?3 IS NULL OR job=?3) AND (?4 IS NULL OR host=?4)"
                            " AND (?5 IS NULL OR name=?5) AND (?6 IS NULL OR name LIKE ?6)"
                            " AND (?7 IS NULL OR ts >= ?7) AND (?8 IS NULL OR ts <= ?8)"
                            " ORDER BY id LIMIT ?9",
                            "isssss", f->after, f->wf, f->job, f->host, name[0] ? name : NULL,
                            like[0] ? like : NULL);
    if (st) {
        if (f->since > 0) sqlite3_bind_double(st, 7, f->since);
        if (f->until > 0) sqlite3_bind_double(st, 8, f->until);
        sqlite3_bind_int64(st, 9, limit);
        while (sqlite3_step(st) == SQLITE_ROW) {
            last = sqlite3_column_int64(st, 0);
            json_t *ev = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
            json_array_append_new(
                a, json_pack("{s:I,s:o}", "id", (json_int_t)last, "event", ev ? ev : jd_null()));
            count++;
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&r->mu);
    return json_pack("{s:o,s:o}", "events", a, "next",
                     count == limit ? json_integer(last) : jd_null());
}

char *repo_job_view(repo *r, const char *job, const char *wf)
{
    char w[512], *v = NULL;
    flush(r);
    pthread_mutex_lock(&r->mu);
    if (find_wf(r, job, wf, w, sizeof w)) {
        sqlite3_stmt *st =
            prep(r, "SELECT view FROM jobs WHERE wf=?1 AND job=?2 AND state='done'", "ss", w, job);
        if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            v = strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&r->mu);
    return v;
}

json_t *repo_nodes(repo *r)
{
    json_t *a = json_array();
    flush(r);
    pthread_mutex_lock(&r->mu);
    sqlite3_stmt *st = prep(r,
                            "SELECT host, count(*), sum(state='running'), max(last) FROM jobs"
                            " WHERE host IS NOT NULL GROUP BY host ORDER BY host",
                            "");
    while (st && sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(a, json_pack("{s:o,s:o,s:o,s:o}", "host", col_json(st, 0), "jobs",
                                           col_json(st, 1), "running", col_json(st, 2), "last",
                                           col_json(st, 3)));
    sqlite3_finalize(st);
    pthread_mutex_unlock(&r->mu);
    return json_pack("{s:o}", "nodes", a);
}
