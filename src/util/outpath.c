/* outpath.c — expands %r %h %j %p in file destinations (see outpath.h), so
 * that the ranks of one MPI launch (`mpirun jobscope monitor -o ev-%r.jsonl`)
 * write one file each. */
#include "outpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A job id or host name inside a path: no '/', no control characters. */
static void put_safe(char **o, const char *v)
{
    for (; v && *v; v++) *(*o)++ = (*v == '/' || (unsigned char)*v < 0x20) ? '_' : *v;
}

char *outpath_expand(const char *dest, long rank, const char *host, const char *job, pid_t pid)
{
    const char *sep = strstr(dest, "://");
    if ((sep && strncmp(dest, "file://", 7)) || !strchr(dest, '%')) return strdup(dest);
    size_t hl = host ? strlen(host) : 0, jl = job ? strlen(job) : 0;
    size_t cap = strlen(dest) * (hl + jl + 24) + 1;
    char *r = malloc(cap), *o = r;
    if (!r) return NULL;
    for (const char *p = dest; *p; p++) {
        if (*p != '%' || !p[1]) {
            *o++ = *p;
            continue;
        }
        char num[32];
        switch (p[1]) {
        case 'r':
            snprintf(num, sizeof num, "%ld", rank);
            put_safe(&o, num);
            break;
        case 'p':
            snprintf(num, sizeof num, "%ld", (long)pid);
            put_safe(&o, num);
            break;
        case 'h':
            put_safe(&o, host);
            break;
        case 'j':
            put_safe(&o, job);
            break;
        case '%':
            *o++ = '%';
            break;
        default:
            *o++ = '%';
            *o++ = p[1];
            break;
        }
        p++;
    }
    *o = 0;
    return r;
}

char *outpath_default(const char *job_id)
{
    size_t n = strlen(job_id);
    char *p = malloc(n + 16);
    if (!p) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = job_id[i];
        p[k++] = (c == '/' || c == ' ' || (unsigned char)c < 0x20) ? '_' : c;
    }
    strcpy(p + k, ".jsonl");
    if (p[0] == '.') p[0] = '_';
    return p;
}
