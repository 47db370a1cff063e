/* api_core.c — the server's own small endpoints: /api/version, and
 * Prometheus /metrics (server health + live per-job values, live.c, + the
 * lines modules add with server_on_metrics), as the module "core" (the
 * ingest and query endpoints are the modules of api_ingest.c and
 * api_query.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server.h"
#include "util/common.h" /* JOBSCOPE_VERSION_STR */

static void h_version(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)r;
    (void)arg;
    server_replyf(
        w, 200, "application/json",
        "{\"version\":\"%s\",\"short_revision\":\"jobscope\",\"full_revision\":\"jobscope-serve "
        "%s\","
        "\"host\":\"%s\",\"repo\":\"jobscope\",\"user\":\"jobscope\",\"timestamp\":\"%lld\"}",
        SERVER_VERSION, JOBSCOPE_VERSION_STR, s->host, (long long)(s->started_ms / 1000));
}

static void counter(sbuf *b, const char *name, const char *help, unsigned long long v)
{
    sbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, v);
}

static void gauge(sbuf *b, const char *name, const char *help, double v)
{
    sbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

static void h_metrics(server *s, const server_request *r, server_response *w, void *arg)
{
    (void)r;
    (void)arg;
    sbuf b = {0};
    server_stats st;
    server_stats_get(s, &st);
    counter(&b, "jobscope_serve_http_requests_total", "HTTP requests answered", st.requests);
    sbuf_puts(&b, "# HELP jobscope_serve_http_errors_total HTTP answers with an error status\n"
                  "# TYPE jobscope_serve_http_errors_total counter\n");
    sbuf_printf(&b, "jobscope_serve_http_errors_total{class=\"4xx\"} %llu\n", st.errors_4xx);
    sbuf_printf(&b, "jobscope_serve_http_errors_total{class=\"5xx\"} %llu\n", st.errors_5xx);
    counter(&b, "jobscope_serve_http_unauthorized_total",
            "requests refused for a missing or wrong token", st.unauthorized);
    counter(&b, "jobscope_serve_http_body_too_large_total", "requests refused with 413",
            st.too_large);
    counter(&b, "jobscope_serve_http_received_bytes_total", "request body bytes received",
            st.bytes_in);
    sbuf_printf(&b,
                "# HELP jobscope_serve_http_handler_seconds_total time spent answering requests\n"
                "# TYPE jobscope_serve_http_handler_seconds_total counter\n"
                "jobscope_serve_http_handler_seconds_total %.6f\n",
                st.request_seconds);
    counter(&b, "jobscope_serve_ingested_points_total", "points stored durably", st.points);
    counter(&b, "jobscope_serve_ingested_events_total", "jobscope events ingested", st.events);
    counter(&b, "jobscope_serve_put_failed_points_total",
            "points refused by /api/put, /api/metrics and /write", st.put_failed);
    counter(&b, "jobscope_serve_store_errors_total", "batches the store could not write",
            st.store_errors);
    store_stats ss = {0};
    if (s->st) store_stats_get(s->st, &ss);
    gauge(&b, "jobscope_serve_store_series", "series in the store", (double)ss.series);
    gauge(&b, "jobscope_serve_store_points", "points in the store", (double)ss.points);
    gauge(&b, "jobscope_serve_store_chunks", "chunks in the store", (double)ss.chunks);
    gauge(&b, "jobscope_serve_store_disk_bytes", "bytes on disk under the store directory",
          (double)ss.disk_bytes);
    gauge(&b, "jobscope_serve_store_writable",
          "1 while the store takes writes, 0 while its log fails", ss.writable);
    counter(&b, "jobscope_serve_store_write_failures_total",
            "writes of the store's log that failed", ss.write_failures);
    sbuf_puts(&b, "# HELP jobscope_serve_store_dropped_points_total points dropped by retention\n"
                  "# TYPE jobscope_serve_store_dropped_points_total counter\n");
    sbuf_printf(&b, "jobscope_serve_store_dropped_points_total{reason=\"age\"} %llu\n",
                (unsigned long long)ss.dropped_points_age);
    sbuf_printf(&b, "jobscope_serve_store_dropped_points_total{reason=\"size\"} %llu\n",
                (unsigned long long)ss.dropped_points_size);
    gauge(&b, "jobscope_serve_store_size_limit_unmet",
          "1 while over --max-size with nothing left that may be dropped", ss.size_limit_unmet);
    counter(&b, "jobscope_serve_store_damaged_log_segments_total",
            "log segments found damaged at start (set aside in STORE/damaged)",
            ss.damaged_segments);
    gauge(&b, "jobscope_serve_live_series", "per-job series exposed below",
          (double)server_live_count(s));
    gauge(&b, "jobscope_serve_start_time_seconds", "when the server started (epoch seconds)",
          s->started_ms / 1e3);
    server_metrics_hooks(s, &b);
    server_live_metrics(s, &b);
    if (b.oom) {
        sbuf_free(&b);
        server_reply_error(w, 500, "out of memory", NULL);
        return;
    }
    server_reply_take(w, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
}

static int core_init(server *s, void **state, char *err, size_t errlen)
{
    (void)state;
    if (server_route(s, "GET", "/api/version", h_version, NULL) < 0 ||
        server_route(s, "POST", "/api/version", h_version, NULL) < 0 ||
        server_route(s, "GET", "/metrics", h_metrics, NULL) < 0) {
        snprintf(err, errlen, "route table full");
        return -1;
    }
    return 0;
}

SERVER_MODULE(core_module, "core", core_init, NULL)
