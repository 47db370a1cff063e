/* event.c — the annotations stamped on every event, and the JSON frame
 * around an event's members (see event.h). */
#include "event.h"
#include "../util/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double flush_time_left(double *deadline, double timeout_s)
{
    double now = now_mono();
    if (*deadline == 0) *deadline = now + timeout_s;
    double left = *deadline - now;
    return left > 0 ? left : 0;
}

/* ---- annotations ------------------------------------------------------ */

/* Workflow annotations, as pegasus-kickstart reads them. */
static const struct {
    const char *field, *var;
} wf_vars[] = {
    {"site", "PEGASUS_SITE"},          {"wf_uuid", "PEGASUS_WF_UUID"},
    {"wf_label", "PEGASUS_WF_LABEL"},  {"dag_job_id", "PEGASUS_DAG_JOB_ID"},
    {"condor_job_id", "CONDOR_JOBID"}, {"xformation", "PEGASUS_XFORMATION"},
    {"task_id", "PEGASUS_TASK_ID"},
};

int annotations_is_key(const char *key)
{
    if (!strcmp(key, "hostname") || !strcmp(key, "job_id") || !strcmp(key, "launch")) return 1;
    for (size_t i = 0; i < sizeof wf_vars / sizeof wf_vars[0]; i++)
        if (!strcmp(key, wf_vars[i].field)) return 1;
    return 0;
}

/* MPI rank: kickstart's order first, then newer launchers. */
static const char *const rank_vars[] = {
    "OMPI_COMM_WORLD_RANK", "ALPS_APP_PE", "PMI_RANK",     "PMI_ID",
    "MPIRUN_RANK",          "PMIX_RANK",   "SLURM_PROCID",
};

/* Batch systems, in order of precedence. */
static const struct {
    const char *system, *var;
} batch_vars[] = {
    {"slurm", "SLURM_JOB_ID"},  {"slurm", "SLURM_JOBID"}, {"pbs", "PBS_JOBID"},
    {"lsf", "LSB_JOBID"},       {"sge", "JOB_ID"},        {"condor", "CONDOR_JOBID"},
    {"cobalt", "COBALT_JOBID"}, {"flux", "FLUX_JOB_ID"},
};

static const char *env_nonempty(const char *var)
{
    const char *v = getenv(var);
    return v && *v ? v : NULL;
}

/* The launcher's own id of an MPI launch, the same for all its ranks: PMIx
 * namespace (Open MPI 4+, PRRTE, Slurm's pmix), Open MPI's jobid, MPICH
 * Hydra's KVS name, else Slurm's JOB.STEP.  It is the "launch" annotation
 * (two launches in one batch job are told apart) and, outside a batch
 * system, the job id "mpi-LAUNCH". */
static int mpi_launch_id(char *out, size_t n)
{
    static const char *const vars[] = {
        "PMIX_NAMESPACE",
        "OMPI_MCA_ess_base_jobid",
        "OMPI_MCA_orte_ess_jobid",
        "PMI_KVSNAME",
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = env_nonempty(vars[i]);
        if (v) {
            snprintf(out, n, "%s", v);
            return 1;
        }
    }
    const char *job = env_nonempty("SLURM_JOB_ID"), *step = env_nonempty("SLURM_STEP_ID");
    if (!job) job = env_nonempty("SLURM_JOBID");
    if (!step) step = env_nonempty("SLURM_STEPID");
    if (job && step) {
        snprintf(out, n, "%s.%s", job, step);
        return 1;
    }
    return 0;
}

/* HTCondor gives a job its ClassAd in $_CONDOR_JOB_AD: the job id is
 * ClusterId.ProcId there (CONDOR_JOBID is Pegasus's own variable). */
static int condor_job_id(char *out, size_t n)
{
    const char *path = env_nonempty("_CONDOR_JOB_AD");
    FILE *f = path ? fopen(path, "re") : NULL;
    if (!f) return 0;
    long cluster = -1, proc = -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "ClusterId = ", 12))
            cluster = strtol(line + 12, NULL, 10);
        else if (!strncmp(line, "ProcId = ", 9))
            proc = strtol(line + 9, NULL, 10);
    }
    fclose(f);
    if (cluster < 0 || proc < 0) return 0;
    snprintf(out, n, "%ld.%ld", cluster, proc);
    return 1;
}

/* One member of the "tags" object, kept apart too (annotations.tag_keys). */
static int add_tag(annotations *a, const char *key, const char *val)
{
    char **k = realloc(a->tag_keys, sizeof *k * (size_t)(a->ntags + 1));
    if (k) a->tag_keys = k;
    char **v = realloc(a->tag_vals, sizeof *v * (size_t)(a->ntags + 1));
    if (v) a->tag_vals = v;
    if (!k || !v) return 0;
    k[a->ntags] = strdup(key);
    v[a->ntags] = val ? strdup(val) : NULL; /* written null, as in the fragment */
    a->ntags++;
    return k[a->ntags - 1] && (!val || v[a->ntags - 1]);
}

int annotations_init(annotations *a, const char *job_id, char *const *tags, int ntags,
                     int null_missing)
{
    memset(a, 0, sizeof *a);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "unknown");
    a->hostname = strdup(host);

    const char *bsys = NULL, *bid = NULL;
    for (size_t i = 0; i < sizeof batch_vars / sizeof batch_vars[0] && !bid; i++)
        if ((bid = env_nonempty(batch_vars[i].var))) bsys = batch_vars[i].system;
    char condor[64];
    if (!bid && condor_job_id(condor, sizeof condor)) bid = condor, bsys = "condor";

    char gen[320];
    if (job_id && *job_id) {
        a->job_id = strdup(job_id);
    } else if (bid && !strcmp(bsys, "slurm") && env_nonempty("SLURM_ARRAY_JOB_ID") &&
               env_nonempty("SLURM_ARRAY_TASK_ID")) {
        /* an array element: Slurm's own name is ARRAY_JOB_ID_TASK (123_4),
         * SLURM_JOB_ID being the element's own number (124) */
        snprintf(gen, sizeof gen, "%s_%s", getenv("SLURM_ARRAY_JOB_ID"),
                 getenv("SLURM_ARRAY_TASK_ID"));
        a->job_id = strdup(gen);
    } else if (bid) {
        const char *task = env_nonempty("SLURM_ARRAY_TASK_ID");
        if (!task) task = env_nonempty("PBS_ARRAYID");
        if (!task) task = env_nonempty("LSB_JOBINDEX");
        if (!task) task = env_nonempty("SGE_TASK_ID");
        if (task && strcmp(task, "undefined") && strcmp(task, "0"))
            snprintf(gen, sizeof gen, "%s_%s", bid, task), a->job_id = strdup(gen);
        else
            a->job_id = strdup(bid);
    } else if (env_nonempty("PEGASUS_DAG_JOB_ID")) {
        a->job_id = strdup(getenv("PEGASUS_DAG_JOB_ID"));
    } else if (mpi_launch_id(gen, sizeof gen)) {
        char mpi[sizeof gen + 8];
        snprintf(mpi, sizeof mpi, "mpi-%s", gen);
        a->job_id = strdup(mpi);
    } else {
        snprintf(gen, sizeof gen, "%s-%ld-%ld", host, (long)getpid(), (long)time(NULL));
        a->job_id = strdup(gen);
    }

    jbuf b;
    jbuf_init(&b, 512);
    jw_str(&b, "hostname", host);
    /* kickstart wrote "" for an unset one; --null-missing: null */
    for (size_t i = 0; i < sizeof wf_vars / sizeof wf_vars[0]; i++) {
        const char *v = env_nonempty(wf_vars[i].var);
        jw_str(&b, wf_vars[i].field, v ? v : null_missing ? NULL : "");
    }
    long rank = 0;
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *v = env_nonempty(rank_vars[i]);
        char *end;
        if (v) {
            errno = 0;
            long r = strtol(v, &end, 10);
            if (*end) continue;
            if (errno || r < 0 || r > 0x7fffffffL) { /* no rank: say so, try the next */
                js_log(1, NULL, "%s='%.40s' is not an MPI rank (0 to 2^31-1): ignored",
                       rank_vars[i], v);
                continue;
            }
            rank = r;
            break;
        }
    }
    jw_i64(&b, "rank", rank);
    a->rank = rank;
    char launch[256];
    if (mpi_launch_id(launch, sizeof launch)) jw_str(&b, "launch", launch);
    jw_str(&b, "job_id", a->job_id);
    if (bid) {
        jw_obj_open(&b, "batch");
        jw_str(&b, "system", bsys);
        jw_str(&b, "job_id", bid);
        jw_obj_close(&b);
    }
    a->tags_at = b.len; /* the last member: MSET_UNTAGGED leaves it out */
    int tags_ok = 1;
    if (ntags > 0) {
        jw_obj_open(&b, "tags");
        for (int i = 0; i < ntags; i++) {
            const char *eq = strchr(tags[i], '=');
            if (!eq) continue;
            int later = 0; /* a key given again: the last value, once */
            for (int j = i + 1; j < ntags && !later; j++)
                later = !strncmp(tags[j], tags[i], (size_t)(eq - tags[i]) + 1);
            if (later) continue;
            char key[256];
            size_t kl = (size_t)(eq - tags[i]);
            if (kl >= sizeof key) kl = sizeof key - 1;
            memcpy(key, tags[i], kl);
            key[kl] = 0;
            jw_str(&b, key, eq + 1);
            tags_ok &= add_tag(a, key, eq + 1);
        }
        jw_obj_close(&b);
    }
    if (b.oom || !tags_ok || !a->hostname || !a->job_id) {
        jbuf_free(&b);
        annotations_free(a);
        return -1;
    }
    a->fragment = b.p;
    a->fragment_len = b.len;
    return 0;
}

void annotations_free(annotations *a)
{
    for (int i = 0; i < a->ntags; i++) {
        free(a->tag_keys[i]);
        free(a->tag_vals[i]);
    }
    free(a->tag_keys);
    free(a->tag_vals);
    free(a->fragment);
    free(a->job_id);
    free(a->hostname);
    memset(a, 0, sizeof *a);
}

/* ---- the frame ----------------------------------------------------- */

void event_write_json(jbuf *b, const annotations *a, const mset *ev, uint64_t seq)
{
    size_t ann_len = ev->frame == MSET_BARE       ? 0
                     : ev->frame == MSET_UNTAGGED ? a->tags_at
                                                  : a->fragment_len;
    jbuf_reset(b);
    jbuf_putc(b, '{');
    b->comma = 0;
    jw_str(b, "event", ev->event);
    jw_fixed(b, "ts", ev->ts, 6);
    if (ann_len) {
        jbuf_putc(b, ',');
        jbuf_put(b, a->fragment, ann_len);
    }
    mset_write_json(b, ev);
    jw_u64(b, "seq", seq);
    jw_obj_close(b);
}

/* The number after key in [p, end) (first tried at hint): where it begins,
 * and in *vend where it ends (at the ',' or '}' after it); NULL when key is
 * not there or is not followed by a number. */
static const char *number_after(const char *p, const char *end, const char *key, const char *hint,
                                const char **vend)
{
    size_t kn = strlen(key);
    /* where the line's shape puts it, else searched for */
    const char *k = hint >= p && hint <= end && (size_t)(end - hint) >= kn && !memcmp(hint, key, kn)
                        ? hint
                        : memmem(p, (size_t)(end - p), key, kn);
    if (!k) return NULL;
    const char *v = k + kn, *e = v;
    while (e < end && (*e == '-' || *e == '.' || (*e >= '0' && *e <= '9'))) e++;
    if (e == v || e == end || (*e != ',' && *e != '}')) return NULL;
    *vend = e;
    return v;
}

int event_restamp_json(jbuf *b, jbuf *tmp, const annotations *a, const mset *ev, uint64_t seq,
                       size_t *el_hint)
{
    const mvalue *el = &ev->v[M_ELAPSED];
    const metric_def *d = &metric_catalogue[M_ELAPSED];
    if (b->oom || b->len < 2 || b->p[b->len - 1] != '}' || !el->set || el->null || el->missing ||
        d->store != MS_F64 || !isfinite(ev->ts) || !isfinite(el->d))
        return -1;
    /* every member before elapsed is a name and a string or a number: the
     * first ,"elapsed": after the annotations is its (a '"' inside a
     * string is escaped, so ," is never inside one) */
    int i = 0;
    for (; i < ev->nitems && ev->items[i].kind != MI_VALUE; i++)
        if (ev->items[i].kind != MI_STR && ev->items[i].kind != MI_I64) return -1;
    if (i == ev->nitems || ev->items[i].id != M_ELAPSED) return -1;
    size_t ann_len = ev->frame == MSET_BARE       ? 0
                     : ev->frame == MSET_UNTAGGED ? a->tags_at
                                                  : a->fragment_len;
    const char *p = b->p, *end = p + b->len, *ts_end, *el_end;
    /* {"event":"NAME","ts":  (NAME as it is when it needs no escape) */
    const char *ts_at =
        number_after(p, end, ",\"ts\":", ev->event ? p + 11 + strlen(ev->event) : p, &ts_end);
    if (!ts_at || (size_t)(end - ts_end) < ann_len + 1) return -1;
    const char *from = ts_end + (ann_len ? ann_len + 1 : 0);
    /* "elapsed" is where it was in the line before (the labels before it
     * stand), or first after the annotations */
    const char *h = *el_hint < (size_t)(end - from) ? from + *el_hint : from;
    const char *el_at = number_after(from, end, ",\"elapsed\":", h, &el_end);
    if (el_at) *el_hint = (size_t)(el_at - 11 - from);
    /* the line ends ,"seq":DIGITS} */
    const char *q = end - 1;
    while (q > p && q[-1] >= '0' && q[-1] <= '9') q--;
    static const char seq_key[] = ",\"seq\":";
    size_t sk = sizeof seq_key - 1;
    if (!el_at || q == end - 1 || (size_t)(q - el_end) < sk || memcmp(q - sk, seq_key, sk))
        return -1;
    char t[64];
    jbuf_reset(tmp);
    jbuf_put(tmp, p, (size_t)(ts_at - p));
    jbuf_put(tmp, t, fmt_fixed(t, ev->ts, 6));
    jbuf_put(tmp, ts_end, (size_t)(el_at - ts_end));
    jbuf_put(tmp, t, fmt_fixed(t, el->d, d->decimals));
    jbuf_put(tmp, el_end, (size_t)(q - el_end));
    jbuf_put(tmp, t, fmt_u64(t, seq));
    jbuf_putc(tmp, '}');
    if (tmp->oom) return -1;
    jbuf x = *b;
    *b = *tmp;
    *tmp = x;
    return 0;
}
