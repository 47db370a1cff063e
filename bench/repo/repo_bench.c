/* repo_bench.c — the events repository of `jobscope serve` at a site's
 * scale (bench/README.md "The repository", issue 25 target 5).
 *
 *   repo_bench fill DIR N [SAMPLES] DIR/repo.sqlite with N generated jobs, fed
 *                                  through the repository's own ingest
 *                                  (repo_add_json, batched as the server does)
 *   repo_bench query DIR [REPS]    times the job list's queries in-process
 *                                  (repo_jobs + the JSON text the API sends):
 *                                  the server-side figure of GET /api/jobs
 *
 * The jobs: 200 per workflow (labelled), 13 transformations, 97 hosts, 5
 * users, 11 executables; a start, SAMPLES samples (default 3) and an end
 * record each (a start and 1 in 997 still running), 10 s
 * apart in start time; 1 in 17 fails, 1 in 101 is stopped by a --limit,
 * 1 in 997 is still running; CPU use varies so that some get the
 * cpu_efficiency warning.  Prints one JSON line per figure. */
#include "repo/repo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static unsigned long long rng = 88172645463325252ull;
static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static void add(repo *r, const char *s)
{
    if (repo_add_json(r, s, strlen(s))) {
        fprintf(stderr, "repo_bench: repo_add_json failed\n");
        exit(1);
    }
}

static int fill(const char *dir, long n, int samples)
{
    char path[4096], err[512], ev[2048];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/repo.sqlite", dir);
    repo *r = repo_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "repo_bench: %s\n", err);
        return 1;
    }
    double t0 = 1700000000.0, c0 = now();
    for (long i = 0; i < n; i++) {
        char ann[512];
        double start = t0 + (double)i * 10, dur = 30 + uniform() * 3000;
        double cores = 1 + (double)(i % 4), used = cores * (0.05 + 0.95 * uniform());
        double rss = (50 + uniform() * 4000) * 1024; /* kB */
        snprintf(ann, sizeof ann,
                 "\"hostname\":\"node%03ld\",\"wf_uuid\":\"%08lx-wf%04ld-4c1d-9e0f-%012ld\","
                 "\"wf_label\":\"%s-%ld\",\"xformation\":\"xf_%s\",\"job_id\":\"job%07ld\"",
                 i % 97, (i / 200) * 2654435761ul % 0xffffffff, i / 200, i / 200,
                 (i / 200) % 3 ? "montage" : "blast", i / 200,
                 (const char *[]){"mProject", "mDiff", "mFit", "mBg", "mAdd", "mShrink", "mJPEG",
                                  "blastp", "split", "merge", "align", "reduce", "train"}[i % 13],
                 i);
        snprintf(ev, sizeof ev,
                 "{\"event\":\"jobscope.start\",\"ts\":%.3f,%s,\"exe\":\"/usr/bin/prog%ld\","
                 "\"cmd\":\"prog%ld --in x\",\"user\":\"user%ld\",\"cpus_available\":8,"
                 "\"alloc_cpus\":%.0f,\"alloc_cpus_from\":\"SLURM_CPUS_PER_TASK\","
                 "\"alloc_mem\":%.0f,\"alloc_mem_from\":\"SLURM_MEM_PER_NODE\"}",
                 start, ann, i % 11, i % 11, i % 5, cores, 8.0 * 1024 * 1024 * 1024);
        add(r, ev);
        int running = i % 997 == 996;
        for (int k = 1; k <= samples; k++) {
            double f = (double)k / (samples + 1);
            snprintf(ev, sizeof ev,
                     "{\"event\":\"kickstart.inv.online\",\"ts\":%.3f,%s,\"exe\":\"/usr/bin/"
                     "prog%ld\",\"elapsed\":%.3f,\"utime\":%.3f,\"stime\":0,\"rss\":%.0f,"
                     "\"vm\":%.0f,\"rchar\":%.0f,\"wchar\":%.0f,\"procs\":1,\"threads\":%d,"
                     "\"cpu_percent\":%.2f}",
                     start + f * dur, ann, i % 11, f * dur, used * f * dur, rss * f, rss * 2,
                     1e6 * f * k, 1e5 * f, (int)cores, 100 * used);
            add(r, ev);
        }
        if (running) continue;
        int failed = i % 17 == 3, stopped = i % 101 == 7;
        snprintf(ev, sizeof ev,
                 "{\"event\":\"jobscope.end\",\"ts\":%.3f,%s,\"exe\":\"/usr/bin/prog%ld\","
                 "\"exit_type\":\"%s\",\"exit_code\":%s,\"start\":%.3f,\"end\":%.3f,"
                 "\"duration\":%.3f,\"cpu_time\":%.3f,\"cores\":8,\"rchar\":%.0f,"
                 "\"wchar\":%.0f,\"samples\":5,%s\"peaks\":{\"rss\":{\"value\":%.0f},"
                 "\"threads\":{\"value\":%d}}}",
                 start + dur, ann, i % 11, stopped ? "limit" : "exited",
                 stopped  ? "null"
                 : failed ? "1"
                          : "0",
                 start, start + dur, dur, used * dur, 3e6, 3e5,
                 stopped ? "\"limit\":\"wall\"," : "", rss, (int)cores);
        add(r, ev);
    }
    repo_close(r);
    double secs = now() - c0;
    printf("{\"figure\":\"fill\",\"jobs\":%ld,\"seconds\":%.2f,\"jobs_per_s\":%.0f}\n", n, secs,
           (double)n / secs);
    return 0;
}

/* One query, timed REPS times: repo_jobs and the JSON text of the answer. */
static double timed(repo *r, const repo_job_filter *f, int reps, double *worst, long *total)
{
    double *t = malloc((size_t)reps * sizeof *t), med;
    *worst = 0;
    for (int k = 0; k < reps; k++) {
        double c = now();
        json_t *o = repo_jobs(r, f);
        char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(16));
        t[k] = (now() - c) * 1000;
        *total = (long)json_integer_value(json_object_get(o, "total"));
        free(s);
        json_decref(o);
        if (t[k] > *worst) *worst = t[k];
    }
    for (int a = 0; a < reps; a++) /* sort: insertion, reps is small */
        for (int b = a; b > 0 && t[b] < t[b - 1]; b--) {
            double x = t[b];
            t[b] = t[b - 1], t[b - 1] = x;
        }
    med = t[reps / 2];
    free(t);
    return med;
}

static int query(const char *dir, int reps)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/repo.sqlite", dir);
    repo *r = repo_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "repo_bench: %s\n", err);
        return 1;
    }
    static const struct {
        const char *name;
        repo_job_filter f;
    } qs[] = {
        {"first page, newest first", {.sort = "start", .desc = 1, .limit = 100}},
        {"page 500 (offset 50,000)", {.sort = "start", .desc = 1, .limit = 100, .offset = 50000}},
        {"last page", {.sort = "start", .desc = 1, .limit = 100, .offset = 99900}},
        {"sort by cpu efficiency, ascending", {.sort = "cpu_efficiency", .limit = 100}},
        {"sort by peak memory", {.sort = "peak_mem", .desc = 1, .limit = 100}},
        {"sort by duration", {.sort = "duration", .desc = 1, .limit = 100}},
        {"search job id prefix", {.q = "job00123", .desc = 1, .limit = 100}},
        {"search workflow label", {.q = "blast-42", .desc = 1, .limit = 100}},
        {"workflow id prefix", {.wf = "00000000-wf0000", .desc = 1, .limit = 100}},
        {"state failed", {.state = "failed", .desc = 1, .limit = 100}},
        {"host", {.host = "node042", .desc = 1, .limit = 100}},
        {"transformation", {.xformation = "xf_mDiff", .desc = 1, .limit = 100}},
        {"user, sorted by memory", {.user = "user3", .sort = "peak_mem", .desc = 1, .limit = 100}},
        {"warning kind", {.warning = "cpu_efficiency", .desc = 1, .limit = 100}},
        {"executable substring", {.exe = "prog7", .desc = 1, .limit = 100}},
        {"time range",
         {.since = 1700000000.0 + 400000, .until = 1700000000.0 + 500000, .desc = 1, .limit = 100}},
        {"failed on a host, by duration",
         {.state = "failed", .host = "node007", .sort = "duration", .desc = 1, .limit = 100}},
    };
    double worst_med = 0;
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        double worst;
        long total = 0;
        double med = timed(r, &qs[i].f, reps, &worst, &total);
        if (med > worst_med) worst_med = med;
        printf("{\"figure\":\"query\",\"query\":\"%s\",\"total\":%ld,\"median_ms\":%.2f,"
               "\"max_ms\":%.2f}\n",
               qs[i].name, total, med, worst);
    }
    printf("{\"figure\":\"worst_median_ms\",\"value\":%.2f,\"target_ms\":50}\n", worst_med);
    repo_close(r);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "fill"))
        return fill(argv[2], atol(argv[3]), argc > 4 ? atoi(argv[4]) : 3);
    if (argc >= 3 && !strcmp(argv[1], "query")) return query(argv[2], argc > 3 ? atoi(argv[3]) : 5);
    fprintf(stderr, "usage: repo_bench fill DIR N [SAMPLES] | query DIR [REPS]\n");
    return 125;
}
