/* http.h — the transport of `jobscope serve` (http.c): libmicrohttpd on the
 * TCP listener and the Unix socket.  It reads requests (bodies bounded,
 * inflated, the token checked) and hands each to one dispatch function;
 * it knows no route, no module and no store.  Only server.c includes it. */
#ifndef JOBSCOPE_HTTP_H
#define JOBSCOPE_HTTP_H

#include <stddef.h>
#include "server.h"

#define HTTP_HEADER_MEMORY (256 * 1024) /* a connection's headers (libmicrohttpd) */

typedef struct http_transport http_transport;

/* Answers one request (server_dispatch); any worker thread. */
typedef void (*http_dispatch_fn)(void *arg, const server_request *r, server_response *w);

/* Listens as cfg says (--listen, --socket, limits, timeouts, token, threads);
 * cfg must outlive the transport.  NULL + err. */
http_transport *http_start(const server_config *cfg, http_dispatch_fn fn, void *arg, char *err,
                           size_t errlen);
/* Stops the listeners (waiting for the requests in flight), removes the
 * socket file, frees. */
void http_stop(http_transport *t);
/* The TCP port actually bound (for --listen HOST:0), 0 without TCP. */
int http_tcp_port(const http_transport *t);
/* Its counters into the transport's fields of *st (requests, errors,
 * unauthorized, too_large, bytes_in, request_seconds, cut, busy,
 * body_bytes). */
void http_stats(http_transport *t, server_stats *st);

#endif
