/* cli/options.c: one table of run/attach's options from which argv is
 * parsed straight into the engine's monitor_config, `--help` is printed and
 * the man page's OPTIONS section is written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/options.h"

static char *slurp(FILE *f)
{
    char *buf = NULL;
    size_t cap = 0, len = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    if (!buf) buf = calloc(1, 1);
    buf[len] = 0;
    return buf;
}

static char *capture(void (*fn)(FILE *))
{
    FILE *f = tmpfile();
    fn(f);
    rewind(f);
    char *s = slurp(f);
    fclose(f);
    return s;
}

static void trim_end(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
}

/* man/jobscope-run.1.scd holds, between "# OPTIONS" and the next section,
 * exactly what options_man() writes from the table. */
static void the_man_page_option_list_is_the_table(void **state)
{
    FILE *f = fopen("man/jobscope-run.1.scd", "r");
    if (!f) f = fopen("../man/jobscope-run.1.scd", "r");
    assert_non_null(f);
    char *page = slurp(f);
    fclose(f);
    char *a = strstr(page, "# OPTIONS");
    assert_non_null(a);
    char *b = strstr(a + 1, "\n# ");
    assert_non_null(b);
    b[1] = 0;
    trim_end(a);
    char *want = capture(options_man);
    trim_end(want);
    if (strcmp(a, want))
        fprintf(stderr,
                "man/jobscope-run.1.scd's OPTIONS section differs from the table "
                "(src/cli/options.c); it should read:\n%s\n",
                want);
    assert_string_equal(a, want);
    free(want);
    free(page);
}

/* Every option with a long name is in --help, and --help names none the
 * table does not have. */
static void help_lists_the_table(void **state)
{
    char *help = capture(options_usage);
    const char *const names[] = {
        "--interval", "--output",   "--format",        "--mode",      "--tag",
        "--summary",  "--wait-all", "--flush-timeout", "--gpu[=all]", "--cgroup[=auto|PATH|off]",
        "--sampler",  "--limit",    "--spool-dir",     "--spool-max", "--no-serve",
        "--quiet",    "--help"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_non_null(strstr(help, names[i]));
    free(help);
}

static int parse(run_options *o, int attach, const char *const *args)
{
    static char *argv[64];
    static char store[64][128];
    int argc = 0;
    for (; args[argc]; argc++) {
        snprintf(store[argc], sizeof store[argc], "%s", args[argc]);
        argv[argc] = store[argc];
    }
    argv[argc] = NULL;
    int exit_now = 0;
    return options_parse(o, attach, argc, argv, &exit_now);
}

/* Each option lands in the field of monitor_config it stands for: the table
 * is the one place that maps them. */
static void each_option_lands_in_its_config_field(void **state)
{
    static run_options o;
    unsetenv("KICKSTART_MON_URL");
    unsetenv("KICKSTART_MON_INTERVAL");
    unsetenv("JOBSCOPE_TELEMETRY_LEVEL");
    const char *const args[] = {"run",
                                "-i",
                                "0.5",
                                "-o",
                                "a.jsonl",
                                "--format",
                                "csv",
                                "--mode",
                                "io",
                                "--job",
                                "J",
                                "--tag",
                                "k=v",
                                "--summary",
                                "s.json",
                                "--wait-all",
                                "--flush-timeout",
                                "3",
                                "--gpu=all",
                                "--gpu-graphics-procs",
                                "--gpu-proc-util",
                                "--gpu-pcie",
                                "--gpu-all-procs",
                                "--telemetry-level",
                                "2",
                                "--strip-payloads",
                                "--no-cgroup",
                                "--sampler",
                                "procfs",
                                "--limit",
                                "wall=1h",
                                "--kill-grace",
                                "4",
                                "--measure-only",
                                "--null-missing",
                                "--payload-shape",
                                "panorama",
                                "--spool-dir",
                                "/tmp/x",
                                "--spool-max",
                                "1M",
                                "--require-output",
                                "--no-serve",
                                "--insecure",
                                "-v",
                                "--",
                                "true",
                                NULL};
    assert_int_equal(parse(&o, 0, args), 0);
    const monitor_config *c = &o.cfg;
    assert_true(c->interval == 0.5);
    assert_int_equal(c->noutputs, 1);
    assert_string_equal(c->outputs[0], "a.jsonl");
    assert_int_equal(c->sink.format, FORMAT_CSV);
    assert_int_equal(c->sink.joremon_types, 2);
    assert_string_equal(c->job_id, "J");
    assert_int_equal(c->ntags, 1);
    assert_string_equal(c->tags[0], "k=v");
    assert_string_equal(c->summary_path, "s.json");
    assert_int_equal(c->wait_all, 1);
    assert_true(c->flush_timeout == 3 && c->sink.flush_timeout == 3);
    assert_int_equal(c->gpu.mode, 2);
    assert_int_equal(c->gpu.graphics_procs + c->gpu.proc_util + c->gpu.pcie + c->gpu.all_procs, 4);
    assert_int_equal(c->metrics.telemetry_level, 2);
    assert_int_equal(c->metrics.scan_output, 1);
    assert_int_equal(c->metrics.strip_payloads, 1);
    assert_int_equal(c->metrics.payload_panorama, 1);
    assert_int_equal(c->cgroup.mode, JS_CGROUP_OFF);
    assert_int_equal(c->cgroup.for_limits, 1);
    assert_string_equal(c->sampler, "procfs");
    assert_int_equal(c->limits.nspecs, 1);
    assert_string_equal(c->limits.specs[0], "wall=1h");
    assert_int_equal(c->limits.measure_only, 1);
    assert_true(c->kill_grace == 4);
    assert_int_equal(c->null_missing, 1);
    assert_string_equal(c->sink.spool_dir, "/tmp/x");
    assert_int_equal(c->sink.spool_max, 1 << 20);
    assert_int_equal(c->sink.require_output, 1);
    assert_int_equal(c->no_serve, 1);
    assert_int_equal(c->sink.insecure, 1);
    assert_int_equal(c->verbose, 1);
    assert_int_equal(c->sink.verbose, 1);
    assert_string_equal(c->argv[0], "true");
    assert_int_equal(c->attach, 0);
}

static void attach_takes_the_pid(void **state)
{
    static run_options o;
    const char *const args[] = {"attach", "-q", "--cgroup", "auto", "4242", NULL};
    assert_int_equal(parse(&o, 1, args), 0);
    assert_int_equal(o.cfg.attach, 1);
    assert_int_equal(o.cfg.pid, 4242);
    assert_int_equal(o.cfg.quiet, 1);
    assert_int_equal(o.cfg.cgroup.mode, JS_CGROUP_ON);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_man_page_option_list_is_the_table),
        cmocka_unit_test(help_lists_the_table),
        cmocka_unit_test(each_option_lands_in_its_config_field),
        cmocka_unit_test(attach_takes_the_pid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
