/* kickstart.c — `jobscope kickstart` (or a link named pegasus-kickstart,
 * pegasus-kickstart-cpu) and `jobscope monitor` (or pegasus-monitor): the
 * command lines of pegasus-kickstart and pegasus-monitor (docs/kickstart.md).
 *
 * kickstart: the command line is read as pegasus-kickstart reads it
 * (options until the first word that is not one, each option's value
 * attached or next, `-I FILE` last, an unknown option letter the start of
 * the application, kickstart's messages and exit statuses: 127 for a bad
 * or missing value, after the record), into a ks_run; the online
 * monitoring of -m/-G becomes `jobscope run` options for the engine; then
 * src/kickstart does the rest and writes the invocation record.
 *
 * monitor: `pegasus-monitor [-g] [-i N] CMD`, the wrapper of MPI ranks
 * (`mpirun pegasus-monitor -i 10 ./namd2`): `jobscope run` with -g as -G and
 * MONITORING_PAYLOAD blocks read from the job's output (--scan-output), as
 * pegasus-monitor picked them up for pegasus-darshan.  Any other option of
 * `jobscope run` may follow (-o events-%r.jsonl). */
#include "dropin.h"
#include "run.h"
#include "options.h"
#include "../kickstart/kickstart.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* kickstart's messages go to stderr as it writes them. */
static int ks_error(const char *fmt, const char *a)
{
    fputs("ERROR: ", stderr);
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return 127;
}

/* -n 'x' and -n "x" are x (kickstart's noquote), unquoted in place. */
static const char *noquote(const char *v)
{
    char *s = (char *)v; /* an argv string, writable */
    size_t n = strlen(s);
    if (n >= 2 && (s[0] == '\'' || s[0] == '"') && s[n - 1] == s[0]) {
        memmove(s, s + 1, n - 2);
        s[n - 2] = 0;
    }
    return s;
}

/* -o/-e FN: "-" kickstart's own descriptor, !FN append, ^FN keep the old
 * file as FN.000, else truncate (once, in the working directory). */
static void output_stream(ks_stat *s, const char *v, int fd)
{
    ksstat_free(s);
    int wr = O_WRONLY | O_CREAT;
    if (!strcmp(v, "-"))
        ksstat_handle(s, fd);
    else if ((v[0] == '!' && v[1] == '^') || (v[0] == '^' && v[1] == '!'))
        ksstat_file(s, v + 2, wr | O_APPEND, 0, 0);
    else if (v[0] == '!')
        ksstat_file(s, v + 1, wr | O_APPEND, 0, 0);
    else if (v[0] == '^')
        ksstat_file(s, v + 1, wr, 1, 1);
    else
        ksstat_file(s, v, wr, 1, 0);
}

static int parse_number(const char *v, unsigned long *out)
{
    char *end;
    *out = strtoul(v, &end, 0);
    return *end ? -1 : 0;
}

/* -s/-S: "[LFN=]PFN" or @FILE. */
static void file_option(ks_filelist *l, const char *v, const char *what)
{
    int rc = v[0] == '@' ? ksparse_filelist_read(l, v + 1) : ksparse_filelist_add(l, v);
    if (rc)
        fprintf(stderr, "ERROR: %s %s: %d: %s\n", what, v[0] == '@' ? v + 1 : v, rc, strerror(rc));
}

typedef struct ks_cli {
    int argc, i;
    char **argv;
    ks_args file_args; /* -I */
} ks_cli;

/* The value of option argv[i] (attached or next); NULL when missing. */
static const char *value(ks_cli *c)
{
    const char *a = c->argv[c->i];
    if (a[2]) return a + 2;
    if (c->i + 1 >= c->argc) return NULL;
    return c->argv[++c->i];
}

/* -I FILE: its lines become the command (nothing may follow). */
static int argfile_option(ks_cli *c, ks_run *r)
{
    if (c->argc > c->i + 2) return ks_error("No arguments allowed after -I fn", "");
    const char *v = value(c);
    if (!v) return ks_error("-I argument missing", "");
    if (ksparse_argfile(v, &c->file_args) != 0) {
        int e = errno;
        fprintf(stderr, "ERROR: While parsing -I %s: %d: %s\n", v, e, strerror(e));
        r->main.prefix = strerror(e);
        return 127;
    }
    c->argv = c->file_args.v;
    c->argc = c->file_args.n;
    c->i = -1;
    return 0;
}

/* The numbers: -B, -k, -K, -m; 127 with kickstart's message if bad. */
static int number_option(ks_run *r, char opt, const char *v)
{
    unsigned long n;
    int bad = parse_number(v, &n) != 0;
    switch (opt) {
    case 'B':
        if (!strcmp(v, "all")) return r->data_size = SIZE_MAX, 0;
        if (bad || n == 0) return ks_error("Invalid -B argument: %s", v);
        r->data_size = n;
        return 0;
    case 'k':
        if (bad || (int)n < 0) return ks_error("Invalid -k argument: %s", v);
        r->term_timeout = (int)n;
        return 0;
    case 'K':
        if (bad || (int)n < 1) return ks_error("Invalid -K argument: %s", v);
        r->kill_timeout = (int)n;
        return 0;
    default: /* 'm' */
        if (bad || (int)n < 0 || n > 3600)
            return ks_error("Invalid -m argument (0 to 3600 seconds): %s", v);
        r->mon_interval = (int)n;
        setenv("KICKSTART_MON_INTERVAL", v, 1);
        return 0;
    }
}

/* An option with a value; 0, 127, or -1 when it is not one. */
static int valued_option(ks_cli *c, ks_run *r, char opt)
{
    if (!strchr("BeilLnNoRsSTwWkKm", opt)) return -1;
    char what[32];
    snprintf(what, sizeof what, "-%c argument missing", opt);
    const char *v = value(c);
    if (!v) return ks_error("%s", what);
    switch (opt) {
    case 'e':
        output_stream(&r->error, v, STDERR_FILENO);
        break;
    case 'o':
        output_stream(&r->output, v, STDOUT_FILENO);
        break;
    case 'i':
        ksstat_free(&r->input);
        if (!strcmp(v, "-"))
            ksstat_handle(&r->input, STDIN_FILENO);
        else
            ksstat_file(&r->input, v, O_RDONLY, 0, 0);
        break;
    case 'l':
        ksstat_free(&r->logfile);
        if (!strcmp(v, "-"))
            ksstat_handle(&r->logfile, STDOUT_FILENO);
        else
            ksstat_file(&r->logfile, v, O_WRONLY | O_CREAT | O_APPEND, 0, 0);
        break;
    case 'L':
        r->wf_label = noquote(v);
        break;
    case 'n':
        r->xformation = noquote(v);
        break;
    case 'N':
        r->derivation = noquote(v);
        break;
    case 'R':
        r->sitehandle = noquote(v);
        break;
    case 'T':
        r->wf_stamp = noquote(v);
        break;
    case 'w':
    case 'W':
        r->workdir = noquote(v);
        r->create_dir = opt == 'W';
        break;
    case 'S':
        file_option(&r->initial, v, "initial");
        break;
    case 's':
        file_option(&r->final, v, "final");
        break;
    default:
        return number_option(r, opt, v);
    }
    return 0;
}

/* A flag; 1 if argv[i] was one. */
static int flag_option(ks_run *r, char opt)
{
    switch (opt) {
    case 'H':
        r->no_header = 1;
        return 1;
    case 'f':
        r->full_info = 1;
        return 1;
    case 'F':
        return 1;
    case 'q':
        r->omit_data = 1;
        return 1;
    case 'c':
        r->use_cdata = 1;
        return 1;
    case 'X':
        r->make_exec = 1;
        return 1;
    case 't':
    case 'z':
    case 'Z':
        r->trace = 1;
        return 1;
    case 'G':
        r->gpu = 1;
        return 1;
    default:
        return 0;
    }
}

enum { KS_GO = 0, KS_HELP = -2, KS_VERSION_ = -3 };

/* kickstart's option loop; KS_GO, KS_HELP, KS_VERSION_ or an exit status. */
static int parse_options(ks_cli *c, ks_run *r)
{
    for (c->i = 1; c->i < c->argc && c->argv[c->i][0] == '-'; c->i++) {
        char opt = c->argv[c->i][1];
        if (opt == 'h' || opt == '?') return KS_HELP;
        if (opt == 'V') return KS_VERSION_;
        if (opt == '-') { /* "--" (or "--anything") ends the options */
            c->i++;
            break;
        }
        if (opt == 'I') {
            int rc = argfile_option(c, r);
            if (rc) return rc;
            c->i++;
            break;
        }
        if (flag_option(r, opt)) continue;
        int rc = valued_option(c, r, opt);
        if (rc < 0) break; /* not an option: the application */
        if (rc) return rc;
    }
    return c->argc - c->i <= 0 ? KS_HELP : KS_GO;
}

/* The engine's configuration: `jobscope run` options for kickstart's online
 * monitoring, its events to KICKSTART_MON_URL, kickstart's only. */
static int engine_config(ks_run *r)
{
    static const char *const kickstart_events[] = {"kickstart.inv.online", NULL};
    static char *prefixes[17];
    const char *url = getenv("KICKSTART_MON_URL");
    char interval[16];
    snprintf(interval, sizeof interval, "%d", r->mon_interval > 0 ? r->mon_interval : 0);
    const char *more = getenv("JOBSCOPE_KICKSTART_EVENTS");
    char *rv[16];
    int n = 0;
    rv[n++] = "run";
    rv[n++] = "-q";
    rv[n++] = "-m";
    rv[n++] = interval;
    rv[n++] = "--telemetry-level"; /* no JOBSCOPE_* in the job's environment */
    rv[n++] = more ? "1" : "0";
    rv[n++] = "-o";
    rv[n++] = (char *)(url && *url ? url : "/dev/null");
    if (r->gpu) rv[n++] = "-G";
    rv[n++] = "--";
    rv[n++] = "true"; /* the job comes later (ks_execute) */
    rv[n] = NULL;
    int exit_now = 0;
    int rc = run_config(n, rv, &r->mon, &exit_now);
    if (rc) return rc;
    r->mon_url = url && *url ? url : NULL;
    r->mon.sink.only_events = kickstart_events;
    if (more && !strcmp(more, "all"))
        r->mon.sink.only_events = NULL;
    else if (more) {
        char *copy = strdup(more);
        int k = 0;
        for (char *t = copy ? strtok(copy, ",") : NULL; t && k < 16; t = strtok(NULL, ","))
            prefixes[k++] = t;
        prefixes[k++] = (char *)kickstart_events[0];
        prefixes[k] = NULL;
        r->mon.sink.only_events = (const char *const *)prefixes;
    }
    if (r->mon_interval > 0 && !r->mon_url)
        fprintf(stderr,
                "jobscope kickstart: -m %d: KICKSTART_MON_URL is not set: online events "
                "are not sent\n",
                r->mon_interval);
    return 0;
}

int kickstart_main(int argc, char **argv)
{
    ks_run r;
    if (ks_init(&r, argv[0]) != 0) {
        ks_free(&r);
        return 1;
    }
    ks_cli c = {argc, 0, argv, {0}};
    int rc = argc < 2 ? KS_HELP : parse_options(&c, &r);
    if (rc == KS_HELP) { /* as pegasus-kickstart: on stderr, status 127 */
        ks_usage(stderr, strcmp(argv[0], "kickstart") ? argv[0] : "jobscope kickstart");
        rc = 127;
    } else if (rc == KS_VERSION_) {
        printf("jobscope %s (pegasus-kickstart record %s)\n", JOBSCOPE_VERSION_STR, KS_VERSION);
        rc = 0;
    } else if (rc != KS_GO) {
        ksrecord_print(&r);
    } else if ((rc = engine_config(&r)) == 0) {
        r.app = c.argv + c.i;
        r.napp = c.argc - c.i;
        rc = ks_execute(&r);
    }
    ks_free(&r);
    ks_args_free(&c.file_args);
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
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { /* as pegasus-monitor */
            fputs("usage: jobscope monitor [-g] [-i SECONDS] [run options] CMD [ARG...]   (also as "
                  "pegasus-monitor)\n"
                  "pegasus-monitor's command line: 'jobscope run --scan-output', -g = -G.\n"
                  "Options of 'jobscope run --help' may be given too (-o events-%r.jsonl).\n",
                  stderr);
            free(rv);
            return 1;
        }
    }
    for (; i < argc; i++) rv[k++] = argv[i];
    rv[k] = NULL;
    int rc = monitor_main(0, k, rv);
    free(rv);
    return rc;
}
