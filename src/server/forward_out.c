/* forward_out.c — the sink side of --forward (forward.c): opens a
 * destination with the monitor's sinks and hands it events.  Kept apart
 * from forward.c because the sinks' JSON writer (event/json.h) and jansson
 * share names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server/forward.h"
#include "sink/sink.h"
#include "sink/delivery/publisher.h"
#include "sink/url.h"

extern const sink_ops *const sink_net_backends[]; /* sink/net/net.c, linked in */

struct forward_out {
    sink *sk;
};

forward_out *forward_out_open(const char *url, const char *spool_dir, int verbose, char *err,
                              size_t errlen)
{
    sink_options o = {0};
    o.verbose = verbose;
    o.flush_timeout = 5;
    o.spool_dir = spool_dir;
    o.spool_max = 1LL << 30;
    /* A server must not start with a destination that can never work (the
     * monitor would spool for a later `jobscope flush`): a known scheme and
     * a host are required.  An unreachable one is fine: it spools. */
    net_url u;
    if (net_url_parse(&u, url, err, errlen) < 0) return NULL;
    int host = u.host && u.host[0];
    net_url_free(&u);
    const sink_ops *ops = NULL;
    for (int i = 0; sink_net_backends[i] && !ops; i++)
        if (sink_net_backends[i]->match(url, &o)) ops = sink_net_backends[i];
    if (!ops || !host) {
        char *label = sink_redact_url(url);
        snprintf(err, errlen, "%s: %s", label ? label : "?",
                 !ops ? "unknown destination scheme" : "no host");
        free(label);
        return NULL;
    }
    sink *sk = sink_open(url, &o, err, errlen);
    if (!sk) return NULL;
    if (!publisher_of(sk)) {
        snprintf(err, errlen, "%s: not a network destination", sk->label);
        sk->ops->close(sk);
        return NULL;
    }
    forward_out *f = calloc(1, sizeof *f);
    if (!f) {
        sk->ops->close(sk);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->sk = sk;
    return f;
}

const char *forward_out_kind(const forward_out *f)
{
    return f->sk->ops->name;
}
const char *forward_out_label(const forward_out *f)
{
    return f->sk->label;
}

int forward_out_write(forward_out *f, const char *name, const char *json, size_t len,
                      unsigned long long seq, double ts)
{
    js_event ev = {name, json, len, seq, ts, NULL, 0};
    return f->sk->ops->write(f->sk, &ev);
}

int forward_out_adopt(forward_out *f, const char *spool_path, char *err, size_t errlen)
{
    return publisher_adopt_spool(publisher_of(f->sk), spool_path, err, errlen);
}

void forward_out_stats(forward_out *f, unsigned long long *delivered, unsigned long long *dropped,
                       long long *pending)
{
    pub_stats st = {0};
    publisher_get_stats(publisher_of(f->sk), &st);
    *delivered = st.delivered;
    *dropped = st.dropped;
    *pending = st.pending;
}

int forward_out_close(forward_out *f, double timeout_s)
{
    if (!f) return 0;
    int rc = f->sk->ops->flush(f->sk, timeout_s);
    f->sk->ops->close(f->sk);
    free(f);
    return rc;
}
