/* csv.c — samples as CSV rows: `PATH.csv`, or any file with --format csv or
 * joremon-csv.  Only kickstart.inv.online samples are rows; the other events
 * (start, end record, GPU, metrics) belong to the JSON outputs.  A header is
 * written when the file is empty. Numbers are cumulative as in the events. */
#include "sink.h"
#include "formats/joremon.h"
#include "../model/metric.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int sink_file_open_fd(const char *url, int *own, char *err, size_t errlen);
int sink_file_write_line(int fd, int regular, const char *p, size_t n, int newline);

extern const sink_ops sink_csv_ops;

typedef struct csv_sink {
    sink base;
    int fd, own_fd, regular, joremon, header_done;
    jbuf buf;
    joremon_state jr;
    const sink_options *opt;
} csv_sink;

/* The columns after ts,job_id,hostname: fields of the metric model, named
 * and formatted as the catalogue says (an unknown iowait is an empty cell). */
static const metric_id csv_columns[] = {
    M_ELAPSED,     M_UTIME,
    M_STIME,       M_CPU_PERCENT,
    M_PROCS,       M_THREADS,
    M_RSS,         M_VM,
    M_SWAP,        M_RCHAR,
    M_WCHAR,       M_READ_BYTES,
    M_WRITE_BYTES, M_CANCELLED_WRITE_BYTES,
    M_SYSCR,       M_SYSCW,
    M_IOWAIT,      M_MINFLT,
    M_MAJFLT,      M_NVCSW,
    M_NIVCSW,
};
#define NCOLUMNS (sizeof csv_columns / sizeof csv_columns[0])

static void csv_header(jbuf *b)
{
    jbuf_puts(b, "ts,job_id,hostname");
    for (size_t i = 0; i < NCOLUMNS; i++) {
        jbuf_putc(b, ',');
        jbuf_puts(b, metric_catalogue[csv_columns[i]].name);
    }
}

static int csv_match(const char *url, const sink_options *o)
{
    if (o->format == FORMAT_CSV || o->format == FORMAT_JOREMON_CSV)
        return strcmp(url, "-") == 0 || !strncmp(url, "file://", 7) || !strstr(url, "://");
    if (o->format != FORMAT_AUTO) return 0;
    size_t n = strlen(url);
    return n > 4 && !strcmp(url + n - 4, ".csv") &&
           (!strstr(url, "://") || !strncmp(url, "file://", 7));
}

/* The header is written unless the file is a regular file that already
 * begins with this very header (appending to our own CSV): decided by its
 * first bytes, not its size -- `{ echo x; jobscope ... -o -; } > job.out`
 * gets its header. */
static int csv_has_header(csv_sink *s)
{
    jbuf_init(&s->buf, 512);
    if (s->joremon)
        joremon_csv_header(&s->buf, s->opt->joremon_types);
    else
        csv_header(&s->buf);
    jbuf_putc(&s->buf, '\n');
    char first[1024];
    size_t want = s->buf.len < sizeof first ? s->buf.len : sizeof first;
    char self[64]; /* the fd may be write-only: read through /proc */
    snprintf(self, sizeof self, "/proc/self/fd/%d", s->fd);
    int rfd = open(self, O_RDONLY | O_CLOEXEC);
    ssize_t n = rfd >= 0 ? pread(rfd, first, want, 0) : -1;
    if (rfd >= 0) close(rfd);
    int same = n == (ssize_t)want && !memcmp(first, s->buf.p, want);
    jbuf_free(&s->buf);
    return same;
}

static sink *csv_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    csv_sink *s = calloc(1, sizeof *s);
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
    s->joremon = o->format == FORMAT_JOREMON_CSV;
    s->opt = o;
    s->header_done = s->regular && st.st_size > 0 && csv_has_header(s);
    s->base.ops = &sink_csv_ops;
    s->base.label = sink_redact_url(url);
    jbuf_init(&s->buf, 512);
    return &s->base;
}

static void csv_str(jbuf *b, const char *v)
{
    jbuf_putc(b, ',');
    if (!v) return;
    if (!strpbrk(v, ",\"\n\r")) {
        jbuf_puts(b, v);
        return;
    }
    jbuf_putc(b, '"');
    for (; *v; v++) {
        if (*v == '"') jbuf_putc(b, '"');
        jbuf_putc(b, *v);
    }
    jbuf_putc(b, '"');
}

static int csv_write(sink *base, const js_event *ev)
{
    csv_sink *s = (csv_sink *)base;
    const mset *t = ev->metrics;
    if (!t || strcmp(ev->name, EV_SAMPLE)) return 0; /* samples only (not gpu.stats) */
    int rc = 0;
    if (!s->header_done) {
        jbuf_reset(&s->buf);
        if (s->joremon)
            joremon_csv_header(&s->buf, s->opt->joremon_types);
        else
            csv_header(&s->buf);
        rc |= sink_file_write_line(s->fd, s->regular, s->buf.p, s->buf.len, 1);
        s->header_done = 1;
    }
    if (s->joremon) {
        joremon_state_update(&s->jr, t);
        for (int type = 0; type < JOREMON_NTYPES; type++) {
            if (!joremon_type_selected(s->opt->joremon_types, type)) continue;
            jbuf_reset(&s->buf);
            joremon_csv_row(&s->buf, t, s->opt->ann, type, s->opt->joremon_types, &s->jr);
            rc |= sink_file_write_line(s->fd, s->regular, s->buf.p, s->buf.len, 1);
        }
        return rc;
    }
    const annotations *a = s->opt->ann;
    jbuf *b = &s->buf;
    char num[64];
    jbuf_reset(b);
    jbuf_put(b, num, fmt_fixed(num, t->ts, 6));
    csv_str(b, a ? a->job_id : NULL);
    csv_str(b, a ? a->hostname : NULL);
    for (size_t i = 0; i < NCOLUMNS; i++) {
        jbuf_putc(b, ',');
        mset_write_cell(b, t, csv_columns[i]);
    }
    return rc | sink_file_write_line(s->fd, s->regular, b->p, b->len, 1);
}

static void csv_close(sink *base)
{
    csv_sink *s = (csv_sink *)base;
    if (s->own_fd) close(s->fd);
    jbuf_free(&s->buf);
    free(s->base.label);
    free(s);
}

const sink_ops sink_csv_ops = {
    .name = "csv",
    .match = csv_match,
    .open = csv_open,
    .write = csv_write,
    .flush = NULL,
    .close = csv_close,
};
