/* conn_guard.h — what a hostile client can hold of `jobscope serve`,
 * bounded (conn_guard.c, used by the transport http.c; docs/serve.md
 * "Limits"): the time to send a request's headers and its body (a watchdog
 * thread shuts down the socket of a connection past its deadline:
 * slowloris), and the bytes of bodies all connections hold together
 * (--body-memory).  It knows sockets, not HTTP. */
#ifndef JOBSCOPE_CONN_GUARD_H
#define JOBSCOPE_CONN_GUARD_H

#include <stddef.h>

typedef struct conn_guard conn_guard;
typedef struct conn_slot conn_slot;

/* Starts the watchdog; NULL when out of memory. */
conn_guard *conn_guard_new(size_t body_memory);
/* Stops the watchdog and frees; every slot must be closed. */
void conn_guard_free(conn_guard *g);

/* A new connection on socket fd, waiting for its headers for secs. */
conn_slot *conn_guard_open(conn_guard *g, int fd, double secs);
/* Forgets it (before its socket is closed). */
void conn_guard_close(conn_guard *g, conn_slot *c);
/* The current phase must end within secs (0: no deadline); waiting: for a
 * request's first bytes (then a client that closed its side is let go at
 * once).  c NULL: nothing. */
void conn_guard_deadline(conn_guard *g, conn_slot *c, double secs, int waiting);

/* Counts n more bytes of body against --body-memory into *held (the
 * request's share): 0, or -1 when that would pass it (counted as busy). */
int conn_guard_reserve(conn_guard *g, size_t *held, size_t n);
/* Gives a request's share back (*held becomes 0). */
void conn_guard_release(conn_guard *g, size_t *held);

/* Connections cut at their deadline, bodies refused, body bytes held now. */
void conn_guard_stats(conn_guard *g, unsigned long long *cut, unsigned long long *busy,
                      size_t *body_bytes);

#endif
