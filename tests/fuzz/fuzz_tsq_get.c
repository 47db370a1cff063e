/* fuzz_tsq_get.c — GET /api/query query strings (m=AGG:[DS:][rate{..}:]
 * METRIC{tags}{filters}, start, end, flags): the input is split at '&' into
 * name=value pairs; parsing must fail cleanly or give a query that frees. */
#include "fuzz.h"
#include "query/tsq.h"

typedef struct kv { char *k[32], *v[32]; int n; } kv;

static const char *get(void *arg, const char *name, int i)
{
    kv *p = arg;
    for (int j = 0; j < p->n; j++)
        if (!strcmp(p->k[j], name) && i-- == 0)
            return p->v[j];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size), *save = NULL;
    kv p = { .n = 0 };
    for (char *t = strtok_r(s, "&", &save); t && p.n < 32; t = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(t, '=');
        p.k[p.n] = t;
        p.v[p.n++] = eq ? (*eq = 0, eq + 1) : (char *)"";
    }
    tsq_query q;
    tsq_error e;
    if (tsq_parse_get(get, &p, 1700000000000LL, &q, &e) == 0)
        tsq_query_free(&q);
    else if (e.code != 400 && e.code != 413)
        abort();
    int64_t t;
    tsq_parse_time(s, 1700000000000LL, &t);
    free(s);
    return 0;
}
