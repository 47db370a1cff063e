/* forward.c — `jobscope serve --forward URL` (repeatable; docs/serve-site.md):
 * hands every ingested point or event on to a bigger engine through the
 * monitor's own network sinks (src/sink), so a forward has the publisher's
 * guarantees: a bounded memory queue, delivery from its own thread, a spool
 * file under --spool-dir (default: the store's spool/ folder) while the
 * destination is down, at-least-once delivery.  A spool left by an earlier
 * run of the server (crash, or a destination down at shutdown) is taken
 * over at start-up and delivered first.
 *
 * What goes where:
 *   influx://, opentsdb://,  time-series engines: every stored point, after it
 *   promrw://                is durable here.  Points of one series and
 *                            instant travel as one event {"event": PREFIX,
 *                            "ts", "tags": {...}, FIELD: value} where METRIC =
 *                            PREFIX.FIELD, so a jobscope event's points come
 *                            out exactly as `jobscope run -o` would send them;
 *                            a metric without a dot ("load_average") is
 *                            {"event": METRIC, "_value": v} (tsconv.h).
 *   everything else          event destinations (amqp://, elasticsearch://,
 *   (amqp, elasticsearch,    http://): every jobscope event as it came, and
 *    http)                   points that came without an event (/api/put,
 *                            /write, Dragon's /api/metrics, node metrics) as
 *                            {"event":"jobscope.points","ts":T,"points":
 *                            [{"metric","ts"(ms),"value","tags"}]}, which
 *                            --consume on a collector stores as points. */
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include "server/server.h"
#include "server/forward.h"
#include "util/log.h"

#define FWD_MAX              16
#define FWD_POINTS_PER_EVENT 1000

typedef struct fwd {
    server *srv;
    forward_out *out;
    int ts_engine; /* influx/opentsdb: points; else events */
    pthread_mutex_t mu;
    uint64_t seq;
    unsigned long long sent, refused;
} fwd;

/* The module's state: its destinations. */
typedef struct fwd_state {
    fwd *v[FWD_MAX];
    int n;
    char *spool_dir; /* made here when not --spool-dir */
} fwd_state;

/* The sink's write() must see one caller at a time, in order. */
static void fwd_write(fwd *f, const char *name, const char *json, size_t len, double ts)
{
    pthread_mutex_lock(&f->mu);
    if (forward_out_write(f->out, name, json, len, ++f->seq, ts) == 0)
        f->sent++;
    else
        f->refused++;
    pthread_mutex_unlock(&f->mu);
}

static void emit_json(fwd *f, json_t *ev)
{
    char *s = json_dumps(ev, JSON_COMPACT);
    if (s) {
        fwd_write(f, json_string_value(json_object_get(ev, "event")), s, strlen(s),
                  json_number_value(json_object_get(ev, "ts")));
        free(s);
    }
}

static int same_series(const store_point *a, const store_point *b, size_t prefix_a, size_t prefix_b)
{
    if (a->ts_ms != b->ts_ms || a->ntags != b->ntags || prefix_a != prefix_b ||
        strncmp(a->metric, b->metric, prefix_a))
        return 0;
    for (int i = 0; i < a->ntags; i++)
        if (strcmp(a->tags[i].key, b->tags[i].key) || strcmp(a->tags[i].value, b->tags[i].value))
            return 0;
    return 1;
}

static size_t prefix_len(const char *metric)
{
    const char *dot = strrchr(metric, '.');
    return dot && dot != metric && dot[1] ? (size_t)(dot - metric) : strlen(metric);
}

static int reserved(const char *k)
{
    return !strcmp(k, "event") || !strcmp(k, "ts") || !strcmp(k, "seq") || !strcmp(k, "tags");
}

/* Time-series engines: runs of points with the same prefix, tags and time
 * become one event. */
static void forward_ts_points(fwd *f, const store_point *pts, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t pl = prefix_len(pts[i].metric);
        size_t j = i + 1;
        if (pl != strlen(pts[i].metric))
            while (j < n && same_series(&pts[i], &pts[j], pl, prefix_len(pts[j].metric)) &&
                   prefix_len(pts[j].metric) != strlen(pts[j].metric))
                j++;
        json_t *ev = json_object();
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)(pl < 511 ? pl : 511), pts[i].metric);
        json_object_set_new(ev, "event", json_string(name));
        json_object_set_new(ev, "ts", json_real(pts[i].ts_ms / 1000.0));
        json_t *tags = json_object(); /* every stored tag: a "tags" object is all tags */
        for (int t = 0; t < pts[i].ntags; t++)
            json_object_set_new(tags, pts[i].tags[t].key, json_string(pts[i].tags[t].value));
        json_object_set_new(ev, "tags", tags);
        for (size_t k = i; k < j; k++) {
            const char *field = pl == strlen(pts[k].metric) ? "_value" : pts[k].metric + pl + 1;
            if (!reserved(field)) json_object_set_new(ev, field, json_real(pts[k].value));
        }
        emit_json(f, ev);
        json_decref(ev);
        i = j;
    }
}

/* Event destinations: points without an event, in batches. */
static void forward_point_batch(fwd *f, const store_point *pts, size_t n)
{
    for (size_t i = 0; i < n; i += FWD_POINTS_PER_EVENT) {
        size_t end = i + FWD_POINTS_PER_EVENT < n ? i + FWD_POINTS_PER_EVENT : n;
        json_t *arr = json_array();
        for (size_t k = i; k < end; k++) {
            json_t *tags = json_object();
            for (int t = 0; t < pts[k].ntags; t++)
                json_object_set_new(tags, pts[k].tags[t].key, json_string(pts[k].tags[t].value));
            json_array_append_new(arr, json_pack("{s:s,s:I,s:f,s:o}", "metric", pts[k].metric, "ts",
                                                 (json_int_t)pts[k].ts_ms, "value", pts[k].value,
                                                 "tags", tags));
        }
        json_t *ev = json_pack("{s:s,s:f,s:o}", "event", FORWARD_POINTS_EVENT, "ts",
                               pts[i].ts_ms / 1000.0, "points", arr);
        if (ev) emit_json(f, ev);
        json_decref(ev);
    }
}

static void on_points(server *s, const store_point *pts, size_t n, void *arg)
{
    fwd *f = arg;
    if (f->ts_engine)
        forward_ts_points(f, pts, n);
    else if (!server_ingest_in_event())
        forward_point_batch(f, pts, n);
}

static void on_event(server *s, const char *json, size_t len, const server_event_fields *ef,
                     void *arg)
{
    (void)ef;
    fwd *f = arg;
    if (f->ts_engine) return; /* its points went already */
    json_t *d = json_loadb(json, len, 0, NULL);
    const char *name = json_string_value(json_object_get(d, "event"));
    if (name) fwd_write(f, name, json, len, json_number_value(json_object_get(d, "ts")));
    json_decref(d);
}

/* Takes over one spool an earlier run left for this destination (not locked
 * by a running process), oldest first. */
static void adopt_old_spool(server *s, fwd *f, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char best[4096] = "";
    time_t best_t = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".spool") || strncmp(e->d_name, "jobscope-", 9))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        char head[600];
        ssize_t r = read(fd, head, sizeof head - 1);
        int busy = flock(fd, LOCK_EX | LOCK_NB) != 0;
        struct stat sb;
        fstat(fd, &sb);
        close(fd);
        if (r <= 0 || busy) continue;
        head[r] = 0;
        char *url = strstr(head, "\nurl ");
        if (!url) continue;
        url += 5;
        url[strcspn(url, "\n")] = 0;
        if (strcmp(url, forward_out_label(f->out))) continue;
        if (!best[0] || sb.st_mtime < best_t) {
            snprintf(best, sizeof best, "%s", path);
            best_t = sb.st_mtime;
        }
    }
    closedir(d);
    if (!best[0]) return;
    char err[300];
    if (forward_out_adopt(f->out, best, err, sizeof err) == 0)
        js_log(1, NULL, "forward %s: delivering what an earlier run left in %s",
               forward_out_label(f->out), best);
    else
        js_log(1, NULL, "forward %s: %s: %s", forward_out_label(f->out), best, err);
}

static void forward_metrics(server *s, struct sbuf *out, void *arg)
{
    fwd_state *st = arg;
    int nfwd = st->n;
    fwd **fwds = st->v;
    if (nfwd == 0) return;
    sbuf_puts(out,
              "# HELP jobscope_serve_forward_events Events handed to a --forward destination.\n"
              "# TYPE jobscope_serve_forward_events counter\n");
    for (int i = 0; i < nfwd; i++)
        if (fwds[i]->srv == s) {
            unsigned long long dl, dr;
            long long pend;
            forward_out_stats(fwds[i]->out, &dl, &dr, &pend);
            sbuf_printf(
                out, "jobscope_serve_forward_events{destination=\"%d\",state=\"delivered\"} %llu\n",
                i, dl);
            sbuf_printf(
                out, "jobscope_serve_forward_events{destination=\"%d\",state=\"dropped\"} %llu\n",
                i, dr + fwds[i]->refused);
        }
    sbuf_puts(out, "# HELP jobscope_serve_forward_pending Events waiting for a --forward "
                   "destination (memory + spool).\n"
                   "# TYPE jobscope_serve_forward_pending gauge\n");
    for (int i = 0; i < nfwd; i++)
        if (fwds[i]->srv == s) {
            unsigned long long dl, dr;
            long long pend;
            forward_out_stats(fwds[i]->out, &dl, &dr, &pend);
            sbuf_printf(out, "jobscope_serve_forward_pending{destination=\"%d\"} %lld\n", i, pend);
        }
}

static int forward_init(server *s, void **state, char *err, size_t errlen)
{
    if (s->cfg.forward.n == 0) return 0;
    fwd_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *state = st;
    const char *dir = s->cfg.spool_dir;
    if (!dir || !*dir) {
        if (asprintf(&st->spool_dir, "%s/spool", s->cfg.store_dir) < 0) {
            st->spool_dir = NULL;
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        dir = st->spool_dir;
    }
    mkdir(dir, 0700);
    for (int i = 0; i < s->cfg.forward.n; i++) {
        if (st->n >= FWD_MAX) {
            snprintf(err, errlen, "--forward: at most %d destinations", FWD_MAX);
            return -1;
        }
        char e[512] = "";
        forward_out *o = forward_out_open(s->cfg.forward.v[i], dir, s->cfg.verbose, e, sizeof e);
        if (!o) {
            snprintf(err, errlen, "%s", e);
            return -1;
        }
        fwd *f = calloc(1, sizeof *f);
        if (!f) {
            forward_out_close(o, 0);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        f->srv = s;
        f->out = o;
        const char *name = forward_out_kind(o);
        f->ts_engine =
            !strcmp(name, "influx") || !strcmp(name, "opentsdb") || !strcmp(name, "remote_write");
        pthread_mutex_init(&f->mu, NULL);
        adopt_old_spool(s, f, dir);
        st->v[st->n++] = f;
        server_on_points(s, on_points, f);
        server_on_event(s, on_event, f);
        js_log(1, NULL, "forward: %s (%s)", forward_out_label(o),
               f->ts_engine ? "points" : "events");
    }
    server_on_metrics(s, forward_metrics, st);
    return 0;
}

/* After the listeners and tasks stopped: deliver what is queued within a few
 * seconds, the rest stays in the spool for the next start. */
static void forward_fini(server *s, void *state)
{
    fwd_state *st = state;
    if (!st) return;
    for (int i = 0; i < st->n; i++) {
        fwd *f = st->v[i];
        char label[512];
        snprintf(label, sizeof label, "%s", forward_out_label(f->out));
        if (forward_out_close(f->out, 5.0) != 0)
            js_log(1, NULL, "forward %s: not everything delivered; the rest waits in the spool",
                   label);
        pthread_mutex_destroy(&f->mu);
        free(f);
    }
    free(st->spool_dir);
    free(st);
}

SERVER_MODULE(forward_module, "forward", forward_init, forward_fini)
