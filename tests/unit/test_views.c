/* test_views.c — unit tests of the views' building blocks: the percentile
 * definition and the size/duration parsers stats relies on, the job loader
 * (jobscope samples, kickstart traces without cpu_percent, JoReMon rows
 * merged by timestamp, rates from cumulative counters), and the events
 * repository (jobs from jobscope and stampede events, filters, paging,
 * unknown fields kept), and a job of several runs (a Slurm job's steps,
 * tasks and nodes; a job run again) kept apart and summed as a whole. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "report/assess.h"
#include "report/jobdata.h"
#include "report/jobset.h"
#include "repo/repo.h"

static void percentile_interpolates_between_order_statistics(void **state)
{
    (void)state;
    double v[] = { 1, 2, 3, 4, 10 };
    assert_true(fabs(jd_percentile(v, 5, 0.5) - 3) < 1e-12);
    assert_true(fabs(jd_percentile(v, 5, 0.9) - 7.6) < 1e-12);     /* 4 + 0.6 * (10 - 4) */
    assert_true(fabs(jd_percentile(v, 5, 1.0) - 10) < 1e-12);
    assert_true(fabs(jd_percentile(v, 1, 0.99) - 1) < 1e-12);
    assert_true(isnan(jd_percentile(v, 0, 0.5)));
}

static void sizes_and_durations_parse_like_batch_systems(void **state)
{
    (void)state;
    assert_true(jd_parse_size_mib("4096") == 4096.0 * 1048576);     /* bare = MiB */
    assert_true(jd_parse_size_mib("4G") == 4.0 * 1073741824);
    assert_true(jd_parse_size_mib("1.5GiB") == 1.5 * 1073741824);
    assert_true(jd_parse_size_mib("512MB") == 512.0 * 1048576);
    assert_true(isnan(jd_parse_size_mib("4Q")));
    assert_true(isnan(jd_parse_size_mib("")));
    assert_true(jd_parse_duration("1h30m") == 5400);
    assert_true(jd_parse_duration("01:30:00") == 5400);
    assert_true(jd_parse_duration("1-00:00:10") == 86410);
    assert_true(jd_parse_duration("90") == 90);
    assert_true(isnan(jd_parse_duration("abc")));
}

static void add(jobdata *j, const char *json)
{
    json_error_t e;
    json_t *ev = json_loads(json, 0, &e);
    assert_non_null(ev);
    assert_int_equal(jobdata_add(j, ev), 0);
    json_decref(ev);
}

static void kickstart_traces_get_cpu_percent_and_rates_from_counters(void **state)
{
    (void)state;
    jobdata j;
    jobdata_init(&j);
    add(&j, "{\"event\":\"kickstart.inv.online\",\"ts\":100,\"utime\":1,\"stime\":0,\"rss\":1000,"
            "\"rchar\":0,\"wchar\":0,\"bread\":0,\"bwrite\":0,\"dag_job_id\":\"a_ID1\",\"hostname\":\"w\"}");
    add(&j, "{\"event\":\"kickstart.inv.online\",\"ts\":110,\"utime\":16,\"stime\":5,\"rss\":3000,"
            "\"rchar\":1000,\"wchar\":500,\"bread\":100,\"bwrite\":50,\"dag_job_id\":\"a_ID1\"}");
    jobdata_finish(&j);
    assert_string_equal(j.sum.job_id, "a_ID1");
    assert_string_equal(j.sum.type, "kickstart");
    assert_int_equal(j.n, 2);
    assert_true(fabs(j.col[JD_CPU][1] - 200) < 1e-9);          /* 20 s of CPU in 10 s */
    assert_true(fabs(j.col[JD_RCHAR_RATE][1] - 100) < 1e-9);
    assert_true(fabs(j.col[JD_WBYTES_RATE][1] - 5) < 1e-9);
    assert_true(j.sum.peak_mem == 3000 * 1024.0);
    assert_true(j.sum.duration == 10 && j.sum.cpu_time == 21);
    assert_true(fabs(j.sum.cpu_eff - 2.1) < 1e-9);              /* one core assumed */
    jobdata_free(&j);
}

static void joremon_rows_merge_into_one_sample(void **state)
{
    (void)state;
    jobdata j;
    jobdata_init(&j);
    const char *t1 = "2020-02-05T02:11:55.5+01:00", *t2 = "2020-02-05T02:12:00.5+01:00";
    char buf[512];
    for (int k = 0; k < 2; k++) {
        const char *t = k ? t2 : t1;
        snprintf(buf, sizeof buf, "{\"JobID\":\"123\",\"Type\":\"joremon.CPUInfo\",\"Timestamp\":\"%s\","
                 "\"CPUTime\":%d,\"ClockTime\":%d,\"CPUPercent\":50,\"Hostname\":\"cca\"}", t, 1 + k * 5, 10 + k * 5);
        add(&j, buf);
        snprintf(buf, sizeof buf, "{\"JobID\":\"123\",\"Type\":\"joremon.MemInfo\",\"Timestamp\":\"%s\","
                 "\"RSS\":%d,\"PeakRSS\":%d,\"VMS\":1}", t, 1000 + k, 2000);
        add(&j, buf);
        snprintf(buf, sizeof buf, "{\"JobID\":\"123\",\"Type\":\"joremon.IOInfo\",\"Timestamp\":\"%s\","
                 "\"RBytesTotal\":%d,\"WBytesTotal\":0,\"RBytesFromDisk\":0,\"WBytesFromDisk\":0}", t, k * 500);
        add(&j, buf);
    }
    jobdata_finish(&j);
    assert_int_equal(j.n, 2);
    assert_true(j.col[JD_TS][0] == 1580865115.5);                /* 01:11:55.5 UTC */
    assert_true(j.col[JD_RSS][1] == 1001 && j.col[JD_CPU][1] == 50);
    assert_true(fabs(j.col[JD_RCHAR_RATE][1] - 100) < 1e-9);
    assert_string_equal(j.sum.job_id, "123");
    assert_true(j.sum.peak_mem == 2000 && j.sum.cpu_time == 6 && j.sum.duration == 15);
    jobdata_free(&j);
}

/* A repository in a fresh temporary directory (dir: "/tmp/jobscope-repo-XXXXXX"). */
static repo *scratch_repo(char *dir, char *path, size_t len)
{
    char err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/repo.sqlite", dir);
    repo *r = repo_open(path, err, sizeof err);
    assert_non_null(r);
    return r;
}

static void scratch_repo_close(repo *r, const char *dir, const char *path)
{
    char f[300];
    repo_close(r);
    unlink(path);
    snprintf(f, sizeof f, "%s-wal", path);
    unlink(f);
    snprintf(f, sizeof f, "%s-shm", path);
    unlink(f);
    rmdir(dir);
}

static void repository_joins_jobscope_and_stampede_events(void **state)
{
    (void)state;
    char dir[] = "/tmp/jobscope-repo-XXXXXX", path[256];
    repo *r = scratch_repo(dir, path, sizeof path);
    const char *evs[] = {
        "{\"event\":\"stampede.xwf.start\",\"ts\":10,\"xwf_id\":\"W\"}",
        "{\"event\":\"stampede.job_inst.main.start\",\"ts\":11,\"xwf_id\":\"W\",\"job_id\":\"j_ID1\"}",
        "{\"event\":\"jobscope.start\",\"ts\":11.5,\"wf_uuid\":\"W\",\"dag_job_id\":\"j_ID1\",\"job_id\":\"99.0\","
        "\"hostname\":\"h1\",\"exe\":\"/bin/j\",\"cpus_available\":2}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":12,\"wf_uuid\":\"W\",\"dag_job_id\":\"j_ID1\",\"job_id\":\"99.0\","
        "\"elapsed\":0.5,\"rss\":100,\"utime\":0.2,\"stime\":0,\"rchar\":0,\"wchar\":0,\"cpu_percent\":40}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":13,\"wf_uuid\":\"W\",\"dag_job_id\":\"j_ID1\",\"job_id\":\"99.0\","
        "\"elapsed\":1.5,\"rss\":300,\"utime\":1.2,\"stime\":0,\"rchar\":10,\"wchar\":0,\"cpu_percent\":100}",
        "{\"event\":\"stampede.job_inst.main.end\",\"ts\":14,\"xwf_id\":\"W\",\"job_id\":\"j_ID2\",\"exitcode\":2,"
        "\"weird\":{\"a\":[1,2]}}",
    };
    for (size_t i = 0; i < sizeof evs / sizeof *evs; i++)
        assert_int_equal(repo_add_json(r, evs[i], strlen(evs[i])), 0);

    repo_job_filter f = { .wf = "W" };
    json_t *jobs = repo_jobs(r, &f);
    assert_int_equal(json_integer_value(json_object_get(jobs, "total")), 2);
    json_decref(jobs);
    repo_job_filter running = { .state = "running" };
    jobs = repo_jobs(r, &running);
    json_t *j1 = json_array_get(json_object_get(jobs, "jobs"), 0);
    assert_string_equal(json_string_value(json_object_get(j1, "job_id")), "j_ID1");
    assert_string_equal(json_string_value(json_object_get(j1, "host")), "h1");
    assert_true(json_number_value(json_object_get(j1, "peak_mem")) == 300 * 1024.0);
    assert_int_equal(json_integer_value(json_object_get(j1, "samples")), 2);
    json_decref(jobs);
    repo_job_filter failed = { .state = "failed" };
    jobs = repo_jobs(r, &failed);
    assert_int_equal(json_integer_value(json_object_get(jobs, "total")), 1);
    json_decref(jobs);

    json_t *ev = repo_job_events(r, "j_ID1", NULL, 0);
    assert_int_equal(json_array_size(ev), 4);                    /* stampede + start + 2 samples */
    json_decref(ev);
    assert_null(repo_job_events(r, "nope", NULL, 0));

    json_t *w = repo_workflow(r, "W");
    assert_non_null(w);
    assert_string_equal(json_string_value(json_object_get(json_object_get(w, "workflow"), "state")), "running");
    json_t *last = json_array_get(json_object_get(w, "events"), json_array_size(json_object_get(w, "events")) - 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(json_object_get(last, "weird"), "a"), 1)), 2);
    json_decref(w);

    repo_event_filter ef = { .name = "stampede.*", .limit = 2 };
    json_t *page = repo_events(r, &ef);
    assert_int_equal(json_array_size(json_object_get(page, "events")), 2);
    ef.after = json_integer_value(json_object_get(page, "next"));
    json_decref(page);
    page = repo_events(r, &ef);
    assert_int_equal(json_array_size(json_object_get(page, "events")), 1);
    assert_true(json_is_null(json_object_get(page, "next")));
    json_decref(page);

    scratch_repo_close(r, dir, path);
}

/* A deterministic mix of a collector's events: starts, samples of several
 * runs (two hosts of one job, a Slurm task, no hostname), fields missing,
 * samples out of order and after the end, stampede events in between. */
static int mixed_event(int t, unsigned *seed, char *buf, size_t len)
{
    *seed = *seed * 1103515245u + 12345u;
    unsigned x = *seed >> 8;
    int k = (int)(x % 6), n = 0;
    char id[32], wf[48] = "", host[48] = "", extra[200] = "";
    snprintf(id, sizeof id, "j%d", k);
    if (k % 2) snprintf(wf, sizeof wf, "\"wf_uuid\":\"W%d\",\"wf_label\":\"L%d\",", k, k);
    if (k == 5)
        snprintf(host, sizeof host, "\"hostname\":\"h5%c\",", x & 1 ? 'a' : 'b');
    else if (k != 4 || x % 3)
        snprintf(host, sizeof host, "\"hostname\":\"h%d\",", k);
    if (k == 0)
        snprintf(
            extra, sizeof extra,
            "\"tags\":{\"slurm_step\":\"0\",\"slurm_task\":\"1\"},\"batch\":{\"job_id\":\"B7\"},");
    if (k == 3 && x % 4 == 0) snprintf(extra, sizeof extra, "\"xformation\":\"x%u\",", x % 7);
    double ts = 1000 + t + (x % 10 == 0 ? -5.5 : 0);
    if (t < 6 || (k == 2 && t == 150)) /* starts, one end */
        n = snprintf(
            buf, len,
            "{\"event\":\"%s\",\"ts\":%g,%s%s%s\"job_id\":\"%s\",\"pid\":%d,\"exe\":\"/bin/e%d\","
            "\"cmd\":\"e%d\",\"user\":\"u\",\"cpus_available\":%d}",
            t < 6 ? "jobscope.start" : "jobscope.end", ts, wf, host, extra, id, 100 + k, k, k,
            1 + k % 3);
    else if (k == 1 && x % 9 == 0)
        n = snprintf(buf, len,
                     "{\"event\":\"stampede.job_inst.main.%s\",\"ts\":%g,\"xwf_id\":\"W1\",\"job_"
                     "id\":\"j1\"%s}",
                     x % 2 ? "start" : "end", ts, x % 2 ? "" : ",\"exitcode\":0");
    else
        n = snprintf(
            buf, len,
            "{\"event\":\"kickstart.inv.online\",%s%s%s\"job_id\":\"%s\",\"pid\":%d,%s"
            "\"rss\":%u,%s\"utime\":%g,%s\"rchar\":%u,\"wchar\":%u%s%s}",
            wf, host, extra, id, 100 + k, x % 13 ? "" : "\"exe\":\"/bin/other\",", x % 5000,
            x % 7 ? "" : "\"cg_memory_anon\":4096,\"cg_memory_shmem\":10,\"cg_memory_peak\":9000,",
            t * 0.25, x % 11 ? "\"stime\":0.5," : "", x % 3000, x % 2000,
            x % 5 ? ",\"elapsed\":3.5" : "", x % 17 ? "" : ",\"load\":null");
    if (!strstr(buf, "\"ts\"") && n > 1) /* a sample's time, now and then under its other name */
        n += snprintf(buf + n - 1, len - (size_t)n + 1, ",\"%s\":%g}", x % 19 ? "ts" : "timestamp",
                      ts) -
             1;
    return n;
}

/* The jobs list after a batch written at once (samples folded into their
 * job's row) is the list after the same events written one at a time. */
static void samples_folded_in_a_batch_leave_the_rows_of_one_at_a_time(void **state)
{
    (void)state;
    char d1[] = "/tmp/jobscope-repo-XXXXXX", p1[256], d2[] = "/tmp/jobscope-repo-XXXXXX", p2[256];
    repo *one = scratch_repo(d1, p1, sizeof p1), *batch = scratch_repo(d2, p2, sizeof p2);
    unsigned seed = 7;
    char buf[1024];
    for (int t = 0; t < 1500; t++) {
        int n = mixed_event(t, &seed, buf, sizeof buf);
        json_t *ev = json_loadb(buf, (size_t)n, 0, NULL);
        assert_non_null(ev);
        assert_int_equal(repo_add(one, ev), 0);
        json_decref(ev);
        assert_int_equal(repo_add_json(batch, buf, (size_t)n), 0);
    }
    /* lines the text reader must read as jansson does, or leave to it */
    const char *odd[] = {
        "{\"event\":\"kickstart.inv.online\",\"ts\":5000,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5001,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1,"
        "\"rss\":5,\"rss\":900}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5002,\"hostname\":\"h\",\"job\\u005fid\":\"t\",\"pid\":1,"
        "\"rss\":7,\"exe\":\"/bin/\\u00e9\"}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5003,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1,"
        "\"rss\":1000} x",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5004,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1,"
        "\"tags\":{\"slurm_step\":{\"a\":1}},\"rss\":3,\"batch\":{\"job_id\":\"\"}}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5005,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1,"
        "\"rss\":\"1200\",\"utime\":-0,\"stime\":0}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5006,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1.0,"
        "\"rss\":2}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5007,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1,"
        "\"utime\":1e400}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5008,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1,"
        "\"rchar\":\"\\ud800\"}",
        "[{\"event\":\"kickstart.inv.online\",\"ts\":5009,\"hostname\":\"h\",\"job_id\":\"t\"}]",
        "{\"event\":\"kickstart.inv.online\",\"ts\":5010,\"hostname\":\"h\",\"job_id\":\"t\",\"pid\":1,"
        "\"rss\":4000,\"wchar\":17,\"tags\":{\"slurm_step\":\"\"},\"rank\":0}  \n",
    };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        json_t *ev = json_loads(odd[i], 0, NULL);
        if (ev) repo_add(one, ev);
        json_decref(ev);
        assert_int_equal(repo_add_json(batch, odd[i], strlen(odd[i])), 0);
    }
    json_t *ea = repo_job_events(one, "t", NULL, 0), *eb = repo_job_events(batch, "t", NULL, 0);
    assert_int_equal(json_array_size(ea), 7); /* 1e400, a lone surrogate, x, an array: none */
    assert_true(json_equal(ea, eb));
    json_decref(ea), json_decref(eb);

    repo_job_filter f = {.sort = "job", .limit = 100};
    json_t *a = repo_jobs(one, &f), *b = repo_jobs(batch, &f);
    json_object_del(a, "version");
    json_object_del(b, "version");
    char *ta = json_dumps(a, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    char *tb = json_dumps(b, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    assert_int_equal(json_integer_value(json_object_get(a, "total")), 7);
    if (strcmp(ta, tb)) fprintf(stderr, "one at a time: %s\nbatched:       %s\n", ta, tb);
    assert_string_equal(ta, tb);
    free(ta), free(tb);
    json_decref(a), json_decref(b);
    scratch_repo_close(one, d1, p1);
    scratch_repo_close(batch, d2, p2);
}

static void repository_retention_drops_old_events_and_jobs(void **state)
{
    (void)state;
    char dir[] = "/tmp/jobscope-repo-XXXXXX", path[256], ev[256];
    repo *r = scratch_repo(dir, path, sizeof path);
    repo_set_retention(r, 3600);
    const char *old = "{\"event\":\"jobscope.start\",\"ts\":1000,\"job_id\":\"old\"}";
    snprintf(ev, sizeof ev, "{\"event\":\"jobscope.start\",\"ts\":%ld,\"job_id\":\"new\"}", (long)time(NULL));
    assert_int_equal(repo_add_json(r, old, strlen(old)), 0);
    assert_int_equal(repo_add_json(r, ev, strlen(ev)), 0);
    repo_job_filter f = { 0 };
    json_t *jobs = repo_jobs(r, &f);          /* a read writes the queue, then prunes */
    assert_int_equal(json_integer_value(json_object_get(jobs, "total")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(jobs, "jobs"), 0),
                                                          "job_id")), "new");
    json_decref(jobs);
    repo_event_filter ef = { 0 };
    json_t *page = repo_events(r, &ef);
    assert_int_equal(json_array_size(json_object_get(page, "events")), 1);
    json_decref(page);
    scratch_repo_close(r, dir, path);
}

/* ---- a job of several runs ---- */

static void an_event_goes_to_its_run_and_a_new_main_pid_is_a_new_attempt(void **state)
{
    (void)state;
    int adopt;
    assert_int_equal(jobset_choose(NULL, 0, 100, 1, &adopt), -1);          /* the first run */
    jobset_ref one[] = {{100, 1}};
    assert_int_equal(jobset_choose(one, 1, 100, 0, &adopt), 0);            /* its samples */
    assert_int_equal(jobset_choose(one, 1, -1, 0, &adopt), 0);             /* a custom metric */
    assert_int_equal(jobset_choose(one, 1, 200, 0, &adopt), -1);           /* another main process */
    assert_int_equal(jobset_choose(one, 1, 100, 1, &adopt), -1);           /* started again, same pid */
    jobset_ref nopid[] = {{-1, 0}};
    assert_int_equal(jobset_choose(nopid, 1, 300, 1, &adopt), 0);          /* learns its pid */
    assert_true(adopt);
    jobset_ref two[] = {{100, 1}, {200, 1}};
    assert_int_equal(jobset_choose(two, 2, 100, 0, &adopt), 0);            /* a late event of the first */
    assert_int_equal(jobset_choose(two, 2, -1, 0, &adopt), 1);             /* no pid: the latest */
    char key[64];
    jobset_key("c1:0.3", 0, key, sizeof key);
    assert_string_equal(key, "c1:0.3");
    jobset_key("c1:0.3", 1, key, sizeof key);
    assert_string_equal(key, "c1:0.3#2");
    json_t *ev = json_loads("{\"event\":\"jobscope.start\",\"hostname\":\"c1\",\"rank\":3,\"pid\":7,"
                            "\"tags\":{\"slurm_step\":\"0\",\"slurm_task\":\"3\"}}", 0, NULL);
    long long pid;
    assert_int_equal(jobset_run_base(ev, key, sizeof key, &pid), 1);
    assert_string_equal(key, "c1:0.3");
    assert_true(pid == 7);
    json_decref(ev);
    ev = json_loads("{\"event\":\"jobscope.metric\",\"hostname\":\"c1\",\"rank\":2,\"pid\":9,"
                    "\"tags\":{\"phase\":\"x\"}}", 0, NULL);
    assert_int_equal(jobset_run_base(ev, key, sizeof key, &pid), 1);
    assert_string_equal(key, "c1:2");                                       /* a metric's tags are its own */
    assert_true(pid == -1);                                                 /* and its pid its sender's */
    json_decref(ev);
    ev = json_loads("{\"event\":\"stampede.job_inst.host.info\",\"hostname\":\"c1\"}", 0, NULL);
    assert_int_equal(jobset_run_base(ev, key, sizeof key, &pid), 0);       /* the job's, no run's */
    json_decref(ev);
}

#define MIB 1048576.0

static void part(jobset_part *p, const char *run, const char *base, const char *host, const char *step,
                 double start, double dur, double cpu, double peak_mib, int exit_code)
{
    jobdata j;
    jobdata_init(&j);
    memset(p, 0, sizeof *p);
    p->sum = j.sum;
    jobdata_free(&j);
    snprintf(p->run, sizeof p->run, "%s", run);
    snprintf(p->base, sizeof p->base, "%s", base);
    snprintf(p->step, sizeof p->step, "%s", step);
    snprintf(p->sum.host, sizeof p->sum.host, "%s", host);
    snprintf(p->sum.job_id, sizeof p->sum.job_id, "500");
    snprintf(p->sum.batch_system, sizeof p->sum.batch_system, "slurm");
    snprintf(p->sum.cores_from, sizeof p->sum.cores_from, "SLURM_CPUS_ON_NODE");
    p->sum.start = start, p->sum.duration = dur, p->sum.end = start + dur;
    p->sum.cpu_time = cpu, p->sum.peak_mem = peak_mib * MIB, p->sum.threads_peak = 1;
    p->sum.exit_code = exit_code, p->sum.has_end = 1, p->sum.cores = 4;
    p->node_cores = 4, p->node_mem = 4096 * MIB, p->pid = -1;
}

/* Two nodes of 4 CPUs and 4 GiB: the batch script on c1 (a first attempt
 * that failed, then the one that counts), step 0's four tasks two a node,
 * step 1 on c1 after it.  By hand: CPU 1 + 4 x 30 + 10 = 131 s of 8 CPUs x
 * 100 s; memory c1 10 + 500 + 500 (0..45 s) or 10 + 1000 (50..90 s): 1010
 * MiB, c2 1000: 2010 MiB of 8 GiB; step 0 kept 1.5 CPUs of c1 busy with two
 * tasks: 0.75 a task, so one CPU each; --mem = 1010 x 1.1 = 1111 MiB;
 * --time = 110 s -> 2 minutes. */
static void a_whole_job_sums_its_nodes_and_the_runs_alive_at_once(void **state)
{
    (void)state;
    jobset_part p[8];
    part(&p[0], "c1:batch.0", "c1:batch.0", "c1", "batch", -200, 50, 99, 3000, 1);
    part(&p[1], "c1:batch.0#2", "c1:batch.0", "c1", "batch", 0, 100, 1, 10, 0);
    part(&p[2], "c1:0.0", "c1:0.0", "c1", "0", 5, 40, 30, 500, 0);
    part(&p[3], "c1:0.1", "c1:0.1", "c1", "0", 5, 40, 30, 500, 0);
    part(&p[4], "c2:0.2", "c2:0.2", "c2", "0", 5, 40, 30, 500, 0);
    part(&p[5], "c2:0.3", "c2:0.3", "c2", "0", 5, 40, 30, 500, 0);
    part(&p[6], "c1:1.0", "c1:1.0", "c1", "1", 50, 40, 10, 1000, 0);
    jobset_order(p, NULL, 7);
    assert_string_equal(p[0].run, "c1:batch.0");
    assert_true(p[0].superseded && !p[1].superseded);
    jd_summary w;
    jobset_whole(p, 7, &w);
    assert_true(w.nodes == 2 && w.cores == 8 && w.alloc_mem == 8192 * MIB);
    assert_string_equal(w.cores_from, "slurm_alloc_cores");
    assert_string_equal(w.alloc_mem_from, "slurm_alloc_mem_mb");
    assert_true(w.cpu_time == 131 && w.duration == 100 && w.start == 0);
    assert_true(fabs(w.cpu_eff - 131.0 / 800) < 1e-12);
    assert_true(w.peak_mem == 2010 * MIB && w.node_peak_mem == 1010 * MIB);
    assert_true(w.tasks_per_node == 2 && fabs(w.want_cores - 0.75) < 1e-12);
    assert_true(w.has_end && w.exit_code == 0);                         /* the batch script's, as Slurm */
    jobdata j;
    jobdata_init(&j);
    j.sum = w;
    json_t *a = assess_json(&j, ASSESS_MARGIN);
    assert_string_equal(json_string_value(json_object_get(json_object_get(a, "next"), "slurm")),
                        "--mem=1111M --ntasks-per-node=2 --cpus-per-task=1 --time=00:02:00");
    json_decref(a);
    jobdata_free(&j);
    json_t *d = jobset_details(p, 7, &w);
    assert_int_equal(json_array_size(json_object_get(d, "runs")), 7);
    json_t *nodes = json_object_get(d, "nodes"), *steps = json_object_get(d, "steps");
    assert_int_equal(json_array_size(nodes), 2);
    assert_true(jd_num(json_array_get(nodes, 0), "peak_mem") == 1010 * MIB);
    assert_true(jd_num(json_array_get(nodes, 1), "cpu_time") == 60);
    assert_int_equal(json_array_size(steps), 3);
    assert_string_equal(jd_str(json_array_get(steps, 0), "step"), "batch");
    assert_true(jd_num(json_array_get(steps, 1), "tasks") == 4 &&
                jd_num(json_array_get(steps, 1), "peak_mem") == 2000 * MIB);
    json_decref(d);
    /* a step the OOM killer stopped: the state stays the script's, the
     * memory advice is 1.5 x what the largest node had */
    snprintf(p[6].sum.stopped_by, sizeof p[6].sum.stopped_by, "oom_kill");
    jobset_whole(p, 7, &w);
    assert_string_equal(w.oom_run, "c1:1.0");
    assert_true(w.stopped_by[0] == 0 && w.exit_code == 0);
    jobdata_init(&j);
    j.sum = w;
    jd_request r = assess_next_request(&j, ASSESS_MARGIN);
    assert_true(r.mem == 6144 * MIB);                                    /* 4096 MiB x 1.5 */
    jobdata_free(&j);
}

/* The events of one monitor, as the Slurm plugin's monitor writes them. */
static void slurm_run(repo *r, const char *job, const char *host, const char *step, int task, int pid,
                     double t0, double dur, double cpu, int rss_mib, int exit_code)
{
    char tags[512], ev[2048];
    snprintf(tags, sizeof tags,
             "\"hostname\":\"%s\",\"rank\":%d,\"job_id\":\"%s\",\"batch\":{\"system\":\"slurm\",\"job_id\":\"%s\"},"
             "\"tags\":{\"slurm_job_id\":\"%s\",\"slurm_step\":\"%s\",\"slurm_task\":\"%d\","
             "\"slurm_array_job_id\":\"77\",\"slurm_array_task_id\":\"3\","
             "\"slurm_alloc_cores\":\"0-3\",\"slurm_alloc_mem_mb\":\"4096\"}",
             host, task, job, job, job, step, task);
    snprintf(ev, sizeof ev, "{\"event\":\"jobscope.start\",\"ts\":%.3f,%s,\"pid\":%d,\"exe\":\"/bin/s%s\","
             "\"mode\":\"attach\",\"alloc_cpus\":4,\"alloc_cpus_from\":\"SLURM_CPUS_ON_NODE\"}", t0, tags, pid, step);
    assert_int_equal(repo_add_json(r, ev, strlen(ev)), 0);
    for (int k = 0; k <= 4; k++) {
        snprintf(ev, sizeof ev, "{\"event\":\"kickstart.inv.online\",\"ts\":%.3f,%s,\"pid\":%d,\"elapsed\":%.3f,"
                 "\"rss\":%d,\"utime\":%.3f,\"stime\":0,\"procs\":1,\"threads\":1,\"rchar\":0,\"wchar\":0}",
                 t0 + dur * k / 4, tags, pid, dur * k / 4, rss_mib * 1024, cpu * k / 4);
        assert_int_equal(repo_add_json(r, ev, strlen(ev)), 0);
    }
    snprintf(ev, sizeof ev, "{\"event\":\"jobscope.end\",\"ts\":%.3f,%s,\"pid\":%d,\"exe\":\"/bin/s%s\","
             "\"exit_type\":\"exited\",\"exit_code\":%d,\"start\":%.3f,\"end\":%.3f,\"duration\":%.3f,"
             "\"cpu_time\":%.3f,\"cores\":4,\"samples\":5,\"peaks\":{\"rss\":{\"value\":%d},\"threads\":{\"value\":1}},"
             "\"cgroup\":{\"cpu_usage\":%.3f}}",
             t0 + dur, tags, pid, step, exit_code, t0, t0 + dur, dur, cpu, rss_mib * 1024, cpu);
    assert_int_equal(repo_add_json(r, ev, strlen(ev)), 0);
}

static json_t *page_of(repo *r, const char *job, const char *run)
{
    return repo_job_page(r, job, NULL, run, 0, 1000);
}

static void repository_keeps_each_run_of_a_job_apart_and_answers_the_whole(void **state)
{
    (void)state;
    char dir[] = "/tmp/jobscope-repo-XXXXXX", path[256];
    repo *r = scratch_repo(dir, path, sizeof path);
    /* an ordinary job of one run */
    slurm_run(r, "42", "h1", "batch", 0, 4200, 1000, 20, 5, 50, 0);
    /* a Slurm job: the batch script, step 0 of two tasks, step 1 */
    slurm_run(r, "500", "c1", "batch", 0, 100, 2000, 100, 1, 10, 0);
    slurm_run(r, "500", "c1", "0", 0, 200, 2005, 40, 30, 500, 0);
    slurm_run(r, "500", "c1", "0", 1, 201, 2005, 40, 30, 500, 0);
    slurm_run(r, "500", "c1", "1", 0, 300, 2050, 40, 10, 1000, 0);
    /* a job run again under its id: the latest attempt counts */
    slurm_run(r, "43", "h1", "batch", 0, 10, 3000, 20, 5, 50, 1);
    slurm_run(r, "43", "h1", "batch", 0, 11, 3100, 20, 15, 60, 0);

    repo_job_filter all = {0};
    json_t *jobs = repo_jobs(r, &all);
    assert_int_equal(json_integer_value(json_object_get(jobs, "total")), 3);
    json_decref(jobs);
    repo_job_filter q = {.q = "77_3", .job = "500"};                     /* sacct's name of the element */
    jobs = repo_jobs(r, &q);
    json_t *row = json_array_get(json_object_get(jobs, "jobs"), 0);
    assert_int_equal(json_integer_value(json_object_get(jobs, "total")), 1);
    /* the row is the whole job: 1 + 2 x 30 + 10 CPU-s of 4 CPUs x 100 s,
     * 10 + 500 + 500 MiB at once */
    assert_string_equal(jd_str(row, "state"), "done");
    assert_true(jd_num(row, "cpu_time") == 71 && jd_num(row, "cores") == 4 && jd_num(row, "duration") == 100);
    assert_true(jd_num(row, "peak_mem") == 1010 * MIB);
    assert_string_equal(jd_str(row, "cores_from"), "slurm_alloc_cores");
    json_decref(jobs);
    assert_int_equal(repo_job_nruns(r, "500", NULL), 4);

    json_t *p = page_of(r, "500", NULL);
    assert_non_null(p);
    assert_int_equal(json_array_size(json_object_get(p, "runs")), 4);
    assert_int_equal(json_array_size(json_object_get(p, "nodes")), 1);
    assert_int_equal(json_array_size(json_object_get(p, "steps")), 3);
    json_t *s = json_object_get(p, "summary");
    assert_true(jd_num(s, "cpu_time") == 71 && jd_num(s, "peak_mem") == 1010 * MIB);
    assert_true(jd_num(s, "nodes") == 1 && jd_num(s, "tasks_per_node") == 2);
    char *view = repo_job_view(r, "500", NULL);                          /* what GET /api/jobs/ID keeps */
    json_t *v = json_loads(view, 0, NULL);
    assert_true(json_equal(json_object_get(v, "summary"), s));
    assert_true(json_equal(json_object_get(v, "runs"), json_object_get(p, "runs")));
    json_decref(v);
    free(view);
    json_decref(p);
    p = page_of(r, "500", "c1:0.1");                                     /* one run of it */
    assert_true(jd_num(json_object_get(p, "summary"), "cpu_time") == 30);
    assert_string_equal(jd_str(p, "run"), "c1:0.1");
    json_decref(p);
    assert_null(page_of(r, "500", "c9:0.0"));
    json_t *evs = repo_run_events(r, "500", NULL, "c1:1.0");
    assert_int_equal(json_array_size(evs), 7);
    json_decref(evs);

    /* the job of one run: answered as before, no runs */
    assert_null(page_of(r, "42", NULL));
    view = repo_job_view(r, "42", NULL);
    v = json_loads(view, 0, NULL);
    assert_null(json_object_get(v, "runs"));
    jobdata j;
    jobdata_init(&j);
    evs = repo_job_events(r, "42", NULL, 0);
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) jobdata_add(&j, e);
    jobdata_finish(&j);
    json_t *direct = jobdata_json(&j, REPO_VIEW_POINTS);
    assert_true(json_equal(json_object_get(v, "summary"), json_object_get(direct, "summary")));
    assert_true(json_equal(json_object_get(v, "assessment"), json_object_get(direct, "assessment")));
    json_decref(direct);
    jobdata_free(&j);
    json_decref(evs);
    json_decref(v);
    free(view);

    /* run again: two runs, the first superseded; the job is the second */
    assert_int_equal(repo_job_nruns(r, "43", NULL), 2);
    p = page_of(r, "43", NULL);
    json_t *runs = json_object_get(p, "runs");
    assert_string_equal(jd_str(json_array_get(runs, 0), "run"), "h1:batch.0");
    assert_true(json_is_true(json_object_get(json_array_get(runs, 0), "superseded")));
    assert_string_equal(jd_str(json_array_get(runs, 1), "run"), "h1:batch.0#2");
    assert_true(jd_num(json_object_get(p, "summary"), "cpu_time") == 15);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "summary"), "exit_code")), 0);
    json_decref(p);

    scratch_repo_close(r, dir, path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentile_interpolates_between_order_statistics),
        cmocka_unit_test(sizes_and_durations_parse_like_batch_systems),
        cmocka_unit_test(kickstart_traces_get_cpu_percent_and_rates_from_counters),
        cmocka_unit_test(joremon_rows_merge_into_one_sample),
        cmocka_unit_test(repository_joins_jobscope_and_stampede_events),
        cmocka_unit_test(samples_folded_in_a_batch_leave_the_rows_of_one_at_a_time),
        cmocka_unit_test(repository_retention_drops_old_events_and_jobs),
        cmocka_unit_test(an_event_goes_to_its_run_and_a_new_main_pid_is_a_new_attempt),
        cmocka_unit_test(a_whole_job_sums_its_nodes_and_the_runs_alive_at_once),
        cmocka_unit_test(repository_keeps_each_run_of_a_job_apart_and_answers_the_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
