/* remote_write.c — Prometheus remote write (remote_write.h): the protobuf
 * encoder and the snappy framing of -o promrw:// and serve --forward
 * promrw://; the delivery (batching, spool, retries) is net/tsdb.c's.
 *
 * Why by hand and not protobuf-c: the client writes four small messages and
 * never reads one (Label{1 name, 2 value}, Sample{1 double value, 2 int64
 * timestamp}, TimeSeries{1 labels, 2 samples}, WriteRequest{1 timeseries}),
 * which is 60 lines of varints and lengths; generated code would add a
 * .proto, a code generator to the build and a runtime library to the
 * plugin, and per-sample allocations of the message structs.  The bytes are
 * checked against Prometheus' and VictoriaMetrics' own decoders
 * (tests/integration/43_publish_remote_write.sh) and by the unit test's
 * decoder (tests/unit/test_remote_write.c).
 *
 * libsnappy is loaded when the first body is compressed, not linked: it
 * brings libstdc++ with it (0.9 MB of RSS), and the plugin is loaded by every
 * monitor that streams to its node's serve. */
#include "remote_write.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../formats/sbuf.h"
#include "../formats/tsconv.h"

static void put_varint(sbuf *b, uint64_t v)
{
    char t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (char)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (char)v;
    sbuf_put(b, t, n);
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* key of field f with wire type w */
#define KEY(f, w) ((char)(((f) << 3) | (w)))

static size_t str_field_len(size_t n)
{
    return 1 + varint_len(n) + n;
}

static void put_str_field(sbuf *b, int field, const char *s, size_t n)
{
    sbuf_putc(b, KEY(field, 2));
    put_varint(b, n);
    sbuf_put(b, s, n);
}

void remote_write_series(sbuf *b, const rw_label *labels, int n, double value, int64_t ts_ms)
{
    size_t ts_len = 0, sample_len = 1 + 8 + 1 + varint_len((uint64_t)ts_ms);
    size_t lens[128];
    if (n > 128) n = 128;
    for (int i = 0; i < n; i++) {
        lens[i] = str_field_len(strlen(labels[i].name)) + str_field_len(strlen(labels[i].value));
        ts_len += 1 + varint_len(lens[i]) + lens[i];
    }
    ts_len += 1 + varint_len(sample_len) + sample_len;
    sbuf_putc(b, KEY(1, 2)); /* WriteRequest.timeseries */
    put_varint(b, ts_len);
    for (int i = 0; i < n; i++) {
        sbuf_putc(b, KEY(1, 2)); /* TimeSeries.labels */
        put_varint(b, lens[i]);
        put_str_field(b, 1, labels[i].name, strlen(labels[i].name));
        put_str_field(b, 2, labels[i].value, strlen(labels[i].value));
    }
    sbuf_putc(b, KEY(2, 2)); /* TimeSeries.samples */
    put_varint(b, sample_len);
    sbuf_putc(b, KEY(1, 1)); /* Sample.value: fixed64, little-endian */
    uint64_t bits;
    memcpy(&bits, &value, 8);
    char le[8];
    for (int i = 0; i < 8; i++) le[i] = (char)(bits >> (8 * i));
    sbuf_put(b, le, 8);
    sbuf_putc(b, KEY(2, 0)); /* Sample.timestamp: int64 varint (two's complement) */
    put_varint(b, (uint64_t)ts_ms);
}

/* Prometheus' names: metric [a-zA-Z_:][a-zA-Z0-9_:]*, label [a-zA-Z_][a-zA-Z0-9_]* */
static void sanitize(char *s, int colon_ok)
{
    for (char *p = s; *p; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                 (p > s && *p >= '0' && *p <= '9') || (colon_ok && *p == ':');
        if (!ok) *p = '_';
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const rw_label *)a)->name, ((const rw_label *)b)->name);
}

/* One point's numbers as TimeSeries (remote_write_encode says how). */
static int remote_write_point(sbuf *b, const ts_point *pp)
{
    const ts_point p = *pp;
    rw_label lab[128];
    char names[128][64];
    int n = 1; /* lab[0] is __name__ */
    /* the tags tsconv_parse takes: annotations, rank/pid/id, and the "tags"
     * object (--tag KEY=VALUE, a custom metric's tags, the Slurm plugin's
     * slurm_*) unless an annotation has the name */
    for (int i = 0; i < p.ntags && n < 127; i++) {
        snprintf(names[n], sizeof names[n], "%s", p.tags[i].key);
        sanitize(names[n], 0);
        if (!strncmp(names[n], "__", 2)) continue; /* reserved */
        lab[n].name = names[n];
        lab[n++].value = p.tags[i].val;
    }
    char metric[256];
    int samples = 0;
    int64_t ts_ms = (int64_t)llround(p.ts * 1000.0);
    for (int f = 0; f < p.nfields; f++) {
        if (!strcmp(p.fields[f].key, TSCONV_OWN_VALUE))
            snprintf(metric, sizeof metric, "%s", p.name);
        else
            snprintf(metric, sizeof metric, "%s_%s", p.name, p.fields[f].key);
        sanitize(metric, 1);
        lab[0].name = "__name__";
        lab[0].value = metric;
        rw_label sorted[128];
        memcpy(sorted, lab, (size_t)n * sizeof lab[0]);
        qsort(sorted, (size_t)n, sizeof sorted[0], by_name);
        /* one name twice after sanitising (a.b and a_b): keep the first */
        int m = 0;
        for (int i = 0; i < n; i++)
            if (!m || strcmp(sorted[m - 1].name, sorted[i].name)) sorted[m++] = sorted[i];
        remote_write_series(b, sorted, m, p.fields[f].val, ts_ms);
        samples++;
    }
    return samples;
}

int remote_write_encode(sbuf *b, const char *json, size_t len, const char *keep_tags)
{
    ts_point p;
    if (tsconv_parse(&p, json, len, keep_tags) < 0) return 0;
    int n = remote_write_point(b, &p);
    tsconv_free(&p);
    return n;
}

int remote_write_set(sbuf *b, const struct mset *s, const tsconv_ann *a, const char *keep_tags)
{
    ts_point p;
    tsconv_text t;
    if (tsconv_set_point(&p, &t, s, a, keep_tags) < 0) return -1;
    return remote_write_point(b, &p);
}

static struct {
    snappy_status (*compress)(const char *, size_t, char *, size_t *);
    size_t (*max_length)(size_t);
} snappy;
static pthread_once_t snappy_once = PTHREAD_ONCE_INIT;

static void snappy_load(void)
{
    void *h = dlopen("libsnappy.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    *(void **)&snappy.compress = dlsym(h, "snappy_compress");
    *(void **)&snappy.max_length = dlsym(h, "snappy_max_compressed_length");
    if (!snappy.compress || !snappy.max_length) snappy.compress = NULL;
}

int remote_write_finish(const sbuf *body, sbuf *out)
{
    pthread_once(&snappy_once, snappy_load);
    if (!snappy.compress) return -1; /* no libsnappy.so.1: the batch waits in the spool */
    size_t cap = snappy.max_length(body->len), n = cap;
    sbuf_reset(out);
    if (out->cap < cap + 1) {
        char *q = realloc(out->p, cap + 1);
        if (!q) return -1;
        out->p = q;
        out->cap = cap + 1;
    }
    if (snappy.compress(body->p ? body->p : "", body->len, out->p, &n) != SNAPPY_OK) return -1;
    out->len = n;
    return 0;
}
