/* util/: one size parser for every option (4G and 4GiB alike), one
 * user:pass@ scanner, one monotonic clock, one logger that reports a
 * repeated failure once (and names a service with the time), one rule for
 * series names, one way to grow an array, one in-memory hash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/size.h"
#include "util/userinfo.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/intern.h"
#include "util/series_name.h"
#include "cli/options.h"
#include "limits/limits.h"

static double sz(const char *s)
{
    double v;
    return size_parse(s, &v) == 0 ? v : -1;
}

static void sizes_accept_binary_units_with_or_without_ib(void **state)
{
    assert_true(sz("512") == 512);
    assert_true(sz("64K") == 65536);
    assert_true(sz("4G") == 4294967296.0);
    assert_true(sz("4GiB") == 4294967296.0);
    assert_true(sz("4gib") == 4294967296.0);
    assert_true(sz("4GB") == 4294967296.0);
    assert_true(sz("1.5M") == 1572864);
    assert_true(sz("10B") == 10);
    assert_true(sz("") == -1);
    assert_true(sz("G") == -1);
    assert_true(sz("-1G") == -1);
    assert_true(sz("1e3") == -1);
    assert_true(sz("4Gx") == -1);
    assert_true(sz("0") == -1);
    assert_true(sz(NULL) == -1);
}

/* --spool-max and --limit memory= read sizes the same way */
static void spool_max_and_limits_agree(void **state)
{
    const char *const cases[] = {"4G", "4GiB", "10M", "1.5K", "123", "4GiBx", "x", "0.1"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double lim;
        long long spool = options_parse_size(cases[i]);
        int rc = limits_parse_bytes(cases[i], &lim);
        if (rc == 0)
            assert_int_equal(spool, (long long)lim);
        else
            assert_int_equal(spool, -1);
    }
    assert_int_equal(options_parse_size("4GiB"), 4294967296LL);
}

static void userinfo_is_found_up_to_the_last_at_before_the_path(void **state)
{
    url_userinfo u;
    const char *url = "amqps://user:p@ss@host:5671/vhost/ex?k=a@b";
    assert_int_equal(url_scan_userinfo(url, &u), 0);
    assert_ptr_equal(u.auth, url + 8);
    assert_ptr_equal(u.at, url + 17);
    assert_ptr_equal(u.colon, url + 12);
    assert_int_equal(*u.end, '/');
    assert_int_equal(url_scan_userinfo("http://host/a@b", &u), 0);
    assert_null(u.at);
    assert_null(u.colon);
    assert_int_equal(url_scan_userinfo("http://bob@host", &u), 0);
    assert_non_null(u.at);
    assert_null(u.colon);
    assert_int_equal(url_scan_userinfo("/no/scheme", &u), -1);
}

static void the_monotonic_clock_does_not_go_back(void **state)
{
    double a = now_mono();
    long ams = now_mono_ms();
    usleep(20000);
    double b = now_mono();
    assert_true(b - a >= 0.015);
    assert_true(now_mono_ms() - ams >= 15);
    struct timespec ts;
    mono_deadline(&ts, 1.5);
    double d = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    assert_true(d - b >= 1.49 && d - b < 1.6);
    assert_true(now_epoch() > 1.6e9);
}

/* stderr into a pipe while f runs; returns what was written */
static char *capture(void (*f)(void))
{
    static char buf[4096];
    int p[2], saved = dup(2);
    assert_int_equal(pipe(p), 0);
    dup2(p[1], 2);
    f();
    dup2(saved, 2);
    close(saved);
    close(p[1]);
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}

static void log_some(void)
{
    log_once c = {0};
    js_log(0, "x", "hidden %d", 1);
    js_log(1, NULL, "plain %d", 2);
    js_log(1, "cgroup", "topic %s", "three");
    for (int i = 0; i < 5; i++) js_log_once(&c, 1, "gpu", "failed %d", i);
    js_log_release(&c);
    js_log_once(&c, 1, "gpu", "failed again");
    js_log_once(&c, 1, "gpu", "and again");
}

static void a_repeated_failure_is_reported_once_until_released(void **state)
{
    assert_string_equal(capture(log_some), "jobscope: plain 2\n"
                                           "jobscope: cgroup: topic three\n"
                                           "jobscope: gpu: failed 0\n"
                                           "jobscope: gpu: failed again\n");
}

static void log_as_a_service(void)
{
    js_log_identity("jobscope serve", 1);
    js_log(1, "peers", "%d peer(s)", 2);
    js_log_identity(NULL, 0);
    js_log(1, NULL, "back");
}

static void a_service_names_itself_and_stamps_each_line_with_utc_time(void **state)
{
    const char *out = capture(log_as_a_service);
    /* 2026-11-25T10:00:00Z jobscope serve: peers: 2 peer(s) */
    assert_int_equal(strlen(out) > 21, 1);
    assert_true(out[4] == '-' && out[10] == 'T' && out[19] == 'Z' && out[20] == ' ');
    assert_string_equal(out + 21, "jobscope serve: peers: 2 peer(s)\njobscope: back\n");
}

static void series_names_follow_opentsdb(void **state)
{
    assert_true(series_name_valid("kickstart.inv.online.rss", 24));
    assert_true(series_name_valid("a-b_c/d.e", 9));
    assert_true(series_name_valid("\xc3\xa9t\xc3\xa9", 5)); /* Unicode letters (any byte >= 0x80) */
    assert_false(series_name_valid("", 0));
    assert_false(series_name_valid("a b", 3));
    assert_false(series_name_valid("a,b", 3));
    char longname[SERIES_NAME_MAX + 2];
    memset(longname, 'x', sizeof longname);
    assert_true(series_name_valid(longname, SERIES_NAME_MAX));
    assert_false(series_name_valid(longname, SERIES_NAME_MAX + 1));
    char made[] = "jobscope.metric.my loss:1/\xc3\xa9";
    series_name_clean(made);
    assert_string_equal(made, "jobscope.metric.my_loss_1/__");
}

static void arrays_grow_by_doubling_and_report_failure_once(void **state)
{
    size_t cap = 0;
    int oom = 0;
    int *v = NULL;
    for (int i = 0; i < 1000; i++) {
        v = grow_array(v, &cap, (size_t)i + 1, sizeof *v, &oom);
        v[i] = i;
    }
    assert_false(oom);
    assert_int_equal(cap, 1024);
    assert_int_equal(v[999], 999);
    int *same = grow_array(v, &cap, SIZE_MAX / 2, sizeof *v, &oom); /* cannot be had */
    assert_true(oom);
    assert_ptr_equal(same, v);
    assert_int_equal(cap, 1024);
    free(v);
}

static void the_hash_depends_on_every_byte_and_the_length(void **state)
{
    const char a[] = "kickstart.inv.online.rss", b[] = "kickstart.inv.online.rsS";
    assert_true(hash_bytes(a, 24) == hash_bytes(a, 24));
    assert_true(hash_bytes(a, 24) != hash_bytes(b, 24));
    assert_true(hash_bytes(a, 23) != hash_bytes(a, 24));
    assert_true(hash_bytes("", 0) != hash_bytes("\0", 1));
    /* every byte of every length counts, the tail's too */
    for (size_t n = 1; n <= 24; n++)
        for (size_t i = 0; i < n; i++) {
            char c[24];
            memcpy(c, a, n);
            c[i] ^= 0x20;
            assert_true(hash_bytes(a, n) != hash_bytes(c, n));
        }
}

static void a_string_is_copied_once_and_found_again(void **state)
{
    intern_table t = {0};
    char buf[32];
    const char *first = intern_get(&t, "host", 4);
    assert_string_equal(first, "host");
    for (int i = 0; i < 5000; i++) { /* many, so that the table grows */
        snprintf(buf, sizeof buf, "node%04d", i);
        assert_string_equal(intern_get(&t, buf, strlen(buf)), buf);
    }
    assert_ptr_equal(intern_get(&t, "hostname", 4), first); /* by length: "host" */
    assert_ptr_not_equal(intern_get(&t, "hos", 3), first);
    assert_int_equal(t.n, 5002);
    intern_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_accept_binary_units_with_or_without_ib),
        cmocka_unit_test(spool_max_and_limits_agree),
        cmocka_unit_test(userinfo_is_found_up_to_the_last_at_before_the_path),
        cmocka_unit_test(the_monotonic_clock_does_not_go_back),
        cmocka_unit_test(a_repeated_failure_is_reported_once_until_released),
        cmocka_unit_test(a_service_names_itself_and_stamps_each_line_with_utc_time),
        cmocka_unit_test(series_names_follow_opentsdb),
        cmocka_unit_test(arrays_grow_by_doubling_and_report_failure_once),
        cmocka_unit_test(the_hash_depends_on_every_byte_and_the_length),
        cmocka_unit_test(a_string_is_copied_once_and_found_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
