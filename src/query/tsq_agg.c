/* tsq_agg.c — OpenTSDB 2.4's aggregators (Aggregators.java): their names,
 * how each treats a series missing at a timestamp (interpolation), and what
 * each computes over a list of values.  Used both across the series of a
 * group and inside a downsampling bucket.  All arithmetic is in doubles
 * (OpenTSDB's "double path": NaN values are skipped by sum, min, max, avg,
 * dev, count, median and the percentiles; mult, first and last keep them). */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/tsq_internal.h"

static const tsq_agg aggs[] = {
    {"sum", TSQ_AG_SUM, TSQ_IP_LERP, 0, 0},        {"min", TSQ_AG_MIN, TSQ_IP_LERP, 0, 0},
    {"max", TSQ_AG_MAX, TSQ_IP_LERP, 0, 0},        {"avg", TSQ_AG_AVG, TSQ_IP_LERP, 0, 0},
    {"none", TSQ_AG_NONE, TSQ_IP_ZIM, 0, 0},       {"median", TSQ_AG_MEDIAN, TSQ_IP_LERP, 0, 0},
    {"mult", TSQ_AG_MULT, TSQ_IP_LERP, 0, 0},      {"dev", TSQ_AG_DEV, TSQ_IP_LERP, 0, 0},
    {"diff", TSQ_AG_DIFF, TSQ_IP_LERP, 0, 0},      {"count", TSQ_AG_COUNT, TSQ_IP_ZIM, 0, 0},
    {"zimsum", TSQ_AG_SUM, TSQ_IP_ZIM, 0, 0},      {"mimmin", TSQ_AG_MIN, TSQ_IP_MAX, 0, 0},
    {"mimmax", TSQ_AG_MAX, TSQ_IP_MIN, 0, 0},      {"first", TSQ_AG_FIRST, TSQ_IP_ZIM, 0, 0},
    {"last", TSQ_AG_LAST, TSQ_IP_ZIM, 0, 0},       {"pfsum", TSQ_AG_SUM, TSQ_IP_PREV, 0, 0},
    {"squareSum", TSQ_AG_SQSUM, TSQ_IP_ZIM, 0, 0}, {"p50", TSQ_AG_PCT, TSQ_IP_LERP, 50, 0},
    {"p75", TSQ_AG_PCT, TSQ_IP_LERP, 75, 0},       {"p90", TSQ_AG_PCT, TSQ_IP_LERP, 90, 0},
    {"p95", TSQ_AG_PCT, TSQ_IP_LERP, 95, 0},       {"p99", TSQ_AG_PCT, TSQ_IP_LERP, 99, 0},
    {"p999", TSQ_AG_PCT, TSQ_IP_LERP, 99.9, 0},    {"ep50r3", TSQ_AG_PCT, TSQ_IP_LERP, 50, 3},
    {"ep75r3", TSQ_AG_PCT, TSQ_IP_LERP, 75, 3},    {"ep90r3", TSQ_AG_PCT, TSQ_IP_LERP, 90, 3},
    {"ep95r3", TSQ_AG_PCT, TSQ_IP_LERP, 95, 3},    {"ep99r3", TSQ_AG_PCT, TSQ_IP_LERP, 99, 3},
    {"ep999r3", TSQ_AG_PCT, TSQ_IP_LERP, 99.9, 3}, {"ep50r7", TSQ_AG_PCT, TSQ_IP_LERP, 50, 7},
    {"ep75r7", TSQ_AG_PCT, TSQ_IP_LERP, 75, 7},    {"ep90r7", TSQ_AG_PCT, TSQ_IP_LERP, 90, 7},
    {"ep95r7", TSQ_AG_PCT, TSQ_IP_LERP, 95, 7},    {"ep99r7", TSQ_AG_PCT, TSQ_IP_LERP, 99, 7},
    {"ep999r7", TSQ_AG_PCT, TSQ_IP_LERP, 99.9, 7},
};

const char *const tsq_aggregators[] = {
    "sum",    "min",     "max",    "avg",    "none",   "median", "mult",   "dev",       "diff",
    "count",  "zimsum",  "mimmin", "mimmax", "first",  "last",   "pfsum",  "squareSum", "p50",
    "p75",    "p90",     "p95",    "p99",    "p999",   "ep50r3", "ep75r3", "ep90r3",    "ep95r3",
    "ep99r3", "ep999r3", "ep50r7", "ep75r7", "ep90r7", "ep95r7", "ep99r7", "ep999r7",   NULL,
};

const tsq_agg *tsq_agg_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof aggs / sizeof aggs[0]; i++)
        if (strcmp(aggs[i].name, name) == 0) return &aggs[i];
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Apache Commons Math Percentile (as OpenTSDB calls it) over sorted[0..n):
 * the estimation types' index, then the common interpolating estimate. */
static double percentile(const double *sorted, size_t n, double pct, int est)
{
    double p = pct / 100.0, len = (double)n, pos;
    if (n == 1) return sorted[0];
    if (est == 3)
        pos = p <= 0.5 / len ? 0 : rint(len * p); /* */
    else if (est == 7)
        pos = p == 0 ? 0 : p == 1 ? len : 1 + (len - 1) * p; /* */
    else
        pos = p == 0 ? 0 : p == 1 ? len : p * (len + 1); /* legacy */
    if (pos < 1) return sorted[0];
    if (pos >= len) return sorted[n - 1];
    double fpos = floor(pos), dif = pos - fpos;
    size_t i = (size_t)fpos;
    double lower = sorted[i - 1], upper = sorted[i];
    return lower + dif * (upper - lower);
}

double tsq_agg_run(const tsq_agg *a, const double *v, size_t n, double *scratch)
{
    size_t i, k = 0;
    double r = 0;
    switch (a->kind) {
    case TSQ_AG_SUM:
        for (i = 0; i < n; i++)
            if (!isnan(v[i])) {
                r += v[i];
                k++;
            }
        return k ? r : NAN;
    case TSQ_AG_SQSUM:
        for (i = 0; i < n; i++)
            if (!isnan(v[i])) {
                r += v[i] * v[i];
                k++;
            }
        return k ? r : NAN;
    case TSQ_AG_AVG:
        for (i = 0; i < n; i++)
            if (!isnan(v[i])) {
                r += v[i];
                k++;
            }
        return k ? r / (double)k : NAN;
    case TSQ_AG_MIN:
        r = INFINITY;
        for (i = 0; i < n; i++)
            if (v[i] < r) r = v[i];
        return r == INFINITY ? NAN : r;
    case TSQ_AG_MAX:
        r = -INFINITY;
        for (i = 0; i < n; i++)
            if (v[i] > r) r = v[i];
        return r == -INFINITY ? NAN : r;
    case TSQ_AG_COUNT:
        for (i = 0; i < n; i++)
            if (!isnan(v[i])) k++;
        return (double)k;
    case TSQ_AG_NONE:
    case TSQ_AG_FIRST:
        return v[0];
    case TSQ_AG_LAST:
        return v[n - 1];
    case TSQ_AG_MULT:
        r = v[0];
        for (i = 1; i < n; i++) r *= v[i];
        return r;
    case TSQ_AG_DIFF:
        /* last - first non-NaN; 0 when that first is the last value */
        for (i = 0; i < n && isnan(v[i]); i++)
            ;
        if (i == n) return NAN;
        if (i == n - 1) return 0;
        return v[n - 1] - v[i];
    case TSQ_AG_DEV: {
        /* Welford, population standard deviation, NaN skipped */
        for (i = 0; i < n && isnan(v[i]); i++)
            ;
        if (i == n) return NAN;
        double mean = v[i], m2 = 0;
        long cnt = 2;
        for (i++; i < n; i++) {
            if (isnan(v[i])) continue;
            double nm = mean + (v[i] - mean) / (double)cnt;
            m2 += (v[i] - mean) * (v[i] - nm);
            mean = nm;
            cnt++;
        }
        return cnt == 2 ? 0 : sqrt(m2 / (double)(cnt - 1));
    }
    case TSQ_AG_MEDIAN:
    case TSQ_AG_PCT:
        for (i = 0; i < n; i++)
            if (!isnan(v[i])) scratch[k++] = v[i];
        if (!k) return NAN;
        if (k > 1) qsort(scratch, k, sizeof *scratch, cmp_double);
        if (a->kind == TSQ_AG_MEDIAN) return scratch[k / 2];
        return percentile(scratch, k, a->pct, a->est);
    }
    return NAN;
}

int tsq_fail(tsq_error *err, int code, const char *details, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    snprintf(err->details, sizeof err->details, "%s", details ? details : "");
    return -1;
}
