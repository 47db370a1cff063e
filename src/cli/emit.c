/* emit.c — `jobscope emit NAME VALUE [--tag K=V]... [--level N] [--ts T]` and
 * `jobscope emit --payload FILE|-`: the shell client of the custom-metrics
 * listener (src/metrics/listener.c), speaking the wire format of
 * src/metrics/wire.h over the socket named by JOBSCOPE_SOCKET.
 *
 * Outside a monitored job (no JOBSCOPE_SOCKET) and for a level above the
 * run's telemetry level it does nothing and exits 0, so scripts need no
 * guard.  Bad arguments are jobscope's own errors: one line, exit 125.  A
 * send waits at most 2 s for a busy monitor, then the metric is dropped
 * (exit 0; -v says so). */
#include "emit.h"
#include "options.h"
#include "../metrics/payload.h"
#include "../metrics/wire.h"
#include "../event/event.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static void emit_usage(FILE *f)
{
    fputs("usage: jobscope emit [OPTIONS] NAME VALUE\n"
          "       jobscope emit [OPTIONS] --payload FILE|-\n"
          "\n"
          "Sends a custom metric (or a whole monitoring payload object) to the\n"
          "`jobscope run` monitoring this job; each becomes an event (jobscope.metric, or\n"
          "the payload's monitoring_event).  Does nothing, successfully, outside a\n"
          "monitored job (JOBSCOPE_SOCKET unset) or for a level above the run's\n"
          "telemetry level.\n"
          "\n"
          "  NAME                 1-128 characters of A-Z a-z 0-9 _ . : / -\n"
          "  VALUE                a finite number\n"
          "      --tag KEY=VALUE  a tag (repeatable, at most 16)\n"
          "      --level N        telemetry level of the metric, 1-255 (default 1)\n"
          "      --ts EPOCH       timestamp in epoch seconds (default: now)\n"
          "      --payload FILE   send FILE ('-': stdin), a JSON object\n"
          "                       {\"monitoring_event\": ..., \"ts\": ..., \"payload\": [{...}, "
          "...]}\n"
          "  -v, --verbose        say why nothing was sent\n"
          "  -h, --help           this help\n",
          f);
}

static int emit_bad(const char *fmt, const char *arg)
{
    fputs("jobscope: emit: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return JS_EXIT_ERROR;
}

static void emit_noop(void *ctx, const char *name, double ts, const char *f, size_t n)
{
    (void)ctx;
    (void)name;
    (void)ts;
    (void)f;
    (void)n;
}

/* Reads a whole file (or stdin) of at most PAYLOAD_CAP bytes. */
static char *emit_read(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 3);
    while (buf) {
        size_t r = fread(buf + 3 + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
        if (n == cap) {
            if (cap > PAYLOAD_CAP) {
                free(buf);
                buf = NULL;
                errno = EFBIG;
                break;
            }
            cap *= 2;
            char *nb = realloc(buf, cap + 3);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

static int emit_send(const char *path, const char *msg, size_t n, int verbose)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        if (verbose) fprintf(stderr, "jobscope: emit: JOBSCOPE_SOCKET is too long\n");
        return 0;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    int sz = (int)n + 65536;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    if (n > 65536) /* root may go beyond wmem_max */
        setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof sz);
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ssize_t r = -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        do r = send(fd, msg, n, MSG_NOSIGNAL);
        while (r < 0 && errno == EINTR);
    }
    int err = errno;
    close(fd);
    if (r < 0 && err == EMSGSIZE) {
        char num[32];
        snprintf(num, sizeof num, "%zu", n);
        return emit_bad("a payload of %s bytes is too large for the socket; print it in a "
                        "MONITORING_PAYLOAD block under --scan-output instead",
                        num);
    }
    if (r < 0 && verbose) fprintf(stderr, "jobscope: emit: not sent: %s\n", strerror(err));
    return 0;
}

/* "--opt VALUE" or "--opt=VALUE": returns the value (advancing *i) or NULL */
static const char *emit_optval(int argc, char **argv, int *i, const char *opt, int *err)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n)) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n]) return NULL;
    if (*i + 1 >= argc) {
        *err = 1;
        return NULL;
    }
    return argv[++*i];
}

int emit_main(int argc, char **argv)
{
    char *tags[WIRE_MAX_TAGS];
    int ntags = 0, level = 1, verbose = 0, npos = 0, err = 0, dashdash = 0;
    double ts = 0;
    const char *payload_path = NULL, *pos[2] = {NULL, NULL}, *v;
    char *end;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (dashdash || a[0] != '-' || !a[1] || (a[1] >= '0' && a[1] <= '9') || a[1] == '.') {
            if (npos == 2)
                return emit_bad("unexpected argument '%s' (try 'jobscope emit --help')", a);
            pos[npos++] = a;
        } else if (!strcmp(a, "--")) {
            dashdash = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            emit_usage(stdout);
            return 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbose = 1;
        } else if ((v = emit_optval(argc, argv, &i, "--tag", &err))) {
            const char *eq = strchr(v, '=');
            if (!eq || !wire_name_ok(v, (size_t)(eq - v), WIRE_MAX_TAGKEY) ||
                !wire_tagval_ok(eq + 1, strlen(eq + 1))) {
                char shown[96]; /* one line: control characters shown as '?' */
                snprintf(shown, sizeof shown, "%s", v);
                for (char *c = shown; *c; c++)
                    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
                return emit_bad("bad --tag '%s': KEY=VALUE, KEY like a metric name, VALUE "
                                "at most 256 bytes without control characters",
                                shown);
            }
            if (ntags == WIRE_MAX_TAGS) return emit_bad("too many tags (at most %s)", "16");
            tags[ntags++] = (char *)v;
        } else if ((v = emit_optval(argc, argv, &i, "--level", &err))) {
            long l = strtol(v, &end, 10);
            if (end == v || *end || l < 1 || l > WIRE_MAX_LEVEL)
                return emit_bad("bad --level '%s': an integer 1 to 255", v);
            level = (int)l;
        } else if ((v = emit_optval(argc, argv, &i, "--ts", &err))) {
            ts = strtod(v, &end);
            if (end == v || *end || !(ts >= WIRE_MIN_TS && ts < WIRE_MAX_TS))
                return emit_bad("bad --ts '%s': epoch seconds, 1 to 1e11", v);
        } else if ((v = emit_optval(argc, argv, &i, "--payload", &err))) {
            payload_path = v;
        } else {
            return emit_bad(err ? "option '%s' needs a value"
                                : "unknown option '%s' (try 'jobscope emit --help')",
                            a);
        }
    }
    if (payload_path ? npos != 0 : npos != 2)
        return emit_bad("needs NAME VALUE, or --payload FILE%s (try 'jobscope emit --help')", "");

    const char *sock = getenv("JOBSCOPE_SOCKET");
    const char *lv = getenv("JOBSCOPE_TELEMETRY_LEVEL");
    long maxlevel = lv && *lv ? strtol(lv, NULL, 10) : 1L << 30;

    if (payload_path) {
        size_t n;
        char *buf = emit_read(payload_path, &n);
        if (!buf)
            return emit_bad(errno == EFBIG ? "%s: larger than 1 MiB" : "cannot read %s",
                            payload_path);
        const char *why = NULL;
        if (payload_parse(buf + 3, n, 1, emit_noop, NULL, NULL, &why) < 0) {
            free(buf);
            return emit_bad("%s", why);
        }
        int rc = 0;
        if (sock && *sock && maxlevel > 0) {
            memcpy(buf, "P1\t", 3);
            rc = emit_send(sock, buf, n + 3, verbose);
        } else if (verbose) {
            fprintf(stderr, "jobscope: emit: no monitor (JOBSCOPE_SOCKET unset)\n");
        }
        free(buf);
        return rc;
    }

    const char *name = pos[0];
    if (!wire_name_ok(name, strlen(name), WIRE_MAX_NAME))
        return emit_bad("bad name '%s': 1-128 characters of A-Z a-z 0-9 _ . : / -", name);
    double value = strtod(pos[1], &end);
    if (end == pos[1] || *end || !isfinite(value))
        return emit_bad("bad value '%s': a finite number", pos[1]);
    if (!sock || !*sock) {
        if (verbose) fprintf(stderr, "jobscope: emit: no monitor (JOBSCOPE_SOCKET unset)\n");
        return 0;
    }
    if (level > maxlevel) {
        if (verbose)
            fprintf(stderr, "jobscope: emit: level %d is above the run's %ld\n", level, maxlevel);
        return 0;
    }
    char msg[8192];
    if (ts <= 0) ts = now_epoch();
    size_t n =
        wire_format(msg, sizeof msg, name, value, ts, level, (long)getppid(), 0, tags, ntags);
    if (!n) return emit_bad("metric too long%s", "");
    return emit_send(sock, msg, n, verbose);
}
