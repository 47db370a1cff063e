/* repo_batch.c — a job's samples folded by the repository's batches
 * (repo.c's repo_write_queued): the first event of a job makes or finds its
 * row as ever; its later samples (kickstart.inv.online of a run already
 * known) only go to their run's block and are folded here, and the job's
 * row is updated once with what they say when what is pending is written
 * (repo_pending.c: before any other event of that job, at a read, or when
 * due), with their blocks, in one transaction.  The row ends as the samples
 * one by one would have left it (maxima, last values, counts).  One UPDATE
 * per job and write instead of an upsert, a lookup and an UPDATE per
 * sample.  A job's entry outlives its batch (its row id and runs: only
 * its own events change them, and repo_add and the retention forget them
 * all), so that the next batch folds its first samples as well. */
#include "repo/repo_priv.h"
#include "util/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void set_str(char **dst, const char *v, int first)
{
    if (!v || (first && *dst)) return;
    char *c = strdup(v);
    if (!c) return;
    free(*dst);
    *dst = c;
}

static void clear(repo_batch_job *e)
{
    free(e->exe), free(e->host), free(e->xformation), free(e->batch_id);
    e->exe = e->host = e->xformation = e->batch_id = NULL;
    e->n = 0;
    e->peak = e->cg_peak = 0;
    e->cpu = e->rchar = e->wchar = NAN;
}

static size_t slot_of(const repo_batch *b, const char *wf, const char *job)
{
    size_t lw = strlen(wf), lj = strlen(job);
    size_t i = (size_t)(hash_bytes(wf, lw) * 31 + hash_bytes(job, lj)) % REPO_BATCH_SLOTS;
    while (b->slot[i] && (strcmp(b->slot[i]->job, job) || strcmp(b->slot[i]->wf, wf)))
        i = (i + 1) % REPO_BATCH_SLOTS;
    return i;
}

repo_batch_job *repo_batch_get(repo_batch *b, const char *wf, const char *job)
{
    return b->slot[slot_of(b, wf, job)];
}

void repo_batch_put(repo *r, repo_batch *b, const char *wf, const char *job, long long jobid,
                    int nruns)
{
    size_t i = slot_of(b, wf, job);
    repo_batch_job *e = b->slot[i];
    if (!e) {
        if (b->n >= REPO_BATCH_SLOTS / 2) { /* full: write all, start again */
            repo_pending_write(r);
            repo_batch_forget(b);
        }
        i = slot_of(b, wf, job);
        e = calloc(1, sizeof *e);
        if (!e || !(e->wf = strdup(wf)) || !(e->job = strdup(job))) {
            if (e) free(e->wf);
            free(e);
            return;
        }
        clear(e);
        b->slot[i] = e;
        b->n++;
    }
    e->jobid = jobid;
    e->nruns = nruns;
}

long long repo_batch_jobid(const repo_batch_job *e, int *nruns)
{
    *nruns = e->nruns;
    return e->jobid;
}

void repo_sample_of(json_t *ev, const char *host, double ts, repo_sample *s)
{
    s->ts = ts;
    s->elapsed = jd_num(ev, "elapsed");
    s->rss = jd_num(ev, "rss");
    s->anon = jd_num(ev, "cg_memory_anon");
    s->shmem = jd_num(ev, "cg_memory_shmem");
    s->cg_peak = jd_num(ev, "cg_memory_peak");
    s->utime = jd_num(ev, "utime");
    s->stime = jd_num(ev, "stime");
    s->rchar = jd_num(ev, "rchar");
    s->wchar = jd_num(ev, "wchar");
    s->host = host;
    s->exe = jd_str(ev, "exe");
    s->xformation = jd_str(ev, "xformation");
    s->batch_id = jd_str(json_object_get(ev, "batch"), "job_id");
}

void repo_batch_fold(repo_batch_job *e, const repo_sample *s)
{
    double ts = s->ts;
    if (!e->n++) {
        e->first_start = ts - (isfinite(s->elapsed) ? s->elapsed : 0);
        e->max_ts = ts;
    }
    e->last_ts = ts;
    if (ts > e->max_ts) e->max_ts = ts;
    set_str(&e->host, s->host, 1);
    set_str(&e->xformation, s->xformation, 1);
    set_str(&e->batch_id, s->batch_id, 1);
    if (e->nruns > 1) return; /* a job of several runs: its row is summed from them */
    /* what update_job (repo.c) takes of a sample */
    double rss = s->rss * 1024, own = s->anon + s->shmem;
    if (!(rss >= own)) rss = isnan(own) ? rss : own;
    if (isfinite(rss) && rss > e->peak) e->peak = rss;
    double cpu = s->utime + s->stime;
    if (isfinite(s->cg_peak) && s->cg_peak > e->cg_peak) e->cg_peak = s->cg_peak;
    if (isfinite(cpu)) e->cpu = cpu;
    if (isfinite(s->rchar)) e->rchar = s->rchar;
    if (isfinite(s->wchar)) e->wchar = s->wchar;
    set_str(&e->exe, s->exe, 0);
}

void repo_batch_write(repo *r, repo_batch_job *e)
{
    repo_block_write(r, e); /* its samples' events, before anything reads them */
    if (!e->n) return;
    sqlite3_stmt *st;
    /* job_row's upsert and update_job's (or update_job_of_runs') sample
     * update, folded: each right-hand side reads the row as it was */
    if (e->nruns > 1)
        st = repo_prep(r,
                       "UPDATE jobs SET host=coalesce(host, ?2), last=max(coalesce(last, 0), ?3),"
                       " xformation=coalesce(xformation, ?4), batch_id=coalesce(batch_id, ?5),"
                       " nsamples=nsamples+?6 WHERE id=?1",
                       "isdssi", e->jobid, e->host, e->max_ts, e->xformation, e->batch_id,
                       (long long)e->n);
    else
        st = repo_prep(
            r,
            "UPDATE jobs SET host=coalesce(host, ?2), last=max(coalesce(last, 0), ?3),"
            " xformation=coalesce(xformation, ?4), batch_id=coalesce(batch_id, ?5),"
            " nsamples=nsamples+?6, exe=coalesce(?7, exe), type=coalesce(type, 'kickstart'),"
            " state=coalesce(state, 'running'), start=coalesce(start, ?8),"
            " peak_mem=max(coalesce(peak_mem, 0), ?9), cg_peak_mem=max(coalesce(cg_peak_mem, 0), "
            "?10),"
            " cpu_time=coalesce(?11, cpu_time), rchar=coalesce(?12, rchar),"
            " wchar=coalesce(?13, wchar),"
            " duration=CASE WHEN state='done' THEN duration ELSE ?14 - coalesce(start, ?8) END,"
            " cpu_eff=CASE WHEN state='done' THEN cpu_eff"
            "  ELSE coalesce(?11, cpu_time) / nullif((?14 - coalesce(start, ?8))"
            "   * coalesce(cores, 1), 0) END"
            " WHERE id=?1",
            "isdssisddddddd", e->jobid, e->host, e->max_ts, e->xformation, e->batch_id,
            (long long)e->n, e->exe, e->first_start, e->peak, e->cg_peak, e->cpu, e->rchar,
            e->wchar, e->last_ts);
    if (st) {
        sqlite3_step(st);
        repo_done(r, st);
    }
    clear(e);
}

int repo_batch_wf_fold(repo *r, const char *wf, double ts, const char *label)
{
    int i = 0;
    while (i < r->nwfp && strcmp(r->wfp[i].wf, wf)) i++;
    if (strlen(wf) >= sizeof r->wfp[0].wf || (label && strlen(label) >= sizeof r->wfp[0].label) ||
        (i == r->nwfp && i == REPO_WF_PENDING))
        return 0;
    if (i == r->nwfp) {
        r->nwfp++;
        strcpy(r->wfp[i].wf, wf);
        r->wfp[i].label[0] = 0;
        r->wfp[i].min = r->wfp[i].max = ts;
    }
    /* wf_seen's upsert again and again: the least and greatest time, the
     * first label given (coalesce) */
    if (ts < r->wfp[i].min) r->wfp[i].min = ts;
    if (ts > r->wfp[i].max) r->wfp[i].max = ts;
    if (!r->wfp[i].label[0] && label) strcpy(r->wfp[i].label, label);
    return 1;
}

void repo_batch_wf_write(repo *r, const char *wf)
{
    for (int i = 0; i < r->nwfp; i++) {
        if (wf && strcmp(r->wfp[i].wf, wf)) continue;
        sqlite3_stmt *st =
            repo_prep(r,
                      "INSERT INTO workflows(wf, first, last, label) VALUES(?1, ?2, ?3, ?4)"
                      " ON CONFLICT(wf) DO UPDATE SET last=max(coalesce(last, 0), ?3),"
                      " first=min(coalesce(first, ?2), ?2), label=coalesce(label, ?4)",
                      "sdds", r->wfp[i].wf, r->wfp[i].min, r->wfp[i].max,
                      r->wfp[i].label[0] ? r->wfp[i].label : NULL);
        if (st) sqlite3_step(st);
        repo_done(r, st);
        r->wfp[i--] = r->wfp[--r->nwfp];
        if (wf) return;
    }
}

void repo_batch_forget(repo_batch *b)
{
    for (size_t i = 0; i < REPO_BATCH_SLOTS; i++) {
        repo_batch_job *e = b->slot[i];
        if (!e) continue;
        clear(e);
        free(e->blk);
        free(e->wf), free(e->job);
        free(e);
        b->slot[i] = NULL;
    }
    b->n = 0;
}
