/* fuzz_limits.c — --limit specifications and the size/duration parsers. */
#include "fuzz.h"
#include "limits/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    js_limits l;
    char err[256];
    memset(&l, 0, sizeof l);
    limits_parse(s, &l, err, sizeof err);
    double d;
    limits_parse_bytes(s, &d);
    limits_parse_seconds(s, &d);
    free(s);
    return 0;
}
