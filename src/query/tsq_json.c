/* tsq_json.c — the JSON the query API answers with: the /api/query result
 * (OpenTSDB 2.4's HttpJsonSerializer: metric, tags, aggregateTags, query
 * with showQuery, dps as an object or with ?arrays=true as pairs), error
 * bodies, /api/config/filters, and the raw-series exchange between peers
 * (tsq_set_json / tsq_set_parse).  Output is written by hand into one
 * growing buffer (a million points must not mean a million allocations);
 * input is read with jansson. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/tsq_internal.h"

typedef struct obuf {
    char  *p;
    size_t n, cap;
    int    oom;
} obuf;

static int ob_reserve(obuf *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->n + more + 1 <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->n + more + 1)
        nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
        b->oom = 1;
        return -1;
    }
    b->p = np;
    b->cap = nc;
    return 0;
}

static void ob_put(obuf *b, const char *s, size_t l)
{
    if (ob_reserve(b, l) < 0)
        return;
    memcpy(b->p + b->n, s, l);
    b->n += l;
    b->p[b->n] = 0;
}

static void ob_s(obuf *b, const char *s)
{
    ob_put(b, s, strlen(s));
}

static void ob_c(obuf *b, char c)
{
    if (ob_reserve(b, 1) < 0)
        return;
    b->p[b->n++] = c;
    b->p[b->n] = 0;
}

static void ob_str(obuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    ob_c(b, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') {
            ob_c(b, '\\');
            ob_c(b, (char)*p);
        } else if (*p < 0x20) {
            char e[7] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15], 0 };
            ob_s(b, e);
        } else
            ob_c(b, (char)*p);
    }
    ob_c(b, '"');
}

static void ob_i64(obuf *b, int64_t v)
{
    char t[24];
    int l = snprintf(t, sizeof t, "%" PRId64, v);
    ob_put(b, t, (size_t)l);
}

/* the shortest decimal that reads back as the same double */
int tsq_fmt_double(char *t, size_t n, double v)
{
    int l;
    if (fabs(v) < 1e15 && v == (double)(int64_t)v)
        return snprintf(t, n, "%" PRId64, (int64_t)v);
    for (int prec = 15; prec <= 17; prec++) {
        l = snprintf(t, n, "%.*g", prec, v);
        if (strtod(t, NULL) == v)
            return l;
    }
    return l;
}

static void ob_num(obuf *b, double v)
{
    char t[40];
    ob_put(b, t, (size_t)tsq_fmt_double(t, sizeof t, v));
}

/* a dps value: null for fill null, "NaN" for fill nan, a number otherwise */
static void ob_val(obuf *b, const tsq_out *o, size_t i, int fill)
{
    double v = o->val[i];
    if (o->is_null && o->is_null[i])
        ob_s(b, "null");
    else if (isfinite(v))
        ob_num(b, v);
    else if (isnan(v) && fill == TSQ_FILL_NAN)
        ob_s(b, "\"NaN\"");
    else
        ob_s(b, "null");
}

static const tsq_sub *sub_of(const tsq_query *q, int index)
{
    for (int i = 0; i < q->nsubs; i++)
        if (q->subs[i].index == index)
            return &q->subs[i];
    return NULL;
}

char *tsq_result_json(const tsq_query *q, const tsq_result *r, size_t *len)
{
    obuf b = { 0 };
    ob_c(&b, '[');
    for (size_t i = 0; i < r->n; i++) {
        const tsq_out *o = &r->v[i];
        const tsq_sub *sub = sub_of(q, o->sub_index);
        int fill = sub ? (int)sub->ds.fill : TSQ_FILL_NONE;
        if (i)
            ob_c(&b, ',');
        ob_s(&b, "{\"metric\":");
        ob_str(&b, o->metric);
        ob_s(&b, ",\"tags\":{");
        for (int t = 0; t < o->ntags; t++) {
            if (t)
                ob_c(&b, ',');
            ob_str(&b, o->tags[t].key);
            ob_c(&b, ':');
            ob_str(&b, o->tags[t].value);
        }
        ob_s(&b, "},\"aggregateTags\":[");
        for (int t = 0; t < o->naggregate_tags; t++) {
            if (t)
                ob_c(&b, ',');
            ob_str(&b, o->aggregate_tags[t]);
        }
        ob_c(&b, ']');
        if (q->show_query) {
            ob_s(&b, ",\"query\":");
            if (sub && sub->echo_json)
                ob_s(&b, sub->echo_json);
            else {
                ob_s(&b, "{\"index\":");
                ob_i64(&b, o->sub_index);
                ob_c(&b, '}');
            }
        }
        ob_s(&b, ",\"dps\":");
        ob_c(&b, q->arrays ? '[' : '{');
        int first = 1;
        for (size_t k = 0; k < o->n; k++) {
            int64_t ts = q->ms_resolution ? o->ts[k] : o->ts[k] / 1000;
            /* seconds: several points in one second would repeat the key;
             * every JSON reader keeps the last, so only the last is written */
            if (!q->arrays && !q->ms_resolution && k + 1 < o->n && o->ts[k + 1] / 1000 == ts)
                continue;
            if (!first)
                ob_c(&b, ',');
            first = 0;
            if (q->arrays) {
                ob_c(&b, '[');
                ob_i64(&b, ts);
                ob_c(&b, ',');
                ob_val(&b, o, k, fill);
                ob_c(&b, ']');
            } else {
                ob_c(&b, '"');
                ob_i64(&b, ts);
                ob_s(&b, "\":");
                ob_val(&b, o, k, fill);
            }
        }
        ob_c(&b, q->arrays ? ']' : '}');
        ob_c(&b, '}');
    }
    ob_c(&b, ']');
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.p;
}

char *tsq_error_json(const tsq_error *err, size_t *len)
{
    obuf b = { 0 };
    ob_s(&b, "{\"error\":{\"code\":");
    ob_i64(&b, err->code ? err->code : 500);
    ob_s(&b, ",\"message\":");
    ob_str(&b, err->message);
    if (err->details[0]) {
        ob_s(&b, ",\"details\":");
        ob_str(&b, err->details);
    }
    ob_s(&b, "}}");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.p;
}

/* ------------------------------------------------------ /api/config/filters */

char *tsq_config_filters_json(size_t *len)
{
    static const struct { const char *type, *examples, *description; } f[] = {
        { "iliteral_or", "host=iliteral_or(web01),  host=iliteral_or(web01|web02|web03)  "
          "{\"type\":\"iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
          "Matches series whose value for the key is one of the |-separated values, ignoring case." },
        { "wildcard", "host=wildcard(web*),  host=wildcard(web*.tsdb.net)  "
          "{\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":false}",
          "Glob match of the value with one or more * (case-sensitive); * alone matches any value of the key." },
        { "not_literal_or", "host=not_literal_or(web01),  host=not_literal_or(web01|web02|web03)  "
          "{\"type\":\"not_literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
          "Matches series that have the key with a value that is none of the |-separated values (case-sensitive)." },
        { "not_iliteral_or", "host=not_iliteral_or(web01),  host=not_iliteral_or(web01|web02|web03)  "
          "{\"type\":\"not_iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
          "Matches series that have the key with a value that is none of the |-separated values, ignoring case." },
        { "not_key", "host=not_key()  {\"type\":\"not_key\",\"tagk\":\"host\",\"filter\":\"\",\"groupBy\":false}",
          "Skips every series that has the key, whatever its value. The filter value must be empty." },
        { "iwildcard", "host=iwildcard(web*),  host=iwildcard(web*.tsdb.net)  "
          "{\"type\":\"iwildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":false}",
          "Glob match of the value with one or more * , ignoring case; * alone matches any value of the key." },
        { "literal_or", "host=literal_or(web01),  host=literal_or(web01|web02|web03)  "
          "{\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
          "Matches series whose value for the key is one of the |-separated values (case-sensitive)." },
        { "regexp", "host=regexp(.*)  {\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":\".*\",\"groupBy\":false}",
          "Matches series whose value for the key contains a match of the POSIX extended regular expression." },
    };
    obuf b = { 0 };
    ob_c(&b, '{');
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (i)
            ob_c(&b, ',');
        ob_str(&b, f[i].type);
        ob_s(&b, ":{\"examples\":");
        ob_str(&b, f[i].examples);
        ob_s(&b, ",\"description\":");
        ob_str(&b, f[i].description);
        ob_c(&b, '}');
    }
    ob_c(&b, '}');
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.p;
}

/* ------------------------------------------------- raw series between peers */

char *tsq_set_json(const tsq_set *set, size_t *len)
{
    obuf b = { 0 };
    ob_s(&b, "{\"series\":[");
    for (size_t i = 0; i < set->n; i++) {
        const tsq_series *s = &set->v[i];
        if (i)
            ob_c(&b, ',');
        ob_s(&b, "{\"metric\":");
        ob_str(&b, s->metric);
        ob_s(&b, ",\"tags\":{");
        for (int t = 0; t < s->ntags; t++) {
            if (t)
                ob_c(&b, ',');
            ob_str(&b, s->tags[t].key);
            ob_c(&b, ':');
            ob_str(&b, s->tags[t].value);
        }
        ob_s(&b, "},\"ts\":[");
        for (size_t k = 0; k < s->pts.n; k++) {
            if (k)
                ob_c(&b, ',');
            ob_i64(&b, s->pts.ts[k]);
        }
        ob_s(&b, "],\"v\":[");
        for (size_t k = 0; k < s->pts.n; k++) {
            if (k)
                ob_c(&b, ',');
            if (isfinite(s->pts.val[k]))
                ob_num(&b, s->pts.val[k]);
            else
                ob_s(&b, "null");
        }
        ob_s(&b, "]}");
    }
    ob_s(&b, "]}");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.p;
}

static int cmp_tag(const void *a, const void *b)
{
    return strcmp(((const store_tag *)a)->key, ((const store_tag *)b)->key);
}

static int64_t jint(json_t *v)
{
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)json_number_value(v);
}

int tsq_set_parse(const char *body, size_t len, tsq_set *out)
{
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    json_t *arr = root ? json_object_get(root, "series") : NULL;
    if (!json_is_array(arr)) {
        json_decref(root);
        return -1;
    }
    size_t i;
    json_t *js;
    int rc = 0;
    json_array_foreach(arr, i, js) {
        json_t *m = json_object_get(js, "metric"), *tags = json_object_get(js, "tags"),
               *ts = json_object_get(js, "ts"), *v = json_object_get(js, "v");
        if (!json_is_string(m) || !json_is_object(tags) || !json_is_array(ts) || !json_is_array(v) ||
            json_array_size(ts) != json_array_size(v)) {
            rc = -1;
            break;
        }
        if (out->n == out->cap) {
            size_t nc = out->cap ? out->cap * 2 : 16;
            tsq_series *nv = realloc(out->v, nc * sizeof *nv);
            if (!nv) {
                rc = -1;
                break;
            }
            out->v = nv;
            out->cap = nc;
        }
        tsq_series *s = &out->v[out->n];
        memset(s, 0, sizeof *s);
        s->metric = strdup(json_string_value(m));
        size_t nt = json_object_size(tags), np = json_array_size(ts);
        s->tags = calloc(nt ? nt : 1, sizeof *s->tags);
        s->pts.ts = malloc((np ? np : 1) * sizeof *s->pts.ts);
        s->pts.val = malloc((np ? np : 1) * sizeof *s->pts.val);
        out->n++;
        if (!s->metric || !s->tags || !s->pts.ts || !s->pts.val) {
            rc = -1;
            break;
        }
        const char *k;
        json_t *tv;
        json_object_foreach(tags, k, tv) {
            if (!json_is_string(tv)) {
                rc = -1;
                break;
            }
            s->tags[s->ntags].key = strdup(k);
            s->tags[s->ntags].value = strdup(json_string_value(tv));
            if (!s->tags[s->ntags].key || !s->tags[s->ntags].value)
                rc = -1;
            s->ntags++;
        }
        if (rc < 0)
            break;
        qsort(s->tags, (size_t)s->ntags, sizeof *s->tags, cmp_tag);
        s->pts.cap = np;
        for (size_t k2 = 0; k2 < np; k2++) {
            json_t *a = json_array_get(ts, k2), *b = json_array_get(v, k2);
            if (!json_is_number(a) || !(json_is_number(b) || json_is_null(b))) {
                rc = -1;
                break;
            }
            s->pts.ts[k2] = jint(a);
            s->pts.val[k2] = json_is_null(b) ? NAN : json_number_value(b);
            if (k2 && s->pts.ts[k2] <= s->pts.ts[k2 - 1]) {
                rc = -1;        /* must be strictly increasing */
                break;
            }
        }
        if (rc < 0)
            break;
        s->pts.n = np;
    }
    json_decref(root);
    return rc;
}
