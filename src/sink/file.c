/* file.c — JSON Lines to a file (`PATH`, `file://PATH`) or stdout (`-`).
 *
 * Every event is one line written by one writev() on an O_APPEND descriptor,
 * so several jobs can share a file without interleaving.  A short write (disk
 * full) is undone with ftruncate when nobody appended after us, so a reader
 * never sees a truncated line.  With --format joremon-json each sample
 * becomes JoReMon's three rows instead (joremon.c). */
#include "sink.h"
#include "formats/joremon.h"
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
} file_sink;

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
    return &s->base;
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
            rc |= sink_file_write_line(s->fd, s->regular, s->buf.p, s->buf.len, 1);
        }
        return rc;
    }
    return sink_file_write_line(s->fd, s->regular, ev->json, ev->len, 1);
}

static int file_flush(sink *base, double timeout_s)
{
    file_sink *s = (file_sink *)base;
    if (s->regular) fdatasync(s->fd);
    return 0;
}

static void file_close(sink *base)
{
    file_sink *s = (file_sink *)base;
    if (s->own_fd) close(s->fd);
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
    .close = file_close,
};
