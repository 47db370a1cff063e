/* size.c — see size.h. */
#include "size.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int size_number(const char *s, double *v, const char **end)
{
    const char *p = s;
    while (isdigit((unsigned char)*p)) p++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) p++;
    }
    if (p == s || (p == s + 1 && *s == '.')) return -1;
    *v = strtod(s, NULL);
    *end = p;
    return 0;
}

int size_parse(const char *s, double *out)
{
    double v;
    const char *u;
    if (!s || size_number(s, &v, &u) < 0) return -1;
    double mul = 1;
    const char *k = *u ? strchr("KMGTP", toupper((unsigned char)*u)) : NULL;
    if (k) {
        mul = ldexp(1.0, 10 * (int)(k - "KMGTP" + 1));
        u++;
        if (!strcasecmp(u, "iB") || !strcasecmp(u, "B")) u += strlen(u);
    } else if (*u == 'B' || *u == 'b') {
        u++;
    }
    if (*u) return -1;
    v = floor(v * mul);
    if (!(v >= 1) || v > 9.2e18) return -1;
    *out = v;
    return 0;
}
