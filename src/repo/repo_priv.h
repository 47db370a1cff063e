/* repo_priv.h — what the two halves of the repository share: repo.c
 * (opening, the schema, storing events and keeping the jobs and workflows
 * tables current) and repo_query.c (every read).  Not for other modules. */
#ifndef JOBSCOPE_REPO_PRIV_H
#define JOBSCOPE_REPO_PRIV_H

#include "repo/repo.h"

#include <pthread.h>
#include <stdint.h>
#include <sqlite3.h>

#define REPO_STMT_CACHE 64

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
};

/* Prepares (once, then reuses) constant sql and binds the arguments: 's'
 * text, 'd' double (NAN: NULL), 'i' int64.  Hand it back with repo_done.
 * The caller holds r->mu. */
sqlite3_stmt *repo_prep(repo *r, const char *sql, const char *types, ...);
/* The same for SQL built at run time: finalized by repo_done. */
sqlite3_stmt *repo_prep_dyn(repo *r, const char *sql);
void repo_done(repo *r, sqlite3_stmt *st);
/* Writes what is queued (takes r->mu itself). */
void repo_flush(repo *r);
/* A column as JSON (integer, real, text, null). */
json_t *repo_col_json(sqlite3_stmt *st, int i);
/* The job read back from its events (jobdata_finish done; the caller
 * frees it). Locked. */
struct jobdata;
void repo_jobdata_of(repo *r, const char *wf, const char *job, struct jobdata *j);
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
