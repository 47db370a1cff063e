/* summary_main.c — the command `jobscope summary JOB|FILE...` (docs/views.md
 * "jobscope summary"): finds the job, then prints it with summary_print or
 * summary_oneline (summary.c).
 *
 * A FILE is read with jobdata; with --job ID, the events of that job in
 * every FILE given (the Slurm plugin writes a file per task) are one job of
 * several runs.  A JOB id is looked up on `jobscope serve`s:
 * one server (--server URL; default: the local server's socket, else
 * http://127.0.0.1:4242) answers the job's page itself — the whole job when
 * it has several runs (src/repo, jobset.h); several (--server repeated,
 * --peers H:P,..., --peers-file FILE: each node of an allocation) give the
 * job's events, which are grouped into runs and summed here by the same
 * code (jobset_json).  An array element named as sacct shows it (10_2) is
 * first turned into Slurm's unique id by `sacct -n -X -j 10_2 -o JobIDRaw`
 * where sacct answers, else by the servers' search (the runs' Slurm tags). */
#include "report/jobset.h"
#include "report/stats.h"
#include "report/summary.h"
#include "util/serve_detect.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXIT_BAD    125
#define MAX_SERVERS 256

static void usage(FILE *f)
{
    fputs("usage: jobscope summary JOB|FILE... [--server URL]... [--peers H:P,...]\n"
          "                        [--peers-file FILE] [--token-file FILE]\n"
          "                        [--oneline|--json] [--width N]\n"
          "       jobscope summary --job ID FILE...   (one report of that job's runs)\n"
          "  A job's efficiency report on one screen, as jobstats prints it: utilization\n"
          "  against the allocation, notes, the request to make next time (docs/views.md).\n"
          "  FILE: the job's events (jobscope, kickstart or JoReMon); JOB: a job id known to a\n"
          "  jobscope serve (exact, else the only job whose id starts with it); a Slurm job id\n"
          "  gives the whole job, every step, task and node; 10_2: that array element.\n"
          "  --server URL    http://HOST:PORT or unix:PATH (default: the local server's socket,\n"
          "                  else http://127.0.0.1:4242); again for more servers\n"
          "  --peers H:P,... --peers-file FILE   more servers (one a line), as serve's\n"
          "  --token-file F  the bearer token of servers that listen beyond loopback\n"
          "  --oneline       one line (for a batch system's comment, e.g. Slurm's AdminComment)\n"
          "  --json          the job's page object (summary, assessment, runs, nodes, steps)\n",
          f);
}

typedef struct lookup {
    const char *servers[MAX_SERVERS];
    char *owned[MAX_SERVERS];
    int n;
    char token[512];
} lookup;

static int add_server(lookup *l, const char *spec, int peer)
{
    if (l->n >= MAX_SERVERS) {
        fprintf(stderr, "jobscope summary: more than %d servers\n", MAX_SERVERS);
        return -1;
    }
    if (peer && !strstr(spec, "://") && strncmp(spec, "unix:", 5)) {
        size_t len = strlen(spec) + 8;
        char *u = malloc(len);
        if (!u) return -1;
        snprintf(u, len, "http://%s", spec);
        l->owned[l->n] = u;
        l->servers[l->n++] = u;
        return 0;
    }
    l->servers[l->n++] = spec;
    return 0;
}

static int add_peers(lookup *l, char *list)
{
    for (char *save = NULL, *p = strtok_r(list, ", \t\n", &save); p;
         p = strtok_r(NULL, ", \t\n", &save)) {
        if (*p == '#') continue;
        char *dup = strdup(p);
        if (!dup || add_server(l, dup, 1)) {
            free(dup);
            return -1;
        }
        if (l->owned[l->n - 1])
            free(dup);
        else
            l->owned[l->n - 1] = dup;
    }
    return 0;
}

static int read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "jobscope summary: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = 0;
    fclose(f);
    return 0;
}

/* An array element as sacct names it (10_2): Slurm's unique id from
 * sacct, when it answers (10 s at most); 0 found. */
static int sacct_raw_id(const char *id, char *out, size_t len)
{
    for (const char *c = id; *c; c++)
        if (!isdigit((unsigned char)*c) && *c != '_') return -1; /* nothing for the shell */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "timeout 10 sacct -n -X -P -j %s -o JobIDRaw 2>/dev/null", id);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[128] = "";
    int ok = fgets(line, sizeof line, p) != NULL;
    int rc = pclose(p);
    line[strcspn(line, "\r\n ")] = 0;
    if (!ok || rc != 0 || !line[0]) return -1;
    for (const char *c = line; *c; c++)
        if (!isdigit((unsigned char)*c)) return -1;
    snprintf(out, len, "%s", line);
    return 0;
}

/* --job ID FILE...: the job's events in every file, grouped into its runs. */
static json_t *job_from_files(const char *id, char **files, int n)
{
    jobset s;
    jobset_init(&s);
    size_t total = 0;
    char *line = NULL;
    size_t cap = 0;
    for (int i = 0; i < n; i++) {
        FILE *f = strcmp(files[i], "-") ? fopen(files[i], "r") : stdin;
        if (!f) {
            fprintf(stderr, "jobscope summary: %s: %s\n", files[i], strerror(errno));
            continue;
        }
        ssize_t len;
        while ((len = getline(&line, &cap, f)) > 0) {
            json_t *ev = line[0] == '{' ? json_loadb(line, (size_t)len, 0, NULL) : NULL;
            const char *j = jd_str(ev, "job_id");
            if (ev && j && !strcmp(j, id)) {
                jobset_add(&s, ev);
                total++;
            }
            json_decref(ev);
        }
        if (f != stdin) fclose(f);
    }
    free(line);
    json_t *page = total ? jobset_json(&s, 1) : NULL;
    if (!total) fprintf(stderr, "jobscope summary: no event of job %s in the files given\n", id);
    jobset_free(&s);
    return page;
}

/* The page of a job of one server: exact id, else a unique match of the
 * search (id prefix, workflow, batch id, an array element's name). */
static json_t *job_from_server(const lookup *l, const char *server, const char *id)
{
    long status;
    json_t *job = report_fetch_job(server, l->token, id, &status);
    if (job || status != 404) return job;
    json_t *list = report_fetch_list(server, l->token, id);
    json_t *jobs = json_object_get(list, "jobs");
    size_t n = json_array_size(jobs);
    if (n == 1) {
        const json_t *row = json_array_get(jobs, 0);
        job = report_fetch_job(server, l->token, jd_str(row, "job_id"), &status);
    } else if (n > 1) {
        fprintf(stderr, "jobscope summary: %s: %zu jobs match%s:", id, n,
                (json_int_t)n == json_integer_value(json_object_get(list, "total"))
                    ? ""
                    : " (first shown)");
        size_t i;
        json_t *r;
        json_array_foreach(jobs, i, r) fprintf(stderr, " %s", jd_str(r, "job_id"));
        fputc('\n', stderr);
    } else if (list) {
        fprintf(stderr, "jobscope summary: %s: no such job on %s\n", id, server);
    }
    json_decref(list);
    return job;
}

/* The whole job across several servers: every server's events of it,
 * grouped into runs and summed here. */
static json_t *job_from_servers(const lookup *l, const char *id)
{
    jobset s;
    jobset_init(&s);
    size_t total = 0;
    int failed = 0;
    char raw[128] = "";
    for (int k = 0; k < l->n; k++) {
        long status;
        json_t *evs = report_fetch_events(l->servers[k], l->token, raw[0] ? raw : id, &status);
        if (!evs && status == 404 && !raw[0]) {
            /* not this id here: an array element's name, a prefix? */
            json_t *list = report_fetch_list(l->servers[k], l->token, id);
            json_t *jobs = json_object_get(list, "jobs");
            if (json_array_size(jobs) == 1) {
                snprintf(raw, sizeof raw, "%s", jd_str(json_array_get(jobs, 0), "job_id"));
                k = -1; /* again, everywhere, by that id */
                json_decref(list);
                jobset_free(&s);
                jobset_init(&s);
                total = 0;
                continue;
            }
            json_decref(list);
        }
        if (!evs) {
            failed |= status != 404;
            continue;
        }
        size_t i;
        json_t *ev;
        json_array_foreach(evs, i, ev) jobset_add(&s, ev);
        total += json_array_size(evs);
        json_decref(evs);
    }
    json_t *page = NULL;
    if (total)
        page = jobset_json(&s, 1);
    else if (!failed)
        fprintf(stderr, "jobscope summary: %s: no such job on any of %d servers\n", id, l->n);
    jobset_free(&s);
    return page;
}

static void print_job(const json_t *job, int mode, int width)
{
    if (mode == 1) {
        summary_oneline(stdout, job);
    } else if (mode == 2) {
        json_dumpf(job, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(15));
        fputc('\n', stdout);
    } else {
        summary_print(stdout, job, width);
    }
}

int summary_main(int argc, char **argv)
{
    static const struct option opts[] = {{"server", required_argument, 0, 's'},
                                         {"oneline", no_argument, 0, '1'},
                                         {"json", no_argument, 0, 'j'},
                                         {"width", required_argument, 0, 'w'},
                                         {"peers", required_argument, 0, 'p'},
                                         {"peers-file", required_argument, 0, 'P'},
                                         {"token-file", required_argument, 0, 't'},
                                         {"job", required_argument, 0, 'J'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *only_job = NULL;
    lookup l;
    memset(&l, 0, sizeof l);
    int mode = 0, width = 80, c, rc = 0;
    static char peers[65536];
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (add_server(&l, optarg, 0)) rc = EXIT_BAD;
            break;
        case 'p':
            snprintf(peers, sizeof peers, "%s", optarg);
            if (add_peers(&l, peers)) rc = EXIT_BAD;
            break;
        case 'P':
            if (read_file(optarg, peers, sizeof peers) || add_peers(&l, peers)) rc = EXIT_BAD;
            break;
        case 't':
            if (read_file(optarg, l.token, sizeof l.token)) rc = EXIT_BAD;
            l.token[strcspn(l.token, "\r\n")] = 0;
            break;
        case 'J':
            only_job = optarg;
            break;
        case '1':
            mode = 1;
            break;
        case 'j':
            mode = 2;
            break;
        case 'w':
            width = atoi(optarg);
            if (width < 60 || width > 400) {
                fprintf(stderr, "jobscope summary: --width: expected 60 to 400, got '%s'\n",
                        optarg);
                rc = EXIT_BAD;
            }
            break;
        case 'h':
            usage(stdout);
            goto out;
        default:
            usage(stderr);
            rc = EXIT_BAD;
            goto out;
        }
    }
    if (rc) goto out;
    if (optind >= argc) {
        usage(stderr);
        rc = EXIT_BAD;
        goto out;
    }
    char local[4200];
    int given = l.n; /* servers named: every argument is a job id */
    if (only_job) {  /* the files hold one job: one report */
        if (given) {
            fputs("jobscope summary: --job reads files, --server a server: not both\n", stderr);
            rc = EXIT_BAD;
            goto out;
        }
        json_t *job = job_from_files(only_job, argv + optind, argc - optind);
        if (!job) {
            rc = EXIT_BAD;
            goto out;
        }
        print_job(job, mode, width);
        json_decref(job);
        if (fflush(stdout)) rc = EXIT_BAD;
        goto out;
    }
    for (int i = optind; i < argc; i++) {
        json_t *job = NULL;
        struct stat sb;
        /* a path (it exists, or names a directory) is a file; else a job id */
        if (!given && (!strcmp(argv[i], "-") || stat(argv[i], &sb) == 0 || strchr(argv[i], '/'))) {
            jobdata j;
            jobdata_init(&j);
            char err[512];
            if (jobdata_load(&j, argv[i], NULL, err, sizeof err))
                fprintf(stderr, "jobscope summary: %s\n", err);
            else
                job = jobdata_json(&j, 1);
            jobdata_free(&j);
        } else {
            if (!l.n) {
                char url[4200];
                if (serve_detect(url, sizeof url))
                    snprintf(local, sizeof local, "unix:%s", url + strlen("jobscope+unix://"));
                else
                    snprintf(local, sizeof local, "http://127.0.0.1:4242");
                add_server(&l, local, 0);
            }
            char raw[128];
            const char *id = argv[i];
            if (strchr(id, '_') && !sacct_raw_id(id, raw, sizeof raw)) id = raw;
            job = l.n == 1 ? job_from_server(&l, l.servers[0], id) : job_from_servers(&l, id);
        }
        if (!job) {
            rc = EXIT_BAD;
            continue;
        }
        print_job(job, mode, width);
        json_decref(job);
    }
    if (fflush(stdout)) rc = EXIT_BAD;
out:
    for (int k = 0; k < l.n; k++) free(l.owned[k]);
    return rc;
}
