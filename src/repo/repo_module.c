/* repo_module.c — plugs the events repository (repo.h) and the dashboard
 * into `jobscope serve` (server.h): an event hook stores every ingested
 * event, and these routes answer (docs/views.md "API"):
 *
 *   GET /api/jobs?wf=&host=&state=running|done|failed&exe=&user=&since=&sort=&order=&limit=&offset=
 *   GET /api/jobs/ID[?wf=&since=TS&max_points=N]   record + series (since: only newer points)
 *   GET /api/jobs/ID/events[?wf=]                  the job's raw events
 *   GET /api/workflows, GET /api/workflows/ID
 *   GET /api/events?wf=&job=&host=&name=&since=&until=&after=&limit=   raw, paged by id
 *   GET /api/nodes
 *   GET /  and  GET /ui/NAME                      the dashboard (embedded assets)
 *
 * The database is repo.sqlite in the store's directory. */
#include "repo/repo.h"
#include "report/jobdata.h"
#include "report/web_assets.h"
#include "server/server.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_event(server *s, const char *json, size_t len, void *arg)
{
    (void)s;
    repo_add_json(arg, json, len);
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

static double param_num(const server_request *r, const char *name)
{
    const char *v = server_param(r, name);
    if (!v || !*v) return 0;
    char *e;
    double d = strtod(v, &e);
    return *e ? NAN : d;
}

static const char *param(const server_request *r, const char *name)
{
    const char *v = server_param(r, name);
    return v && *v ? v : NULL;
}

static void h_jobs(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    repo_job_filter f = {.wf = param(r, "wf"),
                         .host = param(r, "host"),
                         .state = param(r, "state"),
                         .exe = param(r, "exe"),
                         .user = param(r, "user"),
                         .job = param(r, "job"),
                         .sort = param(r, "sort"),
                         .since = param_num(r, "since"),
                         .limit = (long)param_num(r, "limit"),
                         .offset = (long)param_num(r, "offset")};
    const char *order = param(r, "order");
    f.desc = order ? !strcmp(order, "desc") : (f.sort && strcmp(f.sort, "start") != 0);
    if (isnan(f.since) || f.limit < 0 || f.offset < 0) {
        server_reply_error(w, 400, "bad number in since, limit or offset", "");
        return;
    }
    if (f.state && strcmp(f.state, "running") && strcmp(f.state, "done") &&
        strcmp(f.state, "failed")) {
        server_reply_error(w, 400, "state must be running, done or failed", f.state);
        return;
    }
    reply_json(w, 200, repo_jobs(arg, &f));
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
    double since = param_num(r, "since"), maxp = param_num(r, "max_points");
    if (isnan(since) || isnan(maxp) || maxp < 0) {
        server_reply_error(w, 400, "bad number in since or max_points", "");
        return;
    }
    const char *wf = param(r, "wf");
    if (raw) {
        json_t *evs = repo_job_events(arg, id, wf, 0);
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
        json_object_del(o, "start");
        json_object_del(o, "tags");
        if (json_is_null(json_object_get(o, "end"))) json_object_del(o, "end");
    }
    json_object_set_new(o, "record", row);
    reply_json(w, 200, o);
}

static void h_workflows(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    (void)r;
    reply_json(w, 200, repo_workflows(arg));
}

static void h_workflow(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    const char *id = r->path + strlen("/api/workflows/");
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
    repo_event_filter f = {.wf = param(r, "wf"),
                           .job = param(r, "job"),
                           .host = param(r, "host"),
                           .name = param(r, "name"),
                           .since = param_num(r, "since"),
                           .until = param_num(r, "until"),
                           .after = (long long)param_num(r, "after"),
                           .limit = (long)param_num(r, "limit")};
    if (isnan(f.since) || isnan(f.until) || f.limit < 0) {
        server_reply_error(w, 400, "bad number in since, until, after or limit", "");
        return;
    }
    reply_json(w, 200, repo_events(arg, &f));
}

static void h_nodes(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)s;
    (void)r;
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
