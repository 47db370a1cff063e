/* repo_pending.c — the samples the repository has folded but not yet
 * written to SQLite, and the log that keeps them across a crash.
 *
 * A batch (repo_queue.c, every 20 ms) folds a known job's samples into its
 * pending row and its runs' blocks (repo_batch.c, repo_block.c).  Writing
 * those to SQLite at every batch cost a block row and two index entries per
 * run per batch, each text written twice (SQLite's log, then its
 * checkpoint): ~40% of the events' ingest.  So they stay pending across
 * batches, and are written all at once (repo_pending_write) when
 *   - a read comes (repo_flush: every answer sees every event handed in);
 *   - the log passes REPO_PENDING_BYTES (it bounds memory and a replay);
 *   - the queue has been idle REPO_PENDING_IDLE_S (repo_queue.c);
 *   - a pending job or workflow gets an event that is not folded (its end
 *     record, a stampede event...), a block fills, the batch table fills,
 *     the retention prunes, or the repository closes.
 * Blocks then hold up to 64 KiB of a run's samples instead of 20 ms of them.
 *
 * The log, <repository>-pending, holds the texts of the pending samples:
 * "JSPEND1 <generation>\n", then for each an uint32 length (native byte
 * order) and the text.  A batch appends its folded samples' texts after its
 * COMMIT, in one write; a kill -9 then loses what it lost before (the queue
 * and the batch being written).  Writing what is pending stores, in the same
 * transaction, the log's generation in repo_meta ("pending_gen"); after the
 * COMMIT the log starts again, empty, with the next generation.  At open, a
 * log whose generation is newer than the stored one is replayed (its texts
 * queued as received, then written); an older one is already in SQLite.  A
 * torn last record is dropped.  Without a log (it cannot be opened or
 * locked, or a write failed) every batch writes what it folded, as before.
 */
#include "repo/repo_priv.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PENDING_MAGIC  "JSPEND1 "
#define PENDING_REPLAY (256u << 20) /* the most of a log read back */
#define PENDING_HEADER 64

static long long stored_gen(repo *r)
{
    long long g = 0;
    sqlite3_stmt *st = repo_prep(r, "SELECT v FROM repo_meta WHERE k = 'pending_gen'", "");
    if (st && sqlite3_step(st) == SQLITE_ROW) g = sqlite3_column_int64(st, 0);
    repo_done(r, st);
    return g;
}

/* The log emptied, under generation gen: 0, or -1 (no log from now on). */
static int restart(repo *r, long long gen)
{
    char head[PENDING_HEADER];
    int n = snprintf(head, sizeof head, PENDING_MAGIC "%lld\n", gen);
    if (ftruncate(r->pfd, 0) || pwrite(r->pfd, head, (size_t)n, 0) != n) {
        js_log(1, "repository", "%s: %s; samples are written every batch from now on", r->ppath,
               strerror(errno));
        r->pbroken = 1;
        return -1;
    }
    r->pgen = gen;
    r->pfile = (size_t)n;
    return 0;
}

/* The log left as it is for the next start, and none from now on. */
static void keep(repo *r)
{
    js_log(1, "repository", "%s: kept for the next start; samples are written every batch",
           r->ppath);
    close(r->pfd);
    r->pfd = -1;
    r->pstale = 0;
}

/* The records of a log's body d[0..n) written as received, in one
 * transaction that also marks the log written (their events were not in
 * SQLite: all or none of them are now); the number written.  Out of
 * memory, nothing is written and the log is kept. */
static size_t replay(repo *r, const char *d, size_t n)
{
    size_t at = 0, count = 0, cap = 0;
    char **q = NULL;
    size_t *ql = NULL;
    repo_flat **qf = NULL;
    int oom = 0;
    while (n - at >= 4 && !oom) {
        uint32_t len;
        memcpy(&len, d + at, 4);
        if (len > n - at - 4) break; /* torn: the write that was cut */
        if (count == cap) {
            size_t c = cap ? cap * 2 : 1024;
            char **a = realloc(q, c * sizeof *a);
            if (a) q = a;
            size_t *b = a ? realloc(ql, c * sizeof *b) : NULL;
            if (b) ql = b, cap = c;
            if (!b) oom = 1;
        }
        if (!oom && !(q[count] = malloc((size_t)len + 1))) oom = 1;
        if (oom) break;
        memcpy(q[count], d + at + 4, len);
        q[count][len] = 0;
        ql[count++] = len;
        at += 4 + (size_t)len;
    }
    if (!oom && count && !(qf = calloc(count, sizeof *qf))) oom = 1;
    if (oom) {
        for (size_t i = 0; i < count; i++) free(q[i]);
        free(q), free(ql);
        keep(r);
        return 0;
    }
    if (at < n) js_log(1, "repository", "%s: %zu bytes of a cut record dropped", r->ppath, n - at);
    pthread_mutex_lock(&r->mu);
    repo_write_queued(r, q, ql, qf, count, 1); /* (frees the texts) */
    pthread_mutex_unlock(&r->mu);
    free(q);
    free(ql);
    free(qf);
    return count;
}

void repo_pending_open(repo *r, const char *path)
{
    r->pfd = -1;
    if (!path || !*path || !strcmp(path, ":memory:") || !strncmp(path, "file:", 5)) return;
    size_t n = strlen(path) + sizeof "-pending";
    if (!(r->ppath = malloc(n))) return;
    snprintf(r->ppath, n, "%s-pending", path);
    int fd = open(r->ppath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) {
        js_log(1, "repository", "%s: %s; samples are written every batch", r->ppath,
               fd < 0 ? strerror(errno) : "in use by another process");
        if (fd >= 0) close(fd);
        return;
    }
    r->pfd = fd;
    /* what a crash left, when it is not in SQLite yet */
    struct stat sb;
    char *d = NULL;
    size_t len = 0;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
        len = sb.st_size > (off_t)PENDING_REPLAY ? PENDING_REPLAY : (size_t)sb.st_size;
        d = malloc(len);
        if (d && pread(fd, d, len, 0) != (ssize_t)len) len = 0;
    }
    pthread_mutex_lock(&r->mu);
    long long done = stored_gen(r), gen = 0;
    pthread_mutex_unlock(&r->mu);
    const char *nl = d && len ? memchr(d, '\n', len < PENDING_HEADER ? len : PENDING_HEADER) : NULL;
    if (nl && !memcmp(d, PENDING_MAGIC, strlen(PENDING_MAGIC)) &&
        sscanf(d + strlen(PENDING_MAGIC), "%lld", &gen) == 1 && gen > done) {
        r->pgen = gen; /* what repo_pending_write marks written */
        r->pfile = len;
        r->pstale = 1;
        size_t queued = replay(r, nl + 1, len - (size_t)(nl + 1 - d));
        free(d);
        /* (not written: kept by replay or repo_pending_committed) */
        if (r->pfd >= 0 && queued)
            js_log(1, "repository",
                   "%s: %zu samples not yet in the repository at the last stop written from it",
                   r->ppath, queued);
        return;
    }
    if (d && len && !nl) js_log(1, "repository", "%s: not a log of pending samples", r->ppath);
    free(d);
    pthread_mutex_lock(&r->mu);
    restart(r, (gen > done ? gen : done) + 1);
    pthread_mutex_unlock(&r->mu);
}

void repo_pending_close(repo *r)
{
    if (r->pfd >= 0) {
        if (!r->npending && !r->pbroken) unlink(r->ppath); /* all in SQLite */
        close(r->pfd);
    }
    r->pfd = -1;
    free(r->ppath);
    free(r->pbuf);
}

int repo_pending_logged(const repo *r)
{
    return r->pfd >= 0 && !r->pbroken;
}

void repo_pending_note(repo *r, const char *text, size_t len)
{
    r->npending++;
    if (!repo_pending_logged(r)) return;
    if (r->plen + 4 + len > r->pcap) {
        size_t cap = (r->plen + 4 + len) * 2;
        char *b = realloc(r->pbuf, cap);
        if (!b) { /* written at this batch's end instead */
            r->pdue = 1;
            return;
        }
        r->pbuf = b;
        r->pcap = cap;
    }
    uint32_t l = (uint32_t)len;
    memcpy(r->pbuf + r->plen, &l, 4);
    memcpy(r->pbuf + r->plen + 4, text, len);
    r->plen += 4 + len;
}

int repo_pending_due(const repo *r)
{
    return !repo_pending_logged(r) || r->pdue || r->pfile + r->plen >= REPO_PENDING_BYTES;
}

void repo_pending_write(repo *r)
{
    repo_batch *b = &r->batch;
    for (size_t i = 0; i < REPO_BATCH_SLOTS; i++)
        if (b->slot[i]) repo_batch_write(r, b->slot[i]);
    repo_batch_wf_write(r, NULL);
    if (r->pfd >= 0 && (r->npending || r->pstale)) {
        /* the log's records are in SQLite with this transaction */
        sqlite3_stmt *st = repo_prep(r,
                                     "INSERT INTO repo_meta(k, v) VALUES('pending_gen', ?1)"
                                     " ON CONFLICT(k) DO UPDATE SET v = ?1",
                                     "i", (long long)r->pgen);
        if (st) sqlite3_step(st);
        repo_done(r, st);
        r->preset = 1;
    }
    r->npending = 0;
    r->plen = 0;
    r->pdue = r->pstale = 0;
}

int repo_pending_any(const repo *r)
{
    return r->npending || r->pstale;
}

void repo_pending_committed(repo *r, int ok)
{
    if (r->pfd < 0) return;
    if (r->preset && !ok) {
        /* what was pending is neither in SQLite nor marked written: the log
         * holds it, kept for the next start */
        keep(r);
        r->preset = 0;
        r->plen = 0;
        return;
    }
    if (r->preset) restart(r, r->pgen + 1);
    r->preset = 0;
    if (!r->plen || r->pbroken) {
        r->plen = 0;
        return;
    }
    ssize_t w = pwrite(r->pfd, r->pbuf, r->plen, (off_t)r->pfile);
    if (w != (ssize_t)r->plen) {
        /* the log no longer has them all: write everything pending at the
         * next batch, which also marks this generation done */
        js_log(1, "repository", "%s: %s; samples are written every batch from now on", r->ppath,
               w < 0 ? strerror(errno) : "short write");
        r->pbroken = 1;
    } else
        r->pfile += r->plen;
    r->plen = 0;
}
