/* store_wal.c — the store's write-ahead log (store_priv.h, docs/store.md
 * "The write-ahead log"): records in the log buffer, the group commit that
 * writes and fdatasync()s them (store_wal_wait_durable), segment rotation
 * and the checkpoint that retires old segments, and the replay at open. */
#include "store/store_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- the write-ahead log ------------------------------------------------- */

static void seg_path(const store *s, uint64_t seg, char *out, size_t n)
{
    snprintf(out, n, "%s/wal/%016" PRIu64 ".wal", s->dir, seg);
}

/* Sorted segment numbers present in wal/ (*out malloc'ed): 0, or -1 when
 * the directory cannot be read or memory is short. */
int store_wal_segments(const store *s, uint64_t **out, size_t *nout)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/wal", s->dir);
    DIR *d = opendir(path);
    size_t n = 0, cap = 0;
    *out = NULL;
    *nout = 0;
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        unsigned long long v = strtoull(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".wal") != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            uint64_t *no = realloc(*out, cap * sizeof *no);
            if (!no) {
                closedir(d);
                free(*out);
                *out = NULL;
                return -1;
            }
            *out = no;
        }
        (*out)[n++] = v;
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful */
        for (size_t j = i; j > 0 && (*out)[j - 1] > (*out)[j]; j--) {
            uint64_t t = (*out)[j];
            (*out)[j] = (*out)[j - 1];
            (*out)[j - 1] = t;
        }
    *nout = n;
    return 0;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int store_wal_open_segment(store *s, uint64_t seg)
{
    char path[4096];
    seg_path(s, seg, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    char wd[4096];
    snprintf(wd, sizeof wd, "%s/wal", s->dir);
    sync_dir(wd);
    if (s->wal_fd >= 0) close(s->wal_fd);
    s->wal_fd = fd;
    s->seg = seg;
    s->seg_bytes = 0;
    return 0;
}

/* Starts a record in the log buffer; returns its start for store_wal_end. */
size_t store_wal_begin(store_buf *b, int type)
{
    size_t at = b->n;
    store_buf_reserve(b, 9);
    b->n += 8;
    b->p[b->n++] = (uint8_t)type;
    return at;
}

void store_wal_end(store_buf *b, size_t at)
{
    uint32_t len = (uint32_t)(b->n - at - 8);
    uint32_t crc = store_crc32c(0, b->p + at + 8, len);
    memcpy(b->p + at, &len, 4);
    memcpy(b->p + at + 4, &crc, 4);
}

void store_wal_log_series(store *s, const series *se)
{
    size_t at = store_wal_begin(&s->wbuf, REC_SERIES);
    store_buf_varint(&s->wbuf, se->id);
    store_buf_varint(&s->wbuf, se->keylen);
    store_buf_reserve(&s->wbuf, se->keylen);
    memcpy(s->wbuf.p + s->wbuf.n, se->key, se->keylen);
    s->wbuf.n += se->keylen;
    store_wal_end(&s->wbuf, at);
}

/* Retires the log before segment `keep`: cuts heads that hold points from
 * it, commits everything frozen, deletes its files.  Under mu. */
int store_wal_checkpoint(store *s, uint64_t keep)
{
    for (uint64_t id = 1; id < s->next_id; id++) {
        series *se = store_series_by_id(s, id);
        /* a head that cannot be cut keeps the old log alive */
        if (se && se->hn && se->head_seg < keep && store_head_cut(s, se, se->hn) < 0) {
            snprintf(s->broken_msg, sizeof s->broken_msg, "store: out of memory");
            return -1;
        }
    }
    if (store_flush_pending(s) < 0) return -1;
    uint64_t *segs;
    size_t n;
    if (store_wal_segments(s, &segs, &n) < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        if (segs[i] >= keep) continue;
        char path[4096];
        seg_path(s, segs[i], path, sizeof path);
        unlink(path);
    }
    free(segs);
    return 0;
}

/* Writes the log buffer and waits until `seq` is durable.  Under mu. */
int store_wal_wait_durable(store *s, uint64_t seq)
{
    while (s->synced_seq < seq && !s->broken) {
        if (s->syncing) {
            pthread_cond_wait(&s->synced_cv, &s->mu);
            continue;
        }
        s->syncing = 1;
        store_buf b = s->wbuf;
        uint64_t upto = s->put_seq;
        memset(&s->wbuf, 0, sizeof s->wbuf);
        int fd = s->wal_fd;
        pthread_mutex_unlock(&s->mu);
        int rc = 0;
        size_t off = 0;
        while (off < b.n) {
            ssize_t w = write(fd, b.p + off, b.n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                rc = -1;
                break;
            }
            off += (size_t)w;
        }
        if (rc == 0 && fdatasync(fd) < 0) rc = -1;
        int e = errno;
        pthread_mutex_lock(&s->mu);
        /* keep the buffer's memory for the next round */
        if (!s->wbuf.p) {
            b.n = 0;
            s->wbuf = b;
        } else if (s->wbuf.n == 0 && b.cap > s->wbuf.cap) {
            store_buf_free(&s->wbuf);
            b.n = 0;
            s->wbuf = b;
        } else
            store_buf_free(&b);
        s->syncing = 0;
        if (rc < 0) {
            s->broken = 1;
            snprintf(s->broken_msg, sizeof s->broken_msg, "store: cannot write the log: %s",
                     strerror(e));
        } else {
            s->synced_seq = upto;
            s->seg_bytes += off;
            if (s->seg_bytes >= s->seg_limit) {
                /* the buffer written from now on goes to the next segment */
                uint64_t old = s->seg;
                if (store_wal_open_segment(s, old + 1) < 0 || store_wal_checkpoint(s, old) < 0) {
                    s->broken = 1;
                    if (!s->broken_msg[0])
                        snprintf(s->broken_msg, sizeof s->broken_msg,
                                 "store: cannot rotate the log");
                }
            }
        }
        pthread_cond_broadcast(&s->synced_cv);
    }
    return s->synced_seq >= seq ? 0 : -1;
}

/* --- replay -------------------------------------------------------------- */

int store_wal_replay(store *s, uint64_t seg)
{
    char path[4096];
    seg_path(s, seg, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    size_t pos = 0;
    while (pos + 9 <= got) {
        uint32_t len, crc;
        memcpy(&len, buf + pos, 4);
        memcpy(&crc, buf + pos + 4, 4);
        if (len == 0 || pos + 8 + len > got || store_crc32c(0, buf + pos + 8, len) != crc)
            break; /* a torn tail: the rest was never acknowledged */
        const uint8_t *r = buf + pos + 8;
        size_t rp = 1;
        if (r[0] == REC_SERIES) {
            uint64_t id, kl;
            if (store_get_varint(r, len, &rp, &id) < 0 || store_get_varint(r, len, &rp, &kl) < 0 ||
                rp + kl > len)
                break;
            const char *metric;
            store_tag tags[MAX_TAGS];
            int nt;
            if (!store_series_by_id(s, id) && store_key_parse(r + rp, kl, &metric, tags, &nt) == 0)
                store_series_add(s, id, metric, tags, nt, r + rp, kl, store_hash(r + rp, kl));
        } else if (r[0] == REC_POINTS) {
            int64_t prev = 0;
            while (rp < len) {
                uint64_t id, n;
                if (store_get_varint(r, len, &rp, &id) < 0 || store_get_varint(r, len, &rp, &n) < 0)
                    break;
                series *se = store_series_by_id(s, id);
                for (uint64_t i = 0; i < n; i++) {
                    uint64_t z;
                    double v;
                    if (store_get_varint(r, len, &rp, &z) < 0 || rp + 8 > len) {
                        rp = len;
                        break;
                    }
                    prev += (int64_t)((z >> 1) ^ (uint64_t) - (int64_t)(z & 1));
                    memcpy(&v, r + rp, 8);
                    rp += 8;
                    if (se) store_head_add(s, se, prev, v, seg);
                }
            }
        }
        pos += 8 + len;
    }
    free(buf);
    return 0;
}
