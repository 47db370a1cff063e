/* test_put_reader.c — the /api/put reader (src/server/put_reader.h) reads
 * every body as jansson reads it: the same elements, the same metric,
 * timestamp, value and tags of each, and a syntax error wherever jansson
 * finds one.  The reader guesses each string from the point before it
 * (the same key, metric, tag key or tag value written the same way), so
 * the bodies here are built to make those guesses hit and miss: names that
 * are prefixes of each other, the same name escaped, keys that only start
 * like the known ones, duplicate keys, tags in another order or of other
 * kinds, and every body cut short at random. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "server/put_reader.h"

typedef struct text {
    char *p;
    size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        assert_true(k >= 0);
        if ((size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        }
        t->cap = t->cap * 2 + (size_t)k + 64;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
}

static void put_bytes(text *t, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) put(t, "%c", s[i]);
}

/* A value as "kind:text" from the reader ... */
static void reader_value(text *t, const jread_value *v)
{
    switch (v->kind) {
    case JV_NONE:
        put(t, "none");
        break;
    case JV_STRING:
        put(t, "s:");
        put_bytes(t, v->s, v->n);
        break;
    case JV_INT:
    case JV_REAL:
        put(t, "n:%.17g", v->d);
        break;
    case JV_NULL:
        put(t, "null");
        break;
    case JV_OBJECT:
        put(t, "object");
        break;
    case JV_OTHER:
        put(t, "other");
        break;
    }
}

/* ... and from jansson's tree. */
static void tree_value(text *t, json_t *v)
{
    if (!v)
        put(t, "none");
    else if (json_is_string(v)) {
        put(t, "s:");
        put_bytes(t, json_string_value(v), json_string_length(v));
    } else if (json_is_number(v))
        put(t, "n:%.17g", json_number_value(v));
    else if (json_is_null(v))
        put(t, "null");
    else if (json_is_object(v))
        put(t, "object");
    else
        put(t, "other");
}

/* The body as the reader reads it: one line an element, or "error". */
static size_t shaped; /* points by_reader read by the shape of the one before */

static char *by_reader(const char *body, size_t len)
{
    text t = {0};
    put(&t, "");
    put_reader r;
    put_point_text *dp = malloc(sizeof *dp);
    assert_non_null(dp);
    int rc = put_reader_start(&r, body, len);
    if (rc == 0 && r.not_points) put(&t, "not points\n");
    while (rc == 0 && (rc = put_reader_next(&r, dp)) > 0) {
        rc = 0;
        if (dp->not_object) {
            put(&t, "not an object\n");
            continue;
        }
        put(&t, "metric ");
        reader_value(&t, &dp->metric);
        put(&t, " timestamp ");
        reader_value(&t, &dp->timestamp);
        put(&t, " value ");
        reader_value(&t, &dp->value);
        if (dp->tags_not_object)
            put(&t, " tags not an object");
        else if (dp->has_tags) {
            put(&t, " tags");
            for (int i = 0; i < dp->ntags && i < PUT_READER_MAX_TAGS; i++) {
                put(&t, " ");
                put_bytes(&t, dp->tags[i].k, dp->tags[i].kl);
                put(&t, "=");
                reader_value(&t, &dp->tags[i].v);
            }
        }
        put(&t, "\n");
    }
    shaped += r.shaped;
    put_reader_free(&r);
    free(dp);
    if (rc < 0) {
        t.n = 0;
        put(&t, "error");
    }
    return t.p;
}

static void tree_point(text *t, json_t *e)
{
    if (!json_is_object(e)) {
        put(t, "not an object\n");
        return;
    }
    put(t, "metric ");
    tree_value(t, json_object_get(e, "metric"));
    put(t, " timestamp ");
    tree_value(t, json_object_get(e, "timestamp"));
    put(t, " value ");
    tree_value(t, json_object_get(e, "value"));
    json_t *tags = json_object_get(e, "tags");
    if (tags && !json_is_object(tags))
        put(t, " tags not an object");
    else if (tags) {
        put(t, " tags");
        const char *k;
        json_t *v;
        json_object_foreach(tags, k, v)
        {
            put(t, " %s=", k);
            tree_value(t, v);
        }
    }
    put(t, "\n");
}

/* The body as jansson reads it, in the same form. */
static char *by_jansson(const char *body, size_t len)
{
    text t = {0};
    put(&t, "");
    json_t *root = json_loadb(body, len, JSON_DECODE_ANY, NULL);
    if (!root)
        put(&t, "error");
    else if (json_is_array(root)) {
        size_t i;
        json_t *e;
        json_array_foreach(root, i, e) tree_point(&t, e);
    } else if (json_is_object(root))
        tree_point(&t, root);
    else
        put(&t, "not points\n");
    json_decref(root);
    return t.p;
}

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

#define PICK(s, a) (a)[rnd(s) % (sizeof(a) / sizeof(a)[0])]

/* A member key: mostly the known ones, written plainly (the guessed case),
 * sometimes escaped, cut, extended or unknown. */
static const char *const keys[] = {
    "metric",     "metric",      "metric",     "timestamp", "timestamp", "value", "value",
    "tags",       "tags",        "tags",       "metricx",   "metri",     "m",     "tag",
    "tagsx",      "t",           "timestamp2", "timestam",  "values",    "v",     "met\\u0072ic",
    "t\\u0061gs", "valu\\u0065", "",           "x"};
/* Strings that are each other's prefixes, the same text escaped, a quote
 * and a backslash inside, UTF-8. */
static const char *const names[] = {"cpu",
                                    "cpu",
                                    "cpu",
                                    "cpu2",
                                    "cp",
                                    "c\\u0070u",
                                    "cpu\\n",
                                    "mem",
                                    "mem",
                                    "node01",
                                    "node01",
                                    "node010",
                                    "node0",
                                    "n\\u006fde01",
                                    "a\\\"b",
                                    "a\\\\b",
                                    "a\\b",
                                    "a\\b",
                                    "\\u00e9t\\u00e9",
                                    "été",
                                    "",
                                    "j1",
                                    "j1",
                                    "j12",
                                    "host",
                                    "host",
                                    "hostx",
                                    "ho",
                                    "h\\u006fst",
                                    "job_id"};
static const char *const numbers[] = {"1",     "-0",      "1700000000", "1700000000123",
                                      "2.5",   "-3.25e2", "0.1",        "123456789012345678",
                                      "1e308", "7"};

static void put_string(text *t, unsigned *s)
{
    put(t, "\"%s\"", PICK(s, names));
}

static void put_scalar(text *t, unsigned *s)
{
    switch (rnd(s) % 10) {
    case 0:
        put(t, "null");
        break;
    case 1:
        put(t, "true");
        break;
    case 2:
        put(t, "[1, \"a\"]");
        break;
    case 3:
        put(t, "{\"a\": 1}");
        break;
    case 4:
    case 5:
    case 6:
        put(t, "%s", PICK(s, numbers));
        break;
    default:
        put_string(t, s);
    }
}

static void put_tags(text *t, unsigned *s)
{
    put(t, "{");
    int n = (int)(rnd(s) % 4);
    for (int i = 0; i < n; i++) {
        if (i) put(t, rnd(s) % 8 ? ", " : " ,\n ");
        put_string(t, s);
        put(t, rnd(s) % 6 ? ": " : " :");
        if (rnd(s) % 6)
            put_string(t, s);
        else
            put_scalar(t, s);
    }
    put(t, "}");
}

static void put_point(text *t, unsigned *s)
{
    if (rnd(s) % 20 == 0) { /* not an object */
        put_scalar(t, s);
        return;
    }
    put(t, "{");
    int n = (int)(rnd(s) % 6);
    for (int i = 0; i < n; i++) {
        if (i) put(t, rnd(s) % 8 ? ", " : ",");
        const char *k = PICK(s, keys);
        put(t, "\"%s\":%s", k, rnd(s) % 4 ? " " : "");
        if (!strcmp(k, "tags") && rnd(s) % 6)
            put_tags(t, s);
        else if (!strcmp(k, "metric") && rnd(s) % 6)
            put_string(t, s);
        else
            put_scalar(t, s);
    }
    put(t, "}");
}

/* The shape a client writes: the same keys in the same order, runs of one
 * metric and host, the last point of a run differing in one byte. */
static void put_regular_point(text *t, unsigned *s, int i)
{
    static const char *const metric[] = {"jobscope.rss", "jobscope.rss", "jobscope.rss2",
                                         "jobscope.rs", "jobscope.\\u0072ss"};
    static const char *const host[] = {"node001", "node001", "node0010", "node00", "node00\\u0031"};
    put(t,
        "{\"metric\": \"%s\", \"timestamp\": %d, \"value\": %d.%d, \"tags\": {\"host\": "
        "\"%s\", \"job_id\": \"j%d\"}}",
        metric[(i / 3 + rnd(s) % 2) % 5], 1700000000 + i, i, (int)(rnd(s) % 10), host[(i / 5) % 5],
        i / 7);
}

/* Each body is read from a copy of exactly its length, with nothing after
 * it: under ASan a read past its end fails the test. */
static void compare(const char *src, size_t len)
{
    char *body = malloc(len ? len : 1);
    assert_non_null(body);
    memcpy(body, src, len);
    char *a = by_reader(body, len), *b = by_jansson(body, len);
    if (strcmp(a, b))
        fprintf(stderr, "body: %.*s\nreader:\n%s\njansson:\n%s\n", (int)len, body, a, b);
    assert_string_equal(a, b);
    free(a);
    free(b);
    free(body);
}

static void every_body_reads_as_jansson_reads_it_guessed_or_not(void **st)
{
    (void)st;
    unsigned seed = 25;
    size_t shaped_before = shaped;
    for (int round = 0; round < 8000; round++) {
        text t = {0};
        put(&t, "");
        int regular = round % 3 == 0, n = 1 + (int)(rnd(&seed) % 12);
        put(&t, round % 17 == 0 ? "" : "[");
        for (int i = 0; i < n; i++) {
            if (i) put(&t, rnd(&seed) % 8 ? ", " : ",\n");
            if (regular)
                put_regular_point(&t, &seed, i);
            else
                put_point(&t, &seed);
            if (round % 17 == 0) break; /* one data point, no array */
        }
        put(&t, round % 17 == 0 ? "" : "]");
        compare(t.p, t.n);
        /* cut short anywhere: a syntax error for both, or the same points */
        size_t cut = t.n ? rnd(&seed) % t.n : 0;
        compare(t.p, cut);
        free(t.p);
    }
    /* a third of the bodies are of regular points: read by their shape */
    assert_true(shaped - shaped_before > 8000 / 3);
}

/* A number of n random digits, some of them not digits at all when bad. */
static void put_digits(text *t, unsigned *s, int n, int bad)
{
    for (int i = 0; i < n; i++) {
        char c = (char)('0' + rnd(s) % 10);
        if (bad && rnd(s) % 12 == 0) c = "/:a.-+ eE\x7f\xb0"[rnd(s) % 11];
        put(t, "%c", c);
    }
}

static void a_number_reads_as_jansson_reads_it_at_every_length(void **st)
{
    (void)st;
    /* integer parts of 1 to 24 digits and fractions of 0 to 21, read eight
     * digits at a time where there are eight: every run of digits crosses
     * that step, the 2^53 and 18-digit limits and the body's end, and some
     * hold a byte that is not a digit (a byte just outside '0'..'9' in the
     * eight read at once, a letter, a sign) */
    unsigned s = 7;
    for (int i = 0; i < 6000; i++) {
        text t = {0};
        int bad = i % 3 == 0;
        put(&t, "[{\"metric\": \"m\", \"tags\": {\"h\": \"x\"}, \"value\": ");
        if (rnd(&s) % 4 == 0) put(&t, "-");
        put_digits(&t, &s, 1 + (int)(rnd(&s) % 24), bad);
        if (rnd(&s) % 2) {
            put(&t, ".");
            put_digits(&t, &s, (int)(rnd(&s) % 22), bad);
        }
        if (rnd(&s) % 8 == 0) put(&t, "e%d", (int)(rnd(&s) % 40) - 20);
        size_t whole = t.n;
        put(&t, ", \"timestamp\": ");
        put_digits(&t, &s, 1 + (int)(rnd(&s) % 14), 0);
        put(&t, "}]");
        compare(t.p, t.n);
        compare(t.p, whole); /* the number ends the body */
        free(t.p);
    }
}

/* How many points of body the reader read by the shape of the one before
 * (after checking, with compare, that it reads the body as jansson does). */
static size_t shaped_in(const char *body)
{
    size_t before = shaped;
    compare(body, strlen(body));
    return shaped - before;
}

static void a_point_written_like_the_one_before_is_read_by_its_shape(void **st)
{
    (void)st;
    const char *first = "[{\"metric\": \"m.a\", \"timestamp\": 1700000000, \"value\": 1.5, "
                        "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}, ";
    /* a second point and whether it is read by the first one's shape */
    static const struct {
        const char *point;
        size_t by_shape;
    } second[] = {
        {"{\"metric\": \"m.b\", \"timestamp\": 1700000001, \"value\": 2.25, "
         "\"tags\": {\"host\": \"n10\", \"job_id\": \"\"}}",
         1},
        {"{\"metric\": \"m.a\", \"timestamp\": -0, \"value\": -0.0, "
         "\"tags\": {\"host\": \"n\", \"job_id\": \"j\"}}",
         1},
        {"{\"metric\": \"m.a\", \"timestamp\": 0, \"value\": 9007199254740992, "
         "\"tags\": {\"host\": \"n\", \"job_id\": \"j\"}}",
         1},
        /* forms the shape leaves to the full reading: */
        {"{\"metric\": \"m.a\", \"timestamp\": 1700000001, \"value\": 1e3, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1700000001, \"value\": 9007199254740993, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1700000001, \"value\": 123456789012345678901, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1700000001, \"value\": \"9.5\", "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.\\u0061\", \"timestamp\": 1700000001, \"value\": 1, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1700000001, \"value\": 1, "
         "\"tags\": {\"host\": \"n\xc3\xbc\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1700000001, \"value\": 1, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\", \"x\": \"y\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1700000001,  \"value\": 1, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"value\": 1, \"timestamp\": 1700000001, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        /* errors, found where the full reading finds them */
        {"{\"metric\": \"m.a\", \"timestamp\": 01, \"value\": 1, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1., \"value\": 1, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1, \"value\": 1, "
         "\"tags\": {\"host\": \"n\x01\", \"job_id\": \"j1\"}}",
         0},
        {"{\"metric\": \"m.a\", \"timestamp\": 1, \"value\": 1, "
         "\"tags\": {\"host\": \"n1\", \"job_id\": \"j1\"}]",
         0},
    };
    for (size_t i = 0; i < sizeof second / sizeof second[0]; i++) {
        text t = {0};
        put(&t, "%s%s]", first, second[i].point);
        if (shaped_in(t.p) != second[i].by_shape)
            fail_msg("point %zu: read %s its shape: %s", i, second[i].by_shape ? "without" : "by",
                     second[i].point);
        /* the same second point cut short at every byte */
        for (size_t cut = strlen(first); cut < t.n; cut++) compare(t.p, cut);
        free(t.p);
    }
    /* a point of another shape is learned in turn; a duplicate tag key or
     * an unknown member leave no shape */
    assert_int_equal(
        shaped_in("[{\"metric\": \"a\", \"value\": 1, \"timestamp\": 2, \"tags\": {\"h\": \"x\"}},"
                  "{\"metric\": \"b\", \"value\": 1, \"timestamp\": 2, \"tags\": {\"h\": \"y\"}},"
                  "{\"value\": 1, \"metric\": \"a\", \"timestamp\": 2, \"tags\": {\"h\": \"x\"}},"
                  "{\"value\": 3, \"metric\": \"c\", \"timestamp\": 4, \"tags\": {\"h\": \"z\"}}]"),
        2);
    assert_int_equal(shaped_in("[{\"metric\": \"a\", \"value\": 1, \"timestamp\": 2, \"tags\": "
                               "{\"h\": \"x\", \"h\": \"z\"}},"
                               "{\"metric\": \"a\", \"value\": 1, \"timestamp\": 2, \"tags\": "
                               "{\"h\": \"x\", \"h\": \"z\"}}]"),
                     0);
    assert_int_equal(shaped_in("[{\"metric\": \"a\", \"value\": 1, \"timestamp\": 2, \"x\": 1, "
                               "\"tags\": {\"h\": \"x\"}},"
                               "{\"metric\": \"a\", \"value\": 1, \"timestamp\": 2, \"x\": 1, "
                               "\"tags\": {\"h\": \"x\"}}]"),
                     0);
}

/* The guess is a span of the body compared byte for byte: the same bytes
 * followed by something other than the closing quote are another string. */
static void a_guess_that_is_a_prefix_or_an_escape_is_not_taken(void **st)
{
    (void)st;
    static const char *const bodies[] = {
        "[{\"metric\":\"a\",\"tags\":{\"h\":\"x\"}},{\"metric\":\"ab\",\"tags\":{\"h\":\"xy\"}}]",
        "[{\"metric\":\"ab\",\"tags\":{\"h\":\"xy\"}},{\"metric\":\"a\",\"tags\":{\"h\":\"x\"}}]",
        "[{\"metric\":\"a\\\"\",\"tags\":{\"h\":\"x\"}},{\"metric\":\"a\",\"tags\":{\"h\\u0000\":1}"
        "}]",
        "[{\"metric\":\"a\\\\\",\"tags\":{\"h\":\"x\"}},{\"metric\":\"a\\\\\",\"tags\":{\"h\":"
        "\"x\"}}]",
        "[{\"metric\":\"a\",\"tags\":{\"h\":\"x\"}},{\"metric\":\"a\",\"tags\":{\"h\":\"x\"]",
        "[{\"metric\":\"a\",\"tags\":{\"h\":\"x\"}},{\"metric\":\"a",
        "[{\"metric\":\"a\",\"tags\":{\"h\":\"x\"}},{\"metric\":\"a\"",
        "[{\"metric\":\"a\",\"tags\":{\"h\":\"x\"}},{\"metrics\":\"a\",\"tags\":{\"h\":\"x\"}}]",
        "[{\"metric\":\"a\",\"tags\":{\"h\":\"x\",\"h\":\"y\"}},{\"metric\":\"a\",\"tags\":{\"h\":"
        "\"y\",\"h\":\"x\"}}]",
        "[{\"tags\":{\"h\":\"x\"}},{\"tags\":{\"h\":\"x\\u0001\"}}]",
        "[{\"tags\":{\"h\":\"x\"}},{\"tags\":{\"h\":\"x\001\"}}]",
        "[{\"metric\":\"a\\\\\"},{\"metric\":\"a\\\"x\"}]",
        "[{\"metric\":\"a\\\\b\"},{\"metric\":\"a\\b\"}]",
        "[{\"tags\":{\"\":\"\"}},{\"tags\":{\"\":\"\"}},{\"tags\":{\"\":\"a\"}}]",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        compare(bodies[i], strlen(bodies[i]));
}

/* The metric's place and generation name one string: api_ingest.c checks
 * and interns a metric once per pair.  Bodies of metrics drawn from a pool
 * (more than the reader keeps, names that are prefixes of each other, the
 * same name escaped, a duplicate "metric" member), in cycles, runs and at
 * random: two points with the same pair have the same metric, and a cycle
 * of up to PUT_READER_METRICS names, or a run of one, is found again (the
 * pair repeats) once it has been read. */
static void a_metric_s_place_and_generation_name_one_string(void **st)
{
    (void)st;
    static const char *const pool[] = {
        "m.a", "m.ab", "m.a\\u0062", "m.abc", "m.b", "m.c", "m.d", "m.e", "m.f", "m.g", "m.h",
        "m.i", "m.j",  "m.k",        "m.l",   "m.m", "m.n", "m.o", "m.p", "m.q", "m.r", "m.s"};
    const int npool = (int)(sizeof pool / sizeof pool[0]);
    unsigned seed = 7;
    for (int round = 0; round < 400; round++) {
        int mode = round % 4, cycle = 1 + (int)(rnd(&seed) % (PUT_READER_METRICS + 4)), n = 200;
        int pick[200];
        text t = {0};
        put(&t, "[");
        for (int i = 0; i < n; i++) {
            pick[i] = mode == 0   ? i % cycle                                    /* a cycle */
                      : mode == 1 ? (i / 10) % npool                             /* runs */
                      : mode == 2 ? (int)(rnd(&seed) % (unsigned)npool)          /* at random */
                                  : (i % cycle + (int)(rnd(&seed) % 2)) % npool; /* a loose cycle */
            pick[i] %= npool;
            if (i) put(&t, ",");
            if (i % 37 == 5) /* the first member is overridden, as jansson reads it */
                put(&t, "{\"metric\":\"m.zz\",\"metric\":\"%s\",\"value\":1}", pool[pick[i]]);
            else
                put(&t, "{\"metric\":\"%s\",\"value\":1}", pool[pick[i]]);
        }
        put(&t, "]");
        put_reader r;
        put_point_text *dp = malloc(sizeof *dp);
        assert_non_null(dp);
        assert_int_equal(put_reader_start(&r, t.p, t.n), 0);
        int slot[200];
        unsigned gen[200];
        char *name[200];
        for (int i = 0; i < n; i++) {
            assert_int_equal(put_reader_next(&r, dp), 1);
            slot[i] = dp->metric_slot;
            gen[i] = dp->metric_gen;
            name[i] = strndup(dp->metric.s, dp->metric.n);
            assert_true(slot[i] >= -1 && slot[i] < PUT_READER_METRICS);
            for (int j = 0; j < i; j++)
                if (slot[i] >= 0 && slot[j] == slot[i] && gen[j] == gen[i])
                    assert_string_equal(name[j], name[i]);
        }
        assert_int_equal(put_reader_next(&r, dp), 0);
        if (mode == 0 && cycle <= PUT_READER_METRICS) /* after the first round: found again */
            for (int i = 2 * cycle; i < n; i++)
                if (i % 37 != 5 && strchr(pool[pick[i]], '\\') == NULL)
                    assert_true(slot[i] == slot[i - cycle] && gen[i] == gen[i - cycle]);
        if (mode == 1)
            for (int i = 1; i < n; i++)
                if (pick[i] == pick[i - 1] && i % 37 != 5 && (i - 1) % 37 != 5 &&
                    strchr(pool[pick[i]], '\\') == NULL)
                    assert_true(slot[i] == slot[i - 1] && gen[i] == gen[i - 1]);
        for (int i = 0; i < n; i++) free(name[i]);
        put_reader_free(&r);
        free(dp);
        free(t.p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_body_reads_as_jansson_reads_it_guessed_or_not),
        cmocka_unit_test(a_guess_that_is_a_prefix_or_an_escape_is_not_taken),
        cmocka_unit_test(a_number_reads_as_jansson_reads_it_at_every_length),
        cmocka_unit_test(a_point_written_like_the_one_before_is_read_by_its_shape),
        cmocka_unit_test(a_metric_s_place_and_generation_name_one_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
