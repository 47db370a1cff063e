/* test_repo_blocks.c — the events repository keeps a run's samples as one
 * row (a block, src/repo/repo_block.c): every read answers
 * what it answered when each event was a row of its own (a repository fed
 * one event at a time, which makes no block, is the reference), ids
 * included; a repository written before blocks opens and goes on; the
 * retention cuts inside a block; samples handed over by the server's
 * streaming reader as fields are read as from their text; a block keeps
 * its samples as their differences, and one written whole still reads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "repo/repo.h"
#include "repo_testlib.h"
#include "repo/repo_priv.h" /* repo_flat: the sample read from fields and from text */
#include "server/json_read.h"
#include "server/server.h"

static repo *scratch(char *dir, char *path, size_t len)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/repo.sqlite", dir);
    return open_at(path);
}

static void scratch_close(repo *r, const char *dir, const char *path)
{
    char f[300];
    if (r) repo_close(r);
    unlink(path);
    snprintf(f, sizeof f, "%s-wal", path);
    unlink(f);
    snprintf(f, sizeof f, "%s-shm", path);
    unlink(f);
    snprintf(f, sizeof f, "%s-pending", path);
    unlink(f);
    rmdir(dir);
}

/* The t-th event of a mix: job a (one run, workflow W1, a start and an
 * end), job b (two hosts: two runs, as the bench's jobs), job c (Slurm
 * steps 0 and 1 of one host), job d of workflow W2 (samples, one
 * workflow event), stampede events of W1, samples out of order,
 * one without a time, one pretty-printed, big ones (blocks split by size). */
static int mixed(int t, char *buf, size_t len)
{
    double ts = 1000 + t - (t % 37 == 0 ? 20.5 : 0);
    const char *pad =
        t % 5
            ? ""
            : ",\"note\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
              "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"";
    if (t == 0 || t == 1 || t == 2)
        return snprintf(buf, len,
                        "{\"event\":\"jobscope.start\",\"ts\":%g,%s\"hostname\":\"h%d\","
                        "\"job_id\":\"%c\",\"pid\":7,\"exe\":\"/bin/x\",\"user\":\"u\"}",
                        ts, t == 0 ? "\"wf_uuid\":\"W1\",\"wf_label\":\"L\"," : "", t + 1,
                        "abc"[t]);
    if (t == 1900)
        return snprintf(buf, len,
                        "{\"event\":\"jobscope.end\",\"ts\":%g,\"wf_uuid\":\"W1\",\"hostname\":"
                        "\"h1\",\"job_id\":\"a\",\"pid\":7,\"exit_code\":0}",
                        ts);
    if (t >= 600 && t < 640 && t % 2 == 0)   /* workflow W2: its label from a sample, then */
        return t == 630 ? snprintf(buf, len, /* another event's that must not win */
                                   "{\"event\":\"stampede.xwf.start\",\"ts\":%g,\"xwf_id\":"
                                   "\"W2\",\"wf_label\":\"X\"}",
                                   ts)
                        : snprintf(buf, len,
                                   "{\"event\":\"kickstart.inv.online\",\"ts\":%g,\"wf_uuid\":"
                                   "\"W2\",%s\"hostname\":\"h5\",\"job_id\":\"d\",\"pid\":7,"
                                   "\"rss\":%d}",
                                   ts, t >= 610 ? "\"wf_label\":\"S\"," : "", t);
    if (t % 97 == 0)
        return snprintf(buf, len,
                        "{\"event\":\"stampede.job_inst.main.start\",\"ts\":%g,\"xwf_id\":\"W1\","
                        "\"job_id\":\"a\"}",
                        ts);
    if (t == 501) /* no time: a row of its own, first in time order */
        return snprintf(buf, len,
                        "{\"event\":\"kickstart.inv.online\",\"hostname\":\"h2\",\"job_id\":\"b\","
                        "\"pid\":7,\"rss\":1}");
    int k = t % 4;
    const char *job = k == 0 ? "a" : k == 3 ? "c" : "b";
    char host[16], tags[64] = "";
    snprintf(host, sizeof host, "h%d", k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 4 : 3);
    if (k == 3) snprintf(tags, sizeof tags, "\"tags\":{\"slurm_step\":\"%d\"},", (t / 4) % 2);
    return snprintf(buf, len,
                    "{%s\"event\":\"kickstart.inv.online\",%s\"ts\":%g,%s\"hostname\":\"%s\","
                    "\"job_id\":\"%s\",\"pid\":7,%s\"rss\":%d,\"utime\":%g,\"rchar\":%d%s}",
                    t == 777 ? "\n  " : "", k == 0 ? "\"wf_uuid\":\"W1\"," : "", ts,
                    t == 777 ? "\n" : "", host, job, tags, t % 1000, t * 0.5, t * 3, pad);
}

static void assert_same(json_t *a, json_t *b, const char *what)
{
    if (!a && !b) return; /* none both ways (a job of one run has no page of runs) */
    char *ta = json_dumps(a, JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    char *tb = json_dumps(b, JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    if (!ta || !tb || strcmp(ta, tb))
        fprintf(stderr, "%s differs:\nrows:   %.600s\nblocks: %.600s\n", what, ta ? ta : "(null)",
                tb ? tb : "(null)");
    assert_non_null(ta);
    assert_non_null(tb);
    assert_string_equal(ta, tb);
    free(ta), free(tb);
    json_decref(a), json_decref(b);
}

/* Two exports (NDJSON) line by line, as JSON (repo_add stores an event's
 * text as jansson writes it, a batch as received: the pretty-printed one
 * is one line in both). */
static size_t same_lines(char *a, char *b)
{
    assert_non_null(a);
    assert_non_null(b);
    char *sa = NULL, *sb = NULL;
    char *la = strtok_r(a, "\n", &sa), *lb = strtok_r(b, "\n", &sb);
    size_t n = 0;
    for (; la && lb; la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb), n++) {
        json_t *ja = json_loads(la, 0, NULL), *jb = json_loads(lb, 0, NULL);
        assert_non_null(ja);
        assert_non_null(jb);
        if (!json_equal(ja, jb)) fprintf(stderr, "export line %zu:\n%s\n%s\n", n, la, lb);
        assert_true(json_equal(ja, jb));
        json_decref(ja), json_decref(jb);
    }
    assert_null(la);
    assert_null(lb);
    free(a), free(b);
    return n;
}

/* Every page of GET /api/events under a filter, walked by `next`. */
static json_t *all_pages(repo *r, repo_event_filter f)
{
    json_t *all = json_array();
    for (int guard = 0; guard < 10000; guard++) {
        json_t *p = repo_events(r, &f);
        json_array_append(all, p);
        json_t *next = json_object_get(p, "next");
        if (!json_is_integer(next)) {
            json_decref(p);
            break;
        }
        f.after = json_integer_value(next);
        json_decref(p);
    }
    return all;
}

/* Every read of two repositories answers the same: the jobs (NULL-ended
 * ids), their events, runs and pages, the workflows, the export and GET
 * /api/events under filters (on the first two of the jobs, wfs, hosts). */
static void assert_same_reads(repo *one, repo *batch, const char *const *jobs,
                              const char *const *wfs, const char *const *hosts)
{
    repo_job_filter all = {.sort = "job", .limit = 100};
    json_t *ja = repo_jobs(one, &all), *jb = repo_jobs(batch, &all);
    json_object_del(ja, "version"), json_object_del(jb, "version");
    assert_same(ja, jb, "the jobs");
    for (size_t i = 0; jobs[i]; i++) {
        const char *j = jobs[i];
        assert_same(repo_job_events(one, j, NULL, 0), repo_job_events(batch, j, NULL, 0), j);
        assert_same(repo_job_events(one, j, NULL, 1500), repo_job_events(batch, j, NULL, 1500),
                    "events since");
        assert_int_equal(repo_job_nruns(one, j, NULL), repo_job_nruns(batch, j, NULL));
        json_t *pa = repo_job_page(one, j, NULL, NULL, 0, 500);
        json_t *runs = json_object_get(pa, "runs");
        for (size_t k = 0; k < json_array_size(runs); k++) {
            const char *key = json_string_value(json_object_get(json_array_get(runs, k), "run"));
            assert_non_null(key);
            assert_same(repo_run_events(one, j, NULL, key), repo_run_events(batch, j, NULL, key),
                        "a run's events");
            assert_same(repo_job_page(one, j, NULL, key, 0, 500),
                        repo_job_page(batch, j, NULL, key, 0, 500), "a run's page");
            assert_same(repo_job_page(one, j, NULL, key, 1200, 500),
                        repo_job_page(batch, j, NULL, key, 1200, 500), "a run's newer page");
        }
        assert_same(pa, repo_job_page(batch, j, NULL, NULL, 0, 500), "the whole job's page");
        char *va = repo_job_view(one, j, NULL), *vb = repo_job_view(batch, j, NULL);
        assert_true((va == NULL) == (vb == NULL));
        if (va) assert_string_equal(va, vb);
        free(va), free(vb);
    }
    for (size_t i = 0; wfs[i]; i++)
        assert_same(repo_workflow(one, wfs[i]), repo_workflow(batch, wfs[i]), "a workflow");
    assert_same(repo_workflows(one), repo_workflows(batch), "the workflows");
    /* the export, whole and a job a page */
    repo_job_filter f = {0};
    assert_true(same_lines(repo_export(one, &f, 0, 100), repo_export(batch, &f, 0, 100)) > 0);
    for (long long after = 0; after < 4; after++)
        same_lines(repo_export(one, &f, after, 1), repo_export(batch, &f, after, 1));
    /* raw events by id, with their ids, whole and through every filter */
    repo_event_filter filters[] = {
        {.limit = 10000},
        {.limit = 1},
        {.limit = 7},
        {.limit = 333},
        {.host = hosts[0], .limit = 50},
        {.job = jobs[1], .limit = 100},
        {.wf = wfs[0], .limit = 100},
        {.name = "kickstart.inv.online", .limit = 64},
        {.name = "kick*", .limit = 500},
        {.name = "stampede.*", .limit = 5},
        {.since = 1500, .limit = 90},
        {.until = 1200.5, .limit = 90},
        {.since = 1100, .until = 1300, .host = hosts[1], .limit = 9},
        {.after = 1000, .limit = 11},
    };
    for (size_t i = 0; i < sizeof filters / sizeof *filters; i++)
        assert_same(all_pages(one, filters[i]), all_pages(batch, filters[i]), "/api/events");
}

/* The events from..to of the mix to both: to one at once (a row each), to
 * batch as the server hands them over (batches end at least every 500;
 * the event at_once stored at once, between batches). */
static void feed_both(repo *one, repo *batch, int from, int to, int at_once)
{
    char buf[1024];
    for (int t = from; t < to; t++) {
        int n = mixed(t, buf, sizeof buf);
        json_t *ev = json_loadb(buf, (size_t)n, 0, NULL);
        assert_non_null(ev);
        assert_int_equal(repo_add(one, ev), 0);
        json_decref(ev);
        if (t == at_once) {
            ev = json_loadb(buf, (size_t)n, 0, NULL);
            assert_int_equal(repo_add(batch, ev), 0);
            json_decref(ev);
        } else
            assert_int_equal(repo_add_json(batch, buf, (size_t)n), 0);
        if (t % 500 == 499) repo_version(batch); /* batches end here (and maybe elsewhere) */
    }
}

static void every_read_of_blocks_answers_as_rows_of_their_own(void **state)
{
    (void)state;
    char d1[] = "/tmp/jobscope-blk-XXXXXX", p1[256], d2[] = "/tmp/jobscope-blk-XXXXXX", p2[256];
    repo *one = scratch(d1, p1, sizeof p1), *batch = scratch(d2, p2, sizeof p2);
    feed_both(one, batch, 0, 2400, 1201);
    repo_job_filter all = {.sort = "job", .limit = 100};
    json_t *ja = repo_jobs(one, &all), *jb = repo_jobs(batch, &all);
    json_object_del(ja, "version"), json_object_del(jb, "version");
    assert_int_equal(json_integer_value(json_object_get(ja, "total")), 4);
    assert_same(ja, jb, "the jobs");
    /* the batched repository did keep samples as blocks, the other none */
    assert_true(count_of(p2, "SELECT count(*) FROM evblocks") > 3);
    assert_true(count_of(p2, "SELECT count(*) FROM evblocks WHERE last - id > 0") > 3);
    assert_int_equal(count_of(p1, "SELECT count(*) FROM evblocks"), 0);

    const char *const jobs[] = {"a", "b", "c", NULL}, *const wfs[] = {"W1", "W2", NULL},
                      *const hosts[] = {"h2", "h4"};
    for (int i = 0; i < 3; i++) {
        json_t *e = repo_job_events(one, jobs[i], NULL, 0);
        assert_true(json_array_size(e) > 300);
        json_decref(e);
    }
    assert_same_reads(one, batch, jobs, wfs, hosts);
    assert_int_equal(repo_job_nruns(one, "b", NULL), 2);
    json_t *w2 = repo_workflow(batch, "W2");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(w2, "workflow"), "label")), "S");
    json_decref(w2);
    repo_job_filter f = {0};
    assert_true(same_lines(repo_export(one, &f, 0, 100), repo_export(batch, &f, 0, 100)) > 2000);
    repo_event_filter whole = {.limit = 10000};
    json_t *w = repo_events(batch, &whole);
    assert_int_equal(json_array_size(json_object_get(w, "events")), 2400);
    json_decref(w);
    scratch_close(one, d1, p1);
    scratch_close(batch, d2, p2);
}

/* Rewrites every block of the file at path in the form written before
 * blocks were coded (src/repo/repo_block.c: each event whole).  Of the
 * events after the first of their block (coded against the one before;
 * where blocks begin depends on when the writer's batches end), the bytes
 * of their texts, and *coded those of their codes. */
static size_t blocks_written_whole(const char *path, size_t *coded)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL, *up = NULL;
    size_t text = 0;
    *coded = 0;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, data FROM evblocks", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "UPDATE evblocks SET data=?2 WHERE id=?1", -1, &up, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *d = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1), at = 8, o = 0, nprev = 0;
        int64_t magic;
        memcpy(&magic, d, 8);
        assert_int_equal(magic, -2); /* coded, as every block is written now */
        unsigned char *whole = malloc(len * 20 + 1024);
        char prev[4096], cur[4096];
        while (at < len) { /* id, ts, text's length, code's length, code */
            uint32_t n, c;
            memcpy(&n, d + at + 16, 4);
            memcpy(&c, d + at + 20, 4);
            assert_true(n < sizeof cur);
            assert_int_equal(repo_delta_decode(prev, nprev, d + at + 24, c, cur, n), 0);
            memcpy(whole + o, d + at, 20); /* id, ts, length: as before */
            memcpy(whole + o + 20, cur, n);
            if (nprev) text += n, *coded += c; /* (the first: nprev 0) */
            o += 20 + n, at += 24 + c;
            memcpy(prev, cur, n);
            nprev = n;
        }
        assert_int_equal(at, len);
        sqlite3_bind_int64(up, 1, sqlite3_column_int64(st, 0));
        sqlite3_bind_blob(up, 2, whole, (int)o, SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(up), SQLITE_DONE);
        sqlite3_reset(up);
        free(whole);
    }
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_finalize(st), sqlite3_finalize(up);
    sqlite3_close(db);
    return text;
}

/* Samples are kept as their differences from the sample before (a block's
 * events coded, src/repo/repo_delta.c): a fraction of their text; a file
 * whose blocks hold their events whole, as before, reads as it did, and
 * goes on. */
static void blocks_keep_samples_as_differences_and_whole_ones_still_read(void **state)
{
    (void)state;
    char d1[] = "/tmp/jobscope-blk-XXXXXX", p1[256], d2[] = "/tmp/jobscope-blk-XXXXXX", p2[256];
    repo *one = scratch(d1, p1, sizeof p1), *batch = scratch(d2, p2, sizeof p2);
    feed_both(one, batch, 0, 2400, -1);
    repo_close(batch);
    size_t coded, text = blocks_written_whole(p2, &coded);
    assert_true(text > 100000);
    /* a fifth of these samples have a long note where the one before them
     * in their block has none, or none where it has one */
    assert_true(coded * 2 < text); /* 38% here, 38.5% under valgrind's smaller batches */
    batch = open_at(p2);
    const char *const jobs[] = {"a", "b", "c", NULL}, *const wfs[] = {"W1", "W2", NULL},
                      *const hosts[] = {"h2", "h4"};
    assert_same_reads(one, batch, jobs, wfs, hosts);
    /* and goes on: new blocks coded beside the whole ones */
    feed_both(one, batch, 2400, 3000, -1);
    repo_version(batch);
    assert_true(count_of(p2, "SELECT count(*) FROM evblocks WHERE substr(data, 1, 8) ="
                             " x'feffffffffffffff'") > 0);
    assert_same_reads(one, batch, jobs, wfs, hosts);
    scratch_close(one, d1, p1);
    scratch_close(batch, d2, p2);
}

/* A file written before blocks has no evblocks table: it opens, its events
 * read as ever, and new ones get ids after its own. */
static void a_repository_from_before_blocks_opens_and_goes_on(void **state)
{
    (void)state;
    char d[] = "/tmp/jobscope-blk-XXXXXX", p[256], buf[1024];
    repo *r = scratch(d, p, sizeof p);
    for (int t = 0; t < 300; t++) {
        int n = mixed(t, buf, sizeof buf);
        json_t *ev = json_loadb(buf, (size_t)n, 0, NULL);
        assert_int_equal(repo_add(r, ev), 0); /* rows only, as before */
        json_decref(ev);
    }
    json_t *before = repo_job_events(r, "b", NULL, 0);
    repo_close(r);
    /* the file as the version before wrote it: no blocks table */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE evblocks", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(count_of(p, "SELECT count(*) FROM sqlite_master WHERE name='evblocks'"), 0);

    r = open_at(p);
    json_t *again = repo_job_events(r, "b", NULL, 0);
    assert_true(json_array_size(before) > 50);
    assert_true(json_equal(before, again));
    json_decref(before), json_decref(again);
    for (int t = 300; t < 1300; t++) {
        int n = mixed(t, buf, sizeof buf);
        assert_int_equal(repo_add_json(r, buf, (size_t)n), 0);
    }
    repo_event_filter f = {.limit = 10000};
    json_t *all = repo_events(r, &f), *e;
    size_t i;
    long long last = 0;
    json_array_foreach(json_object_get(all, "events"), i, e)
    {
        long long id = json_integer_value(json_object_get(e, "id"));
        assert_true(id > last); /* unique, in the order received */
        last = id;
    }
    assert_int_equal(json_array_size(json_object_get(all, "events")), 1300);
    json_decref(all);
    repo_close(r);
    assert_true(count_of(p, "SELECT count(*) FROM evblocks") > 0);
    scratch_close(NULL, d, p);
}

/* Ids of the events matched by f, walking every page of GET /api/events. */
static size_t page_ids(repo *r, repo_event_filter f, long long *ids, size_t max)
{
    size_t n = 0;
    for (;;) {
        json_t *p = repo_events(r, &f), *e;
        size_t i;
        json_array_foreach(json_object_get(p, "events"), i, e)
        {
            if (n < max) ids[n] = json_integer_value(json_object_get(e, "id"));
            n++;
            /* an event's id is its place in the order received: ts says it */
            assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "event"), "ts")),
                             999 + json_integer_value(json_object_get(e, "id")));
        }
        json_t *next = json_object_get(p, "next");
        int more = json_is_integer(next);
        f.after = more ? json_integer_value(next) : 0;
        json_decref(p);
        if (!more) return n;
    }
}

/* GET /api/events over more ids than a block may span: dense filters stop
 * within a window, sparse ones read on; no event is lost or given twice
 * where windows meet. */
static void events_are_paged_by_id_across_windows_of_blocks(void **state)
{
    (void)state;
    char d[] = "/tmp/jobscope-blk-XXXXXX", p[256], buf[256];
    repo *r = scratch(d, p, sizeof p);
    enum { N = 70000 }; /* two windows of ids */
    for (int t = 0; t < N; t++) {
        int n = t % 1000 == 500
                    ? snprintf(buf, sizeof buf,
                               "{\"event\":\"jobscope.start\",\"ts\":%d,\"job_id\":\"s%d\"}",
                               1000 + t, t)
                    : snprintf(buf, sizeof buf,
                               "{\"event\":\"kickstart.inv.online\",\"ts\":%d,\"hostname\":"
                               "\"h%d\",\"job_id\":\"j%d\",\"pid\":7,\"rss\":%d}",
                               1000 + t, t % 3, t % 3, t);
        assert_int_equal(repo_add_json(r, buf, (size_t)n), 0);
    }
    repo_version(r);
    /* nearly all in blocks; each run's split at the window (at least two) */
    assert_true(count_of(p, "SELECT count(*) FROM events") <= N / 100);
    assert_true(count_of(p, "SELECT count(*) FROM evblocks") >= 6);
    long long *ids = malloc(N * sizeof *ids);
    assert_non_null(ids);
    repo_event_filter all = {.limit = 10000};
    assert_int_equal(page_ids(r, all, ids, N), N);
    for (long long i = 0; i < N; i++) assert_int_equal(ids[i], i + 1);
    repo_event_filter starts = {.name = "jobscope.start", .limit = 7};
    assert_int_equal(page_ids(r, starts, ids, N), N / 1000);
    for (long long i = 0; i < N / 1000; i++) assert_int_equal(ids[i], 1000 * i + 501);
    repo_event_filter host = {.host = "h1", .since = 1000 + 60000, .limit = 3000};
    size_t n = page_ids(r, host, ids, N), want = 0;
    for (long long t = 60000; t < N; t++)
        if (t % 3 == 1 && t % 1000 != 500) assert_int_equal(ids[want++], t + 1);
    assert_int_equal(n, want);
    repo_event_filter edge = {.after = 65530, .limit = 20};
    json_t *page = repo_events(r, &edge);
    assert_int_equal(json_array_size(json_object_get(page, "events")), 20);
    assert_int_equal(json_integer_value(json_object_get(page, "next")), 65550);
    json_decref(page);
    free(ids);
    scratch_close(r, d, p);
}

/* --retention inside a block: its older samples go, its newer stay. */
static void retention_cuts_inside_a_block(void **state)
{
    (void)state;
    char d[] = "/tmp/jobscope-blk-XXXXXX", p[256], buf[512];
    repo *r = scratch(d, p, sizeof p);
    long now = (long)time(NULL);
    snprintf(
        buf, sizeof buf,
        "{\"event\":\"jobscope.start\",\"ts\":%ld,\"hostname\":\"h\",\"job_id\":\"r\",\"pid\":1}",
        now - 7300);
    assert_int_equal(repo_add_json(r, buf, strlen(buf)), 0);
    for (int i = 0; i < 40; i++) { /* 20 samples 2 h old, 20 of the last minute, interleaved */
        long ts = i % 2 ? now - 60 + i : now - 7200 + i;
        snprintf(
            buf, sizeof buf,
            "{\"event\":\"kickstart.inv.online\",\"ts\":%ld,\"hostname\":\"h\",\"job_id\":\"r\","
            "\"pid\":1,\"rss\":%d}",
            ts, i);
        assert_int_equal(repo_add_json(r, buf, strlen(buf)), 0);
    }
    repo_version(r);             /* written */
    repo_set_retention(r, 3600); /* the next batch written prunes */
    snprintf(buf, sizeof buf, "{\"event\":\"jobscope.start\",\"ts\":%ld,\"job_id\":\"s\"}", now);
    assert_int_equal(repo_add_json(r, buf, strlen(buf)), 0);
    json_t *evs = repo_job_events(r, "r", NULL, 0); /* writes, then prunes */
    assert_int_equal(json_array_size(evs), 20);
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e)
    {
        assert_true(json_integer_value(json_object_get(e, "ts")) >= now - 60);
        assert_int_equal(json_integer_value(json_object_get(e, "rss")), 2 * (long)i + 1);
    }
    json_decref(evs);
    repo_event_filter f = {.limit = 100};
    json_t *page = repo_events(r, &f);
    assert_int_equal(json_array_size(json_object_get(page, "events")), 21);
    json_decref(page);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM evblocks WHERE ts < %ld", now - 3600);
    assert_int_equal(count_of(p, sql), 0);
    assert_true(count_of(p, "SELECT count(*) FROM evblocks") >= 1);
    scratch_close(r, d, p);
}

/* The server's event hook, as the repository module's: the event and what
 * the streaming reader read of it.  Each sample read from the fields is
 * also read from its text: the two must be the same, member by member. */
typedef struct handover {
    repo *r;
    int events, with_fields, compared;
} handover;

static void same_str(const char *a, const char *b, const char *what)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
        fail_msg("%s: fields '%s', text '%s'", what, a ? a : "(null)", b ? b : "(null)");
}

static void same_num(double a, double b, const char *what)
{
    if (!(isnan(a) && isnan(b)) && a != b) fail_msg("%s: fields %.17g, text %.17g", what, a, b);
}

static void hand_over(server *s, const char *json, size_t len, const server_event_fields *f,
                      void *arg)
{
    (void)s;
    handover *h = arg;
    h->events++;
    if (f) {
        h->with_fields++;
        static repo_flat a, b;
        jread jr;
        jread_init(&jr, NULL, 0);
        int ra = repo_flat_of(f, &a), rb = repo_flat_read(&jr, json, len, &b);
        jread_free(&jr);
        assert_int_equal(rb, 1); /* what the streaming reader reads is valid JSON */
        if (ra) {
            h->compared++;
            same_str(a.name, b.name, "name"), same_str(a.wf, b.wf, "wf");
            same_str(a.job, b.job, "job"), same_str(a.label, b.label, "label");
            same_str(a.step, b.step, "step"), same_str(a.task, b.task, "task");
            same_str(a.s.host, b.s.host, "host"), same_str(a.s.exe, b.s.exe, "exe");
            same_str(a.s.xformation, b.s.xformation, "xformation");
            same_str(a.s.batch_id, b.s.batch_id, "batch");
            assert_int_equal(a.has_rank, b.has_rank);
            assert_int_equal(a.has_pid, b.has_pid);
            if (a.has_rank) assert_int_equal(a.rank, b.rank);
            if (a.has_pid) assert_int_equal(a.pid, b.pid);
            const double *x = &a.s.ts, *y = &b.s.ts;
            for (int i = 0; i < 10; i++) same_num(x[i], y[i], "a number (ts .. wchar)");
        }
    }
    assert_int_equal(repo_add_fields(h->r, json, len, f), 0);
}

/* Samples whose members take the other names, or are of other types. */
static int odd(int t, char *buf, size_t len)
{
    static const char *const shapes[] = {
        "\"Hostname\":\"hx\",\"JobID\":\"E2\",\"xwf.id\":\"XW\",\"dax_label\":\"D\","
        "\"pid\":7",
        "\"Hostname\":\"hx\",\"JobID\":\"E2\",\"xwf.id\":\"XW\",\"pid\":7,"
        "\"exe\":\"/bin/e\",\"xformation\":\"tr\",\"rank\":1,\"elapsed\":%d.5",
        "\"hostname\":\"he\",\"job_id\":\"e\",\"pid\":7,\"exe\":\"\\/bin\\/esc\"",
        "\"hostname\":\"he\",\"job_id\":\"e\",\"pid\":7,\"exe\":\"\",\"rss\":-0,"
        "\"utime\":1e2,\"cg_memory_anon\":%d,\"cg_memory_shmem\":1,\"cg_memory_peak\":9",
        "\"hostname\":\"he\",\"job_id\":\"e\",\"pid\":7.0,\"tags\":{\"slurm_task\":\"2\","
        "\"slurm_step\":%d,\"team\":\"t\"}",
        "\"hostname\":\"he\",\"job_id\":\"e\",\"pid\":\"7\",\"rank\":\"1\",\"rss\":\"%d\"",
        "\"hostname\":\"he\",\"job_id\":\"e\",\"pid\":7,\"batch\":{\"job_id\":\"B%d\"}",
        "\"hostname\":\"he\",\"job_id\":\"e\",\"pid\":7,\"exe\":null,\"wchar\":true,"
        "\"rchar\":[%d]",
        "\"hostname\":\"he\",\"dag_job_id\":\"e\",\"job.id\":\"x\",\"pid\":7,"
        "\"slurm_step\":\"%d\",\"tags\":{}",
    };
    char members[300];
    snprintf(members, sizeof members, shapes[(t / 3) % 9], t);
    return snprintf(buf, len, "{\"event\":\"kickstart.inv.online\",\"ts\":%d,%s}", 1000 + t,
                    members);
}

static void samples_handed_over_as_fields_are_read_as_from_their_text(void **state)
{
    (void)state;
    char d1[] = "/tmp/jobscope-blk-XXXXXX", p1[256], d2[] = "/tmp/jobscope-blk-XXXXXX", p2[256];
    char d3[] = "/tmp/jobscope-blk-XXXXXX";
    repo *text = scratch(d1, p1, sizeof p1), *fields = scratch(d2, p2, sizeof p2);
    assert_non_null(mkdtemp(d3));
    server_config c;
    server_config_defaults(&c);
    free(c.store_dir);
    c.store_dir = strdup(d3);
    char err[256] = "", buf[1024];
    static const server_module *const modules[] = {&core_module, &ingest_module, NULL};
    server *s = server_create(&c, modules, err, sizeof err);
    if (!s) fail_msg("server_create: %s", err);
    handover h = {fields, 0, 0, 0};
    server_on_event(s, hand_over, &h);
    int sent = 0;
    for (int t = 0; t < 2400; t++) {
        int n = t % 3 == 2 ? odd(t, buf, sizeof buf) : mixed(t, buf, sizeof buf);
        if (memchr(buf, '\n', (size_t)n)) { /* (NDJSON: one line an event) */
            assert_int_equal(repo_add_json(text, buf, (size_t)n), 0);
            assert_int_equal(repo_add_json(fields, buf, (size_t)n), 0);
            continue;
        }
        if (server_ingest_event(s, buf, (size_t)n, err, sizeof err) < 0) continue; /* not taken */
        sent++;
        assert_int_equal(repo_add_json(text, buf, (size_t)n), 0);
        if (t % 500 == 499) repo_version(text), repo_version(fields);
    }
    assert_int_equal(h.events, sent);
    assert_true(sent > 2000);
    assert_true(h.with_fields > sent - 300); /* escaped, nested: read from the text */
    assert_true(h.compared > 2000);
    assert_true(h.with_fields < sent);
    const char *const jobs[] = {"a", "b", "c", "d", "e", "E2", NULL},
                      *const wfs[] = {"W1", "W2", "XW", NULL}, *const hosts[] = {"he", "h4"};
    assert_same_reads(text, fields, jobs, wfs, hosts);
    json_t *e2 = repo_job_row(fields, "E2", "XW");
    assert_non_null(e2);
    /* its members under their other names (Hostname, JobID, xwf.id, dax_label) */
    assert_string_equal(json_string_value(json_object_get(e2, "host")), "hx");
    assert_string_equal(json_string_value(json_object_get(e2, "xformation")), "tr");
    assert_string_equal(json_string_value(json_object_get(e2, "wf_label")), "D");
    json_decref(e2);
    assert_true(count_of(p2, "SELECT count(*) FROM evblocks") > 3);
    server_destroy(s);
    server_config_free(&c);
    snprintf(buf, sizeof buf, "rm -rf %s", d3);
    assert_int_equal(system(buf), 0);
    scratch_close(text, d1, p1);
    scratch_close(fields, d2, p2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_read_of_blocks_answers_as_rows_of_their_own),
        cmocka_unit_test(a_repository_from_before_blocks_opens_and_goes_on),
        cmocka_unit_test(blocks_keep_samples_as_differences_and_whole_ones_still_read),
        cmocka_unit_test(events_are_paged_by_id_across_windows_of_blocks),
        cmocka_unit_test(retention_cuts_inside_a_block),
        cmocka_unit_test(samples_handed_over_as_fields_are_read_as_from_their_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
