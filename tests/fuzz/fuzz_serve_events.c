/* fuzz_serve_events.c — the two readings of a jobscope event line
 * (src/server/ingest.h): the streaming reader (event_reader.c) and jansson
 * (event_json.c) must give the same points and the same errors for any
 * body, as test_server_ingest.c checks on real events and their mutations.
 * Aborts on the first difference. */
#include <stdio.h>
#include "fuzz.h"
#include "server/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingest_result a, b;
    if (ingest_ndjson_points((const char *)data, size, 1234, 0, &a) < 0) abort();
    if (ingest_ndjson_points((const char *)data, size, 1234, INGEST_JANSSON_ONLY, &b) < 0) abort();
    int same =
        a.accepted == b.accepted && a.failed == b.failed && !strcmp(a.err, b.err) && a.n == b.n;
    for (size_t i = 0; same && i < a.n; i++) {
        const store_point *x = &a.pts[i], *y = &b.pts[i];
        same = !strcmp(x->metric, y->metric) && x->ntags == y->ntags && x->ts_ms == y->ts_ms &&
               !memcmp(&x->value, &y->value, sizeof x->value);
        for (int t = 0; same && t < x->ntags; t++)
            same = !strcmp(x->tags[t].key, y->tags[t].key) &&
                   !strcmp(x->tags[t].value, y->tags[t].value);
    }
    if (!same) {
        fprintf(stderr, "the readings differ: %zu/%zu %zu points '%s' against %zu/%zu %zu '%s'\n",
                a.accepted, a.failed, a.n, a.err, b.accepted, b.failed, b.n, b.err);
        abort();
    }
    ingest_result_free(&a);
    ingest_result_free(&b);
    return 0;
}
