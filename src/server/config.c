/* config.c — the configuration of `jobscope serve` (server.h): defaults
 * for this user (root or not), one setter per option by its long name, the
 * config file (/etc/jobscope/serve.conf, docs/serve.md) and the parsers of
 * durations and sizes they share.  Option names and config keys are the
 * same words (server_config_set), so both are documented once; serve.c
 * reads the command line into it. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <strings.h>
#include <unistd.h>
#include "server.h"
#include "util/serve_detect.h"

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

/* Every option, by its long name: what it sets and how its value is read
 * (the command line and the config file alike). */
enum opt_kind {
    O_STR,   /* a string */
    O_WORDS, /* words separated by commas or blanks, added to a list */
    O_LIST,  /* one more entry of a list */
    O_FLAG,  /* on without a value, or with 1, true, yes */
    O_DUR,   /* a duration (server_parse_duration), at least min */
    O_INT,   /* an integer in min..max */
    O_SIZE,  /* a size (server_parse_size), at least min */
};
typedef struct opt {
    const char *name;
    enum opt_kind kind;
    size_t off; /* of the field in server_config */
    double min, max;
    int above;           /* O_DUR: must be above min (not at least) */
    const char *usage;   /* the example in the error of a bad value */
    const char *too_low; /* the error of a value below min (else usage) */
} opt;

#define F(field)  offsetof(server_config, field)
#define DUR_ABOVE "expected a duration above 0 such as 10s, 0.5"
#define DUR       "expected a duration such as 30d, 12h, 90s, 0.5"
#define SIZE      "expected a size such as 10G, 512M, 65536"
static const opt options[] = {
    {"listen", O_STR, F(listen), 0, 0, 0, NULL, NULL},
    {"socket", O_STR, F(socket_path), 0, 0, 0, NULL, NULL},
    {"store", O_STR, F(store_dir), 0, 0, 0, NULL, NULL},
    {"token-file", O_STR, F(token_file), 0, 0, 0, NULL, NULL},
    {"peers-file", O_STR, F(peers_file), 0, 0, 0, NULL, NULL},
    {"spool-dir", O_STR, F(spool_dir), 0, 0, 0, NULL, NULL},
    {"peers", O_WORDS, F(peers), 0, 0, 0, NULL, NULL},
    {"forward", O_LIST, F(forward), 0, 0, 0, NULL, NULL},
    {"consume", O_LIST, F(consume), 0, 0, 0, NULL, NULL},
    {"verbose", O_FLAG, F(verbose), 0, 0, 0, NULL, NULL},
    {"peers-insecure", O_FLAG, F(peers_insecure), 0, 0, 0, NULL, NULL},
    {"header-timeout", O_DUR, F(header_timeout_s), 0, 0, 1, DUR_ABOVE, NULL},
    {"body-timeout", O_DUR, F(body_timeout_s), 0, 0, 1, DUR_ABOVE, NULL},
    {"query-timeout", O_DUR, F(query_timeout_s), 0, 0, 0, DUR_ABOVE, NULL},
    {"retention", O_DUR, F(retention_s), 0, 0, 0, DUR, NULL},
    {"node-interval", O_DUR, F(node_interval_s), 0, 0, 0, DUR, NULL},
    {"peer-timeout", O_DUR, F(peer_timeout_s), 0, 0, 1, DUR, "peer-timeout must be above 0"},
    {"max-connections", O_INT, F(max_connections), 1, 65536, 0, "expected 1..65536", NULL},
    {"max-connections-per-client", O_INT, F(max_per_client), 1, 65536, 0, "expected 1..65536",
     NULL},
    {"threads", O_INT, F(threads), 1, 256, 0, "expected 1..256", NULL},
    {"max-size", O_SIZE, F(max_bytes), 0, 0, 0, SIZE, NULL},
    {"body-limit", O_SIZE, F(body_limit), 1024, 0, 0, SIZE,
     "body-limit must be at least 1024 bytes"},
    {"body-memory", O_SIZE, F(body_memory), 1 << 20, 0, 0, SIZE, "body-memory must be at least 1M"},
};

/* A value below the option's bound: its own message, or its usage. */
static int too_low(const opt *o, const char *v, char *err, size_t errlen)
{
    if (o->too_low)
        snprintf(err, errlen, "%s", o->too_low);
    else
        snprintf(err, errlen, "%s '%s': %s", o->name, v, o->usage);
    return -1;
}

int server_config_set(server_config *c, const char *key, const char *v, char *err, size_t errlen)
{
    const opt *o = NULL;
    for (size_t i = 0; i < sizeof options / sizeof options[0] && !o; i++)
        if (!strcmp(key, options[i].name)) o = &options[i];
    if (!o) {
        snprintf(err, errlen, "unknown setting '%s'", key);
        return -1;
    }
    void *field = (char *)c + o->off;
    if (o->kind == O_FLAG) {
        *(int *)field =
            !v || !*v || !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes");
        return 0;
    }
    if (!v || !*v) {
        snprintf(err, errlen, "%s needs a value", key);
        return -1;
    }
    double d;
    long long ll;
    char *end;
    switch (o->kind) {
    case O_STR:
        if (field == &c->listen) c->listen_given = 1;
        return set_str(field, v);
    case O_WORDS:
        strlist_add_words(field, v);
        return 0;
    case O_LIST:
        return strlist_add(field, v, strlen(v));
    case O_DUR:
        if (server_parse_duration(v, &d) < 0) {
            snprintf(err, errlen, "%s '%s': %s", key, v, o->usage);
            return -1;
        }
        if (o->above && d <= o->min) return too_low(o, v, err, errlen);
        *(double *)field = d;
        return 0;
    case O_INT:
        ll = strtoll(v, &end, 10);
        if (*end || ll < o->min || ll > o->max) {
            snprintf(err, errlen, "%s '%s': %s", key, v, o->usage);
            return -1;
        }
        *(int *)field = (int)ll;
        return 0;
    case O_SIZE:
        if (server_parse_size(v, &ll) < 0) {
            snprintf(err, errlen, "%s '%s': %s", key, v, o->usage);
            return -1;
        }
        if (ll < o->min) return too_low(o, v, err, errlen);
        if (field == &c->max_bytes)
            *(long long *)field = ll;
        else
            *(size_t *)field = (size_t)ll;
        return 0;
    case O_FLAG:
        break;
    }
    return -1;
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

int server_config_resolve(server_config *c, char *err, size_t errlen)
{
    if (c->token_file && read_token(c, err, errlen) < 0) return -1;
    if (c->listen && *c->listen && strcmp(c->listen, "none") && !is_loopback_listen(c->listen) &&
        !c->token) {
        snprintf(err, errlen, "--listen %s is not a loopback address: --token-file is required",
                 c->listen);
        return -1;
    }
    if (c->peers_file && read_peers_file(c, err, errlen) < 0) return -1;
    return 0;
}
