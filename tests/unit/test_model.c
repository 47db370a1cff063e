/* The metric model: the catalogue describes every sample field once (unit,
 * counter/gauge, decimals, help), lookups by name serve the server's
 * HELP/TYPE, sets encode as the events do (groups of rows too), and
 * docs/events.md (the tree's fields), docs/cgroups.md (the cgroup's, cg_io
 * rows included) and docs/gpu.md (the GPU's) document every field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "model/metric.h"

static void every_field_has_a_name_unit_help_and_event(void **state)
{
    for (int i = 0; i < M_COUNT; i++) {
        const metric_def *d = &metric_catalogue[i];
        assert_non_null(d->name);
        assert_non_null(d->unit);
        assert_non_null(d->help);
        assert_true(strlen(d->help) > 10);
        assert_true(!strcmp(d->event, "kickstart.inv.online") ||
                    !strcmp(d->event, "kickstart.inv.online.gpu.stats") ||
                    !strcmp(d->event, "jobscope.start"));
        assert_true(d->divisor > 0);
        assert_true(!d->group == !d->row_label);
        for (int j = 0; j < i; j++) assert_string_not_equal(metric_catalogue[j].name, d->name);
    }
}

static void lookup_by_field_or_series_name_gives_help_and_type(void **state)
{
    const metric_def *d = metric_lookup("rss");
    assert_non_null(d);
    assert_string_equal(d->unit, "kB");
    assert_string_equal(metric_kind_name(d->kind), "gauge");
    assert_ptr_equal(metric_lookup("kickstart.inv.online.rss"), d);
    assert_ptr_equal(metric_lookup("kickstart.inv.online_rss"), d);
    d = metric_lookup("kickstart.inv.online.utime");
    assert_non_null(d);
    assert_string_equal(metric_kind_name(d->kind), "counter");
    assert_string_equal(d->unit, "seconds");
    assert_int_equal(d->decimals, 3);
    d = metric_lookup("kickstart.inv.online.cg_psi_io_full_total");   /* a cgroup field */
    assert_non_null(d);
    assert_string_equal(d->unit, "seconds");
    assert_string_equal(metric_kind_name(d->kind), "counter");
    assert_int_equal(d->decimals, 6);
    assert_string_equal(metric_lookup("cg_memory_peak")->unit, "bytes");
    assert_null(metric_lookup("no_such_field"));
    assert_null(metric_lookup("kickstart.inv.online.nope"));
    assert_null(metric_lookup(NULL));
}

static void gpu_and_per_device_fields_are_in_the_catalogue(void **state)
{
    const metric_def *d = metric_lookup("kickstart.inv.online.gpu.stats.temp");
    assert_non_null(d);
    assert_string_equal(d->event, "kickstart.inv.online.gpu.stats");
    assert_string_equal(d->unit, "celsius");
    assert_string_equal(metric_kind_name(d->kind), "gauge");
    assert_ptr_equal(metric_lookup("kickstart.inv.online.gpu.stats_job_sm_util"),
                     &metric_catalogue[M_GPU_JOB_SM_UTIL]);
    assert_true(metric_catalogue[M_GPU_JOB_SM_UTIL].flags & MF_NULLABLE);
    d = metric_lookup("kickstart.inv.online.gpu_util");
    assert_ptr_equal(d, &metric_catalogue[M_GPU_UTIL]);
    assert_int_equal(d->decimals, 1);
    assert_null(metric_lookup("kickstart.inv.online.temp"));       /* not that event's */
    d = metric_lookup("cg_io.rbytes");
    assert_ptr_equal(d, &metric_catalogue[M_CG_IO_DEV_RBYTES]);
    assert_string_equal(d->row_label, "dev");
    assert_string_equal(metric_kind_name(d->kind), "counter");
    assert_ptr_equal(metric_lookup("kickstart.inv.online.cg_io.wios"), &metric_catalogue[M_CG_IO_DEV_WIOS]);
    assert_null(metric_lookup("rbytes"));                          /* a row's field: GROUP.NAME */
    assert_ptr_equal(metric_lookup("cg_io_rbytes"), &metric_catalogue[M_CG_IO_RBYTES]);
}

/* The members of s as an object, NUL-terminated in b. */
static const char *members(jbuf *b, const mset *s)
{
    jbuf_reset(b);
    jbuf_putc(b, '{');
    mset_write_json(b, s);
    jbuf_putc(b, '}');
    jbuf_putc(b, 0);
    return b->p;
}

static void a_group_writes_its_rows_where_it_stands_and_an_empty_array_without_rows(void **state)
{
    mset s;
    mset_init(&s);
    mset_clear(&s, "ev", 0);
    jbuf b;
    jbuf_init(&b, 64);
    mset_u64(&s, M_CG_IO_WIOS, 1);
    mset_group(&s, M_CG_IO_DEV_RBYTES);
    mset_u64(&s, M_CG_PSI_CPU_SOME_TOTAL, 2);
    assert_string_equal(members(&b, &s),
                        "{\"cg_io_wios\":1,\"cg_io\":[],\"cg_psi_cpu_some_total\":0.000002}");
    mrow *r = mset_row(&s, M_CG_IO_DEV_RBYTES, "8:0");
    mrow_u64(r, M_CG_IO_DEV_RBYTES, 4096);
    mrow_u64(r, M_CG_IO_DEV_WIOS, 2);
    mrow_u64(r, M_GPU_TEMP, 9);                                    /* not of the group: ignored */
    r = mset_row(&s, M_CG_IO_DEV_RBYTES, "253:1");
    mrow_u64(r, M_CG_IO_DEV_WBYTES, 1);
    assert_string_equal(members(&b, &s),
                        "{\"cg_io_wios\":1,\"cg_io\":[{\"dev\":\"8:0\",\"rbytes\":4096,\"wios\":2},"
                        "{\"dev\":\"253:1\",\"wbytes\":1}],\"cg_psi_cpu_some_total\":0.000002}");
    for (int i = 2; i < MSET_MAX_ROWS; i++) assert_non_null(mset_row(&s, M_CG_IO_DEV_RBYTES, "x"));
    assert_null(mset_row(&s, M_CG_IO_DEV_RBYTES, "one too many"));
    jbuf_free(&b);
    mset_free(&s);
}

static void a_set_writes_its_members_in_order_with_the_catalogues_decimals(void **state)
{
    mset s;
    mset_init(&s);
    mset_clear(&s, "kickstart.inv.online", 1700000000.5);
    mset_label_num(&s, "pid", 42);
    mset_label_str(&s, "exe", NULL, 0);
    mset_label_str(&s, "cmd", "secret", MLABEL_HIDDEN);
    mset_f64(&s, M_ELAPSED, 1.23456);
    mset_u64(&s, M_UTIME, 1234567);
    mset_null(&s, M_IOWAIT);
    mset_u64(&s, M_RSS, 1024);
    mset_f64(&s, M_CPU_PERCENT, 99.999);
    mset_f64(&s, M_PEAK_RSS, 2048);
    mset_u64(&s, M_UTIME, 7654321);                     /* a second time: the value, not the place */
    mset_label_num(&s, "pid", 43);                     /* a label again: its value changes */
    jbuf b;
    jbuf_init(&b, 64);
    assert_string_equal(members(&b, &s), "{\"pid\":43,\"exe\":null,\"elapsed\":1.235,\"utime\":7.654,"
                                         "\"iowait\":null,\"rss\":1024,\"cpu_percent\":100.00}");
    jbuf_reset(&b);
    mset_write_cell(&b, &s, M_IOWAIT);
    assert_int_equal(b.len, 0);
    mset_write_cell(&b, &s, M_UTIME);
    jbuf_putc(&b, 0);
    assert_string_equal(b.p, "7.654");
    assert_true(mset_value(&s, M_UTIME) == 7654321 / 1e6);
    assert_true(mset_get(&s, M_PEAK_RSS) == 2048);
    assert_string_equal(mset_label(&s, "cmd"), "secret");
    assert_int_equal(mset_label_num_get(&s, "pid"), 43);
    assert_false(mset_has(&s, M_IOWAIT));
    assert_false(mset_has(&s, M_VM));
    /* a new event forgets every value and member */
    mset_clear(&s, "kickstart.inv.online", 2);
    assert_false(mset_has(&s, M_UTIME));
    assert_null(mset_label(&s, "cmd"));
    assert_string_equal(members(&b, &s), "{}");
    jbuf_free(&b);
    mset_free(&s);
}

static void an_event_of_objects_arrays_and_strings_writes_as_the_json_writer_does(void **state)
{
    mset s;
    mset_init(&s);
    mset_clear(&s, "jobscope.end", 1);
    char name[16] = "SIGKILL";
    mset_put_str(&s, "signal_name", mset_copy(&s, name, strlen(name)));
    strcpy(name, "overwritten");                      /* the set has its own copy */
    mset_put_null(&s, "signal");
    mset_put_bool(&s, "core_dumped", 0);
    mset_put_i64(&s, "exit_code", -1);
    mset_put_u64(&s, "samples", UINT64_MAX);
    mset_put_fixed(&s, "duration", 1.23456789, 6);
    mset_put_fixed(&s, "nan", NAN, 2);
    mset_put_num(&s, "value", 0.1);
    mset_open_obj(&s, "peaks");
    mset_open_obj(&s, "rss");
    mset_put_fixed(&s, "value", 10.4, 0);
    mset_close(&s);
    mset_open_arr(&s, "argv");
    mset_put_str(&s, NULL, "a \"b\"\n");
    mset_open_obj(&s, NULL);
    mset_close(&s);
    mset_open_arr(&s, NULL);
    mset_close(&s);
    mset_close(&s);
    mset_close(&s);
    mset_put_strn(&s, "excerpt", "a\0b\xff", 4);
    mset_put_raw(&s, "\"raw\":[1,2]", 11);
    mset_close(&s);                                      /* nothing open: ignored */
    jbuf b;
    jbuf_init(&b, 64);
    assert_string_equal(members(&b, &s),
                        "{\"signal_name\":\"SIGKILL\",\"signal\":null,\"core_dumped\":false,"
                        "\"exit_code\":-1,\"samples\":18446744073709551615,\"duration\":1.234568,"
                        "\"nan\":null,\"value\":0.1,\"peaks\":{\"rss\":{\"value\":10},"
                        "\"argv\":[\"a \\\"b\\\"\\n\",{},[]]},\"excerpt\":\"a\\u0000b\\ufffd\","
                        "\"raw\":[1,2]}");
    assert_int_equal(s.depth, 0);
    assert_false(s.oom);
    /* the counters of another set, in the catalogue's order */
    mset t;
    mset_init(&t);
    mset_clear(&t, "x", 0);
    mset_u64(&t, M_STIME, 2);
    mset_u64(&t, M_UTIME, 1);
    mset_u64(&t, M_RSS, 3);
    mset_clear(&s, "jobscope.end", 1);
    mset_copy_range(&s, &t, M_UTIME, M_NIVCSW);
    assert_string_equal(members(&b, &s), "{\"utime\":0.000,\"stime\":0.000}");
    assert_true(mset_raw(&s, M_STIME) == 2);
    assert_false(mset_has(&s, M_RSS));
    jbuf_free(&b);
    mset_free(&t);
    mset_free(&s);
}

/* Appends "`name`" for every expansion of a backquoted pattern like
 * cg_psi_{cpu,memory,io}_{some,full}_avg10 (as the docs write them). */
static void expand(char *out, size_t cap, const char *done, size_t donelen, const char *rest,
                   size_t restlen)
{
    const char *open = memchr(rest, '{', restlen);
    if (!open) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "`%.*s%.*s`\n", (int)donelen, done, (int)restlen, rest);
        return;
    }
    const char *close = memchr(open, '}', restlen - (size_t)(open - rest));
    if (!close) return;
    for (const char *alt = open + 1; alt < close;) {
        const char *end = memchr(alt, ',', (size_t)(close - alt));
        if (!end) end = close;
        char buf[256];
        int n = snprintf(buf, sizeof buf, "%.*s%.*s%.*s", (int)donelen, done,
                         (int)(open - rest), rest, (int)(end - alt), alt);
        if (n > 0 && (size_t)n < sizeof buf)
            expand(out, cap, buf, (size_t)n, close + 1, restlen - (size_t)(close + 1 - rest));
        alt = end + 1;
    }
}

/* docs/events.md and docs/cgroups.md name every visible field in
 * backquotes (brace patterns count for each of their expansions). */
static void the_docs_document_every_catalogue_field(void **state)
{
    static char doc[1 << 21];
    size_t n = 0;
    const char *const files[] = { "docs/events.md", "docs/cgroups.md", "docs/gpu.md" };
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(files[i], "r");
        assert_non_null(f);
        n += fread(doc + n, 1, sizeof doc - 1 - n, f);
        fclose(f);
    }
    doc[n] = 0;
    static char expanded[1 << 20];
    expanded[0] = 0;
    for (const char *p = doc; (p = strchr(p, '`'));) {
        const char *q = strchr(p + 1, '`');
        if (!q) break;
        if (memchr(p + 1, '{', (size_t)(q - p - 1)) && q - p < 200)
            expand(expanded, sizeof expanded, "", 0, p + 1, (size_t)(q - p - 1));
        p = q + 1;
    }
    int missing = 0;
    for (int i = 0; i < M_COUNT; i++) {
        const metric_def *d = &metric_catalogue[i];
        if (d->flags & MF_HIDDEN) continue;
        char want[96];
        snprintf(want, sizeof want, "`%s`", d->name);
        if (d->group) {
            /* a row's field: named ("NAME") on the line that documents `GROUP` */
            char grp[64], line[512];
            snprintf(grp, sizeof grp, "`%s`", d->group);
            const char *g = strstr(doc, grp);
            const char *eol = g ? strchr(g, '\n') : NULL;
            snprintf(line, sizeof line, "%.*s", g ? (int)((eol ? eol : g + strlen(g)) - g) : 0, g ? g : "");
            snprintf(want, sizeof want, "\"%s\"", d->name);
            if (!strstr(line, want)) {
                fprintf(stderr, "the docs do not document %s.%s\n", d->group, d->name);
                missing++;
            }
            continue;
        }
        if (!strstr(doc, want) && !strstr(expanded, want)) {
            fprintf(stderr, "the docs do not document %s\n", d->name);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_field_has_a_name_unit_help_and_event),
        cmocka_unit_test(lookup_by_field_or_series_name_gives_help_and_type),
        cmocka_unit_test(gpu_and_per_device_fields_are_in_the_catalogue),
        cmocka_unit_test(a_set_writes_its_members_in_order_with_the_catalogues_decimals),
        cmocka_unit_test(a_group_writes_its_rows_where_it_stands_and_an_empty_array_without_rows),
        cmocka_unit_test(an_event_of_objects_arrays_and_strings_writes_as_the_json_writer_does),
        cmocka_unit_test(the_docs_document_every_catalogue_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
