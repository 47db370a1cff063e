/* publisher.c — see publisher.h: queue, spool and delivery thread shared by
 * every network destination. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "publisher.h"
#include "../../util/thread.h"
#include "../formats/sbuf.h"
#include "../../util/log.h"

#define MEM_MAX_ITEMS     16384
#define MEM_MAX_BYTES     (32u << 20)
#define SPOOL_MAX_DEFAULT (1LL << 30)
#define SEND_TIMEOUT      5.0
#define BACKOFF_MIN       0.1
#define BACKOFF_MAX       5.0

typedef struct qitem {
    uint64_t seq;
    size_t len;
    char *name;
    char *enc; /* the backend's encoding (NULL: none), enc_len bytes */
    size_t enc_len;
    int enc_n;
    size_t mem;  /* len + enc_len: what it counts in mem_bytes */
    char json[]; /* json, NUL, name, NUL[, enc, NUL] */
} qitem;

struct publisher {
    const pub_backend *be; /* = &bec */
    pub_backend bec;
    void *ctx;
    char *label;
    int quiet;        /* -q: publisher_warn prints nothing */
    int own_abort;    /* flush_abort when the opener gave none */
    int *flush_abort; /* a signal ended the flush: no more waiting */
    char *spool_dir;
    long long spool_max;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t work, wake, idle;

    qitem **ring; /* memory queue */
    int cap, head, count;
    size_t mem_bytes;
    int inflight;         /* leading ring items being sent */
    unsigned gen;         /* bumped when the ring moves to the spool */
    off_t *inflight_ends; /* where those items landed in the spool */

    spool sp;
    int have_spool, spool_broken;
    int connected, down, stop, waiting;
    int reached, unreached; /* a connect succeeded / failed in this run */
    double deadline;        /* flush in progress: retry until then */
    double close_by;        /* the end-of-job flush's deadline (mono): bounds the close too */
    unsigned long long delivered, spooled, dropped;
    int warned_full;
    int abandoned;           /* pub_free gave up on the thread: it frees all */
    unsigned long *lost_out; /* the sink's count of lost events (NULL once closed) */
    int thread_done;         /* the thread has left its loop */
    char lasterr[512];
    /* publisher_set_encoder: run by write() on the producer's thread (the
     * emitter lock serialises writes), into enc_buf */
    int (*encode)(void *ctx, const js_event *ev, sbuf *out);
    sbuf enc_buf;
};

typedef struct pub_sink {
    sink base;
    publisher *pub;
} pub_sink;

/* The same failure again?  Digits are ignored: libcurl's messages carry the
 * milliseconds of each attempt ("after 3 ms"), which made every retry a new
 * warning. */
static int same_error(const char *a, const char *b)
{
    for (;;) {
        while (*a >= '0' && *a <= '9') a++;
        while (*b >= '0' && *b <= '9') b++;
        if (*a != *b) return 0;
        if (!*a) return 1;
        a++, b++;
    }
}

/* quiet (-q): warnings about destinations and spools are silenced (errors
 * that end the run, such as --require-output, are printed elsewhere). */
void publisher_warn(int quiet, const char *label, const char *fmt, ...)
{
    if (quiet) return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    js_log(1, label, "%s", msg);
}

char *publisher_default_spool_dir(void)
{
    char dir[4096];
    const char *e = getenv("JOBSCOPE_SPOOL_DIR");
    if (e && *e) return strdup(e);
    /* the user's own state directory first: nobody else can squat it */
    const char *st = getenv("XDG_STATE_HOME");
    if (st && st[0] == '/' && strlen(st) < sizeof dir - 32) {
        snprintf(dir, sizeof dir, "%s/jobscope/spool", st);
        return strdup(dir);
    }
    snprintf(dir, sizeof dir, "/var/tmp/jobscope-spool-%u", (unsigned)getuid());
    return strdup(dir);
}

/* A spool directory must be the user's own and closed to others: one that
 * another user made (or can write to) could make every spool fail, or hold
 * planted files that `jobscope flush` would deliver with our credentials.
 * The shared default under /var/tmp must be exactly private (no group or
 * other access at all).  0, or -1 with the reason in why. */
static int spool_dir_safe(const char *dir, int strict, char *why, size_t n)
{
    struct stat st;
    if (lstat(dir, &st) < 0) {
        snprintf(why, n, "cannot use spool directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, n, "spool directory %s is not a directory (a link?): refusing it", dir);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, n, "spool directory %s is not your own (owner uid %u): refusing it", dir,
                 (unsigned)st.st_uid);
        return -1;
    }
    if (st.st_mode & (strict ? 077 : 022)) {
        snprintf(why, n, "spool directory %s is %s by others (mode %04o): refusing it (chmod 700)",
                 dir, st.st_mode & 022 ? "writable" : "readable", (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

static int spool_has(const publisher *p)
{
    return p->have_spool && p->sp.read_off < p->sp.end_off;
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *c = tmp + 1; *c; c++)
        if (*c == '/') {
            *c = 0;
            mkdir(tmp, 0700);
            *c = '/';
        }
    return mkdir(tmp, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Creates the spool file on first need.  Called with mu held. */
static int ensure_spool(publisher *p)
{
    static unsigned counter;
    if (p->have_spool) return 0;
    if (p->spool_broken) return -1;
    char err[512], host[128] = "host", path[4096];
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++)
        if (*c == '/') *c = '_';
    if (mkdir_p(p->spool_dir) < 0) {
        publisher_warn(p->quiet, p->label,
                       "cannot create spool directory %s: %s; undeliverable events are lost",
                       p->spool_dir, strerror(errno));
        p->spool_broken = 1;
        return -1;
    }
    char why[4200];
    if (spool_dir_safe(p->spool_dir, !strncmp(p->spool_dir, "/var/tmp/jobscope-spool-", 24), why,
                       sizeof why) < 0) {
        /* a security matter and a loss: said even with -q */
        js_log(1, p->label, "%s; undeliverable events are lost", why);
        p->spool_broken = 1;
        return -1;
    }
    for (int tries = 0; tries < 100; tries++) {
        snprintf(path, sizeof path, "%s/jobscope-%s-%d-%u.spool", p->spool_dir, host, (int)getpid(),
                 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
        if (spool_create(&p->sp, path, p->label, err, sizeof err) == 0) {
            p->have_spool = 1;
            return 0;
        }
        if (errno != EEXIST) break;
    }
    publisher_warn(p->quiet, p->label, "%s; undeliverable events are lost", err);
    p->spool_broken = 1;
    return -1;
}

/* An event accepted by write() is lost (the spool is full or unwritable):
 * counted here and in the sink, whose count goes into the end-of-job
 * record.  mu held. */
static void pub_lose(publisher *p)
{
    p->dropped++;
    if (p->lost_out) __atomic_add_fetch(p->lost_out, 1, __ATOMIC_RELAXED);
}

/* Appends one event to the spool, or counts it dropped.  mu held. */
static void spool_put(publisher *p, uint64_t seq, const char *name, const char *json, size_t len)
{
    if (ensure_spool(p) < 0) {
        pub_lose(p);
        return;
    }
    if (spool_pending_bytes(&p->sp) + (long long)len + 64 > p->spool_max) {
        if (!p->warned_full)
            publisher_warn(p->quiet, p->label,
                           "spool %s is full (--spool-max %lld bytes): dropping events", p->sp.path,
                           p->spool_max);
        p->warned_full = 1;
        pub_lose(p);
        return;
    }
    if (spool_append(&p->sp, seq, name, json, len) < 0) {
        if (!p->warned_full)
            publisher_warn(p->quiet, p->label, "cannot write spool %s: %s: dropping events",
                           p->sp.path, strerror(errno));
        p->warned_full = 1;
        pub_lose(p);
        return;
    }
    p->spooled++;
}

/* Moves the whole memory queue to the spool, keeping order.  Items being
 * sent stay owned by the thread; where they landed is noted.  mu held.
 * Returns -1 (and moves nothing) when there is no spool to move to. */
static int spill_memory(publisher *p)
{
    if (p->count == 0) return 0;
    if (ensure_spool(p) < 0) return -1;
    for (int i = 0; i < p->count; i++) {
        qitem *it = p->ring[(p->head + i) % p->cap];
        spool_put(p, it->seq, it->name, it->json, it->len);
        if (i < p->inflight)
            p->inflight_ends[i] = p->sp.end_off;
        else
            free(it);
    }
    p->head = p->count = 0;
    p->mem_bytes = 0;
    p->inflight = 0; /* the batch's landing places are noted: a later spill moves only new items */
    p->gen++;
    return 0;
}

static void pub_release(publisher *p);

static void *pub_thread(void *arg)
{
    publisher *p = arg;
    const pub_backend *be = p->be;
    int max = be->max_batch > 0 ? be->max_batch : 1;
    pub_item *items = calloc((size_t)max, sizeof *items);
    off_t *ends = calloc((size_t)max, sizeof *ends);
    qitem **batch = calloc((size_t)max, sizeof *batch);
    char *buf = NULL, err[512];
    size_t bufcap = 0;
    double backoff = BACKOFF_MIN;

    pthread_mutex_lock(&p->mu);
    while (items && ends && batch) {
        while (!p->stop && p->count == 0 && !spool_has(p)) {
            pthread_cond_broadcast(&p->idle);
            p->waiting = 1;
            pthread_cond_wait(&p->work, &p->mu);
            p->waiting = 0;
        }
        if (p->stop) break;
        int from_disk = spool_has(p), n = 0;
        unsigned gen = p->gen;
        spool snap = p->sp;
        if (!from_disk) {
            n = p->count < max ? p->count : max;
            for (int i = 0; i < n; i++) {
                qitem *it = batch[i] = p->ring[(p->head + i) % p->cap];
                items[i] = (pub_item){it->seq, it->name,    it->json, it->len,
                                      it->enc, it->enc_len, it->enc_n};
            }
            p->inflight = n;
        }
        double timeout = SEND_TIMEOUT;
        if (p->deadline > 0) {
            double left = p->deadline - now_mono();
            timeout = left < 0.5 ? 0.5 : left < timeout ? left : timeout;
        }
        pthread_mutex_unlock(&p->mu);

        int done = 0, failed = 0;
        err[0] = 0;
        if (!p->connected && be->connect(p->ctx, timeout < 3 ? timeout : 3, err, sizeof err) == 0)
            p->connected = 1;
        __atomic_store_n(p->connected ? &p->reached : &p->unreached, 1, __ATOMIC_RELAXED);
        if (p->connected) {
            if (from_disk) {
                n = spool_read(&snap, max, items, ends, &buf, &bufcap);
                if (n < 0)
                    snprintf(err, sizeof err, "cannot read spool %s: %s", snap.path,
                             strerror(errno));
            }
            if (n > 0) done = be->send(p->ctx, items, n, timeout, err, sizeof err);
            if (done < 0) done = 0;
            failed = n < 0 || done < n;
        } else {
            failed = 1;
        }

        pthread_mutex_lock(&p->mu);
        if (from_disk && p->have_spool && p->sp.fd == snap.fd) {
            /* malformed lines the read passed over: counted, and those at
             * the front consumed (else they would be read again forever) */
            p->sp.pending -= snap.skipped - p->sp.skipped;
            p->sp.skipped = snap.skipped;
            p->sp.skip_hwm = snap.skip_hwm;
            if (done > 0)
                spool_consume(&p->sp, ends[done - 1], done);
            else if (snap.read_off > p->sp.read_off)
                spool_consume(&p->sp, snap.read_off, 0);
        } else if (from_disk) {
            /* the spool was replaced meanwhile: nothing of ours to consume */
        } else if (gen == p->gen) {
            for (int i = 0; i < done; i++) {
                p->mem_bytes -= batch[i]->mem;
                free(batch[i]);
            }
            p->head = (p->head + done) % p->cap;
            p->count -= done;
        } else { /* the ring went to the spool meanwhile, our batch at its front */
            if (done > 0) spool_consume(&p->sp, p->inflight_ends[done - 1], done);
            for (int i = 0; i < n; i++) free(batch[i]);
        }
        p->inflight = 0;
        p->delivered += (unsigned long long)done;
        pthread_cond_broadcast(&p->idle);
        if (!failed) {
            backoff = BACKOFF_MIN;
            if (p->down) publisher_warn(p->quiet, p->label, "delivering again");
            p->down = 0;
            continue;
        }
        if (p->connected && be->disconnect) be->disconnect(p->ctx);
        p->connected = 0;
        if ((!p->down || !same_error(err, p->lasterr)) && strcmp(be->kind, "unusable"))
            publisher_warn(p->quiet, p->label, "%s; events wait in the spool until it answers",
                           err[0] ? err : "delivery failed");
        snprintf(p->lasterr, sizeof p->lasterr, "%s", err);
        p->down = 1;
        spill_memory(p);
        struct timespec ts;
        mono_deadline(&ts, backoff);
        if (!p->stop) pthread_cond_timedwait(&p->wake, &p->mu, &ts);
        backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
    }
    pthread_cond_broadcast(&p->idle);
    free(items);
    free(ends);
    free(batch);
    free(buf);
    int mine = p->abandoned; /* pub_free left it all to us */
    p->thread_done = 1;
    pthread_mutex_unlock(&p->mu);
    if (mine) pub_release(p);
    return NULL;
}

static int pub_enqueue(publisher *p, uint64_t seq, const char *name, const char *json, size_t len,
                       const char *enc, size_t enc_len, int enc_n)
{
    size_t nlen = strlen(name), elen = enc ? enc_len + 1 : 0;
    qitem *it = malloc(sizeof *it + len + nlen + 2 + elen);
    if (!it) return -1;
    it->seq = seq;
    it->len = len;
    memcpy(it->json, json, len);
    it->json[len] = 0;
    it->name = it->json + len + 1;
    memcpy(it->name, name, nlen + 1);
    it->enc = NULL;
    it->enc_len = 0;
    it->enc_n = 0;
    if (enc) {
        it->enc = it->name + nlen + 1;
        memcpy(it->enc, enc, enc_len);
        it->enc[enc_len] = 0;
        it->enc_len = enc_len;
        it->enc_n = enc_n;
    }
    size_t mem = it->mem = len + it->enc_len;

    pthread_mutex_lock(&p->mu);
    int rc = 0;
    if (!p->down && p->count < p->cap && p->mem_bytes + mem <= MEM_MAX_BYTES) {
        p->ring[(p->head + p->count) % p->cap] = it;
        p->count++;
        p->mem_bytes += mem;
        it = NULL;
    } else if (spill_memory(p) == 0) {
        spool_put(p, seq, name, json, len);
    } else if (p->count < p->cap) { /* no spool at all: keep it in memory while there is room */
        p->ring[(p->head + p->count) % p->cap] = it;
        p->count++;
        p->mem_bytes += mem;
        it = NULL;
    } else {
        p->dropped++;
        rc = -1;
    }
    if (p->waiting) pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    free(it);
    return rc;
}

static publisher *pub_new(const pub_backend *be, void *ctx, const char *url, const sink_options *o)
{
    publisher *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->bec = *be;
    p->be = &p->bec;
    p->ctx = ctx;
    p->label = sink_redact_url(url);
    p->quiet = o ? o->quiet : 0;
    p->flush_abort = o && o->flush_abort ? o->flush_abort : &p->own_abort;
    p->spool_dir =
        o && o->spool_dir && *o->spool_dir ? strdup(o->spool_dir) : publisher_default_spool_dir();
    p->spool_max = o && o->spool_max > 0 ? o->spool_max : SPOOL_MAX_DEFAULT;
    p->cap = MEM_MAX_ITEMS;
    p->ring = calloc((size_t)p->cap, sizeof *p->ring);
    p->inflight_ends =
        calloc((size_t)(be->max_batch > 0 ? be->max_batch : 1), sizeof *p->inflight_ends);
    p->sp.fd = -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->work, &ca);
    pthread_cond_init(&p->wake, &ca);
    pthread_cond_init(&p->idle, &ca);
    pthread_condattr_destroy(&ca);
    if (!p->label || !p->spool_dir || !p->ring || !p->inflight_ends) {
        free(p->label);
        free(p->spool_dir);
        free(p->ring);
        free(p->inflight_ends);
        free(p);
        return NULL;
    }
    return p;
}

/* Waits at most timeout_s.  The emitter flushes its sinks one after the
 * other while the publishers deliver concurrently all along, so its caller
 * (emitter_close, `jobscope flush`) gives each the time left of one
 * deadline: --flush-timeout bounds the whole exit, not each destination's
 * share of it. */

/* The monitor blocks the signals that end jobscope and reads them through a
 * signalfd: one that arrived during the end-of-job flush is pending.  The
 * latch (*p->flush_abort) is shared by the publishers of one monitor
 * (sink_options.flush_abort): once set, none of them waits any more. */
static int flush_interrupted(const publisher *p)
{
    sigset_t pend;
    if (!__atomic_load_n(p->flush_abort, __ATOMIC_RELAXED) && sigpending(&pend) == 0 &&
        (sigismember(&pend, SIGINT) == 1 || sigismember(&pend, SIGTERM) == 1 ||
         sigismember(&pend, SIGHUP) == 1 || sigismember(&pend, SIGQUIT) == 1))
        __atomic_store_n(p->flush_abort, 1, __ATOMIC_RELAXED);
    return __atomic_load_n(p->flush_abort, __ATOMIC_RELAXED);
}

static int pub_flush(publisher *p, double timeout_s)
{
    if (!(timeout_s >= 0)) timeout_s = 0; /* NaN: no waiting, never a spin */
    double mine = now_mono() + timeout_s;
    pthread_mutex_lock(&p->mu);
    p->deadline = mine;
    p->close_by = mine;
    /* Only wait: the delivery thread keeps its backoff (0.1 -> 5 s) here too;
     * waking it on every turn of this loop made it hammer a refusing server. */
    while ((p->count > 0 || spool_has(p)) && p->started && !flush_interrupted(p)) {
        double left = p->deadline - now_mono();
        if (left <= 0) break;
        /* never reachable in this run (refused, unknown scheme, bad TLS...):
         * the events go to the spool now instead of holding the job's end */
        if (__atomic_load_n(&p->unreached, __ATOMIC_RELAXED) &&
            !__atomic_load_n(&p->reached, __ATOMIC_RELAXED))
            break;
        struct timespec ts;
        mono_deadline(&ts, left < 0.1 ? left : 0.1);
        pthread_cond_timedwait(&p->idle, &p->mu, &ts);
    }
    int rc = (p->count > 0 || spool_has(p)) ? -1 : 0;
    p->deadline = 0;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* Everything after the thread: spill, close the spool (kept if anything is
 * pending), destroy the backend, free.  Whoever owns the publisher last
 * calls it: pub_free, or an abandoned thread when it finally returns. */
static void pub_release(publisher *p)
{
    spill_memory(p);
    for (int i = 0; i < p->count; i++) free(p->ring[(p->head + i) % p->cap]);
    if (p->have_spool && p->sp.skipped)
        publisher_warn(p->quiet, p->label, "%ld malformed line%s in spool %s passed over",
                       p->sp.skipped, p->sp.skipped == 1 ? "" : "s", p->sp.path ? p->sp.path : "");
    if (p->have_spool) {
        long left = p->sp.pending;
        char *path = strdup(p->sp.path ? p->sp.path : "");
        if (!spool_close(&p->sp) && !p->abandoned)
            publisher_warn(p->quiet, p->label,
                           "%ld event%s not delivered, kept in %s (send later: jobscope flush %s)",
                           left, left == 1 ? "" : "s", path, path);
        free(path);
    }
    if (p->dropped)
        publisher_warn(p->quiet, p->label, "%llu event%s lost (spool full or unwritable)",
                       p->dropped, p->dropped == 1 ? "" : "s");
    if (!p->connected && p->be->disconnect) p->be->disconnect(p->ctx);
    if (p->be->destroy) p->be->destroy(p->ctx); /* closes a live connection politely */
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    free(p->ring);
    free(p->inflight_ends);
    free(p->label);
    free(p->spool_dir);
    sbuf_free(&p->enc_buf);
    free(p);
}

static void pub_free(publisher *p)
{
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->work);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        /* A send in progress ends within its timeout; a library call that
         * hangs anyway (a broker that accepts TCP and never answers) must
         * not hang the job's exit: then the thread is left behind with
         * everything it uses -- the publisher, its spool (descriptor and
         * path), the backend -- and frees them itself if it ever returns.
         * Its events are in the spool file, which stays open and is kept. */
        /* How long to wait for it: after a flush, no longer than its
         * deadline (--flush-timeout bounds the whole exit, a send or
         * connect in progress included); after a signal, 0.3 s. */
        double wait = SEND_TIMEOUT + 3;
        if (flush_interrupted(p))
            wait = 0.3;
        else if (p->close_by > 0)
            wait = p->close_by - now_mono() > 0.05 ? p->close_by - now_mono() : 0.05;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = (long long)ts.tv_nsec + (long long)(wait * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        if (pthread_timedjoin_np(p->th, NULL, &ts) != 0) {
            pthread_mutex_lock(&p->mu);
            if (!p->thread_done) {
                publisher_warn(p->quiet, p->label, "delivery thread does not answer; leaving it");
                spill_memory(p);
                if (p->have_spool) {
                    fsync(p->sp.fd);
                    publisher_warn(
                        p->quiet, p->label,
                        "%ld events not delivered, kept in %s (send later: jobscope flush %s)",
                        p->sp.pending, p->sp.path, p->sp.path);
                }
                p->abandoned = 1;
                pthread_mutex_unlock(&p->mu);
                pthread_detach(p->th);
                return;
            }
            pthread_mutex_unlock(&p->mu); /* it just finished after all */
            pthread_join(p->th, NULL);
        }
    }
    pub_release(p);
}

/* ---- the sink face ---------------------------------------------------- */

sink *publisher_sink_create(const sink_ops *ops, const char *url, const pub_backend *be, void *ctx,
                            const sink_options *o, char *err, size_t errlen)
{
    pub_sink *s = calloc(1, sizeof *s);
    publisher *p = s ? pub_new(be, ctx, url, o) : NULL;
    if (!p) {
        free(s);
        if (be->destroy) be->destroy(ctx);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->lost_out = &s->base.lost;
    /* Only --require-output waits for the destination at start-up; else the
     * thread connects at once and reports a failure itself, and the job
     * starts without waiting on the network. */
    char why[512] = "";
    if (!(o && o->require_output) && strcmp(be->kind, "unusable")) {
        /* connect in the thread */
    } else if (be->connect(ctx, 3.0, why, sizeof why) == 0) {
        p->connected = 1;
    } else if (o && o->require_output) {
        snprintf(err, errlen, "%s: %s", p->label, why);
        pub_free(p);
        free(s);
        return NULL;
    } else if (!strcmp(be->kind, "unusable")) {
        publisher_warn(p->quiet, p->label,
                       "%s: events go to the spool; deliver them later with "
                       "'jobscope flush -o URL SPOOL'",
                       why);
        p->down = 1;
        p->unreached = 1;
    } else {
        publisher_warn(p->quiet, p->label, "%s; events wait in the spool until it answers", why);
        snprintf(p->lasterr, sizeof p->lasterr, "%s", why);
        p->down = 1;
    }
    /* The thread takes no signals: the monitor reads its own through a
     * signalfd, which only works while every thread blocks them. */
    int prc = util_thread_create(&p->th, pub_thread, p);
    if (prc != 0) {
        snprintf(err, errlen, "%s: cannot start publisher thread", p->label);
        pub_free(p);
        free(s);
        return NULL;
    }
    p->started = 1;
    s->base.ops = ops;
    s->base.label = strdup(p->label);
    s->pub = p;
    return &s->base;
}

static int unusable_connect(void *ctx, double timeout, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", (const char *)ctx);
    return -1;
}
static int unusable_send(void *ctx, const pub_item *it, int n, double t, char *err, size_t errlen)
{
    return unusable_connect(ctx, t, err, errlen), 0;
}
static const pub_backend unusable_backend = {"unusable",    1,    unusable_connect,
                                             unusable_send, NULL, free};
static int unusable_match(const char *url, const sink_options *o)
{
    return 0;
}
static const sink_ops sink_unusable_ops = {
    .name = "unusable",
    .match = unusable_match,
    .open = NULL,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

sink *publisher_sink_unusable(const sink_ops *ops, const char *url, const char *why,
                              const sink_options *o, char *err, size_t errlen)
{
    char *label = sink_redact_url(url);
    if (o && o->require_output) {
        snprintf(err, errlen, "%s: %s", label ? label : "?", why);
        free(label);
        return NULL;
    }
    char *msg = malloc(strlen(why) + 64);
    sprintf(msg, "%s", why);
    free(label);
    return publisher_sink_create(ops ? ops : &sink_unusable_ops, url, &unusable_backend, msg, o,
                                 err, errlen);
}

sink *publisher_bad_url(const sink_ops *ops, const char *url, const sink_options *o, char *err,
                        size_t errlen)
{
    char why[512];
    char *label = sink_redact_url(url);
    size_t ll = label ? strlen(label) : 0;
    snprintf(why, sizeof why, "%s",
             label && !strncmp(err, label, ll) && err[ll] == ':' ? err + ll + 2 : err);
    free(label);
    return publisher_sink_unusable(ops, url, why, o, err, errlen);
}

int publisher_sink_write(sink *s, const js_event *ev)
{
    publisher *p = ((pub_sink *)s)->pub;
    const char *enc = NULL;
    int n = 0;
    if (p->encode && ev->metrics) {
        sbuf_reset(&p->enc_buf);
        n = p->encode(p->ctx, ev, &p->enc_buf);
        if (n >= 0 && !p->enc_buf.oom) enc = p->enc_buf.p ? p->enc_buf.p : "";
    }
    return pub_enqueue(p, ev->seq, ev->name ? ev->name : "", ev->json, ev->len, enc,
                       enc ? p->enc_buf.len : 0, n);
}

void publisher_set_encoder(publisher *p, int (*encode)(void *ctx, const js_event *ev, sbuf *out))
{
    if (p) p->encode = encode;
}

int publisher_sink_flush(sink *s, double timeout_s)
{
    return pub_flush(((pub_sink *)s)->pub, timeout_s);
}

void publisher_sink_close(sink *s)
{
    if (!s) return;
    publisher *p = ((pub_sink *)s)->pub;
    pthread_mutex_lock(&p->mu);
    p->lost_out = NULL; /* the sink goes; an abandoned thread keeps counting alone */
    pthread_mutex_unlock(&p->mu);
    pub_free(p);
    free(s->label);
    free(s);
}

publisher *publisher_of(sink *s)
{
    return s && s->ops && s->ops->flush == publisher_sink_flush ? ((pub_sink *)s)->pub : NULL;
}

int publisher_adopt_spool(publisher *p, const char *path, char *err, size_t errlen)
{
    spool sp;
    if (spool_open(&sp, path, NULL, err, errlen) < 0) return -1;
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    if (p->have_spool && spool_has(p)) {
        snprintf(err, errlen, "destination already has a spool");
        rc = -1;
    } else {
        if (p->have_spool) spool_close(&p->sp);
        p->sp = sp;
        p->have_spool = 1;
        if (p->waiting) pthread_cond_signal(&p->work);
    }
    pthread_mutex_unlock(&p->mu);
    if (rc) spool_close(&sp);
    return rc;
}

void publisher_get_stats(publisher *p, pub_stats *st)
{
    pthread_mutex_lock(&p->mu);
    st->delivered = p->delivered;
    st->spooled = p->spooled;
    st->dropped = p->dropped;
    st->pending = p->count + (p->have_spool ? p->sp.pending : 0);
    pthread_mutex_unlock(&p->mu);
}
