/* userinfo.c — see userinfo.h. */
#include "userinfo.h"

#include <ctype.h>
#include <string.h>

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

int url_scan_userinfo(const char *url, url_userinfo *u)
{
    memset(u, 0, sizeof *u);
    const char *p = url ? strstr(url, "://") : NULL;
    if (!p) return -1;
    const char *auth = u->auth = p + 3;
    const char *end = auth + strcspn(auth, "/?#"), *at = NULL;
    for (const char *c = auth; c < end; c++)
        if (*c == '@') at = c; /* last '@' before the path */
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
    u->colon = at ? colon : NULL;
    u->at = at;
    u->end = at ? at + 1 + strcspn(at + 1, "/?#") : end;
    return 0;
}
