/* serve.c — `jobscope serve`: options, the config file
 * (/etc/jobscope/serve.conf, docs/serve.md), defaults, start-up and a clean
 * shutdown on SIGINT/SIGTERM.  Option names and config keys are the same
 * words (server_config_set), so both are documented once. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "server.h"
#include "serve_cmd.h"
#include "util/serve_detect.h"
#include "bpf/bpfpin.h"

#define DEFAULT_CONFIG "/etc/jobscope/serve.conf"
#define EXIT_ERR       125

/* ---- defaults ---- */

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

int server_default_socket(char *buf, size_t len)
{
    return serve_socket_path(buf, len);
}

static char *default_store_dir(void)
{
    char buf[PATH_MAX];
    const char *st = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (geteuid() == 0)
        snprintf(buf, sizeof buf, "/var/lib/jobscope");
    else if (st && *st == '/')
        snprintf(buf, sizeof buf, "%s/jobscope", st);
    else if (home && *home)
        snprintf(buf, sizeof buf, "%s/.local/state/jobscope", home);
    else
        snprintf(buf, sizeof buf, "/var/tmp/jobscope-%u", (unsigned)geteuid());
    return strdup(buf);
}

void server_config_defaults(server_config *c)
{
    memset(c, 0, sizeof *c);
    c->listen = strdup("127.0.0.1:4242");
    c->store_dir = default_store_dir();
    c->peer_timeout_s = 2;
    c->node_interval_s = 1;
    c->body_limit = 32u << 20;
    c->body_memory = 256u << 20;
    c->header_timeout_s = 10;
    c->body_timeout_s = 60;
    c->query_timeout_s = 30;
    c->max_connections = 2048;
    c->max_per_client = 256;
    c->threads = 4;
}

static void strlist_free(server_strlist *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static int strlist_add(server_strlist *l, const char *s, size_t n)
{
    char **v = realloc(l->v, (size_t)(l->n + 1) * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->v[l->n] = strndup(s, n);
    return l->v[l->n++] ? 0 : -1;
}

/* Adds every comma- or blank-separated word of s. */
static void strlist_add_words(server_strlist *l, const char *s)
{
    while (*s) {
        s += strspn(s, ", \t\r\n");
        size_t n = strcspn(s, ", \t\r\n");
        if (n && *s != '#') strlist_add(l, s, n);
        if (*s == '#') break;
        s += n;
    }
}

void server_config_free(server_config *c)
{
    free(c->listen);
    free(c->socket_path);
    free(c->store_dir);
    free(c->token_file);
    if (c->token) memset(c->token, 0, strlen(c->token));
    free(c->token);
    free(c->peers_file);
    free(c->config_file);
    free(c->spool_dir);
    strlist_free(&c->peers);
    strlist_free(&c->forward);
    strlist_free(&c->consume);
    memset(c, 0, sizeof *c);
}

int server_parse_duration(const char *s, double *out)
{
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0 || v != v) return -1;
    double mul = 1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        mul = 1;
    else if (!strcmp(end, "ms"))
        mul = 1e-3;
    else if (!strcmp(end, "m"))
        mul = 60;
    else if (!strcmp(end, "h"))
        mul = 3600;
    else if (!strcmp(end, "d"))
        mul = 86400;
    else if (!strcmp(end, "w"))
        mul = 7 * 86400;
    else if (!strcmp(end, "y"))
        mul = 365 * 86400;
    else
        return -1;
    *out = v * mul;
    return 0;
}

int server_parse_size(const char *s, long long *out)
{
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0 || v != v) return -1;
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 0:
        break;
    case 'K':
        mul = 1024.0;
        end++;
        break;
    case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
        mul = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    case 'B':
        break;
    default:
        return -1;
    }
    if (toupper((unsigned char)*end) == 'I') end++;
    if (toupper((unsigned char)*end) == 'B') end++;
    if (*end) return -1;
    if (v * mul > 9e18) return -1;
    *out = (long long)(v * mul);
    return 0;
}

static int set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
    return 0;
}

int server_config_set(server_config *c, const char *key, const char *v, char *err, size_t errlen)
{
    double d;
    long long ll;
#define NEED()                                                                                     \
    do {                                                                                           \
        if (!v || !*v) {                                                                           \
            snprintf(err, errlen, "%s needs a value", key);                                        \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
    if (!strcmp(key, "listen")) {
        NEED();
        c->listen_given = 1;
        return set_str(&c->listen, v);
    }
    if (!strcmp(key, "socket")) {
        NEED();
        return set_str(&c->socket_path, v);
    }
    if (!strcmp(key, "store")) {
        NEED();
        return set_str(&c->store_dir, v);
    }
    if (!strcmp(key, "token-file")) {
        NEED();
        return set_str(&c->token_file, v);
    }
    if (!strcmp(key, "peers-file")) {
        NEED();
        return set_str(&c->peers_file, v);
    }
    if (!strcmp(key, "spool-dir")) {
        NEED();
        return set_str(&c->spool_dir, v);
    }
    if (!strcmp(key, "peers")) {
        NEED();
        strlist_add_words(&c->peers, v);
        return 0;
    }
    if (!strcmp(key, "forward")) {
        NEED();
        return strlist_add(&c->forward, v, strlen(v));
    }
    if (!strcmp(key, "consume")) {
        NEED();
        return strlist_add(&c->consume, v, strlen(v));
    }
    if (!strcmp(key, "verbose") || !strcmp(key, "peers-insecure")) {
        int on = !v || !*v || !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes");
        *(key[0] == 'v' ? &c->verbose : &c->peers_insecure) = on;
        return 0;
    }
    if (!strcmp(key, "header-timeout") || !strcmp(key, "body-timeout") ||
        !strcmp(key, "query-timeout")) {
        NEED();
        if (server_parse_duration(v, &d) < 0 || (key[0] != 'q' && d <= 0)) {
            snprintf(err, errlen, "%s '%s': expected a duration above 0 such as 10s, 0.5", key, v);
            return -1;
        }
        *(key[0] == 'h'   ? &c->header_timeout_s
          : key[0] == 'b' ? &c->body_timeout_s
                          : &c->query_timeout_s) = d;
        return 0;
    }
    if (!strcmp(key, "max-connections") || !strcmp(key, "max-connections-per-client")) {
        NEED();
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 65536) {
            snprintf(err, errlen, "%s '%s': expected 1..65536", key, v);
            return -1;
        }
        *(strlen(key) > 15 ? &c->max_per_client : &c->max_connections) = (int)n;
        return 0;
    }
    if (!strcmp(key, "retention") || !strcmp(key, "peer-timeout") ||
        !strcmp(key, "node-interval")) {
        NEED();
        if (server_parse_duration(v, &d) < 0) {
            snprintf(err, errlen, "%s '%s': expected a duration such as 30d, 12h, 90s, 0.5", key,
                     v);
            return -1;
        }
        if (key[0] == 'r')
            c->retention_s = d;
        else if (key[0] == 'p') {
            if (d <= 0) {
                snprintf(err, errlen, "peer-timeout must be above 0");
                return -1;
            }
            c->peer_timeout_s = d;
        } else
            c->node_interval_s = d;
        return 0;
    }
    if (!strcmp(key, "max-size") || !strcmp(key, "body-limit") || !strcmp(key, "body-memory")) {
        NEED();
        if (server_parse_size(v, &ll) < 0) {
            snprintf(err, errlen, "%s '%s': expected a size such as 10G, 512M, 65536", key, v);
            return -1;
        }
        if (key[0] == 'm')
            c->max_bytes = ll;
        else if (!strcmp(key, "body-memory")) {
            if (ll < 1 << 20) {
                snprintf(err, errlen, "body-memory must be at least 1M");
                return -1;
            }
            c->body_memory = (size_t)ll;
        } else {
            if (ll < 1024) {
                snprintf(err, errlen, "body-limit must be at least 1024 bytes");
                return -1;
            }
            c->body_limit = (size_t)ll;
        }
        return 0;
    }
    if (!strcmp(key, "threads")) {
        NEED();
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 256) {
            snprintf(err, errlen, "threads '%s': expected 1..256", v);
            return -1;
        }
        c->threads = (int)n;
        return 0;
    }
    snprintf(err, errlen, "unknown setting '%s'", key);
    return -1;
#undef NEED
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t l = strlen(s);
    while (l && isspace((unsigned char)s[l - 1])) s[--l] = 0;
    return s;
}

int server_config_load(server_config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *l = trim(line);
        if (!*l || *l == '#') continue;
        char *eq = strchr(l, '=');
        char *key = l, *val = NULL;
        if (eq) {
            *eq = 0;
            key = trim(l);
            val = trim(eq + 1);
            size_t vl = strlen(val);
            if (vl >= 2 && ((val[0] == '"' && val[vl - 1] == '"') ||
                            (val[0] == '\'' && val[vl - 1] == '\''))) {
                val[vl - 1] = 0;
                val++;
            }
        }
        char why[256];
        if (!strcmp(key, "config") || server_config_set(c, key, val, why, sizeof why) < 0) {
            if (!strcmp(key, "config"))
                snprintf(why, sizeof why, "'config' cannot be set in a config file");
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

/* ---- checks before start ---- */

static int is_loopback_listen(const char *spec)
{
    char host[256];
    if (spec[0] == '[') {
        const char *end = strchr(spec, ']');
        if (!end) return 0;
        snprintf(host, sizeof host, "%.*s", (int)(end - spec - 1), spec + 1);
    } else {
        const char *colon = strrchr(spec, ':');
        if (!colon) return 0; /* "PORT": every interface */
        snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
    }
    return !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost");
}

static int read_token(server_config *c, char *err, size_t errlen)
{
    FILE *f = fopen(c->token_file, "r");
    if (!f) {
        snprintf(err, errlen, "--token-file %s: %s", c->token_file, strerror(errno));
        return -1;
    }
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *t = trim(buf);
    if (strlen(t) < 16 || strpbrk(t, " \t\r\n")) {
        snprintf(err, errlen, "--token-file %s: expected one token of at least 16 characters",
                 c->token_file);
        return -1;
    }
    c->token = strdup(t);
    memset(buf, 0, sizeof buf);
    return 0;
}

static int read_peers_file(server_config *c, char *err, size_t errlen)
{
    FILE *f = fopen(c->peers_file, "r");
    if (!f) {
        snprintf(err, errlen, "--peers-file %s: %s", c->peers_file, strerror(errno));
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) strlist_add_words(&c->peers, line);
    fclose(f);
    return 0;
}

/* ---- the command ---- */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: jobscope serve [OPTIONS]\n"
        "\n"
        "The per-node telemetry service: an embedded time-series store fed by local\n"
        "jobscope runs (found through a Unix socket), OpenTSDB /api/put, Dragon's\n"
        "/api/metrics, the Influx line protocol and NDJSON events; answers the\n"
        "OpenTSDB HTTP API (Grafana), Prometheus /metrics, across --peers.\n"
        "\n"
        "Listening and security:\n"
        "  --listen ADDR:PORT    TCP listener (default 127.0.0.1:4242; [::1]:PORT for IPv6;\n"
        "                        PORT 0 picks a free port; 'none' = Unix socket only).  A\n"
        "                        non-loopback address requires --token-file.\n"
        "  --socket PATH         the Unix socket for local jobscope runs (default\n"
        "                        /run/jobscope/serve.sock as root, else\n"
        "                        $XDG_RUNTIME_DIR/jobscope/serve.sock; 'none' = off); its\n"
        "                        directory is created 0700\n"
        "  --token-file FILE     clients over TCP must send 'Authorization: Bearer TOKEN'\n"
        "                        (FILE holds the token, 16+ characters); the Unix socket\n"
        "                        needs none\n"
        "  --body-limit SIZE     largest request body (default 32M); larger: 413\n"
        "  --body-memory SIZE    request bodies held at once, all connections together\n"
        "                        (default 256M); a body beyond it: 503\n"
        "  --header-timeout SECS a request's headers must arrive within SECS of the\n"
        "                        connection or of the previous answer (default 10)\n"
        "  --body-timeout SECS   its body within SECS of its headers (default 60)\n"
        "  --max-connections N   connections per listener (default 2048)\n"
        "  --max-connections-per-client N\n"
        "                        connections from one address (default 256)\n"
        "  --query-timeout SECS  a query's work stops after SECS (default 30; 0 = none)\n"
        "  --threads N           HTTP worker threads (default 4)\n"
        "\n"
        "Store:\n"
        "  --store DIR           store directory (default $XDG_STATE_HOME/jobscope, i.e.\n"
        "                        ~/.local/state/jobscope; root: /var/lib/jobscope)\n"
        "  --retention DURATION  drop points older than this (30d, 12h, 90m; default: keep)\n"
        "  --max-size SIZE       drop the oldest data beyond this size (10G, 512M)\n"
        "\n"
        "Other nodes and engines:\n"
        "  --peers H:P,H:P,...   answer every API call for these nodes too (fan-out, merge)\n"
        "  --peers-file FILE     peers, one or more per line (# comments)\n"
        "  --peer-timeout SECS   deadline per peer request (default 2): partial answer +\n"
        "                        warning after it\n"
        "  --peers-insecure      with --token-file, send the token to http:// peers\n"
        "                        (refused without it: the token would cross the network\n"
        "                        in clear)\n"
        "  --forward URL         also hand every point/event to URL (influx://, opentsdb://,\n"
        "                        amqp://, elasticsearch://; repeatable; spooled when down)\n"
        "  --consume URL         take events from an AMQP queue "
        "(amqp://USER:PASS@HOST/VHOST/EXCHANGE;\n"
        "                        amqps:// for TLS; repeatable; acked once durable); URL options:\n"
        "                        ?queue=NAME durable queue bound to EXCHANGE (default\n"
        "                        jobscope-serve), &key=BINDING its routing key (default #),\n"
        "                        &prefetch=N unacked messages in flight (default 500)\n"
        "  --spool-dir DIR       where forwarders spool (default: under the store)\n"
        "\n"
        "Node metrics:\n"
        "  --node-interval SECS  collect load_average, used_RAM, cpu_percent, GPU metrics\n"
        "                        every SECS (default 1; 0 = off)\n"
        "\n"
        "Other:\n"
        "  --config FILE         settings file (default " DEFAULT_CONFIG " when it exists):\n"
        "                        'key = value' lines, keys are these option names without\n"
        "                        '--', # comments; the command line wins\n"
        "  -v, --verbose         log every request\n"
        "  -h, --help            this text\n"
        "\n"
        "Endpoints: /api/put /api/metrics /write /api/events /api/query /api/query/last\n"
        "/api/suggest /api/aggregators /api/config/filters /api/search/lookup /api/version\n"
        "/metrics (docs/serve.md).  SIGINT/SIGTERM stop the server cleanly.\n");
}

static const struct option long_opts[] = {
    {"listen", required_argument, 0, 0},
    {"socket", required_argument, 0, 0},
    {"store", required_argument, 0, 0},
    {"retention", required_argument, 0, 0},
    {"max-size", required_argument, 0, 0},
    {"token-file", required_argument, 0, 0},
    {"peers", required_argument, 0, 0},
    {"peers-file", required_argument, 0, 0},
    {"peer-timeout", required_argument, 0, 0},
    {"forward", required_argument, 0, 0},
    {"consume", required_argument, 0, 0},
    {"node-interval", required_argument, 0, 0},
    {"body-limit", required_argument, 0, 0},
    {"body-memory", required_argument, 0, 0},
    {"header-timeout", required_argument, 0, 0},
    {"body-timeout", required_argument, 0, 0},
    {"query-timeout", required_argument, 0, 0},
    {"max-connections", required_argument, 0, 0},
    {"max-connections-per-client", required_argument, 0, 0},
    {"peers-insecure", no_argument, 0, 0},
    {"threads", required_argument, 0, 0},
    {"spool-dir", required_argument, 0, 0},
    {"config", required_argument, 0, 0},
    {"verbose", no_argument, 0, 'v'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

int serve_main(int argc, char **argv)
{
    server_config cfg;
    char err[512];
    /* One malloc arena: glibc gives every libmicrohttpd worker its own, and
     * each kept the freed buffers of the biggest request it had served
     * (several times the memory of the store itself with 10,000 series);
     * tcache keeps small allocations per thread anyway (bench/README.md). */
    mallopt(M_ARENA_MAX, 1);
    server_config_defaults(&cfg);

    /* The config file first (the command line overrides it). */
    const char *config = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[i + 1];
        else if (!strncmp(argv[i], "--config=", 9))
            config = argv[i] + 9;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            server_config_free(&cfg);
            return 0;
        }
    }
    if (!config && access(DEFAULT_CONFIG, F_OK) == 0) config = DEFAULT_CONFIG;
    if (config) {
        cfg.config_file = strdup(config);
        if (server_config_load(&cfg, config, err, sizeof err) < 0) goto fail;
    }

    optind = 1;
    opterr = 0; /* one line of our own below, not getopt's too */
    int c, idx;
    while ((c = getopt_long(argc, argv, "vh", long_opts, &idx)) != -1) {
        if (c == 'v') {
            cfg.verbose = 1;
            continue;
        }
        if (c == 'h') {
            usage(stdout);
            server_config_free(&cfg);
            return 0;
        }
        if (c != 0) {
            fprintf(stderr,
                    "jobscope serve: unknown option or missing value '%s' (see 'jobscope "
                    "serve --help')\n",
                    argv[optind - 1]);
            server_config_free(&cfg);
            return EXIT_ERR;
        }
        const char *name = long_opts[idx].name;
        if (!strcmp(name, "config")) continue;
        char why[256];
        if (server_config_set(&cfg, name, optarg, why, sizeof why) < 0) {
            snprintf(err, sizeof err, "--%s", why);
            goto fail;
        }
    }
    if (optind < argc) {
        snprintf(err, sizeof err, "unexpected argument '%s' (see 'jobscope serve --help')",
                 argv[optind]);
        goto fail;
    }

    if (cfg.token_file && read_token(&cfg, err, sizeof err) < 0) goto fail;
    if (cfg.listen && *cfg.listen && strcmp(cfg.listen, "none") &&
        !is_loopback_listen(cfg.listen) && !cfg.token) {
        snprintf(err, sizeof err, "--listen %s is not a loopback address: --token-file is required",
                 cfg.listen);
        goto fail;
    }
    if (cfg.peers_file && read_peers_file(&cfg, err, sizeof err) < 0) goto fail;

    /* The well-known socket: taken by a running server, this one goes on
     * without it; an explicit --socket that is taken is an error. */
    int socket_default = !cfg.socket_path;
    if (socket_default) {
        char path[PATH_MAX];
        if (server_default_socket(path, sizeof path) == 0) cfg.socket_path = strdup(path);
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    server *s = server_create(&cfg, err, sizeof err);
    if (!s) goto fail;
    err[0] = 0;
    int rc = server_start(s, err, sizeof err);
    /* The well-known socket taken by another server, or its directory made
     * by someone else (another user can create /tmp/jobscope-UID first):
     * TCP only, said in one line.  An explicit --socket is an error. */
    if (rc < 0 && socket_default &&
        (strstr(err, "another server") || strstr(err, "must be a directory of this user") ||
         strstr(err, "cannot create")) &&
        s->cfg.listen && *s->cfg.listen && strcmp(s->cfg.listen, "none")) {
        server_log(s, "warning: %s; going on without the Unix socket", err);
        free(s->cfg.socket_path);
        s->cfg.socket_path = NULL;
        rc = server_start(s, err, sizeof err);
    }
    if (rc < 0) {
        server_destroy(s);
        goto fail_nofree;
    }
    char where[600] = "";
    if (server_tcp_port(s)) {
        const char *colon = strrchr(s->cfg.listen, ':');
        int hl = colon ? (int)(colon - s->cfg.listen) : 0;
        snprintf(where, sizeof where, "http://%.*s:%d", hl, s->cfg.listen, server_tcp_port(s));
    }
    if (s->cfg.socket_path && *s->cfg.socket_path && strcmp(s->cfg.socket_path, "none"))
        snprintf(where + strlen(where), sizeof where - strlen(where), "%sunix:%s",
                 *where ? ", " : "", s->cfg.socket_path);
    server_log(s, "listening on %s (store %s)", where, s->cfg.store_dir);
    char bpf[1200]; /* the BPF sampler, loaded once per node for every run (docs/bpf.md) */
    if (bpfpin_node(bpf, sizeof bpf) != -2 || s->cfg.verbose) server_log(s, "%s", bpf);
    int sig = 0;
    sigwait(&set, &sig);
    server_log(s, "signal %d: stopping", sig);
    server_destroy(s);
    return 0;

fail:
    server_config_free(&cfg);
fail_nofree:
    fprintf(stderr, "jobscope serve: %s\n", err);
    return EXIT_ERR;
}
