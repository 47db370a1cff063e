/* test_repo_pending.c — the samples the repository folds stay pending
 * across batches (src/repo/repo_pending.c), and nothing is lost by that:
 * a process killed with samples pending has them, exactly once, after the
 * next open (their log replayed); a log already written is not replayed
 * again, and a cut last record is dropped alone; a write of what is
 * pending that fails (a full disk) keeps the log for the next start; every
 * read sees what is pending; an idle queue, or a log past its bound, has it
 * written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "repo/repo.h"
#include "repo_testlib.h"
#include "repo/repo_priv.h" /* repo_flush_queue: a batch, without a read's write */

typedef struct scratch {
    char dir[64], path[128], log[160];
} scratch;

static void scratch_make(scratch *s)
{
    strcpy(s->dir, "/tmp/jobscope-pending.XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->path, sizeof s->path, "%s/repo.sqlite", s->dir);
    snprintf(s->log, sizeof s->log, "%s-pending", s->path);
}

static void scratch_remove(scratch *s)
{
    char f[200];
    const char *const tail[] = {"", "-wal", "-shm", "-pending"};
    for (int i = 0; i < 4; i++) {
        snprintf(f, sizeof f, "%s%s", s->path, tail[i]);
        unlink(f);
    }
    assert_int_equal(rmdir(s->dir), 0);
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

#define SAMPLES_IN_FILE "SELECT coalesce(sum(nsamples), 0) FROM jobs"

/* The t-th event: the starts of jobs a (workflow W, host h1) and b (hosts
 * h2 and h3: two runs), then their samples in turn, with a note. */
static int event_of(int t, const char *note, char *buf, size_t len)
{
    if (t < 2)
        return snprintf(buf, len,
                        "{\"event\":\"jobscope.start\",\"ts\":%d,%s\"hostname\":\"h%d\","
                        "\"job_id\":\"%c\",\"pid\":7,\"exe\":\"/bin/x\"}",
                        1000 + t, t ? "" : "\"wf_uuid\":\"W\",", t + 1, "ab"[t]);
    int k = t % 3;
    return snprintf(buf, len,
                    "{\"event\":\"kickstart.inv.online\",%s\"ts\":%d,\"hostname\":\"h%d\","
                    "\"job_id\":\"%c\",\"pid\":7,\"rss\":%d,\"utime\":%g,\"rchar\":%d,"
                    "\"note\":\"%s\"}",
                    k ? "" : "\"wf_uuid\":\"W\",", 1000 + t, k + 1, k ? 'b' : 'a', t % 1000,
                    t * 0.25, t * 3, note);
}

static void feed(repo *r, int from, int to, int pad, int one_at_a_time)
{
    size_t len = (size_t)pad + 512;
    char *buf = malloc(len), *note = malloc((size_t)pad + 1);
    assert_non_null(buf);
    assert_non_null(note);
    memset(note, 'x', (size_t)pad);
    note[pad] = 0;
    for (int t = from; t < to; t++) {
        int n = event_of(t, note, buf, len);
        if (one_at_a_time) {
            json_t *ev = json_loadb(buf, (size_t)n, 0, NULL);
            assert_non_null(ev);
            assert_int_equal(repo_add(r, ev), 0);
            json_decref(ev);
        } else
            assert_int_equal(repo_add_json(r, buf, (size_t)n), 0);
    }
    free(buf);
    free(note);
}

/* A process that stores n events in batches and is killed with SIGKILL
 * (no close, no write of what is pending) once they are committed. */
static void crash_after(const char *path, int n)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[256];
        repo *r = repo_open(path, err, sizeof err);
        if (!r) _exit(3);
        feed(r, 0, n, 0, 0);
        repo_flush_queue(r, 0); /* the writer's batch: what it folds stays pending */
        kill(getpid(), SIGKILL);
        _exit(4);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void assert_same_json(json_t *a, json_t *b, const char *what)
{
    if (!json_equal(a, b)) {
        char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
        fprintf(stderr, "%s differs:\n  %.300s\n  %.300s\n", what, x, y);
        free(x), free(y);
        fail();
    }
}

/* The jobs' rows and events as the one-at-a-time reference has them (in
 * order: the samples came in the same order; else a running job's row
 * differs in what the last sample received gives, its duration, counters
 * and efficiency, until its end record sums it from its events). */
static void assert_as_reference(repo *r, repo *ref, int in_order)
{
    const char *const jobs[][2] = {{"a", "W"}, {"b", ""}};
    for (int i = 0; i < 2; i++) {
        json_t *x = repo_job_row(r, jobs[i][0], jobs[i][1]);
        json_t *y = repo_job_row(ref, jobs[i][0], jobs[i][1]);
        assert_non_null(x);
        assert_non_null(y);
        json_object_del(x, "row"), json_object_del(y, "row");
        if (!in_order) { /* what does not depend on the order */
            const char *const keep[] = {"samples", "peak_mem", "last", "start", "state", "host"};
            json_t *a = json_object(), *b = json_object();
            for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) {
                json_object_set(a, keep[k], json_object_get(x, keep[k]));
                json_object_set(b, keep[k], json_object_get(y, keep[k]));
            }
            json_decref(x), json_decref(y);
            x = a, y = b;
        }
        assert_same_json(x, y, "the job's row");
        json_decref(x), json_decref(y);
        x = repo_job_events(r, jobs[i][0], jobs[i][1], 0);
        y = repo_job_events(ref, jobs[i][0], jobs[i][1], 0);
        assert_same_json(x, y, "the job's events");
        json_decref(x), json_decref(y);
    }
}

static long long events_of(repo *r)
{
    long long n = 0;
    repo_event_filter f = {.limit = 10000};
    for (;;) {
        json_t *page = repo_events(r, &f);
        assert_non_null(page);
        n += (long long)json_array_size(json_object_get(page, "events"));
        json_t *next = json_object_get(page, "next");
        if (!json_is_integer(next)) {
            json_decref(page);
            return n;
        }
        f.after = json_integer_value(next);
        json_decref(page);
    }
}

static void samples_pending_at_a_crash_are_in_the_repository_after_the_next_open(void **state)
{
    (void)state;
    enum { N = 3000 };
    scratch s, sr;
    scratch_make(&s), scratch_make(&sr);
    crash_after(s.path, N);
    /* they were pending: in the log, not in SQLite (but the first sample of
     * job b's second run, a row of its own) */
    assert_true(file_size(s.log) > (long long)N * 100);
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), 1);

    repo *ref = open_at(sr.path);
    feed(ref, 0, N, 0, 1);
    repo *r = open_at(s.path); /* the log replayed */
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), N - 2);
    assert_true(file_size(s.log) < 64); /* started again: its header */
    assert_as_reference(r, ref, 1);
    assert_int_equal(events_of(r), N);
    repo_close(r);
    assert_int_equal(file_size(s.log), -1); /* a clean close leaves no log */

    r = open_at(s.path); /* and again: nothing twice */
    assert_as_reference(r, ref, 1);
    assert_int_equal(events_of(r), N);
    repo_close(r);
    repo_close(ref);
    scratch_remove(&s), scratch_remove(&sr);
}

/* SQLite cannot write (a full disk: RLIMIT_FSIZE at the files' sizes gives
 * EFBIG as ENOSPC would) when what is pending is written: the transaction
 * fails and the log is kept as it is, for the next start; the repository
 * goes on once there is space again, writing every batch, and a clean stop
 * leaves that log.  The next start has every sample, once. */
static void a_failed_write_of_what_is_pending_keeps_the_log_for_the_next_start(void **state)
{
    (void)state;
    enum { N = 3000, M = 600 };
    scratch s, sr;
    scratch_make(&s), scratch_make(&sr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[256], wal[200];
        signal(SIGXFSZ, SIG_IGN);
        repo *r = repo_open(s.path, err, sizeof err);
        if (!r) _exit(3);
        feed(r, 0, N, 0, 0);
        repo_flush_queue(r, 0);
        snprintf(wal, sizeof wal, "%s-wal", s.path);
        long long at = file_size(wal) > file_size(s.path) ? file_size(wal) : file_size(s.path);
        struct rlimit was;
        getrlimit(RLIMIT_FSIZE, &was);
        struct rlimit full = {(rlim_t)at, was.rlim_max};
        if (setrlimit(RLIMIT_FSIZE, &full) < 0) _exit(5);
        json_decref(repo_job_row(r, "b", "")); /* a read: what is pending is written, and fails */
        if (setrlimit(RLIMIT_FSIZE, &was) < 0) _exit(7); /* space again */
        feed(r, N, N + M, 0, 0);
        json_decref(repo_job_row(r, "b", ""));
        repo_close(r);
        _exit(file_size(s.log) > (long long)N * 100 ? 0 : 6); /* kept */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(count_of(s.path, SAMPLES_IN_FILE) < N);

    repo *ref = open_at(sr.path);
    feed(ref, 0, N + M, 0, 1);
    repo *r = open_at(s.path);
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), N + M - 2);
    assert_as_reference(r, ref, 0); /* (replayed after the later ones) */
    assert_int_equal(events_of(r), N + M);
    repo_close(r);
    repo_close(ref);
    scratch_remove(&s), scratch_remove(&sr);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *d = malloc(*len + 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, *len, f), *len);
    fclose(f);
    return d;
}

static void spill(const char *path, const char *d, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, len, f), len);
    fclose(f);
}

static void a_written_log_is_not_replayed_and_a_cut_record_is_dropped_alone(void **state)
{
    (void)state;
    enum { N = 1500 };
    scratch s;
    scratch_make(&s);
    crash_after(s.path, N);
    size_t len;
    char *log = slurp(s.log, &len);
    spill(s.log, log, len - 3); /* the last record cut, as by a crash in its write */
    repo *r = open_at(s.path);
    assert_int_equal(events_of(r), N - 1);
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), N - 3);
    repo_close(r);
    /* the whole log again: its generation is the one written */
    spill(s.log, log, len);
    r = open_at(s.path);
    assert_int_equal(events_of(r), N - 1);
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), N - 3);
    repo_close(r);
    free(log);
    scratch_remove(&s);
}

/* A new repository leaves no SQLite log behind its schema: creating the
 * tables and indexes wrote ~300 KB of it, kept until the first checkpoint. */
static void a_new_repository_keeps_no_log_of_its_schema(void **state)
{
    (void)state;
    scratch s;
    scratch_make(&s);
    repo *r = open_at(s.path);
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", s.path);
    long long b = file_size(wal);
    assert_true(b <= 0); /* gone or empty */
    assert_true(file_size(s.path) > 0);
    repo_close(r);
    scratch_remove(&s);
}

static void reads_see_what_is_pending_and_an_idle_queue_has_it_written(void **state)
{
    (void)state;
    enum { N = 600 };
    scratch s;
    scratch_make(&s);
    repo *r = open_at(s.path);
    feed(r, 0, N, 0, 0);
    repo_flush_queue(r, 0);
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), 1); /* (that first sample) */
    json_t *row = repo_job_row(r, "b", "");                 /* a read writes it first */
    int of_b = 0;
    for (int t = 2; t < N; t++) of_b += t % 3 != 0;
    assert_int_equal(json_integer_value(json_object_get(row, "samples")), of_b);
    json_decref(row);
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), N - 2);

    feed(r, N, 2 * N, 0, 0);
    repo_flush_queue(r, 0);
    assert_int_equal(count_of(s.path, SAMPLES_IN_FILE), N - 2);
    long long n = 0;
    for (int i = 0; i < 200 && (n = count_of(s.path, SAMPLES_IN_FILE)) != 2 * N - 2; i++)
        usleep(50000); /* REPO_PENDING_IDLE_S after the last batch */
    assert_int_equal(n, 2 * N - 2);
    repo_close(r);
    scratch_remove(&s);
}

static void a_log_past_its_bound_has_what_is_pending_written(void **state)
{
    (void)state;
    enum { PAD = 4096 };
    int n = (int)(REPO_PENDING_BYTES / PAD) * 5 / 4;
    scratch s;
    scratch_make(&s);
    repo *r = open_at(s.path);
    for (int t = 0; t < n; t += 500) {
        feed(r, t, t + 500 < n ? t + 500 : n, PAD, 0);
        repo_flush_queue(r, 0);
        assert_true(file_size(s.log) < (long long)REPO_PENDING_BYTES); /* (never past it) */
    }
    long long in_file = count_of(s.path, SAMPLES_IN_FILE);
    assert_true(in_file > 0 && in_file < n - 2);
    assert_true(file_size(s.log) < (long long)REPO_PENDING_BYTES);
    repo_close(r);
    scratch_remove(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_pending_at_a_crash_are_in_the_repository_after_the_next_open),
        cmocka_unit_test(a_written_log_is_not_replayed_and_a_cut_record_is_dropped_alone),
        cmocka_unit_test(a_failed_write_of_what_is_pending_keeps_the_log_for_the_next_start),
        cmocka_unit_test(reads_see_what_is_pending_and_an_idle_queue_has_it_written),
        cmocka_unit_test(a_new_repository_keeps_no_log_of_its_schema),
        cmocka_unit_test(a_log_past_its_bound_has_what_is_pending_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
