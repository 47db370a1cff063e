/* sink.c — the table of destinations and URL dispatch (see sink.h). */
#include "sink.h"
#include "publisher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const sink_ops sink_csv_ops;
extern const sink_ops sink_file_ops;
extern const sink_ops sink_amqp_ops;
extern const sink_ops sink_rabbitmq_http_ops;
extern const sink_ops sink_http_ops;
extern const sink_ops sink_elasticsearch_ops;
extern const sink_ops sink_opentsdb_ops;
extern const sink_ops sink_influx_ops;

/* First match wins: specific schemes first, plain paths (file) last. */
static const sink_ops *const sink_backends[] = {
    &sink_amqp_ops,
    &sink_rabbitmq_http_ops,
    &sink_http_ops,
    &sink_elasticsearch_ops,
    &sink_opentsdb_ops,
    &sink_influx_ops,
    &sink_csv_ops,
    &sink_file_ops,
};

/* A SCHEME:// that no backend knows: like any unusable network destination,
 * a warning and a spool for a later `jobscope flush -o GOOD_URL SPOOL`, or
 * fatal with --require-output. */
static int unknown_match(const char *url, const sink_options *o) { (void)url; (void)o; return 0; }
static const sink_ops sink_unknown_ops = {
    "unknown", unknown_match, NULL, publisher_sink_write, publisher_sink_flush, publisher_sink_close,
};

sink *sink_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof sink_backends / sizeof sink_backends[0]; i++)
        if (sink_backends[i]->match(url, o))
            return sink_backends[i]->open(url, o, err, errlen);
    size_t scheme = strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    if (scheme > 0 && !strncmp(url + scheme, "://", 3))
        return publisher_sink_unusable(&sink_unknown_ops, url, "unknown scheme", o, err, errlen);
    char *label = sink_redact_url(url);
    snprintf(err, errlen, "%s: unknown destination", label ? label : "?");
    free(label);
    return NULL;
}

/* Query parameters whose value is a credential (?token=..., ?api_key=...). */
static int secret_key(const char *k, size_t n)
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

/* "user:password@" becomes "user:***@", and the values of query parameters
 * that hold credentials become "***". */
char *sink_redact_url(const char *url)
{
    size_t n = strlen(url);
    char *r = malloc(n + 4 * 16 + 4);    /* each "***" may be longer than what it hides */
    if (!r) return NULL;
    const char *scheme = strstr(url, "://");
    const char *p = url;
    char *o = r;
    if (scheme) {
        const char *auth = scheme + 3;
        const char *end = auth + strcspn(auth, "/?#"), *at = NULL;
        for (const char *c = auth; c < end; c++)
            if (*c == '@') at = c;               /* last '@' before the path */
        const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
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
        if (eq && secret_key(c, (size_t)(eq - c)) && redacted < 16) {
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
