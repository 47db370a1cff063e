/* tsq_fmt.c — the numbers of the query API's answers as text: integers and
 * the shortest decimal that reads back as a double (tsq_fmt_double).  The
 * text is a contract (answers are compared byte for byte, and cached): it
 * is that of the rule below, whatever path computes it.  An answer of a
 * downsampled, interpolated sum has ~30,000 numbers that need 15 to 17
 * digits; printf("%.*g") and strtod for each were an eighth of a cold query,
 * so those digits are computed here with 128-bit integers, exactly. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/tsq_internal.h"
#include "util/pow10.h"

/* Two digits a division (the timestamps and digits of an answer's 30,000
 * points were a sixteenth of a query's time, a digit a division). */
static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                               "25262728293031323334353637383940414243444546474849"
                               "50515253545556575859606162636465666768697071727374"
                               "75767778798081828384858687888990919293949596979899";

int tsq_fmt_i64(char *t, int64_t v)
{
    char rev[24];
    int n = 24, l = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        rev[--n] = pairs[2 * r + 1];
        rev[--n] = pairs[2 * r];
    }
    if (u >= 10) {
        rev[--n] = pairs[2 * u + 1];
        rev[--n] = pairs[2 * u];
    } else {
        rev[--n] = (char)('0' + u);
    }
    if (v < 0) t[l++] = '-';
    memcpy(t + l, rev + n, (size_t)(24 - n));
    l += 24 - n;
    t[l] = 0;
    return l;
}

typedef unsigned __int128 u128;

static u128 pow10_128(int q) /* q <= 21 */
{
    return q < 20 ? util_pow10[q] : (u128)util_pow10[q - 2] * 100;
}

/* v = m * 2^e (m < 2^53, e < 0) times 10^q: its integer part *fl, and *n
 * rounded to nearest, ties to even, as printf rounds; *back is whether the
 * decimal n * 10^-q reads back as v (strtod: nearest, ties to even).  0, or
 * -1 when out of range. */
static int scaled(uint64_t m, int e, int q, uint64_t *fl, uint64_t *n, int *back)
{
    int sh = -e;
    if (q < 2 || q > 21 || sh <= 0 || sh > 69) return -1;
    u128 tq = pow10_128(q), a = (u128)m * tq; /* v * 10^q * 2^sh, < 2^123 */
    u128 f = a >> sh, r = a - (f << sh), half = (u128)1 << (sh - 1);
    u128 up = f + (r > half || (r == half && (f & 1)));
    /* |n * 2^sh - a| against half an ulp of v, in the same units (10^q / 2;
     * a quarter below a power of two) */
    u128 ns = up << sh, d = ns > a ? ns - a : a - ns;
    u128 lim = ns < a && m == ((uint64_t)1 << 52) ? tq / 4 : tq / 2;
    *back = d < lim || (d == lim && !(m & 1));
    if (f >> 64) return -1;
    *fl = (uint64_t)f;
    *n = (uint64_t)up;
    return 0;
}

/* v (1e-4 <= |v| < 1e15, not an integer) as printf("%.{15,16,17}g") with
 * the first precision that reads back would write it; 0 when that would
 * take an exponent (then printf does). */
static int fmt_exact(char *t, double v)
{
    int ex;
    double fr = frexp(fabs(v), &ex); /* |v| = fr * 2^ex, fr in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(fr, 53);
    int e = ex - 53;
    int x0 = (int)floor(log10(fabs(v)));
    for (int prec = 15; prec <= 17; prec++) {
        uint64_t n = 0, fl = 0, lo = util_pow10[prec - 1];
        int back = 0, x = x0;
        /* x: 10^x <= |v| < 10^(x+1), exactly (log10 is an estimate) */
        for (int tries = 0;; tries++) {
            if (tries == 3 || scaled(m, e, prec - 1 - x, &fl, &n, &back) < 0) return 0;
            if (fl >= lo * 10)
                x++;
            else if (fl < lo)
                x--;
            else
                break;
        }
        if (!back) continue;
        if (n == lo * 10) { /* rounding carried: printf's exponent is one more */
            n = lo;
            x++;
        }
        if (x < -4 || x >= prec) return 0;
        char d[24];
        int dl = tsq_fmt_i64(d, (int64_t)n), l = 0; /* prec digits */
        while (dl > 1 && d[dl - 1] == '0') dl--;
        if (v < 0) t[l++] = '-';
        if (x < 0) {
            t[l++] = '0';
            t[l++] = '.';
            for (int z = -1; z > x; z--) t[l++] = '0';
            memcpy(t + l, d, (size_t)dl);
            l += dl;
        } else {
            int ip = x + 1; /* digits before the point */
            for (int i = 0; i < ip; i++) t[l++] = i < dl ? d[i] : '0';
            if (dl > ip) {
                t[l++] = '.';
                memcpy(t + l, d + ip, (size_t)(dl - ip));
                l += dl - ip;
            }
        }
        t[l] = 0;
        return l;
    }
    return 0;
}

/* The shortest decimal text that reads back as exactly v: integers below
 * 1e15 as integers; values with up to 6 decimals as such (m / 10^k == v
 * means the decimal m·10^-k reads back, correctly rounded, as v); anything
 * else as printf's "%.15g", "%.16g" or "%.17g", the first that reads back. */
int tsq_fmt_double(char *t, size_t n, double v)
{
    if (fabs(v) < 1e15) {
        if (v == (double)(int64_t)v) return tsq_fmt_i64(t, (int64_t)v);
        double p = 10;
        for (int k = 1; k <= 6; k++, p *= 10) {
            double m = nearbyint(v * p);
            if (fabs(m) < 1e15 && m / p == v) {
                char d[24];
                int64_t im = (int64_t)m;
                int dl = tsq_fmt_i64(d, im < 0 ? -im : im), l = 0;
                if (im < 0) t[l++] = '-';
                if (dl <= k) { /* 0.000ddd */
                    t[l++] = '0';
                    t[l++] = '.';
                    for (int z = dl; z < k; z++) t[l++] = '0';
                } else {
                    memcpy(t + l, d, (size_t)(dl - k));
                    l += dl - k;
                    t[l++] = '.';
                }
                int from = dl <= k ? 0 : dl - k;
                memcpy(t + l, d + from, (size_t)(dl - from));
                l += dl - from;
                while (t[l - 1] == '0') l--;
                t[l] = 0;
                return l;
            }
        }
        if (fabs(v) >= 1e-4 && n >= 26) {
            int l = fmt_exact(t, v);
            if (l > 0) return l;
        }
    }
    int l = 0;
    for (int prec = 15; prec <= 17; prec++) {
        l = snprintf(t, n, "%.*g", prec, v);
        if (strtod(t, NULL) == v) return l;
    }
    return l;
}
