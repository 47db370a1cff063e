/* live.c — the live per-job values behind Prometheus /metrics: the latest
 * value of every series that carries a job_id tag, kept while its job runs
 * (dropped at the job's jobscope.end event, or after 10 minutes without an
 * update: a job killed without an end record).  Written from the ingest
 * paths, read by the /metrics handler; one mutex. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server_priv.h"

#define LIVE_MAX 200000         /* bound on tracked series (memory) */

typedef struct live_series {
    struct live_series *next;   /* hash chain */
    char      *key;             /* metric \x01 k=v \x01 ... (sorted tags) */
    char      *metric;
    store_tag *tags;            /* sorted by key; strings owned */
    int        ntags;
    const char *job_id;         /* points into tags */
    double     value;
    int64_t    updated_ms;
} live_series;

/* A word at a time: every ingested point with a job_id is hashed here. */
static uint64_t hash_mem(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}
static uint64_t hash_str(const char *s) { return hash_mem(s, strlen(s)); }

static int tag_cmp(const void *a, const void *b)
{
    return strcmp(((const store_tag *)a)->key, ((const store_tag *)b)->key);
}

static void series_free(live_series *l)
{
    for (int i = 0; i < l->ntags; i++) {
        free((char *)l->tags[i].key);
        free((char *)l->tags[i].value);
    }
    free(l->tags);
    free(l->key);
    free(l->metric);
    free(l);
}

static int rehash(server_priv *p, size_t cap)
{
    live_series **t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < p->live_cap; i++) {
        for (live_series *l = p->live[i], *next; l; l = next) {
            next = l->next;
            size_t h = hash_str(l->key) & (cap - 1);
            l->next = t[h];
            t[h] = l;
        }
    }
    free(p->live);
    p->live = t;
    p->live_cap = cap;
    return 0;
}

void server_live_update(server *s, const store_point *pts, size_t n)
{
    server_priv *p = s->priv;
    int64_t now = server_now_ms();
    /* The fields of one line or event share one tags array: the job, the
     * sorted tags and the tag part of the key are worked out once per run
     * of points with the same tags; per point only the key is hashed. */
    const store_tag *ptags = NULL;
    int pnt = -1;
    const char *job = NULL;
    store_tag sorted[32];
    sbuf tagpart = {0}, k = {0};
    pthread_mutex_lock(&p->live_lock);
    for (size_t i = 0; i < n; i++) {
        const store_point *pt = &pts[i];
        if (pt->tags != ptags || pt->ntags != pnt) {
            ptags = pt->tags;
            pnt = pt->ntags;
            job = NULL;
            for (int t = 0; t < pt->ntags; t++)
                if (!strcmp(pt->tags[t].key, "job_id")) job = pt->tags[t].value;
            if (!job || pt->ntags > 32) { job = NULL; continue; }
            memcpy(sorted, pt->tags, (size_t)pt->ntags * sizeof *sorted);
            qsort(sorted, (size_t)pt->ntags, sizeof *sorted, tag_cmp);
            sbuf_reset(&tagpart);
            for (int t = 0; t < pt->ntags; t++) {
                sbuf_putc(&tagpart, '\x01');
                sbuf_puts(&tagpart, sorted[t].key);
                sbuf_putc(&tagpart, '=');
                sbuf_puts(&tagpart, sorted[t].value);
            }
        }
        if (!job) continue;
        sbuf_reset(&k);
        sbuf_puts(&k, pt->metric);
        sbuf_put(&k, tagpart.p, tagpart.len);
        if (k.oom || tagpart.oom) continue;
        if (!p->live_cap && rehash(p, 1024) < 0) break;
        size_t h = hash_mem(k.p, k.len) & (p->live_cap - 1);
        live_series *l = p->live[h];
        while (l && strcmp(l->key, k.p)) l = l->next;
        if (!l) {
            if (p->live_n >= LIVE_MAX) continue;
            l = calloc(1, sizeof *l);
            if (!l) continue;
            l->key = strdup(k.p);
            l->metric = strdup(pt->metric);
            l->tags = calloc((size_t)pt->ntags, sizeof *l->tags);
            l->ntags = pt->ntags;
            for (int t = 0; t < pt->ntags && l->tags; t++) {
                l->tags[t].key = strdup(sorted[t].key);
                l->tags[t].value = strdup(sorted[t].value);
                if (!strcmp(sorted[t].key, "job_id")) l->job_id = l->tags[t].value;
            }
            l->next = p->live[h];
            p->live[h] = l;
            p->live_n++;
            if (p->live_n > p->live_cap) rehash(p, p->live_cap * 2);
        }
        l->value = pt->value;       /* the last one handed in: batches are in time order */
        l->updated_ms = now;
    }
    pthread_mutex_unlock(&p->live_lock);
    sbuf_free(&k);
    sbuf_free(&tagpart);
}

static void drop_where(server_priv *p, const char *job, int64_t older_than)
{
    for (size_t i = 0; i < p->live_cap; i++) {
        live_series **pp = &p->live[i];
        while (*pp) {
            live_series *l = *pp;
            int drop = job ? (l->job_id && !strcmp(l->job_id, job)) : l->updated_ms < older_than;
            if (drop) {
                *pp = l->next;
                series_free(l);
                p->live_n--;
            } else {
                pp = &l->next;
            }
        }
    }
}

void server_live_end_job(server *s, const char *job_id)
{
    server_priv *p = s->priv;
    pthread_mutex_lock(&p->live_lock);
    drop_where(p, job_id, 0);
    pthread_mutex_unlock(&p->live_lock);
}

void server_live_expire(server *s, int64_t older_than_ms)
{
    server_priv *p = s->priv;
    pthread_mutex_lock(&p->live_lock);
    drop_where(p, NULL, older_than_ms);
    pthread_mutex_unlock(&p->live_lock);
}

void server_live_free(server *s)
{
    server_priv *p = s->priv;
    for (size_t i = 0; i < p->live_cap; i++)
        for (live_series *l = p->live[i], *next; l; l = next) {
            next = l->next;
            series_free(l);
        }
    free(p->live);
    p->live = NULL;
    p->live_cap = p->live_n = 0;
}

/* ---- Prometheus text format ---- */

/* Cumulative fields of jobscope's events: exposed as counters. */
static int is_counter(const char *metric)
{
    static const char *const fields[] = {
        "utime", "stime", "iowait", "bread", "bwrite", "rchar", "wchar", "syscr", "syscw",
        "read_bytes", "write_bytes", "cancelled_write_bytes", "minflt", "majflt", "nvcsw",
        "nivcsw", "bsend", "brecv", "total_procs", "total_processes", "cg_cpu_usage",
        "cg_cpu_user", "cg_cpu_system", "cg_io_rbytes", "cg_io_wbytes", "cg_io_rios",
        "cg_io_wios", "cg_memory_oom_kill", "cg_memory_max_events", "cg_pids_max_events", NULL,
    };
    if (strncmp(metric, "kickstart.inv.online.", 21) || strchr(metric + 21, '.')) return 0;
    for (int i = 0; fields[i]; i++) if (!strcmp(metric + 21, fields[i])) return 1;
    return 0;
}

/* jobscope_<metric with [^a-z0-9_] as _>[_total]; lower case (promtool
 * wants snake_case); a gauge may not end like a histogram/counter part. */
static void prom_name(char *out, size_t len, const char *metric, int counter)
{
    size_t o = (size_t)snprintf(out, len, "jobscope_");
    for (const char *m = metric; *m && o + 16 < len; m++) {
        char c = *m;
        if (isupper((unsigned char)c)) {
            if (m != metric && islower((unsigned char)m[-1]) && out[o - 1] != '_') out[o++] = '_';
            c = (char)tolower((unsigned char)c);
        }
        if (!isalnum((unsigned char)c)) c = '_';
        if (c == '_' && out[o - 1] == '_') continue;
        out[o++] = c;
    }
    while (o > 9 && out[o - 1] == '_') o--;
    out[o] = 0;
    static const char *const bad[] = { "_total", "_count", "_sum", "_bucket", "_info", "_created", NULL };
    if (counter) {
        snprintf(out + o, len - o, "_total");
        return;
    }
    for (int i = 0; bad[i]; i++) {
        size_t bl = strlen(bad[i]);
        if (o >= bl && !strcmp(out + o - bl, bad[i])) {
            snprintf(out + o, len - o, "_value");
            return;
        }
    }
}

static void label_name(sbuf *b, const char *k)
{
    if (isdigit((unsigned char)*k)) sbuf_putc(b, '_');
    for (; *k; k++) sbuf_putc(b, isalnum((unsigned char)*k) ? *k : '_');
}

static void label_value(sbuf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\') sbuf_puts(b, "\\\\");
        else if (*v == '"') sbuf_puts(b, "\\\"");
        else if (*v == '\n') sbuf_puts(b, "\\n");
        else sbuf_putc(b, *v);
    }
}

typedef struct prom_row { char name[256]; live_series *l; int counter; } prom_row;

static int row_cmp(const void *a, const void *b)
{
    const prom_row *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->l->key, y->l->key);
}

void server_live_metrics(server *s, sbuf *out)
{
    server_priv *p = s->priv;
    pthread_mutex_lock(&p->live_lock);
    prom_row *rows = p->live_n ? malloc(p->live_n * sizeof *rows) : NULL;
    size_t n = 0;
    for (size_t i = 0; rows && i < p->live_cap; i++)
        for (live_series *l = p->live[i]; l; l = l->next) {
            rows[n].l = l;
            rows[n].counter = is_counter(l->metric);
            prom_name(rows[n].name, sizeof rows[n].name, l->metric, rows[n].counter);
            n++;
        }
    if (n) qsort(rows, n, sizeof *rows, row_cmp);
    const char *last = "";
    for (size_t i = 0; i < n; i++) {
        live_series *l = rows[i].l;
        if (strcmp(rows[i].name, last)) {
            sbuf_printf(out, "# HELP %s %s of running jobs (jobscope series %s)\n", rows[i].name,
                        rows[i].counter ? "Cumulative value" : "Latest value", l->metric);
            sbuf_printf(out, "# TYPE %s %s\n", rows[i].name, rows[i].counter ? "counter" : "gauge");
            last = rows[i].name;
        }
        sbuf_puts(out, rows[i].name);
        /* Labels must be unique: two keys that sanitise alike keep the first. */
        char seen[32][64];
        int nseen = 0;
        sbuf_putc(out, '{');
        int first = 1;
        for (int t = 0; t < l->ntags; t++) {
            sbuf lb = {0};
            label_name(&lb, l->tags[t].key);
            int dup = 0;
            for (int j = 0; j < nseen; j++) if (lb.p && !strcmp(seen[j], lb.p)) dup = 1;
            if (!lb.p || dup || !strncmp(lb.p, "__", 2)) { sbuf_free(&lb); continue; }
            if (nseen < 32) snprintf(seen[nseen++], sizeof seen[0], "%s", lb.p);
            if (!first) sbuf_putc(out, ',');
            first = 0;
            sbuf_puts(out, lb.p);
            sbuf_puts(out, "=\"");
            label_value(out, l->tags[t].value);
            sbuf_putc(out, '"');
            sbuf_free(&lb);
        }
        sbuf_printf(out, "} %.17g\n", l->value);
    }
    pthread_mutex_unlock(&p->live_lock);
    free(rows);
}
