/* fuzz_payload.c — the monitoring payload scanner (markers split anywhere,
 * strip on and off) and payload_parse on the blocks it extracts. */
#include "fuzz.h"
#include "metrics/payload.h"

static size_t passed;

static void on_out(void *ctx, const char *p, size_t n) { (void)ctx; (void)p; passed += n; }
static void on_event(void *ctx, const char *name, double ts, const char *f, size_t n)
{
    (void)ctx; (void)ts;
    if (!name || (n && !f)) abort();
}
static int reserved(void *ctx, const char *k, size_t n) { (void)ctx; return n == 4 && !memcmp(k, "host", 4); }
static void on_block(void *ctx, const char *p, size_t n)
{
    (void)ctx;
    const char *err = NULL;
    payload_parse(p, n, 1.5e9, on_event, reserved, NULL, &err);
}
static void on_error(void *ctx, const char *reason, size_t size) { (void)ctx; (void)reason; (void)size; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int strip = data[0] & 1;
    size_t step = 1 + (data[0] >> 1);      /* chunk size: markers split across feeds */
    data++; size--;
    const char *err = NULL;
    payload_parse((const char *)data, size, 1.5e9, on_event, reserved, NULL, &err);
    payload_cbs cb = { on_out, on_block, on_error, NULL };
    payload_scanner *s = payload_new(strip, 4096, &cb);
    passed = 0;
    for (size_t off = 0; off < size; off += step)
        payload_feed(s, (const char *)data + off, size - off < step ? size - off : step);
    payload_finish(s);
    /* without stripping every byte is passed on, and never more */
    if (!strip && passed != size) abort();
    payload_free(s);
    return 0;
}
