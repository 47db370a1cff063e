/* peers.h — one API over the whole allocation (--peers, --peers-file,
 * --peer-timeout; docs/serve-site.md).
 *
 * The peers module installs the server's fan-out (server_set_fanout): a
 * request is sent to every peer in parallel through one libcurl multi
 * handle, with "X-Jobscope-Peer: 1" (a peer answers from its own store
 * only, so a full mesh never loops) and the server's token, and a deadline
 * per request.  A peer that is down, slow or answers an error is left out
 * and named in the warning; the answer is then partial, never late.  A peer
 * entry that is this very server (the same hosts file on every node) is
 * dropped at start-up, so local data is never counted twice.
 *
 * Merging, per API call:
 *   /api/query        each node returns the RAW series of each sub-query
 *                     (POST /api/query?raw=1, tsq_set_json); they are
 *                     appended to the local ones and tsq_eval runs once, so
 *                     a group spanning nodes is aggregated once, correctly
 *   /api/suggest      sorted union, cut to max
 *   /api/search/lookup  union of results (distinct metric + tags)
 *   /api/query/last   concatenation
 * The answer carries the header X-Jobscope-Partial when a peer is missing,
 * and the server log says which and why.  peers.c: the module, fan-out and
 * /api/query; peers_merge.c: the unions. */
#ifndef JOBSCOPE_PEERS_H
#define JOBSCOPE_PEERS_H

#include <stddef.h>
#include "query/tsq.h"
#include "server/server.h"

#define PEERS_PARTIAL_HEADER "X-Jobscope-Partial"

/* Parses "HOST[:PORT]", "[V6]:PORT" or "http://HOST:PORT" into a base URL
 * "http://HOST:PORT" (default port 4242).  0 or -1 + err. */
int peers_base_url(const char *spec, char *out, size_t outlen, char *err, size_t errlen);

/* The answer of POST /api/query?raw=1: the local raw series of the only
 * sub-query (tsq_set_json), or a JSON array of them, one per sub-query.
 * NULL + err. */
char *peers_raw_answer(server *s, const tsq_query *q, size_t *len, tsq_error *err);

/* Merges a local JSON answer with the peers' (status 200 only) for
 * /api/suggest (max entries), /api/search/lookup and /api/query/last.
 * New malloc'ed JSON, or NULL when the local answer is not JSON. */
char *peers_merge_suggest(const char *local, size_t len, const server_peer_reply *rep, int n,
                          int max, size_t *outlen);
char *peers_merge_lookup(const char *local, size_t len, const server_peer_reply *rep, int n,
                         size_t *outlen);
char *peers_merge_concat(const char *local, size_t len, const server_peer_reply *rep, int n,
                         size_t *outlen);

/* The endpoints the peers module answers for the allocation. */
enum peers_kind { PEERS_QUERY, PEERS_SUGGEST, PEERS_LOOKUP, PEERS_LAST };
/* Is a peer's 200 answer of the shape this endpoint answers?  A peer that
 * sends anything else is left out of the merge and named in the warning. */
int peers_answer_valid(enum peers_kind kind, const server_peer_reply *rep);

/* Sets the partial-answer header and logs when warn is not empty. */
void peers_mark_partial(server *s, server_response *w, const char *what, const char *warn);

#endif
