/* tsconv.c — see tsconv.h: events to Influx lines and OpenTSDB points from
 * their JSON text (jansson), and the writers of both formats that the value
 * set path (tsconv_set.c, which cannot include jansson.h beside the JSON
 * writer's json.h) shares.  Built into the network plugin. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tsconv.h"
#include "sbuf.h"
#include "util/series_name.h"

/* event/event.h, whose json.h cannot be included beside jansson.h */
int annotations_is_key(const char *key);

int tsconv_listed(const char *list, const char *key)
{
    if (!list) return 1;
    size_t kl = strlen(key);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == kl && !strncmp(p, key, l)) return 1;
        p += l + (p[l] ? 1 : 0);
    }
    return 0;
}

int tsconv_string_tag(const char *k)
{
    return annotations_is_key(k) || !strcmp(k, "name") || !strcmp(k, "uuid");
}

/* A non-empty string as tag k, unless listed out or already there. */
static void add_string_tag(ts_point *p, const char *k, json_t *v, const char *keep_tags)
{
    if (!json_is_string(v) || !json_string_length(v) || !tsconv_listed(keep_tags, k) ||
        p->ntags >= 64)
        return;
    for (int i = 0; i < p->ntags; i++)
        if (!strcmp(p->tags[i].key, k)) return;
    p->tags[p->ntags].key = k;
    p->tags[p->ntags++].val = strdup(json_string_value(v));
}

int tsconv_parse(ts_point *p, const char *json, size_t len, const char *keep_tags)
{
    memset(p, 0, sizeof *p);
    json_t *d = json_loadb(json, len, 0, NULL);
    if (!json_is_object(d) || !json_is_string(json_object_get(d, "event"))) {
        json_decref(d);
        return -1;
    }
    p->doc = d;
    p->tags_from = -1;
    p->name = strdup(json_string_value(json_object_get(d, "event")));
    json_t *t = json_object_get(d, "ts");
    p->ts = json_is_number(t) ? json_number_value(t) : 0;
    const char *k;
    json_t *v;
    json_object_foreach(d, k, v)
    {
        if (!strcmp(k, "event") || !strcmp(k, "ts") || !strcmp(k, "seq")) continue;
        char buf[64];
        if (json_is_string(v)) {
            /* the annotations, not exe, cmd, cwd, version...: one series per
             * command line would be unbounded cardinality */
            if (tsconv_string_tag(k)) add_string_tag(p, k, v, keep_tags);
        } else if (json_is_object(v) && !strcmp(k, "tags")) { /* --tag, a metric's tags */
            p->tags_from = p->ntags;
            const char *tk;
            json_t *tv;
            json_object_foreach(v, tk, tv) add_string_tag(p, tk, tv, keep_tags);
        } else if (json_is_number(v)) {
            double x = json_number_value(v);
            if (!strcmp(k, "rank") || !strcmp(k, "pid") || !strcmp(k, "id")) {
                if (!tsconv_listed(keep_tags, k) || p->ntags >= 64) continue;
                if (json_is_integer(v))
                    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
                else
                    snprintf(buf, sizeof buf, "%.17g", x);
                p->tags[p->ntags].key = k;
                p->tags[p->ntags++].val = strdup(buf);
            } else if (isfinite(x) && p->nfields < 256) {
                p->fields[p->nfields].key = k;
                p->fields[p->nfields++].val = x;
            }
        }
    }
    if (p->tags_from < 0) p->tags_from = p->ntags;
    return 0;
}

void tsconv_free(ts_point *p)
{
    for (int i = 0; i < p->ntags; i++) free((char *)p->tags[i].val);
    free((char *)p->name);
    json_decref(p->doc);
    memset(p, 0, sizeof *p);
}

/* Escapes per the line protocol: `chars` get a backslash. */
static void lp_esc(sbuf *b, const char *s, const char *chars)
{
    for (; *s; s++) {
        if (*s == '\n' || *s == '\r') {
            sbuf_put(b, "\\ ", 2);
            continue;
        }
        if (strchr(chars, *s)) sbuf_putc(b, '\\');
        sbuf_putc(b, *s);
    }
}

void tsconv_influx_point(sbuf *b, const ts_point *p)
{
    lp_esc(b, p->name, ", ");
    for (int i = 0; i < p->ntags; i++) {
        sbuf_putc(b, ',');
        lp_esc(b, p->tags[i].key, ",= ");
        sbuf_putc(b, '=');
        lp_esc(b, p->tags[i].val, ",= ");
    }
    for (int i = 0; i < p->nfields; i++) {
        sbuf_putc(b, i ? ',' : ' ');
        lp_esc(b, strcmp(p->fields[i].key, TSCONV_OWN_VALUE) ? p->fields[i].key : "value", ",= ");
        double v = p->fields[i].val;
        if (v == floor(v) && fabs(v) < 1e15)
            sbuf_printf(b, "=%.1f", v);
        else
            sbuf_printf(b, "=%.17g", v);
    }
    sbuf_printf(b, " %lld000\n", (long long)llround(p->ts * 1e6));
}

/* Appends one event as a line; returns 0 if it had no numbers. */
int tsconv_influx_line(sbuf *b, const char *json, size_t len, const char *keep_tags)
{
    ts_point p;
    if (tsconv_parse(&p, json, len, keep_tags) < 0) return 0;
    int n = p.nfields > 0;
    if (n) tsconv_influx_point(b, &p);
    tsconv_free(&p);
    return n;
}

/* OpenTSDB allows [a-zA-Z0-9-_./] in names and tag values. */
static void tsdb_name(sbuf *b, const char *s)
{
    for (; *s; s++) sbuf_putc(b, series_name_char((unsigned char)*s) ? *s : '_');
}

int tsconv_opentsdb_point(sbuf *b, const ts_point *p)
{
    long long ms = llround(p->ts * 1e3);
    for (int i = 0; i < p->nfields; i++) {
        sbuf_putc(b, b->len > 1 ? ',' : '[');
        sbuf_puts(b, "{\"metric\":\"");
        tsdb_name(b, p->name);
        if (strcmp(p->fields[i].key, TSCONV_OWN_VALUE)) {
            sbuf_putc(b, '.');
            tsdb_name(b, p->fields[i].key);
        }
        sbuf_printf(b, "\",\"timestamp\":%lld,\"value\":%.17g,\"tags\":{", ms, p->fields[i].val);
        for (int j = 0; j < p->ntags; j++) {
            sbuf_puts(b, j ? ",\"" : "\"");
            tsdb_name(b, p->tags[j].key);
            sbuf_puts(b, "\":\"");
            tsdb_name(b, p->tags[j].val);
            sbuf_putc(b, '"');
        }
        if (!p->ntags) sbuf_puts(b, "\"source\":\"jobscope\"");
        sbuf_puts(b, "}}");
    }
    return p->nfields;
}

int tsconv_opentsdb_points(sbuf *b, const char *json, size_t len, const char *keep_tags)
{
    ts_point p;
    if (tsconv_parse(&p, json, len, keep_tags) < 0) return 0;
    int n = tsconv_opentsdb_point(b, &p);
    tsconv_free(&p);
    return n;
}

int tsconv_has_key(const ts_point *p, const char *key)
{
    return p->doc && json_object_get(p->doc, key) != NULL;
}
