/* file.c — JSON Lines to a file (`PATH`, `file://PATH`) or stdout (`-`).
 *
 * Whole lines go out in one write on an O_APPEND descriptor, so several
 * jobs can share a file without interleaving.  A short write (disk full)
 * keeps the whole lines it wrote and undoes the cut one with ftruncate when
 * nobody appended after us, so a reader never sees a truncated line.  To a
 * regular file, samples that come sooner than 0.9 --flush-interval (1 s)
 * after the last write wait for the next one, a still job's (the sample
 * before with its time put in) sooner than 1.9 (never longer; any other
 * event, the end record too, takes them along at once): an ext4 append cost
 * as much as the rest of a still job's sample, and on a shared filesystem
 * every write is a round trip (bench/README.md).  Pipes, terminals and
 * FIFOs get every line at once.  With --format joremon-json each sample
 * becomes JoReMon's three rows instead (joremon.c). */
#include "sink.h"
#include "formats/joremon.h"
#include "../util/clock.h"
#include "../util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

extern const sink_ops sink_file_ops;

typedef struct file_sink {
    sink base;
    int fd;
    int own_fd;
    int regular;
    enum sink_format format;
    jbuf buf; /* joremon rows */
    joremon_state jr;
    const sink_options *opt;
    jbuf held;           /* whole lines waiting for the next write */
    unsigned long nheld; /* how many */
    double written_at;   /* monotonic time of the last write (0: none yet) */
} file_sink;

/* What may wait at most (bytes): one write of it is still cheap. */
#define FILE_HOLD_BYTES 65536

static int file_match(const char *url, const sink_options *o)
{
    if (!strcmp(url, "-") || !strncmp(url, "file://", 7)) return 1;
    return strstr(url, "://") == NULL; /* a plain path */
}

/* Opens PATH / file://PATH / - for appending. Shared with csv.c. */
int sink_file_open_fd(const char *url, int *own, char *err, size_t errlen)
{
    if (!strcmp(url, "-")) {
        *own = 0;
        return STDOUT_FILENO;
    }
    const char *path = !strncmp(url, "file://", 7) ? url + 7 : url;
    if (!*path) {
        snprintf(err, errlen, "%s: empty path", url);
        return -1;
    }
    /* Never block here (the job has not started yet): a FIFO without a
     * reader would hold open() until one comes.  Then hold both ends
     * (O_RDWR on a FIFO does not wait on Linux): events queue in the FIFO
     * and a reader that comes later gets them. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0 && errno == ENXIO) {
        fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0) js_log(1, path, "a FIFO without a reader yet: events wait in it");
    }
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* writes as before */
    *own = 1;
    return fd;
}

/* One line, one syscall; never leaves a partial line behind. */
int sink_file_write_line(int fd, int regular, const char *p, size_t n, int newline)
{
    struct iovec iov[2] = {{(void *)p, n}, {"\n", 1}};
    size_t want = n + (newline ? 1 : 0);
    ssize_t w;
    do w = writev(fd, iov, newline ? 2 : 1);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)want) return 0;
    if (w > 0 && regular) {
        off_t end = lseek(fd, 0, SEEK_CUR);
        struct stat st;
        if (end >= w && fstat(fd, &st) == 0 && st.st_size == end)
            if (ftruncate(fd, end - w) != 0) { /* nothing more we can do */
            }
    } else if (w > 0) {
        /* pipe/tty: finish the line rather than leave it cut */
        size_t done = (size_t)w;
        while (done < want) {
            const char *src = done < n ? p + done : "\n";
            size_t len = done < n ? n - done : 1;
            ssize_t r = write(fd, src, len);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return -1;
            done += (size_t)r;
        }
        return 0;
    }
    return -1;
}

static sink *file_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    file_sink *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->fd = sink_file_open_fd(url, &s->own_fd, err, errlen);
    if (s->fd < 0) {
        free(s);
        return NULL;
    }
    struct stat st;
    s->regular = fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode);
    s->base.ops = &sink_file_ops;
    s->base.label = sink_redact_url(url);
    s->format = o->format == FORMAT_JOREMON_JSON ? FORMAT_JOREMON_JSON : FORMAT_JSON;
    s->opt = o;
    jbuf_init(&s->buf, 1024);
    jbuf_init(&s->held, 0);
    return &s->base;
}

/* Writes what is held in one write; returns how many of its lines were not
 * written.  A short write (the disk full) keeps the whole lines it wrote
 * and undoes the cut one, as for a single line. */
static unsigned long file_drain(file_sink *s)
{
    if (!s->held.len) return 0;
    const char *p = s->held.p;
    size_t n = s->held.len;
    ssize_t w;
    do w = write(s->fd, p, n);
    while (w < 0 && errno == EINTR);
    if (w >= 0 && (size_t)w < n) errno = ENOSPC; /* a short write: the disk is full */
    unsigned long kept = 0;
    if (w == (ssize_t)n) {
        kept = s->nheld;
    } else if (w > 0) {
        size_t whole = (size_t)w;
        while (whole > 0 && p[whole - 1] != '\n') whole--;
        off_t end = lseek(s->fd, 0, SEEK_CUR);
        struct stat st;
        if (end >= w && fstat(s->fd, &st) == 0 && st.st_size == end &&
            ftruncate(s->fd, end - (w - (ssize_t)whole)) != 0) { /* nothing more we can do */
        }
        for (size_t i = 0; i < whole; i++) kept += p[i] == '\n';
    }
    unsigned long lost = s->nheld - kept;
    jbuf_reset(&s->held);
    s->nheld = 0;
    return lost;
}

/* Writes what is held; what it could not write is counted lost and said
 * once per output, as the emitter says a failed write. */
static void file_drain_counted(file_sink *s)
{
    unsigned long lost = file_drain(s);
    if (!lost) return;
    if (__atomic_fetch_add(&s->base.lost, lost, __ATOMIC_RELAXED) || s->base.errors) return;
    js_log(1, s->base.label ? s->base.label : "output",
           "cannot write %lu events held for the next write (%s); they are lost", lost,
           strerror(errno));
}

/* One line (without its '\n'): written now, or, a sample's, held for the
 * next write (see the top of the file): until 0.9 flush intervals after the
 * last write (may_hold 1), a still job's sample until 1.9 (may_hold 2).
 * Any other event (the start, the end record, a custom metric's) goes out
 * at once with what is held.  -1 only when a line written on its own
 * failed (the emitter says so); what a write of held lines loses is counted
 * and said here. */
static int file_line(file_sink *s, const char *p, size_t n, int may_hold)
{
    double hold = s->opt->flush_interval;
    if (!s->regular || !(hold > 0)) return sink_file_write_line(s->fd, s->regular, p, n, 1);
    double now = now_mono();
    /* due a little early: a sample late by scheduling does not wait a whole
     * interval more (at 1 s intervals and the default 1 s, every sample of
     * a job that moves is written when it comes, a still one's every
     * other) */
    int due = !may_hold || now - s->written_at >= hold * (may_hold - 0.1) ||
              s->held.len + n + 1 > FILE_HOLD_BYTES;
    size_t before = s->held.len;
    jbuf_put(&s->held, p, n);
    jbuf_putc(&s->held, '\n');
    if (s->held.oom) { /* no room to wait: what was held, then this line */
        s->held.oom = 0;
        s->held.len = before;
        file_drain_counted(s);
        s->written_at = now;
        return sink_file_write_line(s->fd, s->regular, p, n, 1);
    }
    s->nheld++;
    if (!due) return 0;
    s->written_at = now;
    file_drain_counted(s);
    return 0;
}

static int file_write(sink *base, const js_event *ev)
{
    file_sink *s = (file_sink *)base;
    if (s->format == FORMAT_JOREMON_JSON) {
        if (!ev->metrics || strcmp(ev->name, EV_SAMPLE)) return 0; /* JoReMon has samples only */
        int rc = 0;
        joremon_state_update(&s->jr, ev->metrics);
        for (int type = 0; type < JOREMON_NTYPES; type++) {
            if (!joremon_type_selected(s->opt->joremon_types, type)) continue;
            jbuf_reset(&s->buf);
            joremon_json(&s->buf, ev->metrics, s->opt->ann, type, &s->jr);
            rc |= file_line(s, s->buf.p, s->buf.len, 1 + (ev->again != 0));
        }
        return rc;
    }
    return file_line(s, ev->json, ev->len, !strcmp(ev->name, EV_SAMPLE) ? 1 + (ev->again != 0) : 0);
}

static int file_flush(sink *base, double timeout_s)
{
    (void)timeout_s;
    file_sink *s = (file_sink *)base;
    file_drain_counted(s);
    if (s->regular) fdatasync(s->fd);
    return 0;
}

static void file_settle(sink *base)
{
    file_sink *s = (file_sink *)base;
    s->written_at = now_mono();
    file_drain_counted(s);
}

static void file_close(sink *base)
{
    file_sink *s = (file_sink *)base;
    file_drain_counted(s);
    if (s->own_fd) close(s->fd);
    jbuf_free(&s->held);
    jbuf_free(&s->buf);
    free(s->base.label);
    free(s);
}

const sink_ops sink_file_ops = {
    .name = "file",
    .match = file_match,
    .open = file_open,
    .write = file_write,
    .flush = file_flush,
    .settle = file_settle,
    .close = file_close,
};
