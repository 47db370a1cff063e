/* tsq_filter.c — the tag filters of OpenTSDB 2.4 queries (TagVFilter):
 * literal_or and its case-insensitive and negated forms, wildcard,
 * regexp (PCRE2, every bound set: docs/serve.md "Limits") and not_key,
 * compiled once per sub-query and matched against a series' tags; and the
 * query's guard (deadline, client gone, point bound) that a long match
 * checks.  Parsing the specs is tsq_parse.c's. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/tsq_internal.h"

#define BAD 400

typedef struct fcomp {
    pcre2_code *re;
    pcre2_match_context *mctx;
    pcre2_match_data *md;
    char **lits; /* literal_or family, lower-cased if case-insensitive */
    int nlits;
    char **comps; /* wildcard components */
    int ncomps;
    int has_prefix, has_postfix, match_all, icase;
} fcomp;

static const struct {
    const char *name;
    tsq_filter_type type;
} filter_types[] = {
    {"literal_or", TSQ_LITERAL_OR},
    {"iliteral_or", TSQ_ILITERAL_OR},
    {"not_literal_or", TSQ_NOT_LITERAL_OR},
    {"not_iliteral_or", TSQ_NOT_ILITERAL_OR},
    {"wildcard", TSQ_WILDCARD},
    {"iwildcard", TSQ_IWILDCARD},
    {"regexp", TSQ_REGEXP},
    {"not_key", TSQ_NOT_KEY},
};

const char *tsq_filter_type_name(tsq_filter_type t)
{
    for (size_t i = 0; i < sizeof filter_types / sizeof filter_types[0]; i++)
        if (filter_types[i].type == t) return filter_types[i].name;
    return "?";
}

int tsq_filter_type_of(const char *name, tsq_filter_type *t)
{
    for (size_t i = 0; i < sizeof filter_types / sizeof filter_types[0]; i++)
        if (strcasecmp(filter_types[i].name, name) == 0) {
            *t = filter_types[i].type;
            return 0;
        }
    return -1;
}

static void lower(char *s)
{
    for (; *s; s++) *s = (char)tolower((unsigned char)*s);
}

/* splits s at every sep (keeping empty parts, as Tags.splitString) */
char **tsq_split_all(const char *s, char sep, int *n)
{
    int cnt = 1;
    for (const char *p = s; *p; p++) cnt += *p == sep;
    char **v = calloc((size_t)cnt + 1, sizeof *v);
    if (!v) return NULL;
    int i = 0;
    const char *p = s;
    for (;;) {
        const char *q = strchr(p, sep);
        size_t l = q ? (size_t)(q - p) : strlen(p);
        v[i] = strndup(p, l);
        i++;
        if (!q) break;
        p = q + 1;
    }
    *n = i;
    return v;
}

void tsq_free_strv(char **v, int n)
{
    if (!v) return;
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

void tsq_filter_free(tsq_filter *f)
{
    fcomp *c = f->compiled;
    if (c) {
        pcre2_code_free(c->re);
        pcre2_match_context_free(c->mctx);
        pcre2_match_data_free(c->md);
        tsq_free_strv(c->lits, c->nlits);
        tsq_free_strv(c->comps, c->ncomps);
        free(c);
    }
    free(f->tagk);
    free(f->filter);
    memset(f, 0, sizeof *f);
}

/* A regexp filter through PCRE2 with every bound set (tsq.h): a pattern
 * that would compile into megabytes is refused ("regular expression is too
 * large"), a match that backtracks past the limits stops the query. */
static int compile_regexp(fcomp *c, const char *flt, tsq_error *err)
{
    size_t len = strlen(flt);
    if (len > TSQ_RE_MAX_PATTERN)
        return tsq_fail(err, BAD, NULL, "Invalid regular expression: longer than %d bytes",
                        TSQ_RE_MAX_PATTERN);
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc) return tsq_fail(err, 500, NULL, "out of memory");
    pcre2_set_max_pattern_length(cc, TSQ_RE_MAX_PATTERN);
    pcre2_set_parens_nest_limit(cc, 64);
    int ec;
    PCRE2_SIZE off;
    c->re = pcre2_compile((PCRE2_SPTR)flt, len, 0, &ec, &off, cc);
    pcre2_compile_context_free(cc);
    if (!c->re) {
        char m[160];
        pcre2_get_error_message(ec, (PCRE2_UCHAR *)m, sizeof m);
        return tsq_fail(err, BAD, NULL, "Invalid regular expression '%.80s': %s at offset %zu", flt,
                        m, (size_t)off);
    }
    c->mctx = pcre2_match_context_create(NULL);
    c->md = pcre2_match_data_create(1, NULL);
    if (!c->mctx || !c->md) return tsq_fail(err, 500, NULL, "out of memory");
    pcre2_set_match_limit(c->mctx, TSQ_RE_MATCH_LIMIT);
    pcre2_set_depth_limit(c->mctx, TSQ_RE_DEPTH_LIMIT);
    pcre2_set_heap_limit(c->mctx, TSQ_RE_HEAP_KIB);
    return 0;
}

/* 1 match, 0 none; a match over its limits stops the whole query. */
static int regexp_match(const fcomp *c, const char *v, tsq_guard *g)
{
    int rc = pcre2_match(c->re, (PCRE2_SPTR)v, strlen(v), 0, 0, c->md, c->mctx);
    if (rc >= 0) return 1;
    if (rc != PCRE2_ERROR_NOMATCH && g && !g->stop) g->stop = TSQ_STOP_REGEX;
    return 0;
}

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int tsq_guard_check(tsq_guard *g)
{
    if (!g) return 0;
    if (g->stop) return 1;
    /* the clock and the client's socket every 64 calls: a few microseconds
     * between checks whatever the work per call */
    if (g->ticks++ % 64) return 0;
    if (g->deadline_ns && mono_ns() > g->deadline_ns)
        g->stop = TSQ_STOP_DEADLINE;
    else if (g->client_gone && g->client_gone(g->client_arg))
        g->stop = TSQ_STOP_GONE;
    return g->stop != 0;
}

int tsq_guard_error(const tsq_guard *g, tsq_error *err)
{
    if (!g || !g->stop) return 0;
    switch (g->stop) {
    case TSQ_STOP_DEADLINE:
        return tsq_fail(err, 503, "narrow the time range or the filters, or raise --query-timeout",
                        "Query stopped: its deadline passed");
    case TSQ_STOP_REGEX:
        return tsq_fail(err, BAD,
                        "the regular expression backtracks too much; write it without nested "
                        "repetition or back-references",
                        "Query stopped: a regular expression exceeded its match limit");
    default:
        return tsq_fail(err, 499, NULL, "Query stopped: the client left");
    }
}

static int compile_one(tsq_filter *f, tsq_error *err)
{
    if (f->compiled) return 0;
    fcomp *c = calloc(1, sizeof *c);
    if (!c) return tsq_fail(err, 500, NULL, "out of memory");
    f->compiled = c;
    const char *flt = f->filter ? f->filter : "";
    switch (f->type) {
    case TSQ_LITERAL_OR:
    case TSQ_ILITERAL_OR:
    case TSQ_NOT_LITERAL_OR:
    case TSQ_NOT_ILITERAL_OR: {
        if (!*flt) return tsq_fail(err, BAD, NULL, "Filter cannot be null or empty");
        if (strcmp(flt, "|") == 0)
            return tsq_fail(err, BAD, NULL, "Filter must contain more than just a pipe");
        c->icase = f->type == TSQ_ILITERAL_OR || f->type == TSQ_NOT_ILITERAL_OR;
        c->lits = tsq_split_all(flt, '|', &c->nlits);
        if (!c->lits) return tsq_fail(err, 500, NULL, "out of memory");
        if (c->icase)
            for (int i = 0; i < c->nlits; i++) lower(c->lits[i]);
        return 0;
    }
    case TSQ_WILDCARD:
    case TSQ_IWILDCARD: {
        if (!*flt) return tsq_fail(err, BAD, NULL, "Filter cannot be null or empty");
        char *a = strdup(flt), *act = a;
        if (!a) return tsq_fail(err, 500, NULL, "out of memory");
        c->icase = f->type == TSQ_IWILDCARD;
        if (c->icase) lower(a);
        if (!strchr(a, '*')) {
            free(a);
            return tsq_fail(err, BAD, NULL, "Filter must contain an asterisk");
        }
        /* TagVWildcardFilter: strip leading/trailing stars, split the rest */
        if (act[0] == '*') {
            c->has_postfix = 1;
            while (act[0] == '*' && act[1]) act++;
        }
        size_t l = strlen(act);
        if (act[l - 1] == '*') {
            c->has_prefix = 1;
            while (l >= 2 && act[l - 1] == '*') act[--l] = 0;
        }
        if (strcmp(act, "*") == 0) c->match_all = 1;
        if (strchr(act, '*') && act[0] != '*')
            c->comps = tsq_split_all(act, '*', &c->ncomps);
        else {
            c->comps = calloc(2, sizeof *c->comps);
            if (c->comps) {
                c->comps[0] = strdup(act);
                c->ncomps = 1;
            }
        }
        free(a);
        if (!c->comps) return tsq_fail(err, 500, NULL, "out of memory");
        return 0;
    }
    case TSQ_REGEXP: {
        if (!*flt) return tsq_fail(err, BAD, NULL, "Filter cannot be null or empty");
        return compile_regexp(c, flt, err);
    }
    case TSQ_NOT_KEY:
        if (*flt)
            return tsq_fail(err, BAD, NULL, "The filter must be empty for the not_key filter");
        return 0;
    }
    return 0;
}

int tsq_filters_compile(tsq_sub *sub, tsq_error *err)
{
    for (int i = 0; i < sub->nfilters; i++)
        if (compile_one(&sub->filters[i], err) < 0) return -1;
    return 0;
}

static const char *tag_get(const store_tag *tags, int n, const char *k)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) { /* sorted by key */
        int mid = (lo + hi) / 2, c = strcmp(tags[mid].key, k);
        if (!c) return tags[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    for (int i = 0; i < n; i++) /* tolerate unsorted input */
        if (strcmp(tags[i].key, k) == 0) return tags[i].value;
    return NULL;
}

static int contains_from(const char *hay, const char *needle, size_t from, int icase)
{
    size_t hl = strlen(hay);
    if (from > hl) return 0;
    return (icase ? strcasestr(hay + from, needle) : strstr(hay + from, needle)) != NULL;
}

static int filter_match(const tsq_filter *f, const store_tag *tags, int ntags, tsq_guard *g)
{
    const fcomp *c = f->compiled;
    const char *v = tag_get(tags, ntags, f->tagk);
    if (f->type == TSQ_NOT_KEY) return v == NULL;
    if (!v) return 0; /* every filtered key must be present */
    /* case-insensitive filters hold lower-cased patterns; compare so */
    const char *lv = v;
    int ic = c->icase;
    switch (f->type) {
    case TSQ_LITERAL_OR:
    case TSQ_ILITERAL_OR:
    case TSQ_NOT_LITERAL_OR:
    case TSQ_NOT_ILITERAL_OR: {
        int in = 0;
        for (int i = 0; i < c->nlits && !in; i++)
            in = (ic ? strcasecmp(c->lits[i], lv) : strcmp(c->lits[i], lv)) == 0;
        return (f->type == TSQ_LITERAL_OR || f->type == TSQ_ILITERAL_OR) ? in : !in;
    }
    case TSQ_WILDCARD:
    case TSQ_IWILDCARD: {
        if (c->match_all) return 1;
        size_t l = strlen(lv);
        if (c->has_postfix && !c->has_prefix) {
            const char *last = c->comps[c->ncomps - 1];
            size_t ll = strlen(last);
            if (ll > l || (ic ? strcasecmp(lv + l - ll, last) : strcmp(lv + l - ll, last)) != 0)
                return 0;
        }
        if (c->has_prefix && !c->has_postfix &&
            (ic ? strncasecmp(lv, c->comps[0], strlen(c->comps[0]))
                : strncmp(lv, c->comps[0], strlen(c->comps[0]))))
            return 0;
        size_t idx = 0;
        for (int i = 0; i < c->ncomps; i++) {
            if (!contains_from(lv, c->comps[i], idx, ic)) return 0;
            idx += strlen(c->comps[i]);
        }
        return 1;
    }
    case TSQ_REGEXP:
        return regexp_match(c, v, g);
    case TSQ_NOT_KEY:
        break;
    }
    return 0;
}

int tsq_match(const tsq_sub *sub, const store_tag *tags, int ntags)
{
    if (tsq_guard_check(sub->guard)) return 0;
    for (int i = 0; i < sub->nfilters; i++) {
        if (!sub->filters[i].compiled && compile_one((tsq_filter *)&sub->filters[i], NULL) < 0)
            return 0;
        if (!filter_match(&sub->filters[i], tags, ntags, sub->guard)) return 0;
    }
    if (sub->explicit_tags) {
        /* exactly the filtered keys (not_key ones excluded) */
        int want = 0;
        for (int i = 0; i < sub->nfilters; i++) {
            const tsq_filter *f = &sub->filters[i];
            if (f->type == TSQ_NOT_KEY) continue;
            int dup = 0;
            for (int j = 0; j < i && !dup; j++)
                dup = sub->filters[j].type != TSQ_NOT_KEY && !strcmp(sub->filters[j].tagk, f->tagk);
            want += !dup;
        }
        if (ntags != want) return 0;
    }
    return 1;
}
