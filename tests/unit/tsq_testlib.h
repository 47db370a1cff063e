/* tsq_testlib.h — helpers shared by the query-engine unit tests
 * (test_tsq*.c): building raw series by hand, running a JSON query over
 * them, and checking an output series against hand-computed points. */
#ifndef TSQ_TESTLIB_H
#define TSQ_TESTLIB_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/tsq.h"

/* An hour-aligned base time (seconds 1699999200 = 2023-11-14 22:00:00 UTC). */
#define B_S  1699999200LL
#define B    (B_S * 1000LL)
#define S(x) (B + (int64_t)(x) * 1000)      /* B plus x seconds, in ms */

static int tag_cmp(const void *a, const void *b)
{
    return strcmp(((const store_tag *)a)->key, ((const store_tag *)b)->key);
}

/* tags as "k=v,k2=v2" ("" for none) */
static inline void add_series(tsq_set *set, const char *metric, const char *tags,
                              const int64_t *ts, const double *v, size_t n)
{
    if (set->n == set->cap) {
        set->cap = set->cap ? set->cap * 2 : 8;
        set->v = realloc(set->v, set->cap * sizeof *set->v);
    }
    tsq_series *s = &set->v[set->n++];
    memset(s, 0, sizeof *s);
    s->metric = strdup(metric);
    s->tags = calloc(16, sizeof *s->tags);
    char *buf = strdup(tags), *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(p, '=');
        *eq = 0;
        s->tags[s->ntags].key = strdup(p);
        s->tags[s->ntags++].value = strdup(eq + 1);
    }
    free(buf);
    qsort(s->tags, (size_t)s->ntags, sizeof *s->tags, tag_cmp);
    s->pts.ts = malloc((n ? n : 1) * sizeof *s->pts.ts);
    s->pts.val = malloc((n ? n : 1) * sizeof *s->pts.val);
    memcpy(s->pts.ts, ts, n * sizeof *ts);
    memcpy(s->pts.val, v, n * sizeof *v);
    s->pts.n = s->pts.cap = n;
}

/* Parses body (now = B + 1 h), evaluates every sub-query over set. */
/* the guard's point bound of the queries run_query makes (0: the default) */
static long test_max_points;

static inline int run_query(const char *body, const tsq_set *set, tsq_query *q, tsq_result *r, tsq_error *err)
{
    memset(r, 0, sizeof *r);
    if (tsq_parse_json(body, strlen(body), B + 3600000, q, err) < 0)
        return -1;
    q->guard.max_points = test_max_points;
    for (int i = 0; i < q->nsubs; i++)
        if (tsq_eval(q, &q->subs[i], set, r, err) < 0)
            return -1;
    return 0;
}

static inline int near(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return fabs(a - b) <= 1e-9 * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + 1e-300;
}

/* o must hold exactly these points */
#define expect_points(o, T, V) do {                                               \
        size_t n_ = sizeof(T) / sizeof((T)[0]);                                    \
        if ((o)->n != n_) fail_msg("got %zu points, want %zu", (o)->n, n_);        \
        for (size_t i_ = 0; i_ < n_; i_++) {                                       \
            if ((o)->ts[i_] != (T)[i_])                                            \
                fail_msg("point %zu: ts %lld, want %lld", i_, (long long)(o)->ts[i_], (long long)(T)[i_]); \
            if (!near((o)->val[i_], (V)[i_]))                                      \
                fail_msg("point %zu: value %.17g, want %.17g", i_, (o)->val[i_], (double)(V)[i_]); \
        }                                                                          \
    } while (0)

static inline const char *out_tag(const tsq_out *o, const char *k)
{
    for (int i = 0; i < o->ntags; i++)
        if (!strcmp(o->tags[i].key, k))
            return o->tags[i].value;
    return NULL;
}

#endif
