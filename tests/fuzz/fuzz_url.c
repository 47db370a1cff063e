/* fuzz_url.c — destination URLs (-o, KICKSTART_MON_URL): parsing, query
 * parameters and the redaction that keeps passwords out of messages. */
#include "fuzz.h"
#include "sink/sink.h"
#include "sink/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    net_url u;
    char err[256];
    memset(&u, 0, sizeof u);
    if (net_url_parse(&u, s, err, sizeof err) == 0) {
        if (u.query) {
            size_t pos = 0;
            char *k, *v;
            while (net_url_query_next(u.query, &pos, &k, &v) > 0) { free(k); free(v); }
        }
        net_url_free(&u);
    }
    free(sink_redact_url(s));
    free(s);
    return 0;
}
