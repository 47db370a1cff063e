/* userinfo.h — finds "USER[:PASSWORD]@" in "SCHEME://AUTHORITY/...", the
 * one scanner behind URL parsing (sink/url.c), redaction for messages
 * (url_redact) and scrubbing passwords out of argv (cli/options.c).
 * The userinfo ends at the last '@' before the path, query or fragment, as
 * RFC 3986 reads it, except that a password holding a raw '/', '?' or '#'
 * is still a password: then it ends at the last '@' that a valid
 * host[:port] follows ("user:pa/ss@host"; "host:8080/x?mail=a@b" keeps its
 * port). */
#ifndef JOBSCOPE_USERINFO_H
#define JOBSCOPE_USERINFO_H

typedef struct url_userinfo {
    const char *auth;  /* the authority, just after "://" */
    const char *end;   /* its end: the first '/', '?', '#' or NUL */
    const char *at;    /* the '@' ending userinfo, or NULL */
    const char *colon; /* the ':' before the password, or NULL */
} url_userinfo;

/* 0 with *u filled; -1 when url has no "://". */
int url_scan_userinfo(const char *url, url_userinfo *u);

#endif
