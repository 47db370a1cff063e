/* gpu_common.c — small helpers shared by the GPU backends (nvml.c, drm.c):
 * resetting a stats record to "unknown", splitting CUDA_VISIBLE_DEVICES-style
 * lists, and reading small sysfs/procfs files under a test root. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu/gpu.h"

void gpu_stats_reset(gpu_stats *s)
{
    s->temp = s->power_mw = s->mem_used = s->bar1_used = GPU_NA;
    s->gpu_util = s->mem_util = GPU_NA;
    s->gpu_clock = s->sm_clock = s->mem_clock = s->video_clock = GPU_NA;
    s->pcie_tx = s->pcie_rx = GPU_NA;
    s->nprocs = s->nsamples = s->nengines = 0;
    s->samples_ok = 0;
    s->other_procs = 0;
    s->others_known = 0;
}

int gpu_visible_tokens(const char *list, char tok[][96], int max)
{
    int n = 0;
    const char *p = list;
    while (n < max) {
        while (*p == ' ' || *p == '\t') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && isspace((unsigned char)t[-1])) t--;
        size_t len = (size_t)(t - p);
        if (len == 0) break; /* CUDA stops at the first empty entry */
        if (len >= 96) len = 95;
        memcpy(tok[n], p, len);
        tok[n][len] = 0;
        if (!strcmp(tok[n], "all")) return -1;
        n++;
        if (!*e) break;
        p = e + 1;
    }
    return n;
}

ssize_t gpu_read_file(const char *root, const char *path, char *buf, size_t len)
{
    char full[4096];
    if (len == 0) return -1;
    if (snprintf(full, sizeof full, "%s%s", root ? root : "", path) >= (int)sizeof full) return -1;
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got = 0;
    while ((size_t)got < len - 1) {
        ssize_t r = read(fd, buf + got, len - 1 - (size_t)got);
        if (r < 0) {
            if (errno == EINTR) continue;
            close(fd);
            return -1;
        }
        if (r == 0) break;
        got += r;
    }
    close(fd);
    buf[got] = 0;
    return got;
}

uint64_t gpu_read_u64(const char *root, const char *path)
{
    char buf[64], *end;
    if (gpu_read_file(root, path, buf, sizeof buf) <= 0) return GPU_NA;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || end == buf || buf[0] == '-') return GPU_NA;
    return (uint64_t)v;
}
