/* sink.c — the table of destinations and URL dispatch (see sink.h). */
#include "sink.h"
#include "publisher.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>

extern const sink_ops sink_csv_ops;
extern const sink_ops sink_file_ops;

/* Built into jobscope: plain paths (file) last. */
static const sink_ops *const sink_backends[] = {
    &sink_csv_ops,
    &sink_file_ops,
};

/* ---- the network plugin ------------------------------------------------- */

/* Programs that link the backends in (tests) have the table itself. */
extern const sink_ops *const sink_net_backends[] __attribute__((weak));

static const sink_ops *const *net_backends;   /* from jobscope-net.so */
static char net_error[256];

#ifndef JOBSCOPE_LIBDIR
#define JOBSCOPE_LIBDIR "/usr/local/lib/jobscope"
#endif

static int net_try(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/jobscope-net.so", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        if (access(path, F_OK) == 0) snprintf(net_error, sizeof net_error, "%s", dlerror());
        return 0;
    }
    net_backends = dlsym(h, "sink_net_backends");
    return net_backends != NULL;
}

/* $JOBSCOPE_PLUGIN_DIR, then beside the executable (the build tree), then
 * ../lib/jobscope beside it and the configured library directory. */
static const sink_ops *const *net_load(void)
{
    static int tried;
    if (tried) return net_backends;
    tried = 1;
    if (sink_net_backends) return net_backends = sink_net_backends;
    snprintf(net_error, sizeof net_error, "jobscope-net.so not found");
    const char *env = getenv("JOBSCOPE_PLUGIN_DIR");
    if (env && *env && net_try(env)) return net_backends;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 32);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            if (net_try(exe)) return net_backends;
            strcat(exe, "/../lib/jobscope");
            if (net_try(exe)) return net_backends;
        }
    }
    net_try(JOBSCOPE_LIBDIR);
    return net_backends;
}

/* A destination no backend can serve: like any unusable network destination,
 * a warning and a spool for a later `jobscope flush -o GOOD_URL SPOOL`, or
 * fatal with --require-output. */
static int unknown_match(const char *url, const sink_options *o) { (void)url; (void)o; return 0; }
static const sink_ops sink_unknown_ops = {
    "unknown", unknown_match, NULL, publisher_sink_write, publisher_sink_flush, publisher_sink_close,
};

sink *sink_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    size_t scheme = strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    int remote = scheme > 0 && !strncmp(url + scheme, "://", 3) && strncmp(url, "file://", 7);
    if (remote) {
        const sink_ops *const *net = net_load();
        for (size_t i = 0; net && net[i]; i++)
            if (net[i]->match(url, o))
                return net[i]->open(url, o, err, errlen);
        char why[320];
        snprintf(why, sizeof why, "%s", net ? "unknown scheme" : net_error);
        return publisher_sink_unusable(&sink_unknown_ops, url, why, o, err, errlen);
    }
    for (size_t i = 0; i < sizeof sink_backends / sizeof sink_backends[0]; i++)
        if (sink_backends[i]->match(url, o))
            return sink_backends[i]->open(url, o, err, errlen);
    char *label = sink_redact_url(url);
    snprintf(err, errlen, "%s: unknown destination", label ? label : "?");
    free(label);
    return NULL;
}

/* Query parameters whose value is a credential (?token=..., ?api_key=...). */
int sink_url_secret_key(const char *k, size_t n)
{
    static const char *const words[] = { "pass", "pwd", "token", "secret", "sig", "auth", "credential" };
    static const char *const exact[] = { "key", "apikey", "api_key", "access_key", "private_key" };
    char low[64];
    if (n == 0 || n >= sizeof low) return 0;
    for (size_t i = 0; i < n; i++) low[i] = (char)(k[i] >= 'A' && k[i] <= 'Z' ? k[i] + 32 : k[i]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(low, exact[i])) return 1;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(low, words[i])) return 1;
    return 0;
}

/* A host[:port] starts at h and ends at the end of the string or before
 * one of "/?#" (what may follow the '@' that ends a userinfo). */
static int valid_host_at(const char *h)
{
    const char *c = h;
    if (*c == '[') {
        const char *rb = strchr(c, ']');
        if (!rb || rb == c + 1) return 0;
        for (const char *x = c + 1; x < rb; x++)
            if (!strchr("0123456789abcdefABCDEF:.%", *x) && !isalnum((unsigned char)*x)) return 0;
        c = rb + 1;
    } else {
        while (isalnum((unsigned char)*c) || *c == '.' || *c == '-' || *c == '_' || *c == '%') c++;
        if (c == h) return 0;
    }
    if (*c == ':') {
        const char *d = ++c;
        while (isdigit((unsigned char)*c)) c++;
        if (c == d) return 0;
    }
    return *c == 0 || *c == '/' || *c == '?' || *c == '#';
}

int sink_url_userinfo(const char *url, const char **auth_out, const char **colon_out, const char **at_out)
{
    *colon_out = *at_out = NULL;
    const char *scheme = strstr(url, "://");
    if (!scheme) { *auth_out = NULL; return -1; }
    const char *auth = *auth_out = scheme + 3;
    const char *end = auth + strcspn(auth, "/?#"), *at = NULL;
    for (const char *c = auth; c < end; c++)
        if (*c == '@') at = c;                   /* last '@' before the path */
    const char *colon = memchr(auth, ':', (size_t)((at ? at : end) - auth));
    if (!at && colon) {
        /* "user:pa/ss@host": what follows the ':' is no port, so it is a
         * password with a delimiter in it; it ends at the last '@' that a
         * host follows ("host:8080/x?mail=a@b" keeps its port) */
        const char *d = colon + 1;
        while (d < end && isdigit((unsigned char)*d)) d++;
        if (d < end || d == colon + 1)
            for (const char *c = colon + 1; *c; c++)
                if (*c == '@' && valid_host_at(c + 1)) at = c;
        if (!at) colon = NULL;
    }
    *colon_out = at ? colon : NULL;
    *at_out = at;
    return 0;
}

void sink_url_scrub(char *url)
{
    const char *auth, *colon, *at;
    if (sink_url_userinfo(url, &auth, &colon, &at) < 0) return;
    if (colon)
        for (char *c = url + (colon + 1 - url); c < url + (at - url); c++) *c = '*';
    char *p = url + ((at ? at : auth) - url);
    char *q = strchr(p, '?'), *hash = strchr(p, '#');
    if (!q || (hash && hash < q)) return;
    for (char *c = q + 1; *c && *c != '#';) {
        size_t len = strcspn(c, "&;#");
        char *eq = memchr(c, '=', len);
        if (eq && sink_url_secret_key(c, (size_t)(eq - c)))
            for (char *v = eq + 1; v < c + len; v++) *v = '*';
        c += len;
        if (*c == '&' || *c == ';') c++;
    }
}

/* "user:password@" becomes "user:***@", and the values of query parameters
 * that hold credentials become "***". */
char *sink_redact_url(const char *url)
{
    size_t n = strlen(url);
    char *r = malloc(n + 4 * 16 + 4);    /* each "***" may be longer than what it hides */
    if (!r) return NULL;
    const char *p = url;
    char *o = r;
    const char *auth, *colon, *at;
    if (sink_url_userinfo(url, &auth, &colon, &at) == 0) {
        if (colon) {
            memcpy(o, url, (size_t)(colon + 1 - url));
            o += colon + 1 - url;
            memcpy(o, "***", 3);
            o += 3;
            p = at;
        }
    }
    const char *q = strchr(p, '?');
    const char *hash = strchr(p, '#');
    if (hash && q && hash < q) q = NULL;
    if (!q) {
        strcpy(o, p);
        return r;
    }
    memcpy(o, p, (size_t)(q + 1 - p));
    o += q + 1 - p;
    int redacted = 0;
    for (const char *c = q + 1; *c && *c != '#';) {
        size_t len = strcspn(c, "&;#");
        const char *eq = memchr(c, '=', len);
        if (eq && sink_url_secret_key(c, (size_t)(eq - c)) && redacted < 16) {
            memcpy(o, c, (size_t)(eq + 1 - c));
            o += eq + 1 - c;
            memcpy(o, "***", 3);
            o += 3;
            redacted++;
        } else {
            memcpy(o, c, len);
            o += len;
        }
        c += len;
        if (*c == '&' || *c == ';') *o++ = *c++;
        else if (*c == '#') { strcpy(o, c); o += strlen(c); break; }
    }
    *o = 0;
    return r;
}
