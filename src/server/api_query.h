/* api_query.h — the bounds of one /api/query request (api_query.c,
 * docs/serve.md "Limits"), applied on every path that answers it: the
 * query module's own and the peers module's merge (peers.c). */
#ifndef JOBSCOPE_API_QUERY_H
#define JOBSCOPE_API_QUERY_H

#include "query/tsq.h"
#include "server.h"

/* All sub-queries together: buckets of filled downsamples, points
 * processed, points answered. */
#define SERVER_MAX_FILLED_BUCKETS 500000
#define SERVER_MAX_QUERY_POINTS   10000000L
#define SERVER_MAX_ANSWER_POINTS  2000000

/* The size bound of a query (a filled downsample's buckets): 0, or -1 and
 * a 400 in e. */
int server_query_check_size(const tsq_query *q, tsq_error *e);
/* Fills q->guard: the request's point bound, --query-timeout, and the
 * client's connection (work stops when it leaves). */
void server_query_guard(server *s, const server_request *r, tsq_query *q);
/* 0, or -1 and a 413 when the answer holds more than SERVER_MAX_ANSWER_POINTS. */
int server_query_check_answer(const tsq_result *res, tsq_error *e);

#endif
