/* api_ingest.c — the write endpoints of `jobscope serve`:
 *   POST /api/put      OpenTSDB: one point or an array; 204, or 400 with an
 *                      error; ?summary → {"success","failed"}; ?details →
 *                      also "errors":[{"datapoint":{..},"error":".."}]
 *   POST /api/metrics  Dragon's node-local body {"timestamp":T,"dps":[{"metric",
 *                      "value","tags"}]} → 201 {"success","failed","errors"}
 *   POST /write        Influx line protocol (?precision=ns|us|ms|s), 204
 *   POST /api/events   NDJSON jobscope events (local runs, import), 200
 *                      {"accepted","failed","points"}
 * Every path validates each point, stores the valid ones in one durable
 * batch (server_ingest_points) and answers only after that: an answer of
 * success means the points survive a crash. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server.h"
#include "lineproto.h"
#include "put_reader.h"
#include "util/grow.h"
#include "util/intern.h"
#include "util/series_name.h"

#define MAX_TAGS_PER_POINT 64
/* the most points a body's length reserves at once (see api_put) */
#define PUT_RESERVE_MAX 65536

static inline size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* A batch of points parsed from one request; strings are owned here. */
typedef struct put_batch {
    store_point *pts;
    size_t n, cap;
    store_tag *tags; /* all points' tags, one arena (offsets fixed after parsing) */
    size_t ntags, captags;
    size_t *tag_off;   /* per point: first tag index */
    intern_table strs; /* each distinct name and tag value once */
    int oom;
    /* the text lengths of the last point's own tags (put_point_text_into):
     * a point whose tags read the same shares that point's tags array, so
     * that the store and the live values sort, key and look up the set once
     * per run of points of one host, as for the fields of one event */
    int last_own; /* nonzero: the batch's last point has these (a point
                   * refused in between was dropped: the one before is last) */
    size_t last_kl[MAX_TAGS_PER_POINT], last_vl[MAX_TAGS_PER_POINT];
    /* the reader's recent metrics (put_point_text's metric_slot and
     * metric_gen), each checked and interned once */
    struct {
        unsigned gen; /* 0: none */
        const char *name;
    } metric[PUT_READER_METRICS];
} put_batch;

/* The batch's copy of s[0..n) (each distinct string once). */
static const char *own(put_batch *b, const char *s, size_t n)
{
    const char *c = intern_get(&b->strs, s, n);
    if (!c) b->oom = 1;
    return c;
}

/* Room for n points at once (a body's worth, so that the arrays are not
 * copied as they double point by point): pts and tag_off grow together. */
static void batch_reserve(put_batch *b, size_t n)
{
    if (n <= b->cap) return;
    b->pts = grow_array(b->pts, &b->cap, n, sizeof *b->pts, &b->oom);
    size_t *t = b->oom ? NULL : realloc(b->tag_off, b->cap * sizeof *t);
    if (t)
        b->tag_off = t;
    else
        b->oom = 1;
}

/* Starts a point named by the batch's copy of its metric (own()). */
static void batch_point_named(put_batch *b, const char *name, int64_t ts_ms, double v)
{
    batch_reserve(b, b->n + 1);
    if (b->oom || !name) return;
    b->pts[b->n] = (store_point){name, NULL, 0, ts_ms, v};
    b->tag_off[b->n] = b->ntags;
    b->n++;
}

/* Starts a point; its tags follow with batch_tag; batch_end fixes it. */
static void batch_point(put_batch *b, const char *metric, size_t mlen, int64_t ts_ms, double v)
{
    batch_point_named(b, own(b, metric, mlen), ts_ms, v);
}

static void batch_tag(put_batch *b, const char *k, size_t kl, const char *v, size_t vl)
{
    b->tags = grow_array(b->tags, &b->captags, b->ntags + 1, sizeof *b->tags, &b->oom);
    if (b->oom) return;
    b->tags[b->ntags].key = own(b, k, kl);
    b->tags[b->ntags].value = own(b, v, vl);
    b->ntags++;
    b->pts[b->n - 1].ntags++;
}

/* Starts a point whose tags are those of the point before it (the same
 * array: the store and the live values see one run of one tag set). */
static void batch_point_same_tags(put_batch *b, const char *name, int64_t ts_ms, double v)
{
    size_t prev = b->n - 1;
    batch_point_named(b, name, ts_ms, v);
    if (b->oom) return;
    b->tag_off[b->n - 1] = b->tag_off[prev];
    b->pts[b->n - 1].ntags = b->pts[prev].ntags;
}

/* Drops the last point (it failed validation after it was started). */
static void batch_drop_last(put_batch *b)
{
    b->n--;
    b->ntags = b->tag_off[b->n];
}

static void batch_finish(put_batch *b)
{
    for (size_t i = 0; i < b->n; i++) b->pts[i].tags = b->tags + b->tag_off[i];
}

static void batch_free(put_batch *b)
{
    intern_free(&b->strs);
    free(b->pts);
    free(b->tags);
    free(b->tag_off);
    memset(b, 0, sizeof *b);
}

/* x rounded half away from zero, as llround, for 0 <= x < 2^52 (the
 * milliseconds of a timestamp): x - trunc(x) is exact there.  Inline: the
 * library's call cost a tenth of what /api/put checks in a point. */
static inline int64_t round_ms(double x)
{
    int64_t r = (int64_t)x;
    return x - (double)r >= 0.5 ? r + 1 : r;
}

/* Seconds (up to 10 digits) or milliseconds (13), OpenTSDB's rule, into
 * *ms: NULL, or why not. */
static const char *ts_ms_of(double v, int64_t *ms)
{
    if (!(v > 0) || !isfinite(v)) return "Invalid timestamp";
    if (v < 1e10)
        *ms = round_ms(v * 1000);
    else if (v < 1e13)
        *ms = round_ms(v);
    else
        return "Invalid timestamp: more than 13 digits";
    return NULL;
}

/* Seconds (up to 10 digits) or milliseconds (13): OpenTSDB's rule. */
static int ts_from_json(json_t *t, int64_t *ms, const char **why)
{
    double v;
    if (json_is_integer(t))
        v = (double)json_integer_value(t);
    else if (json_is_real(t))
        v = json_real_value(t);
    else if (json_is_string(t)) {
        char *end;
        errno = 0;
        v = strtod(json_string_value(t), &end);
        if (errno || end == json_string_value(t) || *end) {
            *why = "Invalid timestamp";
            return -1;
        }
    } else {
        *why = "Missing timestamp";
        return -1;
    }
    *why = ts_ms_of(v, ms);
    return *why ? -1 : 0;
}

static int value_from_json(json_t *x, double *v, const char **why)
{
    if (json_is_number(x))
        *v = json_number_value(x);
    else if (json_is_string(x)) {
        char *end;
        const char *s = json_string_value(x);
        errno = 0;
        *v = strtod(s, &end);
        if (errno || end == s || *end) {
            *why = "Unable to parse value to a number";
            return -1;
        }
    } else {
        *why = x ? "Unable to parse value to a number" : "Missing value";
        return -1;
    }
    if (!isfinite(*v)) {
        *why = "Value must be a finite number (NaN and Inf are refused)";
        return -1;
    }
    return 0;
}

/* Validates one OpenTSDB data point into the batch; NULL or the reason. */
static const char *put_point(put_batch *b, json_t *dp, int64_t default_ts_ms)
{
    const char *why = NULL;
    if (!json_is_object(dp)) return "Data point is not an object";
    json_t *m = json_object_get(dp, "metric");
    if (!json_is_string(m) || !json_string_length(m)) return "Missing metric";
    if (!series_name_valid(json_string_value(m), json_string_length(m)))
        return "Invalid metric name: only a-z A-Z 0-9 - _ . / and Unicode letters are allowed";
    int64_t ms = default_ts_ms;
    json_t *t = json_object_get(dp, "timestamp");
    if ((t || default_ts_ms < 0) && ts_from_json(t, &ms, &why) < 0) return why;
    double v;
    if (value_from_json(json_object_get(dp, "value"), &v, &why) < 0) return why;
    json_t *tags = json_object_get(dp, "tags");
    if (!json_is_object(tags) || json_object_size(tags) == 0)
        return "Missing tags: at least one tag is required";
    if (json_object_size(tags) > MAX_TAGS_PER_POINT) return "Too many tags";
    batch_point(b, json_string_value(m), json_string_length(m), ms, v);
    const char *k;
    json_t *x;
    json_object_foreach(tags, k, x)
    {
        char num[64];
        const char *sv;
        size_t sl;
        if (json_is_string(x)) {
            sv = json_string_value(x);
            sl = json_string_length(x);
        } else if (json_is_integer(x)) {
            sl = (size_t)snprintf(num, sizeof num, "%lld", (long long)json_integer_value(x));
            sv = num;
        } else if (json_is_real(x)) {
            sl = (size_t)snprintf(num, sizeof num, "%.17g", json_real_value(x));
            sv = num;
        } else {
            batch_drop_last(b);
            return "Invalid tag value: a string is expected";
        }
        if (!series_name_valid(k, strlen(k)) || !series_name_valid(sv, sl)) {
            batch_drop_last(b);
            return "Invalid tag: keys and values may use a-z A-Z 0-9 - _ . / and Unicode letters";
        }
        batch_tag(b, k, strlen(k), sv, sl);
    }
    return NULL;
}

/* The text form of a tag value: a string as it is, a number as jansson's
 * tree held it (an integer's digits, a real's %.17g); NULL for anything else. */
static const char *tag_text(const jread_value *v, char *num, size_t numlen, size_t *len)
{
    if (v->kind == JV_STRING) {
        *len = v->n;
        return v->s;
    }
    if (v->kind == JV_INT)
        return jread_int_text(v, len); /* the digits, as jansson's integer printed them */
    if (v->kind == JV_REAL)
        *len = (size_t)snprintf(num, numlen, "%.17g", v->d);
    else
        return NULL;
    return num;
}

/* Are dp's tags, in the same order, those of the batch's last point (whose
 * own tags are the last ones recorded)?  They passed the checks then. */
static int same_tags_as_last(const put_batch *b, const put_point_text *dp)
{
    if (!b->last_own || !b->n || b->pts[b->n - 1].ntags != dp->ntags) return 0;
    const store_tag *t = b->tags + b->tag_off[b->n - 1];
    for (int i = 0; i < dp->ntags; i++) {
        char num[64];
        size_t sl;
        const char *sv = tag_text(&dp->tags[i].v, num, sizeof num, &sl);
        if (!sv || b->last_kl[i] != dp->tags[i].kl || b->last_vl[i] != sl ||
            !jread_same_bytes(t[i].key, dp->tags[i].k, dp->tags[i].kl) ||
            !jread_same_bytes(t[i].value, sv, sl))
            return 0;
    }
    return 1;
}

/* put_point's rules over a data point read by put_reader (no tree). */
static const char *put_point_text_into(put_batch *b, const put_point_text *dp,
                                       int64_t default_ts_ms)
{
    if (dp->not_object) return "Data point is not an object";
    if (dp->metric.kind != JV_STRING || !dp->metric.n) return "Missing metric";
    /* a metric the reader has seen at this place and generation was checked
     * and interned then */
    int slot = dp->metric_slot;
    const char *name =
        slot >= 0 && b->metric[slot].gen == dp->metric_gen ? b->metric[slot].name : NULL;
    if (!name && !series_name_valid(dp->metric.s, dp->metric.n))
        return "Invalid metric name: only a-z A-Z 0-9 - _ . / and Unicode letters are allowed";
    int64_t ms = default_ts_ms;
    const jread_value *t = &dp->timestamp;
    if (t->kind != JV_NONE || default_ts_ms < 0) {
        double v;
        if (t->kind == JV_INT || t->kind == JV_REAL)
            v = t->d;
        else if (t->kind == JV_STRING) {
            if (jread_number_value(t->s, t->n, &v) < 0) return "Invalid timestamp";
        } else
            return "Missing timestamp";
        const char *why = ts_ms_of(v, &ms);
        if (why) return why;
    }
    double v;
    const jread_value *x = &dp->value;
    if (x->kind == JV_INT || x->kind == JV_REAL)
        v = x->d;
    else if (x->kind == JV_STRING) {
        if (jread_number_value(x->s, x->n, &v) < 0) return "Unable to parse value to a number";
    } else
        return x->kind != JV_NONE ? "Unable to parse value to a number" : "Missing value";
    if (!isfinite(v)) return "Value must be a finite number (NaN and Inf are refused)";
    if (!dp->has_tags || dp->tags_not_object || dp->ntags == 0)
        return "Missing tags: at least one tag is required";
    if (dp->ntags > MAX_TAGS_PER_POINT) return "Too many tags";
    if (!name && (name = own(b, dp->metric.s, dp->metric.n)) && slot >= 0) {
        b->metric[slot].gen = dp->metric_gen;
        b->metric[slot].name = name;
    }
    if (same_tags_as_last(b, dp)) {
        batch_point_same_tags(b, name, ms, v);
        return NULL;
    }
    batch_point_named(b, name, ms, v);
    size_t kl[MAX_TAGS_PER_POINT], vl[MAX_TAGS_PER_POINT]; /* last_kl, last_vl once it passed */
    for (int i = 0; i < dp->ntags; i++) {
        char num[64];
        size_t sl;
        const char *sv = tag_text(&dp->tags[i].v, num, sizeof num, &sl);
        if (!sv) {
            batch_drop_last(b);
            return "Invalid tag value: a string is expected";
        }
        if (!series_name_valid(dp->tags[i].k, dp->tags[i].kl) || !series_name_valid(sv, sl)) {
            batch_drop_last(b);
            return "Invalid tag: keys and values may use a-z A-Z 0-9 - _ . / and Unicode letters";
        }
        batch_tag(b, dp->tags[i].k, dp->tags[i].kl, sv, sl);
        kl[i] = dp->tags[i].kl;
        vl[i] = sl;
    }
    memcpy(b->last_kl, kl, (size_t)dp->ntags * sizeof *kl);
    memcpy(b->last_vl, vl, (size_t)dp->ntags * sizeof *vl);
    b->last_own = !b->oom;
    return NULL;
}

typedef struct put_errors {
    json_t *arr;
    size_t failed;
    const char *first;
} put_errors;

static void note_error(put_errors *e, json_t *dp, const char *why, int details)
{
    if (!e->failed) e->first = why;
    e->failed++;
    if (details && e->arr && json_array_size(e->arr) < 1000) {
        json_t *o = json_object();
        json_object_set(o, "datapoint", dp ? dp : json_null());
        json_object_set_new(o, "error", json_string(why));
        json_array_append_new(e->arr, o);
    }
}

static void count_put(server *s, size_t ok, size_t failed)
{
    server_stat_add(s, SERVER_STAT_PUT_POINTS, ok);
    server_stat_add(s, SERVER_STAT_PUT_FAILED, failed);
}

/* POST /api/put: the body is read as it goes (put_reader), each valid
 * point into one batch, stored once the whole body proved well-formed. */
static void h_put(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    int details = server_param(r, "details") != NULL;
    int summary = details || server_param(r, "summary") != NULL;
    put_reader rd;
    put_point_text *dp = malloc(sizeof *dp);
    put_batch b = {0};
    put_errors e = {details ? json_array() : NULL, 0, NULL};
    size_t n = 0;
    int rc = dp ? put_reader_start(&rd, r->body, r->body_len) : -1;
    if (rc == 0 && rd.not_points) {
        server_reply_error(w, 400, "Unable to parse the given JSON",
                           "expected a data point or an array of them");
        goto out;
    }
    /* a point as clients write it takes ~110 bytes; fewer points than
     * that are reserved, more grow the arrays. The reservation stops at
     * PUT_RESERVE_MAX points (3 MB): a large body of whitespace must not
     * allocate what --body-memory does not count */
    if (rc == 0) batch_reserve(&b, min_size(r->body_len / 128, PUT_RESERVE_MAX));
    while (rc == 0 && !b.oom && (rc = put_reader_next(&rd, dp)) > 0) {
        rc = 0;
        n++;
        const char *why = put_point_text_into(&b, dp, -1);
        if (why) {
            json_t *d = details && json_array_size(e.arr) < 1000
                            ? json_loadb(dp->text, dp->len, JSON_DECODE_ANY, NULL)
                            : NULL;
            note_error(&e, d, why, details);
            json_decref(d);
        }
    }
    if (!dp || rc < 0) {
        server_reply_error(w, 400, "Unable to parse the given JSON",
                           dp ? rd.jr.err : "out of memory");
        goto out;
    }
    char err[256] = "";
    if (b.oom) {
        server_reply_error(w, 500, "Out of memory", NULL);
        goto out;
    }
    batch_finish(&b);
    if (b.n && server_ingest_points(s, b.pts, b.n, err, sizeof err) < 0) {
        server_reply_error(w, 500, "Unable to store the data points", err);
        goto out;
    }
    count_put(s, b.n, e.failed);
    if (summary) {
        json_t *o = json_object();
        json_object_set_new(o, "success", json_integer((json_int_t)b.n));
        json_object_set_new(o, "failed", json_integer((json_int_t)e.failed));
        if (details) json_object_set(o, "errors", e.arr);
        char *txt = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        /* OpenTSDB answers 200 with the summary when all succeeded, 400 otherwise. */
        server_reply_take(w, e.failed ? 400 : 200, "application/json", txt, txt ? strlen(txt) : 0);
    } else if (e.failed) {
        char msg[160];
        snprintf(msg, sizeof msg, "%zu of %zu data points could not be stored: %s", e.failed, n,
                 e.first);
        server_reply_error(w, 400, msg,
                           "Use ?details to see which ones; the valid data points were stored");
    } else {
        server_reply(w, 204, "application/json", "", 0);
    }
out:
    if (dp) put_reader_free(&rd);
    free(dp);
    json_decref(e.arr);
    batch_free(&b);
}

/* Dragon's node store: {"timestamp": T, "dps": [{"metric", "value", "tags"}]}. */
static void h_dragon_metrics(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    json_error_t je;
    json_t *doc = json_loadb(r->body, r->body_len, 0, &je);
    json_t *dps = json_object_get(doc, "dps");
    if (!json_is_object(doc) || !json_is_array(dps)) {
        server_reply_error(
            w, 400, "Unable to parse the given JSON",
            doc ? "expected {\"timestamp\": T, \"dps\": [{\"metric\", \"value\", \"tags\"}]}"
                : je.text);
        json_decref(doc);
        return;
    }
    int64_t def_ms = -1;
    json_t *t = json_object_get(doc, "timestamp");
    const char *why = NULL;
    if (t && ts_from_json(t, &def_ms, &why) < 0) {
        server_reply_error(w, 400, "Invalid timestamp", why);
        json_decref(doc);
        return;
    }
    if (!t) def_ms = server_now_ms();
    put_batch b = {0};
    put_errors e = {json_array(), 0, NULL};
    size_t n = json_array_size(dps);
    for (size_t i = 0; i < n && !b.oom; i++) {
        json_t *dp = json_array_get(dps, i);
        /* Dragon's clients send points without tags, or a tag whose value
         * is None (add_data(..., tagk=None, tagv=None)): such tags are
         * dropped and a point left without any is tagged with the host. */
        json_t *copy = NULL;
        json_t *tg = json_is_object(dp) ? json_object_get(dp, "tags") : NULL;
        int has_null = 0;
        const char *tk;
        json_t *tv;
        json_object_foreach(tg, tk, tv) if (json_is_null(tv)) has_null = 1;
        if (json_is_object(dp) && (!json_is_object(tg) || !json_object_size(tg) || has_null)) {
            copy = json_deep_copy(dp);
            json_t *ntg = json_object();
            json_object_foreach(tg, tk, tv) if (!json_is_null(tv) && strcmp(tk, "null"))
                json_object_set(ntg, tk, tv);
            if (!json_object_size(ntg)) json_object_set_new(ntg, "host", json_string(s->host));
            json_object_set_new(copy, "tags", ntg);
        }
        const char *bad = put_point(&b, copy ? copy : dp, def_ms);
        if (bad) note_error(&e, dp, bad, 1);
        json_decref(copy);
    }
    char err[256] = "";
    if (b.oom) {
        server_reply_error(w, 500, "Out of memory", NULL);
    } else {
        batch_finish(&b);
        if (b.n && server_ingest_points(s, b.pts, b.n, err, sizeof err) < 0) {
            server_reply_error(w, 500, "Unable to store the data points", err);
        } else {
            count_put(s, b.n, e.failed);
            json_t *o = json_object();
            json_object_set_new(o, "success", json_integer((json_int_t)b.n));
            json_object_set_new(o, "failed", json_integer((json_int_t)e.failed));
            json_object_set(o, "errors", e.arr);
            char *txt = json_dumps(o, JSON_COMPACT);
            json_decref(o);
            server_reply_take(w, 201, "application/json", txt, txt ? strlen(txt) : 0);
        }
    }
    json_decref(e.arr);
    json_decref(doc);
    batch_free(&b);
}

static void h_write(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    const char *prec = server_param(r, "precision");
    int64_t mult = 1; /* ns per unit */
    if (!prec || !*prec || !strcmp(prec, "ns") || !strcmp(prec, "n"))
        mult = 1;
    else if (!strcmp(prec, "us") || !strcmp(prec, "u"))
        mult = 1000;
    else if (!strcmp(prec, "ms"))
        mult = 1000000;
    else if (!strcmp(prec, "s"))
        mult = 1000000000;
    else {
        server_reply_error(w, 400, "Invalid precision", "expected ns, us, ms or s");
        return;
    }
    /* Slices of LP_SLICE points, each stored as soon as it is parsed (memory
     * stays small whatever the body), one wait for durability at the end. */
    enum { LP_SLICE = 16384 };
    lp_batch b = {0};
    size_t lines = 0, bad = 0, stored = 0;
    char first[192] = "", err[256] = "";
    uint64_t ticket = 0;
    int64_t now = server_now_ms();
    int more, failed = 0;
    do {
        b.n = b.ntags = 0;
        more = lineproto_parse(&b, r->body, r->body_len, mult, now, s->host, LP_SLICE, &lines, &bad,
                               first, sizeof first);
        if (more < 0) break;
        uint64_t t;
        if (server_ingest_points_nowait(s, b.pts, b.n, &t, err, sizeof err) < 0) {
            failed = 1;
            break;
        }
        if (t) ticket = t;
        stored += b.n;
    } while (more > 0);
    if (more < 0)
        server_reply_error(w, 500, "Out of memory", NULL);
    else if (failed || server_ingest_sync(s, ticket, err, sizeof err) < 0)
        server_reply_error(w, 500, "Unable to store the points", err);
    else {
        count_put(s, stored, bad);
        if (bad) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "%zu of %zu lines could not be parsed (the others were stored)", bad, lines);
            server_reply_error(w, 400, msg, first);
        } else
            server_reply(w, 204, "application/json", "", 0);
    }
    lineproto_free(&b);
}

static void h_events(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)arg;
    size_t ok = 0, bad = 0;
    char err[256] = "";
    int n = server_ingest_ndjson(s, r->body, r->body_len, &ok, &bad, err, sizeof err);
    if (n < 0) {
        server_reply_error(w, 500, "Unable to store the events", err);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "accepted", json_integer((json_int_t)ok));
    json_object_set_new(o, "failed", json_integer((json_int_t)bad));
    json_object_set_new(o, "points", json_integer(n));
    if (bad) {
        char msg[128];
        snprintf(msg, sizeof msg, "%zu events could not be parsed (the others were stored)", bad);
        json_object_set_new(
            o, "error", json_pack("{s:i,s:s,s:s}", "code", 400, "message", msg, "details", err));
    }
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    server_reply_take(w, bad ? 400 : 200, "application/json", txt, txt ? strlen(txt) : 0);
}

static int ingest_init(server *s, void **state, char *err, size_t errlen)
{
    (void)state;
    if (server_route(s, "POST", "/api/put", h_put, NULL) < 0 ||
        server_route(s, "POST", "/api/metrics", h_dragon_metrics, NULL) < 0 ||
        server_route(s, "POST", "/write", h_write, NULL) < 0 ||
        server_route(s, "POST", "/api/v2/write", h_write, NULL) < 0 ||
        server_route(s, "POST", "/api/events", h_events, NULL) < 0) {
        snprintf(err, errlen, "route table full");
        return -1;
    }
    return 0;
}

SERVER_MODULE(ingest_module, "ingest", ingest_init, NULL)
