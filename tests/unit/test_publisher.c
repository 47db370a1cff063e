/* test_publisher.c — the publisher's state machine (sink/publisher.h) under
 * pressure, with a fake backend: a producer much faster than delivery (the
 * memory queue overflows into the spool while batches are in flight),
 * injected failures in the middle of batches, a destination down for a
 * while, and an exit with a flush timeout.  Checks that the first
 * occurrences of the delivered events are exactly 1..N in order (at-least-
 * once: repeats allowed), and what is left is in the spool, in order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sink/delivery/publisher.h"
#include "sink/formats/sbuf.h"
#include "util/clock.h"

typedef struct fake {
    pthread_mutex_t mu;
    uint64_t *got;
    size_t ngot, cap;
    int calls, fail_every, down_connects;
    useconds_t delay, first_delay;
} fake;

static int fake_connect(void *ctx, double t, char *err, size_t errlen)
{
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    int down = f->down_connects > 0 ? f->down_connects-- : 0;
    pthread_mutex_unlock(&f->mu);
    if (down) { snprintf(err, errlen, "fake: down"); return -1; }
    return 0;
}

static int fake_send(void *ctx, const pub_item *it, int n, double t, char *err, size_t errlen)
{
    fake *f = ctx;
    if (f->first_delay) {
        usleep(f->first_delay);
        f->first_delay = 0;
    } else if (f->delay) {
        usleep(f->delay);
    }
    pthread_mutex_lock(&f->mu);
    int upto = n;
    if (f->fail_every && ++f->calls % f->fail_every == 0) upto = n / 2;
    for (int i = 0; i < upto; i++) {
        if (f->ngot == f->cap) {
            f->cap = f->cap ? f->cap * 2 : 1024;
            f->got = realloc(f->got, f->cap * sizeof *f->got);
        }
        char want[32];
        snprintf(want, sizeof want, "{\"seq\":%llu}", (unsigned long long)it[i].seq);
        assert_int_equal(it[i].len, strlen(want));
        assert_memory_equal(it[i].json, want, it[i].len);
        assert_string_equal(it[i].name, "ev.test");
        f->got[f->ngot++] = it[i].seq;
    }
    pthread_mutex_unlock(&f->mu);
    if (upto < n) snprintf(err, errlen, "fake: injected failure");
    return upto;
}

static void fake_nop(void *ctx) { (void)ctx; }
static int no_match(const char *u, const sink_options *o) { return 0; }
static const sink_ops fake_ops = {
    .name = "fake",
    .match = no_match,
    .open = NULL,
    .write = publisher_sink_write,
    .flush = publisher_sink_flush,
    .close = publisher_sink_close,
};

/* first occurrences == 1..n */
static void check_order(const fake *f, uint64_t n)
{
    uint64_t next = 1;
    for (size_t i = 0; i < f->ngot; i++) {
        if (f->got[i] == next) next++;
        else assert_true(f->got[i] < next);      /* a repeat of something already seen */
    }
    assert_int_equal(next, n + 1);
}

static sink *make(fake *f, const pub_backend *be, const char *dir)
{
    sink_options o;
    memset(&o, 0, sizeof o);
    o.spool_dir = dir;
    char err[256];
    sink *s = publisher_sink_create(&fake_ops, "fake://u:pw@x/y", be, f, &o, err, sizeof err);
    assert_non_null(s);
    return s;
}

static void produce(sink *s, uint64_t from, uint64_t to, useconds_t pause)
{
    char json[32];
    for (uint64_t i = from; i <= to; i++) {
        int len = snprintf(json, sizeof json, "{\"seq\":%llu}", (unsigned long long)i);
        js_event ev = { "ev.test", json, (size_t)len, i, 0, NULL, 0 };
        assert_int_equal(s->ops->write(s, &ev), 0);
        if (pause && i % 1000 == 0) usleep(pause);
    }
}

/* ---- an encoder of the backend's own (publisher_set_encoder) ----------- */

static int enc_with, enc_without, enc_bad, enc_calls;

/* Encodes an event that has a value set as "E<seq>". */
static int enc_encode(void *ctx, const js_event *ev, struct sbuf *out)
{
    char t[32];
    enc_calls++;
    sbuf_put(out, t, (size_t)snprintf(t, sizeof t, "E%llu", (unsigned long long)ev->seq));
    return 1;
}

/* fake_send, counting the items that came with their encoding (right) and
 * those that came with the JSON only. */
static int enc_send(void *ctx, const pub_item *it, int n, double t, char *err, size_t errlen)
{
    int done = fake_send(ctx, it, n, t, err, errlen);
    for (int i = 0; i < done; i++) {
        char want[32];
        snprintf(want, sizeof want, "E%llu", (unsigned long long)it[i].seq);
        if (!it[i].enc) enc_without++;
        else if (it[i].enc_n == 1 && it[i].enc_len == strlen(want) && !strcmp(it[i].enc, want)) enc_with++;
        else enc_bad++;
    }
    return done;
}

static void produce_with_set(sink *s, uint64_t from, uint64_t to)
{
    static const int dummy_set;              /* the encoder only checks that there is one */
    char json[32];
    for (uint64_t i = from; i <= to; i++) {
        int len = snprintf(json, sizeof json, "{\"seq\":%llu}", (unsigned long long)i);
        js_event ev = { "ev.test", json, (size_t)len, i, 0, (const struct mset *)(const void *)&dummy_set, 0 };
        assert_int_equal(s->ops->write(s, &ev), 0);
    }
}

/* Up: every event reaches send() with the text encoded when it was queued;
 * an event without a value set is not encoded. */
static void an_encoded_event_travels_beside_its_json(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER };
    pub_backend be = { "fake", 64, fake_connect, enc_send, fake_nop, fake_nop };
    sink *s = make(&f, &be, dir);
    publisher_set_encoder(publisher_of(s), enc_encode);
    enc_with = enc_without = enc_bad = enc_calls = 0;
    produce_with_set(s, 1, 500);
    produce(s, 501, 510, 0);                 /* no value set: JSON only */
    assert_int_equal(s->ops->flush(s, 30), 0);
    s->ops->close(s);
    check_order(&f, 510);
    assert_int_equal(enc_calls, 500);
    assert_int_equal(enc_with, 500);
    assert_int_equal(enc_without, 10);
    assert_int_equal(enc_bad, 0);
    rmdir(dir);
    free(f.got);
}

/* Down: what waits in the spool is the JSON only (its format unchanged),
 * and comes back without the encoding, for send() to encode from JSON. */
static void the_spool_keeps_the_json_only(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER, .down_connects = 3 };
    pub_backend be = { "fake", 64, fake_connect, enc_send, fake_nop, fake_nop };
    sink *s = make(&f, &be, dir);
    publisher *p = publisher_of(s);
    publisher_set_encoder(p, enc_encode);
    enc_with = enc_without = enc_bad = enc_calls = 0;
    produce_with_set(s, 1, 200);
    pub_stats ps;
    for (int i = 0; i < 3000; i++) {          /* the first connect fails: spilled */
        publisher_get_stats(p, &ps);
        if (ps.spooled > 0) break;
        usleep(1000);
    }
    assert_true(ps.spooled > 0);
    produce_with_set(s, 201, 400);
    for (int i = 0; i < 6000; i++) {          /* a flush gives up on a destination never reached */
        publisher_get_stats(p, &ps);
        if (ps.delivered > 0) break;
        usleep(10000);
    }
    assert_true(ps.delivered > 0);
    assert_int_equal(s->ops->flush(s, 30), 0);
    s->ops->close(s);
    check_order(&f, 400);
    assert_true(enc_without > 0);             /* replayed from the spool: JSON */
    assert_true(enc_with + enc_without >= 400);
    assert_int_equal(enc_bad, 0);
    rmdir(dir);
    free(f.got);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void overflow_and_failures_keep_order(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_every = 5, .delay = 300, .down_connects = 3 };
    pub_backend be = { "fake", 256, fake_connect, fake_send, fake_nop, fake_nop };
    sink *s = make(&f, &be, dir);
    const uint64_t N = 120000;      /* ~7 memory queues' worth */
    produce(s, 1, N, 0);
    publisher *p = publisher_of(s);
    assert_non_null(p);
    /* the destination comes up after 3 refused connects: wait until it has
     * been reached once, since a flush gives up at once on a destination
     * never reached in this run (issue 14.13) */
    pub_stats ps;
    for (int i = 0; i < 6000; i++) {
        publisher_get_stats(p, &ps);
        if (ps.delivered > 0) break;
        usleep(10000);
    }
    assert_true(ps.delivered > 0);
    assert_int_equal(s->ops->flush(s, 60), 0);
    publisher_get_stats(p, &ps);
    assert_true(ps.spooled > 0);                  /* the overflow path was taken */
    assert_int_equal(ps.dropped, 0);
    assert_int_equal(ps.pending, 0);
    s->ops->close(s);
    check_order(&f, N);
    assert_int_equal(count_files(dir), 0);        /* spool removed once delivered */
    rmdir(dir);
    free(f.got);
}

/* One slow send while the producer overflows the memory queue several
 * times: every spill must leave the in-flight batch's bookkeeping alone. */
static void several_spills_during_one_send(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER, .first_delay = 200000 };
    pub_backend be = { "fake", 64, fake_connect, fake_send, fake_nop, fake_nop };
    sink *s = make(&f, &be, dir);
    const uint64_t N = 80000;
    produce(s, 1, 1, 0);
    usleep(20000);                   /* the thread is now sending event 1, for 200 ms */
    produce(s, 2, N, 0);
    assert_int_equal(s->ops->flush(s, 60), 0);
    s->ops->close(s);
    check_order(&f, N);
    assert_int_equal(count_files(dir), 0);
    rmdir(dir);
    free(f.got);
}

static void exit_with_timeout_leaves_the_rest_in_order(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER, .delay = 20000 };
    pub_backend be = { "fake", 100, fake_connect, fake_send, fake_nop, fake_nop };
    sink *s = make(&f, &be, dir);
    const uint64_t N = 30000;
    produce(s, 1, N, 0);
    assert_int_equal(s->ops->flush(s, 0.2), -1);  /* far too slow to finish */
    s->ops->close(s);
    assert_int_equal(count_files(dir), 1);
    /* the spool holds exactly what was not confirmed, in order */
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512] = "";
    while ((e = readdir(d))) if (e->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    closedir(d);
    spool sp;
    char err[256], *label = NULL, *buf = NULL;
    size_t cap = 0;
    assert_int_equal(spool_open(&sp, path, &label, err, sizeof err), 0);
    assert_string_equal(label, "fake://u:***@x/y");
    uint64_t next = f.ngot ? f.got[f.ngot - 1] + 1 : 1;
    pub_item it[500];
    off_t ends[500];
    int n;
    while ((n = spool_read(&sp, 500, it, ends, &buf, &cap)) > 0) {
        for (int i = 0; i < n; i++) assert_int_equal(it[i].seq, next++);
        spool_consume(&sp, ends[n - 1], n);
    }
    assert_int_equal(next, N + 1);
    assert_int_equal(spool_close(&sp), 1);
    free(label); free(buf); free(f.got);
    rmdir(dir);
}

/* issue 16.8: a delivery thread stuck past the exit's patience is left
 * behind; pub_free used to close its spool (fd and path) under it, so when
 * the thread woke up it read a reused descriptor: another file's records
 * went to this destination, and freed memory into its messages.  Now the
 * thread keeps what it uses and frees it itself. */
static int hang_calls;
static int hanging_connect(void *ctx, double t, char *err, size_t errlen)
{
    if (__atomic_fetch_add(&hang_calls, 1, __ATOMIC_SEQ_CST) == 0) {
        snprintf(err, errlen, "fake: down");    /* first: down, events to the spool */
        return -1;
    }
    sleep(9);                                   /* then stuck past the flush's deadline */
    return 0;
}

static void an_abandoned_delivery_thread_keeps_its_own_spool(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER };
    pub_backend be = { "fake", 64, hanging_connect, fake_send, fake_nop, fake_nop };
    sink *s = make(&f, &be, dir);
    usleep(30000);                              /* the first connect has failed */
    produce(s, 1, 10, 0);
    usleep(200000);                             /* the thread is in its second connect */
    s->ops->flush(s, 0);
    s->ops->close(s);                           /* gives up on the thread: the deadline is past */
    /* a file opened now may get the number of a descriptor closed in there */
    char other[600];
    snprintf(other, sizeof other, "%s/other", dir);
    FILE *o = fopen(other, "w");
    assert_non_null(o);
    fprintf(o, "JSSPOOL1 %020d\nurl fake://u:***@x/y\n", 0);
    for (int i = 0; i < 100; i++) fprintf(o, "999\tev.test\t{\"seq\":999}\n");
    fflush(o);
    sleep(10);                                  /* the thread wakes up and delivers */
    pthread_mutex_lock(&f.mu);
    for (size_t i = 0; i < f.ngot; i++) assert_true(f.got[i] != 999);
    pthread_mutex_unlock(&f.mu);
    check_order(&f, 10);                        /* its own events, from its own spool */
    free(f.got);
    fclose(o);
    unlink(other);
    rmdir(dir);
}

/* -q and the flush-abort latch are state of each publisher (given by its
 * opener in sink_options), not of the process: one publisher's settings
 * never leak into another's. */
static sink *make_with(fake *f, const pub_backend *be, const char *dir, const char *url, int quiet,
                       int *latch)
{
    sink_options o;
    memset(&o, 0, sizeof o);
    o.spool_dir = dir;
    o.quiet = quiet;
    o.flush_abort = latch;
    char err[256];
    sink *s = publisher_sink_create(&fake_ops, url, be, f, &o, err, sizeof err);
    assert_non_null(s);
    return s;
}

static int always_down(void *ctx, double t, char *err, size_t errlen)
{
    snprintf(err, errlen, "fake: down");
    return -1;
}

static void quiet_is_a_setting_of_each_publisher(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX", log[600];
    assert_non_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER };
    pub_backend be = { "fake", 64, always_down, fake_send, fake_nop, fake_nop };
    sink *loud = make_with(&f, &be, dir, "fake://loud/x", 0, NULL);
    sink *quiet = make_with(&f, &be, dir, "fake://quiet/x", 1, NULL);
    produce(loud, 1, 5, 0);
    produce(quiet, 1, 5, 0);
    usleep(200000);                     /* both threads have failed to connect */
    loud->ops->flush(loud, 0);
    quiet->ops->flush(quiet, 0);
    loud->ops->close(loud);
    quiet->ops->close(quiet);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[8192] = "";
    FILE *in = fopen(log, "r");
    assert_non_null(in);
    size_t n = fread(text, 1, sizeof text - 1, in);
    text[n] = 0;
    fclose(in);
    assert_non_null(strstr(text, "jobscope: fake://loud/x: "));
    assert_null(strstr(text, "fake://quiet/x"));
    /* the spools they left (kept: nothing delivered) */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void a_signal_during_the_flush_stops_every_publisher_sharing_the_latch(void **st)
{
    char dir[] = "/tmp/jobscope-pub-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake f = { .mu = PTHREAD_MUTEX_INITIALIZER, .delay = 20000 };
    pub_backend be = { "fake", 10, fake_connect, fake_send, fake_nop, fake_nop };
    int latch = 0;
    sink *a = make_with(&f, &be, dir, "fake://a/x", 1, &latch);
    sink *b = make_with(&f, &be, dir, "fake://b/x", 1, &latch);
    sink *c = make_with(&f, &be, dir, "fake://c/x", 1, NULL);    /* its own latch */
    produce(a, 1, 2000, 0);
    produce(b, 1, 2000, 0);
    produce(c, 1, 2000, 0);
    /* a SIGTERM pending during a's flush (the monitor blocks it) */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, &old);
    raise(SIGTERM);
    double t0 = now_mono();
    assert_int_equal(a->ops->flush(a, 5), -1);
    assert_true(now_mono() - t0 < 1);
    assert_int_equal(latch, 1);
    struct timespec zero = { 0, 0 };
    assert_int_equal(sigtimedwait(&term, NULL, &zero), SIGTERM);   /* read, as the monitor does */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* no signal pending now: b still stops at once (the shared latch), c waits */
    t0 = now_mono();
    assert_int_equal(b->ops->flush(b, 5), -1);
    assert_true(now_mono() - t0 < 1);
    t0 = now_mono();
    assert_int_equal(c->ops->flush(c, 0.5), -1);
    assert_true(now_mono() - t0 >= 0.45);
    a->ops->close(a);
    b->ops->close(b);
    c->ops->close(c);
    free(f.got);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overflow_and_failures_keep_order),
        cmocka_unit_test(an_encoded_event_travels_beside_its_json),
        cmocka_unit_test(the_spool_keeps_the_json_only),
        cmocka_unit_test(several_spills_during_one_send),
        cmocka_unit_test(exit_with_timeout_leaves_the_rest_in_order),
        cmocka_unit_test(an_abandoned_delivery_thread_keeps_its_own_spool),
        cmocka_unit_test(quiet_is_a_setting_of_each_publisher),
        cmocka_unit_test(a_signal_during_the_flush_stops_every_publisher_sharing_the_latch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
