/* fuzz_jsonscan.c — the small JSON scanner used on payload blocks and metric
 * tags: skip, minify and iterate must stay inside the input. */
#include "fuzz.h"
#include "metrics/jsonscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    const char *q = jscan_skip(p, end);
    if (q && (q < p || q > end)) abort();
    if (!q) return 0;
    /* the walkers' precondition: [p, end) is exactly one valid value */
    p = jscan_ws(p, end);
    end = q;
    size = (size_t)(end - p);
    char *out = malloc(size + 1);
    size_t n = jscan_minify(p, size, out);
    if (n > size) abort();
    free(out);
    for (int object = 0; object < 2; object++) {
        jscan_iter it;
        if (jscan_begin(&it, p, end, object ? '{' : '[')) {
            jscan_item item;
            int guard = 0;
            while (jscan_next(&it, &item, object) > 0 && guard++ < 100000) {}
        }
    }
    return 0;
}
