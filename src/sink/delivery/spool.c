/* spool.c — see spool.h for the file format and its guarantees. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "spool.h"

#define OFF_DIGITS 20
#define OFF_AT     (sizeof SPOOL_MAGIC - 1)

static int write_all(int fd, const char *p, size_t n, off_t at)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, at);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        at += w;
    }
    return 0;
}

static int write_offset(spool *s)
{
    char d[OFF_DIGITS + 1];
    snprintf(d, sizeof d, "%0*lld", OFF_DIGITS, (long long)s->read_off);
    return write_all(s->fd, d, OFF_DIGITS, (off_t)OFF_AT);
}

int spool_create(spool *s, const char *path, const char *label, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s->fd < 0) {
        snprintf(err, errlen, "cannot create spool %s: %s", path, strerror(errno));
        return -1;
    }
    flock(s->fd, LOCK_EX | LOCK_NB);
    size_t n = strlen(label) + 64;
    char *h = malloc(n);
    int len = snprintf(h, n, SPOOL_MAGIC "%0*d\nurl ", OFF_DIGITS, 0);
    for (const char *c = label; *c; c++) /* keep the header one line */
        h[len++] = (*c == '\n' || *c == '\r') ? '_' : *c;
    h[len++] = '\n';
    s->header_len = len;
    s->read_off = s->end_off = len;
    int rc = write_all(s->fd, h, (size_t)len, 0) || write_offset(s);
    free(h);
    if (rc) {
        snprintf(err, errlen, "cannot write spool %s: %s", path, strerror(errno));
        close(s->fd);
        unlink(path);
        return -1;
    }
    s->path = strdup(path);
    return 0;
}

int spool_open(spool *s, const char *path, char **label, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (s->fd < 0) {
        snprintf(err, errlen, "cannot open spool %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat own;
    if (fstat(s->fd, &own) == 0 && own.st_uid != geteuid()) {
        /* planted by someone else: never deliver it with our credentials */
        snprintf(err, errlen, "spool %s is not yours (owner uid %u): refusing it", path,
                 (unsigned)own.st_uid);
        goto bad;
    }
    if (flock(s->fd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen, "spool %s is in use by another jobscope", path);
        goto bad;
    }
    struct stat st;
    if (fstat(s->fd, &st) < 0) {
        snprintf(err, errlen, "cannot stat spool %s: %s", path, strerror(errno));
        goto bad;
    }
    char head[4096 + 64];
    ssize_t r = pread(s->fd, head, sizeof head - 1, 0);
    if (r < 0) r = 0;
    head[r] = 0;
    char *nl1 = strchr(head, '\n');
    if (strncmp(head, SPOOL_MAGIC, OFF_AT) || !nl1 || nl1 - head != (long)(OFF_AT + OFF_DIGITS) ||
        strncmp(nl1 + 1, "url ", 4) || !strchr(nl1 + 1, '\n')) {
        snprintf(err, errlen, "%s is not a jobscope spool file", path);
        goto bad;
    }
    char *nl2 = strchr(nl1 + 1, '\n');
    s->header_len = nl2 + 1 - head;
    s->read_off = strtoll(head + OFF_AT, NULL, 10);
    /* Find the end of the last complete record: drop a torn tail. */
    off_t end = st.st_size;
    while (end > s->header_len) {
        char c;
        if (pread(s->fd, &c, 1, end - 1) != 1) break;
        if (c == '\n') break;
        end--;
    }
    if (end != st.st_size && ftruncate(s->fd, end) < 0) { /* read-only: just ignore the tail */
    }
    s->end_off = end;
    if (s->read_off < s->header_len || s->read_off > end) s->read_off = s->header_len;
    /* Count pending records. */
    char buf[65536];
    for (off_t o = s->read_off; o < end;) {
        size_t want = (size_t)(end - o) < sizeof buf ? (size_t)(end - o) : sizeof buf;
        ssize_t got = pread(s->fd, buf, want, o);
        if (got <= 0) break;
        for (ssize_t i = 0; i < got; i++) s->pending += buf[i] == '\n';
        o += got;
    }
    if (label) *label = strndup(nl1 + 5, (size_t)(nl2 - nl1 - 5));
    s->path = strdup(path);
    return 0;
bad:
    close(s->fd);
    s->fd = -1;
    return -1;
}

int spool_append(spool *s, uint64_t seq, const char *name, const char *json, size_t len)
{
    char head[32 + 256];
    int n = snprintf(head, 32, "%llu\t", (unsigned long long)seq);
    for (const char *c = name; *c && n < (int)sizeof head - 2; c++)
        head[n++] = (unsigned char)*c < 0x20 ? '_' : *c; /* no tab or newline */
    head[n++] = '\t';
    /* The JSON never holds a raw newline (the writer escapes them), but a
     * replayed or foreign record might: never let one break the framing. */
    const char *nlp = memchr(json, '\n', len);
    char *fixed = NULL;
    if (nlp) {
        fixed = malloc(len);
        if (!fixed) return -1;
        for (size_t i = 0; i < len; i++) fixed[i] = json[i] == '\n' ? ' ' : json[i];
        json = fixed;
    }
    off_t at = s->end_off;
    int rc = write_all(s->fd, head, (size_t)n, at) || write_all(s->fd, json, len, at + n) ||
             write_all(s->fd, "\n", 1, at + n + (off_t)len);
    free(fixed);
    if (rc) {
        int e = errno;
        if (ftruncate(s->fd, at) < 0) { /* keep the old end: the torn tail is ignored on open */
        }
        errno = e;
        return -1;
    }
    s->end_off = at + n + (off_t)len + 1;
    s->pending++;
    return 0;
}

/* One pass over the pending records: a malformed line (no two tabs) is
 * passed over and counted once, never sent; leading ones are consumed at once
 * so that a spool of nothing but garbage is read through in O(n). */
int spool_read(spool *s, int max, pub_item *items, off_t *ends, char **buf, size_t *bufcap)
{
    size_t want = 1 << 20;
    for (;;) {
        off_t from = s->read_off;
        if ((off_t)want > s->end_off - from) want = (size_t)(s->end_off - from);
        if (want == 0) return 0;
        if (*bufcap < want + 1) {
            char *nb = realloc(*buf, want + 1);
            if (!nb) return -1;
            *buf = nb;
            *bufcap = want + 1;
        }
        size_t got = 0;
        while (got < want) {
            ssize_t r = pread(s->fd, *buf + got, want - got, from + (off_t)got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return -1;
            got += (size_t)r;
        }
        (*buf)[got] = 0;
        int n = 0;
        char *p = *buf, *e = *buf + got;
        while (n < max && p < e) {
            char *nl = memchr(p, '\n', (size_t)(e - p));
            if (!nl) break;
            *nl = 0;
            off_t line_end = from + (nl + 1 - *buf);
            char *t1 = strchr(p, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
            if (t2) {
                *t1 = *t2 = 0;
                items[n] = (pub_item){.seq = strtoull(p, NULL, 10),
                                      .name = t1 + 1,
                                      .json = t2 + 1,
                                      .len = (size_t)(nl - t2 - 1)}; /* no enc: JSON only */
                ends[n] = line_end;
                n++;
            } else {
                if (line_end > s->skip_hwm) { /* count it once, however often read */
                    s->skipped++;
                    s->pending--;
                    s->skip_hwm = line_end;
                }
                if (n > 0)
                    ends[n - 1] = line_end; /* delivered with the record before */
                else
                    s->read_off = line_end; /* nothing before it: consumed */
            }
            p = nl + 1;
        }
        if (n > 0) return n;
        if (s->read_off > from) {
            want = 1 << 20;
            continue;
        } /* only broken lines: read on */
        if ((off_t)want == s->end_off - from) return 0;
        want *= 2; /* one record larger than the buffer */
    }
}

int spool_consume(spool *s, off_t off, long n)
{
    s->read_off = off;
    s->pending -= n;
    if (s->read_off >= s->end_off) {
        s->read_off = s->end_off = s->header_len;
        s->pending = 0;
        if (ftruncate(s->fd, s->header_len) < 0) return -1;
    }
    return write_offset(s);
}

int spool_close(spool *s)
{
    int removed = 0;
    if (s->fd >= 0) {
        if (s->end_off <= s->read_off && s->path) {
            unlink(s->path);
            removed = 1;
        } else {
            fsync(s->fd);
        }
        close(s->fd);
    }
    s->fd = -1;
    free(s->path);
    s->path = NULL;
    return removed;
}
