/* store_bench.c — the data and the in-process measurements of the store
 * benchmark (bench/store/run, bench/README.md "The store").
 *
 * The data: JOBS jobs sampled every second for SECONDS, every numeric field
 * of a kickstart.inv.online event (docs/events.md) one series each, tagged
 * host (4 jobs per node), job_id and rank as jobscope's opentsdb/influx
 * sinks tag them.  Values follow what jobscope measures: cumulative
 * counters (utime/stime in seconds with 3 decimals, I/O bytes in bursts,
 * faults, context switches read every 10 s), gauges (rss/vm in kB changing
 * now and then, cpu_percent with 2 decimals), constants (pid, rank, bsend);
 * timestamps 1 s apart with 0..3 ms of jitter.  Deterministic: the same
 * arguments give the same points, for every store.
 *
 *   store_bench influx [--jobs N] [--seconds S] [--start MS]   line protocol on stdout
 *   store_bench influx-hc [--hosts H] [--host-jobs J] [--points P] [--start MS]
 *                                        the high-cardinality data: H x J series (one
 *                                        job's rss each, tags host and job_id), P points
 *                                        10 s apart, sent round by round
 *   store_bench ingest DIR [same]        store_put, one batch per sample second
 *   store_bench ingest-hc DIR [same as influx-hc]  the high-cardinality data, in-process
 *   store_bench settle DIR               store_maintain (merges chunks), then sizes
 *   store_bench query DIR METRIC FROM TO [REPS]
 *                                        sum by host of 10 s averages; times each rep
 *   store_bench size DIR                 store_stats
 * Figures are printed as one JSON object per line. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "store/store.h"

enum { F_PID, F_RANK, F_SEQ, F_ELAPSED, F_UTIME, F_STIME, F_CPU, F_RCHAR, F_WCHAR, F_SYSCR, F_SYSCW,
       F_RBYTES, F_BREAD, F_WBYTES, F_BWRITE, F_CWB, F_MINFLT, F_MAJFLT, F_NVCSW, F_NIVCSW, F_VM,
       F_RSS, F_SWAP, F_PROCS, F_THREADS, F_HWM, F_TOTAL_PROCS, F_TOTAL_PROCESSES, F_BSEND, F_BRECV,
       NFIELDS };
static const char *field_name[NFIELDS] = {
    "pid", "rank", "seq", "elapsed", "utime", "stime", "cpu_percent", "rchar", "wchar", "syscr", "syscw",
    "read_bytes", "bread", "write_bytes", "bwrite", "cancelled_write_bytes", "minflt", "majflt", "nvcsw",
    "nivcsw", "vm", "rss", "swap", "procs", "threads", "max_hwm", "total_procs", "total_processes",
    "bsend", "brecv"};
static const int field_decimals[NFIELDS] = {[F_ELAPSED] = 3, [F_UTIME] = 3, [F_STIME] = 3, [F_CPU] = 2};

typedef struct job {
    uint64_t rng;
    char host[16], id[48];
    double cores, io_rate;
    double v[NFIELDS];
    double cpu_acc, sys_acc;
    int64_t start_ms;
} job;

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double unif(uint64_t *s) { return (next(s) >> 11) * (1.0 / 9007199254740992.0); }
static double dec(double x, int d) { double p = pow(10, d); return round(x * p) / p; }

static int JOBS = 280, SECONDS = 3600, HOSTS = 1000, HOST_JOBS = 1000, POINTS = 10;
static int64_t START = 0;

static void job_init(job *j, int k)
{
    memset(j, 0, sizeof *j);
    j->rng = 0x5eed0000ULL + (uint64_t)k * 7919;
    snprintf(j->host, sizeof j->host, "n%03d", k / 4);
    int pid = 1000 + (int)(next(&j->rng) % 60000);
    j->start_ms = START - (int64_t)(next(&j->rng) % 600000);
    snprintf(j->id, sizeof j->id, "%s-%d-%" PRId64, j->host, pid, j->start_ms / 1000);
    j->cores = 0.2 + unif(&j->rng) * 3.8;
    j->io_rate = unif(&j->rng) * 4e6;
    j->v[F_PID] = pid;
    j->v[F_PROCS] = 1 + (int)(next(&j->rng) % 8);
    j->v[F_THREADS] = j->v[F_PROCS] * (1 + (int)(next(&j->rng) % 4));
    j->v[F_VM] = 100000 + (double)(next(&j->rng) % 4000000);
    j->v[F_RSS] = 20000 + (double)(next(&j->rng) % 2000000);
    j->v[F_HWM] = j->v[F_RSS];
    j->v[F_TOTAL_PROCS] = j->v[F_PROCS];
    j->v[F_TOTAL_PROCESSES] = j->v[F_PROCS] + 1;
}

/* Advances job j to sample i; returns its timestamp. */
static int64_t job_step(job *j, int i)
{
    uint64_t *r = &j->rng;
    int64_t ts = START + (int64_t)i * 1000 + (int64_t)(next(r) % 4);
    double *v = j->v;
    double ut = j->cores * (0.85 + 0.3 * unif(r)), st = j->cores * 0.03 * unif(r);
    double u0 = v[F_UTIME], s0 = v[F_STIME];
    j->cpu_acc += ut;
    j->sys_acc += st;
    v[F_UTIME] = dec(j->cpu_acc, 3);
    v[F_STIME] = dec(j->sys_acc, 3);
    v[F_CPU] = i ? dec((v[F_UTIME] - u0 + v[F_STIME] - s0) * 100, 2) : 0;
    v[F_SEQ] = i + 2;
    v[F_ELAPSED] = dec((ts - j->start_ms) / 1000.0, 3);
    double rd = unif(r) < 0.3 ? floor(unif(r) * j->io_rate) : 4096 * (double)(next(r) % 3);
    double wr = unif(r) < 0.2 ? floor(unif(r) * j->io_rate / 2) : 0;
    v[F_RCHAR] += rd;
    v[F_WCHAR] += wr;
    v[F_SYSCR] += ceil(rd / 65536) + (double)(next(r) % 5);
    v[F_SYSCW] += ceil(wr / 65536);
    if (unif(r) < 0.1) v[F_RBYTES] += 4096 * (double)(next(r) % 256);
    if (unif(r) < 0.2) v[F_WBYTES] += 4096 * (double)(next(r) % 512);
    v[F_BREAD] = v[F_RBYTES];
    v[F_BWRITE] = v[F_WBYTES];
    if (unif(r) < 0.001) v[F_CWB] += 4096;
    v[F_MINFLT] += (double)(next(r) % 200);
    if (unif(r) < 0.01) v[F_MAJFLT] += 1;
    if (i % 10 == 0) {              /* /proc/PID/status, about every 10 s */
        v[F_NVCSW] += (double)(next(r) % 2000);
        v[F_NIVCSW] += (double)(next(r) % 300);
        if (v[F_RSS] > v[F_HWM]) v[F_HWM] = v[F_RSS];
    }
    if (unif(r) < 0.01) v[F_VM] += 4 * (double)((int)(next(r) % 2001) - 1000);
    if (unif(r) < 0.2) {
        v[F_RSS] += 4 * (double)((int)(next(r) % 201) - 100);
        if (v[F_RSS] < 1000) v[F_RSS] = 1000;
    }
    if (unif(r) < 0.005) {
        double d = (double)((int)(next(r) % 3) - 1);
        if (v[F_PROCS] + d >= 1) {
            v[F_PROCS] += d;
            v[F_THREADS] += d;
            if (d > 0) { v[F_TOTAL_PROCS] += 1; v[F_TOTAL_PROCESSES] += 1; }
        }
    }
    return ts;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void parse_opts(int argc, char **argv, int from)
{
    for (int i = from; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--jobs")) JOBS = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) SECONDS = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--start")) START = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--hosts")) HOSTS = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--host-jobs")) HOST_JOBS = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--points")) POINTS = atoi(argv[i + 1]);
    }
    if (!START) {       /* the last full 2-hour window that ended over an hour ago */
        int64_t now = (int64_t)time(NULL) * 1000, p = 7200000;
        START = (now / p) * p - 2 * p;
    }
}

static int cmd_influx(void)
{
    job *jobs = calloc((size_t)JOBS, sizeof *jobs);
    for (int k = 0; k < JOBS; k++) job_init(&jobs[k], k);
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof out);
    for (int i = 0; i < SECONDS; i++)
        for (int k = 0; k < JOBS; k++) {
            job *j = &jobs[k];
            int64_t ts = job_step(j, i);
            printf("kickstart.inv.online,host=%s,job_id=%s,rank=0 ", j->host, j->id);
            for (int f = 0; f < NFIELDS; f++)
                printf("%s%s=%.*f", f ? "," : "", field_name[f], field_decimals[f], j->v[f]);
            printf(" %" PRId64 "\n", ts * 1000000);   /* nanoseconds */
        }
    free(jobs);
    return 0;
}

/* A site collector's fan-in: every job of every host reports its rss once
 * a round (10 s apart), rounds in order.  Values are kB that change now and
 * then, as jobscope's rss does. */
static int cmd_influx_hc(void)
{
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof out);
    size_t n = (size_t)HOSTS * HOST_JOBS;
    long long *rss = calloc(n, sizeof *rss);
    uint64_t rng = 0x5eedbeefULL;
    for (size_t k = 0; k < n; k++) rss[k] = 20000 + (long long)(next(&rng) % 2000000);
    for (int p = 0; p < POINTS; p++) {
        int64_t ts = START + (int64_t)p * 10000;
        for (int h = 0; h < HOSTS; h++)
            for (int j = 0; j < HOST_JOBS; j++) {
                size_t k = (size_t)h * HOST_JOBS + j;
                if (p && unif(&rng) < 0.3) rss[k] += 4 * ((long long)(next(&rng) % 201) - 100);
                if (rss[k] < 1000) rss[k] = 1000;
                printf("kickstart.inv.online,host=h%04d,job_id=h%04d-j%04d rss=%lld %" PRId64 "\n", h,
                       h, j, rss[k], ts * 1000000);
            }
    }
    free(rss);
    return 0;
}

static store *open_dir(const char *dir)
{
    char err[256];
    store_config c = {dir, 0, 0, 0, NULL, NULL};
    store *s = store_open(&c, err, sizeof err);
    if (!s) { fprintf(stderr, "%s\n", err); exit(1); }
    return s;
}

static int cmd_ingest(const char *dir)
{
    job *jobs = calloc((size_t)JOBS, sizeof *jobs);
    for (int k = 0; k < JOBS; k++) job_init(&jobs[k], k);
    size_t per = (size_t)JOBS * NFIELDS;
    store_point *pts = calloc(per, sizeof *pts);
    store_tag (*tags)[3] = calloc((size_t)JOBS, sizeof *tags);
    static char names[NFIELDS][64];
    for (int f = 0; f < NFIELDS; f++) snprintf(names[f], sizeof names[f], "kickstart.inv.online.%s", field_name[f]);
    for (int k = 0; k < JOBS; k++) {
        tags[k][0] = (store_tag){"host", jobs[k].host};
        tags[k][1] = (store_tag){"job_id", jobs[k].id};
        tags[k][2] = (store_tag){"rank", "0"};
    }
    double gen_cpu = 0, c0 = cpu_seconds(), w0 = wall();
    store *s = open_dir(dir);
    char err[256];
    uint64_t total = 0;
    for (int i = 0; i < SECONDS; i++) {
        double g0 = cpu_seconds();
        size_t n = 0;
        for (int k = 0; k < JOBS; k++) {
            int64_t ts = job_step(&jobs[k], i);
            for (int f = 0; f < NFIELDS; f++)
                pts[n++] = (store_point){names[f], tags[k], 3, ts, jobs[k].v[f]};
        }
        gen_cpu += cpu_seconds() - g0;
        if (store_put(s, pts, n, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
        total += n;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    store_stats open_st;
    store_stats_get(s, &open_st); /* on disk before the close: the log, unsettled chunks */
    if (getenv("STORE_BENCH_NO_CLOSE")) { /* development: what is on disk before the close */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "ls -la %s %s/wal >&2", dir, dir);
        if (system(cmd)) {}
        _exit(0);
    }
    store_close(s);           /* flushes and settles: everything in chunks.db */
    double cpu = cpu_seconds() - c0 - gen_cpu, w = wall() - w0;
    s = open_dir(dir);
    store_stats st;
    store_stats_get(s, &st);
    store_close(s);
    printf("{\"points\": %" PRIu64 ", \"cpu_s\": %.3f, \"wall_s\": %.3f, \"points_per_cpu_s\": %.0f,"
           " \"disk_bytes\": %lld, \"bytes_per_point\": %.4f, \"open_bytes_per_point\": %.4f, \"chunks\": %" PRIu64
           ", \"series\": %" PRIu64 ", \"maxrss_kb\": %ld}\n",
           total, cpu, w, total / cpu, st.disk_bytes, (double)st.disk_bytes / total,
           (double)open_st.disk_bytes / total, st.chunks, st.series, ru.ru_maxrss);
    return 0;
}

/* The high-cardinality data put in-process, 50,000 points a batch. */
static int cmd_ingest_hc(const char *dir)
{
    size_t n = (size_t)HOSTS * HOST_JOBS;
    long long *rss = calloc(n, sizeof *rss);
    uint64_t rng = 0x5eedbeefULL;
    for (size_t k = 0; k < n; k++) rss[k] = 20000 + (long long)(next(&rng) % 2000000);
    enum { B = 50000 };
    store_point *pts = calloc(B, sizeof *pts);
    store_tag (*tags)[2] = calloc(B, sizeof *tags);
    char (*names)[2][16] = calloc(B, sizeof *names);
    double c0 = cpu_seconds(), w0 = wall(), gen = 0;
    store *s = open_dir(dir);
    char err[256];
    size_t m = 0;
    uint64_t total = 0;
    double g0 = cpu_seconds();
    for (int p = 0; p < POINTS; p++) {
        int64_t ts = START + (int64_t)p * 10000;
        for (size_t k = 0; k < n; k++) {
            int h = (int)(k / HOST_JOBS), j = (int)(k % HOST_JOBS);
            if (p && unif(&rng) < 0.3) rss[k] += 4 * ((long long)(next(&rng) % 201) - 100);
            if (rss[k] < 1000) rss[k] = 1000;
            snprintf(names[m][0], 16, "h%04d", h);
            snprintf(names[m][1], 16, "h%04d-j%04d", h, j);
            tags[m][0] = (store_tag){"host", names[m][0]};
            tags[m][1] = (store_tag){"job_id", names[m][1]};
            pts[m] = (store_point){"kickstart.inv.online.rss", tags[m], 2, ts, (double)rss[k]};
            if (++m == B || k + 1 == n) {
                gen += cpu_seconds() - g0;
                if (store_put(s, pts, m, err, sizeof err) != 0) {
                    fprintf(stderr, "%s\n", err);
                    return 1;
                }
                total += m;
                m = 0;
                g0 = cpu_seconds();
            }
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double put_cpu = cpu_seconds() - c0 - gen;
    store_close(s);
    double cpu = cpu_seconds() - c0 - gen, w = wall() - w0;
    printf("{\"points\": %" PRIu64 ", \"put_cpu_s\": %.3f, \"cpu_s\": %.3f, \"wall_s\": %.3f, "
           "\"points_per_cpu_s\": %.0f, \"maxrss_kb\": %ld}\n",
           total, put_cpu, cpu, w, total / put_cpu, ru.ru_maxrss);
    free(rss);
    free(pts);
    free(tags);
    free(names);
    return 0;
}

static int cmd_settle(const char *dir)
{
    store *s = open_dir(dir);
    double c0 = cpu_seconds();
    store_maintain(s);
    double cpu = cpu_seconds() - c0;
    store_stats st;
    store_stats_get(s, &st);
    store_close(s);
    printf("{\"settle_cpu_s\": %.3f, \"points\": %" PRIu64 ", \"disk_bytes\": %lld, \"bytes_per_point\": %.4f,"
           " \"chunks\": %" PRIu64 "}\n", cpu, st.points, st.disk_bytes, (double)st.disk_bytes / st.points, st.chunks);
    return 0;
}

typedef struct qctx { uint64_t ids[100000]; const char *host[100000]; int n; } qctx;

static int collect(void *arg, const store_series *se)
{
    qctx *q = arg;
    if (q->n >= 100000) return 1;
    q->ids[q->n] = se->id;
    q->host[q->n] = "";
    for (int i = 0; i < se->ntags; i++) if (!strcmp(se->tags[i].key, "host")) q->host[q->n] = se->tags[i].value;
    q->n++;
    return 0;
}

/* sum by host of 10 s averages over [from, to]: the engine's work for
 * m=sum:10s-avg:METRIC{host=*}, done here on raw store reads. */
static int cmd_query(const char *dir, const char *metric, int64_t from, int64_t to, int reps)
{
    double w0 = wall();
    store *s = open_dir(dir);
    double open_s = wall() - w0;
    static qctx q;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = wall();
        q.n = 0;
        store_series_of(s, metric, collect, &q);
        int64_t step = 10000, nb = (to - from) / step + 1;
        /* groups: hosts in order of first appearance */
        const char **gname = calloc((size_t)q.n + 1, sizeof *gname);
        int ng = 0, *gi = calloc((size_t)q.n + 1, sizeof *gi);
        for (int i = 0; i < q.n; i++) {
            int g;
            for (g = 0; g < ng; g++) if (!strcmp(gname[g], q.host[i])) break;
            if (g == ng) gname[ng++] = q.host[i];
            gi[i] = g;
        }
        double *sum = calloc((size_t)(ng * nb), sizeof *sum);
        uint64_t npts = 0;
        store_points p = {0};
        double *bs = calloc((size_t)nb, sizeof *bs);
        int *bc = calloc((size_t)nb, sizeof *bc);
        for (int i = 0; i < q.n; i++) {
            p.n = 0;
            store_read(s, q.ids[i], from, to, &p);
            npts += p.n;
            memset(bs, 0, (size_t)nb * sizeof *bs);
            memset(bc, 0, (size_t)nb * sizeof *bc);
            for (size_t k = 0; k < p.n; k++) {
                int64_t b = (p.ts[k] - from) / step;
                bs[b] += p.val[k];
                bc[b]++;
            }
            /* OpenTSDB interpolates missing buckets; all present here */
            for (int64_t b = 0; b < nb; b++) if (bc[b]) sum[gi[i] * nb + b] += bs[b] / bc[b];
        }
        double check = 0;
        for (int64_t k = 0; k < ng * nb; k++) check += sum[k];
        double t = wall() - t0;
        printf("{\"rep\": %d, \"query_s\": %.4f, \"open_s\": %.4f, \"series\": %d, \"groups\": %d, \"points\": %" PRIu64
               ", \"checksum\": %.6e}\n", rep, t, open_s, q.n, ng, npts, check);
        store_points_free(&p);
        free(bs); free(bc); free(sum); free(gname); free(gi);
    }
    store_close(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) goto usage;
    if (!strcmp(argv[1], "influx")) { parse_opts(argc, argv, 2); return cmd_influx(); }
    if (!strcmp(argv[1], "influx-hc")) { parse_opts(argc, argv, 2); return cmd_influx_hc(); }
    if (!strcmp(argv[1], "ingest") && argc >= 3) { parse_opts(argc, argv, 3); return cmd_ingest(argv[2]); }
    if (!strcmp(argv[1], "settle") && argc >= 3) return cmd_settle(argv[2]);
    if (!strcmp(argv[1], "ingest-hc") && argc >= 3) { parse_opts(argc, argv, 3); return cmd_ingest_hc(argv[2]); }
    if (!strcmp(argv[1], "start")) { parse_opts(argc, argv, 2); printf("%" PRId64 "\n", START); return 0; }
    if (!strcmp(argv[1], "query") && argc >= 6)
        return cmd_query(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]), argc > 6 ? atoi(argv[6]) : 1);
    if (!strcmp(argv[1], "size") && argc >= 3) {
        store *s = open_dir(argv[2]);
        store_stats st;
        store_stats_get(s, &st);
        store_close(s);
        printf("{\"series\": %" PRIu64 ", \"points\": %" PRIu64 ", \"chunks\": %" PRIu64 ", \"disk_bytes\": %lld}\n",
               st.series, st.points, st.chunks, st.disk_bytes);
        return 0;
    }
usage:
    fprintf(stderr, "usage: store_bench influx|influx-hc|ingest DIR|settle DIR|query DIR METRIC FROM TO [REPS]|size DIR"
                    " [--jobs N] [--seconds S] [--start MS]\n");
    return 125;
}
