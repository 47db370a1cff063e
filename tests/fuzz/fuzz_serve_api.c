/* fuzz_serve_api.c — the request bodies `jobscope serve` parses from the
 * network: OpenTSDB /api/put, Dragon's /api/metrics, the Influx line
 * protocol on /write, NDJSON events on /api/events and the query bodies of
 * /api/query, /api/query/last, /api/suggest and /api/search/lookup.  The
 * first byte picks the endpoint; the rest is the body, answered through the
 * real route table over a store in a temporary directory (server_dispatch). */
#include <stdio.h>
#include <unistd.h>
#include "fuzz.h"
#include "server/server.h"

static server *srv;
static char dir[] = "/tmp/jobscope-fuzz-serve.XXXXXX";

static void cleanup(void)
{
    char cmd[sizeof dir + 16];
    server_destroy(srv);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

static void setup(void)
{
    if (!mkdtemp(dir)) abort();
    server_config c;
    server_config_defaults(&c);
    free(c.store_dir);
    c.store_dir = strdup(dir);
    char err[256];
    /* the core API's modules: the endpoints fuzzed below */
    static const server_module *const modules[] = {&core_module, &ingest_module, &query_module,
                                                   NULL};
    srv = server_create(&c, modules, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "server_create: %s\n", err);
        abort();
    }
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const paths[] = {
        "/api/put",   "/api/metrics",    "/write",       "/api/events",
        "/api/query", "/api/query/last", "/api/suggest", "/api/search/lookup",
    };
    if (!srv) setup();
    if (size < 1) return 0;
    char *body = fuzz_cstr(data + 1, size - 1);
    server_request r = {
        .method = "POST", .path = paths[data[0] % 8], .body = body, .body_len = size - 1};
    server_response w = {.status = 200};
    server_dispatch(srv, &r, &w);
    if (w.status < 200 || w.status > 599) abort();
    free(w.body);
    free(body);
    return 0;
}
