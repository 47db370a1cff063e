/* The numbers of the query API's answers (src/query/tsq_fmt.c): every double
 * is written as its rule says, byte for byte: integers below 1e15 as
 * integers, decimals of up to 6 places as such, anything else as the first
 * of printf's "%.15g", "%.16g", "%.17g" that reads back.  The rule is
 * written out here with printf and strtod (the way the formatter itself
 * worked before it computed the digits), and compared on tricky doubles and
 * on a million random ones of the kinds answers hold. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "query/tsq_internal.h"

/* the rule, with printf */
static void rule(char *t, size_t n, double v)
{
    if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
        snprintf(t, n, "%lld", (long long)(int64_t)v);
        return;
    }
    double p = 10;
    for (int k = 1; k <= 6 && fabs(v) < 1e15; k++, p *= 10) {
        double m = nearbyint(v * p);
        if (fabs(m) < 1e15 && m / p == v) {
            int l = snprintf(t, n, "%.*f", k, v);
            while (t[l - 1] == '0') t[--l] = 0;
            return;
        }
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(t, n, "%.*g", prec, v);
        if (strtod(t, NULL) == v) return;
    }
}

static int check(double v)
{
    char got[40], want[40];
    int l = tsq_fmt_double(got, sizeof got, v);
    rule(want, sizeof want, v);
    if (strcmp(got, want) || l != (int)strlen(got)) {
        print_error("%a: wrote \"%s\" (%d bytes), the rule says \"%s\"\n", v, got, l, want);
        return 1;
    }
    if (strtod(got, NULL) != v) {
        print_error("%a: \"%s\" does not read back\n", v, got);
        return 1;
    }
    return 0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void tricky_doubles_are_written_by_the_rule(void **st)
{
    const double v[] = {
        0.1,
        0.2,
        0.1 + 0.2,
        1.0 / 3,
        2.0 / 3,
        -1.0 / 3,
        1e-4,
        nextafter(1e-4, 0),
        nextafter(1e-4, 1),
        0.00009999999999999999,
        0.000123456789012345,
        9.9999999999999995,
        9.999999999999998,
        0.99999999999999989,
        0.9999999999999999,
        99999999999999.99,
        999999999999999.5,
        nextafter(1e15, 0),
        1e14 + 0.1,
        1e13 + 0.3,
        123456789012.345678,
        4503599627370495.5,
        0x1p-10,
        0x1p-13 + 0x1p-60,
        0x1p40 + 0.5,
        0x1p49 + 0.25,
        0x1.0p-2,
        nextafter(0.25, 0),
        nextafter(0.25, 1),
        nextafter(1, 0),
        nextafter(1, 2),
        nextafter(2, 0),
        nextafter(1024, 0),
        5e-324,
        DBL_MIN,
        DBL_MAX,
        -DBL_MAX,
        1e-7,
        1.5e-7,
        1e20,
        2.5e15,
        1e15,
        -0.0,
        0.0,
        1.0000000000000002,
        1.0000000000000004,
        5.0000000000000001e-5,
        3.0517578125e-05,
        0.1 * 3,
        1.1 * 1.1,
        100.0 / 3,
        1e6 / 7,
        123.456,
        8.5,
        0.5,
        0.015625,
        1.234567890123456e-3,
        4.35,
        2.675,
        1.005,
        0.045,
        7.0 / 1024,
        1e-5 / 3,
        0.000099999999999999991,
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        bad += check(v[i]);
        bad += check(-v[i]);
    }
    /* around every power of ten and of two in the range the digits are computed for */
    for (int e = -5; e <= 15; e++) {
        double p = pow(10, e);
        double x = p;
        for (int s = 0; s < 4; s++) x = nextafter(x, 0);
        for (int s = 0; s < 8; s++, x = nextafter(x, INFINITY)) bad += check(x);
    }
    for (int e = -16; e <= 50; e++) {
        double x = ldexp(1, e);
        for (int s = 0; s < 4; s++) x = nextafter(x, 0);
        for (int s = 0; s < 8; s++, x = nextafter(x, INFINITY)) bad += check(x);
    }
    assert_int_equal(bad, 0);
}

static void a_million_random_doubles_are_written_by_the_rule(void **st)
{
    int bad = 0;
    for (int i = 0; i < 1000000 && bad < 10; i++) {
        uint64_t r = next();
        double v;
        switch (i % 5) {
        case 0: /* any bits with an exponent from 2^-20 to 2^52 */
            v = ldexp((double)(r >> 11) / 0x1p53 + 0.5, (int)(next() % 73) - 20);
            break;
        case 1: /* sums of interpolated integers, as a downsampled sum */
            v = (double)(r % 100000000) * ((double)(next() % 1000) / 1000.0) +
                (double)(next() % 1000000) / 7.0;
            break;
        case 2: /* averages of integers */
            v = (double)(r % 10000000000ull) / (double)(1 + next() % 60);
            break;
        case 3: /* decimals and their neighbours */
            v = nextafter((double)(r % 100000000) / 1000.0, (next() & 1) ? INFINITY : 0);
            break;
        default: /* any finite bits */
            memcpy(&v, &r, sizeof v);
            if (!isfinite(v)) continue;
        }
        bad += check((r & 1) ? v : -v);
    }
    assert_int_equal(bad, 0);
}

/* Integers (timestamps, and the digits of doubles) as printf's %lld, at
 * every length and at the extremes. */
static void integers_are_written_as_printf_writes_them(void **st)
{
    (void)st;
    int64_t v[] = {0,
                   1,
                   9,
                   10,
                   11,
                   99,
                   100,
                   101,
                   999,
                   1000,
                   INT64_MAX,
                   INT64_MIN,
                   INT64_MIN + 1,
                   1790000000,
                   1790000000000LL};
    int bad = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0] * 2 + 40; i++) {
        int64_t x = i < sizeof v / sizeof v[0] ? v[i] : (int64_t)next();
        if (i >= sizeof v / sizeof v[0] && i < sizeof v / sizeof v[0] + 40) { /* 10^k, 10^k - 1 */
            int k = (int)(i - sizeof v / sizeof v[0]) / 2;
            x = 1;
            for (int j = 0; j < k % 19; j++) x *= 10;
            x -= i % 2;
        }
        for (int sign = 0; sign < 2; sign++, x = x == INT64_MIN ? x : -x) {
            char got[24], want[24];
            int l = tsq_fmt_i64(got, x);
            snprintf(want, sizeof want, "%lld", (long long)x);
            if (strcmp(got, want) || l != (int)strlen(want)) {
                print_error("%lld: wrote \"%s\" (%d bytes)\n", (long long)x, got, l);
                bad++;
            }
        }
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers_are_written_as_printf_writes_them),
        cmocka_unit_test(tricky_doubles_are_written_by_the_rule),
        cmocka_unit_test(a_million_random_doubles_are_written_by_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
