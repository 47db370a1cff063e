/* route.c — the route table of `jobscope serve` (route.h): each entry a
 * method, a path (exact, or a prefix ending with a star), the handler
 * of the module that registered it and, optionally, the wrapper another
 * module put around it (server_route_wrap: the peers module merges the
 * peers' answers around the query module's).  Filled from the modules'
 * init(), read by every request afterwards without a lock. */
#include "route.h"

#include <stdlib.h>
#include <string.h>

typedef struct route_entry {
    const char *method; /* NULL = any */
    const char *path;
    server_handler fn; /* NULL: only a wrapper so far */
    void *arg;
    server_wrapper wrap;
    void *wrap_arg;
} route_entry;

struct route_table {
    route_entry v[ROUTE_MAX];
    int n;
};

route_table *route_table_new(void)
{
    return calloc(1, sizeof(route_table));
}

void route_table_free(route_table *t)
{
    free(t);
}

/* The entry of exactly this method and path, created when create is set;
 * NULL when absent (or the table is full). */
static route_entry *entry(route_table *t, const char *method, const char *path, int create)
{
    for (int i = 0; i < t->n; i++) {
        route_entry *e = &t->v[i];
        int same_method =
            (!method && !e->method) || (method && e->method && !strcmp(method, e->method));
        if (same_method && !strcmp(e->path, path)) return e;
    }
    if (!create || t->n >= ROUTE_MAX) return NULL;
    route_entry *e = &t->v[t->n++];
    memset(e, 0, sizeof *e);
    e->method = method;
    e->path = path;
    return e;
}

int route_add(route_table *t, const char *method, const char *path, server_handler fn, void *arg)
{
    route_entry *e = entry(t, method, path, 1);
    if (!e) return -1;
    e->fn = fn;
    e->arg = arg;
    return 0;
}

int route_wrap(route_table *t, const char *method, const char *path, server_wrapper fn, void *arg)
{
    route_entry *e = entry(t, method, path, 1);
    if (!e || e->wrap) return -1;
    e->wrap = fn;
    e->wrap_arg = arg;
    return 0;
}

static int path_match(const char *pattern, const char *path)
{
    size_t l = strlen(pattern);
    if (l && pattern[l - 1] == '*') return !strncmp(pattern, path, l - 1);
    return !strcmp(pattern, path);
}

void route_dispatch(const route_table *t, server *s, const server_request *r, server_response *w)
{
    int path_known = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < t->n; i++) {
            const route_entry *e = &t->v[i];
            size_t l = strlen(e->path);
            int prefix = l && e->path[l - 1] == '*';
            if (!e->fn || prefix != pass || !path_match(e->path, r->path)) continue;
            if (e->method && strcmp(e->method, r->method) &&
                !(!strcmp(r->method, "HEAD") && !strcmp(e->method, "GET"))) {
                path_known = 1;
                continue;
            }
            if (e->wrap) {
                server_next next = {e->fn, e->arg};
                e->wrap(s, r, w, &next, e->wrap_arg);
            } else
                e->fn(s, r, w, e->arg);
            return;
        }
    }
    if (path_known)
        server_reply_error(w, 405, "Method not allowed", r->method);
    else
        server_reply_error(w, 404, "Endpoint not found", r->path);
}
