/* consume.c — `jobscope serve --consume amqp://USER:PASS@HOST[:PORT]/VHOST/EXCHANGE`
 * (repeatable; docs/serve-site.md): a site collector fed by RabbitMQ.
 *
 * One thread per URL (a server task) declares a durable queue, binds it to
 * the exchange (declared as a durable topic exchange if missing, as the
 * amqp:// sink does) and consumes with manual acknowledgements: messages are
 * taken in batches (half the prefetch count, or what arrived within 0.2 s),
 * their events go through the server's common ingest in one durable batch,
 * and only then is the batch acknowledged (basic.ack, multiple).  A server
 * killed before that gets the messages again from the broker after its
 * restart (at-least-once; the store keeps the last value of a timestamp, so
 * a redelivered point is not counted twice).
 *
 * A message is one jobscope event (what `jobscope run -o amqp://...`
 * publishes) or several as NDJSON; a "jobscope.points" event (forward.h:
 * what `serve --forward amqp://...` sends for points without an event) is
 * stored as its points.  A message that is not a jobscope event is
 * acknowledged and counted as rejected, so one bad message cannot block the
 * queue.  If the store fails, the batch is returned to the broker (nack,
 * requeue) and the consumer waits before trying again.
 *
 * Query options: ?queue=NAME (default jobscope-serve), ?key=BINDING (default
 * "#"), ?prefetch=N (default 500). */
#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "server/server.h"
#include "server/forward.h"
#include "sink/url.h"
#include "util/log.h"

int sink_amqp_parse_path(const char *path, char **vhost, char **exchange); /* sink/amqp.c */

#define CH 1

typedef struct consumer {
    server *srv;
    char *label; /* URL without password */
    char *host, *user, *pass, *vhost, *exchange, *queue, *key;
    int port, tls, prefetch;
    amqp_connection_state_t conn;
    pthread_t thread;
    int running;
    volatile int stop;
    /* the current batch */
    char *buf; /* NDJSON of the events */
    size_t len, cap;
    uint64_t last_tag;
    int nmsg;
    unsigned long long messages, points_events, rejected, redelivered, store_failures;
    pthread_mutex_t mu; /* the counters, for /metrics */
} consumer;

#define MAX_CONSUMERS 8
/* The module's state: its consumers. */
typedef struct consume_state {
    consumer *v[MAX_CONSUMERS];
    int n;
} consume_state;

static void reply_text(amqp_rpc_reply_t r, const char *what, char *err, size_t errlen)
{
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
        snprintf(err, errlen, "%s: %s", what, amqp_error_string2(r.library_error));
    else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
             r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        amqp_channel_close_t *m = r.reply.decoded;
        snprintf(err, errlen, "%s: %u %.*s", what, m->reply_code, (int)m->reply_text.len,
                 (char *)m->reply_text.bytes);
    } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
               r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_connection_close_t *m = r.reply.decoded;
        snprintf(err, errlen, "%s: %u %.*s", what, m->reply_code, (int)m->reply_text.len,
                 (char *)m->reply_text.bytes);
    } else
        snprintf(err, errlen, "%s: no answer from the broker", what);
}

static void drop(consumer *c)
{
    if (c->conn) {
        amqp_connection_close(c->conn, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(c->conn);
    }
    c->conn = NULL;
}

static int rpc_ok(consumer *c, const char *what, char *err, size_t errlen)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c->conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return 0;
    reply_text(r, what, err, errlen);
    return -1;
}

static int connect_broker(consumer *c, char *err, size_t errlen)
{
    drop(c);
    c->conn = amqp_new_connection();
    struct timeval limit = {5, 0};
    amqp_set_handshake_timeout(c->conn, &limit);
    amqp_set_rpc_timeout(c->conn, &limit);
    amqp_socket_t *sock = c->tls ? amqp_ssl_socket_new(c->conn) : amqp_tcp_socket_new(c->conn);
    if (!sock) {
        snprintf(err, errlen, "cannot create a socket");
        return -1;
    }
    if (c->tls) {
        amqp_ssl_socket_set_cacert(sock, "/etc/ssl/certs/ca-certificates.crt");
        amqp_ssl_socket_set_verify_peer(sock, 1);
        amqp_ssl_socket_set_verify_hostname(sock, 1);
    }
    struct timeval tv = limit;
    int rc = amqp_socket_open_noblock(sock, c->host, c->port, &tv);
    if (rc != AMQP_STATUS_OK) {
        snprintf(err, errlen, "cannot connect to %s:%d: %s", c->host, c->port,
                 amqp_error_string2(rc));
        return -1;
    }
    amqp_rpc_reply_t r = amqp_login(c->conn, c->vhost, 0, 131072, 30, AMQP_SASL_METHOD_PLAIN,
                                    c->user ? c->user : "guest", c->pass ? c->pass : "guest");
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        reply_text(r, "login", err, errlen);
        return -1;
    }
    amqp_channel_open(c->conn, CH);
    if (rpc_ok(c, "channel.open", err, errlen)) return -1;
    if (c->exchange[0]) {
        amqp_exchange_declare(c->conn, CH, amqp_cstring_bytes(c->exchange),
                              amqp_cstring_bytes("topic"), 1, 0, 0, 0, amqp_empty_table);
        if (rpc_ok(c, "exchange.declare", err, errlen)) {
            /* missing: the channel was closed; create it as the amqp:// sink does */
            amqp_channel_close_ok_t ok = {0};
            amqp_send_method(c->conn, CH, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
            amqp_channel_open(c->conn, CH);
            if (rpc_ok(c, "channel.open", err, errlen)) return -1;
            amqp_exchange_declare(c->conn, CH, amqp_cstring_bytes(c->exchange),
                                  amqp_cstring_bytes("topic"), 0, 1, 0, 0, amqp_empty_table);
            if (rpc_ok(c, "exchange.declare", err, errlen)) return -1;
        }
    }
    amqp_queue_declare(c->conn, CH, amqp_cstring_bytes(c->queue), 0, 1, 0, 0, amqp_empty_table);
    if (rpc_ok(c, "queue.declare", err, errlen)) return -1;
    if (c->exchange[0]) {
        amqp_queue_bind(c->conn, CH, amqp_cstring_bytes(c->queue), amqp_cstring_bytes(c->exchange),
                        amqp_cstring_bytes(c->key), amqp_empty_table);
        if (rpc_ok(c, "queue.bind", err, errlen)) return -1;
    }
    amqp_basic_qos(c->conn, CH, 0, (uint16_t)c->prefetch, 0);
    if (rpc_ok(c, "basic.qos", err, errlen)) return -1;
    amqp_basic_consume(c->conn, CH, amqp_cstring_bytes(c->queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    if (rpc_ok(c, "basic.consume", err, errlen)) return -1;
    return 0;
}

static int buf_add(consumer *c, const void *p, size_t n)
{
    if (c->len + n + 2 > c->cap) {
        size_t cap = c->cap ? c->cap : 65536;
        while (cap < c->len + n + 2) cap *= 2;
        char *nb = realloc(c->buf, cap);
        if (!nb) return -1;
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, p, n);
    c->len += n;
    c->buf[c->len++] = '\n';
    c->buf[c->len] = 0;
    return 0;
}

/* A "jobscope.points" event: stores its points now.  1 = it was one (ok),
 * 0 = not one, -1 = store failure. */
static int points_event(consumer *c, const char *body, size_t len)
{
    if (len < 20 || !memmem(body, len < 200 ? len : 200, "\"" FORWARD_POINTS_EVENT "\"",
                            sizeof FORWARD_POINTS_EVENT + 1))
        return 0;
    json_t *d = json_loadb(body, len, 0, NULL);
    json_t *arr = json_object_get(d, "points");
    if (!json_is_array(arr) ||
        strcmp(json_string_value(json_object_get(d, "event")) ?: "", FORWARD_POINTS_EVENT)) {
        json_decref(d);
        return 0;
    }
    size_t n = json_array_size(arr), k = 0;
    store_point *pts = calloc(n ? n : 1, sizeof *pts);
    store_tag *tags = NULL;
    size_t ntags = 0;
    for (size_t i = 0; i < n; i++)
        ntags += json_object_size(json_object_get(json_array_get(arr, i), "tags"));
    tags = calloc(ntags ? ntags : 1, sizeof *tags);
    size_t ti = 0;
    for (size_t i = 0; pts && tags && i < n; i++) {
        json_t *p = json_array_get(arr, i);
        const char *m = json_string_value(json_object_get(p, "metric"));
        json_t *v = json_object_get(p, "value"), *t = json_object_get(p, "ts");
        if (!m || !json_is_number(v) || !json_is_integer(t)) continue;
        pts[k].metric = m;
        pts[k].value = json_number_value(v);
        pts[k].ts_ms = json_integer_value(t);
        pts[k].tags = &tags[ti];
        const char *key;
        json_t *tv;
        json_object_foreach(json_object_get(p, "tags"), key, tv)
        {
            if (!json_is_string(tv)) continue;
            tags[ti].key = key;
            tags[ti++].value = json_string_value(tv);
            pts[k].ntags++;
        }
        k++;
    }
    int rc = 1;
    char err[256];
    if (k && server_ingest_points(c->srv, pts, k, err, sizeof err) != 0) {
        js_log(1, NULL, "consume %s: %s", c->label, err);
        rc = -1;
    }
    free(pts);
    free(tags);
    json_decref(d);
    return rc;
}

/* Stores the batch, then acknowledges it; on a store failure hands it back. */
static int flush_batch(consumer *c)
{
    if (!c->nmsg) return 0;
    int rc = 0;
    if (c->len) {
        size_t ok = 0, bad = 0;
        char err[256] = "";
        if (server_ingest_ndjson(c->srv, c->buf, c->len, &ok, &bad, err, sizeof err) < 0) {
            js_log(1, NULL, "consume %s: not stored (%s); %d message(s) handed back", c->label, err,
                   c->nmsg);
            rc = -1;
        } else if (bad) {
            js_log(1, NULL, "consume %s: %zu message(s) were not jobscope events (%s)", c->label,
                   bad, err);
            pthread_mutex_lock(&c->mu);
            c->rejected += bad;
            pthread_mutex_unlock(&c->mu);
        }
    }
    if (rc == 0)
        amqp_basic_ack(c->conn, CH, c->last_tag, 1);
    else {
        amqp_basic_nack(c->conn, CH, c->last_tag, 1, 1);
        pthread_mutex_lock(&c->mu);
        c->store_failures++;
        pthread_mutex_unlock(&c->mu);
    }
    c->len = 0;
    c->nmsg = 0;
    return rc;
}

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *consume_thread(void *arg)
{
    consumer *c = arg;
    double backoff = 0.2, batch_start = 0;
    char err[512] = "", last_err[512] = "";
    while (!c->stop) {
        if (!c->conn) {
            if (connect_broker(c, err, sizeof err) < 0) {
                if (strcmp(err, last_err))
                    js_log(1, NULL, "consume %s: %s (retrying)", c->label, err);
                snprintf(last_err, sizeof last_err, "%s", err);
                drop(c);
                for (double t = 0; t < backoff && !c->stop; t += 0.1) usleep(100000);
                backoff = backoff * 2 > 5 ? 5 : backoff * 2;
                continue;
            }
            if (last_err[0] || c->srv->cfg.verbose)
                js_log(1, NULL, "consume %s: consuming queue %s", c->label, c->queue);
            last_err[0] = 0;
            backoff = 0.2;
            c->len = 0;
            c->nmsg = 0;
        }
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c->conn);
        struct timeval tv = {0, 200000};
        amqp_rpc_reply_t r = amqp_consume_message(c->conn, &env, &tv, 0);
        if (r.reply_type == AMQP_RESPONSE_NORMAL) {
            if (!c->nmsg) batch_start = mono();
            c->last_tag = env.delivery_tag;
            c->nmsg++;
            pthread_mutex_lock(&c->mu);
            c->messages++;
            if (env.redelivered) c->redelivered++;
            pthread_mutex_unlock(&c->mu);
            const char *body = env.message.body.bytes;
            size_t len = env.message.body.len;
            int pe = points_event(c, body, len);
            if (pe == 0) buf_add(c, body, len); /* one event, or NDJSON: the ingest splits lines */
            amqp_destroy_envelope(&env);
            if (pe < 0) { /* the store failed: all back to the broker */
                amqp_basic_nack(c->conn, CH, c->last_tag, 1, 1);
                c->len = 0;
                c->nmsg = 0;
                sleep(1);
                continue;
            }
            /* half the prefetch window: the broker keeps sending the other
             * half while this batch is being stored */
            if (c->nmsg >= (c->prefetch + 1) / 2 || mono() - batch_start > 0.2) {
                if (flush_batch(c) < 0) sleep(1);
            }
            continue;
        }
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_TIMEOUT) {
            if (flush_batch(c) < 0) sleep(1);
            continue;
        }
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
            /* a frame other than a delivery (e.g. a channel close) */
            amqp_frame_t f;
            if (amqp_simple_wait_frame_noblock(c->conn, &f, &tv) == AMQP_STATUS_OK &&
                f.frame_type == AMQP_FRAME_METHOD && f.payload.method.id == AMQP_BASIC_ACK_METHOD)
                continue;
        }
        reply_text(r, "consume", err, sizeof err);
        js_log(1, NULL,
               "consume %s: %s (reconnecting; %d unacknowledged message(s) will come again)",
               c->label, err, c->nmsg);
        drop(c);
    }
    /* Shutdown: store and acknowledge what is in hand, then leave. */
    if (c->conn) {
        flush_batch(c);
        drop(c);
    }
    return NULL;
}

static int consume_start(server *s, void *arg, char *err, size_t errlen)
{
    consumer *c = arg;
    if (pthread_create(&c->thread, NULL, consume_thread, c) != 0) {
        snprintf(err, errlen, "consume %s: cannot start a thread", c->label);
        return -1;
    }
    c->running = 1;
    return 0;
}

static void consume_stop(server *s, void *arg)
{
    consumer *c = arg;
    if (!c->running) return;
    c->stop = 1;
    pthread_join(c->thread, NULL);
    c->running = 0;
}

static void consume_metrics(server *s, struct sbuf *out, void *arg)
{
    consume_state *st = arg;
    int nconsumers = st->n;
    consumer **consumers = st->v;
    if (!nconsumers) return;
    sbuf_puts(out, "# HELP jobscope_serve_consume_messages AMQP messages taken by --consume.\n"
                   "# TYPE jobscope_serve_consume_messages counter\n");
    for (int i = 0; i < nconsumers; i++) {
        consumer *c = consumers[i];
        if (c->srv != s) continue;
        pthread_mutex_lock(&c->mu);
        sbuf_printf(out, "jobscope_serve_consume_messages{queue=\"%s\",state=\"received\"} %llu\n",
                    c->queue, c->messages);
        sbuf_printf(out,
                    "jobscope_serve_consume_messages{queue=\"%s\",state=\"redelivered\"} %llu\n",
                    c->queue, c->redelivered);
        sbuf_printf(out, "jobscope_serve_consume_messages{queue=\"%s\",state=\"rejected\"} %llu\n",
                    c->queue, c->rejected);
        pthread_mutex_unlock(&c->mu);
    }
}

static void consumer_free(consumer *c)
{
    if (!c) return;
    free(c->label);
    free(c->host);
    free(c->user);
    free(c->pass);
    free(c->vhost);
    free(c->exchange);
    free(c->queue);
    free(c->key);
    free(c->buf);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static consumer *consumer_new(server *s, const char *url, char *err, size_t errlen)
{
    net_url u;
    char *label = NULL;
    if (net_url_open(&u, url, "a broker host", &label, err, errlen) < 0) return NULL;
    consumer *c = calloc(1, sizeof *c);
    if (!c) {
        net_url_free(&u);
        free(label);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->srv = s;
    c->label = label;
    if (strcmp(u.scheme, "amqp") && strcmp(u.scheme, "amqps")) {
        snprintf(err, errlen, "%s: --consume takes amqp:// or amqps:// URLs", label);
        goto bad;
    }
    c->tls = !strcmp(u.scheme, "amqps");
    c->port = u.port ? u.port : c->tls ? 5671 : 5672;
    c->host = strdup(u.host);
    c->user = u.user ? strdup(u.user) : NULL;
    c->pass = u.pass ? strdup(u.pass) : NULL;
    if (sink_amqp_parse_path(u.path, &c->vhost, &c->exchange) < 0) {
        snprintf(err, errlen, "%s: expected amqp://USER:PASS@HOST/VHOST/EXCHANGE", label);
        goto bad;
    }
    c->queue = u.query ? net_url_query_get(u.query, "queue") : NULL;
    if (!c->queue) c->queue = strdup("jobscope-serve");
    c->key = u.query ? net_url_query_get(u.query, "key") : NULL;
    if (!c->key) c->key = strdup("#");
    char *pf = u.query ? net_url_query_get(u.query, "prefetch") : NULL;
    c->prefetch = pf ? atoi(pf) : 500;
    free(pf);
    if (c->prefetch < 1 || c->prefetch > 65535) {
        snprintf(err, errlen, "%s: prefetch must be 1..65535", label);
        goto bad;
    }
    net_url_free(&u);
    return c;
bad:
    net_url_free(&u);
    consumer_free(c);
    return NULL;
}

static int consume_init(server *s, void **state, char *err, size_t errlen)
{
    if (!s->cfg.consume.n) return 0;
    consume_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *state = st;
    for (int i = 0; i < s->cfg.consume.n; i++) {
        if (st->n >= MAX_CONSUMERS) {
            snprintf(err, errlen, "--consume: at most %d", MAX_CONSUMERS);
            return -1;
        }
        consumer *c = consumer_new(s, s->cfg.consume.v[i], err, errlen);
        if (!c) return -1;
        st->v[st->n++] = c;
        server_task t = {"consume", consume_start, consume_stop, c};
        if (server_task_add(s, &t) < 0) {
            snprintf(err, errlen, "--consume: too many background tasks");
            return -1;
        }
    }
    server_on_metrics(s, consume_metrics, st);
    return 0;
}

static void consume_fini(server *s, void *state)
{
    consume_state *st = state;
    (void)s;
    if (!st) return;
    for (int i = 0; i < st->n; i++) consumer_free(st->v[i]);
    free(st);
}

SERVER_MODULE(consume_module, "consume", consume_init, consume_fini)
