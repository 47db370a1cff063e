/* listener.c — the "metrics" source (see listener.h, docs/metrics.md).
 *
 * One thread accepts connections on the socket and reads messages with
 * epoll; every valid metric is turned into a jobscope.metric event at once
 * and folded into per-name statistics.  Nothing a client sends can stop it:
 * bad messages are counted by kind, a name table that is full only stops
 * the statistics, not the events. */
#include "metrics/listener.h"
#include "util/log.h"
#include "cgroup/cgroup.h"
#include "metrics/payload.h"
#include "metrics/pump.h"
#include "metrics/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SERIES_SLOTS      1024
#define SERIES_MAX        512
#define MAX_CONNS         4096
#define MAX_CONNS_PER_PID 64 /* libjobscope uses one per process: a hog gets no more */
#define RXBUF             (PAYLOAD_CAP + 64)
#define POLL_MS           1   /* while metrics flow, look every millisecond */
#define POLL_IDLE_ROUNDS  100 /* then block again after ~100 ms without any */

typedef struct series {
    char *name;
    uint64_t count;
    double min, max, sum;
    double last, last_ts; /* the value of the latest timestamp: connections are
                             read in no particular order, a writer's are not */
} series;

enum {
    C_MALFORMED,
    C_BAD_NAME,
    C_BAD_VALUE,
    C_BAD_LEVEL,
    C_BAD_TAG,
    C_ABOVE_LEVEL,
    C_CLIENT_LOST,
    C_TOO_LARGE,
    C_SERIES_FULL,
    C_N
};
static const char *const counter_names[C_N] = {
    "malformed",   "bad_name",    "bad_value", "bad_level",       "bad_tag",
    "above_level", "client_lost", "too_large", "series_overflow",
};

typedef struct metrics_src {
    source base;
    monitor_ctx *ctx;
    int level;
    int panorama; /* --payload-shape panorama */
    char dir[80], path[108];
    int lfd, epfd, wake[2];
    pthread_t th;
    int started;
    atomic_int stopping;
    int conns[MAX_CONNS];
    pid_t conn_pid[MAX_CONNS]; /* the peer of conns[i] */
    int nconns;
    char *rx;
    mset ev; /* the listener thread's jobscope.metric */
    uint64_t received, connections;
    uint64_t counters[C_N];
    series table[SERIES_SLOTS];
    int nseries;
    pump *pump;
    /* No event of ours before jobscope.start: the threads wait at this gate
     * until the first sample (which follows the start event) opens it. */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_cond;
    int gate_open;
    atomic_ulong pl_blocks, pl_events, pl_errors;
    char **env;
} metrics_src;

/* ---- events ---- */

static void metrics_gate_wait(metrics_src *m)
{
    pthread_mutex_lock(&m->gate_lock);
    if (!m->gate_open) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 5; /* never hang on it */
        while (!m->gate_open && pthread_cond_timedwait(&m->gate_cond, &m->gate_lock, &t) == 0) {}
    }
    pthread_mutex_unlock(&m->gate_lock);
}

static void metrics_gate_open(metrics_src *m)
{
    pthread_mutex_lock(&m->gate_lock);
    m->gate_open = 1;
    pthread_cond_broadcast(&m->gate_cond);
    pthread_mutex_unlock(&m->gate_lock);
}

static void metrics_vlog(metrics_src *m, const char *msg, const char *arg)
{
    js_log(m->ctx->verbose, "metrics", "%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
}

static series *metrics_series(metrics_src *m, const char *name, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)name[i]) * 16777619u;
    for (uint32_t i = 0; i < SERIES_SLOTS; i++) {
        series *s = &m->table[(h + i) % SERIES_SLOTS];
        if (!s->name) {
            if (m->nseries >= SERIES_MAX || !(s->name = strndup(name, n))) return NULL;
            m->nseries++;
            return s;
        }
        if (!strncmp(s->name, name, n) && !s->name[n]) return s;
    }
    return NULL;
}

/* Is KEY (k, n bytes) one of the metric's own tags? */
static int metric_has_tag(const wire_metric *w, const char *k, size_t n)
{
    for (int i = 0; i < w->ntags; i++)
        if (w->tags[i].klen == n && !memcmp(w->tags[i].k, k, n)) return 1;
    return 0;
}

/* One "tags" object: the run's --tag annotations (but those the metric
 * sets itself), then the metric's own tags. */
static void metrics_emit(metrics_src *m, const wire_metric *w)
{
    mset *e = &m->ev;
    mset_clear(e, EV_METRIC, w->ts > 0 ? w->ts : now_epoch());
    e->frame = MSET_UNTAGGED;
    mset_put_strn(e, "name", w->name, w->name_len);
    mset_put_num(e, "value", w->value);
    mset_open_obj(e, "tags");
    const annotations *a = m->ctx->ann;
    for (int i = 0; a && i < a->ntags; i++)
        if (!metric_has_tag(w, a->tag_keys[i], strlen(a->tag_keys[i])))
            mset_put_str(e, a->tag_keys[i], a->tag_vals[i]);
    for (int i = 0; i < w->ntags; i++)
        mset_put_strn(e, mset_copy(e, w->tags[i].k, w->tags[i].klen), w->tags[i].v,
                      w->tags[i].vlen);
    mset_close(e);
    mset_put_i64(e, "level", w->level);
    mset_put_i64(e, "pid", w->pid);
    m->ctx->emit(m->ctx, e);

    series *s = metrics_series(m, w->name, w->name_len);
    if (!s) {
        m->counters[C_SERIES_FULL]++;
        return;
    }
    if (!s->count || w->value < s->min) s->min = w->value;
    if (!s->count || w->value > s->max) s->max = w->value;
    s->count++;
    s->sum += w->value;
    double ts = e->ts;
    if (s->count == 1 || ts >= s->last_ts) {
        s->last = w->value;
        s->last_ts = ts;
    }
}

/* Keys of payload items that would clash with our annotations are dropped. */
/* Panorama's stored shape (--payload-shape panorama) names the event for
 * what pegasus-monitord made of it and carries its own identity fields. */
static const char *const panorama_keys[] = {"monitoring_event", "xwf_id", "job_id", "sched_id"};

static int metrics_reserved(void *ctx, const char *key, size_t klen)
{
    metrics_src *m = ctx;
    const annotations *a = m->ctx->ann;
    if (m->panorama)
        for (size_t i = 0; i < sizeof panorama_keys / sizeof panorama_keys[0]; i++)
            if (strlen(panorama_keys[i]) == klen && !memcmp(panorama_keys[i], key, klen)) return 1;
    if (!a || !a->fragment || klen + 3 > 128) return 0;
    char pat[132];
    pat[0] = '"';
    memcpy(pat + 1, key, klen);
    pat[klen + 1] = '"';
    pat[klen + 2] = ':';
    const char *f = a->fragment;
    size_t fl = a->fragment_len, pl = klen + 3;
    for (const char *p = f; (p = memmem(p, fl - (size_t)(p - f), pat, pl)); p++)
        if (p == f || p[-1] == ',' || p[-1] == '{') return 1;
    return 0;
}

/* The raw JSON value of annotation KEY (after FROM in the fragment), e.g.
 * "\"abc\"" or "null"; NULL if absent or an empty string. */
static const char *ann_raw(const annotations *a, const char *from, const char *key, size_t *len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *f = a->fragment, *end = f + a->fragment_len, *p = f;
    if (from && !(p = memmem(f, a->fragment_len, from, strlen(from)))) return NULL;
    for (; (p = memmem(p, (size_t)(end - p), pat, strlen(pat))); p++) {
        if (p != f && p[-1] != ',' && p[-1] != '{') continue;
        const char *v = p + strlen(pat), *e = v;
        if (*v == '"') {
            for (e = v + 1; e < end && *e != '"'; e++)
                if (*e == '\\') e++;
            e++;
        } else {
            while (e < end && *e != ',' && *e != '}') e++;
        }
        *len = (size_t)(e - v);
        return (*len == 2 && v[0] == '"') || (*len == 4 && !memcmp(v, "null", 4)) ? NULL : v;
    }
    return NULL;
}

static void metrics_put_raw(jbuf *b, const char *key, const char *v, size_t n)
{
    if (!v) {
        jw_str(b, key, "");
        return;
    }
    jbuf_putc(b, ',');
    jbuf_putc(b, '"');
    jbuf_puts(b, key);
    jbuf_puts(b, "\":");
    jbuf_put(b, v, n);
}

/* Panorama's stored shape: "monitoring_event":NAME,"xwf_id":wf_uuid,
 * "job_id":DAG job id,"sched_id":batch id, in front of the fields (the
 * event is {"event":"stampede.task.monitoring","ts":.., these, fields}). */
static void metrics_panorama_head(metrics_src *m, jbuf *b, const char *name)
{
    const annotations *a = m->ctx->ann;
    size_t n;
    const char *v;
    jbuf_reset(b);
    b->comma = 0;
    jw_str(b, "monitoring_event", name);
    v = ann_raw(a, NULL, "wf_uuid", &n);
    metrics_put_raw(b, "xwf_id", v, n);
    if ((v = ann_raw(a, NULL, "dag_job_id", &n)))
        metrics_put_raw(b, "job_id", v, n);
    else
        jw_str(b, "job_id", a->job_id);
    if (!(v = ann_raw(a, NULL, "condor_job_id", &n))) v = ann_raw(a, "\"batch\":{", "job_id", &n);
    metrics_put_raw(b, "sched_id", v, n);
}

/* A payload block's event: its fields are the job's own JSON, passed on as
 * written (a raw member of the set: the time-series outputs read such an
 * event from its JSON text). */
static void metrics_payload_event(void *ctx, const char *name, double ts, const char *fields,
                                  size_t n)
{
    metrics_src *m = ctx;
    mset e;
    mset_init(&e);
    jbuf head;
    jbuf_init(&head, 256);
    if (m->panorama) {
        mset_clear(&e, "stampede.task.monitoring", ts);
        e.frame = MSET_BARE;
        metrics_panorama_head(m, &head, name);
        mset_put_raw(&e, head.p, head.len);
    } else {
        mset_clear(&e, name, ts);
    }
    mset_put_raw(&e, fields, n);
    m->ctx->emit(m->ctx, &e);
    jbuf_free(&head);
    mset_free(&e);
    atomic_fetch_add(&m->pl_events, 1);
}

static void metrics_payload_error(metrics_src *m, const char *stream, const char *reason,
                                  size_t size, const char *text, size_t tlen)
{
    mset e;
    mset_init(&e);
    mset_clear(&e, EV_PAYLOAD_ERROR, now_epoch());
    mset_put_str(&e, "stream", stream);
    mset_put_str(&e, "reason", reason);
    mset_put_u64(&e, "size", size);
    if (text) mset_put_strn(&e, "excerpt", text, tlen > 160 ? 160 : tlen);
    m->ctx->emit(m->ctx, &e);
    mset_free(&e);
    atomic_fetch_add(&m->pl_errors, 1);
    metrics_vlog(m, reason, stream);
}

static void metrics_block(void *ctx, const char *stream, const char *p, size_t n)
{
    metrics_src *m = ctx;
    const char *err = NULL;
    metrics_gate_wait(m);
    atomic_fetch_add(&m->pl_blocks, 1);
    if (payload_parse(p, n, now_epoch(), metrics_payload_event, metrics_reserved, m, &err) < 0)
        metrics_payload_error(m, stream, err, n, p, n);
}

static void metrics_block_error(void *ctx, const char *stream, const char *reason, size_t size)
{
    metrics_src *m = ctx;
    metrics_gate_wait(m);
    atomic_fetch_add(&m->pl_blocks, 1);
    metrics_payload_error(m, stream, reason, size, NULL, 0);
}

/* ---- the socket ---- */

static void metrics_message(metrics_src *m, const char *p, size_t n)
{
    wire_metric w;
    const char *pl;
    size_t pll;
    int r = wire_parse(p, n, &w, &pl, &pll);
    switch (r) {
    case WIRE_METRIC:
        m->counters[C_CLIENT_LOST] += w.lost;
        if (w.level > m->level) {
            m->counters[C_ABOVE_LEVEL]++;
            return;
        }
        m->received++;
        metrics_emit(m, &w);
        return;
    case WIRE_PAYLOAD:
        metrics_block(m, "socket", pl, pll);
        return;
    case WIRE_BAD_NAME:
        m->counters[C_BAD_NAME]++;
        break;
    case WIRE_BAD_VALUE:
        m->counters[C_BAD_VALUE]++;
        break;
    case WIRE_BAD_LEVEL:
        m->counters[C_BAD_LEVEL]++;
        break;
    case WIRE_BAD_TAG:
        m->counters[C_BAD_TAG]++;
        break;
    default:
        m->counters[C_MALFORMED]++;
        break;
    }
}

static void metrics_close_conn(metrics_src *m, int fd)
{
    epoll_ctl(m->epfd, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
    for (int i = 0; i < m->nconns; i++)
        if (m->conns[i] == fd) {
            m->nconns--;
            m->conns[i] = m->conns[m->nconns];
            m->conn_pid[i] = m->conn_pid[m->nconns];
            break;
        }
}

/* recv() gave 0: on a SOCK_SEQPACKET socket that is an empty message as well
 * as the end.  It is the end only once the peer has hung up and nothing
 * (SIOCINQ: the bytes of every queued message) is left to read. */
static int metrics_at_eof(int fd)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&pf, 1, 0) < 0 || !(pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) return 0;
    int queued = 0;
    return ioctl(fd, SIOCINQ, &queued) < 0 || queued == 0;
}

/* Reads what is queued on one connection; closes it at EOF.  Returns 1 if
 * it stopped with messages left (to let other connections have a turn). */
static int metrics_drain(metrics_src *m, int fd)
{
    for (int k = 0; k < 4096; k++) { /* bounded: let others have a turn */
        ssize_t n = recv(fd, m->rx, RXBUF, MSG_DONTWAIT | MSG_TRUNC);
        if (n > 0) {
            if ((size_t)n > RXBUF)
                m->counters[C_TOO_LARGE]++;
            else
                metrics_message(m, m->rx, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n == 0 && !metrics_at_eof(fd)) {
            m->counters[C_MALFORMED]++; /* an empty message: nothing to read in it */
            continue;
        }
        metrics_close_conn(m, fd); /* EOF or error */
        return 0;
    }
    return 1;
}

static void metrics_accept(metrics_src *m)
{
    for (;;) {
        int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        struct ucred cr = {0};
        socklen_t crl = sizeof cr;
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl);
        int same = 0;
        for (int i = 0; i < m->nconns && cr.pid > 0; i++) same += m->conn_pid[i] == cr.pid;
        if (m->nconns >= MAX_CONNS || same >= MAX_CONNS_PER_PID) {
            close(fd); /* fair shares: one process cannot take them all */
            m->counters[C_CLIENT_LOST]++;
            continue;
        }
        struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = fd};
        if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
            close(fd);
            continue;
        }
        m->conn_pid[m->nconns] = cr.pid;
        m->conns[m->nconns++] = fd;
        m->connections++;
    }
}

static void *metrics_thread(void *arg)
{
    metrics_src *m = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct epoll_event evs[64];
    metrics_gate_wait(m);
    int idle_rounds = POLL_IDLE_ROUNDS;
    while (!atomic_load(&m->stopping)) {
        /* Blocked in epoll_wait, every message a client sends has to wake
         * us: several microseconds on the client's side.  So while metrics
         * flow we poll every POLL_MS instead, and only block after a quiet
         * spell: the clients' sends then just queue the message. */
        int polling = idle_rounds < POLL_IDLE_ROUNDS;
        if (polling) {
            struct timespec d = {0, POLL_MS * 1000000L};
            nanosleep(&d, NULL);
        }
        int n = epoll_wait(m->epfd, evs, 64, polling ? 0 : -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        int data = 0;
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == m->lfd) {
                metrics_accept(m);
            } else if (fd != m->wake[0]) {
                metrics_drain(m, fd);
                data = 1;
            }
        }
        idle_rounds = data ? 0 : idle_rounds + 1;
    }
    /* the job is over: take what was sent before it ended */
    for (int pass = 0; pass < 2; pass++) {
        metrics_accept(m);
        for (int i = m->nconns - 1; i >= 0; i--)
            while (i < m->nconns && metrics_drain(m, m->conns[i])) {}
    }
    return NULL;
}

/* ---- the source ---- */

static int metrics_resolve_level(const metrics_config *o)
{
    if (o && o->telemetry_level >= 0) return o->telemetry_level;
    const char *e = getenv(METRICS_ENV_LEVEL);
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (!*end && v >= 0 && v <= WIRE_MAX_LEVEL) return (int)v;
    }
    return METRICS_DEFAULT_LEVEL;
}

static int metrics_socket_open(metrics_src *m)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 60) tmp = "/tmp";
    snprintf(m->dir, sizeof m->dir, "%s/jobscope.XXXXXX", tmp);
    if (!mkdtemp(m->dir)) { /* mkdtemp makes it 0700 */
        metrics_vlog(m, "cannot create the socket directory", strerror(errno));
        m->dir[0] = 0;
        return -1;
    }
    snprintf(m->path, sizeof m->path, "%s/metrics.sock", m->dir);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, m->path, strlen(m->path) + 1);
    m->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m->lfd < 0 || bind(m->lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(m->lfd, 4096) < 0) {
        metrics_vlog(m, "cannot listen", strerror(errno));
        return -1;
    }
    m->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (m->epfd < 0 || pipe2(m->wake, O_NONBLOCK | O_CLOEXEC) < 0) return -1;
    struct epoll_event e = {.events = EPOLLIN, .data.fd = m->lfd};
    struct epoll_event w = {.events = EPOLLIN, .data.fd = m->wake[0]};
    if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->lfd, &e) < 0 ||
        epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->wake[0], &w) < 0)
        return -1;
    if (!(m->rx = malloc(RXBUF + 1))) return -1;
    return 0;
}

static void metrics_close(source *s);

/* The --scan-output relay leaves the job's cgroup (cgroup/cgroup.h). */
static int metrics_send_home(void *ctx, pid_t pid)
{
    metrics_src *m = ctx;
    return cgroup_send_home(m->ctx, pid);
}

static source *metrics_open(monitor_ctx *ctx, const void *config)
{
    const metrics_config *o = config;
    if (!ctx->run_mode) return NULL; /* attach: no way to reach the job */
    int level = metrics_resolve_level(o);
    int scan = o && o->scan_output;
    if (level <= 0 && !scan) return NULL;
    metrics_src *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->base.ops = &metrics_source_ops;
    m->ctx = ctx;
    m->level = level;
    m->panorama = o && o->payload_panorama;
    m->lfd = m->epfd = m->wake[0] = m->wake[1] = -1;
    pthread_mutex_init(&m->gate_lock, NULL);
    pthread_cond_init(&m->gate_cond, NULL);
    if (level > 0 && metrics_socket_open(m) < 0) {
        metrics_close(&m->base);
        return NULL;
    }
    if (scan) {
        pump_cbs cb = {metrics_block, metrics_block_error, m, metrics_send_home};
        if (!(m->pump = pump_open(o->strip_payloads, 1, 2, &cb))) {
            metrics_vlog(m, "cannot create the output pipes", strerror(errno));
            metrics_close(&m->base);
            return NULL;
        }
    }
    return &m->base;
}

/* The environment for the job: env itself when the listener is not open,
 * else a copy (owned by the source) with our two variables set. */
static char **metrics_child_env(metrics_src *m, char **env)
{
    if (!m || m->lfd < 0) return env;
    if (m->env) return m->env;
    size_t n = 0;
    while (env && env[n]) n++;
    char **e = calloc(n + 3, sizeof *e);
    if (!e) return env;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(env[i], METRICS_ENV_SOCKET "=", sizeof METRICS_ENV_SOCKET) &&
            strncmp(env[i], METRICS_ENV_LEVEL "=", sizeof METRICS_ENV_LEVEL))
            e[k++] = env[i];
    char lv[64];
    snprintf(lv, sizeof lv, METRICS_ENV_LEVEL "=%d", m->level);
    size_t sl = sizeof METRICS_ENV_SOCKET + strlen(m->path) + 1;
    e[k] = malloc(sl);
    e[k + 1] = strdup(lv);
    if (!e[k] || !e[k + 1]) {
        free(e[k]);
        free(e[k + 1]);
        free(e);
        return env;
    }
    snprintf(e[k], sl, METRICS_ENV_SOCKET "=%s", m->path);
    m->env = e;
    return e;
}

/* The spawn hook: the pump's dup2s (--scan-output) and the environment. */
static char **metrics_spawn(source *s, monitor_ctx *ctx, posix_spawn_file_actions_t *fa, char **env)
{
    metrics_src *m = (metrics_src *)s;
    if (m->pump) pump_spawn_actions(m->pump, fa);
    return metrics_child_env(m, env);
}

static void metrics_start(source *s, monitor_ctx *ctx)
{
    metrics_src *m = (metrics_src *)s;
    if (m->pump && pump_start(m->pump) < 0) metrics_vlog(m, "cannot start the output pump", NULL);
    if (m->lfd >= 0) {
        if (pthread_create(&m->th, NULL, metrics_thread, m) == 0)
            m->started = 1;
        else
            metrics_vlog(m, "cannot start the listener thread", NULL);
    }
}

static void metrics_stop(source *s, monitor_ctx *ctx)
{
    metrics_src *m = (metrics_src *)s;
    metrics_gate_open(m);
    if (m->pump) pump_stop(m->pump, 1.0);
    if (m->started) {
        atomic_store(&m->stopping, 1);
        if (write(m->wake[1], "x", 1) < 0) {}
        pthread_join(m->th, NULL);
        m->started = 0;
    }
}

static void metrics_sample(source *s, monitor_ctx *ctx, const tree_sample *ts, mset *ev)
{
    /* metrics are events of their own; the first sample follows the start
     * event, so from now on ours may flow */
    metrics_src *m = (metrics_src *)s;
    if (!m->gate_open) metrics_gate_open(m);
}

/* The metrics add no values to a sample: they always stand. */
static int metrics_again(source *s, monitor_ctx *ctx, const tree_sample *ts)
{
    metrics_sample(s, ctx, ts, NULL);
    return 1;
}

static void metrics_record(source *s, monitor_ctx *ctx, mset *rec)
{
    metrics_src *m = (metrics_src *)s;
    mset_open_obj(rec, "metrics");
    mset_put_i64(rec, "telemetry_level", m->level);
    if (m->lfd >= 0) {
        mset_put_u64(rec, "received", m->received);
        mset_put_u64(rec, "connections", m->connections);
        mset_open_obj(rec, "dropped");
        for (int i = 0; i < C_N; i++) mset_put_u64(rec, counter_names[i], m->counters[i]);
        mset_close(rec);
        mset_open_obj(rec, "series");
        for (int i = 0; i < SERIES_SLOTS; i++) {
            series *se = &m->table[i];
            if (!se->name) continue;
            mset_open_obj(rec, se->name);
            mset_put_u64(rec, "count", se->count);
            mset_put_num(rec, "min", se->min);
            mset_put_num(rec, "max", se->max);
            mset_put_num(rec, "mean", se->sum / (double)se->count);
            mset_put_num(rec, "last", se->last);
            mset_close(rec);
        }
        mset_close(rec);
    }
    mset_open_obj(rec, "payload");
    mset_put_u64(rec, "blocks", atomic_load(&m->pl_blocks));
    mset_put_u64(rec, "events", atomic_load(&m->pl_events));
    mset_put_u64(rec, "errors", atomic_load(&m->pl_errors));
    if (m->pump) {
        mset_put_u64(rec, "stdout_bytes", pump_bytes(m->pump, 0));
        mset_put_u64(rec, "stderr_bytes", pump_bytes(m->pump, 1));
    }
    mset_close(rec);
    mset_close(rec);
}

static void metrics_close(source *s)
{
    metrics_src *m = (metrics_src *)s;
    if (!m) return;
    metrics_stop(s, m->ctx);
    pump_free(m->pump);
    for (int i = 0; i < m->nconns; i++) close(m->conns[i]);
    if (m->lfd >= 0) close(m->lfd);
    if (m->epfd >= 0) close(m->epfd);
    if (m->wake[0] >= 0) close(m->wake[0]);
    if (m->wake[1] >= 0) close(m->wake[1]);
    if (m->path[0]) unlink(m->path);
    if (m->dir[0]) rmdir(m->dir);
    for (int i = 0; i < SERIES_SLOTS; i++) free(m->table[i].name);
    if (m->env) {
        size_t n = 0;
        while (m->env[n]) n++;
        free(m->env[n - 1]);
        free(m->env[n - 2]);
        free(m->env);
    }
    free(m->rx);
    mset_free(&m->ev);
    pthread_mutex_destroy(&m->gate_lock);
    pthread_cond_destroy(&m->gate_cond);
    free(m);
}

const source_ops metrics_source_ops = {
    .name = "metrics",
    .open = metrics_open,
    .spawn = metrics_spawn,
    .start = metrics_start,
    .sample = metrics_sample,
    .again = metrics_again,
    .stop = metrics_stop,
    .record = metrics_record,
    .close = metrics_close,
};
