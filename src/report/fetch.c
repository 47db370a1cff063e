/* fetch.c — reads jobs back from a running `jobscope serve` for `jobscope
 * stats --server URL`, `report --server URL JOBID` and `summary JOB`: the
 * job list (GET /api/jobs), a job's page (GET /api/jobs/ID) and raw events
 * (GET /api/jobs/ID/events, fed to jobdata exactly as if they came from an
 * event file), every job's events a page of jobs at a time (GET
 * /api/export).  URL: http://HOST:PORT, or unix:PATH for the local
 * server's socket. */
#include "report/stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <jansson.h>

typedef struct mbuf {
    char *p;
    size_t n;
} mbuf;

static size_t on_data(char *d, size_t sz, size_t nm, void *arg)
{
    mbuf *b = arg;
    size_t n = sz * nm;
    char *p = realloc(b->p, b->n + n + 1);
    if (!p) return 0;
    memcpy(p + b->n, d, n);
    b->p = p;
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

/* The body of a GET (malloc'ed, NUL-terminated, its length in *len), or
 * NULL: *status the HTTP status, 0 when no answer; one line on stderr
 * unless it is a 404 and quiet404. */
static char *get_text(CURL *c, const char *url, long *status, int quiet404, size_t *len)
{
    mbuf b = {0};
    *status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        fprintf(stderr, "jobscope: %s: %s\n", url, curl_easy_strerror(rc));
        free(b.p);
        return NULL;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (*status != 200) {
        if (!(quiet404 && *status == 404))
            fprintf(stderr, "jobscope: %s: HTTP %ld %.200s\n", url, *status, b.p ? b.p : "");
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p ? b.p : strdup("");
}

static json_t *get_json_status(CURL *c, const char *url, long *status, int quiet404)
{
    size_t n = 0;
    char *text = get_text(c, url, status, quiet404, &n);
    if (!text) return NULL;
    json_error_t je;
    json_t *j = json_loadb(text, n, 0, &je);
    if (!j) fprintf(stderr, "jobscope: %s: answer is not JSON: %s\n", url, je.text);
    free(text);
    return j;
}

static json_t *get_json(CURL *c, const char *url)
{
    long st = 0;
    return get_json_status(c, url, &st, 0);
}

/* A handle for server (http://HOST:PORT or unix:PATH) and the base of its
 * URLs in base (no trailing slash). */
static CURL *open_server(const char *server, char *base, size_t len)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *c = curl_easy_init();
    if (!c) return NULL;
    if (!strncmp(server, "unix:", 5)) {
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, server + 5);
        snprintf(base, len, "http://localhost");
    } else {
        snprintf(base, len, "%s", server);
    }
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/') base[--bl] = 0;
    return c;
}

/* GET base + path with id escaped into its %s; the token (NULL: none) as
 * a bearer.  404 is quiet. */
static json_t *get_one(const char *server, const char *token, const char *fmt, const char *id,
                       long *status)
{
    char base[1024], url[2048], auth[600];
    CURL *c = open_server(server, base, sizeof base);
    if (!c) return NULL;
    struct curl_slist *hdr = NULL;
    if (token && *token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %.500s", token);
        hdr = curl_slist_append(NULL, auth);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    }
    char *esc = curl_easy_escape(c, id, 0);
    int n = snprintf(url, sizeof url, "%s", base);
    snprintf(url + n, sizeof url - (size_t)n, fmt, esc ? esc : id);
    curl_free(esc);
    *status = 0;
    json_t *j = get_json_status(c, url, status, 1);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    return j;
}

json_t *report_fetch_job(const char *server, const char *token, const char *id, long *status)
{
    return get_one(server, token, "/api/jobs/%s", id, status);
}

json_t *report_fetch_list(const char *server, const char *token, const char *q)
{
    long status;
    json_t *j = get_one(server, token, "/api/jobs?q=%s&limit=20", q, &status);
    if (!j && status == 404) fprintf(stderr, "jobscope: %s: no job list there\n", server);
    return j;
}

json_t *report_fetch_events(const char *server, const char *token, const char *id, long *status)
{
    json_t *o = get_one(server, token, "/api/jobs/%s/events", id, status);
    json_t *a = json_incref(json_object_get(o, "events"));
    json_decref(o);
    if (!json_is_array(a) && o) {
        json_decref(a);
        fprintf(stderr, "jobscope: %s: no events in the answer for job %s\n", server, id);
        return NULL;
    }
    return a;
}

static int one_job(CURL *c, const char *base, const char *id, void (*cb)(void *arg, jobdata *j),
                   void *arg)
{
    char *esc = curl_easy_escape(c, id, 0);
    char url[2048];
    snprintf(url, sizeof url, "%s/api/jobs/%s/events", base, esc ? esc : id);
    curl_free(esc);
    json_t *evs = get_json(c, url);
    json_t *arr = json_is_array(evs) ? evs : json_object_get(evs, "events");
    if (!json_is_array(arr)) {
        json_decref(evs);
        return -1;
    }
    jobdata j;
    jobdata_init(&j);
    size_t i;
    json_t *ev;
    json_array_foreach(arr, i, ev) jobdata_add(&j, ev);
    jobdata_finish(&j);
    cb(arg, &j);
    jobdata_free(&j);
    json_decref(evs);
    return 0;
}

/* One page of GET /api/export, fetched on a thread of its own while the
 * previous page is read: the server's work and the client's overlap. */
typedef struct page_fetch {
    CURL *c;
    char url[1200];
    char *text;
    size_t len;
    long status;
    pthread_t thread;
} page_fetch;

static void *fetch_page(void *arg)
{
    page_fetch *p = arg;
    p->text = get_text(p->c, p->url, &p->status, 1, &p->len);
    return NULL;
}

/* The "next" of an export page, from its last line: the row id to
 * continue after, or -1 for the last page. */
static long long next_of(const char *text, size_t len)
{
    static const char key[] = "{\"jobscope.export.next\":";
    const char *k = NULL;
    for (size_t i = len > 64 ? len - 64 : 0; i + sizeof key - 1 < len; i++)
        if (!memcmp(text + i, key, sizeof key - 1)) k = text + i + sizeof key - 1;
    if (!k || !strncmp(k, "null", 4)) return -1;
    return strtoll(k, NULL, 10);
}

/* Every job through GET /api/export, a page of jobs and their raw events at
 * a time: one request per 500 jobs instead of one per job, the next page
 * on its way while this one is read.  1 when the server has no export (an
 * older one), 0 done, -1 failed. */
static int export_jobs(CURL *c, const char *base, void (*cb)(void *arg, jobdata *j), void *arg)
{
    page_fetch cur = {.c = c}, next = {.c = curl_easy_duphandle(c)};
    if (!next.c) return -1;
    snprintf(cur.url, sizeof cur.url, "%s/api/export?limit=500&after=0", base);
    fetch_page(&cur);
    int rc = 0, first = 1;
    while (rc == 0) {
        if (!cur.text) {
            rc = cur.status == 404 && first ? 1 : -1;
            break;
        }
        first = 0;
        long long after = next_of(cur.text, cur.len);
        int more = after >= 0;
        if (more) {
            snprintf(next.url, sizeof next.url, "%s/api/export?limit=500&after=%lld", base, after);
            if (pthread_create(&next.thread, NULL, fetch_page, &next)) fetch_page(&next), more = 2;
        }
        /* line by line, each event freed once read, as from a file */
        jobdata j;
        int open = 0;
        for (char *line = cur.text, *nl; line < cur.text + cur.len; line = nl + 1) {
            nl = memchr(line, '\n', (size_t)(cur.text + cur.len - line));
            if (!nl) nl = cur.text + cur.len;
            if (nl == line) continue;
            if (!strncmp(line, "{\"jobscope.export.", 18)) {
                if (open) {
                    jobdata_finish(&j);
                    cb(arg, &j);
                    jobdata_free(&j);
                    open = 0;
                }
                if (!strncmp(line + 18, "job\"", 4)) jobdata_init(&j), open = 1;
                continue;
            }
            json_error_t je;
            json_t *ev = json_loadb(line, (size_t)(nl - line), 0, &je);
            if (ev && open) jobdata_add(&j, ev);
            json_decref(ev);
        }
        if (open) {
            jobdata_finish(&j);
            cb(arg, &j);
            jobdata_free(&j);
        }
        free(cur.text);
        cur.text = NULL;
        if (!more) break;
        if (more == 1) pthread_join(next.thread, NULL);
        snprintf(cur.url, sizeof cur.url, "%s", next.url);
        cur.text = next.text, cur.len = next.len, cur.status = next.status;
        next.text = NULL;
    }
    free(cur.text);
    curl_easy_cleanup(next.c);
    return rc;
}

int report_fetch_jobs(const char *base_url, const char *only_job, void (*cb)(void *arg, jobdata *j),
                      void *arg)
{
    char base[1024];
    CURL *c = open_server(base_url, base, sizeof base);
    if (!c) return -1;
    int rc = 0;
    if (only_job) {
        rc = one_job(c, base, only_job, cb, arg);
    } else if ((rc = export_jobs(c, base, cb, arg)) == 1) {
        /* a server without /api/export: the list, then each job */
        rc = 0;
        char url[1200];
        snprintf(url, sizeof url, "%s/api/jobs?limit=1000000", base);
        json_t *list = get_json(c, url);
        json_t *jobs = json_is_array(list) ? list : json_object_get(list, "jobs");
        if (!json_is_array(jobs)) {
            if (list) fprintf(stderr, "jobscope: %s: no job list in the answer\n", url);
            rc = -1;
        } else {
            size_t i;
            json_t *jb;
            json_array_foreach(jobs, i, jb)
            {
                const char *id = json_string_value(json_object_get(jb, "job_id"));
                if (id && one_job(c, base, id, cb, arg)) {
                    rc = -1;
                    break;
                }
            }
        }
        json_decref(list);
    }
    curl_easy_cleanup(c);
    return rc;
}
