/* tsq_parse.c — reading OpenTSDB 2.4 queries: POST /api/query bodies
 * (jansson), the GET form's m= strings, times (DateTime.parseDateTimeString),
 * durations, downsample specifications and the tag filters' specs
 * (Tags.parseWithMetricAndFilters), with OpenTSDB's error messages; the
 * filters themselves are tsq_filter.c's.  The engine (tsq_eval.c) then
 * runs what is parsed here. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/tsq_internal.h"

#define BAD 400

/* ---------------------------------------------------------------- times */

static int all_digits(const char *s, size_t n)
{
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return 0;
    return 1;
}

int64_t tsq_parse_duration(const char *s, tsq_error *err)
{
    size_t len = strlen(s), unit = 0;
    if (!len)
        return tsq_fail(err, BAD, NULL, "Invalid duration, must have an integer and unit: %s", s),
               -1;
    while (isdigit((unsigned char)s[unit])) {
        unit++;
        if (unit >= len)
            return tsq_fail(err, BAD, NULL, "Invalid duration, must have an integer and unit: %s",
                            s),
                   -1;
    }
    if (unit == 0 || unit > 18)
        return tsq_fail(err, BAD, NULL, "Invalid duration (number): %s", s), -1;
    int64_t n = strtoll(s, NULL, 10);
    if (n <= 0) return tsq_fail(err, BAD, NULL, "Zero or negative duration: %s", s), -1;
    const char *u = s + unit;
    int64_t mult;
    if (strcmp(u, "ms") == 0) return n;
    if (strlen(u) != 1) return tsq_fail(err, BAD, NULL, "Invalid duration (suffix): %s", s), -1;
    switch (tolower((unsigned char)*u)) {
    case 's':
        mult = 1;
        break;
    case 'm':
        mult = 60;
        break;
    case 'h':
        mult = 3600;
        break;
    case 'd':
        mult = 86400;
        break;
    case 'w':
        mult = 86400 * 7;
        break;
    case 'n':
        mult = 86400 * 30;
        break;
    case 'y':
        mult = 86400 * 365;
        break;
    default:
        return tsq_fail(err, BAD, NULL, "Invalid duration (suffix): %s", s), -1;
    }
    mult *= 1000;
    if ((double)n * (double)mult > 9.2e18)
        return tsq_fail(err, BAD, NULL, "Duration must be < Long.MAX_VALUE ms: %s", s), -1;
    return n * mult;
}

static int parse_time_e(const char *s, int64_t now_ms, int64_t *out, tsq_error *err)
{
    size_t len = s ? strlen(s) : 0;
    if (!len) return tsq_fail(err, BAD, NULL, "Missing start time");
    if (len > 2 && strcmp(s + len - 2, "ms") == 0 && all_digits(s, len - 2)) {
        *out = strtoll(s, NULL, 10);
        return 0;
    }
    if (strcasecmp(s, "now") == 0) {
        *out = now_ms;
        return 0;
    }
    if (len > 4 && strcasecmp(s + len - 4, "-ago") == 0) {
        char d[64];
        if (len - 4 >= sizeof d)
            return tsq_fail(err, BAD, NULL, "Invalid duration (number): %s", s);
        memcpy(d, s, len - 4);
        d[len - 4] = 0;
        int64_t ms = tsq_parse_duration(d, err);
        if (ms < 0) return -1;
        *out = now_ms - ms;
        return 0;
    }
    if (strchr(s, '/') || strchr(s, ':')) {
        /* yyyy/MM/dd, yyyy/MM/dd-HH:mm, yyyy/MM/dd HH:mm[:ss], in the
         * server's time zone (as OpenTSDB's SimpleDateFormat) */
        struct tm tm = {0};
        int y, mo, d, h = 0, mi = 0, sec = 0, used = 0;
        char sep = 0;
        int ok = 0;
        if (len == 10)
            ok = sscanf(s, "%4d/%2d/%2d%n", &y, &mo, &d, &used) == 3;
        else if (len == 16)
            ok = sscanf(s, "%4d/%2d/%2d%c%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &used) == 6;
        else if (len == 19)
            ok = sscanf(s, "%4d/%2d/%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &sec, &used) ==
                 7;
        else
            return tsq_fail(err, BAD, NULL, "Invalid absolute date: %s", s);
        if (!ok || (size_t)used != len || (sep && sep != '-' && sep != ' ') || mo < 1 || mo > 12 ||
            d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 || mi < 0 || sec < 0)
            return tsq_fail(err, BAD, NULL, "Invalid date: %s. Unparseable date: \"%s\"", s, s);
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
        tm.tm_isdst = -1;
        time_t t = mktime(&tm);
        if (t == (time_t)-1) return tsq_fail(err, BAD, NULL, "Invalid date: %s", s);
        *out = (int64_t)t * 1000;
        return 0;
    }
    const char *dot = strchr(s, '.');
    if (dot) {
        /* <10 digits>.<1-3 digits> */
        size_t fl = len - 11;
        if (dot - s != 10 || !all_digits(s, 10) || fl < 1 || fl > 3 || !all_digits(dot + 1, fl))
            return tsq_fail(err, BAD, NULL,
                            "Invalid time: %s. Millisecond timestamps must be in the "
                            "format <seconds>.<ms> where the milliseconds are limited to 3 digits",
                            s);
        int64_t ms = strtoll(dot + 1, NULL, 10);
        for (size_t i = fl; i < 3; i++) ms *= 10;
        *out = strtoll(s, NULL, 10) * 1000 + ms;
        return 0;
    }
    if (s[0] == '-')
        return tsq_fail(err, BAD, NULL, "Invalid time: %s. Negative timestamps are not supported.",
                        s);
    if (!all_digits(s, len) || len > 18)
        return tsq_fail(err, BAD, NULL, "Invalid time: %s. For input string: \"%s\"", s, s);
    int64_t t = strtoll(s, NULL, 10);
    *out = len <= 10 ? t * 1000 : t;
    return 0;
}

int tsq_parse_time(const char *s, int64_t now_ms, int64_t *out_ms)
{
    tsq_error e;
    return parse_time_e(s, now_ms, out_ms, &e);
}

/* ---------------------------------------------------------- downsample */

int tsq_parse_downsample(const char *spec, tsq_downsample *ds, tsq_error *err)
{
    char buf[128], *parts[4];
    int np = 0;
    memset(ds, 0, sizeof *ds);
    if (strlen(spec) >= sizeof buf)
        return tsq_fail(err, BAD, NULL, "Invalid downsampling specifier '%.100s'", spec);
    strcpy(buf, spec);
    /* Java's split("-") drops trailing empty strings */
    for (char *p = buf, *q; np < 4; p = q + 1) {
        parts[np++] = p;
        if (!(q = strchr(p, '-'))) break;
        *q = 0;
    }
    while (np > 0 && !*parts[np - 1]) np--;
    if (np < 2)
        return tsq_fail(err, BAD, NULL,
                        "Invalid downsampling specifier '%s': must provide at "
                        "least interval and function",
                        spec);
    if (np > 3 || strchr(parts[np - 1], '-'))
        return tsq_fail(err, BAD, NULL,
                        "Invalid downsampling specifier '%s': must consist of "
                        "interval, function, and optional fill policy",
                        spec);
    if (strstr(parts[0], "all")) {
        ds->all = 1;
        ds->interval_ms = 0;
    } else {
        size_t l = strlen(parts[0]);
        if (l && parts[0][l - 1] == 'c') /* calendar: epoch-aligned here */
            parts[0][l - 1] = 0;
        int64_t iv = tsq_parse_duration(parts[0], err);
        if (iv < 0) return -1;
        ds->interval_ms = iv;
    }
    if (!tsq_agg_find(parts[1]))
        return tsq_fail(err, BAD, NULL, "No such downsampling function: %s", parts[1]);
    if (strcmp(parts[1], "none") == 0)
        return tsq_fail(err, BAD, NULL, "cannot use the NONE aggregator for downsampling");
    snprintf(ds->agg, sizeof ds->agg, "%s", parts[1]);
    ds->fill = TSQ_FILL_NONE;
    if (np == 3) {
        if (!strcasecmp(parts[2], "none"))
            ds->fill = TSQ_FILL_NONE;
        else if (!strcasecmp(parts[2], "nan"))
            ds->fill = TSQ_FILL_NAN;
        else if (!strcasecmp(parts[2], "null"))
            ds->fill = TSQ_FILL_NULL;
        else if (!strcasecmp(parts[2], "zero"))
            ds->fill = TSQ_FILL_ZERO;
        else
            return tsq_fail(err, BAD, NULL, "Unrecognized fill policy: %s", parts[2]);
    }
    return 0;
}

/* ------------------------------------------------------- sub-query build */

static int add_filter(tsq_sub *sub, tsq_filter_type t, const char *k, const char *flt, int group_by)
{
    /* a group-by filter equal to an existing one only marks it (mapToFilters) */
    if (group_by)
        for (int i = 0; i < sub->nfilters; i++) {
            tsq_filter *e = &sub->filters[i];
            if (e->type == t && !strcmp(e->tagk, k) && !strcmp(e->filter ? e->filter : "", flt)) {
                e->group_by = 1;
                return 0;
            }
        }
    tsq_filter *nf = realloc(sub->filters, (size_t)(sub->nfilters + 1) * sizeof *nf);
    if (!nf) return -1;
    sub->filters = nf;
    tsq_filter *f = &nf[sub->nfilters];
    memset(f, 0, sizeof *f);
    f->type = t;
    f->tagk = strdup(k);
    f->filter = strdup(flt);
    f->group_by = group_by;
    sub->nfilters++;
    return f->tagk && f->filter ? 0 : -1;
}

/* TagVFilter.getFilter + mapToFilters for one "k=v" of a tags map or braces */
static int add_tag_spec(tsq_sub *sub, const char *k, const char *v, int group_by, tsq_error *err)
{
    if (!*k) return tsq_fail(err, BAD, NULL, "Tagk cannot be null or empty");
    if (!*v) return tsq_fail(err, BAD, NULL, "Filter cannot be null or empty");
    const char *paren = strchr(v, '(');
    if (strcmp(v, "*") == 0)
        return add_filter(sub, TSQ_WILDCARD, k, "*", group_by) < 0
                   ? tsq_fail(err, 500, NULL, "out of memory")
                   : 0;
    if (paren) {
        char type[32];
        size_t tl = (size_t)(paren - v);
        size_t vl = strlen(v);
        if (tl >= sizeof type)
            return tsq_fail(err, BAD, NULL, "Could not find a filter plugin of type: %.*s", (int)tl,
                            v);
        memcpy(type, v, tl);
        type[tl] = 0;
        tsq_filter_type t;
        if (tsq_filter_type_of(type, &t) < 0)
            return tsq_fail(err, BAD, NULL, "Could not find a filter plugin of type: %s", type);
        if (v[vl - 1] != ')')
            return tsq_fail(err, BAD, NULL, "Missing closing parenthesis in filter: %s", v);
        char *inner = strndup(paren + 1, vl - tl - 2);
        if (!inner) return tsq_fail(err, 500, NULL, "out of memory");
        int rc = add_filter(sub, t, k, inner, group_by);
        free(inner);
        return rc < 0 ? tsq_fail(err, 500, NULL, "out of memory") : 0;
    }
    if (strchr(v, '*')) /* the "web*" shortcut: case-insensitive glob */
        return add_filter(sub, TSQ_IWILDCARD, k, v, group_by) < 0
                   ? tsq_fail(err, 500, NULL, "out of memory")
                   : 0;
    return add_filter(sub, TSQ_LITERAL_OR, k, v, group_by) < 0
               ? tsq_fail(err, 500, NULL, "out of memory")
               : 0;
}

static void sub_free(tsq_sub *s)
{
    free(s->metric);
    for (int i = 0; i < s->nfilters; i++) tsq_filter_free(&s->filters[i]);
    free(s->filters);
    free(s->echo_json);
    memset(s, 0, sizeof *s);
}

void tsq_query_free(tsq_query *q)
{
    if (!q) return;
    for (int i = 0; i < q->nsubs; i++) sub_free(&q->subs[i]);
    free(q->subs);
    memset(q, 0, sizeof *q);
}

static tsq_sub *new_sub(tsq_query *q)
{
    tsq_sub *ns = realloc(q->subs, (size_t)(q->nsubs + 1) * sizeof *ns);
    if (!ns) return NULL;
    q->subs = ns;
    tsq_sub *s = &ns[q->nsubs];
    memset(s, 0, sizeof *s);
    s->index = q->nsubs++;
    s->rate_opt.counter_max = 9223372036854775807.0; /* Long.MAX_VALUE */
    return s;
}

/* TSSubQuery.validateAndSetQuery: aggregator, metric, downsample, filters */
static int validate_sub(tsq_sub *s, const char *downsample, tsq_error *err)
{
    if (!s->aggregator[0]) return tsq_fail(err, BAD, NULL, "Missing the aggregation function");
    if (!tsq_agg_find(s->aggregator))
        return tsq_fail(err, BAD, NULL, "No such aggregation function: %s", s->aggregator);
    if (!s->metric || !*s->metric)
        return tsq_fail(err, BAD, NULL, "Missing the metric or tsuids, provide at least one");
    if (downsample && *downsample && tsq_parse_downsample(downsample, &s->ds, err) < 0) return -1;
    return tsq_filters_compile(s, err);
}

static int set_times(tsq_query *q, const char *start, const char *end, int64_t now_ms,
                     tsq_error *err)
{
    if (!start || !*start) return tsq_fail(err, BAD, NULL, "Missing start time");
    if (parse_time_e(start, now_ms, &q->start_ms, err) < 0) return -1;
    if (end && *end) {
        if (parse_time_e(end, now_ms, &q->end_ms, err) < 0) return -1;
    } else
        q->end_ms = now_ms;
    if (q->end_ms <= q->start_ms)
        return tsq_fail(err, BAD, NULL,
                        "End time [%" PRId64 "] must be greater than the start time [%" PRId64 "]",
                        q->end_ms, q->start_ms);
    /* nothing is stored beyond 2^53 ms either side (the store's bound):
     * "end=9223372036854775807ms" means everything, and the engine's
     * arithmetic on the range stays far from overflowing */
    const int64_t lim = (int64_t)1 << 53;
    if (q->start_ms < -lim) q->start_ms = -lim;
    if (q->end_ms > lim) q->end_ms = lim;
    if (q->start_ms >= lim) q->start_ms = lim - 1;
    if (q->end_ms <= -lim) q->end_ms = -lim + 1;
    return 0;
}

/* ------------------------------------------------------------ JSON body */

static int jbool(json_t *v)
{
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_string(v)) return strcasecmp(json_string_value(v), "true") == 0;
    if (json_is_integer(v)) return json_integer_value(v) != 0;
    return 0;
}

/* start/end: a string, or a number Jackson turns into its digits */
static int jtime_str(json_t *v, char *buf, size_t n)
{
    if (!v || json_is_null(v)) {
        buf[0] = 0;
        return 0;
    }
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%.17g", json_real_value(v));
    else
        return -1;
    return 0;
}

static int jnum(json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        char *e;
        errno = 0;
        *out = strtod(json_string_value(v), &e);
        return *e || errno ? -1 : 0;
    }
    return -1;
}

static int parse_json_sub(tsq_query *q, json_t *jq, tsq_error *err)
{
    if (!json_is_object(jq)) return tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
    tsq_sub *s = new_sub(q);
    if (!s) return tsq_fail(err, 500, NULL, "out of memory");
    json_t *v;
    if ((v = json_object_get(jq, "aggregator")) && json_is_string(v))
        snprintf(s->aggregator, sizeof s->aggregator, "%s", json_string_value(v));
    if ((v = json_object_get(jq, "metric")) && json_is_string(v))
        s->metric = strdup(json_string_value(v));
    if ((!s->metric || !*s->metric) && json_array_size(json_object_get(jq, "tsuids")))
        return tsq_fail(err, BAD, NULL,
                        "tsuid queries are not supported: give the metric and filters");
    s->rate = jbool(json_object_get(jq, "rate"));
    s->explicit_tags = jbool(json_object_get(jq, "explicitTags"));
    json_t *ro = json_object_get(jq, "rateOptions");
    if (json_is_object(ro)) {
        double d;
        s->rate_opt.counter = jbool(json_object_get(ro, "counter"));
        s->rate_opt.drop_resets = jbool(json_object_get(ro, "dropResets"));
        /* null or "" leave the default */
        if ((v = json_object_get(ro, "counterMax")) && !json_is_null(v) &&
            !(json_is_string(v) && !*json_string_value(v))) {
            if (jnum(v, &d) < 0) return tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
            s->rate_opt.counter_max = d;
        }
        if ((v = json_object_get(ro, "resetValue")) && !json_is_null(v) &&
            !(json_is_string(v) && !*json_string_value(v))) {
            if (jnum(v, &d) < 0) return tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
            s->rate_opt.reset_value = d;
        }
    }
    /* "filters" and the deprecated "tags" each replace the filter list
     * (TSSubQuery's setters): the one given last wins */
    int pos = 0, pos_f = -1, pos_t = -1;
    const char *key;
    json_t *val;
    json_object_foreach(jq, key, val)
    {
        if (!strcmp(key, "filters"))
            pos_f = pos;
        else if (!strcmp(key, "tags"))
            pos_t = pos;
        pos++;
    }
    json_t *fl = pos_f > pos_t ? json_object_get(jq, "filters") : NULL;
    if (fl && !json_is_null(fl)) {
        if (!json_is_array(fl)) return tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
        size_t i;
        json_t *f;
        json_array_foreach(fl, i, f)
        {
            if (!json_is_object(f))
                return tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
            json_t *jt = json_object_get(f, "type"), *jk = json_object_get(f, "tagk"),
                   *jf = json_object_get(f, "filter");
            if (!json_is_string(jt) || !*json_string_value(jt))
                return tsq_fail(err, BAD, NULL, "Missing filter type");
            if (!json_is_string(jk) || !*json_string_value(jk))
                return tsq_fail(err, BAD, NULL, "Tagk cannot be null or empty");
            tsq_filter_type t;
            if (tsq_filter_type_of(json_string_value(jt), &t) < 0)
                return tsq_fail(err, BAD, NULL, "Could not find a filter plugin of type: %s",
                                json_string_value(jt));
            const char *fs = json_is_string(jf) ? json_string_value(jf) : "";
            if (add_filter(s, t, json_string_value(jk), fs, 0) < 0)
                return tsq_fail(err, 500, NULL, "out of memory");
            s->filters[s->nfilters - 1].group_by = jbool(json_object_get(f, "groupBy"));
        }
    }
    json_t *tags = pos_t > pos_f ? json_object_get(jq, "tags") : NULL;
    if (tags && !json_is_null(tags) && !json_is_object(tags))
        return tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
    if (json_is_object(tags)) {
        const char *k;
        json_object_foreach(tags, k, v)
        {
            if (!json_is_string(v))
                return tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
            if (add_tag_spec(s, k, json_string_value(v), 1, err) < 0) return -1;
        }
    }
    const char *ds = NULL;
    if ((v = json_object_get(jq, "downsample")) && json_is_string(v)) ds = json_string_value(v);
    /* the echo for showQuery: the sub-query as received, plus its index */
    json_t *echo = json_deep_copy(jq);
    if (echo) {
        json_object_set_new(echo, "index", json_integer(s->index));
        s->echo_json = json_dumps(echo, JSON_COMPACT);
        json_decref(echo);
    }
    return validate_sub(s, ds, err);
}

int tsq_parse_json(const char *body, size_t len, int64_t now_ms, tsq_query *q, tsq_error *err)
{
    memset(q, 0, sizeof *q);
    if (!body || !len)
        return tsq_fail(err, BAD, "Supply valid JSON formatted data in the body of your request",
                        "Missing message content");
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return tsq_fail(err, BAD, root ? "not a JSON object" : je.text,
                        "Unable to parse the given JSON");
    }
    char start[64], end[64];
    int rc = -1;
    if (jtime_str(json_object_get(root, "start"), start, sizeof start) < 0 ||
        jtime_str(json_object_get(root, "end"), end, sizeof end) < 0) {
        tsq_fail(err, BAD, NULL, "Unable to parse the given JSON");
        goto out;
    }
    q->ms_resolution = jbool(json_object_get(root, "msResolution"));
    q->show_query = jbool(json_object_get(root, "showQuery"));
    if (set_times(q, start, end, now_ms, err) < 0) goto out;
    json_t *qs = json_object_get(root, "queries");
    if (!json_is_array(qs) || json_array_size(qs) == 0) {
        tsq_fail(err, BAD, NULL, "Missing queries");
        goto out;
    }
    size_t i;
    json_t *jq;
    json_array_foreach(qs, i, jq) if (parse_json_sub(q, jq, err) < 0) goto out;
    rc = 0;
out:
    json_decref(root);
    if (rc < 0) tsq_query_free(q);
    return rc;
}

/* --------------------------------------------------------- GET m= form */

/* QueryRpc.parseRateOptions for "rate{counter[,max[,reset]]}" */
static int parse_rate_spec(tsq_sub *s, const char *spec, tsq_error *err)
{
    size_t l = strlen(spec);
    s->rate = 1;
    if (!strchr(spec, '{') || l == 4) return 0;
    if (l < 6) return tsq_fail(err, BAD, NULL, "Invalid rate options specification: %s", spec);
    char *inner = strndup(spec + 5, l - 6);
    int n;
    char **parts = inner ? tsq_split_all(inner, ',', &n) : NULL;
    free(inner);
    if (!parts) return tsq_fail(err, 500, NULL, "out of memory");
    int rc = 0;
    if (n < 1 || n > 3) {
        rc = tsq_fail(err, BAD, NULL,
                      "Incorrect number of values in rate options specification, must be "
                      "counter[,counter max value,reset value], recieved: %d parts",
                      n);
        goto out;
    }
    size_t pl = strlen(parts[0]);
    s->rate_opt.counter = pl >= 7 && strcmp(parts[0] + pl - 7, "counter") == 0;
    s->rate_opt.drop_resets = strcmp(parts[0], "dropcounter") == 0;
    if (n >= 2 && *parts[1]) {
        char *e;
        errno = 0;
        long long m = strtoll(parts[1], &e, 10);
        if (*e || errno) {
            rc = tsq_fail(err, BAD, NULL, "Max value of counter was not a number, received '%s'",
                          parts[1]);
            goto out;
        }
        s->rate_opt.counter_max = (double)m;
    }
    if (n >= 3 && *parts[2]) {
        char *e;
        errno = 0;
        long long r = strtoll(parts[2], &e, 10);
        if (*e || errno) {
            rc = tsq_fail(err, BAD, NULL, "Reset value of counter was not a number, received '%s'",
                          parts[2]);
            goto out;
        }
        s->rate_opt.reset_value = (double)r;
    }
out:
    tsq_free_strv(parts, n);
    return rc;
}

/* "k=v,k2=v2" inside one pair of braces */
static int parse_brace_list(tsq_sub *s, const char *list, int group_by, tsq_error *err)
{
    int n;
    char **items = tsq_split_all(list, ',', &n);
    if (!items) return tsq_fail(err, 500, NULL, "out of memory");
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (!*items[i]) break;
        int kn;
        char **kv = tsq_split_all(items[i], '=', &kn);
        if (!kv) {
            rc = tsq_fail(err, 500, NULL, "out of memory");
            break;
        }
        if (kn != 2 || !*kv[0] || !*kv[1])
            rc = tsq_fail(err, BAD, NULL, "When parsing %s '%s': invalid tag: %s",
                          group_by ? "tag" : "filter", items[i], items[i]);
        else
            rc = add_tag_spec(s, kv[0], kv[1], group_by, err);
        tsq_free_strv(kv, kn);
    }
    tsq_free_strv(items, n);
    return rc;
}

/* Tags.parseWithMetricAndFilters: metric{group-by tags}{filters} */
static int parse_metric_filters(tsq_sub *s, const char *m, tsq_error *err)
{
    if (!*m) return tsq_fail(err, BAD, NULL, "Metric cannot be null or empty");
    const char *curly = strchr(m, '{');
    if (!curly) {
        s->metric = strdup(m);
        return 0;
    }
    size_t len = strlen(m);
    if (m[len - 1] != '}') return tsq_fail(err, BAD, NULL, "Missing '}' at the end of: %s", m);
    s->metric = strndup(m, (size_t)(curly - m));
    if ((size_t)(curly - m) == len - 2) return 0;
    const char *close = strchr(m, '}');
    if (close != m + len - 1) {
        const char *fb = strrchr(m, '{');
        char *inner = strndup(fb + 1, (size_t)(m + len - 1 - fb - 1));
        int rc = inner ? parse_brace_list(s, inner, 0, err) : -1;
        free(inner);
        if (rc < 0) return -1;
    }
    char *tags = strndup(curly + 1, (size_t)(close - curly - 1));
    int rc = tags ? parse_brace_list(s, tags, 1, err) : -1;
    free(tags);
    return rc;
}

static char *get_echo(const tsq_sub *s, const char *ds_spec)
{
    json_t *o = json_object();
    json_t *fl = json_array();
    for (int i = 0; i < s->nfilters; i++) {
        const tsq_filter *f = &s->filters[i];
        json_array_append_new(fl, json_pack("{s:s,s:s,s:s,s:b}", "tagk", f->tagk, "filter",
                                            f->filter, "type", tsq_filter_type_name(f->type),
                                            "groupBy", f->group_by));
    }
    json_object_set_new(o, "aggregator", json_string(s->aggregator));
    json_object_set_new(o, "metric", json_string(s->metric ? s->metric : ""));
    json_object_set_new(o, "tsuids", json_pack("n"));
    json_object_set_new(o, "downsample", ds_spec ? json_string(ds_spec) : json_pack("n"));
    json_object_set_new(o, "rate", json_boolean(s->rate));
    json_object_set_new(o, "filters", fl);
    json_object_set_new(o, "index", json_integer(s->index));
    json_object_set_new(o, "rateOptions",
                        s->rate ? json_pack("{s:b,s:f,s:f,s:b}", "counter", s->rate_opt.counter,
                                            "counterMax", s->rate_opt.counter_max, "resetValue",
                                            s->rate_opt.reset_value, "dropResets",
                                            s->rate_opt.drop_resets)
                                : json_pack("n"));
    json_object_set_new(o, "explicitTags", json_boolean(s->explicit_tags));
    char *r = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return r;
}

static int parse_m(tsq_query *q, const char *m, tsq_error *err)
{
    if (!*m) return tsq_fail(err, BAD, NULL, "The query string was empty");
    int n;
    char **parts = tsq_split_all(m, ':', &n);
    if (!parts) return tsq_fail(err, 500, NULL, "out of memory");
    int rc = -1;
    const char *ds = NULL;
    if (n < 2 || n > 5) {
        tsq_fail(err, BAD, NULL, "Invalid parameter m=%s (%s :-separated parts)", m,
                 n < 2 ? "not enough" : "too many");
        goto out;
    }
    tsq_sub *s = new_sub(q);
    if (!s) {
        tsq_fail(err, 500, NULL, "out of memory");
        goto out;
    }
    snprintf(s->aggregator, sizeof s->aggregator, "%s", parts[0]);
    if (strlen(parts[0]) >= sizeof s->aggregator) {
        tsq_fail(err, BAD, NULL, "No such aggregation function: %s", parts[0]);
        goto out;
    }
    if (parse_metric_filters(s, parts[n - 1], err) < 0) goto out;
    for (int x = 1; x < n - 1; x++) {
        if (strncasecmp(parts[x], "rate", 4) == 0) {
            if (parse_rate_spec(s, parts[x], err) < 0) goto out;
        } else if (isdigit((unsigned char)parts[x][0]))
            ds = parts[x];
        else if (strncasecmp(parts[x], "explicit_tags", 13) == 0)
            s->explicit_tags = 1;
    }
    if (validate_sub(s, ds, err) < 0) goto out;
    s->echo_json = get_echo(s, ds);
    rc = 0;
out:
    tsq_free_strv(parts, n);
    return rc;
}

static int has_param(tsq_param_fn get, void *arg, const char *name)
{
    const char *v = get(arg, name, 0);
    return v && strcasecmp(v, "false") != 0;
}

int tsq_parse_get(tsq_param_fn get, void *arg, int64_t now_ms, tsq_query *q, tsq_error *err)
{
    memset(q, 0, sizeof *q);
    const char *start = get(arg, "start", 0);
    if (!start || !*start) return tsq_fail(err, BAD, NULL, "Missing parameter <code>start</code>");
    q->ms_resolution = has_param(get, arg, "ms");
    q->show_query = has_param(get, arg, "show_query");
    q->arrays = has_param(get, arg, "arrays");
    for (int i = 0;; i++) {
        const char *m = get(arg, "m", i);
        if (!m) break;
        int dup = 0; /* identical sub-queries run once */
        for (int j = 0; j < i && !dup; j++) dup = strcmp(get(arg, "m", j), m) == 0;
        if (dup) continue;
        if (parse_m(q, m, err) < 0) {
            tsq_query_free(q);
            return -1;
        }
    }
    if (q->nsubs == 0) {
        if (get(arg, "tsuid", 0))
            return tsq_fail(err, BAD, NULL, "tsuid queries are not supported; use m=");
        return tsq_fail(err, BAD, NULL, "Missing sub queries");
    }
    if (set_times(q, start, get(arg, "end", 0), now_ms, err) < 0) {
        tsq_query_free(q);
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------- scan range */

void tsq_scan_range(const tsq_query *q, const tsq_sub *sub, int64_t *from_ms, int64_t *to_ms)
{
    const int64_t span = 3600; /* OpenTSDB's row: one hour */
    /* no stored point lies beyond 2^53 ms either side (the store's bound):
     * clamping there keeps the arithmetic below far from overflowing
     * (start=0&end=9223372036854775807ms is "everything") */
    const int64_t lim = (int64_t)1 << 53;
    int64_t qs = q->start_ms < -lim ? -lim : q->start_ms > lim ? lim : q->start_ms;
    int64_t qe = q->end_ms < -lim ? -lim : q->end_ms > lim ? lim : q->end_ms;
    int64_t iv = sub->ds.all ? 0 : sub->ds.interval_ms;
    if (iv > lim) iv = lim;
    int64_t start = qs / 1000, a = start;
    if (iv > 0) a -= ((1000 * start) % iv) / 1000;
    a -= a % span;
    *from_ms = (a > 0 ? a : 0) * 1000;
    int64_t end = qe / 1000 + 1; /* TsdbQuery always bumps it */
    if (iv > 0) {
        int64_t e = end + (iv - (1000 * end) % iv) / 1000;
        int64_t off = e % span;
        *to_ms = (off == 0 ? e : e + (span - off)) * 1000;
    } else
        *to_ms = (end + (span - end % span)) * 1000;
}
