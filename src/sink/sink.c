/* sink.c — the table of destinations and URL dispatch (see sink.h). */
#include "sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const sink_ops sink_csv_ops;
extern const sink_ops sink_file_ops;

/* First match wins: specific schemes first, plain paths (file) last. */
static const sink_ops *const sink_backends[] = {
    &sink_csv_ops,
    &sink_file_ops,
};

sink *sink_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof sink_backends / sizeof sink_backends[0]; i++)
        if (sink_backends[i]->match(url, o))
            return sink_backends[i]->open(url, o, err, errlen);
    char *label = sink_redact_url(url);
    snprintf(err, errlen, "%s: unknown destination", label ? label : "?");
    free(label);
    return NULL;
}

char *sink_redact_url(const char *url)
{
    char *out = strdup(url);
    if (!out) return NULL;
    char *scheme = strstr(out, "://");
    if (!scheme) return out;
    char *auth = scheme + 3;
    char *slash = strchr(auth, '/');
    char *at = NULL;
    for (char *p = auth; *p && (!slash || p < slash); p++)
        if (*p == '@') at = p;               /* last '@' before the path */
    if (!at) return out;
    char *colon = memchr(auth, ':', (size_t)(at - auth));
    if (!colon) return out;
    size_t head = (size_t)(colon + 1 - out);
    char *r = malloc(strlen(out) + 4);
    if (!r) return out;
    memcpy(r, out, head);
    strcpy(r + head, "***");
    strcat(r, at);
    free(out);
    return r;
}
