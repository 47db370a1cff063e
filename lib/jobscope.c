/* jobscope.c — libjobscope: the C client of jobscope's custom metrics.
 *
 * Wire format and transport: docs/metrics.md (one SOCK_SEQPACKET message per
 * metric on the Unix socket named by JOBSCOPE_SOCKET).  The connection is
 * made on first use and shared by all threads of a process (a message is
 * atomic); a forked child makes its own.  Sends use
 * MSG_DONTWAIT: when the monitor falls behind, metrics are dropped, counted,
 * and the count rides on the next message that gets through so the monitor
 * can report it.  Self-contained: links with nothing but libc/libpthread. */
#include "jobscope.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define JS_API      __attribute__((visibility("default")))
#define JS_MSG      8192
#define JS_RETRY_NS 100000000LL /* reconnect at most every 100 ms */

static pthread_once_t js_once = PTHREAD_ONCE_INIT;
static int js_on; /* a monitor was named in the environment */
static int js_maxlevel;
static struct sockaddr_un js_addr;
static atomic_int js_fd = -1;
static atomic_int js_dead; /* the monitor went away: stop trying */
static atomic_llong js_next_try;
static atomic_long js_pid;
static atomic_ulong js_lost; /* not yet reported */
static atomic_ulong js_lost_total;
static pthread_mutex_t js_lock = PTHREAD_MUTEX_INITIALIZER;

/* A forked child gets a connection of its own on first use (its own queue
 * at the monitor); the parent's stays the parent's. */
static void js_atfork_child(void)
{
    int fd = atomic_exchange(&js_fd, -1);
    if (fd >= 0) close(fd);
    atomic_store(&js_pid, (long)getpid());
    atomic_store(&js_lost, 0);
    atomic_store(&js_lost_total, 0);
    atomic_store(&js_next_try, 0);
    pthread_mutex_init(&js_lock, NULL);
}

static void js_init(void)
{
    const char *path = getenv("JOBSCOPE_SOCKET");
    if (!path || !*path || strlen(path) >= sizeof js_addr.sun_path) return;
    const char *lv = getenv("JOBSCOPE_TELEMETRY_LEVEL");
    js_maxlevel = 1 << 30;
    if (lv && *lv) {
        char *end;
        long v = strtol(lv, &end, 10);
        if (!*end && v >= 0) js_maxlevel = (int)(v < js_maxlevel ? v : js_maxlevel);
    }
    if (js_maxlevel == 0) return;
    js_addr.sun_family = AF_UNIX;
    memcpy(js_addr.sun_path, path, strlen(path) + 1);
    atomic_store(&js_pid, (long)getpid());
    pthread_atfork(NULL, NULL, js_atfork_child);
    js_on = 1;
}

static long long js_mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The shared connection, made on first use; -1 if there is none now. */
static int js_conn(void)
{
    int fd = atomic_load_explicit(&js_fd, memory_order_acquire);
    if (fd >= 0 || atomic_load(&js_dead)) return fd;
    long long now = js_mono_ns();
    if (now < atomic_load(&js_next_try)) return -1;
    pthread_mutex_lock(&js_lock);
    fd = atomic_load(&js_fd);
    if (fd < 0) {
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0) {
            int sz = 1 << 20; /* room for bursts (capped by wmem_max) */
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
            if (connect(fd, (struct sockaddr *)&js_addr, sizeof js_addr) < 0) {
                if (errno == ENOENT || errno == ECONNREFUSED)
                    atomic_store(&js_dead, 1); /* nobody listens there */
                close(fd);
                fd = -1;
                atomic_store(&js_next_try, now + JS_RETRY_NS);
            } else {
                atomic_store_explicit(&js_fd, fd, memory_order_release);
            }
        }
    }
    pthread_mutex_unlock(&js_lock);
    return fd;
}

static void js_lose(unsigned long n)
{
    atomic_fetch_add(&js_lost, n);
    atomic_fetch_add(&js_lost_total, n);
}

static int js_send(const char *buf, size_t n, unsigned long lost_taken)
{
    int fd = js_conn();
    ssize_t r = -1;
    if (fd >= 0) {
        do r = send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        while (r < 0 && errno == EINTR);
        if (r < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN ||
                      errno == ENOTSOCK || errno == EBADF))
            atomic_store(&js_dead, 1); /* the monitor is gone */
    }
    if (r < 0) {
        atomic_fetch_add(&js_lost, 1 + lost_taken);
        atomic_fetch_add(&js_lost_total, 1);
        return 0;
    }
    return 1;
}

/* Small, allocation-free formatting. */
static char *js_u(char *p, unsigned long long v)
{
    char t[24];
    int n = 0;
    do t[n++] = (char)('0' + v % 10);
    while ((v /= 10));
    while (n) *p++ = t[--n];
    return p;
}

static char *js_str(char *p, char *end, const char *s)
{
    while (*s && p < end) *p++ = *s++;
    return *s ? NULL : p;
}

static char *js_num(char *p, double v)
{
    if (v == (double)(long long)v && fabs(v) < 1e15) {
        if (v < 0) {
            *p++ = '-';
            return js_u(p, (unsigned long long)(-(long long)v));
        }
        return js_u(p, (unsigned long long)v);
    }
    return p + snprintf(p, 32, "%.17g", v);
}

static char *js_ts(char *p, double ts)
{
    struct timespec t;
    if (ts > 0) {
        t.tv_sec = (time_t)ts;
        t.tv_nsec = (long)((ts - (double)t.tv_sec) * 1e9);
        if (t.tv_nsec < 0 || t.tv_nsec >= 1000000000L) t.tv_nsec = 0;
    } else {
        clock_gettime(CLOCK_REALTIME, &t);
    }
    p = js_u(p, (unsigned long long)t.tv_sec);
    *p++ = '.';
    long us = t.tv_nsec / 1000;
    for (long d = 100000; d; d /= 10) *p++ = (char)('0' + (us / d) % 10);
    return p;
}

static int js_emit(const char *name, double value, double ts, int level, const char *const *tags,
                   va_list *ap)
{
    if (!js_on || level > js_maxlevel || !name ||
        atomic_load_explicit(&js_dead, memory_order_relaxed))
        return 0;
    int saved = errno;
    char buf[JS_MSG], *end = buf + JS_MSG - 64, *p = buf;
    unsigned long lost = 0;
    memcpy(p, "M1\t", 3);
    p += 3;
    if (!(p = js_str(p, end - 40, name))) goto toolong;
    *p++ = '\t';
    if (!isfinite(value))
        p = js_str(p, end, "nan"); /* the monitor counts it as bad_value */
    else
        p = js_num(p, value);
    *p++ = '\t';
    p = js_ts(p, ts);
    *p++ = '\t';
    p = level >= 0 ? js_u(p, (unsigned long long)level) : js_str(p, end, "-1");
    *p++ = '\t';
    p = js_u(p, (unsigned long long)atomic_load_explicit(&js_pid, memory_order_relaxed));
    *p++ = '\t';
    if (atomic_load_explicit(&js_lost, memory_order_relaxed)) lost = atomic_exchange(&js_lost, 0);
    p = js_u(p, lost);
    for (int i = 0;; i += 2) {
        const char *k, *v;
        if (ap) {
            if (!(k = va_arg(*ap, const char *)) || !(v = va_arg(*ap, const char *))) break;
        } else {
            if (!tags || !(k = tags[i]) || !(v = tags[i + 1])) break;
        }
        *p++ = '\t';
        if (!(p = js_str(p, end, k)) || p >= end) goto toolong_lost;
        *p++ = '=';
        for (const char *c = v; *c; c++) /* the monitor refuses control characters */
            if ((unsigned char)*c < 0x20 || *c == 0x7f) goto toolong_lost;
        if (!(p = js_str(p, end, v))) goto toolong_lost;
    }
    int r = js_send(buf, (size_t)(p - buf), lost);
    errno = saved;
    return r;
toolong_lost:
    atomic_fetch_add(&js_lost, lost);
toolong:
    js_lose(1);
    errno = saved;
    return 0;
}

JS_API int js_metric(const char *name, double value)
{
    pthread_once(&js_once, js_init);
    return js_emit(name, value, 0, JS_LEVEL_DEFAULT, NULL, NULL);
}

JS_API int js_metric_at(const char *name, double value, double ts)
{
    pthread_once(&js_once, js_init);
    return js_emit(name, value, ts, JS_LEVEL_DEFAULT, NULL, NULL);
}

JS_API int js_metric_level(const char *name, double value, int level)
{
    pthread_once(&js_once, js_init);
    return js_emit(name, value, 0, level, NULL, NULL);
}

JS_API int js_metric_tags(const char *name, double value, const char *const *tags)
{
    pthread_once(&js_once, js_init);
    return js_emit(name, value, 0, JS_LEVEL_DEFAULT, tags, NULL);
}

JS_API int js_metric_tagv(const char *name, double value, ...)
{
    pthread_once(&js_once, js_init);
    va_list ap;
    va_start(ap, value);
    int r = js_emit(name, value, 0, JS_LEVEL_DEFAULT, NULL, &ap);
    va_end(ap);
    return r;
}

JS_API int js_metric_full(const char *name, double value, double ts, int level,
                          const char *const *tags)
{
    pthread_once(&js_once, js_init);
    return js_emit(name, value, ts, level, tags, NULL);
}

JS_API int js_payload(const char *json)
{
    pthread_once(&js_once, js_init);
    if (!js_on || !json || atomic_load(&js_dead)) return 0;
    int saved = errno;
    size_t n = strlen(json);
    char *buf = malloc(n + 3);
    int r = 0;
    if (buf) {
        memcpy(buf, "P1\t", 3);
        memcpy(buf + 3, json, n);
        r = js_send(buf, n + 3, 0);
        free(buf);
    }
    errno = saved;
    return r;
}

JS_API int js_enabled(int level)
{
    pthread_once(&js_once, js_init);
    return js_on && level <= js_maxlevel && !atomic_load(&js_dead);
}

JS_API unsigned long js_dropped(void)
{
    return atomic_load(&js_lost_total);
}
