/* reapio.c — see reapio.h: a reaped child's I/O from jobscope's own
 * signal-level I/O counters, for users who cannot read a zombie's
 * /proc/PID/io. */
#include "reapio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRIES 32

/* Reads one io file whole; the bytes read (the reading thread's rchar grows
 * by them), or -1. */
static ssize_t read_io(const char *path, proc_io *io)
{
    char buf[512];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do n = read(fd, buf, sizeof buf - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    return procread_io(buf, (size_t)n, io) == 0 ? n : -1;
}

/* jobscope's threads but the calling one, sorted; their count, or -1. */
static int list_threads(pid_t self, pid_t *tids)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        pid_t tid = (pid_t)atoi(de->d_name);
        if (tid == self) continue;
        if (n == REAPIO_MAX_THREADS) {
            closedir(d);
            return -1;
        }
        int k = n++;
        for (; k > 0 && tids[k - 1] > tid; k--) tids[k] = tids[k - 1];
        tids[k] = tid;
    }
    closedir(d);
    return n;
}

static void io_sub(proc_io *a, const proc_io *b)
{
    uint64_t *x = &a->rchar;
    const uint64_t *y = &b->rchar;
    for (int i = 0; i < 7; i++) x[i] -= y[i];
}

/* S = whole - threads, read so that no other thread did I/O meanwhile: 0.
 * -1: a best effort (another thread kept busy, or a thread came or went),
 * or nothing at all. */
static int snapshot(reapio_snap *s)
{
    pid_t self = gettid(), again[REAPIO_MAX_THREADS];
    proc_io after, whole, mine;
    char path[64];
    for (int t = 0; t < TRIES; t++) {
        int n = list_threads(self, s->tids), ok = n >= 0;
        s->n = ok ? n : 0;
        for (int i = 0; ok && i < n; i++) {
            snprintf(path, sizeof path, "/proc/self/task/%d/io", (int)s->tids[i]);
            ok = read_io(path, &s->io[i]) > 0;
        }
        ssize_t wn = ok ? read_io("/proc/self/io", &whole) : -1;
        /* our own counters right after: less the read of the whole */
        snprintf(path, sizeof path, "/proc/self/task/%d/io", (int)self);
        ok = wn > 0 && read_io(path, &mine) > 0;
        if (!ok) {
            sched_yield();
            continue;
        }
        mine.rchar -= (uint64_t)wn;
        mine.syscr -= 1;
        s->sig = whole;
        io_sub(&s->sig, &mine);
        for (int i = 0; i < n; i++) {
            snprintf(path, sizeof path, "/proc/self/task/%d/io", (int)s->tids[i]);
            ok = ok && read_io(path, &after) > 0 && !memcmp(&after, &s->io[i], sizeof after);
            io_sub(&s->sig, &s->io[i]);
        }
        s->valid = 1; /* at least a best effort from here on */
        if (ok && list_threads(self, again) == n && !memcmp(again, s->tids, sizeof *again * n))
            return 0;
        sched_yield(); /* let the busy thread get on and off the CPU */
    }
    return -1;
}

/* Do the threads of a stand as they were (none left, none came)? */
static int same_threads(const reapio_snap *a, const reapio_snap *b)
{
    return a->n == b->n && !memcmp(a->tids, b->tids, sizeof a->tids[0] * (size_t)a->n);
}

void reapio_init(reapio *r)
{
    memset(r, 0, sizeof *r);
}

void reapio_before(reapio *r)
{
    /* always read anew: a thread of ours that came and went since the last
     * reap moved its I/O into S without leaving a trace in the list */
    memset(&r->base, 0, sizeof r->base);
    r->base_exact = snapshot(&r->base) == 0;
    r->have_base = 1;
}

int reapio_after(reapio *r, proc_io *io)
{
    reapio_snap now;
    memset(&now, 0, sizeof now);
    int exact = snapshot(&now) == 0;
    memset(io, 0, sizeof *io);
    int ok = exact && r->have_base && r->base_exact && now.valid && r->base.valid;
    if (r->have_base && now.valid && r->base.valid) {
        proc_io d = now.sig;
        /* a thread gone meanwhile moved its I/O into S: take back what it
         * had at the base (what it did after that is the error) */
        for (int i = 0, j = 0; i < r->base.n; i++) {
            while (j < now.n && now.tids[j] < r->base.tids[i]) j++;
            if (j < now.n && now.tids[j] == r->base.tids[i]) continue;
            io_sub(&d, &r->base.io[i]);
            ok = 0;
        }
        if (!same_threads(&now, &r->base)) ok = 0;
        uint64_t *x = &io->rchar;
        const uint64_t *a = &d.rchar, *b = &r->base.sig.rchar;
        for (int i = 0; i < 7; i++)
            x[i] = a[i] > b[i] && a[i] - b[i] < (1ull << 62) ? a[i] - b[i] : 0;
    }
    r->have_base = 0;
    if (!ok) r->inexact++;
    return ok ? 0 : -1;
}
