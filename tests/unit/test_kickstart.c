/* test_kickstart.c — the pure pieces of jobscope kickstart (src/kickstart):
 * kickstart's YAML writing (ksyaml.c) and its command-line grammar
 * (ksparse.c), on the cases pegasus-kickstart's own parser was compared
 * against while they were written (docs/kickstart.md). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kickstart/kickstart.h"

/* What write() wrote of s, as a string (freed by the caller). */
static char *capture(void (*write)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    write(f, s);
    fclose(f);
    return buf;
}

static char *capture_quoted(const char *s)
{
    return capture(ksyaml_quoted, s);
}

static char *capture_plain(const char *s)
{
    return capture(ksyaml_plain, s);
}

static char *capture_block(const char *s, size_t max, int *truncated)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *truncated = ksyaml_block(f, 2, s, strlen(s), max);
    fclose(f);
    return buf;
}

static void expect(char *got, const char *want)
{
    assert_string_equal(got, want);
    free(got);
}

static void test_quoted_strings_escape_as_kickstart_and_stay_valid_yaml(void **state)
{
    (void)state;
    expect(capture_quoted("a\"b\\c\td\ne\rf"), "\"a\\\"b\\\\c\\td\\ne\\rf\"");
    expect(capture_quoted("x\001\033y\177z"), "\"xyz\""); /* controls dropped */
    expect(capture_quoted("V\xc3\xb6"
                          "ckler"),
           "\"V\xc3\xb6"
           "ckler\"");                                                          /* UTF-8 kept */
    expect(capture_quoted("bad\xff\xfe!"), "\"bad\xef\xbf\xbd\xef\xbf\xbd!\""); /* U+FFFD */
    expect(capture_quoted("l\xe2\x80\xa8s"), "\"l\\u2028s\""); /* a YAML line break */
    expect(capture_quoted("c1\xc2\x80"), "\"c1\\u0080\"");
    expect(capture_quoted(NULL), "\"\"");
}

static void test_plain_values_are_bare_unless_they_would_read_back_otherwise(void **state)
{
    (void)state;
    expect(capture_plain("/tmp/a b/c.txt"), "/tmp/a b/c.txt");
    expect(capture_plain("2   No such file or directory"), "2   No such file or directory");
    expect(capture_plain(""), "");
    expect(capture_plain("/tmp/a: b"), "\"/tmp/a: b\"");
    expect(capture_plain("x #y"), "\"x #y\"");
    expect(capture_plain("&anchor"), "\"&anchor\"");
    expect(capture_plain("- dash"), "\"- dash\"");
    expect(capture_plain("-n"), "-n");
    expect(capture_plain(" lead"), "\" lead\"");
    expect(capture_plain("ends:"), "\"ends:\"");
    expect(capture_plain("tab\there"), "\"tab\\there\"");
    expect(capture_plain("bad\xff"), "\"bad\xef\xbf\xbd\"");
}

static void test_blocks_drop_leading_blanks_and_keep_the_last_characters(void **state)
{
    (void)state;
    int t;
    expect(capture_block("  \t first\n second\n", SIZE_MAX, &t), "  first\n   second\n  \n");
    assert_int_equal(t, 0);
    expect(capture_block("a\r\nb", SIZE_MAX, &t), "  a\n  \n  b\n");
    expect(capture_block("0123456789abcdefghij\n", 10, &t), "  bcdefghij\n  \n");
    assert_int_equal(t, 1);
    /* characters, not bytes; an invalid byte is one character */
    expect(capture_block("\xc3\xa9\xe2\x82\xac\xff"
                         "ab",
                         3, &t),
           "  \xef\xbf\xbd"
           "ab\n");
    expect(capture_block("x\xe2\x80\xa8y\x01z", SIZE_MAX, &t), "  x\n  yz\n");
    assert_int_equal(ksyaml_count_chars("\xc3\xa9\xff", 3), 2);
}

/* Words of a command line, joined by '|'; "ERR" when it does not parse. */
static char *words(int line, const char *s)
{
    ks_args a = {0};
    char err[128];
    int rc = line ? ksparse_line(s, &a, err, sizeof err) : ksparse_arg(s, &a, err, sizeof err);
    size_t n = 4;
    for (int i = 0; i < a.n; i++) n += strlen(a.v[i]) + 1;
    char *out = calloc(1, n);
    if (rc) strcpy(out, "ERR");
    for (int i = 0; !rc && i < a.n; i++) {
        if (i) strcat(out, "|");
        strcat(out, a.v[i]);
    }
    ks_args_free(&a);
    return out;
}

static void test_side_job_lines_split_quote_and_rewrite_as_kickstart(void **state)
{
    (void)state;
    setenv("KSV", "val", 1);
    setenv("KSS", "a b", 1);
    expect(words(1, "  /bin/echo  one   two "), "/bin/echo|one|two");
    expect(words(1, "echo 'a  b' \"c\\td\" e\\ f"), "echo|a  b|c\td|e f");
    expect(words(1, "echo ${KSV} ${KSV}x \"$KSS\" '$KSV'"), "echo|val|valx|a b|$KSV");
    expect(words(1, "echo $KSV/bin"), "echo|val/bin");
    /* kickstart's quirks, kept: a space after $NAME joins the next word */
    expect(words(1, "echo $KSV next"), "echo|valnext");
    expect(words(1, "echo \"unterminated"), "ERR");
    expect(words(1, "echo 'unterminated"), "ERR");
    expect(words(1, "echo $NO_SUCH_KS_VARIABLE"), "ERR");
    expect(words(1, "echo ${KSV"), "ERR");
    expect(words(1, "echo trailing\\"), "ERR");
    expect(words(1, ""), "");
}

static void test_main_arguments_keep_quotes_and_rewrite_variables(void **state)
{
    (void)state;
    setenv("KSV", "val", 1);
    expect(words(0, "'None'"), "'None'");
    expect(words(0, "{\"password\": \"xxxxx\"}"), "{\"password\": \"xxxxx\"}");
    expect(words(0, "$KSV"), "val");
    expect(words(0, "'$KSV'"), "'$KSV'");
    expect(words(0, "\"${KSV}x\""), "\"valx\"");
    expect(words(0, "\\$KSV"), "$KSV");
    expect(words(0, "a b  c"), "a b  c");
    expect(words(0, ""), "");
    expect(words(0, "a\"b"), "ERR");
    expect(words(0, "cost$"), "ERR");
    char *big = malloc(KS_ARG_MAX + 2);
    memset(big, 'c', KS_ARG_MAX + 1);
    big[KS_ARG_MAX] = 0;
    char *w = words(0, big); /* exactly KS_ARG_MAX: parsed */
    assert_int_equal(strlen(w), KS_ARG_MAX);
    free(w);
    big[KS_ARG_MAX] = 'c';
    big[KS_ARG_MAX + 1] = 0;
    expect(words(0, big), "ERR");
    free(big);
}

static void test_file_lists_take_lfn_pfn_and_comments(void **state)
{
    (void)state;
    char path[] = "/tmp/test_kickstart.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "a.lfn=a.txt  # comment\n\n   \nb.txt\n# only a comment\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ks_filelist l = {0};
    assert_int_equal(ksparse_filelist_read(&l, path), 0);
    assert_int_equal(ksparse_filelist_add(&l, "x=y=z"), 0);
    unlink(path);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.lfn[0], "a.lfn");
    assert_string_equal(l.pfn[0], "a.txt");
    assert_null(l.lfn[1]);
    assert_string_equal(l.pfn[1], "b.txt");
    assert_string_equal(l.lfn[2], "x");
    assert_string_equal(l.pfn[2], "y=z");
    ksparse_filelist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoted_strings_escape_as_kickstart_and_stay_valid_yaml),
        cmocka_unit_test(test_plain_values_are_bare_unless_they_would_read_back_otherwise),
        cmocka_unit_test(test_blocks_drop_leading_blanks_and_keep_the_last_characters),
        cmocka_unit_test(test_side_job_lines_split_quote_and_rewrite_as_kickstart),
        cmocka_unit_test(test_main_arguments_keep_quotes_and_rewrite_variables),
        cmocka_unit_test(test_file_lists_take_lfn_pfn_and_comments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
