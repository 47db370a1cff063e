/* store_testlib.h — what the store's unit tests share (test_store*.c,
 * test_codec.c): a fresh directory a test, stores opened in it, series
 * put and checked on a grid, exact comparison of doubles, a value read
 * from a store's SQLite. */
#ifndef STORE_TESTLIB_H
#define STORE_TESTLIB_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>
#include "store/codec.h"
#include "store/store.h"

static char tmpdir[256];

static inline int setup(void **st)
{
    (void)st;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/jobscope-store-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static inline int teardown(void **st)
{
    (void)st;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd);
}

static inline store *open_at(const char *sub, double retention, long long max_bytes)
{
    char dir[400], err[256] = "";
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    store_config c = {dir, retention, max_bytes, 0, NULL, NULL};
    store *s = store_open(&c, err, sizeof err);
    if (!s) fprintf(stderr, "open: %s\n", err);
    assert_non_null(s);
    return s;
}

static inline store *open_delayed(const char *sub, double settle_delay_s)
{
    char dir[400], err[256] = "";
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    store_config c = {dir, 0, 0, settle_delay_s, NULL, NULL};
    store *s = store_open(&c, err, sizeof err);
    assert_non_null(s);
    return s;
}

/* The store's own messages (store_config.log), kept for assertions. */
static char logged[16384];
static inline void capture_log(void *arg, const char *line)
{
    (void)arg;
    size_t l = strlen(logged);
    snprintf(logged + l, sizeof logged - l, "%s\n", line);
}

static inline store *open_logged(const char *sub, long long max_bytes)
{
    char dir[400], err[256] = "";
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    store_config c = {dir, 0, max_bytes, 0, capture_log, NULL};
    store *s = store_open(&c, err, sizeof err);
    if (!s) fprintf(stderr, "open: %s\n", err);
    assert_non_null(s);
    return s;
}

static inline int same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }


/* --- the store ----------------------------------------------------------- */

typedef struct found { uint64_t ids[4096]; char desc[4096][96]; int n; } found;

static inline int collect(void *arg, const store_series *se)
{
    found *f = arg;
    f->ids[f->n] = se->id;
    int o = snprintf(f->desc[f->n], sizeof f->desc[0], "%s", se->metric);
    for (int i = 0; i < se->ntags; i++)
        o += snprintf(f->desc[f->n] + o, sizeof f->desc[0] - (size_t)o, " %s=%s", se->tags[i].key, se->tags[i].value);
    f->n++;
    return 0;
}

/* The series of `metric` with job=JOB, in a store of any size. */
typedef struct one {
    const char *job;
    uint64_t id;
} one;
static inline int find_job(void *arg, const store_series *se)
{
    one *o = arg;
    for (int i = 0; i < se->ntags; i++)
        if (!strcmp(se->tags[i].key, "job") && !strcmp(se->tags[i].value, o->job)) {
            o->id = se->id;
            return 1;
        }
    return 0;
}
static inline uint64_t job_series(store *s, const char *metric, const char *job)
{
    one o = {job, 0};
    store_series_of(s, metric, find_job, &o);
    return o.id;
}

static inline uint64_t series_id(store *s, const char *metric, const char *job)
{
    static found f;
    f.n = 0;
    store_series_of(s, metric, collect, &f);
    char want[64];
    snprintf(want, sizeof want, "job=%s", job);
    for (int i = 0; i < f.n; i++) if (strstr(f.desc[i], want)) return f.ids[i];
    return 0;
}

/* The value of series j (of kind j % 4) at step i. */
static inline double gen_value(int j, int i)
{
    switch (j % 4) {
    case 0: return (double)i * (j + 1) * 1000 + (i * 7919 % 13);   /* counter */
    case 1: return round((i * 0.37 + j) * 1000) / 1000;            /* seconds, 3 decimals */
    case 2: return sin(i * 0.01 + j) * 1e6 / 7.0;                  /* any float */
    default: return -17;                                           /* constant */
    }
}

static inline void put_grid(store *s, int nseries, int npoints, int64_t t0, int64_t step)
{
    enum { B = 5000 };          /* more than one slice of store_put */
    store_point *pts = calloc(B, sizeof *pts);
    static char jobs[4096][16];
    static store_tag tags[4096][2];
    for (int j = 0; j < nseries; j++) {
        snprintf(jobs[j], sizeof jobs[j], "j%d", j);
        tags[j][0] = (store_tag){"job", jobs[j]};
        tags[j][1] = (store_tag){"host", j % 2 ? "n1" : "n2"};
    }
    size_t k = 0;
    char err[256];
    for (int i = 0; i < npoints; i++)
        for (int j = 0; j < nseries; j++) {
            pts[k++] = (store_point){j % 4 == 0 ? "m.counter" : j % 4 == 1 ? "m.secs" : j % 4 == 2 ? "m.float" : "m.const",
                                     tags[j], 2, t0 + i * step, gen_value(j, i)};
            if (k == B) { assert_int_equal(store_put(s, pts, k, err, sizeof err), 0); k = 0; }
        }
    if (k) assert_int_equal(store_put(s, pts, k, err, sizeof err), 0);
    free(pts);
}

static inline void check_grid(store *s, int nseries, int npoints, int64_t t0, int64_t step)
{
    for (int j = 0; j < nseries; j++) {
        char job[16];
        snprintf(job, sizeof job, "j%d", j);
        const char *m = j % 4 == 0 ? "m.counter" : j % 4 == 1 ? "m.secs" : j % 4 == 2 ? "m.float" : "m.const";
        uint64_t id = series_id(s, m, job);
        assert_true(id != 0);
        store_points p = {0};
        assert_int_equal(store_read(s, id, INT64_MIN, INT64_MAX, &p), 0);
        assert_int_equal(p.n, (size_t)npoints);
        for (int i = 0; i < npoints; i++) {
            assert_int_equal(p.ts[i], t0 + i * step);
            if (!same_double(p.val[i], gen_value(j, i))) fail_msg("%s %s #%d: %.17g", m, job, i, p.val[i]);
        }
        store_points_free(&p);
    }
}

static inline long long sql_int(const char *sub, const char *sql)
{
    char path[500];
    snprintf(path, sizeof path, "%s/%s/chunks.db", tmpdir, sub);
    sqlite3 *db;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    long long v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

#endif
