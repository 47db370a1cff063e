/* tsq_internal.h — what the query engine's files (tsq_agg.c, tsq_parse.c, tsq_filter.c,
 * tsq_eval.c, tsq_json.c, tsq_local.c) share and nobody else uses: the
 * aggregator table with OpenTSDB 2.4's interpolation rule per aggregator,
 * error helpers, downsample/duration parsing and the scan range. */
#ifndef JOBSCOPE_TSQ_INTERNAL_H
#define JOBSCOPE_TSQ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "query/tsq.h"

/* How a series that has no point at a timestamp contributes there
 * (OpenTSDB Aggregators.Interpolation). */
typedef enum tsq_interp {
    TSQ_IP_LERP, /* linear between its own neighbours */
    TSQ_IP_ZIM,  /* 0 */
    TSQ_IP_MAX,  /* DBL_MAX (so min ignores it) */
    TSQ_IP_MIN,  /* Java Double.MIN_VALUE, 4.9e-324 (so max ignores it) */
    TSQ_IP_PREV, /* its previous value */
} tsq_interp;

typedef enum tsq_agg_kind {
    TSQ_AG_SUM,
    TSQ_AG_SQSUM,
    TSQ_AG_MIN,
    TSQ_AG_MAX,
    TSQ_AG_AVG,
    TSQ_AG_MEDIAN,
    TSQ_AG_NONE,
    TSQ_AG_MULT,
    TSQ_AG_DEV,
    TSQ_AG_DIFF,
    TSQ_AG_COUNT,
    TSQ_AG_FIRST,
    TSQ_AG_LAST,
    TSQ_AG_PCT,
} tsq_agg_kind;

typedef struct tsq_agg {
    const char *name;
    tsq_agg_kind kind;
    tsq_interp interp;
    double pct; /* TSQ_AG_PCT: 50 .. 99.9 */
    int est;    /* 0 legacy (pNN), 3 = R-3, 7 = R-7 */
} tsq_agg;

/* NULL when unknown (names are case-sensitive, as in OpenTSDB). */
const tsq_agg *tsq_agg_find(const char *name);
/* Runs the aggregator over n >= 1 values in series order, with OpenTSDB's
 * double-path NaN rules; scratch holds n doubles (median, percentiles). */
double tsq_agg_run(const tsq_agg *a, const double *v, size_t n, double *scratch);

/* err->code/message/details; returns -1 for `return tsq_fail(...)`. */
int tsq_fail(tsq_error *err, int code, const char *details, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "10s", "1h", "500ms": milliseconds, or -1 with err's message set. */
int64_t tsq_parse_duration(const char *s, tsq_error *err);
/* "<n><unit>[c]-<agg>[-<fill>]" or "0all-<agg>[-<fill>]". */
int tsq_parse_downsample(const char *spec, tsq_downsample *ds, tsq_error *err);

/* Compiles the sub-query's filters (regexes, literal lists, globs); 0 or -1
 * (tsq_filter.c). */
int tsq_filters_compile(tsq_sub *sub, tsq_error *err);
void tsq_filter_free(tsq_filter *f);
/* The filter type named name ("literal_or", ...): 0, or -1 when unknown. */
int tsq_filter_type_of(const char *name, tsq_filter_type *t);
/* s split at every sep into a new array of new strings (*n of them); free
 * with tsq_free_strv.  NULL when out of memory. */
char **tsq_split_all(const char *s, char sep, int *n);
void tsq_free_strv(char **v, int n);

/* The shortest decimal text that reads back as v (n >= 40 bytes); returns
 * its length (tsq_fmt.c). */
int tsq_fmt_double(char *t, size_t n, double v);
/* v in decimal (t >= 21 bytes); returns its length. */
int tsq_fmt_i64(char *t, int64_t v);

#endif
