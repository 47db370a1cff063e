/* report.c — `jobscope report`: a self-contained HTML report of one or more
 * jobs (docs/views.md "Reports").  Each input file is one job, read with
 * jobdata (jobscope, kickstart or JoReMon events); the page is one file with
 * uPlot, the styles, charts.js and report.js inlined from the assets compiled
 * into the binary (web_assets.h) and the jobs as a JSON block, so it opens
 * offline.  --svg DIR also writes static plots with svg.c.  --server URL
 * JOBID reads the job from a running `jobscope serve` instead. */
#include "report/stats.h"
#include "report/jobdata.h"
#include "report/svg.h"
#include "report/web_assets.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#define EXIT_BAD 125

typedef struct rep {
    json_t *jobs;
    const char *svgdir;
    size_t max_points, svg_files;
    int svg_err;
} rep;

/* Writes s into f, turning "</script" into "<\/script" so inlined code can
 * never end its <script> element early. */
static void put_script_safe(FILE *f, const char *s, size_t n)
{
    size_t a = 0;
    for (size_t i = 0; i + 8 <= n; i++)
        if (s[i] == '<' && s[i + 1] == '/' && !strncasecmp(s + i + 2, "script", 6)) {
            fwrite(s + a, 1, i + 1 - a, f);
            fputs("\\", f);
            a = i + 1;
        }
    fwrite(s + a, 1, n - a, f);
}

/* Writes JSON text into an HTML <script> element: every '<' (only ever
 * inside a string) as \u003c, so that no "</script" or "<!--" in the data
 * (an executable named "/bin/<!--<script>") can change how the page parses. */
static void put_json_safe(FILE *f, const char *s)
{
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "<");
        fwrite(p, 1, n, f);
        p += n;
        if (*p == '<') {
            fputs("\\u003c", f);
            p++;
        }
    }
}

static int put_asset(FILE *f, const char *name)
{
    const web_asset *a = web_asset_find(name);
    if (!a) {
        fprintf(stderr, "jobscope report: asset %s missing from this build\n", name);
        return -1;
    }
    put_script_safe(f, (const char *)a->data, a->len);
    return 0;
}

static void safe_name(const char *in, char *out, size_t len)
{
    size_t k = 0;
    for (; *in && k + 1 < len; in++)
        out[k++] =
            (isalnum((unsigned char)*in) || *in == '-' || *in == '_' || *in == '.') ? *in : '_';
    out[k] = 0;
    if (!k) snprintf(out, len, "job");
}

static int svg_file(rep *r, const char *job, const char *what, const char *title,
                    enum svg_unit unit, const svg_line *lines, int n)
{
    char jn[200], wn[200], path[4096];
    safe_name(job, jn, sizeof jn);
    safe_name(what, wn, sizeof wn);
    snprintf(path, sizeof path, "%s/%s-%s.svg", r->svgdir, jn, wn);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "jobscope report: %s: %s\n", path, strerror(errno));
        r->svg_err = 1;
        return -1;
    }
    char t[300];
    snprintf(t, sizeof t, "%s — %s", job, title);
    svg_chart(f, t, "seconds since the job started", unit, lines, n, 800, 300, 1);
    if (fclose(f)) r->svg_err = 1;
    r->svg_files++;
    return 0;
}

static void write_svgs(rep *r, const jobdata *j)
{
    static const struct {
        const char *name, *title;
        enum svg_unit unit;
        int cols[4];
    } plots[] = {
        {"cpu", "CPU % (100 = one core)", SVG_PERCENT, {JD_CPU, -1}},
        {"memory", "memory", SVG_BYTES, {JD_RSS, JD_VM, JD_SWAP, JD_CG_MEM}},
        {"io",
         "I/O rates (bytes/s)",
         SVG_BYTES,
         {JD_RCHAR_RATE, JD_WCHAR_RATE, JD_RBYTES_RATE, JD_WBYTES_RATE}},
        {"procs", "processes and threads", SVG_PLAIN, {JD_PROCS, JD_THREADS, -1}},
        {"gpu", "GPU utilisation %", SVG_PERCENT, {JD_GPU_UTIL, -1}},
        {"gpu-memory", "GPU memory", SVG_BYTES, {JD_GPU_MEM, -1}},
    };
    const char *job = j->sum.job_id[0] ? j->sum.job_id : "job";
    for (size_t p = 0; p < sizeof plots / sizeof *plots; p++) {
        svg_line L[4];
        int n = 0;
        for (int k = 0; k < 4 && plots[p].cols[k] > 0; k++) {
            int c = plots[p].cols[k], any = 0;
            for (size_t i = 0; i < j->n && !any; i++) any = !isnan(j->col[c][i]);
            if (!any) continue;
            L[n++] = (svg_line){jobdata_col_titles[c], j->col[JD_TS], j->col[c], NULL, NULL, j->n};
        }
        if (n) svg_file(r, job, plots[p].name, plots[p].title, plots[p].unit, L, n);
    }
    for (size_t e = 0; e < j->nextra; e++) {
        const jd_series *s = &j->extra[e];
        svg_line L = {s->name, s->ts, s->val, NULL, NULL, s->n};
        char what[300];
        snprintf(what, sizeof what, "metric-%s", s->name);
        svg_file(r, job, what, s->name,
                 !strcmp(s->unit, "bytes") ? SVG_BYTES
                 : !strcmp(s->unit, "%")   ? SVG_PERCENT
                                           : SVG_PLAIN,
                 &L, 1);
    }
}

static void add_job(void *arg, jobdata *j)
{
    rep *r = arg;
    json_array_append_new(r->jobs, jobdata_json(j, r->max_points));
    if (r->svgdir) write_svgs(r, j);
}

static int write_html(FILE *f, json_t *jobs)
{
    json_t *doc = json_pack("{s:f,s:O}", "generated", (double)time(NULL), "jobs", jobs);
    char *data = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(doc);
    if (!data) return -1;
    const char *title = json_string_value(
        json_object_get(json_object_get(json_array_get(jobs, 0), "summary"), "job_id"));
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>jobscope report",
          f);
    if (title && json_array_size(jobs) == 1) {
        fputs(" — ", f);
        svg_escape(f, title);
    }
    fputs("</title>\n<style>\n", f);
    int rc = put_asset(f, "uPlot.min.css");
    rc |= put_asset(f, "style.css");
    fputs("\n</style></head>\n<body><div id=\"app\"></div>\n"
          "<script id=\"jobscope-data\" type=\"application/json\">",
          f);
    put_json_safe(f, data);
    free(data);
    fputs("</script>\n<script>", f);
    rc |= put_asset(f, "uPlot.iife.min.js");
    fputs("</script>\n<script>", f);
    rc |= put_asset(f, "charts.js");
    fputs("</script>\n<script>", f);
    rc |= put_asset(f, "report.js");
    fputs("</script>\n</body></html>\n", f);
    return rc;
}

static void usage(FILE *f)
{
    fputs("usage: jobscope report EVENTS... [-o report.html] [--svg DIR] [--max-points N]\n"
          "       jobscope report --server URL JOBID... [-o report.html] [--svg DIR]\n"
          "  A self-contained HTML report (one file, works offline) of the jobs whose events\n"
          "  are in EVENTS (one job per file: jobscope, kickstart or JoReMon format):\n"
          "  characteristics, charts, custom metrics, the end-of-job record, warnings.\n"
          "  --svg DIR       also write static SVG plots (JOB-cpu.svg, JOB-memory.svg...)\n"
          "  --max-points N  thin each series to about N points (default 20000; 0 = all)\n",
          f);
}

int report_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"svg", required_argument, 0, 'S'},
        {"server", required_argument, 0, 's'}, {"max-points", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    rep r = {.jobs = json_array(), .max_points = 20000};
    const char *out = "report.html", *server = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'S':
            r.svgdir = optarg;
            break;
        case 's':
            server = optarg;
            break;
        case 'p': {
            char *e;
            long v = strtol(optarg, &e, 10);
            if (*e || e == optarg || v < 0) {
                fprintf(stderr, "jobscope report: --max-points: expected a number, got '%s'\n",
                        optarg);
                return EXIT_BAD;
            }
            r.max_points = (size_t)v;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_BAD;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return EXIT_BAD;
    }
    if (r.svgdir && mkdir(r.svgdir, 0755) && errno != EEXIST) {
        fprintf(stderr, "jobscope report: --svg %s: %s\n", r.svgdir, strerror(errno));
        return EXIT_BAD;
    }
    for (int i = optind; i < argc; i++) {
        if (server) {
            /* a job of several runs (a Slurm job's tasks...): the server's
             * page of the whole job (docs/views.md "A job of several runs") */
            long status;
            json_t *page = report_fetch_job(server, NULL, argv[i], &status);
            if (json_object_get(page, "runs")) {
                json_array_append_new(r.jobs, page);
                if (r.svgdir)
                    fprintf(stderr, "jobscope report: %s: a job of several runs: no SVG plots\n",
                            argv[i]);
                continue;
            }
            json_decref(page);
            if (report_fetch_jobs(server, argv[i], add_job, &r)) return EXIT_BAD;
            continue;
        }
        jobdata j;
        jobdata_init(&j);
        char err[512];
        size_t bad = 0;
        if (jobdata_load(&j, argv[i], &bad, err, sizeof err)) {
            fprintf(stderr, "jobscope report: %s\n", err);
            jobdata_free(&j);
            json_decref(r.jobs);
            return EXIT_BAD;
        }
        add_job(&r, &j);
        jobdata_free(&j);
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "jobscope report: %s: %s\n", tmp, strerror(errno));
        return EXIT_BAD;
    }
    int rc = write_html(f, r.jobs);
    long size = ftell(f);
    if (fclose(f) || rc || rename(tmp, out)) {
        fprintf(stderr, "jobscope report: cannot write %s\n", out);
        unlink(tmp);
        return EXIT_BAD;
    }
    size_t nw = 0;
    size_t i;
    json_t *jb;
    json_array_foreach(r.jobs, i, jb) nw += json_array_size(json_object_get(jb, "warnings"));
    fprintf(stderr, "jobscope report: %zu job%s, %zu warning%s, %ld bytes -> %s",
            json_array_size(r.jobs), json_array_size(r.jobs) == 1 ? "" : "s", nw,
            nw == 1 ? "" : "s", size, out);
    if (r.svgdir) fprintf(stderr, "; %zu SVG plots in %s", r.svg_files, r.svgdir);
    fputc('\n', stderr);
    json_decref(r.jobs);
    return r.svg_err ? EXIT_BAD : 0;
}
