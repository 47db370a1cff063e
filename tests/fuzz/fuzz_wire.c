/* fuzz_wire.c — the custom-metrics datagram parser (lib/ clients, jobscope emit). */
#include "fuzz.h"
#include "metrics/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wire_metric m;
    const char *payload = NULL;
    size_t plen = 0;
    int r = wire_parse((const char *)data, size, &m, &payload, &plen);
    if (r == WIRE_METRIC) {
        if (!wire_name_ok(m.name, m.name_len, 255)) abort();
        if (m.ntags < 0 || m.ntags > WIRE_MAX_TAGS) abort();
    } else if (r == WIRE_PAYLOAD) {
        if ((const uint8_t *)payload < data || (const uint8_t *)payload + plen > data + size) abort();
    }
    (void)wire_strerror(r);
    return 0;
}
