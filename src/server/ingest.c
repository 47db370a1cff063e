/* ingest.c — jobscope events into points (server_ingest_event,
 * server_ingest_ndjson): the rule of server.h, applied with jansson.
 *
 * Metric names follow the opentsdb sink (src/sink/tsconv.c):
 * "<event>.<field>", characters outside [A-Za-z0-9-_./] become '_'; nested
 * objects of numbers are flattened with '.' ("jobscope.start.rlimits.nofile.soft");
 * custom metrics (event jobscope.metric) are "jobscope.metric.<name>".  The
 * points of a whole NDJSON body go to the store as one durable batch. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server.h"
#include "server/forward.h" /* server_ingest_in_event */
#include "util/grow.h"
#include "util/series_name.h"

#define MAX_EV_TAGS 32

typedef struct ev_batch {
    store_point *pts;
    size_t n, cap;
    char **strs; /* owned metric names and tag strings */
    size_t nstrs, capstrs;
    store_tag **tagsets; /* one array per event */
    size_t ntagsets, captagsets;
    int oom;
} ev_batch;

static char *keep_str(ev_batch *b, char *s)
{
    if (!s) {
        b->oom = 1;
        return NULL;
    }
    b->strs = grow_array(b->strs, &b->capstrs, b->nstrs + 1, sizeof *b->strs, &b->oom);
    if (b->oom) {
        free(s);
        return NULL;
    }
    b->strs[b->nstrs++] = s;
    return s;
}

static void batch_free(ev_batch *b)
{
    for (size_t i = 0; i < b->nstrs; i++) free(b->strs[i]);
    for (size_t i = 0; i < b->ntagsets; i++) free(b->tagsets[i]);
    free(b->strs);
    free(b->tagsets);
    free(b->pts);
    memset(b, 0, sizeof *b);
}

static void add_point(ev_batch *b, const char *metric, store_tag *tags, int ntags, int64_t ts_ms,
                      double v)
{
    if (!isfinite(v)) return;
    char *m = keep_str(b, strdup(metric));
    if (!m) return;
    series_name_clean(m);
    b->pts = grow_array(b->pts, &b->cap, b->n + 1, sizeof *b->pts, &b->oom);
    if (b->oom) return;
    b->pts[b->n++] = (store_point){m, tags, ntags, ts_ms, v};
}

static int has_tag(store_tag *t, int n, const char *k)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].key, k)) return 1;
    return 0;
}

static void add_tag(ev_batch *b, store_tag *t, int *n, const char *k, const char *v)
{
    if (*n >= MAX_EV_TAGS || !v || !*v || has_tag(t, *n, k)) return;
    char *key = keep_str(b, strdup(k));
    char *val = keep_str(b, strndup(v, 256));
    if (!key || !val) return;
    series_name_clean(key);
    t[(*n)++] = (store_tag){key, val};
}

static const char *const annotation_tags[] = {
    "job_id",        "site",       "wf_uuid", "wf_label", "dag_job_id",
    "condor_job_id", "xformation", "task_id", NULL,
};

/* Fields that are tags, not values, or not measurements at all. */
static int skip_value(const char *k)
{
    return !strcmp(k, "ts") || !strcmp(k, "seq") || !strcmp(k, "rank") || !strcmp(k, "id") ||
           !strcmp(k, "tags") || !strcmp(k, "batch");
}

static void flatten(ev_batch *b, const char *prefix, json_t *v, store_tag *tags, int ntags,
                    int64_t ts_ms, int depth)
{
    if (json_is_number(v)) {
        add_point(b, prefix, tags, ntags, ts_ms, json_number_value(v));
        return;
    }
    if (!json_is_object(v) || depth > 3) return;
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        if (!json_is_number(x) && !json_is_object(x)) continue;
        char name[512];
        int n = snprintf(name, sizeof name, "%s.%s", prefix, k);
        if (n <= 0 || (size_t)n >= sizeof name) continue;
        flatten(b, name, x, tags, ntags, ts_ms, depth + 1);
    }
}

/* Adds the points of one event; -1 when it is not a jobscope event.
 * *job_end gets the job id of a jobscope.end event (borrowed from doc). */
static int event_points(ev_batch *b, json_t *d, const char **job_end)
{
    json_t *ev = json_object_get(d, "event");
    if (!json_is_object(d) || !json_is_string(ev) || !json_string_length(ev)) return -1;
    const char *name = json_string_value(ev);
    json_t *t = json_object_get(d, "ts");
    if (json_is_number(t) && !server_valid_ts_ms(json_number_value(t) * 1e3)) return -1;
    int64_t ts_ms =
        json_is_number(t) ? (int64_t)llround(json_number_value(t) * 1e3) : server_now_ms();

    store_tag *tags = calloc(MAX_EV_TAGS, sizeof *tags);
    if (!tags) {
        b->oom = 1;
        return -1;
    }
    b->tagsets =
        grow_array(b->tagsets, &b->captagsets, b->ntagsets + 1, sizeof *b->tagsets, &b->oom);
    if (b->oom) {
        free(tags);
        return -1;
    }
    b->tagsets[b->ntagsets++] = tags;
    int ntags = 0;

    json_t *h = json_object_get(d, "hostname");
    if (json_is_string(h))
        add_tag(b, tags, &ntags, "host", json_string_value(h));
    else if (json_is_string(json_object_get(d, "host")))
        add_tag(b, tags, &ntags, "host", json_string_value(json_object_get(d, "host")));
    for (int i = 0; annotation_tags[i]; i++) {
        json_t *a = json_object_get(d, annotation_tags[i]);
        if (json_is_string(a)) add_tag(b, tags, &ntags, annotation_tags[i], json_string_value(a));
    }
    char num[64];
    json_t *r = json_object_get(d, "rank");
    if (json_is_integer(r)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(r));
        add_tag(b, tags, &ntags, "rank", num);
    }
    json_t *id = json_object_get(d, "id"); /* GPU index */
    if (json_is_integer(id)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(id));
        add_tag(b, tags, &ntags, "gpu", num);
    } else if (json_is_string(id))
        add_tag(b, tags, &ntags, "gpu", json_string_value(id));
    json_t *uuid = json_object_get(d, "uuid");
    if (json_is_string(uuid)) add_tag(b, tags, &ntags, "gpu_uuid", json_string_value(uuid));
    json_t *custom = json_object_get(d, "tags");
    if (json_is_object(custom)) {
        const char *k;
        json_t *x;
        json_object_foreach(custom, k, x)
        {
            if (json_is_string(x))
                add_tag(b, tags, &ntags, k, json_string_value(x));
            else if (json_is_number(x)) {
                snprintf(num, sizeof num, "%.17g", json_number_value(x));
                add_tag(b, tags, &ntags, k, num);
            }
        }
    }

    size_t before = b->n;
    if (!strcmp(name, "jobscope.metric")) {
        json_t *mn = json_object_get(d, "name"), *mv = json_object_get(d, "value");
        if (json_is_string(mn) && json_is_number(mv)) {
            char metric[512];
            snprintf(metric, sizeof metric, "jobscope.metric.%s", json_string_value(mn));
            add_point(b, metric, tags, ntags, ts_ms, json_number_value(mv));
        }
    } else {
        const char *k;
        json_t *x;
        json_object_foreach(d, k, x)
        {
            if (skip_value(k) || (!json_is_number(x) && !json_is_object(x))) continue;
            char metric[512];
            int n = snprintf(metric, sizeof metric, "%s.%s", name, k);
            if (n <= 0 || (size_t)n >= sizeof metric) continue;
            flatten(b, metric, x, tags, ntags, ts_ms, 0);
        }
    }
    if (!strcmp(name, "jobscope.end")) {
        json_t *j = json_object_get(d, "job_id");
        if (json_is_string(j)) *job_end = json_string_value(j);
    }
    return (int)(b->n - before);
}

/* Set while an event's points go through the points hooks: forwarders to
 * event destinations send the event itself instead (forward.h). */
static __thread int in_event;
int server_ingest_in_event(void)
{
    return in_event;
}
static int ingest_marked(server *s, ev_batch *b, char *err, size_t errlen)
{
    in_event = 1;
    int rc = server_ingest_points(s, b->pts, b->n, err, errlen);
    in_event = 0;
    return rc;
}

typedef struct line_ref {
    const char *p;
    size_t len;
    json_t *doc;
    const char *job_end;
} line_ref;

int server_ingest_ndjson(server *s, const char *body, size_t len, size_t *accepted, size_t *failed,
                         char *err, size_t errlen)
{
    ev_batch b = {0};
    line_ref *lines = NULL;
    size_t nlines = 0, caplines = 0;
    size_t ok = 0, bad = 0;
    int oom = 0;
    if (errlen) err[0] = 0;
    for (size_t off = 0; off < len;) {
        const char *p = body + off;
        const char *nl = memchr(p, '\n', len - off);
        size_t l = nl ? (size_t)(nl - p) : len - off;
        off += l + (nl ? 1 : 0);
        size_t a = 0;
        while (a < l && (p[a] == ' ' || p[a] == '\t' || p[a] == '\r')) a++;
        if (a == l) continue;
        json_error_t je;
        json_t *d = json_loadb(p, l, 0, &je);
        const char *job_end = NULL;
        if (!d || event_points(&b, d, &job_end) < 0) {
            if (!bad && errlen) {
                if (!d)
                    snprintf(err, errlen, "line %zu: %s", ok + bad + 1, je.text);
                else
                    snprintf(err, errlen,
                             "line %zu: not a jobscope event (an object with \"event\" and "
                             "a \"ts\" in seconds within the years 0001 to 9999)",
                             ok + bad + 1);
            }
            json_decref(d);
            bad++;
            continue;
        }
        lines = grow_array(lines, &caplines, nlines + 1, sizeof *lines, &oom);
        if (oom) {
            json_decref(d);
            break;
        }
        lines[nlines++] = (line_ref){p, l, d, job_end};
        ok++;
    }
    int rc = 0;
    if (oom || b.oom) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (ingest_marked(s, &b, err, errlen) < 0) {
        rc = -1;
    } else {
        server_stat_add(s, SERVER_STAT_EVENTS, ok);
        for (size_t i = 0; i < nlines; i++) {
            server_events_hooks(s, lines[i].p, lines[i].len);
            if (lines[i].job_end) server_live_end_job(s, lines[i].job_end);
        }
    }
    int npts = (int)b.n;
    for (size_t i = 0; i < nlines; i++) json_decref(lines[i].doc);
    free(lines);
    batch_free(&b);
    if (accepted) *accepted = rc < 0 ? 0 : ok;
    if (failed) *failed = rc < 0 ? ok + bad : bad;
    return rc < 0 ? -1 : npts;
}

int server_ingest_event(server *s, const char *json, size_t len, char *err, size_t errlen)
{
    size_t ok = 0, bad = 0;
    if (memchr(json, '\n', len) && len && json[len - 1] != '\n') {
        snprintf(err, errlen, "one event expected, found several lines");
        return -1;
    }
    int n = server_ingest_ndjson(s, json, len, &ok, &bad, err, errlen);
    if (n < 0) return -1;
    if (bad || !ok) {
        if (!bad) snprintf(err, errlen, "empty event");
        return -1;
    }
    return n;
}
