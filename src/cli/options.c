/* options.c — parses the command line of run/attach (see options.h). */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

void options_usage(FILE *f)
{
    fputs(
"usage: jobscope run [OPTIONS] [--] CMD [ARG...]\n"
"       jobscope attach [OPTIONS] PID\n"
"\n"
"Runs CMD (or watches the running process PID) and samples the resource usage\n"
"of its whole process tree -- every descendant, daemons and short-lived\n"
"processes included -- writing JSON events (kickstart.inv.online samples, a\n"
"start event and an end-of-job record). Exit status: CMD's own (128+N if\n"
"killed by signal N); 125 jobscope error, 126 CMD not executable, 127 not found.\n"
"\n"
"  -i, --interval SECONDS  sampling interval, decimal, >= 0.01 (default 1)\n"
"  -m N                    the same in whole seconds (pegasus-kickstart's flag)\n"
"  -o, --output DEST       where events go (repeatable): '-' stdout, PATH or\n"
"                          file://PATH for JSON Lines (appended), PATH.csv for CSV\n"
"      --format FMT        json, csv, joremon-json or joremon-csv: the format of\n"
"                          every file output (default: CSV for *.csv, else JSON)\n"
"      --job ID            job id stamped on every event (default: the batch\n"
"                          system's job id, else HOST-PID-TIME)\n"
"      --tag KEY=VALUE     annotation added to every event (repeatable)\n"
"      --summary PATH      also write the end-of-job record to PATH (one JSON)\n"
"      --wait-all          run: wait until every descendant has exited, not just\n"
"                          CMD (daemons included)\n"
"      --flush-timeout S   at job end, wait at most S seconds for outputs (10)\n"
"  -q, --quiet             no summary, no diagnostics\n"
"  -v, --verbose           diagnostics on stderr, prefixed 'jobscope:'\n"
"  -h, --help              this help\n"
"      --version           print the version\n"
"\n"
"Environment: KICKSTART_MON_URL (destination when no -o is given),\n"
"KICKSTART_MON_INTERVAL (interval when no -i/-m), PEGASUS_WF_UUID, PEGASUS_WF_LABEL,\n"
"PEGASUS_DAG_JOB_ID, CONDOR_JOBID, PEGASUS_XFORMATION, PEGASUS_TASK_ID, PEGASUS_SITE\n"
"and MPI rank variables (annotations), SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, JOB_ID\n"
"(SGE), COBALT_JOBID, FLUX_JOB_ID (job ids). Fields: docs/events.md.\n",
    f);
}

static int bad(const char *fmt, const char *arg)
{
    fputs("jobscope: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (try 'jobscope --help')\n", stderr);
    return JS_EXIT_ERROR;
}

static int parse_interval(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0.01) || v > 86400) return -1;
    *out = v;
    return 0;
}

static int parse_format(const char *s, enum sink_format *f)
{
    static const struct { const char *name; enum sink_format f; } tab[] = {
        { "json", FORMAT_JSON }, { "jsonl", FORMAT_JSON }, { "csv", FORMAT_CSV },
        { "joremon-json", FORMAT_JOREMON_JSON }, { "joremon-csv", FORMAT_JOREMON_CSV },
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(s, tab[i].name)) { *f = tab[i].f; return 0; }
    return -1;
}

enum { OPT_FORMAT = 1000, OPT_JOB, OPT_TAG, OPT_SUMMARY, OPT_VERSION, OPT_WAIT_ALL,
       OPT_FLUSH_TIMEOUT };

int options_parse(js_options *o, int attach, int argc, char **argv, int *exit_now)
{
    static const struct option longopts[] = {
        { "interval", required_argument, 0, 'i' },
        { "output", required_argument, 0, 'o' },
        { "format", required_argument, 0, OPT_FORMAT },
        { "job", required_argument, 0, OPT_JOB },
        { "tag", required_argument, 0, OPT_TAG },
        { "summary", required_argument, 0, OPT_SUMMARY },
        { "wait-all", no_argument, 0, OPT_WAIT_ALL },
        { "flush-timeout", required_argument, 0, OPT_FLUSH_TIMEOUT },
        { "quiet", no_argument, 0, 'q' },
        { "verbose", no_argument, 0, 'v' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, OPT_VERSION },
        { 0, 0, 0, 0 },
    };
    memset(o, 0, sizeof *o);
    o->attach = attach;
    o->interval = 1.0;
    o->flush_timeout = 10.0;
    o->kill_grace = 10.0;
    *exit_now = 0;
    int have_interval = 0;

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+i:m:o:qvh", longopts, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (parse_interval(optarg, &o->interval))
                return bad("bad interval '%s': a number of seconds >= 0.01", optarg);
            have_interval = 1;
            break;
        case 'm': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 86400)
                return bad("bad -m '%s': whole seconds, 1 to 86400", optarg);
            o->interval = (double)v;
            have_interval = 1;
            break;
        }
        case 'o':
            if (o->noutputs == JS_MAX_OUTPUTS) return bad("too many outputs (at most %s)", "16");
            if (!*optarg) return bad("empty output%s", "");
            o->outputs[o->noutputs++] = optarg;
            break;
        case OPT_FORMAT:
            if (parse_format(optarg, &o->format))
                return bad("unknown format '%s' (json, csv, joremon-json, joremon-csv)", optarg);
            break;
        case OPT_JOB:
            if (!*optarg) return bad("empty --job%s", "");
            o->job_id = optarg;
            break;
        case OPT_TAG:
            if (!strchr(optarg, '=') || optarg[0] == '=')
                return bad("bad --tag '%s': expected KEY=VALUE", optarg);
            if (o->ntags == JS_MAX_TAGS) return bad("too many tags (at most %s)", "64");
            o->tags[o->ntags++] = optarg;
            break;
        case OPT_SUMMARY: o->summary_path = optarg; break;
        case OPT_WAIT_ALL: o->wait_all = 1; break;
        case OPT_FLUSH_TIMEOUT: {
            char *end;
            o->flush_timeout = strtod(optarg, &end);
            if (end == optarg || *end || o->flush_timeout < 0)
                return bad("bad --flush-timeout '%s': seconds >= 0", optarg);
            break;
        }
        case 'q': o->quiet = 1; o->verbose = 0; break;
        case 'v': o->verbose++; o->quiet = 0; break;
        case 'h': options_usage(stdout); *exit_now = 1; return 0;
        case OPT_VERSION: printf("jobscope %s\n", JOBSCOPE_VERSION_STR); *exit_now = 1; return 0;
        case '?':
        default:
            if (optopt && optopt < 256) {
                char s[2] = { (char)optopt, 0 };
                if (strchr("imo", optopt)) return bad("option -%s needs a value", s);
                return bad("unknown option -%s", s);
            }
            return bad("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }

    if (!have_interval) {
        const char *e = getenv("KICKSTART_MON_INTERVAL");
        if (e && *e && parse_interval(e, &o->interval))
            return bad("bad KICKSTART_MON_INTERVAL '%s'", e);
    }
    if (o->noutputs == 0) {
        const char *u = getenv("KICKSTART_MON_URL");
        if (u && *u) o->outputs[o->noutputs++] = u;
    }

    if (attach) {
        if (optind >= argc) return bad("attach needs a PID%s", "");
        if (optind + 1 < argc) return bad("attach takes one PID, got extra '%s'", argv[optind + 1]);
        char *end;
        long pid = strtol(argv[optind], &end, 10);
        if (end == argv[optind] || *end || pid <= 0 || pid > 0x3fffffff)
            return bad("bad PID '%s'", argv[optind]);
        o->pid = (pid_t)pid;
    } else {
        if (optind >= argc) return bad("run needs a command%s", "");
        o->argv = argv + optind;
    }
    o->sink.format = o->format;
    o->sink.verbose = o->verbose;
    o->sink.flush_timeout = o->flush_timeout;
    return 0;
}
