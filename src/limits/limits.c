/* limits.c — the --limit parser: NAME=VALUE[,NAME=VALUE...].
 *   memory, rss, disk-write   bytes: N[.N][K|M|G|T|P][B|iB], powers of 1024
 *   wall, cpu                 seconds: N[.N][s|m|h|d], or a sum "1h30m"
 *   procs                     a whole number of processes
 * Every value must be > 0. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "limits.h"
#include "../util/size.h"

static const char *const names[LIM_N] = {"memory", "rss", "wall", "cpu", "procs", "disk-write"};

const char *limits_name(enum limit_kind k)
{
    return k < LIM_N ? names[k] : "?";
}

const char *limits_unit(enum limit_kind k)
{
    switch (k) {
    case LIM_WALL:
    case LIM_CPU:
        return "seconds";
    case LIM_PROCS:
        return "processes";
    default:
        return "bytes";
    }
}

int limits_parse_bytes(const char *s, double *out)
{
    return size_parse(s, out);
}

int limits_parse_seconds(const char *s, double *out)
{
    double total = 0;
    const char *p = s;
    int parts = 0;
    if (!*p) return -1;
    while (*p) {
        double v;
        const char *u;
        if (size_number(p, &v, &u) < 0) return -1;
        double mul;
        switch (*u) {
        case 0:
            mul = 1;
            if (parts) return -1;
            break; /* "1h30": unit missing */
        case 's':
            mul = 1;
            break;
        case 'm':
            mul = 60;
            break;
        case 'h':
            mul = 3600;
            break;
        case 'd':
            mul = 86400;
            break;
        default:
            return -1;
        }
        total += v * mul;
        p = *u ? u + 1 : u;
        parts++;
    }
    if (!(total > 0) || total > 1e10) return -1;
    *out = total;
    return 0;
}

static int parse_one(const char *item, js_limits *l, char *err, size_t errlen)
{
    const char *eq = strchr(item, '=');
    if (!eq) {
        snprintf(
            err, errlen,
            "--limit: '%s' is not NAME=VALUE (names: memory, rss, wall, cpu, procs, disk-write)",
            item);
        return -1;
    }
    size_t nl = (size_t)(eq - item);
    const char *val = eq + 1;
    int k;
    for (k = 0; k < LIM_N; k++)
        if (strlen(names[k]) == nl && !strncmp(item, names[k], nl)) break;
    if (k == LIM_N) {
        snprintf(err, errlen,
                 "--limit: unknown limit '%.*s' (names: memory, rss, wall, cpu, procs, disk-write)",
                 (int)nl, item);
        return -1;
    }
    double v;
    int rc;
    const char *what;
    switch (k) {
    case LIM_WALL:
    case LIM_CPU:
        rc = limits_parse_seconds(val, &v);
        what = "a duration > 0 like 90, 30s, 15m, 2h, 1d, 1h30m";
        break;
    case LIM_PROCS: {
        char *end;
        errno = 0;
        long long n = isdigit((unsigned char)*val) ? strtoll(val, &end, 10) : -1;
        rc = (n >= 1 && !errno && !*end) ? 0 : -1;
        v = (double)n;
        what = "a whole number >= 1";
        break;
    }
    default:
        rc = limits_parse_bytes(val, &v);
        what = "a size > 0 like 512M, 4G, 1.5T (K/M/G/T/P: powers of 1024)";
        break;
    }
    if (rc < 0) {
        snprintf(err, errlen, "--limit: bad value '%s' for %s: expected %s", val, names[k], what);
        return -1;
    }
    l->set |= 1u << k;
    l->max[k] = v;
    return 0;
}

int limits_parse(const char *spec, js_limits *l, char *err, size_t errlen)
{
    if (!spec || !*spec) {
        snprintf(err, errlen, "--limit: empty limit");
        return -1;
    }
    char *copy = strdup(spec), *save = NULL;
    if (!copy) {
        snprintf(err, errlen, "--limit: out of memory");
        return -1;
    }
    int rc = 0, n = 0;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ') item++;
        n++;
        if ((rc = parse_one(item, l, err, errlen)) < 0) break;
    }
    if (!rc && (!n || spec[strlen(spec) - 1] == ',' || spec[0] == ',' || strstr(spec, ",,"))) {
        snprintf(err, errlen, "--limit: empty item in '%s'", spec);
        rc = -1;
    }
    free(copy);
    return rc;
}
