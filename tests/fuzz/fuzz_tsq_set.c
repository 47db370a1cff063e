/* fuzz_tsq_set.c — raw series from a peer (tsq_set_parse, the answer of
 * POST /api/query?raw=1): bytes from another node, parsed by hand; what is
 * accepted is then written back and must read back identically. */
#include "fuzz.h"
#include <math.h>
#include "query/tsq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsq_set set = { 0 };
    if (tsq_set_parse((const char *)data, size, &set) == 0) {
        size_t len;
        char *j = tsq_set_json(&set, &len);
        tsq_set back = { 0 };
        if (!j || tsq_set_parse(j, len, &back) != 0 || back.n != set.n) abort();
        for (size_t i = 0; i < set.n; i++) {
            if (strcmp(back.v[i].metric, set.v[i].metric) || back.v[i].pts.n != set.v[i].pts.n) abort();
            for (size_t k = 0; k < set.v[i].pts.n; k++) {
                double a = set.v[i].pts.val[k], b = back.v[i].pts.val[k];
                if (back.v[i].pts.ts[k] != set.v[i].pts.ts[k] || (a != b && !(isnan(a) && isnan(b)))) abort();
            }
        }
        tsq_set_free(&back);
        free(j);
    }
    tsq_set_free(&set);
    return 0;
}
