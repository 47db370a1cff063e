/* ingest_bench.c — the socket ingest's own cost, in-process (bench/serve_put/run
 * runs it beside the HTTP figures; bench/README.md "Ingest of /api/put and
 * /api/events").
 *
 * The bodies are bench/serve_put/run's /api/events bodies: NDJSON
 * kickstart.inv.online events of 10 numeric fields, 500 a body, 100 hosts.
 * Three figures, points per CPU second of this process (getrusage, every
 * thread), median of REPS with min..max:
 *   read      the events read into points (ingest_ndjson_points), streaming
 *   jansson   the same with every line read by jansson (the reading before)
 *   ingest    server_ingest_ndjson into a store: read, store, live values —
 *             what /api/events and the Unix socket do, without HTTP and
 *             without the events repository's hook (the dashboard's module)
 *
 *   ingest_bench [--points N] [--reps R]
 * Prints one JSON object per figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "server/ingest.h"
#include "server/server.h"

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    printf("{\"figure\":\"%s\",\"points_per_cpu_s\":%.0f,\"min\":%.0f,\"max\":%.0f}\n", what,
           v[n / 2], v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
    long npoints = 1000000;
    int reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--points")) npoints = atol(argv[i + 1]);
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    }
    if (reps < 1 || reps > 50 || npoints < 10) {
        fprintf(stderr, "usage: ingest_bench [--points N] [--reps R]\n");
        return 125;
    }
    long nev = npoints / 10, start = 1700000000;
    int nbodies = (int)((nev + 499) / 500);
    sbuf *bodies = calloc((size_t)nbodies, sizeof *bodies);
    for (long e = 0; e < nev; e++) {
        char line[512];
        int n = snprintf(
            line, sizeof line,
            "{\"event\": \"kickstart.inv.online\", \"ts\": %ld, \"hostname\": "
            "\"node%03ld\", \"job_id\": \"j%ld\", \"rss\": %ld, \"vm\": %ld, \"utime\": "
            "%.17g, \"stime\": %.17g, \"rchar\": %ld, \"wchar\": %ld, \"threads\": 4, "
            "\"procs\": 2, \"iowait\": 0.5, \"load\": 1.25}\n",
            start + e / 100, e % 100, e % 100 / 2, e % 1000, 2 * e, e / 3.0, e / 7.0, 5 * e, 3 * e);
        sbuf_put(&bodies[e / 500], line, (size_t)n);
    }
    double *rd = calloc((size_t)reps, sizeof *rd), *js = calloc((size_t)reps, sizeof *js),
           *in = calloc((size_t)reps, sizeof *in);
    for (int r = 0; r < reps; r++) {
        for (int mode = 0; mode < 2; mode++) {
            double c0 = cpu_s();
            size_t pts = 0;
            for (int i = 0; i < nbodies; i++) {
                ingest_result res;
                if (ingest_ndjson_points(bodies[i].p, bodies[i].len, 0,
                                         mode ? INGEST_JANSSON_ONLY : 0, &res) < 0)
                    return 125;
                pts += res.n;
                ingest_result_free(&res);
            }
            (mode ? js : rd)[r] = (double)pts / (cpu_s() - c0);
        }
        char dir[] = "/tmp/jobscope-ingest-bench.XXXXXX";
        if (!mkdtemp(dir)) return 125;
        server_config c;
        server_config_defaults(&c);
        free(c.store_dir);
        c.store_dir = strdup(dir);
        c.node_interval_s = 0;
        char err[256];
        static const server_module *const modules[] = {&core_module, &ingest_module, &query_module,
                                                       NULL};
        server *s = server_create(&c, modules, err, sizeof err);
        if (!s) {
            fprintf(stderr, "ingest_bench: %s\n", err);
            return 125;
        }
        double c0 = cpu_s();
        long pts = 0;
        for (int i = 0; i < nbodies; i++) {
            size_t ok, bad;
            int n = server_ingest_ndjson(s, bodies[i].p, bodies[i].len, &ok, &bad, err, sizeof err);
            if (n < 0) {
                fprintf(stderr, "ingest_bench: %s\n", err);
                return 125;
            }
            pts += n;
        }
        in[r] = (double)pts / (cpu_s() - c0);
        server_destroy(s);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "ingest_bench: cannot remove %s\n", dir);
    }
    report("read (streaming)", rd, reps);
    report("read (jansson)", js, reps);
    report("ingest (read + store + live, no repository)", in, reps);
    for (int i = 0; i < nbodies; i++) sbuf_free(&bodies[i]);
    free(bodies);
    free(rd);
    free(js);
    free(in);
    return 0;
}
