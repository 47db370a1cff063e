/* filter.c — a destination that sees only some events (sink_options.
 * only_events): jobscope kickstart sends kickstart.inv.online and its GPU
 * events to KICKSTART_MON_URL, not jobscope's own, as pegasus-kickstart did
 * (docs/kickstart.md).  Every other call goes to the wrapped sink. */
#include "sink.h"

#include <stdlib.h>
#include <string.h>

typedef struct filter_sink {
    sink base;
    sink *inner;
    const char *const *prefixes;
} filter_sink;

static int filter_match(const char *url, const sink_options *o)
{
    (void)url;
    (void)o;
    return 0;
}

static int filter_write(sink *s, const js_event *ev)
{
    filter_sink *f = (filter_sink *)s;
    for (const char *const *p = f->prefixes; *p; p++)
        if (!strncmp(ev->name, *p, strlen(*p))) return f->inner->ops->write(f->inner, ev);
    return 0;
}

static void filter_settle(sink *s)
{
    filter_sink *f = (filter_sink *)s;
    if (!f->inner->ops->settle) return;
    f->inner->ops->settle(f->inner);
    unsigned long lost = __atomic_load_n(&f->inner->lost, __ATOMIC_RELAXED);
    if (lost > __atomic_load_n(&f->base.lost, __ATOMIC_RELAXED))
        __atomic_store_n(&f->base.lost, lost, __ATOMIC_RELAXED);
}

static int filter_flush(sink *s, double timeout_s)
{
    filter_sink *f = (filter_sink *)s;
    int rc = f->inner->ops->flush ? f->inner->ops->flush(f->inner, timeout_s) : 0;
    if (f->inner->errors > f->base.errors) f->base.errors = f->inner->errors;
    return rc;
}

static void filter_close(sink *s)
{
    filter_sink *f = (filter_sink *)s;
    f->inner->ops->close(f->inner);
    free(f);
}

static const sink_ops sink_filter_ops = {
    .name = "filter",
    .match = filter_match,
    .open = NULL,
    .write = filter_write,
    .flush = filter_flush,
    .close = filter_close,
    .settle = filter_settle,
};

sink *sink_filter_wrap(sink *inner, const char *const *prefixes)
{
    filter_sink *f = calloc(1, sizeof *f);
    if (!f) {
        inner->ops->close(inner);
        return NULL;
    }
    f->base.ops = &sink_filter_ops;
    f->base.label = inner->label; /* messages name the destination */
    f->inner = inner;
    f->prefixes = prefixes;
    return &f->base;
}
