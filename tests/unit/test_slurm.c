/* src/slurm/spank_conf.c: what the Slurm plugin makes of the site's
 * plugstack.conf line and of a user's --jobscope=..., and the exact
 * `jobscope attach` command line it starts for a task. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "slurm/spank_conf.h"

static int site(spank_conf *c, const char *line, char *err)
{
    char copy[1024], *argv[32];
    int argc = 0;
    snprintf(copy, sizeof copy, "%s", line);
    for (char *t = strtok(copy, " "); t && argc < 32; t = strtok(NULL, " ")) argv[argc++] = t;
    spank_conf_defaults(c, "/usr/bin/jobscope");
    return spank_conf_site(c, argc, argv, err, 256);
}

static void plugstack_arguments_set_outputs_interval_level_and_defaults(void **state)
{
    spank_conf c;
    char err[256] = "";
    assert_int_equal(site(&c, "", err), 0);
    assert_int_equal(c.enabled, 1);
    assert_int_equal(c.serve, 1);
    assert_int_equal(c.noutputs, 0);
    assert_int_equal(c.level, -1);
    assert_int_equal(site(&c,
                          "jobscope=/opt/js/bin/jobscope output=influx://vm:8428/jobs "
                          "output=/var/log/js/%j.%s.%t.jsonl interval=10 level=2 gpu=yes "
                          "default=off serve=no spool=/var/spool/js log=/var/log/js.log",
                          err),
                     0);
    assert_string_equal(c.jobscope, "/opt/js/bin/jobscope");
    assert_int_equal(c.noutputs, 2);
    assert_string_equal(c.outputs[1], "/var/log/js/%j.%s.%t.jsonl");
    assert_true(c.interval == 10);
    assert_int_equal(c.level, 2);
    assert_int_equal(c.gpu, 1);
    assert_int_equal(c.enabled, 0);
    assert_int_equal(c.serve, 0);
    assert_string_equal(c.spool_dir, "/var/spool/js");
}

static void a_bad_plugstack_argument_is_one_line_naming_it(void **state)
{
    spank_conf c;
    char err[256] = "";
    assert_int_equal(site(&c, "interval=fast", err), -1);
    assert_string_equal(err, "plugstack argument 'interval=fast': bad value");
    assert_int_equal(site(&c, "colour=blue", err), -1);
    assert_string_equal(err, "plugstack argument 'colour=blue': unknown key");
    assert_int_equal(site(&c, "verbose", err), -1);
    assert_string_equal(err, "plugstack argument 'verbose': expected key=value");
    assert_int_equal(site(&c, "interval=0", err), -1);
    assert_int_equal(site(&c, "level=300", err), -1);
}

static void users_turn_it_off_or_tune_interval_and_gpus(void **state)
{
    spank_conf c;
    char err[256] = "";
    assert_int_equal(site(&c, "interval=30", err), 0);
    assert_int_equal(spank_conf_user(&c, "off", err, sizeof err), 0);
    assert_int_equal(c.enabled, 0);
    assert_int_equal(site(&c, "default=off", err), 0);
    assert_int_equal(spank_conf_user(&c, "interval=0.5,gpu", err, sizeof err), 0);
    assert_int_equal(c.enabled, 1); /* asking for an interval turns it on */
    assert_true(c.interval == 0.5);
    assert_int_equal(c.gpu, 1);
    assert_int_equal(spank_conf_user(&c, "nogpu", err, sizeof err), 0);
    assert_int_equal(c.gpu, 0);
}

static void a_bad_user_value_changes_nothing_and_says_why(void **state)
{
    spank_conf c;
    char err[256] = "";
    assert_int_equal(site(&c, "interval=30", err), 0);
    assert_int_equal(spank_conf_user(&c, "gpu,interval=0.01", err, sizeof err), -1);
    assert_string_equal(err, "--jobscope: interval '0.01': seconds, at least 0.1");
    assert_int_equal(c.gpu, 0); /* nothing applied */
    assert_true(c.interval == 30);
    assert_int_equal(spank_conf_user(&c, "loud", err, sizeof err), -1);
    assert_string_equal(err, "--jobscope: unknown item 'loud' (off, on, interval=S, gpu, nogpu)");
    assert_int_equal(spank_conf_user(&c, "", err, sizeof err), -1);
    assert_int_equal(spank_conf_user(&c, "gpu,,off", err, sizeof err), -1);
}

static spank_task_ids ids(void)
{
    spank_task_ids t;
    memset(&t, 0, sizeof t);
    strcpy(t.job_id, "12");
    strcpy(t.raw_job_id, "12");
    strcpy(t.step, "batch");
    strcpy(t.task, "0");
    strcpy(t.array_job_id, "10");
    strcpy(t.array_task_id, "2");
    strcpy(t.user, "ana");
    strcpy(t.account, "physics");
    strcpy(t.partition, "gpu");
    strcpy(t.alloc_mem_mb, "4096");
    return t;
}

static char *joined(char **argv)
{
    static char s[4096];
    s[0] = 0;
    for (int i = 0; argv[i]; i++) {
        if (i) strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

static void the_monitor_is_jobscope_attach_with_slurm_ids_as_tags(void **state)
{
    spank_conf c;
    char err[256] = "", buf[8192], *argv[96];
    assert_int_equal(
        site(&c, "output=/l/%j.%s.%t.jsonl output=amqp://u:p@mq/%2fs/x interval=5", err), 0);
    spank_task_ids t = ids();
    int n = spank_conf_argv(&c, &t, 4242, 3, argv, 96, buf, sizeof buf);
    assert_true(n > 0);
    assert_null(argv[n]);
    assert_string_equal(
        joined(argv),
        "/usr/bin/jobscope attach -q --exit-status-fd=3 --job=12 --interval=5 --cgroup=auto "
        "-o /l/%j.batch.0.jsonl -o amqp://u:p@mq/%2fs/x "
        "--tag slurm_job_id=12 --tag slurm_step=batch --tag slurm_task=0 "
        "--tag slurm_array_job_id=10 --tag slurm_array_task_id=2 --tag slurm_user=ana "
        "--tag slurm_account=physics --tag slurm_partition=gpu --tag slurm_alloc_mem_mb=4096 "
        "4242");
}

static void with_no_site_output_events_go_to_the_nodes_serve_only(void **state)
{
    spank_conf c;
    char err[256] = "", buf[8192], *argv[96];
    assert_int_equal(site(&c, "gpu=yes serve=no log=/x.log level=0", err), 0);
    spank_task_ids t = ids();
    t.array_job_id[0] = t.array_task_id[0] = 0;
    strcpy(t.job_id, "12");
    assert_true(spank_conf_argv(&c, &t, 7, 3, argv, 96, buf, sizeof buf) > 0);
    assert_non_null(strstr(joined(argv), " -o /dev/null "));
    assert_non_null(strstr(joined(argv), " --gpu "));
    assert_non_null(strstr(joined(argv), " --no-serve "));
    assert_non_null(strstr(joined(argv), " --telemetry-level=0 "));
    assert_null(strstr(joined(argv), " -q ")); /* a log: jobscope's messages go there */
    assert_null(strstr(joined(argv), "array"));
}

static void a_command_line_too_long_for_its_buffer_is_refused(void **state)
{
    spank_conf c;
    char err[256] = "", buf[64], *argv[96];
    assert_int_equal(site(&c, "", err), 0);
    spank_task_ids t = ids();
    assert_int_equal(spank_conf_argv(&c, &t, 7, 3, argv, 96, buf, sizeof buf), -1);
    char big[8192];
    assert_int_equal(spank_conf_argv(&c, &t, 7, 3, argv, 4, big, sizeof big), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plugstack_arguments_set_outputs_interval_level_and_defaults),
        cmocka_unit_test(a_bad_plugstack_argument_is_one_line_naming_it),
        cmocka_unit_test(users_turn_it_off_or_tune_interval_and_gpus),
        cmocka_unit_test(a_bad_user_value_changes_nothing_and_says_why),
        cmocka_unit_test(the_monitor_is_jobscope_attach_with_slurm_ids_as_tags),
        cmocka_unit_test(with_no_site_output_events_go_to_the_nodes_serve_only),
        cmocka_unit_test(a_command_line_too_long_for_its_buffer_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
