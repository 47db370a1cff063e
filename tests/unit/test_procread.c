/* procfs parsers on real-shaped text, odd process names included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "proc/procread.h"

static void stat_line_with_spaces_and_parens_in_comm(void **state)
{
    const char *s = "2375 (a) b (c) d) S 2374 2366 1195 0 -1 4227148 27 19 3 4 110 220 5 6 20 0 "
                    "7 0 21269 1234567 300 18446744073709551615 0 0 0 0 0 0 0 0 0 1 0 0 17 1 0 0 "
                    "42 0 0 0 0 0 0 0 0 0 0\n";
    proc_stat st;
    assert_int_equal(procread_stat(s, strlen(s), &st), 0);
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.ppid, 2374);
    assert_int_equal(st.minflt, 27);
    assert_int_equal(st.cminflt, 19);
    assert_int_equal(st.majflt, 3);
    assert_int_equal(st.cmajflt, 4);
    assert_int_equal(st.utime, 110);
    assert_int_equal(st.stime, 220);
    assert_int_equal(st.cutime, 5);
    assert_int_equal(st.cstime, 6);
    assert_int_equal(st.num_threads, 7);
    assert_int_equal(st.starttime, 21269);
    assert_int_equal(st.vsize, 1234567);
    assert_int_equal(st.rss, 300);
    assert_int_equal(st.blkio_ticks, 42);
}

static void truncated_stat_is_rejected(void **state)
{
    proc_stat st;
    const char *s = "12 (x) S 1 2 3";
    assert_int_equal(procread_stat(s, strlen(s), &st), -1);
    assert_int_equal(procread_stat("garbage", 7, &st), -1);
}

static void io_file(void **state)
{
    const char *s = "rchar: 1\nwchar: 1089536\nsyscr: 3\nsyscw: 266\nread_bytes: 4096\n"
                    "write_bytes: 1093632\ncancelled_write_bytes: 7\n";
    proc_io io;
    assert_int_equal(procread_io(s, strlen(s), &io), 0);
    assert_int_equal(io.rchar, 1);
    assert_int_equal(io.wchar, 1089536);
    assert_int_equal(io.syscr, 3);
    assert_int_equal(io.syscw, 266);
    assert_int_equal(io.read_bytes, 4096);
    assert_int_equal(io.write_bytes, 1093632);
    assert_int_equal(io.cancelled_write_bytes, 7);
    assert_int_equal(procread_io("rchar: 1\n", 9, &io), -1);
}

static void status_file(void **state)
{
    const char *s = "Name:\tbash\nUid:\t1000\t1000\t1000\t1000\nVmPeak:\t  9000 kB\nVmSize:\t  8740 kB\n"
                    "VmHWM:\t   5120 kB\nVmRSS:\t   4880 kB\nVmSwap:\t     12 kB\nThreads:\t1\n"
                    "voluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t3\n";
    proc_status ps;
    assert_int_equal(procread_status(s, strlen(s), &ps), 0);
    assert_int_equal(ps.vmsize_kb, 8740);
    assert_int_equal(ps.vmrss_kb, 4880);
    assert_int_equal(ps.vmswap_kb, 12);
    assert_int_equal(ps.vmhwm_kb, 5120);
    assert_int_equal(ps.nvcsw, 150);
    assert_int_equal(ps.nivcsw, 3);
    assert_int_equal(ps.uid, 1000);
}

static pid_t seen[8];
static int nseen;
static void collect(void *arg, pid_t pid) { (void)arg; if (nseen < 8) seen[nseen++] = pid; }

static void children_list(void **state)
{
    nseen = 0;
    assert_int_equal(procread_pids("12 345 6789 ", 12, collect, NULL), 3);
    assert_int_equal(seen[0], 12);
    assert_int_equal(seen[2], 6789);
    assert_int_equal(procread_pids("", 0, collect, NULL), 0);
}

/* issue 16.14: a digit run longer than any pid is skipped, not overflowed
 * (signed overflow before) into a bogus pid */
static void an_overlong_digit_run_is_not_a_pid(void **state)
{
    nseen = 0;
    const char *in = "99999999999999999999999 12 4294967308 7 ";
    assert_int_equal(procread_pids(in, strlen(in), collect, NULL), 2);
    assert_int_equal(seen[0], 12);
    assert_int_equal(seen[1], 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stat_line_with_spaces_and_parens_in_comm),
        cmocka_unit_test(truncated_stat_is_rejected),
        cmocka_unit_test(io_file),
        cmocka_unit_test(status_file),
        cmocka_unit_test(children_list),
        cmocka_unit_test(an_overlong_digit_run_is_not_a_pid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
