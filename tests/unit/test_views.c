/* test_views.c — unit tests of the views' building blocks: the percentile
 * definition and the size/duration parsers stats relies on, the job loader
 * (jobscope samples, kickstart traces without cpu_percent, JoReMon rows
 * merged by timestamp, rates from cumulative counters), and the events
 * repository (jobs from jobscope and stampede events, filters, paging,
 * unknown fields kept). */
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

#include "report/jobdata.h"
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

static void repository_joins_jobscope_and_stampede_events(void **state)
{
    (void)state;
    char dir[] = "/tmp/jobscope-repo-XXXXXX", path[256], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/repo.sqlite", dir);
    repo *r = repo_open(path, err, sizeof err);
    assert_non_null(r);
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

    repo_close(r);
    unlink(path);
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", path); unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path); unlink(wal);
    rmdir(dir);
}

static void repository_retention_drops_old_events_and_jobs(void **state)
{
    (void)state;
    char dir[] = "/tmp/jobscope-repo-XXXXXX", path[256], err[256], ev[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/repo.sqlite", dir);
    repo *r = repo_open(path, err, sizeof err);
    assert_non_null(r);
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
    repo_close(r);
    char f2[300];
    unlink(path);
    snprintf(f2, sizeof f2, "%s-wal", path); unlink(f2);
    snprintf(f2, sizeof f2, "%s-shm", path); unlink(f2);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentile_interpolates_between_order_statistics),
        cmocka_unit_test(sizes_and_durations_parse_like_batch_systems),
        cmocka_unit_test(kickstart_traces_get_cpu_percent_and_rates_from_counters),
        cmocka_unit_test(joremon_rows_merge_into_one_sample),
        cmocka_unit_test(repository_joins_jobscope_and_stampede_events),
        cmocka_unit_test(repository_retention_drops_old_events_and_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
