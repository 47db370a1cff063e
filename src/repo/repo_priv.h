/* repo_priv.h — what the two halves of the repository share: repo.c
 * (opening, the schema, storing events and keeping the jobs and workflows
 * tables current) and repo_query.c (every read).  Not for other modules. */
#ifndef JOBSCOPE_REPO_PRIV_H
#define JOBSCOPE_REPO_PRIV_H

#include "repo/repo.h"
#include "report/jobdata.h"

#include <pthread.h>
#include <stdint.h>
#include <sqlite3.h>

#define REPO_STMT_CACHE 96
#define REPO_RUN_SETS   256 /* x 4: the run cache (repo_runs.c) */

/* A batch's job rows (repo_batch.c): within one repo_flush, the later
 * samples of a job are folded and its row written once. */
#define REPO_BATCH_SLOTS 1024
#define REPO_WF_PENDING  32
typedef struct repo_batch_job repo_batch_job;
struct repo_batch_job {
    long long jobid;
    int nruns;
    char *wf, *job;
    /* the samples folded since the row was last written */
    long n;
    double first_start, last_ts, max_ts, peak, cg_peak, cpu, rchar, wchar;
    char *exe, *host, *xformation, *batch_id;
    struct repo_block *blk; /* its samples' pending blocks (repo_block.c), one per run */
    size_t nblk;
};

typedef struct repo_batch {
    repo_batch_job *slot[REPO_BATCH_SLOTS];
    size_t n;
} repo_batch;
struct repo {
    sqlite3 *db;
    pthread_mutex_t mu; /* the connection, its statements and transactions */
    /* Events waiting to be written: the event hook only queues them; a
     * writer thread (or a reader, first) writes them in one transaction per
     * batch — one transaction per event costed ~0.5 ms in page writes. */
    pthread_mutex_t qmu;
    pthread_cond_t qcond;
    char **q;
    size_t *qlen, qn, qcap;
    struct repo_flat **qf; /* a queued event's sample read from its fields (or NULL) */
    pthread_t writer;
    int stop, has_writer;
    double retention_s; /* 0 = keep everything */
    size_t since_prune; /* events written since the last pruning */
    uint64_t version;   /* +1 for each batch written: what the lists' ETag says */
    /* prepared statements of constant SQL, by the text's address */
    struct {
        const char *sql;
        sqlite3_stmt *st;
    } cache[REPO_STMT_CACHE];
    int ncache;
    /* the run of recent events, by (job row, base key, main pid): sets of
     * four by (job row, base), each replaced in turn; jobid 0 = empty (a
     * collector's hundreds of monitors, each sending samples in turn) */
    struct {
        long long jobid, pid, run;
        char base[200];
    } runcache[REPO_RUN_SETS][4];
    unsigned char runcache_next[REPO_RUN_SETS];
    /* the job row of the latest event (its id and runs): a monitor's events
     * mostly come one after the other */
    long long last_jobid;
    int last_nruns;
    repo_batch batch;  /* the job rows of the batch being written (repo_flush) */
    long long next_id; /* the id of the next event (events and blocks share them) */
    /* the workflows' rows as a batch's samples leave them (repo_batch.c) */
    struct {
        char wf[128], label[128];
        double min, max;
    } wfp[REPO_WF_PENDING];
    int nwfp;
    char last_wf[128], last_job[256];
    /* the samples folded and not yet written, and their log (repo_pending.c) */
    int pfd;        /* the log (-1: none: every batch writes what it folded) */
    int pbroken;    /* a write to it failed: as if none, from then on */
    int pdue;       /* write what is pending at this batch's end */
    int preset;     /* written in this transaction: the log starts again after it */
    int pstale;     /* the log holds a replayed generation not yet marked written */
    int idle_due;   /* the writer writes what is pending once the queue idles */
    char *ppath;    /* <repository>-pending */
    long long pgen; /* the log's generation */
    size_t pfile;   /* its bytes */
    char *pbuf;     /* this batch's records, appended after its COMMIT */
    size_t plen, pcap;
    size_t npending; /* samples folded and not yet written */
};

/* Prepares (once, then reuses) constant sql and binds the arguments: 's'
 * text, 'd' double (NAN: NULL), 'i' int64.  Hand it back with repo_done.
 * The caller holds r->mu. */
sqlite3_stmt *repo_prep(repo *r, const char *sql, const char *types, ...);
/* The same for SQL built at run time: finalized by repo_done. */
sqlite3_stmt *repo_prep_dyn(repo *r, const char *sql);
void repo_done(repo *r, sqlite3_stmt *st);
/* Writes what is queued and what is pending (takes r->mu itself): what a
 * read does first.  The writer's batches leave what they fold pending. */
void repo_flush(repo *r);
void repo_flush_queue(repo *r, int all);
/* A column as JSON (integer, real, text, null). */
json_t *repo_col_json(sqlite3_stmt *st, int i);
/* The job read back from its events (jobdata_finish done; the caller
 * frees it). Locked. */
struct jobdata;
void repo_jobdata_of(repo *r, const char *wf, const char *job, struct jobdata *j);
/* The row's figures, warnings and state (done, or running while a run of
 * the job is) from a summary; repo.c. Locked. */
void repo_store_summary(repo *r, const char *wf, const char *job, const jd_summary *s, json_t *warn,
                        int done);

/* Runs (repo_runs.c), locked.  The run of an event of the job row jobid (a
 * runs.id, or -1 when the event belongs to the job and no run), made when
 * new; *nruns the job's runs after it. */
long long repo_run_of(repo *r, long long jobid, json_t *ev, const char *name, int *nruns);
/* A run's end record was stored: its part (its summary), then the job's
 * row summed over its runs. */
void repo_run_ended(repo *r, const char *wf, const char *job, long long jobid, long long run);
/* The job's runs (0: none known, an older file's job), and a run's id by
 * its key (-1: none). */
int repo_job_runs(repo *r, const char *wf, const char *job);
long long repo_run_id(repo *r, const char *wf, const char *job, const char *key);
/* The page of a job of several runs (report/jobset.h), or of one of its
 * runs (run >= 0, or -1: all the job's events; since: only newer events).
 * New reference, or NULL. */
json_t *repo_runs_page(repo *r, const char *wf, const char *job, size_t max_points);
void repo_run_jobdata(repo *r, const char *wf, const char *job, long long run, double since,
                      struct jobdata *j);

/* The run of an event when the run cache knows it (no side effects: a
 * sample of a run already seen), else -1 (repo_runs.c). */
long long repo_run_cached(repo *r, long long jobid, json_t *ev);
/* The same by the run's base key and main pid (jobset_run_base's). */
long long repo_run_cached_key(repo *r, long long jobid, const char *base, long long pid);

/* The job's entry (NULL: not seen in this batch). */
repo_batch_job *repo_batch_get(repo_batch *b, const char *wf, const char *job);
/* The job's row id and runs, after an event of it was written as ever. */
void repo_batch_put(repo *r, repo_batch *b, const char *wf, const char *job, long long jobid,
                    int nruns);
long long repo_batch_jobid(const repo_batch_job *e, int *nruns);
/* What a sample says that its job's row takes (update_job in repo.c):
 * NAN / NULL when not given. */
typedef struct repo_sample {
    double ts, elapsed, rss, anon, shmem, cg_peak, utime, stime, rchar, wchar;
    const char *host, *exe, *xformation, *batch_id;
} repo_sample;
/* The same of an event read with jansson (host and ts as add_locked has them). */
void repo_sample_of(json_t *ev, const char *host, double ts, repo_sample *s);
/* Folds a sample (a finite ts) into the job's pending row. */
void repo_batch_fold(repo_batch_job *e, const repo_sample *s);

/* A sample read straight from its text (repo_flat.c): 1 and *f, or 0 when
 * the line is not an object or not valid JSON (jansson then reads it, and
 * names the error).  f's strings live in f; jr is scratch, started with
 * jread_init(jr, NULL, 0) and freed with jread_free. */
struct jread;
typedef struct repo_flat {
    const char *name, *wf, *job, *label, *step, *task;
    int has_rank, has_pid;
    long long rank, pid;
    repo_sample s;
    size_t used;
    char buf[4096];
} repo_flat;
int repo_flat_read(struct jread *jr, const char *text, size_t len, repo_flat *f);
/* The queue (repo_queue.c): its writer thread started by repo_open, and
 * stopped by repo_close once the queue is written. */
void repo_queue_start(repo *r);
void repo_queue_stop(repo *r);
/* Writes n queued events in one transaction and frees them (repo.c): the
 * texts q[i] of lengths ql[i], each with the sample qf[i] the server read
 * of it (one block with its text) or NULL; all: what is pending too (else
 * only when due).  Under r->mu. */
void repo_write_queued(repo *r, char **q, const size_t *ql, repo_flat **qf, size_t n, int all);
/* The pending samples and their log (repo_pending.c).  Opening replays
 * what a crash left in the log (before the queue starts, in one
 * transaction); closing removes it once all is written.  Locked (r->mu)
 * but open and close. */
#define REPO_PENDING_BYTES  (8u << 20) /* the log's size that has it written */
#define REPO_PENDING_IDLE_S 1          /* the queue's idle time that has it written */
void repo_pending_open(repo *r, const char *path);
void repo_pending_close(repo *r);
/* Whether folded samples may stay pending past their batch (a log). */
int repo_pending_logged(const repo *r);
/* A sample was folded: its text goes to the log after the COMMIT. */
void repo_pending_note(repo *r, const char *text, size_t len);
/* Something is pending; it is due to be written at this batch's end. */
int repo_pending_any(const repo *r);
int repo_pending_due(const repo *r);
/* Writes every pending job row, block and workflow row, and marks the
 * log's records written, in the current transaction. */
void repo_pending_write(repo *r);
/* After the COMMIT (ok: it succeeded): the log started again if it was
 * written, and this batch's records appended. */
void repo_pending_committed(repo *r, int ok);
/* The same from the fields the server's streaming reader handed over
 * (server.h; they describe valid JSON with no key given twice): 1 and *f
 * as repo_flat_read gives it from the event's text, or 0 (the text is
 * read then).  The used part of f (up to buf + used) is all it needs. */
struct server_event_fields;
int repo_flat_of(const struct server_event_fields *e, repo_flat *f);
/* Blocks (repo_block.c): a run's samples folded while pending are kept as
 * one row of evblocks, not a row each; every read expands them.  The job's
 * pending block of run gets the sample (its id, ts, host and text). */
#define REPO_BLOCK_SPAN 65536 /* the most ids from a block's first to its last */
void repo_block_add(repo *r, repo_batch_job *e, long long run, long long id, double ts,
                    const char *host, const char *body);
/* Whether adding a text of n bytes to the run's block writes the block
 * first (a new host, a span or a size reached). */
int repo_block_splits(const repo_batch_job *e, long long run, long long id, const char *host,
                      size_t n);
/* A sample's text c[0..nc) as its difference from the text p[0..np) before
 * it (repo_delta.c): the code's length, written to out, which must hold
 * nc + REPO_DELTA_SLACK bytes.  Decoding gives the n bytes of the text to
 * out: 0, or -1 for a code that is not one (nothing read outside). */
#define REPO_DELTA_SLACK 64
size_t repo_delta_encode(const char *p, size_t np, const char *c, size_t nc, uint8_t *out);
int repo_delta_decode(const char *p, size_t np, const uint8_t *code, size_t ncode, char *out,
                      size_t n);
/* Writes the job's pending blocks (repo_batch_write does). */
void repo_block_write(repo *r, repo_batch_job *e);
/* An event read back: from events or expanded from a block. */
typedef struct repo_ev {
    long long id, run; /* run < 0: none */
    double ts;         /* NAN: none */
    char *body;
} repo_ev;
typedef struct repo_evs {
    repo_ev *v;
    size_t n, cap;
} repo_evs;
/* The events of a job (run >= 0: of that run only; since finite: those
 * with ts >= since), in the order of ORDER BY ts, id (by_run: run IS NOT
 * NULL, run, ts, id).  Locked. */
void repo_evs_job(repo *r, const char *job, const char *wf, long long run, double since, int by_run,
                  repo_evs *out);
void repo_evs_free(repo_evs *e);
/* GET /api/events' page: the first `limit` events with id > f->after that
 * pass f, in id order.  Locked. */
void repo_evs_page(repo *r, const repo_event_filter *f, long limit, repo_evs *out);
/* --retention: events (and blocks' events) with ts < cut go.  Locked. */
void repo_evs_prune(repo *r, double cut);

/* Writes the job's pending row (before any other event of the job). */
void repo_batch_write(repo *r, repo_batch_job *e);
/* A sample's touch of its workflow's row (what repo.c's wf_seen writes),
 * folded: 1, or 0 when it is not (names too long, too many workflows):
 * the caller writes it.  The row is written by repo_batch_wf_write, before
 * any other event of that workflow (wf) or before COMMIT (NULL: all). */
int repo_batch_wf_fold(repo *r, const char *wf, double ts, const char *label);
void repo_batch_wf_write(repo *r, const char *wf);
/* Forgets every entry (written first: after repo_pending_write), when a job's
 * row id or runs may change outside the batch (repo_add, the retention). */
void repo_batch_forget(repo_batch *b);

/* The workflow of the latest job of that id (within wf when given). Locked. */
int repo_find_wf(repo *r, const char *job, const char *wf, char *out, size_t len);

/* The job filters as a WHERE clause (" WHERE ..." or "") and its text
 * arguments, in order. */
#define REPO_QB_MAX 24
typedef struct repo_qb {
    char sql[2048];
    size_t n;
    const char *arg[REPO_QB_MAX];
    char own[REPO_QB_MAX][272]; /* arguments made here (prefix bounds, patterns) */
    int nargs;
    int warn_exists; /* the warning filter as a probe per row (see repo_query.c) */
} repo_qb;
void repo_where(repo_qb *b, const repo_job_filter *f);
void repo_where_warn(repo_qb *b, const repo_job_filter *f, int warn_exists);
/* Prepares sql (which embeds b->sql) and binds b's arguments. */
sqlite3_stmt *repo_where_prepare(repo *r, const repo_qb *b, const char *sql);

#endif
