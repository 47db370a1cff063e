/* companion.c — see companion.h. */
#include "companion.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef JOBSCOPE_LIBDIR
#define JOBSCOPE_LIBDIR "/usr/local/lib/jobscope"
#endif

static int found(const char *dir, const char *name, char *out, size_t outlen)
{
    char path[PATH_MAX + 256], real[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!realpath(path, real)) return 0;
    snprintf(out, outlen, "%s", real);
    return 1;
}

int util_companion(const char *name, char *out, size_t outlen)
{
    const char *env = getenv("JOBSCOPE_PLUGIN_DIR");
    if (env && *env && found(env, name, out, outlen)) return 1;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 32);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            if (found(exe, name, out, outlen)) return 1;
            strcat(exe, "/../lib/jobscope");
            if (found(exe, name, out, outlen)) return 1;
        }
    }
    return found(JOBSCOPE_LIBDIR, name, out, outlen);
}
