/* userinfo.c — see userinfo.h. */
#include "userinfo.h"

#include <string.h>

int url_scan_userinfo(const char *url, url_userinfo *u)
{
    memset(u, 0, sizeof *u);
    const char *p = url ? strstr(url, "://") : NULL;
    if (!p) return -1;
    u->auth = p + 3;
    u->end = u->auth + strcspn(u->auth, "/?#");
    for (const char *c = u->auth; c < u->end; c++)
        if (*c == '@') u->at = c;
    if (u->at) u->colon = memchr(u->auth, ':', (size_t)(u->at - u->auth));
    return 0;
}
