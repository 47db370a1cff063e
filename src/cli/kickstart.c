/* kickstart.c — `jobscope kickstart` (or a link named pegasus-kickstart) and
 * `jobscope monitor` (or pegasus-monitor): pegasus-kickstart's and
 * pegasus-monitor's command lines on top of `jobscope run` (see dropin.h,
 * docs/kickstart.md).
 *
 * kickstart: -n -N -R -L -T become the event annotations (xformation,
 * derivation, site, wf_label, wf_mtime) without touching the job's
 * environment; -i -o -e connect the job's stdin/stdout/stderr to files; -w/-W
 * change (and make) the working directory; -I reads the command from a file;
 * -X makes it executable; -l writes the end-of-job record (jobscope.end, JSON)
 * to a file; -m N is online monitoring (absent or 0: off, as in kickstart),
 * -G GPUs.  Events go to KICKSTART_MON_URL, or nowhere but -l: kickstart never
 * left files in the job's directory.  Options kickstart has that change only
 * its XML/YAML record (-B -H -f -F -q -k -c -z -Z -s -S) are accepted and
 * ignored.
 *
 * monitor: `pegasus-monitor [-g] [-i N] CMD`, the wrapper of MPI ranks
 * (`mpirun pegasus-monitor -i 10 ./namd2`): `jobscope run` with -g as -G and
 * MONITORING_PAYLOAD blocks read from the job's output (--scan-output), as
 * pegasus-monitor picked them up for pegasus-darshan.  Any other option of
 * `jobscope run` may follow (-o events-%r.jsonl). */
#include "dropin.h"
#include "run.h"
#include "options.h"
#include "../event/event.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int ks_bad(const char *fmt, const char *arg)
{
    fputs("jobscope kickstart: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (try 'jobscope kickstart -h')\n", stderr);
    return JS_EXIT_ERROR;
}

static void ks_usage(FILE *f)
{
    fputs("usage: jobscope kickstart [OPTIONS] CMD [ARG...]     (also as pegasus-kickstart)\n"
          "\n"
          "pegasus-kickstart's command line on top of 'jobscope run' (docs/kickstart.md).\n"
          "  -n TR    transformation name (event field xformation)\n"
          "  -N DV    derivation name (tags.derivation)\n"
          "  -R SITE  site (event field site)\n"
          "  -L LABEL workflow label (wf_label)     -T ISO  workflow time (tags.wf_mtime)\n"
          "  -m N     online monitoring every N seconds (0 or absent: off)\n"
          "  -G       GPU monitoring (with -m)\n"
          "  -i FN    job's stdin from FN     -o FN  job's stdout to FN   -e FN  stderr to FN\n"
          "  -l FN    write the end-of-job record (jobscope.end, JSON) to FN\n"
          "  -w DIR   run in DIR              -W DIR  create DIR and run in it\n"
          "  -I FN    read CMD and its arguments from FN, one per line\n"
          "  -X       make CMD executable if it is not\n"
          "  -B -H -f -F -q -k -c -z -Z -s -S: accepted, no effect (kickstart's record)\n"
          "Events go to $KICKSTART_MON_URL (file://, http(s)://, rabbitmq(s)://, amqp(s)://...).\n",
          f);
}

/* Connects fd to PATH (flags as open(2)); -1 with a message on failure. */
static int ks_redirect(int fd, const char *path, int flags)
{
    int f = open(path, flags | O_CLOEXEC, 0644);
    if (f < 0) return ks_bad("cannot open '%s'", path), -1;
    if (f != fd) {
        if (dup2(f, fd) < 0) {
            close(f);
            return ks_bad("cannot redirect to '%s'", path), -1;
        }
        close(f);
    }
    return 0;
}

/* -I FN: the command and its arguments, one per line.  NULL-terminated. */
static char **ks_read_args(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) return NULL;
    char **v = NULL, *line = NULL;
    size_t cap = 0;
    int count = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len) continue;
        char **nv = realloc(v, sizeof *v * (size_t)(count + 2));
        if (!nv) break;
        v = nv;
        v[count++] = strdup(line);
        v[count] = NULL;
    }
    free(line);
    fclose(f);
    return v;
}

int kickstart_main(int argc, char **argv)
{
    const char *mon = NULL, *in = NULL, *out = NULL, *err = NULL, *record = NULL;
    const char *workdir = NULL, *argfile = NULL;
    int gpu = 0, mkdir_wd = 0, make_exec = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt(argc, argv, "+n:N:R:L:T:m:Gi:o:e:l:w:W:I:B:HXfFqkczZs:S:h")) != -1) {
        switch (c) {
        case 'n':
            annotations_override("xformation", optarg);
            break;
        case 'N':
            annotations_override("derivation", optarg);
            break;
        case 'R':
            annotations_override("site", optarg);
            break;
        case 'L':
            annotations_override("wf_label", optarg);
            break;
        case 'T':
            annotations_override("wf_mtime", optarg);
            break;
        case 'm':
            mon = optarg;
            break;
        case 'G':
            gpu = 1;
            break;
        case 'i':
            in = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'e':
            err = optarg;
            break;
        case 'l':
            record = optarg;
            break;
        case 'w':
            workdir = optarg;
            mkdir_wd = 0;
            break;
        case 'W':
            workdir = optarg;
            mkdir_wd = 1;
            break;
        case 'I':
            argfile = optarg;
            break;
        case 'X':
            make_exec = 1;
            break;
        case 'B':
        case 'H':
        case 'f':
        case 'F':
        case 'q':
        case 'k':
        case 'c':
        case 'z':
        case 'Z':
        case 's':
        case 'S':
            break; /* kickstart's record only */
        case 'h':
            ks_usage(stdout);
            return 0;
        default: {
            char o[2] = {(char)optopt, 0};
            if (optopt && strchr("nNRLTmioelwWIBsS", optopt))
                return ks_bad("option -%s needs a value", o);
            return ks_bad("unknown option -%s", o);
        }
        }
    }
    char **cmd = argv + optind;
    if (argfile) {
        if (!(cmd = ks_read_args(argfile)) || !cmd[0])
            return ks_bad("cannot read a command from '%s'", argfile);
    }
    if (!cmd[0]) return ks_bad("a command is needed%s", "");
    if (workdir) {
        if (mkdir_wd && mkdir(workdir, 0755) < 0 && errno != EEXIST)
            return ks_bad("cannot create '%s'", workdir);
        if (chdir(workdir) < 0) return ks_bad("cannot change into '%s'", workdir);
    }
    if (make_exec && strchr(cmd[0], '/')) {
        struct stat st;
        if (stat(cmd[0], &st) == 0 && !(st.st_mode & S_IXUSR))
            chmod(cmd[0], st.st_mode | S_IXUSR | S_IXGRP | S_IXOTH);
    }
    if ((in && ks_redirect(0, in, O_RDONLY) < 0) ||
        (out && ks_redirect(1, out, O_WRONLY | O_CREAT | O_TRUNC) < 0) ||
        (err && ks_redirect(2, err, O_WRONLY | O_CREAT | O_TRUNC) < 0))
        return JS_EXIT_ERROR;

    /* the `jobscope run` command line */
    int n = 0;
    for (char **a = cmd; *a; a++) n++;
    char **rv = calloc((size_t)n + 16, sizeof *rv);
    if (!rv) return ks_bad("out of memory%s", "");
    int k = 0;
    rv[k++] = "run";
    if (mon) {
        rv[k++] = "-m";
        rv[k++] = (char *)mon;
    } else if (!getenv("KICKSTART_MON_INTERVAL")) {
        rv[k++] = "-m";
        rv[k++] = "0";
    }
    if (gpu) rv[k++] = "-G";
    const char *url = getenv("KICKSTART_MON_URL");
    if (!url || !*url) {
        rv[k++] = "-o";
        rv[k++] = "/dev/null";
    }
    if (record) {
        rv[k++] = "--summary";
        rv[k++] = (char *)record;
    }
    rv[k++] = "--";
    for (char **a = cmd; *a; a++) rv[k++] = *a;
    rv[k] = NULL;
    int rc = monitor_main(0, k, rv);
    free(rv);
    return rc;
}

int pmonitor_main(int argc, char **argv)
{
    char **rv = calloc((size_t)argc + 4, sizeof *rv);
    if (!rv) return JS_EXIT_ERROR;
    int k = 0, i = 1;
    rv[k++] = "run";
    rv[k++] = "--scan-output";
    /* run's options that take a separate value */
    static const char *const valued[] = {
        "-i",          "-m",
        "-o",          "--interval",
        "--output",    "--format",
        "--job",       "--tag",
        "--summary",   "--flush-timeout",
        "--spool-dir", "--spool-max",
        "--ca-file",   "--telemetry-level",
        "--limit",     "--kill-grace",
        "--mode",      "--payload-shape",
    };
    for (; i < argc; i++) { /* pegasus-monitor's -g is -G */
        if (!strcmp(argv[i], "--") || argv[i][0] != '-' || !argv[i][1]) break;
        rv[k++] = !strcmp(argv[i], "-g") ? "-G" : argv[i];
        for (size_t v = 0; v < sizeof valued / sizeof valued[0]; v++)
            if (!strcmp(argv[i], valued[v]) && i + 1 < argc) {
                rv[k++] = argv[++i];
                break;
            }
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs("usage: jobscope monitor [-g] [-i SECONDS] [run options] CMD [ARG...]   (also as "
                  "pegasus-monitor)\n"
                  "pegasus-monitor's command line: 'jobscope run --scan-output', -g = -G.\n"
                  "Options of 'jobscope run --help' may be given too (-o events-%r.jsonl).\n",
                  stdout);
            free(rv);
            return 0;
        }
    }
    for (; i < argc; i++) rv[k++] = argv[i];
    rv[k] = NULL;
    int rc = monitor_main(0, k, rv);
    free(rv);
    return rc;
}
