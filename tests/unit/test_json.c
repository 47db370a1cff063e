/* The JSON writer: numbers, escaping, structure; and the annotations every
 * event starts with (--null-missing is an argument of each, not a global). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "event/json.h"
#include "event/event.h"

static void expect_doc(jbuf *b, const char *want)
{
    assert_false(b->oom);
    assert_string_equal(b->p, want);
}

static void numbers_are_formatted_exactly(void **state)
{
    char t[64];
    t[fmt_u64(t, 0)] = 0;
    assert_string_equal(t, "0");
    t[fmt_u64(t, UINT64_MAX)] = 0;
    assert_string_equal(t, "18446744073709551615");
    t[fmt_i64(t, INT64_MIN)] = 0;
    assert_string_equal(t, "-9223372036854775808");
    t[fmt_fixed(t, 1.5, 3)] = 0;
    assert_string_equal(t, "1.500");
    t[fmt_fixed(t, 0.0005, 3)] = 0;
    assert_string_equal(t, "0.001");
    t[fmt_fixed(t, -2.25, 1)] = 0;
    assert_string_equal(t, "-2.3");
    t[fmt_fixed(t, -0.0001, 2)] = 0;
    assert_string_equal(t, "0.00");
    t[fmt_fixed(t, 1795294456.774692, 6)] = 0;
    assert_string_equal(t, "1795294456.774692");
    t[fmt_fixed(t, 12.0, 0)] = 0;
    assert_string_equal(t, "12");
    t[fmt_fixed(t, 1e300, 2)] = 0;
    assert_true(strtod(t, NULL) == 1e300);
}

static void objects_arrays_and_commas(void **state)
{
    jbuf b;
    jbuf_init(&b, 4); /* forces growth */
    jw_obj_open(&b, NULL);
    jw_str(&b, "a", "x");
    jw_u64(&b, "n", 42);
    jw_arr_open(&b, "l");
    jw_i64(&b, NULL, -1);
    jw_obj_open(&b, NULL);
    jw_null(&b, "z");
    jw_obj_close(&b);
    jw_bool(&b, NULL, 1);
    jw_arr_close(&b);
    jw_fixed(&b, "nan", NAN, 2);
    jw_str(&b, "null", NULL);
    jw_num(&b, "pi", 3.141592653589793);
    jw_num(&b, "tenth", 0.1);
    jw_raw(&b, "raw", "[1,2]", 5);
    jw_obj_close(&b);
    expect_doc(&b, "{\"a\":\"x\",\"n\":42,\"l\":[-1,{\"z\":null},true],\"nan\":null,\"null\":null,"
                   "\"pi\":3.141592653589793,\"tenth\":0.1,\"raw\":[1,2]}");
    jbuf_free(&b);
}

static void strings_are_escaped_and_invalid_utf8_replaced(void **state)
{
    jbuf b;
    jbuf_init(&b, 16);
    jw_obj_open(&b, NULL);
    jw_str(&b, "k\"", "q\"b\\s\n\t\x01/");
    jw_str(&b, "utf8", "é€😀");
    jw_strn(&b, "bad",
            "a\xff"
            "b\xc3"
            "c\xed\xa0\x80"
            "d",
            9);
    jw_strn(&b, "nul", "a\0b", 3);
    jw_obj_close(&b);
    expect_doc(&b, "{\"k\\\"\":\"q\\\"b\\\\s\\n\\t\\u0001/\",\"utf8\":\"é€😀\","
                   "\"bad\":\"a\\ufffdb\\ufffdc\\ufffd\\ufffd\\ufffdd\",\"nul\":\"a\\u0000b\"}");
    jbuf_free(&b);
}

static void null_missing_is_chosen_by_each_annotations_init(void **state)
{
    unsetenv("PEGASUS_SITE");
    annotations a, b;
    assert_int_equal(annotations_init(&a, "j1", NULL, 0, 1), 0);
    assert_int_equal(annotations_init(&b, "j2", NULL, 0, 0), 0);
    char *fa = strndup(a.fragment, a.fragment_len), *fb = strndup(b.fragment, b.fragment_len);
    assert_non_null(strstr(fa, "\"site\":null"));
    assert_non_null(strstr(fb, "\"site\":\"\""));
    free(fa);
    free(fb);
    annotations_free(&a);
    annotations_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numbers_are_formatted_exactly),
        cmocka_unit_test(objects_arrays_and_commas),
        cmocka_unit_test(strings_are_escaped_and_invalid_utf8_replaced),
        cmocka_unit_test(null_missing_is_chosen_by_each_annotations_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
