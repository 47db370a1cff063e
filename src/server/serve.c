/* serve.c — the command `jobscope serve`: its command line (read into the
 * configuration of config.c, over the config file), start-up and a clean
 * shutdown on SIGINT/SIGTERM. */
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
#include "util/log.h"
#include "bpf/bpfpin.h"

#define DEFAULT_CONFIG "/etc/jobscope/serve.conf"
#define EXIT_ERR       125

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

int serve_main(int argc, char **argv, const server_module *const *modules)
{
    server_config cfg;
    char err[512];
    js_log_identity("jobscope serve", 1); /* "2026-...Z jobscope serve: ..." */
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

    if (server_config_resolve(&cfg, err, sizeof err) < 0) goto fail;

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

    server *s = server_create(&cfg, modules, err, sizeof err);
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
        js_log(1, NULL, "warning: %s; going on without the Unix socket", err);
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
    js_log(1, NULL, "listening on %s (store %s)", where, s->cfg.store_dir);
    char bpf[1200]; /* the BPF sampler, loaded once per node for every run (docs/bpf.md) */
    if (bpfpin_node(bpf, sizeof bpf) != -2 || s->cfg.verbose) js_log(1, NULL, "%s", bpf);
    int sig = 0;
    sigwait(&set, &sig);
    js_log(1, NULL, "signal %d: stopping", sig);
    server_destroy(s);
    return 0;

fail:
    server_config_free(&cfg);
fail_nofree:
    fprintf(stderr, "jobscope serve: %s\n", err);
    return EXIT_ERR;
}
