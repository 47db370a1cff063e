/* Destinations: URL dispatch and password redaction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "sink/sink.h"
#include "sink/joremon.h"

static void check_redact(const char *url, const char *want)
{
    char *r = sink_redact_url(url);
    assert_string_equal(r, want);
    free(r);
}

static void passwords_are_redacted(void **state)
{
    check_redact("amqp://user:s3cret@host:5672/vhost/ex", "amqp://user:***@host:5672/vhost/ex");
    check_redact("rabbitmq://u:p@a@h:15672/api/exchanges/%2f/x/publish",
                 "rabbitmq://u:***@h:15672/api/exchanges/%2f/x/publish");
    check_redact("http://host/path@x", "http://host/path@x");
    check_redact("http://user@host/", "http://user@host/");
    check_redact("/plain/path", "/plain/path");
}

static void unknown_scheme_is_fatal_only_with_require_output(void **state)
{
    sink_options o = { 0 };
    char err[256];
    o.require_output = 1;
    assert_null(sink_open("gopher://x:secret@h/", &o, err, sizeof err));
    assert_non_null(strstr(err, "gopher://x:***@h/"));
    assert_null(strstr(err, "secret"));
}

static void joremon_timestamps_are_rfc3339_nano(void **state)
{
    char t[64];
    setenv("TZ", "UTC", 1);
    tzset();
    joremon_timestamp(t, sizeof t, 1580865115.797358503);
    assert_int_equal(strlen(t), strlen("2020-02-05T01:11:55.797358503Z"));
    assert_memory_equal(t, "2020-02-05T01:11:55.7973", 24);
    setenv("TZ", "CET-1", 1);
    tzset();
    joremon_timestamp(t, sizeof t, 1580865115.5);
    assert_string_equal(t, "2020-02-05T02:11:55.5+01:00");     /* Go drops trailing zeros */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(passwords_are_redacted),
        cmocka_unit_test(unknown_scheme_is_fatal_only_with_require_output),
        cmocka_unit_test(joremon_timestamps_are_rfc3339_nano),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
