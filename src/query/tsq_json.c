/* tsq_json.c — the JSON the query API answers with: the /api/query result
 * (OpenTSDB 2.4's HttpJsonSerializer: metric, tags, aggregateTags, query
 * with showQuery, dps as an object or with ?arrays=true as pairs), error
 * bodies, /api/config/filters, and the raw-series exchange between peers
 * (tsq_set_json / tsq_set_parse).  All of it is written (and the exchange
 * read) by hand in one growing buffer: a million points must not mean a
 * million allocations. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/tsq_internal.h"

typedef struct obuf {
    char *p;
    size_t n, cap;
    int oom;
} obuf;

static int ob_reserve(obuf *b, size_t more)
{
    if (b->oom) return -1;
    if (b->n + more + 1 <= b->cap) return 0;
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->n + more + 1) nc *= 2;
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
    if (ob_reserve(b, l) < 0) return;
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
    if (ob_reserve(b, 1) < 0) return;
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
            char e[7] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15], 0};
            ob_s(b, e);
        } else
            ob_c(b, (char)*p);
    }
    ob_c(b, '"');
}

static void ob_i64(obuf *b, int64_t v)
{
    if (ob_reserve(b, 24) < 0) return;
    b->n += (size_t)tsq_fmt_i64(b->p + b->n, v);
}

static void ob_num(obuf *b, double v)
{
    if (ob_reserve(b, 40) < 0) return;
    b->n += (size_t)tsq_fmt_double(b->p + b->n, 40, v);
}

/* a dps value at t: null for fill null, "NaN" for fill nan, a number
 * otherwise; its length (t has room for 40) */
static int fmt_val(char *t, const tsq_out *o, size_t i, int fill)
{
    double v = o->val[i];
    const char *w = "null";
    if (!(o->is_null && o->is_null[i])) {
        if (isfinite(v)) return tsq_fmt_double(t, 40, v);
        if (isnan(v) && fill == TSQ_FILL_NAN) w = "\"NaN\"";
    }
    size_t l = strlen(w);
    memcpy(t, w, l + 1);
    return (int)l;
}

static const tsq_sub *sub_of(const tsq_query *q, int index)
{
    for (int i = 0; i < q->nsubs; i++)
        if (q->subs[i].index == index) return &q->subs[i];
    return NULL;
}

char *tsq_result_json(const tsq_query *q, const tsq_result *r, size_t *len)
{
    obuf b = {0};
    ob_c(&b, '[');
    for (size_t i = 0; i < r->n; i++) {
        const tsq_out *o = &r->v[i];
        const tsq_sub *sub = sub_of(q, o->sub_index);
        int fill = sub ? (int)sub->ds.fill : TSQ_FILL_NONE;
        if (i) ob_c(&b, ',');
        ob_s(&b, "{\"metric\":");
        ob_str(&b, o->metric);
        ob_s(&b, ",\"tags\":{");
        for (int t = 0; t < o->ntags; t++) {
            if (t) ob_c(&b, ',');
            ob_str(&b, o->tags[t].key);
            ob_c(&b, ':');
            ob_str(&b, o->tags[t].value);
        }
        ob_s(&b, "},\"aggregateTags\":[");
        for (int t = 0; t < o->naggregate_tags; t++) {
            if (t) ob_c(&b, ',');
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
            if (ob_reserve(&b, 72) < 0) break; /* a point at most: ,["-ts",value] */
            char *t = b.p + b.n, *t0 = t;
            if (!first) *t++ = ',';
            first = 0;
            *t++ = q->arrays ? '[' : '"';
            t += tsq_fmt_i64(t, ts);
            if (q->arrays) {
                *t++ = ',';
            } else {
                *t++ = '"';
                *t++ = ':';
            }
            t += fmt_val(t, o, k, fill);
            if (q->arrays) *t++ = ']';
            *t = 0;
            b.n += (size_t)(t - t0);
        }
        ob_c(&b, q->arrays ? ']' : '}');
        ob_c(&b, '}');
    }
    ob_c(&b, ']');
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len) *len = b.n;
    return b.p;
}

char *tsq_error_json(const tsq_error *err, size_t *len)
{
    obuf b = {0};
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
    if (len) *len = b.n;
    return b.p;
}

/* ------------------------------------------------------ /api/config/filters */

char *tsq_config_filters_json(size_t *len)
{
    static const struct {
        const char *type, *examples, *description;
    } f[] = {
        {"iliteral_or",
         "host=iliteral_or(web01),  host=iliteral_or(web01|web02|web03)  "
         "{\"type\":\"iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":"
         "false}",
         "Matches series whose value for the key is one of the |-separated values, ignoring case."},
        {"wildcard",
         "host=wildcard(web*),  host=wildcard(web*.tsdb.net)  "
         "{\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":false}",
         "Glob match of the value with one or more * (case-sensitive); * alone matches any value "
         "of the key."},
        {"not_literal_or",
         "host=not_literal_or(web01),  host=not_literal_or(web01|web02|web03)  "
         "{\"type\":\"not_literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\","
         "\"groupBy\":false}",
         "Matches series that have the key with a value that is none of the |-separated values "
         "(case-sensitive)."},
        {"not_iliteral_or",
         "host=not_iliteral_or(web01),  host=not_iliteral_or(web01|web02|web03)  "
         "{\"type\":\"not_iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\","
         "\"groupBy\":false}",
         "Matches series that have the key with a value that is none of the |-separated values, "
         "ignoring case."},
        {"not_key",
         "host=not_key()  "
         "{\"type\":\"not_key\",\"tagk\":\"host\",\"filter\":\"\",\"groupBy\":false}",
         "Skips every series that has the key, whatever its value. The filter value must be "
         "empty."},
        {"iwildcard",
         "host=iwildcard(web*),  host=iwildcard(web*.tsdb.net)  "
         "{\"type\":\"iwildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":"
         "false}",
         "Glob match of the value with one or more * , ignoring case; * alone matches any value of "
         "the key."},
        {"literal_or",
         "host=literal_or(web01),  host=literal_or(web01|web02|web03)  "
         "{\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":"
         "false}",
         "Matches series whose value for the key is one of the |-separated values "
         "(case-sensitive)."},
        {"regexp",
         "host=regexp(.*)  "
         "{\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":\".*\",\"groupBy\":false}",
         "Matches series whose value for the key contains a match of the POSIX extended regular "
         "expression."},
    };
    obuf b = {0};
    ob_c(&b, '{');
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (i) ob_c(&b, ',');
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
    if (len) *len = b.n;
    return b.p;
}

/* ------------------------------------------------- raw series between peers */

/* {"series":[{"metric":M,"tags":{k:v,...},"dt":[t0,d1,d2,...],"v":[...]}]}
 * "dt" holds the first timestamp (ms), then each difference to the previous
 * one (short integers for regular series); "v" the values, null for NaN.
 * Written and read by hand: a million points take milliseconds, not the
 * seconds a generic JSON tree needs. */
char *tsq_set_json(const tsq_set *set, size_t *len)
{
    obuf b = {0};
    ob_s(&b, "{\"series\":[");
    for (size_t i = 0; i < set->n; i++) {
        const tsq_series *s = &set->v[i];
        if (i) ob_c(&b, ',');
        ob_s(&b, "{\"metric\":");
        ob_str(&b, s->metric);
        ob_s(&b, ",\"tags\":{");
        for (int t = 0; t < s->ntags; t++) {
            if (t) ob_c(&b, ',');
            ob_str(&b, s->tags[t].key);
            ob_c(&b, ':');
            ob_str(&b, s->tags[t].value);
        }
        ob_s(&b, "},\"dt\":[");
        for (size_t k = 0; k < s->pts.n; k++) {
            if (k) ob_c(&b, ',');
            ob_i64(&b, k ? s->pts.ts[k] - s->pts.ts[k - 1] : s->pts.ts[0]);
        }
        ob_s(&b, "],\"v\":[");
        for (size_t k = 0; k < s->pts.n; k++) {
            if (k) ob_c(&b, ',');
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
    if (len) *len = b.n;
    return b.p;
}

typedef struct rd {
    const char *p, *e;
} rd;

static void rd_ws(rd *r)
{
    while (r->p < r->e && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')) r->p++;
}

static int rd_lit(rd *r, char c)
{
    rd_ws(r);
    if (r->p < r->e && *r->p == c) {
        r->p++;
        return 1;
    }
    return 0;
}

static int rd_hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(char **w, unsigned u)
{
    char *o = *w;
    if (u < 0x80)
        *o++ = (char)u;
    else if (u < 0x800) {
        *o++ = (char)(0xC0 | u >> 6);
        *o++ = (char)(0x80 | (u & 63));
    } else if (u < 0x10000) {
        *o++ = (char)(0xE0 | u >> 12);
        *o++ = (char)(0x80 | ((u >> 6) & 63));
        *o++ = (char)(0x80 | (u & 63));
    } else {
        *o++ = (char)(0xF0 | u >> 18);
        *o++ = (char)(0x80 | ((u >> 12) & 63));
        *o++ = (char)(0x80 | ((u >> 6) & 63));
        *o++ = (char)(0x80 | (u & 63));
    }
    *w = o;
}

/* a JSON string, unescaped into a malloc'ed UTF-8 string (no NULs) */
static char *rd_str(rd *r)
{
    if (!rd_lit(r, '"')) return NULL;
    const char *q = r->p;
    while (q < r->e && *q != '"') q += *q == '\\' ? 2 : 1;
    if (q >= r->e) return NULL;
    char *out = malloc((size_t)(q - r->p) + 1), *w = out;
    if (!out) return NULL;
    while (r->p < q) {
        char c = *r->p++;
        if ((unsigned char)c < 0x20) goto bad;
        if (c != '\\') {
            *w++ = c;
            continue;
        }
        c = *r->p++;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            *w++ = c;
            break;
        case 'b':
            *w++ = '\b';
            break;
        case 'f':
            *w++ = '\f';
            break;
        case 'n':
            *w++ = '\n';
            break;
        case 'r':
            *w++ = '\r';
            break;
        case 't':
            *w++ = '\t';
            break;
        case 'u': {
            unsigned u, lo;
            if (q - r->p < 4 || rd_hex4(r->p, &u) < 0) goto bad;
            r->p += 4;
            if (u >= 0xD800 && u < 0xDC00) {
                if (q - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
                    rd_hex4(r->p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                    goto bad;
                r->p += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            } else if ((u >= 0xDC00 && u < 0xE000) || u == 0)
                goto bad;
            put_utf8(&w, u);
            break;
        }
        default:
            goto bad;
        }
    }
    r->p = q + 1;
    *w = 0;
    return out;
bad:
    free(out);
    return NULL;
}

static int rd_i64(rd *r, int64_t *out)
{
    rd_ws(r);
    int neg = 0, nd = 0;
    uint64_t v = 0;
    if (r->p < r->e && *r->p == '-') {
        neg = 1;
        r->p++;
    }
    while (r->p < r->e && *r->p >= '0' && *r->p <= '9') {
        if (++nd > 18) return -1;
        v = v * 10 + (uint64_t)(*r->p++ - '0');
    }
    if (!nd) return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

static int rd_num(rd *r, double *out)
{
    rd_ws(r);
    if (r->e - r->p >= 4 && memcmp(r->p, "null", 4) == 0) {
        r->p += 4;
        *out = NAN;
        return 0;
    }
    /* fast path (Clinger): at most 15 digits, no exponent: m / 10^k is
     * exact-rounded because m < 2^53 and 10^k (k <= 15) are exact */
    static const double p10[] = {1,   1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    const char *p = r->p;
    int neg = 0, nd = 0, k = -1;
    uint64_t m = 0;
    if (p < r->e && *p == '-') {
        neg = 1;
        p++;
    }
    for (; p < r->e; p++) {
        if (*p >= '0' && *p <= '9') {
            m = m * 10 + (uint64_t)(*p - '0');
            nd++;
            if (k >= 0) k++;
        } else if (*p == '.' && k < 0 && nd)
            k = 0;
        else
            break;
    }
    if (nd && nd <= 15 && k != 0 && (p == r->e || (*p != 'e' && *p != 'E'))) {
        double v = (double)m / p10[k > 0 ? k : 0];
        *out = neg ? -v : v;
        r->p = p;
        return 0;
    }
    char buf[64];
    size_t n = 0;
    while (r->p < r->e && n < sizeof buf - 1 &&
           ((*r->p >= '0' && *r->p <= '9') || *r->p == '-' || *r->p == '+' || *r->p == '.' ||
            *r->p == 'e' || *r->p == 'E'))
        buf[n++] = *r->p++;
    buf[n] = 0;
    if (!n) return -1;
    char *end;
    *out = strtod(buf, &end);
    return *end || !isfinite(*out) ? -1 : 0;
}

static int cmp_tag(const void *a, const void *b)
{
    return strcmp(((const store_tag *)a)->key, ((const store_tag *)b)->key);
}

/* makes room for element n of an array of capacity *cap */
static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *np = realloc(*p, nc * sz);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

static int rd_tags(rd *r, tsq_series *s)
{
    size_t cap = 0;
    if (!rd_lit(r, '{')) return -1;
    if (rd_lit(r, '}')) return 0;
    do {
        if (grow((void **)&s->tags, &cap, (size_t)s->ntags, sizeof *s->tags) < 0) return -1;
        char *k = rd_str(r), *v = NULL;
        if (k && rd_lit(r, ':')) v = rd_str(r);
        if (!k || !v) {
            free(k);
            free(v);
            return -1;
        }
        s->tags[s->ntags].key = k;
        s->tags[s->ntags++].value = v;
    } while (rd_lit(r, ','));
    return rd_lit(r, '}') ? 0 : -1;
}

static int rd_series(rd *r, tsq_series *s)
{
    size_t tcap = 0, vcap = 0, vn = 0;
    int have_dt = 0, have_v = 0, have_tags = 0;
    if (!rd_lit(r, '{')) return -1;
    do {
        char *key = rd_str(r);
        int rc = key && rd_lit(r, ':') ? 0 : -1;
        if (rc < 0)
            ;
        else if (!strcmp(key, "metric") && !s->metric)
            rc = (s->metric = rd_str(r)) ? 0 : -1;
        else if (!strcmp(key, "tags") && !have_tags) {
            have_tags = 1;
            rc = rd_tags(r, s);
        } else if (!strcmp(key, "dt") && !have_dt) {
            have_dt = 1;
            rc = rd_lit(r, '[') ? 0 : -1;
            if (rc == 0 && !rd_lit(r, ']')) {
                int64_t t = 0;
                do {
                    int64_t d;
                    if (rd_i64(r, &d) < 0 || (s->pts.n && d <= 0) ||
                        grow((void **)&s->pts.ts, &tcap, s->pts.n, sizeof *s->pts.ts) < 0) {
                        rc = -1;
                        break;
                    }
                    t = s->pts.n ? t + d : d; /* strictly increasing */
                    s->pts.ts[s->pts.n++] = t;
                } while (rd_lit(r, ','));
                if (rc == 0 && !rd_lit(r, ']')) rc = -1;
            }
        } else if (!strcmp(key, "v") && !have_v) {
            have_v = 1;
            rc = rd_lit(r, '[') ? 0 : -1;
            if (rc == 0 && !rd_lit(r, ']')) {
                do {
                    double d;
                    if (rd_num(r, &d) < 0 ||
                        grow((void **)&s->pts.val, &vcap, vn, sizeof *s->pts.val) < 0) {
                        rc = -1;
                        break;
                    }
                    s->pts.val[vn++] = d;
                } while (rd_lit(r, ','));
                if (rc == 0 && !rd_lit(r, ']')) rc = -1;
            }
        } else
            rc = -1;
        free(key);
        if (rc < 0) return -1;
    } while (rd_lit(r, ','));
    if (!rd_lit(r, '}') || !s->metric || !have_dt || !have_v || vn != s->pts.n) return -1;
    s->pts.cap = tcap < vcap ? tcap : vcap;
    if (s->ntags > 1) qsort(s->tags, (size_t)s->ntags, sizeof *s->tags, cmp_tag);
    for (int i = 1; i < s->ntags; i++)
        if (!strcmp(s->tags[i - 1].key, s->tags[i].key)) return -1; /* keys are unique */
    return 0;
}

int tsq_set_parse(const char *body, size_t len, tsq_set *out)
{
    rd r = {body, body + len};
    if (!body || !rd_lit(&r, '{')) return -1;
    char *key = rd_str(&r);
    int ok = key && !strcmp(key, "series") && rd_lit(&r, ':') && rd_lit(&r, '[');
    free(key);
    if (!ok) return -1;
    if (!rd_lit(&r, ']')) {
        do {
            if (grow((void **)&out->v, &out->cap, out->n, sizeof *out->v) < 0) return -1;
            tsq_series *s = &out->v[out->n++];
            memset(s, 0, sizeof *s);
            if (rd_series(&r, s) < 0) return -1;
        } while (rd_lit(&r, ','));
        if (!rd_lit(&r, ']')) return -1;
    }
    if (!rd_lit(&r, '}')) return -1;
    rd_ws(&r);
    return r.p == r.e ? 0 : -1;
}
