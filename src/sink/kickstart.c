/* kickstart.c — the kickstart://HOST:PORT destination: what a real
 * pegasus-kickstart running with -m puts in its job's KICKSTART_MON_URL.
 * `jobscope run` under it reports as pegasus-monitor does (kswire.h): each
 * kickstart.inv.online sample becomes one MERGED ProcStats record of the
 * whole tree under jobscope's pid, which kickstart adds to its own online
 * events; like pegasus-monitor, jobscope then leaves kickstart's process
 * group, whose members kickstart reads itself.  The wire holds numbers only: other events have no
 * place in it and are not sent (nor kept: kickstart writes the record of the job).
 *
 * Never blocking the job: write() keeps the latest sample (its counters
 * are cumulative, so a newer one replaces an older one without loss) and
 * a thread of its own connects and sends.  When the endpoint cannot be
 * reached at start-up, events go to the default file (JOB_ID.jsonl) with
 * one line saying so: nothing waits in a spool for a kickstart that is
 * gone. */
#include "sink.h"
#include "../util/thread.h"
#include "kswire.h"
#include "../model/metric.h"
#include "../util/clock.h"
#include "../util/outpath.h"
#include "../util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KS_CONNECT_MS 2000

typedef struct ks_sink {
    sink base;
    struct sockaddr_in addr;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kswire_stats pending;
    int have_pending, sending, stop;
    uint32_t host; /* our IPv4 address, as kickstart identifies a reporter */
    uint32_t rank; /* MPI rank */
} ks_sink;

static int ks_match(const char *url, const sink_options *o)
{
    (void)o;
    return !strncmp(url, "kickstart://", 12);
}

/* kickstart://HOST:PORT, IPv4 as kickstart resolves it. */
static int parse_endpoint(const char *url, struct sockaddr_in *sa, char *err, size_t errlen)
{
    char host[128], port[16];
    if (sscanf(url, "kickstart://%127[^:]:%15[0-9]", host, port) != 2) {
        snprintf(err, errlen, "not kickstart://HOST:PORT");
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "%s", gai_strerror(rc));
        return -1;
    }
    memcpy(sa, res->ai_addr, sizeof *sa);
    freeaddrinfo(res);
    return 0;
}

/* A connected socket within KS_CONNECT_MS, or -1 with errno. */
static int connect_to(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        int e = 0;
        socklen_t el = sizeof e;
        if (poll(&p, 1, KS_CONNECT_MS) != 1) e = ETIMEDOUT;
        if (!e) getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
        if (e) {
            close(fd);
            errno = e;
            return -1;
        }
    } else if (errno && errno != EINPROGRESS && errno != EISCONN) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int send_report(const ks_sink *k, const kswire_stats *s)
{
    int fd = connect_to(&k->addr);
    if (fd < 0) return -1;
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ssize_t n = send(fd, s, sizeof *s, MSG_NOSIGNAL);
    close(fd);
    return n == (ssize_t)sizeof *s ? 0 : -1;
}

static void *ks_thread(void *arg)
{
    ks_sink *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->have_pending && !k->stop) pthread_cond_wait(&k->cv, &k->mu);
        if (!k->have_pending) break;
        kswire_stats s = k->pending;
        k->have_pending = 0;
        k->sending = 1;
        pthread_mutex_unlock(&k->mu);
        if (send_report(k, &s) != 0) k->base.errors++;
        pthread_mutex_lock(&k->mu);
        k->sending = 0;
        pthread_cond_broadcast(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* Our address as kickstart's gethostaddr() finds it. */
static uint32_t host_address(void)
{
    char name[256];
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    if (gethostname(name, sizeof name) != 0 || getaddrinfo(name, NULL, &hints, &res) != 0) return 0;
    uint32_t a = ntohl(((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr);
    freeaddrinfo(res);
    return a;
}

/* One sample as a MERGED record of the whole tree. */
static void fill_stats(const ks_sink *k, const mset *m, double ts, kswire_stats *s)
{
    memset(s, 0, sizeof *s);
    s->type = KSWIRE_MERGED;
    s->ts = ts;
    s->host = k->host;
    s->pid = (int32_t)getpid();
    s->ppid = (int32_t)getppid();
    s->rank = k->rank;
    if (!m) { /* no sample yet: who we are, zero figures */
        ssize_t n = readlink("/proc/self/exe", s->exe, sizeof s->exe - 1);
        s->exe[n > 0 ? n : 0] = 0;
        return;
    }
    s->rchar = mset_raw(m, M_RCHAR);
    s->wchar = mset_raw(m, M_WCHAR);
    s->syscr = mset_raw(m, M_SYSCR);
    s->syscw = mset_raw(m, M_SYSCW);
    s->read_bytes = mset_raw(m, M_READ_BYTES);
    s->write_bytes = mset_raw(m, M_WRITE_BYTES);
    s->cancelled_write_bytes = mset_raw(m, M_CANCELLED_WRITE_BYTES);
    s->utime = mset_value(m, M_UTIME);
    s->stime = mset_value(m, M_STIME);
    s->iowait = mset_value(m, M_IOWAIT);
    s->vm = s->vmpeak = (uint64_t)mset_value(m, M_VM);
    s->rss = (uint64_t)mset_value(m, M_RSS);
    s->rsspeak = (uint64_t)mset_value(m, M_MAX_HWM);
    s->procs = (uint32_t)mset_value(m, M_PROCS);
    s->threads = (uint32_t)mset_value(m, M_THREADS);
    const char *exe = mset_label(m, "exe");
    snprintf(s->exe, sizeof s->exe, "%s", exe ? exe : "");
}

/* The endpoint cannot be reached: the default file instead, said once. */
static sink *fall_back(const char *url, const char *why, const sink_options *o, char *err,
                       size_t errlen)
{
    char *path = outpath_default(o->ann && o->ann->job_id ? o->ann->job_id : "jobscope");
    if (!path) return NULL;
    js_log(!o->quiet, url, "%s; events go to %s instead", why, path);
    sink *s = sink_open(path, o, err, errlen);
    free(path);
    return s;
}

static sink *ks_open(const char *url, const sink_options *o, char *err, size_t errlen)
{
    struct sockaddr_in sa;
    char why[160];
    if (parse_endpoint(url, &sa, why, sizeof why) != 0) return fall_back(url, why, o, err, errlen);
    ks_sink *k = calloc(1, sizeof *k);
    if (!k || !(k->base.label = strdup(url))) {
        free(k);
        snprintf(err, errlen, "%s: out of memory", url);
        return NULL;
    }
    extern const sink_ops sink_kickstart_ops;
    k->base.ops = &sink_kickstart_ops;
    k->addr = sa;
    k->host = host_address();
    k->rank = o->ann && o->ann->rank > 0 ? (uint32_t)o->ann->rank : 0;
    /* reachable?  An empty report says so (kickstart takes only whole ones) */
    kswire_stats hello;
    fill_stats(k, NULL, now_epoch(), &hello);
    if (send_report(k, &hello) != 0) {
        int e = errno;
        free(k->base.label);
        free(k);
        return fall_back(url, e ? strerror(e) : "cannot report", o, err, errlen);
    }
    /* As pegasus-monitor: a process group of our own, so that kickstart's
     * reading of its group does not count the job's processes a second time
     * beside our report of them (the job, spawned later, joins ours). */
    setpgid(0, 0);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    int rc = util_thread_create(&k->th, ks_thread, k);
    if (rc != 0) {
        free(k->base.label);
        free(k);
        snprintf(err, errlen, "%s: cannot start a thread", url);
        return NULL;
    }
    return &k->base;
}

static int ks_write(sink *s, const js_event *ev)
{
    ks_sink *k = (ks_sink *)s;
    if (!ev->metrics || strcmp(ev->name, EV_SAMPLE) != 0) return 0; /* no place on the wire */
    kswire_stats st;
    fill_stats(k, ev->metrics, ev->ts, &st);
    pthread_mutex_lock(&k->mu);
    k->pending = st;
    k->have_pending = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    return 0;
}

static int ks_flush(sink *s, double timeout_s)
{
    ks_sink *k = (ks_sink *)s;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)timeout_s;
    until.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&k->mu);
    while ((k->have_pending || k->sending) &&
           pthread_cond_timedwait(&k->cv, &k->mu, &until) != ETIMEDOUT) {}
    int left = k->have_pending || k->sending;
    pthread_mutex_unlock(&k->mu);
    return left ? -1 : 0;
}

static void ks_close(sink *s)
{
    ks_sink *k = (ks_sink *)s;
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->th, NULL);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k->base.label);
    free(k);
}

const sink_ops sink_kickstart_ops = {
    .name = "kickstart",
    .match = ks_match,
    .open = ks_open,
    .write = ks_write,
    .flush = ks_flush,
    .close = ks_close,
};
