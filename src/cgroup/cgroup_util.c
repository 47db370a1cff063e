/* cgroup_util.c — small file helpers shared by the v1 and v2 readers:
 * read a control file, parse "key value" lines and PSI lines, write a
 * value, count and signal the processes listed in cgroup.procs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cgroup.h"

int cg_read_file(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[PATH_MAX];
    if (cap == 0 || snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
        if (len == cap - 1) break;
    }
    close(fd);
    buf[len] = 0;
    return (int)len;
}

void cg_stats_begin(cg_stats *st, int full)
{
    if (full) {
        memset(st, 0, sizeof *st);
        st->mem_max = st->pids_max = CG_NOLIMIT;
        return;
    }
    st->have &= ~(unsigned)CG_FAST;
    st->io_rbytes = st->io_wbytes = st->io_rios = st->io_wios = 0;
    st->nio = 0;
}

void cg_files_init(cg_files *f)
{
    for (int i = 0; i < CG_FILES_MAX; i++) {
        f->fd[i] = -1;
        f->miss[i] = 0;
    }
}

void cg_files_close(cg_files *f)
{
    for (int i = 0; i < CG_FILES_MAX; i++) {
        if (f->fd[i] >= 0) close(f->fd[i]);
        f->fd[i] = -1;
    }
}

int cg_fread(cg_files *f, int slot, const char *dir, const char *name, char *buf, size_t cap)
{
    if (cap == 0 || !dir || slot < 0 || slot >= CG_FILES_MAX) return -1;
    if (f->fd[slot] < 0) {
        if (f->miss[slot] && f->miss[slot]++ % 64) return -1;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return -1;
        f->fd[slot] = open(path, O_RDONLY | O_CLOEXEC);
        if (f->fd[slot] < 0) {
            f->miss[slot] = 1;
            return -1;
        }
        f->miss[slot] = 0;
    }
    size_t len = 0;
    for (;;) {
        ssize_t n = pread(f->fd[slot], buf + len, cap - 1 - len, (off_t)len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { /* the cgroup went away, or the file did: open it again next time */
            close(f->fd[slot]);
            f->fd[slot] = -1;
            return -1;
        }
        len += (size_t)n;
        /* a control file comes whole in one read when it fits: a short read
         * is its end (no second pread for the 0) */
        if (n == 0 || len == cap - 1 || (size_t)n < cap - 1 - (len - (size_t)n)) break;
    }
    buf[len] = 0;
    return (int)len;
}

static int parse_u64(const char *s, uint64_t *v);

int cg_fread_u64(cg_files *f, int slot, const char *dir, const char *name, uint64_t *v)
{
    char buf[64];
    if (cg_fread(f, slot, dir, name, buf, sizeof buf) <= 0) return -1;
    return parse_u64(buf, v);
}

static int parse_u64(const char *s, uint64_t *v)
{
    while (*s == ' ' || *s == '\t') s++;
    if (!strncmp(s, "max", 3)) {
        *v = CG_NOLIMIT;
        return 0;
    }
    if (*s < '0' || *s > '9') return -1;
    /* what strtoull reads, without its locale and errno (a still sample
     * reads three of these): digits, refused past 2^64 - 1 */
    uint64_t x = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - d) / 10) return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

int cg_read_u64(const char *dir, const char *name, uint64_t *v)
{
    char buf[64];
    if (!dir || cg_read_file(dir, name, buf, sizeof buf) <= 0) return -1;
    return parse_u64(buf, v);
}

int cg_write_str(const char *dir, const char *name, const char *s)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = strlen(s);
    ssize_t w = write(fd, s, n);
    int e = errno;
    close(fd);
    if (w != (ssize_t)n) {
        errno = w < 0 ? e : EIO;
        return -1;
    }
    return 0;
}

/* Finds a line "KEY VALUE" (the key alone at the start of a line). */
int cg_keyval(const char *text, const char *key, uint64_t *v)
{
    size_t kl = strlen(key);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, key, kl) && (p[kl] == ' ' || p[kl] == '\t'))
            return parse_u64(p + kl + 1, v);
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

static void psi_line(const char *p, cg_psi *out)
{
    const char *q;
    memset(out, 0, sizeof *out);
    if ((q = strstr(p, "avg10="))) out->avg10 = strtod(q + 6, NULL);
    if ((q = strstr(p, "avg60="))) out->avg60 = strtod(q + 6, NULL);
    if ((q = strstr(p, "avg300="))) out->avg300 = strtod(q + 7, NULL);
    if ((q = strstr(p, "total="))) {
        out->total_us = strtoull(q + 6, NULL, 10);
        out->valid = 1;
    }
}

/* "some avg10=.. avg60=.. avg300=.. total=..\nfull ...". */
int cg_parse_psi(const char *text, cg_psi *some, cg_psi *full)
{
    int found = 0;
    memset(some, 0, sizeof *some);
    memset(full, 0, sizeof *full);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, "some ", 5)) {
            psi_line(p, some);
            found |= some->valid;
        } else if (!strncmp(p, "full ", 5)) {
            psi_line(p, full);
            found |= full->valid;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return found ? 0 : -1;
}

/* Calls fn for every pid listed in DIR/cgroup.procs; returns the count or -1. */
static int for_each_proc(const char *dir, int sig)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path) return -1;
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1) {
        if (pid <= 0) continue;
        if (sig && kill((pid_t)pid, sig) < 0) continue;
        n++;
    }
    fclose(f);
    return n;
}

int cg_count_procs(const char *dir)
{
    return for_each_proc(dir, 0);
}
int cg_kill_procs(const char *dir, int sig)
{
    return for_each_proc(dir, sig);
}
