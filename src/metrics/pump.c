/* pump.c — see pump.h.  One thread polls both pipes; every read is written
 * on before the scanner sees it (no strip), so the job's output is delayed
 * by one read/write, not by the scanner. */
#include "metrics/pump.h"
#include "metrics/payload.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PUMP_QUIET_MS 200  /* strip: release a held partial marker after this */
#define PUMP_HOLD_MS  2000 /* strip: and an unfinished block after this */

typedef struct pump_stream {
    int rfd, wfd; /* pipe: we read rfd, the job writes wfd */
    int out;      /* where bytes go */
    int out_broken;
    const char *name;
    payload_scanner *sc;
    unsigned long long bytes;
    struct pump *p;
} pump_stream;

struct pump {
    pump_stream s[2];
    int relayed; /* a relay process passes the bytes on; we read its copy */
    pump_cbs cb;
    pthread_t th;
    int started;
    atomic_int stopping;
    atomic_long grace_ms;
    int wake[2];
};

static void pump_write(void *ctx, const char *p, size_t n)
{
    pump_stream *s = ctx;
    if (s->out < 0) return; /* the relay passes the bytes on */
    while (n && !s->out_broken) {
        ssize_t w = write(s->out, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) { /* our stdout is non-blocking: wait */
                struct pollfd pf = {.fd = s->out, .events = POLLOUT};
                poll(&pf, 1, 100);
                continue;
            }
            s->out_broken = 1; /* the thread closes the pipe: the job sees it */
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void pump_block(void *ctx, const char *p, size_t n)
{
    pump_stream *s = ctx;
    if (s->p->cb.block) s->p->cb.block(s->p->cb.ctx, s->name, p, n);
}

static void pump_error(void *ctx, const char *reason, size_t size)
{
    pump_stream *s = ctx;
    if (s->p->cb.error) s->p->cb.error(s->p->cb.ctx, s->name, reason, size);
}

/* stdout and stderr are one open file description ("> f 2>&1", a terminal
 * opened once): kcmp says so exactly; where it is not allowed, the same
 * file with the same flags (and offset) is taken for the same. */
static int pump_same_description(int a, int b)
{
    long r = syscall(SYS_kcmp, (long)getpid(), (long)getpid(), 0 /* KCMP_FILE */, (long)a, (long)b);
    if (r >= 0) return r == 0;
    struct stat sa, sb;
    if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0 || sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino)
        return 0;
    if (fcntl(a, F_GETFL) != fcntl(b, F_GETFL)) return 0;
    return !S_ISREG(sa.st_mode) || lseek(a, 0, SEEK_CUR) == lseek(b, 0, SEEK_CUR);
}

/* ---- the relay ----
 *
 * Without --strip-payloads the job's output does not depend on jobscope: a
 * small process, forked twice so that it is no child of ours (nor of the
 * job's tree), reads the job's pipes, writes every byte on to our stdout and
 * stderr, and copies it into one "tap" pipe per stream for the scanner here.
 * It lives until every writer has closed its end of the job's pipes -- a
 * background process included -- so neither `kill -9` of jobscope nor the
 * end of our grace period cuts the job's output: once we stop reading, the
 * taps break and the relay only relays.  Like us, it closes a job's pipe
 * when the output behind it breaks, so the job gets SIGPIPE. */

static int relay_put(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {.fd = fd, .events = POLLOUT};
                poll(&pf, 1, 100);
                continue;
            }
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void relay_main(int in[2], const int out[2], int tap[2])
{
    char buf[65536]; /* the relay is a process of its own (pump_start) */
    int open_n = (in[0] >= 0) + (in[1] >= 0);
    while (open_n > 0) {
        struct pollfd pf[2];
        int n = 0, idx[2];
        for (int i = 0; i < 2; i++)
            if (in[i] >= 0) {
                pf[n].fd = in[i];
                pf[n].events = POLLIN;
                idx[n++] = i;
            }
        if (poll(pf, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < n; k++) {
            if (!pf[k].revents) continue;
            int i = idx[k];
            ssize_t m = read(in[i], buf, sizeof buf);
            if (m < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            int end = m <= 0;
            if (m > 0 && relay_put(out[i], buf, (size_t)m) < 0)
                end = 1; /* the output broke: the job sees it */
            if (m > 0 && tap[i] >= 0 && relay_put(tap[i], buf, (size_t)m) < 0) {
                close(tap[i]); /* jobscope is gone or done: relay only */
                tap[i] = -1;
            }
            if (end) {
                close(in[i]);
                in[i] = -1;
                if (tap[i] >= 0) close(tap[i]);
                tap[i] = -1;
                open_n--;
            }
        }
    }
}

/* Forks the relay; on success our streams read the taps.  0, or -1 (then
 * the pump relays itself, as before). */
static int pump_relay_start(pump *p)
{
    int tap[2][2] = {{-1, -1}, {-1, -1}};
    for (int i = 0; i < 2; i++)
        if (p->s[i].rfd >= 0 && pipe2(tap[i], O_CLOEXEC) < 0) goto fail;
    pid_t c = fork();
    if (c < 0) goto fail;
    if (c == 0) {
        if (fork() != 0) _exit(0); /* the relay is the grandchild: init's */
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL); /* ^C, SIGTERM, SIGPIPE: not for the relay */
        setpgid(0, 0);
        if (p->cb.send_home) /* out of the job's cgroup, if we are in it */
            p->cb.send_home(p->cb.ctx, getpid());
        int in[2] = {p->s[0].rfd, p->s[1].rfd};
        int out[2] = {p->s[0].out, p->s[1].out};
        int tw[2] = {tap[0][1], tap[1][1]};
        /* keep only what the relay uses: our other descriptors (outputs,
         * sockets, the job's write ends) must not be held open by it */
        int top = 2;
        for (int i = 0; i < 2; i++) {
            if (in[i] > top) top = in[i];
            if (tw[i] > top) top = tw[i];
            if (out[i] > top) top = out[i];
        }
        for (int fd = 3; fd < top; fd++)
            if (fd != in[0] && fd != in[1] && fd != tw[0] && fd != tw[1] && fd != out[0] &&
                fd != out[1])
                close(fd);
        if (syscall(SYS_close_range, (unsigned)top + 1, ~0U, 0) < 0) {
            long maxfd = sysconf(_SC_OPEN_MAX); /* old kernel: one by one, bounded */
            for (long fd = top + 1; fd < (maxfd > 0 && maxfd < 65536 ? maxfd : 65536); fd++)
                close((int)fd);
        }
        relay_main(in, out, tw);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    for (int i = 0; i < 2; i++)
        if (p->s[i].rfd >= 0) {
            close(p->s[i].rfd); /* the relay reads the job's pipe */
            close(tap[i][1]);
            p->s[i].rfd = tap[i][0]; /* we read its copy */
            p->s[i].out = -1;
        }
    p->relayed = 1;
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (tap[i][j] >= 0) close(tap[i][j]);
    return -1;
}

pump *pump_open(int strip, int out_fd, int err_fd, const pump_cbs *cb)
{
    pump *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cb = *cb;
    p->wake[0] = p->wake[1] = -1;
    p->s[1].rfd = p->s[1].wfd = -1;
    int outs[2] = {out_fd, err_fd};
    const char *names[2] = {"stdout", "stderr"};
    /* One destination: one pipe for both streams, so that their order
     * holds (two pipes cannot say which write came first). */
    int merged = pump_same_description(out_fd, err_fd);
    for (int i = 0; i < 2; i++) {
        pump_stream *s = &p->s[i];
        int fds[2];
        s->rfd = s->wfd = -1;
        if (i == 1 && merged) break;
        if (pipe2(fds, O_CLOEXEC) < 0) goto fail;
        s->rfd = fds[0];
        s->wfd = fds[1];
        s->out = outs[i];
        s->name = names[i];
        s->p = p;
        payload_cbs pc = {pump_write, pump_block, pump_error, s};
        if (!(s->sc = payload_new(strip, PAYLOAD_CAP, &pc))) goto fail;
    }
    if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) < 0) goto fail;
    if (!strip) pump_relay_start(p); /* else (or if it fails) we relay */
    return p;
fail:
    pump_free(p);
    return NULL;
}

int pump_spawn_actions(pump *p, posix_spawn_file_actions_t *fa)
{
    /* dup2 clears FD_CLOEXEC on the copy; the originals close at exec */
    if (posix_spawn_file_actions_adddup2(fa, p->s[0].wfd, 1) ||
        posix_spawn_file_actions_adddup2(fa, p->s[1].wfd >= 0 ? p->s[1].wfd : p->s[0].wfd, 2))
        return -1;
    return 0;
}

static void *pump_thread(void *arg)
{
    pump *p = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* SIGPIPE from a closed stdout: EPIPE instead */
    char buf[65536];
    int open_n = (p->s[0].rfd >= 0) + (p->s[1].rfd >= 0), seen_stop = 0;
    long quiet_since = -1, last_data = now_mono_ms(), held_since[2] = {-1, -1};
    while (open_n > 0) {
        struct pollfd pf[3];
        int n = 0, idx[2];
        for (int i = 0; i < 2; i++)
            if (p->s[i].rfd >= 0) {
                pf[n].fd = p->s[i].rfd;
                pf[n].events = POLLIN;
                idx[n++] = i;
            }
        pf[n].fd = p->wake[0];
        pf[n].events = POLLIN;
        int held = payload_held(p->s[0].sc) || (p->s[1].sc && payload_held(p->s[1].sc));
        int timeout = held ? PUMP_QUIET_MS : (atomic_load(&p->stopping) ? 50 : -1);
        int r = poll(pf, (nfds_t)n + 1, timeout);
        if (r < 0 && errno != EINTR) break;
        long now = now_mono_ms();
        if (pf[n].revents) {
            char junk[64];
            while (read(p->wake[0], junk, sizeof junk) > 0) {}
        }
        int got = 0;
        for (int k = 0; k < n && r > 0; k++) {
            if (!pf[k].revents) continue;
            pump_stream *s = &p->s[idx[k]];
            ssize_t m = read(s->rfd, buf, sizeof buf);
            if (m > 0) {
                s->bytes += (unsigned long long)m;
                payload_feed(s->sc, buf, (size_t)m);
                got = 1;
            }
            /* Our stdout/stderr broke (EPIPE: the reader left): stop reading,
             * so the job's next write fails (SIGPIPE) as it would without us,
             * instead of writing on forever into a pipe nobody reads. */
            if ((m > 0 && s->out_broken) || m == 0 ||
                (m < 0 && errno != EINTR && errno != EAGAIN)) {
                payload_finish(s->sc);
                close(s->rfd);
                s->rfd = -1;
                open_n--;
            }
        }
        for (int i = 0; i < 2; i++) {
            if (!p->s[i].sc || !payload_held(p->s[i].sc)) {
                held_since[i] = -1;
            } else if (held_since[i] < 0) {
                held_since[i] = now;
            } else if (now - held_since[i] >= PUMP_HOLD_MS) {
                payload_abandon(p->s[i].sc, "payload block not ended within 2 s, passed on");
                held_since[i] = -1;
            }
        }
        if (got) {
            last_data = now;
            quiet_since = -1;
        } else if (held) {
            if (quiet_since < 0) quiet_since = now;
            if (now - quiet_since >= PUMP_QUIET_MS) {
                payload_flush(p->s[0].sc);
                if (p->s[1].sc) payload_flush(p->s[1].sc);
            }
        }
        if (atomic_load(&p->stopping) && !seen_stop) {
            seen_stop = 1;
            last_data = now;
        }
        if (seen_stop && now - last_data >= atomic_load(&p->grace_ms))
            break; /* a background process keeps the pipe open */
    }
    for (int i = 0; i < 2; i++)
        if (p->s[i].rfd >= 0) {
            payload_finish(p->s[i].sc);
            close(p->s[i].rfd);
            p->s[i].rfd = -1;
        }
    return NULL;
}

int pump_start(pump *p)
{
    for (int i = 0; i < 2; i++) {
        if (p->s[i].wfd >= 0) close(p->s[i].wfd);
        p->s[i].wfd = -1;
    }
    if (pthread_create(&p->th, NULL, pump_thread, p)) return -1;
    p->started = 1;
    return 0;
}

void pump_stop(pump *p, double grace_s)
{
    if (!p || !p->started) return;
    atomic_store(&p->grace_ms, (long)(grace_s * 1000));
    atomic_store(&p->stopping, 1);
    if (write(p->wake[1], "x", 1) < 0) {}
    pthread_join(p->th, NULL);
    p->started = 0;
}

unsigned long long pump_bytes(const pump *p, int stream)
{
    return p->s[stream & 1].bytes;
}

void pump_free(pump *p)
{
    if (!p) return;
    pump_stop(p, 0);
    for (int i = 0; i < 2; i++) {
        if (p->s[i].rfd >= 0) close(p->s[i].rfd);
        if (p->s[i].wfd >= 0) close(p->s[i].wfd);
        payload_free(p->s[i].sc);
    }
    if (p->wake[0] >= 0) close(p->wake[0]);
    if (p->wake[1] >= 0) close(p->wake[1]);
    free(p);
}
