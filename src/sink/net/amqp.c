/* amqp.c — `amqp://[USER:PASS@]HOST[:PORT]/VHOST/EXCHANGE` and `amqps://…`:
 * AMQP 0-9-1 through rabbitmq-c, the URL form Pegasus tools use.
 *
 * Messages are persistent (delivery_mode 2, content_type application/json)
 * and published on a channel in confirm mode: a batch is published in one go
 * and counts as delivered only up to the broker's last contiguous ack, so a
 * connection lost mid-batch re-sends the unconfirmed tail (at-least-once).
 * The routing key is the event name unless `?routing_key=KEY`.  The exchange
 * is declared as a durable topic exchange if it does not exist yet (an
 * existing exchange of any type is used as it is); an empty exchange name
 * means the default exchange.  VHOST is percent-encoded (`%2f` is "/"; an
 * empty one means "/").  Reconnection with backoff is the publisher's. */
#include <amqp.h>
#include <errno.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "../delivery/publisher.h"
#include "../url.h"

#define AMQP_CHANNEL 1

typedef struct amqp_ctx {
    amqp_connection_state_t conn;
    char *host, *user, *pass, *vhost, *exchange, *routing_key, *ca_file, *label;
    int port, tls, insecure;
    uint64_t next_tag;
    unsigned char *acked; /* per batch item */
    int nacked_cap;
} amqp_ctx;

static void describe_reply(amqp_rpc_reply_t r, const char *what, char *err, size_t errlen)
{
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        snprintf(err, errlen, "%s: ok", what);
        break;
    case AMQP_RESPONSE_NONE:
        snprintf(err, errlen, "%s: no answer from the broker", what);
        break;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        snprintf(err, errlen, "%s: %s", what, amqp_error_string2(r.library_error));
        break;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            amqp_connection_close_t *m = r.reply.decoded;
            snprintf(err, errlen, "%s: broker closed the connection: %u %.*s", what, m->reply_code,
                     (int)m->reply_text.len, (char *)m->reply_text.bytes);
        } else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            amqp_channel_close_t *m = r.reply.decoded;
            snprintf(err, errlen, "%s: broker closed the channel: %u %.*s", what, m->reply_code,
                     (int)m->reply_text.len, (char *)m->reply_text.bytes);
        } else {
            snprintf(err, errlen, "%s: broker error (method 0x%08X)", what, r.reply.id);
        }
        break;
    }
}

static void amqp_ctx_drop(void *ctx)
{
    amqp_ctx *a = ctx;
    if (a->conn) amqp_destroy_connection(a->conn); /* closes the socket, no handshake */
    a->conn = NULL;
}

static int open_channel(amqp_ctx *a, char *err, size_t errlen)
{
    amqp_channel_open(a->conn, AMQP_CHANNEL);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(a->conn);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        describe_reply(r, "channel.open", err, errlen);
        return -1;
    }
    amqp_confirm_select(a->conn, AMQP_CHANNEL);
    r = amqp_get_rpc_reply(a->conn);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        describe_reply(r, "confirm.select", err, errlen);
        return -1;
    }
    a->next_tag = 1;
    return 0;
}

static int amqp_ctx_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    amqp_ctx *a = ctx;
    amqp_ctx_drop(a);
    a->conn = amqp_new_connection();
    if (timeout > 5) timeout = 5;
    struct timeval limit = {(time_t)timeout, (suseconds_t)((timeout - (time_t)timeout) * 1e6)};
    /* login and every RPC: never hang */
    amqp_set_handshake_timeout(a->conn, &limit);
    amqp_set_rpc_timeout(a->conn, &limit);
    amqp_socket_t *sock = a->tls ? amqp_ssl_socket_new(a->conn) : amqp_tcp_socket_new(a->conn);
    if (!sock) {
        snprintf(err, errlen, "cannot create socket");
        return -1;
    }
    if (a->tls) {
        if (a->insecure) {
            amqp_ssl_socket_set_verify_peer(sock, 0);
            amqp_ssl_socket_set_verify_hostname(sock, 0);
        } else {
            const char *ca = a->ca_file ? a->ca_file : "/etc/ssl/certs/ca-certificates.crt";
            if (amqp_ssl_socket_set_cacert(sock, ca) != AMQP_STATUS_OK) {
                snprintf(err, errlen, "cannot load CA file %s", ca);
                return -1;
            }
            amqp_ssl_socket_set_verify_peer(sock, 1);
            amqp_ssl_socket_set_verify_hostname(sock, 1);
        }
    }
    struct timeval tv = limit;
    errno = 0;
    int rc = amqp_socket_open_noblock(sock, a->host, a->port, &tv);
    if (rc != AMQP_STATUS_OK) {
        snprintf(err, errlen, "cannot connect to %s:%d: %s", a->host, a->port,
                 rc != AMQP_STATUS_SOCKET_ERROR  ? amqp_error_string2(rc)
                 : errno && errno != EINPROGRESS ? strerror(errno)
                                                 : "connection refused or host unreachable");
        return -1;
    }
    amqp_rpc_reply_t r = amqp_login(a->conn, a->vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                                    a->user ? a->user : "guest", a->pass ? a->pass : "guest");
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        describe_reply(r, "login", err, errlen);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_CONNECTION_CLOSED)
            snprintf(err, errlen, "login refused (user, password or vhost '%s' wrong?)", a->vhost);
        return -1;
    }
    if (open_channel(a, err, errlen) < 0) return -1;
    if (a->exchange[0]) {
        /* Use the exchange if it exists; otherwise create it as Pegasus does. */
        amqp_exchange_declare(a->conn, AMQP_CHANNEL, amqp_cstring_bytes(a->exchange),
                              amqp_cstring_bytes("topic"), 1, 0, 0, 0, amqp_empty_table);
        r = amqp_get_rpc_reply(a->conn);
        if (r.reply_type != AMQP_RESPONSE_NORMAL) {
            if (r.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
                r.reply.id != AMQP_CHANNEL_CLOSE_METHOD) {
                describe_reply(r, "exchange.declare", err, errlen);
                return -1;
            }
            amqp_channel_close_ok_t ok = {0};
            amqp_send_method(a->conn, AMQP_CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
            if (open_channel(a, err, errlen) < 0) return -1;
            amqp_exchange_declare(a->conn, AMQP_CHANNEL, amqp_cstring_bytes(a->exchange),
                                  amqp_cstring_bytes("topic"), 0, 1, 0, 0, amqp_empty_table);
            r = amqp_get_rpc_reply(a->conn);
            if (r.reply_type != AMQP_RESPONSE_NORMAL) {
                describe_reply(r, "exchange.declare", err, errlen);
                return -1;
            }
        }
    }
    return 0;
}

static int amqp_ctx_send(void *ctx, const pub_item *it, int n, double timeout, char *err,
                         size_t errlen)
{
    amqp_ctx *a = ctx;
    if (!a->conn) {
        snprintf(err, errlen, "not connected");
        return 0;
    }
    if (n > a->nacked_cap) {
        free(a->acked);
        a->acked = malloc((size_t)n);
        a->nacked_cap = a->acked ? n : 0;
        if (!a->acked) {
            snprintf(err, errlen, "out of memory");
            return 0;
        }
    }
    memset(a->acked, 0, (size_t)n);
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags =
        AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_APP_ID_FLAG;
    props.content_type = amqp_cstring_bytes("application/json");
    props.delivery_mode = 2;
    props.app_id = amqp_cstring_bytes("jobscope");
    uint64_t first = a->next_tag;
    int sent = 0;
    for (; sent < n; sent++) {
        amqp_bytes_t body = {it[sent].len, (void *)it[sent].json};
        amqp_bytes_t rk = amqp_cstring_bytes(a->routing_key ? a->routing_key : it[sent].name);
        if (rk.len > 255) rk.len = 255; /* a short string in AMQP: never fail on a long name */
        int rc = amqp_basic_publish(a->conn, AMQP_CHANNEL, amqp_cstring_bytes(a->exchange), rk, 0,
                                    0, &props, body);
        if (rc != AMQP_STATUS_OK) {
            snprintf(err, errlen, "publish: %s", amqp_error_string2(rc));
            break;
        }
        a->next_tag++;
    }
    /* Wait for the confirms of what went out. */
    double deadline = now_mono() + timeout;
    int done = 0;
    while (done < sent) {
        double left = deadline - now_mono();
        if (left <= 0) {
            snprintf(err, errlen, "no confirm from the broker within %.0f s", timeout);
            break;
        }
        struct timeval tv = {(time_t)left, (suseconds_t)((left - (time_t)left) * 1e6)};
        amqp_frame_t f;
        int rc = amqp_simple_wait_frame_noblock(a->conn, &f, &tv);
        if (rc == AMQP_STATUS_TIMEOUT) continue;
        if (rc != AMQP_STATUS_OK) {
            snprintf(err, errlen, "waiting for confirms: %s", amqp_error_string2(rc));
            break;
        }
        if (f.frame_type != AMQP_FRAME_METHOD) continue;
        amqp_method_t *m = &f.payload.method;
        if (m->id == AMQP_BASIC_ACK_METHOD) {
            amqp_basic_ack_t *ack = m->decoded;
            for (uint64_t t = ack->multiple ? first : ack->delivery_tag; t <= ack->delivery_tag;
                 t++)
                if (t >= first && t < first + (uint64_t)sent) a->acked[t - first] = 1;
            while (done < sent && a->acked[done]) done++;
        } else if (m->id == AMQP_BASIC_NACK_METHOD) {
            snprintf(err, errlen, "the broker refused a message (nack)");
            break;
        } else if (m->id == AMQP_CHANNEL_CLOSE_METHOD || m->id == AMQP_CONNECTION_CLOSE_METHOD) {
            amqp_rpc_reply_t r = {AMQP_RESPONSE_SERVER_EXCEPTION, *m, 0};
            describe_reply(r, "publish", err, errlen);
            break;
        }
    }
    amqp_maybe_release_buffers(a->conn);
    return done;
}

static void amqp_ctx_destroy(void *ctx)
{
    amqp_ctx *a = ctx;
    if (a->conn) { /* a polite goodbye; RPCs are bounded by the rpc timeout */
        amqp_channel_close(a->conn, AMQP_CHANNEL, AMQP_REPLY_SUCCESS);
        amqp_connection_close(a->conn, AMQP_REPLY_SUCCESS);
    }
    amqp_ctx_drop(a);
    if (a->pass) memset(a->pass, 0, strlen(a->pass));
    free(a->host);
    free(a->user);
    free(a->pass);
    free(a->vhost);
    free(a->exchange);
    free(a->routing_key);
    free(a->ca_file);
    free(a->label);
    free(a->acked);
    free(a);
}

static int amqp_match(const char *url, const sink_options *o)
{
    return !strncasecmp(url, "amqp://", 7) || !strncasecmp(url, "amqps://", 8);
}

static const pub_backend amqp_backend = {
    "amqp", 2000, amqp_ctx_connect, amqp_ctx_send, amqp_ctx_drop, amqp_ctx_destroy,
};
static sink *amqp_open(const char *url, const sink_options *o, char *err, size_t errlen);

const sink_ops sink_amqp_ops = {
    .name = "amqp",
    .match = amqp_match,
    .open = amqp_open,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

/* Splits "/VHOST/EXCHANGE" (both percent-encoded). */
int sink_amqp_parse_path(const char *path, char **vhost, char **exchange)
{
    *vhost = *exchange = NULL;
    if (*path == '/') path++;
    const char *slash = strchr(path, '/');
    if (!slash || strchr(slash + 1, '/')) return -1;
    *vhost = net_url_decode(path, (size_t)(slash - path));
    *exchange = net_url_decode(slash + 1, strlen(slash + 1));
    if (!**vhost) {
        free(*vhost);
        *vhost = strdup("/");
    }
    return 0;
}

static sink *amqp_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    net_url u;
    char *label;
    if (net_url_open(&u, url, NULL, &label, err, errlen) < 0)
        return publisher_bad_url(&sink_amqp_ops, url, o, err, errlen);
    amqp_ctx *a = calloc(1, sizeof *a);
    a->label = label;
    if (!u.host[0] || sink_amqp_parse_path(u.path, &a->vhost, &a->exchange) < 0) {
        snprintf(err, errlen, "%s: expected amqp[s]://[USER:PASS@]HOST[:PORT]/VHOST/EXCHANGE",
                 label);
        goto bad;
    }
    size_t pos = 0;
    char *k, *v;
    while (net_url_query_next(u.query, &pos, &k, &v)) {
        if (!strcmp(k, "routing_key") && !a->routing_key) {
            a->routing_key = v;
            free(k);
            continue;
        }
        snprintf(err, errlen, "%s: unknown option '%s' (only ?routing_key=KEY)", label, k);
        free(k);
        free(v);
        goto bad;
    }
    a->tls = !strcmp(u.scheme, "amqps");
    a->port = u.port ? u.port : a->tls ? 5671 : 5672;
    a->host = strdup(u.host);
    if (u.user) a->user = strdup(u.user);
    if (u.pass) a->pass = strdup(u.pass);
    a->insecure = o ? o->insecure : 0;
    if (o && o->ca_file) a->ca_file = strdup(o->ca_file);
    net_url_free(&u);
    return publisher_sink_create(&sink_amqp_ops, url, &amqp_backend, a, o, err, errlen);
bad:
    net_url_free(&u);
    amqp_ctx_destroy(a);
    return publisher_bad_url(&sink_amqp_ops, url, o, err, errlen);
}
