/* route.h — the route table of `jobscope serve` (route.c): what server.c
 * keeps for server_route, server_route_wrap and server_dispatch.  Only
 * server.c includes it; modules use server.h. */
#ifndef JOBSCOPE_ROUTE_H
#define JOBSCOPE_ROUTE_H

#include "server.h"

#define ROUTE_MAX 128

typedef struct route_table route_table;

route_table *route_table_new(void);
void route_table_free(route_table *t);
/* method NULL: any.  path: exact, or a prefix ending with a star.  The
 * same method + path again replaces the handler (its wrapper stays).
 * 0 or -1 (table full). */
int route_add(route_table *t, const char *method, const char *path, server_handler fn, void *arg);
/* The wrapper of method + path (before or after its route is added).
 * 0 or -1 (table full, or wrapped already). */
int route_wrap(route_table *t, const char *method, const char *path, server_wrapper fn, void *arg);
/* Exact routes win over prefix routes, among equals the first; HEAD is
 * answered by GET; a path known with another method is a 405, an unknown
 * one a 404. */
void route_dispatch(const route_table *t, server *s, const server_request *r, server_response *w);

#endif
