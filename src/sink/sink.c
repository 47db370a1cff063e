/* sink.c — the table of destinations and URL dispatch (see sink.h). */
#include "sink.h"
#include "../util/companion.h"
#include "delivery/publisher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>

extern const sink_ops sink_csv_ops;
extern const sink_ops sink_file_ops;
extern const sink_ops sink_kickstart_ops;

/* Built into jobscope although they have a scheme: they need no library. */
static const sink_ops *const sink_local_net_backends[] = {
    &sink_kickstart_ops,
};

/* Built into jobscope: plain paths (file) last. */
static const sink_ops *const sink_backends[] = {
    &sink_csv_ops,
    &sink_file_ops,
};

/* ---- the network plugin ------------------------------------------------- */

/* Programs that link the backends in (tests) have the table itself. */
extern const sink_ops *const sink_net_backends[] __attribute__((weak));

static const sink_ops *const *net_backends; /* from jobscope-net.so */
static char net_error[256];

/* The plugin where util_companion finds it (util/companion.h). */
static const sink_ops *const *net_load(void)
{
    static int tried;
    if (tried) return net_backends;
    tried = 1;
    if (sink_net_backends) return net_backends = sink_net_backends;
    char path[4200];
    if (!util_companion("jobscope-net.so", path, sizeof path)) {
        snprintf(net_error, sizeof net_error, "jobscope-net.so not found");
        return NULL;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(net_error, sizeof net_error, "%s", dlerror());
        return NULL;
    }
    net_backends = dlsym(h, "sink_net_backends");
    if (!net_backends)
        snprintf(net_error, sizeof net_error, "jobscope-net.so: not a jobscope plugin");
    return net_backends;
}

/* A destination no backend can serve: like any unusable network destination,
 * a warning and a spool for a later `jobscope flush -o GOOD_URL SPOOL`, or
 * fatal with --require-output. */
static int unknown_match(const char *url, const sink_options *o)
{
    (void)url;
    (void)o;
    return 0;
}
static const sink_ops sink_unknown_ops = {
    .name = "unknown",
    .match = unknown_match,
    .open = NULL,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

static sink *open_unfiltered(const char *url, const sink_options *o, char *err, size_t errlen)
{
    size_t scheme =
        strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    int remote = scheme > 0 && !strncmp(url + scheme, "://", 3) && strncmp(url, "file://", 7);
    for (size_t i = 0; remote && i < sizeof sink_local_net_backends / sizeof(sink *); i++)
        if (sink_local_net_backends[i]->match(url, o))
            return sink_local_net_backends[i]->open(url, o, err, errlen);
    if (remote) {
        const sink_ops *const *net = net_load();
        for (size_t i = 0; net && net[i]; i++)
            if (net[i]->match(url, o)) return net[i]->open(url, o, err, errlen);
        char why[320];
        snprintf(why, sizeof why, "%s", net ? "unknown scheme" : net_error);
        return publisher_sink_unusable(&sink_unknown_ops, url, why, o, err, errlen);
    }
    for (size_t i = 0; i < sizeof sink_backends / sizeof sink_backends[0]; i++)
        if (sink_backends[i]->match(url, o)) return sink_backends[i]->open(url, o, err, errlen);
    char *label = sink_redact_url(url);
    snprintf(err, errlen, "%s: unknown destination", label ? label : "?");
    free(label);
    return NULL;
}

sink *sink_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    sink *s = open_unfiltered(url, o, err, errlen);
    if (!s || !o->only_events) return s;
    sink *f = sink_filter_wrap(s, o->only_events);
    if (!f) snprintf(err, errlen, "out of memory");
    return f;
}
