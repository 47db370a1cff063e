/* repo_flat.c — a sample read for the repository's batch straight from its
 * text (server/json_read.h, the pieces of the ingest's streaming readers)
 * instead of through a jansson tree: the members the batch needs to fold it
 * into its job's row (repo_batch.c), with jansson's meaning (jd_str: a
 * non-empty string; jd_num: a number; the last of a key given twice is
 * jansson's, so a wanted key given twice leaves the line to jansson).  The
 * whole line is validated as json_loadb would: what this refuses, jansson
 * reads (and refuses) as before. */
#include "repo/repo_priv.h"
#include "server/json_read.h"
#include "server/server.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The wanted members, in the order of repo_flat's slots. */
enum {
    K_EVENT,
    K_MONITORING_EVENT,
    K_TYPE,
    K_WF_UUID,
    K_XWF_ID,
    K_XWF_DOT_ID,
    K_DAG_JOB_ID,
    K_JOB_ID,
    K_JOB_DOT_ID,
    K_JOBID,
    K_HOSTNAME,
    K_HOSTNAME2,
    K_WF_LABEL,
    K_DAX_LABEL,
    K_EXE,
    K_XFORMATION,
    K_NSTR, /* strings above, numbers below */
    K_TS = K_NSTR,
    K_TIMESTAMP,
    K_ELAPSED,
    K_RSS,
    K_ANON,
    K_SHMEM,
    K_CGPEAK,
    K_UTIME,
    K_STIME,
    K_RCHAR,
    K_WCHAR,
    K_RANK,
    K_PID,
    K_TAGS,
    K_BATCH,
    K_N
};
static const char *const keys[K_N] = {
    "event",
    "monitoring_event",
    "Type",
    "wf_uuid",
    "xwf_id",
    "xwf.id",
    "dag_job_id",
    "job_id",
    "job.id",
    "JobID",
    "hostname",
    "Hostname",
    "wf_label",
    "dax_label",
    "exe",
    "xformation",
    "ts",
    "timestamp",
    "elapsed",
    "rss",
    "cg_memory_anon",
    "cg_memory_shmem",
    "cg_memory_peak",
    "utime",
    "stime",
    "rchar",
    "wchar",
    "rank",
    "pid",
    "tags",
    "batch",
};

/* A member's slot, or -1: the candidates by first character (a loop over
 * every key was half of this reader's own time). */
static int key_of(const char *k, size_t n)
{
#define IS(i)                                                                                      \
    if (!strncmp(keys[i], k, n) && !keys[i][n]) return i
    if (!n) return -1;
    switch (k[0]) {
    case 'e':
        IS(K_EVENT);
        IS(K_EXE);
        IS(K_ELAPSED);
        break;
    case 'm':
        IS(K_MONITORING_EVENT);
        break;
    case 'T':
        IS(K_TYPE);
        break;
    case 'w':
        IS(K_WF_UUID);
        IS(K_WF_LABEL);
        IS(K_WCHAR);
        break;
    case 'x':
        IS(K_XWF_ID);
        IS(K_XWF_DOT_ID);
        IS(K_XFORMATION);
        break;
    case 'd':
        IS(K_DAG_JOB_ID);
        IS(K_DAX_LABEL);
        break;
    case 'j':
        IS(K_JOB_ID);
        IS(K_JOB_DOT_ID);
        break;
    case 'J':
        IS(K_JOBID);
        break;
    case 'h':
        IS(K_HOSTNAME);
        break;
    case 'H':
        IS(K_HOSTNAME2);
        break;
    case 't':
        IS(K_TS);
        IS(K_TIMESTAMP);
        IS(K_TAGS);
        break;
    case 'r':
        IS(K_RSS);
        IS(K_RCHAR);
        IS(K_RANK);
        break;
    case 'c':
        IS(K_ANON);
        IS(K_SHMEM);
        IS(K_CGPEAK);
        break;
    case 'u':
        IS(K_UTIME);
        break;
    case 's':
        IS(K_STIME);
        break;
    case 'p':
        IS(K_PID);
        break;
    case 'b':
        IS(K_BATCH);
        break;
    }
    return -1;
#undef IS
}

/* A string's text copied into f's buffer (NULL: empty, or no room). */
static const char *keep_text(repo_flat *f, const char *s, size_t n)
{
    if (!n || f->used + n + 1 > sizeof f->buf) return NULL;
    char *c = f->buf + f->used;
    memcpy(c, s, n);
    c[n] = 0;
    f->used += n + 1;
    return c;
}

/* A string's value as jd_str gives it (copied into f's buffer), or NULL. */
static const char *keep(repo_flat *f, const jread_value *v)
{
    return v->kind == JV_STRING ? keep_text(f, v->s, v->n) : NULL;
}

static double num(const jread_value *v)
{
    if (v->kind == JV_INT) return v->d == 0 ? 0 : v->d; /* jansson's integer -0 is 0 */
    return v->kind == JV_REAL ? v->d : NAN;
}

/* An integer's text as strtoll reads it; 0 when too long. */
static int int_text(const char *s, size_t n, long long *out)
{
    char t[32];
    if (n >= sizeof t) return 0;
    memcpy(t, s, n);
    t[n] = 0;
    *out = strtoll(t, NULL, 10);
    return 1;
}

static int integer(const jread_value *v, long long *out)
{
    if (v->kind != JV_INT) return 0;
    size_t n;
    const char *s = jread_int_text(v, &n);
    return int_text(s, n, out);
}

/* The object at *pp ('{'): the string members named in want[] (NULL-ended)
 * into out[]; everything else validated and skipped.  -1: not read, or a
 * wanted key given twice. */
static int sub_object(jread *jr, const char **pp, const char *const *want, const char **out,
                      repo_flat *f)
{
    const char *p = jread_ws(*pp + 1, jr->end);
    unsigned seen = 0;
    if (p < jr->end && *p == '}') {
        *pp = p + 1;
        return 0;
    }
    for (;;) {
        const char *k;
        size_t kn;
        if (p >= jr->end || *p != '"') return -1;
        p++;
        if (jread_string(jr, &p, &k, &kn) < 0) return -1;
        p = jread_ws(p, jr->end);
        if (p >= jr->end || *p != ':') return -1;
        p = jread_ws(p + 1, jr->end);
        int w = -1;
        for (int i = 0; want[i]; i++)
            if (!strncmp(want[i], k, kn) && !want[i][kn]) w = i;
        if (w >= 0 && seen & (1u << w)) return -1;
        if (w >= 0) seen |= 1u << w;
        if (w >= 0 && p < jr->end && *p == '"') {
            jread_value v;
            if (jread_scalar(jr, &p, &v) < 0) return -1;
            out[w] = keep(f, &v);
        } else if (jread_skip(jr, &p, 2) < 0)
            return -1;
        p = jread_ws(p, jr->end);
        if (p < jr->end && *p == ',') {
            p = jread_ws(p + 1, jr->end);
            continue;
        }
        if (p < jr->end && *p == '}') break;
        return -1;
    }
    *pp = p + 1;
    return 0;
}

/* f from the members found: jansson's readings of the other names. */
static void settle(repo_flat *f, const char *const *str, const char *const *tags,
                   const char *const *batch, const double *numv)
{
#define FIRST(a, b) (str[a] ? str[a] : str[b])
    f->name = str[K_EVENT] ? str[K_EVENT] : FIRST(K_MONITORING_EVENT, K_TYPE);
    f->wf = str[K_WF_UUID] ? str[K_WF_UUID] : FIRST(K_XWF_ID, K_XWF_DOT_ID);
    f->job = str[K_DAG_JOB_ID] ? str[K_DAG_JOB_ID]
                               : (str[K_JOB_ID] ? str[K_JOB_ID] : FIRST(K_JOB_DOT_ID, K_JOBID));
    f->label = FIRST(K_WF_LABEL, K_DAX_LABEL);
    f->step = tags[0], f->task = tags[1];
#undef FIRST
    repo_sample *s = &f->s;
    s->host = str[K_HOSTNAME] ? str[K_HOSTNAME] : str[K_HOSTNAME2];
    s->exe = str[K_EXE], s->xformation = str[K_XFORMATION], s->batch_id = batch[0];
    s->ts = isnan(numv[K_TS - K_NSTR]) ? numv[K_TIMESTAMP - K_NSTR] : numv[K_TS - K_NSTR];
    s->elapsed = numv[K_ELAPSED - K_NSTR], s->rss = numv[K_RSS - K_NSTR];
    s->anon = numv[K_ANON - K_NSTR], s->shmem = numv[K_SHMEM - K_NSTR];
    s->cg_peak = numv[K_CGPEAK - K_NSTR], s->utime = numv[K_UTIME - K_NSTR];
    s->stime = numv[K_STIME - K_NSTR], s->rchar = numv[K_RCHAR - K_NSTR];
    s->wchar = numv[K_WCHAR - K_NSTR];
}

int repo_flat_read(jread *jr, const char *text, size_t len, repo_flat *f)
{
    static const char *const tag_keys[] = {"slurm_step", "slurm_task", NULL};
    static const char *const batch_keys[] = {"job_id", NULL};
    const char *str[K_NSTR] = {0}, *tags[2] = {0}, *batch[1] = {0};
    double numv[K_N - K_NSTR];
    uint64_t seen = 0;
    jread_scratch_reset(jr);
    jr->body = text;
    jr->end = text + len;
    jr->err[0] = 0;
    f->used = 0;
    f->has_rank = f->has_pid = 0;
    for (int i = 0; i < K_N - K_NSTR; i++) numv[i] = NAN;
    const char *p = jread_ws(text, jr->end);
    int ok = -1;
    if (p >= jr->end || *p != '{') goto out;
    p = jread_ws(p + 1, jr->end);
    if (p < jr->end && *p == '}') {
        p++;
        ok = 0;
        goto out;
    }
    for (;;) {
        const char *k;
        size_t kn;
        if (p >= jr->end || *p != '"') goto out;
        p++;
        if (jread_string(jr, &p, &k, &kn) < 0) goto out;
        p = jread_ws(p, jr->end);
        if (p >= jr->end || *p != ':') goto out;
        p = jread_ws(p + 1, jr->end);
        int w = key_of(k, kn);
        if (w >= 0 && seen & (1ull << w)) goto out; /* jansson keeps the last: let it decide */
        if (w >= 0) seen |= 1ull << w;
        if ((w == K_TAGS || w == K_BATCH) && p < jr->end && *p == '{') {
            if (sub_object(jr, &p, w == K_TAGS ? tag_keys : batch_keys, w == K_TAGS ? tags : batch,
                           f) < 0)
                goto out;
        } else if (w >= 0 && w != K_TAGS && w != K_BATCH) {
            jread_value v;
            if (jread_scalar(jr, &p, &v) < 0) goto out;
            if (w < K_NSTR)
                str[w] = keep(f, &v);
            else if (w == K_RANK)
                f->has_rank = integer(&v, &f->rank);
            else if (w == K_PID)
                f->has_pid = integer(&v, &f->pid);
            else
                numv[w - K_NSTR] = num(&v);
        } else if (jread_skip(jr, &p, 1) < 0)
            goto out;
        p = jread_ws(p, jr->end);
        if (p < jr->end && *p == ',') {
            p = jread_ws(p + 1, jr->end);
            continue;
        }
        if (p < jr->end && *p == '}') {
            p++;
            ok = 0;
            break;
        }
        goto out;
    }
out:
    if (!ok && jread_ws(p, jr->end) != jr->end) ok = -1; /* only whitespace after it */
    if (ok) return 0;
    settle(f, str, tags, batch, numv);
    return 1;
}

int repo_flat_of(const server_event_fields *e, repo_flat *f)
{
    const char *str[K_NSTR] = {0}, *tags[2] = {0}, *batch[1] = {0};
    double numv[K_N - K_NSTR];
    f->used = 0;
    f->has_pid = 0;
    for (int i = 0; i < K_N - K_NSTR; i++) numv[i] = NAN;
    if (e->has_ts) numv[K_TS - K_NSTR] = e->ts;
    f->has_rank = e->rank && int_text(e->rank, e->rankn, &f->rank);
    for (size_t i = 0; i < e->n; i++) {
        const server_member *m = &e->m[i];
        if (m->tag) { /* "tags": its strings slurm_step, slurm_task */
            int t = m->kn == 10 && !memcmp(m->k, "slurm_step", 10)   ? 0
                    : m->kn == 10 && !memcmp(m->k, "slurm_task", 10) ? 1
                                                                     : -1;
            if (t >= 0 && m->s && m->n && !(tags[t] = keep_text(f, m->s, m->n))) return 0;
            continue;
        }
        int w = key_of(m->k, m->kn);
        if (w < 0 || w == K_TAGS || w == K_BATCH) continue;
        if (w < K_NSTR) {
            if (m->s && m->n && !(str[w] = keep_text(f, m->s, m->n))) return 0; /* no room */
        } else if (w == K_PID)
            f->has_pid = m->itext && int_text(m->itext, m->in, &f->pid);
        else if (!m->s) /* (ts and rank are not members) */
            numv[w - K_NSTR] = m->v;
    }
    settle(f, str, tags, batch, numv);
    return 1;
}
