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
    s->seg_points = 0;
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
    const char *m = s->mets[se->metric]->name;
    size_t ml = strlen(m) + 1;
    size_t at = store_wal_begin(&s->wbuf, REC_SERIES);
    store_buf_varint(&s->wbuf, se->id);
    store_buf_varint(&s->wbuf, ml + se->keylen);
    store_buf_reserve(&s->wbuf, ml + se->keylen);
    memcpy(s->wbuf.p + s->wbuf.n, m, ml);
    memcpy(s->wbuf.p + s->wbuf.n + ml, store_series_tags(s, se), se->keylen);
    s->wbuf.n += ml + se->keylen;
    store_wal_end(&s->wbuf, at);
}

/* A run of points of one series in a POINTS_G record at b[n] (room for 20
 * bytes a point and 20 more): varint id, varint count << 4 | k, then the
 * run's timestamps, each a varint zigzag(ts - the record's previous ts),
 * then its values: k in 0..9, each x / 10^k as zigzag(x) for the first and
 * zigzag(x - previous x) after (a counter's steps); k 15: the doubles' 8
 * bytes.  Timestamps apart from values: the fields of one line share theirs,
 * and zstd finds a column again where it would not find it interleaved.  k
 * is the fewest digits from `guess` (the head's: the series' usual coding)
 * up at which every value of the run is such a decimal, else 15.  The new
 * n. */
size_t store_wal_run(uint8_t *b, size_t n, uint64_t id, const store_point *p, size_t count,
                     int guess, int64_t *ts_prev)
{
    int k = guess;
    int64_t x = 0;
    for (size_t i = 0; i < count && k != HEAD_RAW; i++)
        if (store_to_scaled(p[i].value, k, &x) < 0) {
            /* more digits for this one; those before are checked again at them */
            k = k < 9 ? store_mode_for(p[i].value, k + 1) : HEAD_RAW;
            i = (size_t)-1;
        }
    n = store_put_varint(b, n, id);
    n = store_put_varint(b, n, (uint64_t)count << 4 | (k == HEAD_RAW ? 15u : (unsigned)k));
    int64_t t = *ts_prev, xp = 0;
    for (size_t i = 0; i < count; i++) {
        n = store_put_varint(b, n, store_zz((uint64_t)p[i].ts_ms - (uint64_t)t));
        t = p[i].ts_ms;
    }
    for (size_t i = 0; i < count; i++) {
        if (k == HEAD_RAW) {
            memcpy(b + n, &p[i].value, 8);
            n += 8;
        } else {
            store_to_scaled(p[i].value, k, &x);
            n = store_put_varint(b, n, store_zz((uint64_t)x - (uint64_t)xp));
            xp = x;
        }
    }
    *ts_prev = t;
    return n;
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
        /* committed as they come: a million cut heads never wait in memory at once */
        if ((s->pend_bytes >= FLUSH_BYTES || s->pend_n >= FLUSH_CHUNKS) &&
            store_flush_pending(s) < 0)
            return -1;
    }
    if (store_flush_pending(s) < 0) return -1;
    /* SQLite's own log back to zero bytes when no reader holds it (no wait:
     * a reader's snapshot leaves it for the next time) */
    pthread_mutex_lock(&s->wmu);
    sqlite3_busy_timeout(s->db, 0);
    sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_busy_timeout(s->db, 30000);
    pthread_mutex_unlock(&s->wmu);
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

/* A write of the log failed (broken_msg says why): puts fail until
 * store_wal_recover finds that it can write again.  Under mu. */
static void wal_failed(store *s)
{
    s->write_failures++;
    if (s->broken) return;
    s->broken = 1;
    s->broken_since_ms = s->recover_tried_ms = store_now_ms();
    store_log(s, "%s: puts fail until it can be written again (tried every second)",
              s->broken_msg + 7);
}

/* After a failed write: the bytes the segment got beyond what was written
 * whole are cut off, a probe (a NOP record, synced) shows that the disk
 * takes writes again, and puts are accepted.  Tried at most once a second.
 * 0 when the store is writable, -1 not yet.  Under mu. */
int store_wal_recover(store *s)
{
    if (!s->broken) return 0;
    int64_t now = store_now_ms();
    if (s->syncing || s->wal_fd < 0 || now - s->recover_tried_ms < 1000) return -1;
    s->recover_tried_ms = now;
    if (ftruncate(s->wal_fd, (off_t)s->seg_bytes) < 0) return -1;
    enum { PROBE = 4096 };
    uint8_t *p = calloc(1, PROBE);
    if (!p) return -1;
    uint32_t len = PROBE - 8;
    p[8] = REC_NOP;
    uint32_t crc = store_crc32c(0, p + 8, len);
    memcpy(p, &len, 4);
    memcpy(p + 4, &crc, 4);
    size_t off = 0;
    while (off < PROBE) {
        ssize_t w = write(s->wal_fd, p + off, PROBE - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    free(p);
    if (off < PROBE || fdatasync(s->wal_fd) < 0) {
        if (ftruncate(s->wal_fd, (off_t)s->seg_bytes) < 0) { /* cut again at the next try */
        }
        return -1;
    }
    s->seg_bytes += PROBE;
    s->broken = 0;
    store_log(s, "the log is writable again after %.0f s: puts are accepted",
              (double)(now - s->broken_since_ms) / 1000.0);
    return 0;
}

/* Retires the whole log: the next segment is started and everything before
 * it checkpointed (heads cut, frozen chunks committed, segments deleted).
 * For the size limit, which cannot trim the log.  Under mu. */
int store_wal_retire(store *s)
{
    while (s->syncing) pthread_cond_wait(&s->synced_cv, &s->mu);
    if (s->broken || s->wal_fd < 0 || s->seg_bytes == 0) return 0;
    uint64_t old = s->seg;
    if (store_wal_open_segment(s, old + 1) < 0) return -1;
    return store_wal_checkpoint(s, old + 1);
}

/* The records of b (whole ones, as the log buffer holds them) as ZSTD
 * records of up to ZREC_RAW bytes of records each, in z: 0, or -1 when
 * compressing does not pay or fails (then b is written as it is).  zstd's
 * fastest level: the log is written once and read only after a crash. */
static int wal_compress(store *s, const store_buf *b, store_buf *z)
{
    if (b->n < 256) return -1;
    for (size_t pos = 0; pos < b->n;) {
        size_t end = pos;
        while (end < b->n) { /* whole records, up to ZREC_RAW bytes (at least one) */
            uint32_t len;
            memcpy(&len, b->p + end, 4);
            if (end > pos && end + 8 + len - pos > ZREC_RAW) break;
            end += 8 + (size_t)len;
        }
        /* gathered by series when that is smaller (never larger: the
         * replay's bound on a frame holds) */
        store_buf *g = &s->wgroup.raw;
        g->n = 0;
        const uint8_t *raw = b->p + pos;
        size_t nraw = end - pos;
        if (store_wal_gather(&s->wgroup, raw, nraw, g) == 0) {
            raw = g->p;
            nraw = g->n;
        }
        size_t at = z->n;
        if (store_buf_reserve(z, 32) < 0) return -1;
        z->n += 8;
        z->p[z->n++] = REC_ZSTD;
        store_buf_varint(z, nraw);
        if (store_zstd(raw, nraw, 1, z) < 0 || z->n - at - 8 > REC_MAX) return -1;
        uint32_t len = (uint32_t)(z->n - at - 8);
        uint32_t crc = store_crc32c(0, z->p + at + 8, len);
        memcpy(z->p + at, &len, 4);
        memcpy(z->p + at + 4, &crc, 4);
        pos = end;
    }
    return z->n < b->n ? 0 : -1;
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
        store_buf z = {0};
        const store_buf *out = wal_compress(s, &b, &z) == 0 ? &z : &b;
        int rc = 0;
        size_t off = 0;
        while (off < out->n) {
            ssize_t w = write(fd, out->p + off, out->n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                rc = -1;
                break;
            }
            off += (size_t)w;
        }
        if (rc == 0 && fdatasync(fd) < 0) rc = -1;
        int e = errno;
        store_buf_free(&z);
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
            /* what this write carried failed its puts; the bytes that made it
             * are cut off again by store_wal_recover before the next write */
            snprintf(s->broken_msg, sizeof s->broken_msg, "store: cannot write the log: %s",
                     strerror(e));
            wal_failed(s);
        } else {
            s->synced_seq = upto;
            s->seg_bytes += off;
            /* a rotation cuts heads into chunks: with many series, segments
             * grow with them (64 bytes a series), so that a million heads
             * are not cut into tiny chunks every few seconds */
            int many = s->nseries * 64 > s->seg_limit;
            uint64_t limit = s->seg_limit;
            if (!s->seg_limit_fixed && many) limit = s->nseries * 64;
            /* with few series, also once the segment logged as many points
             * as the heads hold (every head filled about once): past that,
             * heads cut for their size are in chunks and in the log both */
            int full = !many && !s->seg_limit_fixed && s->seg_bytes >= SEG_MIN &&
                       s->seg_points >= (uint64_t)s->nseries * s->head_max / 8 * 7;
            if (s->seg_bytes >= limit || full) {
                /* the buffer written from now on goes to the next segment.
                 * With few series a segment gives each a good chunk (tens to
                 * thousands of points): every head is cut and the whole log
                 * retired, so that at most one segment is on disk.  With
                 * many, heads started in the old segment stay until the next
                 * rotation (two segments on disk). */
                uint64_t old = s->seg;
                if (store_wal_open_segment(s, old + 1) < 0) {
                    snprintf(s->broken_msg, sizeof s->broken_msg,
                             "store: cannot write the log: cannot start a segment: %s",
                             strerror(errno));
                    wal_failed(s);
                } else if (store_wal_checkpoint(s, many ? old : old + 1) < 0) {
                    /* the old segments stay until a checkpoint succeeds */
                    snprintf(s->broken_msg, sizeof s->broken_msg,
                             "store: cannot write the log: cannot retire old segments: %s",
                             sqlite3_errmsg(s->db));
                    wal_failed(s);
                }
            }
        }
        pthread_cond_broadcast(&s->synced_cv);
    }
    return s->synced_seq >= seq ? 0 : -1;
}

/* --- replay -------------------------------------------------------------- */

/* A record at buf[pos] that checks out: its length is within the file and
 * the bounds records are written with, its type is known and its CRC-32C
 * matches.  The length of the whole record, or 0. */
static size_t valid_record(const uint8_t *buf, size_t got, size_t pos)
{
    uint32_t len, crc;
    if (pos + 9 > got) return 0;
    memcpy(&len, buf + pos, 4);
    memcpy(&crc, buf + pos + 4, 4);
    if (len == 0 || len > REC_MAX || len > got - pos - 8) return 0;
    uint8_t type = buf[pos + 8];
    if (type < REC_SERIES || type > REC_POINTS_G) return 0;
    return store_crc32c(0, buf + pos + 8, len) == crc ? 8 + (size_t)len : 0;
}

static int apply_record(store *s, const uint8_t *r, size_t len, uint64_t seg, wal_replay *rs);

/* The records inside a ZSTD record: applied in order; a damaged inner
 * record (which its outer CRC makes nearly impossible: a writer's bug)
 * ends them, and is damage (the segment is set aside, the log says so). */
static int apply_zstd(store *s, const uint8_t *r, size_t len, uint64_t seg, wal_replay *rs)
{
    size_t rp = 1;
    uint64_t raw;
    if (store_get_varint(r, len, &rp, &raw) < 0 || raw > ZREC_RAW + REC_MAX) return 0;
    store_buf b = {0};
    if (store_unzstd(r + rp, len - rp, (size_t)raw, &b) < 0) {
        int oom = b.oom;
        store_buf_free(&b);
        if (oom) return -1;
        rs->damaged = 1; /* checked out, but does not decompress */
        rs->places++;
        rs->bad_bytes += len;
        return 0;
    }
    int rc = 0;
    size_t pos = 0;
    while (pos < b.n && rc == 0) {
        size_t l = valid_record(b.p, b.n, pos);
        if (!l || b.p[pos + 8] == REC_ZSTD) break;
        rc = apply_record(s, b.p + pos + 8, l - 8, seg, rs);
        pos += l;
    }
    if (rc == 0 && pos < b.n) { /* the rest does not check out: damage, said so */
        rs->damaged = 1;
        rs->places++;
        rs->bad_bytes += b.n - pos;
    }
    store_buf_free(&b);
    return rc;
}

/* Applies one record that checked out.  0, or -1 out of memory. */
static int apply_record(store *s, const uint8_t *r, size_t len, uint64_t seg, wal_replay *rs)
{
    size_t rp = 1;
    if (r[0] == REC_ZSTD) return apply_zstd(s, r, len, seg, rs);
    if (r[0] == REC_SERIES) {
        uint64_t id, kl;
        const char *metric;
        store_tag tags[MAX_TAGS];
        int nt;
        if (store_get_varint(r, len, &rp, &id) < 0 || store_get_varint(r, len, &rp, &kl) < 0 ||
            kl > len - rp || id == 0 || id > UINT32_MAX)
            return 0;
        if (!store_series_by_id(s, id) && store_key_parse(r + rp, kl, &metric, tags, &nt) == 0 &&
            !store_series_add(s, id, metric, tags, nt, r + rp, kl, store_key_hash(r + rp, kl)))
            return -1;
    } else if (r[0] == REC_POINTS || r[0] == REC_POINTS_C || r[0] == REC_POINTS_G) {
        int compact = r[0] != REC_POINTS, columns = r[0] == REC_POINTS_G;
        int64_t prev = 0;
        while (rp < len) {
            uint64_t id, n, k = 15;
            if (store_get_varint(r, len, &rp, &id) < 0 || store_get_varint(r, len, &rp, &n) < 0)
                break;
            if (compact) {
                k = n & 15;
                n >>= 4;
                if (k > 9 && k != 15) break; /* no run this jobscope wrote */
            }
            /* the cursors of timestamps and values: one for interleaved
             * runs; in a POINTS_G run the values follow the n timestamps */
            size_t vpos = rp, *tc = &rp, *vc = columns ? &vpos : &rp;
            uint64_t skip;
            for (uint64_t i = 0; columns && i < n; i++)
                if (store_get_varint(r, len, &vpos, &skip) < 0) {
                    vpos = len;
                    break;
                }
            series *se = store_series_by_id(s, id);
            int64_t x = 0;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t z, d;
                double v;
                if (store_get_varint(r, len, tc, &z) < 0) {
                    *vc = len;
                    break;
                }
                /* wrapping: a hostile log's steps are no undefined behaviour */
                prev = (int64_t)((uint64_t)prev + store_unzz(z));
                if (k == 15) { /* the double's bytes */
                    if (*vc + 8 > len) {
                        *vc = len;
                        break;
                    }
                    memcpy(&v, r + *vc, 8);
                    *vc += 8;
                } else {
                    if (store_get_varint(r, len, vc, &d) < 0) {
                        *vc = len;
                        break;
                    }
                    x = (int64_t)((uint64_t)x + store_unzz(d));
                    v = store_from_scaled(x, (int)k);
                }
                if (!se)
                    rs->lost_points++; /* its series record was damaged */
                else if (!isfinite(v) || prev <= -STORE_TS_LIMIT || prev >= STORE_TS_LIMIT) {
                    rs->refused++; /* no jobscope wrote it: the segment is set aside */
                    rs->damaged = 1;
                } else if (store_head_add(s, se, prev, v, seg) < 0)
                    return -1;
            }
            rp = *vc;
        }
    }
    return 0;
}

/* Replays one segment into the heads.  Every record that checks out is
 * applied, also after a damaged stretch: the next record is found by
 * trying each later offset (a record that runs past the end of the file,
 * with nothing valid after it, is a write cut short by a crash: never
 * acknowledged, not damage).  0, or -1 when the segment cannot be read or
 * memory is short. */
int store_wal_replay(store *s, uint64_t seg, wal_replay *rs)
{
    memset(rs, 0, sizeof *rs);
    char path[4096];
    seg_path(s, seg, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        errno = 0;
        return -1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    size_t pos = 0;
    int rc = 0;
    while (pos < got && rc == 0) {
        size_t l = valid_record(buf, got, pos);
        if (l) {
            if (apply_record(s, buf + pos + 8, l - 8, seg, rs) < 0) {
                errno = 0;
                rc = -1;
            }
            pos += l;
            continue;
        }
        size_t next = pos + 1;
        while (next < got && !valid_record(buf, got, next)) next++;
        uint32_t len = 0;
        if (got - pos >= 4) memcpy(&len, buf + pos, 4);
        int torn = next >= got && (got - pos < 8 || len == 0 || len > got - pos - 8);
        if (!torn) {
            rs->damaged = 1;
            rs->bad_bytes += next - pos;
            rs->places++;
        }
        pos = next;
    }
    free(buf);
    return rc;
}

/* The segment goes to DIR/damaged/ (kept for a look, out of the log).
 * 0, or -1 (it stays where it is; the next checkpoint deletes it). */
int store_wal_set_aside(store *s, uint64_t seg, char *where, size_t wlen)
{
    char from[4096], dir[4096];
    seg_path(s, seg, from, sizeof from);
    snprintf(dir, sizeof dir, "%s/damaged", s->dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) return -1;
    for (int k = 0; k < 1000; k++) {
        if (k)
            snprintf(where, wlen, "%s/%016" PRIu64 ".%d.wal", dir, seg, k);
        else
            snprintf(where, wlen, "%s/%016" PRIu64 ".wal", dir, seg);
        if (access(where, F_OK) == 0) continue;
        if (rename(from, where) < 0) return -1;
        sync_dir(dir);
        return 0;
    }
    return -1;
}
