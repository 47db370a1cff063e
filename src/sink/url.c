/* url.c — see url.h.  A deliberately small, strict parser: jobscope only needs
 * to split destination URLs, and a clear error beats a guess. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "url.h"
#include "sink.h"
#include "../util/userinfo.h"

static char *dupn(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = 0;
    }
    return r;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char *net_url_decode(const char *s, size_t n)
{
    char *r = malloc(n + 1), *o = r;
    if (!r) return NULL;
    for (size_t i = 0; i < n; i++) {
        int h, l;
        if (s[i] == '%' && i + 2 < n && (h = hexval((unsigned char)s[i + 1])) >= 0 &&
            (l = hexval((unsigned char)s[i + 2])) >= 0) {
            *o++ = (char)(h * 16 + l);
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = 0;
    return r;
}

char *net_url_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *r = malloc(3 * n + 1), *o = r;
    if (!r) return NULL;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = 0;
    return r;
}

void net_url_free(net_url *u)
{
    free(u->scheme);
    free(u->user);
    free(u->pass);
    free(u->host);
    free(u->path);
    free(u->query);
    free(u->fragment);
    memset(u, 0, sizeof *u);
}

int net_url_parse(net_url *u, const char *url, char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    const char *p = strstr(url, "://");
    if (!p || p == url) {
        snprintf(err, errlen, "not a URL (expected SCHEME://HOST...)");
        return -1;
    }
    for (const char *c = url; c < p; c++)
        if (!isalnum((unsigned char)*c) && *c != '+' && *c != '-' && *c != '.') {
            snprintf(err, errlen, "bad URL scheme");
            return -1;
        }
    u->scheme = dupn(url, (size_t)(p - url));
    for (char *c = u->scheme; *c; c++) *c = (char)tolower((unsigned char)*c);
    const char *a, *colon, *at;
    sink_url_userinfo(url, &a, &colon, &at); /* one reading of userinfo for all */
    const char *h = at ? at + 1 : a;
    size_t alen = (size_t)(h + strcspn(h, "/?#") - a); /* authority */
    const char *rest = a + alen;
    if (at) {
        if (colon) {
            u->user = net_url_decode(a, (size_t)(colon - a));
            u->pass = net_url_decode(colon + 1, (size_t)(at - colon - 1));
        } else {
            u->user = net_url_decode(a, (size_t)(at - a));
        }
        h = at + 1;
    }
    const char *hend = a + alen, *portp = NULL;
    if (*h == '[') {
        const char *rb = memchr(h, ']', (size_t)(hend - h));
        if (!rb) {
            snprintf(err, errlen, "bad IPv6 address in URL");
            goto bad;
        }
        u->host = dupn(h + 1, (size_t)(rb - h - 1));
        if (rb + 1 < hend) {
            if (rb[1] != ':') {
                snprintf(err, errlen, "bad host in URL");
                goto bad;
            }
            portp = rb + 2;
        }
    } else {
        const char *pc = memchr(h, ':', (size_t)(hend - h));
        u->host = dupn(h, (size_t)((pc ? pc : hend) - h));
        if (pc) portp = pc + 1;
    }
    if (portp) {
        if (portp == hend) {
            snprintf(err, errlen, "empty port in URL");
            goto bad;
        }
        long v = 0;
        for (const char *c = portp; c < hend; c++) {
            if (!isdigit((unsigned char)*c) || (v = v * 10 + (*c - '0')) > 65535) {
                snprintf(err, errlen, "bad port in URL");
                goto bad;
            }
        }
        if (v == 0) {
            snprintf(err, errlen, "bad port in URL");
            goto bad;
        }
        u->port = (int)v;
    }
    size_t plen = strcspn(rest, "?#");
    u->path = dupn(rest, plen);
    rest += plen;
    if (*rest == '?') {
        size_t qlen = strcspn(rest + 1, "#");
        u->query = dupn(rest + 1, qlen);
        rest += 1 + qlen;
    }
    if (*rest == '#') u->fragment = strdup(rest + 1);
    if (!u->scheme || !u->host || !u->path) {
        snprintf(err, errlen, "out of memory");
        goto bad;
    }
    return 0;
bad:
    net_url_free(u);
    return -1;
}

int net_url_query_next(const char *query, size_t *pos, char **key, char **val)
{
    if (!query) return 0;
    size_t n = strlen(query);
    while (*pos < n) {
        const char *s = query + *pos;
        size_t len = strcspn(s, "&;");
        *pos += len + (s[len] ? 1 : 0);
        if (len == 0) continue;
        const char *eq = memchr(s, '=', len);
        size_t klen = eq ? (size_t)(eq - s) : len;
        *key = net_url_decode(s, klen);
        *val = eq ? net_url_decode(eq + 1, len - klen - 1) : strdup("");
        return 1;
    }
    return 0;
}

char *net_url_query_get(const char *query, const char *key)
{
    size_t pos = 0;
    char *k, *v, *found = NULL;
    while (net_url_query_next(query, &pos, &k, &v)) {
        if (!found && !strcmp(k, key))
            found = v;
        else
            free(v);
        free(k);
    }
    return found;
}

char *net_url_http_base(const net_url *u, int tls, int default_port)
{
    int v6 = strchr(u->host, ':') != NULL;
    size_t n = strlen(u->host) + strlen(u->path) + 40;
    char *r = malloc(n);
    if (!r) return NULL;
    snprintf(r, n, "%s://%s%s%s:%d%s", tls ? "https" : "http", v6 ? "[" : "", u->host,
             v6 ? "]" : "", u->port ? u->port : default_port, u->path);
    return r;
}

int net_url_open(net_url *u, const char *url, const char *why_no_host, char **label, char *err,
                 size_t errlen)
{
    char why[256];
    *label = sink_redact_url(url);
    int rc = net_url_parse(u, url, why, sizeof why);
    if (rc == 0 && why_no_host && !u->host[0]) {
        snprintf(why, sizeof why, "%s", why_no_host);
        net_url_free(u);
        rc = -1;
    }
    if (rc == 0) return 0;
    snprintf(err, errlen, "%s: %s", *label ? *label : "?", why);
    free(*label);
    *label = NULL;
    return -1;
}

/* Query parameters whose value is a credential (?token=..., ?api_key=...). */
int sink_url_secret_key(const char *k, size_t n)
{
    static const char *const words[] = {"pass", "pwd",  "token",     "secret",
                                        "sig",  "auth", "credential"};
    static const char *const exact[] = {"key", "apikey", "api_key", "access_key", "private_key"};
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

/* The one userinfo scanner is util/userinfo.c; this is its sink.h face. */
int sink_url_userinfo(const char *url, const char **auth_out, const char **colon_out,
                      const char **at_out)
{
    url_userinfo u;
    int rc = url_scan_userinfo(url, &u);
    *auth_out = u.auth;
    *colon_out = u.colon;
    *at_out = u.at;
    return rc;
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
    char *r = malloc(n + 4 * 16 + 4); /* each "***" may be longer than what it hides */
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
        if (*c == '&' || *c == ';')
            *o++ = *c++;
        else if (*c == '#') {
            strcpy(o, c);
            o += strlen(c);
            break;
        }
    }
    *o = 0;
    return r;
}
