/* httpc.h — the libcurl client shared by the HTTP-speaking sinks (http,
 * rabbitmq management API, elasticsearch, opentsdb, influx).
 *
 * One easy handle per destination, used only by its publisher thread, so the
 * connection is kept alive between requests.  Credentials are given to curl
 * apart from the URL (CURLOPT_USERNAME/PASSWORD), so no URL we print or that
 * curl puts in an error message ever holds them.  TLS peers are verified
 * unless --insecure; --ca-file replaces the system CA bundle. */
#ifndef JOBSCOPE_HTTPC_H
#define JOBSCOPE_HTTPC_H

#include <stddef.h>
#include "../sink.h"
#include "../url.h"

typedef struct httpc {
    void *curl; /* CURL * */
    char *user, *pass;
    char *ca_file;
    int insecure;
    char *resp; /* last response body (truncated at 1 MiB), NUL-terminated */
    size_t resp_len, resp_cap;
    void *headers;                    /* struct curl_slist * */
    char *unix_socket;                /* talk HTTP over this Unix socket (jobscope serve) */
    char *bearer;                     /* "Authorization: Bearer ..." header, or NULL */
    int quiet;                        /* -q (sink_options.quiet): its warnings are silenced */
    const char *const *extra_headers; /* added to every POST, NULL-terminated (or NULL) */
} httpc;

/* Takes the credentials from u. 0, or -1 with err. */
int httpc_init(httpc *c, const net_url *u, const sink_options *o, char *err, size_t errlen);
void httpc_free(httpc *c);
/* Opens a connection (and the TLS handshake) to url, then drops it. */
int httpc_probe(httpc *c, const char *url, double timeout_s, char *err, size_t errlen);
/* POSTs body. Returns the HTTP status, or -1 on a transport error (err set). */
long httpc_post(httpc *c, const char *url, const char *content_type, const char *body, size_t len,
                double timeout_s, char *err, size_t errlen);

/* What to do with a status: 0 delivered, 1 retry later, 2 rejected for good
 * (only 400, 409, 413, 415, 422: the request's content is wrong). */
int httpc_status_class(long status);

/* POSTs a batch of n events and turns the answer into a pub_backend send()
 * result: 0 (retry all later) or n (delivered, or rejected for good: then
 * counted in *rejected and warned about once under label). */
int httpc_deliver(httpc *c, const char *url, const char *content_type, const char *body, size_t len,
                  int n, unsigned long *rejected, const char *label, double timeout_s, char *err,
                  size_t errlen);
/* Counts n events the server refused for good, warning the first time
 * (unless c->quiet). */
void httpc_rejected(const httpc *c, unsigned long *rejected, unsigned long n, const char *label,
                    const char *why);

#endif
