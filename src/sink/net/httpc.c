/* httpc.c — see httpc.h. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "httpc.h"
#include "../delivery/publisher.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_global(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_body(char *data, size_t sz, size_t nm, void *arg)
{
    httpc *c = arg;
    size_t n = sz * nm;
    if (c->resp_len + n + 1 > c->resp_cap && c->resp_len < (1u << 20)) {
        size_t cap = (c->resp_len + n + 1) * 2;
        char *r = realloc(c->resp, cap);
        if (r) {
            c->resp = r;
            c->resp_cap = cap;
        }
    }
    if (c->resp && c->resp_len + n + 1 <= c->resp_cap) {
        memcpy(c->resp + c->resp_len, data, n);
        c->resp_len += n;
        c->resp[c->resp_len] = 0;
    }
    return n;
}

int httpc_init(httpc *c, const net_url *u, const sink_options *o, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    pthread_once(&curl_once, curl_global);
    c->curl = curl_easy_init();
    if (!c->curl) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return -1;
    }
    if (u->user) c->user = strdup(u->user);
    if (u->pass) c->pass = strdup(u->pass);
    if (o && o->ca_file) c->ca_file = strdup(o->ca_file);
    c->insecure = o ? o->insecure : 0;
    c->quiet = o ? o->quiet : 0;
    return 0;
}

void httpc_free(httpc *c)
{
    if (c->curl) curl_easy_cleanup(c->curl);
    if (c->headers) curl_slist_free_all(c->headers);
    if (c->pass) memset(c->pass, 0, strlen(c->pass));
    if (c->bearer) memset(c->bearer, 0, strlen(c->bearer));
    free(c->user);
    free(c->pass);
    free(c->ca_file);
    free(c->resp);
    free(c->unix_socket);
    free(c->bearer);
    memset(c, 0, sizeof *c);
}

static void common_opts(httpc *c, CURL *h, const char *url, double timeout_s, char *ebuf)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_s < 3 ? timeout_s * 1000 : 3000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->unix_socket) curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
    if (c->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    }
    if (c->user) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->pass ? c->pass : "");
    }
}

int httpc_probe(httpc *c, const char *url, double timeout_s, char *err, size_t errlen)
{
    CURL *h = curl_easy_init();
    char ebuf[CURL_ERROR_SIZE] = "";
    if (!h) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return -1;
    }
    common_opts(c, h, url, timeout_s, ebuf);
    curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "cannot connect: %s", ebuf[0] ? ebuf : curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}

long httpc_post(httpc *c, const char *url, const char *content_type, const char *body, size_t len,
                double timeout_s, char *err, size_t errlen)
{
    CURL *h = c->curl;
    char ebuf[CURL_ERROR_SIZE] = "", ct[128];
    if (c->headers) curl_slist_free_all(c->headers);
    snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
    c->headers = curl_slist_append(NULL, ct);
    c->headers = curl_slist_append(c->headers, "Expect:");
    if (c->bearer) c->headers = curl_slist_append(c->headers, c->bearer);
    for (int i = 0; c->extra_headers && c->extra_headers[i]; i++)
        c->headers = curl_slist_append(c->headers, c->extra_headers[i]);
    curl_easy_reset(h);
    common_opts(c, h, url, timeout_s, ebuf);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)c->headers);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "jobscope");
    c->resp_len = 0;
    if (c->resp) c->resp[0] = 0;
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s", ebuf[0] ? ebuf : curl_easy_strerror(rc));
        return -1;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (httpc_status_class(status) != 0) {
        char snippet[160] = "";
        if (c->resp) {
            snprintf(snippet, sizeof snippet, "%s", c->resp);
            for (char *s = snippet; *s; s++)
                if (*s == '\n' || *s == '\r') *s = ' ';
        }
        snprintf(err, errlen, "HTTP %ld%s%s", status, snippet[0] ? ": " : "", snippet);
    }
    return status;
}

/* Only answers that say "this request's content is wrong" reject events for
 * good; everything else (401/403 credentials, 404 missing exchange or
 * index, 408/429, 5xx, redirects) concerns the destination as a whole and
 * is retried, with the events waiting in the spool: a misconfiguration
 * costs disk space, not events. */
int httpc_status_class(long st)
{
    if (st >= 200 && st < 300) return 0;
    if (st == 400 || st == 409 || st == 413 || st == 415 || st == 422) return 2;
    return 1;
}

void httpc_rejected(const httpc *c, unsigned long *rejected, unsigned long n, const char *label,
                    const char *why)
{
    if (*rejected == 0)
        publisher_warn(c->quiet, label, "rejected by the server (%s); such events are skipped",
                       why);
    *rejected += n;
}

int httpc_deliver(httpc *c, const char *url, const char *content_type, const char *body, size_t len,
                  int n, unsigned long *rejected, const char *label, double timeout_s, char *err,
                  size_t errlen)
{
    long st = httpc_post(c, url, content_type, body, len, timeout_s, err, errlen);
    int cls = httpc_status_class(st);
    if (cls == 1) return 0;
    if (cls == 2) httpc_rejected(c, rejected, (unsigned long)n, label, err);
    return n;
}
