/* fuzz_tsq_query.c — POST /api/query bodies (src/query/tsq_parse.c): any
 * body either fails with a 400/413 or is evaluated over a small fixed set of
 * series and serialised, in every output form (seconds, ms, arrays). */
#include "fuzz.h"
#include <math.h>
#include "query/tsq.h"

static void add(tsq_set *set, const char *metric, const char *k, const char *v, int64_t t0, int n, double step)
{
    tsq_series *s = &set->v[set->n++];
    memset(s, 0, sizeof *s);
    s->metric = strdup(metric);
    s->tags = calloc(1, sizeof *s->tags);
    s->tags[0].key = strdup(k);
    s->tags[0].value = strdup(v);
    s->ntags = 1;
    s->pts.ts = malloc((size_t)n * sizeof *s->pts.ts);
    s->pts.val = malloc((size_t)n * sizeof *s->pts.val);
    for (int i = 0; i < n; i++) {
        s->pts.ts[i] = t0 + i * 1500;
        s->pts.val[i] = i % 7 == 3 ? i * -step : i * step;
    }
    s->pts.n = s->pts.cap = (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tsq_set set;
    if (!set.n) {
        set.v = calloc(4, sizeof *set.v);
        set.cap = 4;
        add(&set, "m", "host", "a", 1699999200000LL, 200, 1.5);
        add(&set, "m", "host", "b", 1699999200700LL, 150, 0.25);
        add(&set, "m", "dc", "x", 1699999300000LL, 50, 1e6);
        add(&set, "n", "host", "a", 1699999200000LL, 10, 3);
    }
    tsq_query q;
    tsq_error e;
    if (tsq_parse_json((const char *)data, size, 1699999200000LL + 600000, &q, &e) < 0) {
        if (e.code != 400 && e.code != 413) abort();
        return 0;
    }
    q.guard.max_points = 100000; /* huge fills are 413s, not timeouts */
    tsq_result r = { 0 };
    for (int i = 0; i < q.nsubs; i++)
        if (tsq_eval(&q, &q.subs[i], &set, &r, &e) < 0 && e.code != 400 && e.code != 413) abort();
    for (int form = 0; form < 3; form++) {
        q.ms_resolution = form == 1;
        q.arrays = form == 2;
        size_t len;
        free(tsq_result_json(&q, &r, &len));
    }
    tsq_result_free(&r);
    tsq_query_free(&q);
    return 0;
}
