/* publish_bench.c — drives one destination through the sink interface, the
 * way the emitter does, without a monitored job: N events of about SIZE
 * bytes, seq 1..N, written as fast as possible, then a flush.  Prints
 * "written W ev/s, delivered D ev/s" (D counts until the flush returns).
 * Used by the publish tests (to put a known sequence through a destination)
 * and for the figures in docs/publishing.md.
 *
 *   publish_bench [-s SPOOLDIR] [-t FLUSH_TIMEOUT] [-n N] [-b BYTES] [-e NAME] [-r RATE] URL
 *
 * -r RATE paces the writes (events per second), for outage tests.  Exit 0
 * when everything was delivered within the flush timeout, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "sink/sink.h"
#include "sink/delivery/publisher.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    sink_options o;
    memset(&o, 0, sizeof o);
    long n = 10000, bytes = 400;
    double flush_timeout = 30, rate = 0;
    const char *name = "kickstart.inv.online";
    int c;
    while ((c = getopt(argc, argv, "s:t:n:b:e:r:k")) != -1) {
        switch (c) {
        case 's': o.spool_dir = optarg; break;
        case 't': flush_timeout = atof(optarg); break;
        case 'n': n = atol(optarg); break;
        case 'b': bytes = atol(optarg); break;
        case 'e': name = optarg; break;
        case 'r': rate = atof(optarg); break;
        case 'k': o.insecure = 1; break;
        default: return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: publish_bench [-s SPOOLDIR] [-t SECS] [-n N] [-b BYTES] [-e NAME] [-r RATE] URL\n");
        return 2;
    }
    char err[512];
    sink *s = sink_open(argv[optind], &o, err, sizeof err);
    if (!s) {
        fprintf(stderr, "publish_bench: %s\n", err);
        return 2;
    }
    char *json = malloc((size_t)bytes + 256), pad[4096];
    memset(pad, 'x', sizeof pad);
    int padn = bytes > 200 ? (int)(bytes - 200) : 0;
    if (padn > (int)sizeof pad - 1) padn = sizeof pad - 1;
    pad[padn] = 0;
    double t0 = now();
    for (long i = 1; i <= n; i++) {
        double ts = (double)time(NULL) + (i % 1000) / 1000.0;
        int len = sprintf(json, "{\"event\":\"%s\",\"ts\":%.6f,\"hostname\":\"bench\",\"job\":\"b1\","
                          "\"rss\":%ld,\"utime\":%.3f,\"procs\":1,\"pad\":\"%s\",\"seq\":%ld}",
                          name, ts, 1000 + i, i / 100.0, pad, i);
        js_event ev = { name, json, (size_t)len, (uint64_t)i, ts, NULL, 0 };
        s->ops->write(s, &ev);
        if (rate > 0) {
            double due = t0 + i / rate, d = due - now();
            if (d > 0) usleep((useconds_t)(d * 1e6));
        }
    }
    double t1 = now();
    int rc = s->ops->flush(s, flush_timeout);
    double t2 = now();
    pub_stats st = { 0 };
    if (publisher_of(s)) publisher_get_stats(publisher_of(s), &st);
    printf("written %.0f ev/s, delivered %.0f ev/s (%ld events, %.3f s + flush %.3f s; "
           "%llu went through the spool)%s\n",
           n / (t1 - t0 > 1e-9 ? t1 - t0 : 1e-9), rc == 0 ? n / (t2 - t0) : 0.0, n, t1 - t0, t2 - t1,
           st.spooled, rc == 0 ? "" : ", NOT all delivered");
    fflush(stdout);
    s->ops->close(s);
    free(json);
    return rc == 0 ? 0 : 1;
}
