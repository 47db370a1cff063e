/* url.h — the small URL parser shared by the network sinks.
 *
 * Splits SCHEME://[USER[:PASS]@]HOST[:PORT][/PATH][?QUERY][#FRAGMENT] into
 * its parts (user and password percent-decoded, host without IPv6 brackets),
 * and reads the jobscope options some schemes carry in their query string
 * (?routing_key=..., ?index.PREFIX=...).  Nothing here touches the network. */
#ifndef JOBSCOPE_SINK_URL_H
#define JOBSCOPE_SINK_URL_H

#include <stddef.h>

typedef struct net_url {
    char *scheme;   /* lower case, without "://" */
    char *user;     /* decoded; NULL when absent */
    char *pass;     /* decoded; NULL when absent */
    char *host;     /* without [] for IPv6 literals */
    int port;       /* 0 when absent */
    char *path;     /* raw, "" or starting with '/' */
    char *query;    /* raw, without '?'; NULL when absent */
    char *fragment; /* raw, without '#'; NULL when absent */
} net_url;

/* 0 on success; -1 with a one-line reason in err (never echoing a password). */
int net_url_parse(net_url *u, const char *url, char *err, size_t errlen);
void net_url_free(net_url *u);

/* Percent-decodes s[0..n) into a new string ('+' is kept as is). */
char *net_url_decode(const char *s, size_t n);
/* Percent-encodes every byte outside [A-Za-z0-9-._~] into a new string. */
char *net_url_encode(const char *s);

/* Finds KEY in a query string "k=v&k2=v2"; returns a new decoded value or NULL. */
char *net_url_query_get(const char *query, const char *key);
/* Iterates over the pairs: *pos starts at 0; returns 1 and fills new
 * decoded key and value (caller frees both) while there are pairs. */
int net_url_query_next(const char *query, size_t *pos, char **key, char **val);

/* The URL to talk HTTP to: "http(s)://HOST[:PORT]PATH" with no user info,
 * query or fragment (those are jobscope's, or credentials).  New string. */
/* The start of a network backend's open(): parses url and makes its label
 * (the URL without its password, caller frees).  When why_no_host is given a
 * host is required.  On failure: -1, err says "LABEL: why", nothing is left
 * allocated. */
int net_url_open(net_url *u, const char *url, const char *why_no_host, char **label, char *err,
                 size_t errlen);

char *net_url_http_base(const net_url *u, int tls, int default_port);

#endif
