/* repo_module.c — plugs the events repository (repo.h) and the dashboard
 * into `jobscope serve` (server.h): an event hook stores every ingested
 * event, and these routes answer (docs/views.md "API"):
 *
 *   GET /api/jobs?q=&wf=&host=&user=&job=&xformation=&exe=&state=&warning=&since=&until=
 *                 &sort=&order=&limit=&offset=    search, server-side sort, pages; ETag
 *   GET /api/jobs/ID[?wf=&since=TS&max_points=N]   record + series (since: only newer points)
 *   GET /api/jobs/ID/events[?wf=]                  the job's raw events
 *   GET /api/workflows, GET /api/workflows/ID
 *   GET /api/events?wf=&job=&host=&name=&since=&until=&after=&limit=   raw, paged by id
 *   GET /api/aggregate?by=wf|xformation|host|exe|user&buckets=&top=&(job filters)
 *   GET /api/export?after=&limit=&(job filters)    raw events of a page of jobs (stats)
 *   GET /api/nodes
 * An unknown parameter or a value that does not parse is a 400.
 *   GET /  and  GET /ui/NAME                      the dashboard (embedded assets)
 *
 * The database is repo.sqlite in the store's directory. */
#include "repo/repo.h"
#include "report/jobdata.h"
#include "report/web_assets.h"
#include "server/server.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_event(server *s, const char *json, size_t len, const server_event_fields *f,
                     void *arg)
{
    (void)s;
    repo_add_fields(arg, json, len, f);
}

static void reply_json(server_response *w, int status, json_t *o)
{
    char *body = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(16));
    json_decref(o);
    if (!body) {
        server_reply_error(w, 500, "out of memory", "");
        return;
    }
    server_reply_take(w, status, "application/json", body, strlen(body));
    server_add_header(w, "Cache-Control", "no-store");
}

/* ---- parameters: every route names the ones it takes; anything else,
 * and any value that does not parse, is a 400 with the reason ---- */

/* 0, or 400 naming the first parameter not in `known`. */
static int known_params(const server_request *r, server_response *w, const char *const *known)
{
    const char *name;
    for (int i = 0; (name = server_param_name(r, i)); i++) {
        int ok = 0;
        for (const char *const *k = known; *k && !ok; k++) ok = !strcmp(name, *k);
        if (!ok) {
            char list[512];
            size_t n = 0;
            for (const char *const *k = known; *k && n < sizeof list; k++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? " " : "", *k);
            char msg[256];
            snprintf(msg, sizeof msg, "unknown parameter '%.80s'", name);
            server_reply_error(w, 400, msg, n ? list : "this request takes no parameter");
            return -1;
        }
    }
    return 0;
}

static const char *param(const server_request *r, const char *name)
{
    const char *v = server_param(r, name);
    return v && *v ? v : NULL;
}

/* A number (absent or empty: *out = dflt); -1 after a 400. */
static int param_num(const server_request *r, server_response *w, const char *name, double dflt,
                     double *out)
{
    const char *v = param(r, name);
    *out = dflt;
    if (!v) return 0;
    char *e;
    double d = strtod(v, &e);
    if (*e || e == v || !isfinite(d)) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be a number", name);
        server_reply_error(w, 400, msg, v);
        return -1;
    }
    *out = d;
    return 0;
}

/* An integer in [min, max] (absent or empty: dflt); -1 after a 400. */
static int param_int(const server_request *r, server_response *w, const char *name, long long min,
                     long long max, long long dflt, long long *out)
{
    const char *v = param(r, name);
    *out = dflt;
    if (!v) return 0;
    char *e;
    errno = 0;
    long long x = strtoll(v, &e, 10);
    if (*e || e == v || errno || x < min || x > max) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be an integer from %lld to %lld", name, min, max);
        server_reply_error(w, 400, msg, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* One of `allowed` (absent: NULL); -1 after a 400. */
static int param_enum(const server_request *r, server_response *w, const char *name,
                      const char *const *allowed, const char **out)
{
    const char *v = param(r, name);
    *out = v;
    if (!v) return 0;
    for (const char *const *a = allowed; *a; a++)
        if (!strcmp(v, *a)) return 0;
    char list[256], msg[300];
    size_t n = 0;
    for (const char *const *a = allowed; *a && n < sizeof list; a++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? " " : "", *a);
    snprintf(msg, sizeof msg, "%s must be one of: %s", name, list);
    server_reply_error(w, 400, msg, v);
    return -1;
}

#define JOB_FILTER_PARAMS                                                                          \
    "q", "wf", "host", "user", "job", "xformation", "exe", "state", "warning", "since", "until"

/* The job filters shared by /api/jobs, /api/aggregate and /api/export. */
static int job_filter(const server_request *r, server_response *w, repo_job_filter *f)
{
    *f = (repo_job_filter){.q = param(r, "q"),
                           .wf = param(r, "wf"),
                           .host = param(r, "host"),
                           .user = param(r, "user"),
                           .job = param(r, "job"),
                           .xformation = param(r, "xformation"),
                           .exe = param(r, "exe"),
                           .warning = param(r, "warning")};
    if (param_enum(r, w, "state", repo_states, &f->state)) return -1;
    if (param_num(r, w, "since", 0, &f->since)) return -1;
    return param_num(r, w, "until", 0, &f->until);
}

/* The lists' ETag: the repository's version.  A tab polling an unchanged
 * list gets 304 and no body. */
static int not_modified(const server_request *r, server_response *w, uint64_t version)
{
    char etag[48];
    snprintf(etag, sizeof etag, "\"r%llu\"", (unsigned long long)version);
    const char *inm = server_header(r, "If-None-Match");
    if (inm && !strcmp(inm, etag)) {
        server_reply(w, 304, "application/json", "", 0);
        server_add_header(w, "ETag", etag);
        return 1;
    }
    return 0;
}

static void h_jobs(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    static const char *const known[] = {JOB_FILTER_PARAMS, "sort",   "order",
                                        "limit",           "offset", NULL};
    static const char *const orders[] = {"asc", "desc", NULL};
    repo_job_filter f;
    const char *order;
    long long limit, offset;
    if (known_params(r, w, known) || job_filter(r, w, &f) ||
        param_enum(r, w, "sort", repo_sort_keys, &f.sort) ||
        param_enum(r, w, "order", orders, &order) ||
        param_int(r, w, "limit", 1, REPO_MAX_LIMIT, 100, &limit) ||
        param_int(r, w, "offset", 0, 1000000000, 0, &offset))
        return;
    f.desc = !order || !strcmp(order, "desc");
    f.limit = (long)limit;
    f.offset = (long)offset;
    if (not_modified(r, w, repo_version(arg))) return;
    json_t *o = repo_jobs(arg, &f);
    char etag[48];
    snprintf(etag, sizeof etag, "\"r%llu\"",
             (unsigned long long)json_integer_value(json_object_get(o, "version")));
    reply_json(w, 200, o);
    server_add_header(w, "ETag", etag);
}

static void h_aggregate(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    static const char *const known[] = {JOB_FILTER_PARAMS, "by", "buckets", "top", NULL};
    static const char *const bys[] = {"wf", "xformation", "host", "exe", "user", NULL};
    repo_job_filter f;
    const char *by;
    long long buckets, top;
    if (known_params(r, w, known) || job_filter(r, w, &f) || param_enum(r, w, "by", bys, &by) ||
        param_int(r, w, "buckets", 1, 1000, 120, &buckets) ||
        param_int(r, w, "top", 1, 50, 8, &top))
        return;
    if (not_modified(r, w, repo_version(arg))) return;
    json_t *o = repo_aggregate(arg, &f, by ? by : "wf", (int)buckets, (int)top);
    if (!o) {
        server_reply_error(w, 500, "aggregate failed", "");
        return;
    }
    reply_json(w, 200, o);
}

static void h_export(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    static const char *const known[] = {JOB_FILTER_PARAMS, "after", "limit", NULL};
    repo_job_filter f;
    long long after, limit;
    if (known_params(r, w, known) || job_filter(r, w, &f) ||
        param_int(r, w, "after", 0, 4000000000000000000LL, 0, &after) ||
        param_int(r, w, "limit", 1, 2000, 200, &limit))
        return;
    char *body = repo_export(arg, &f, after, (long)limit);
    if (!body) {
        server_reply_error(w, 500, "out of memory", "");
        return;
    }
    server_reply_take(w, 200, "application/x-ndjson", body, strlen(body));
    server_add_header(w, "Cache-Control", "no-store");
}

/* Keeps only the points with ts > since of a job view (live updates). */
static void slice_since(json_t *job, double since)
{
    json_t *series = json_object_get(job, "series");
    json_t *ts = json_object_get(series, "ts");
    size_t first = 0, n = json_array_size(ts);
    while (first < n && json_number_value(json_array_get(ts, first)) <= since) first++;
    const char *k;
    json_t *a;
    json_object_foreach(series, k, a)
    {
        json_t *b = json_array();
        for (size_t i = first; i < json_array_size(a); i++)
            json_array_append(b, json_array_get(a, i));
        json_object_set_new(series, k, b);
    }
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(job, "extra"), i, x)
    {
        json_t *t = json_object_get(x, "ts"), *v = json_object_get(x, "val");
        json_t *t2 = json_array(), *v2 = json_array();
        for (size_t k2 = 0; k2 < json_array_size(t); k2++)
            if (json_number_value(json_array_get(t, k2)) > since) {
                json_array_append(t2, json_array_get(t, k2));
                json_array_append(v2, json_array_get(v, k2));
            }
        json_object_set_new(x, "ts", t2);
        json_object_set_new(x, "val", v2);
    }
    json_t *evs = json_array();
    json_array_foreach(json_object_get(job, "events"), i,
                       x) if (json_number_value(json_object_get(x, "ts")) > since)
        json_array_append(evs, x);
    json_object_set_new(job, "events", evs);
    json_object_set_new(job, "append", json_true());
}

static void h_job(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    const char *rest = r->path + strlen("/api/jobs/");
    char id[512];
    snprintf(id, sizeof id, "%s", rest);
    int raw = 0;
    size_t n = strlen(id);
    if (n > 7 && !strcmp(id + n - 7, "/events")) {
        id[n - 7] = 0;
        raw = 1;
    }
    if (!id[0]) {
        server_reply_error(w, 404, "no job id", "");
        return;
    }
    static const char *const known[] = {"wf", "run", "since", "max_points", NULL};
    static const char *const known_raw[] = {"wf", "run", NULL};
    double since;
    long long maxp;
    if (known_params(r, w, raw ? known_raw : known) || param_num(r, w, "since", 0, &since) ||
        param_int(r, w, "max_points", 0, 10000000, 0, &maxp))
        return;
    const char *wf = param(r, "wf"), *run = param(r, "run");
    if (raw) {
        json_t *evs = run ? repo_run_events(arg, id, wf, run) : repo_job_events(arg, id, wf, 0);
        if (!evs) {
            server_reply_error(w, 404, "no such job", id);
            return;
        }
        reply_json(w, 200, json_pack("{s:s,s:o}", "job_id", id, "events", evs));
        return;
    }
    json_t *row = repo_job_row(arg, id, wf);
    if (!row) {
        server_reply_error(w, 404, "no such job", id);
        return;
    }
    const char *state = json_string_value(json_object_get(row, "state"));
    if (!state) state = "unknown";
    /* one run of a job of several (?run=KEY), or a job of several runs as a
     * whole: the full page even with since (a whole job's series are summed
     * anew each time; the dashboard replaces its page when "append" is not
     * set) */
    json_t *page = NULL;
    if (run ||
        (repo_job_nruns(arg, id, wf) > 1 && (since > 0 || maxp > 0 || strcmp(state, "done"))))
        page = repo_job_page(arg, id, wf, run, 0, maxp > 0 ? (size_t)maxp : REPO_VIEW_POINTS);
    if (run && !page) {
        json_decref(row);
        server_reply_error(w, 404, "no such run", run);
        return;
    }
    if (page) {
        json_object_set_new(page, "state",
                            json_string(run ? (json_is_true(json_object_get(
                                                   json_object_get(page, "summary"), "finished"))
                                                   ? "done"
                                                   : "running")
                                            : state));
        json_object_set_new(page, "record", row);
        reply_json(w, 200, page);
        return;
    }
    if (since <= 0 && maxp <= 0) {
        char *view = repo_job_view(arg, id, wf); /* a finished job: computed at its end */
        if (view && view[0] == '{') {
            char *rj = json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(16));
            size_t vl = strlen(view), rl = rj ? strlen(rj) : 2;
            char *body = malloc(vl + rl + 64);
            if (body) {
                int hl = snprintf(body, rl + 64, "{\"record\":%s,\"state\":\"done\"%s",
                                  rj ? rj : "{}", view[1] == '}' ? "" : ",");
                memcpy(body + hl, view + 1, vl); /* the rest of the object, its NUL too */
                server_reply_take(w, 200, "application/json", body, (size_t)hl + vl - 1);
                server_add_header(w, "Cache-Control", "no-store");
            }
            free(rj);
            free(view);
            json_decref(row);
            if (!body) server_reply_error(w, 500, "out of memory", "");
            return;
        }
        free(view);
    }
    json_t *evs = repo_job_events(arg, id, wf, since > 0 ? since : 0);
    jobdata j;
    jobdata_init(&j);
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) jobdata_add(&j, ev);
    json_decref(evs);
    jobdata_finish(&j);
    json_t *o = jobdata_json(&j, since > 0 ? 0 : (maxp > 0 ? (size_t)maxp : 20000));
    jobdata_free(&j);
    json_object_set_new(o, "state", json_string(state));
    if (since > 0) {
        /* only the newer events were read: the characteristics come from the
         * job's row, the client keeps the rest */
        slice_since(o, since);
        json_t *up = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(row, k, v) if (!json_is_null(v) && strcmp(k, "warnings") &&
                                           strcmp(k, "state") && strcmp(k, "wf"))
            json_object_set(up, k, v);
        json_object_set_new(up, "finished", json_boolean(!strcmp(state, "done")));
        json_object_set_new(o, "summary_update", up);
        json_object_del(o, "summary");
        json_object_del(o, "warnings");
        json_object_del(o, "assessment"); /* of the new points alone: no assessment */
        json_object_del(o, "start");
        json_object_del(o, "tags");
        if (json_is_null(json_object_get(o, "end"))) json_object_del(o, "end");
    }
    json_object_set_new(o, "record", row);
    reply_json(w, 200, o);
}

static const char *const no_params[] = {NULL};

static void h_workflows(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    if (known_params(r, w, no_params)) return;
    reply_json(w, 200, repo_workflows(arg));
}

static void h_workflow(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    const char *id = r->path + strlen("/api/workflows/");
    if (known_params(r, w, no_params)) return;
    json_t *o = *id ? repo_workflow(arg, id) : NULL;
    if (!o) {
        server_reply_error(w, 404, "no such workflow", id);
        return;
    }
    reply_json(w, 200, o);
}

static void h_events(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    static const char *const known[] = {"wf",    "job",   "host",  "name", "since",
                                        "until", "after", "limit", NULL};
    repo_event_filter f = {.wf = param(r, "wf"),
                           .job = param(r, "job"),
                           .host = param(r, "host"),
                           .name = param(r, "name")};
    long long after, limit;
    if (known_params(r, w, known) || param_num(r, w, "since", 0, &f.since) ||
        param_num(r, w, "until", 0, &f.until) ||
        param_int(r, w, "after", 0, 4000000000000000000LL, 0, &after) ||
        param_int(r, w, "limit", 1, 10000, 500, &limit))
        return;
    f.after = after;
    f.limit = (long)limit;
    reply_json(w, 200, repo_events(arg, &f));
}

static void h_nodes(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    if (known_params(r, w, no_params)) return;
    reply_json(w, 200, repo_nodes(arg));
}

static void h_asset(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    (void)arg;
    const char *name = !strcmp(r->path, "/") ? "index.html" : r->path + strlen("/ui/");
    const web_asset *a = web_asset_find(name);
    if (!a) {
        server_reply_error(w, 404, "no such page", r->path);
        return;
    }
    server_reply(w, 200, a->type, (const char *)a->data, a->len);
    server_add_header(w, "Cache-Control", "no-cache");
}

static void h_favicon(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    (void)r;
    (void)arg;
    server_reply(w, 204, "image/x-icon", "", 0);
}

static int repo_init(server *s, void **state, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/repo.sqlite", s->cfg.store_dir);
    repo *the_repo = repo_open(path, err, errlen);
    if (!the_repo) return -1;
    *state = the_repo;
    repo_set_retention(the_repo, s->cfg.retention_s);
    server_on_event(s, on_event, the_repo);
    server_route(s, "GET", "/api/jobs", h_jobs, the_repo);
    server_route(s, "GET", "/api/jobs/*", h_job, the_repo);
    server_route(s, "GET", "/api/workflows", h_workflows, the_repo);
    server_route(s, "GET", "/api/workflows/*", h_workflow, the_repo);
    server_route(s, "GET", "/api/events", h_events, the_repo);
    server_route(s, "GET", "/api/aggregate", h_aggregate, the_repo);
    server_route(s, "GET", "/api/export", h_export, the_repo);
    server_route(s, "GET", "/api/nodes", h_nodes, the_repo);
    server_route(s, "GET", "/", h_asset, NULL);
    server_route(s, "GET", "/ui/*", h_asset, NULL);
    server_route(s, "GET", "/favicon.ico", h_favicon, NULL);
    return 0;
}

static void repo_fini(server *s, void *state)
{
    (void)s;
    repo_close(state);
}

SERVER_MODULE(repo_module, "repo", repo_init, repo_fini)
