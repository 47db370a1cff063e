/* options.c — parses the command line of run/attach (see options.h). */
#include "options.h"
#include "../limits/limits.h"
#include "../util/size.h"
#include "../util/userinfo.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        "  -m N                    the same in whole seconds (pegasus-kickstart's flag);\n"
        "                          -m 0: no online samples, only the start and end events\n"
        "  -o, --output DEST       where events go (repeatable): '-' stdout, PATH or\n"
        "                          file://PATH for JSON Lines (appended), PATH.csv for CSV;\n"
        "                          in paths %r = MPI rank, %h host, %j job id, %p pid\n"
        "      --format FMT        json, csv, joremon-json (or jsons) or joremon-csv: the\n"
        "                          format of every file output (default: CSV for *.csv,\n"
        "                          else JSON)\n"
        "      --mode MODE         JoReMon rows: cpu, mem, io or all (default all)\n"
        "      --null-missing      unset workflow annotations and unmeasured iowait are\n"
        "                          null (default: \"\" and 0, as pegasus-kickstart wrote)\n"
        "      --payload-shape panorama  payload events as Panorama stored them\n"
        "                          (stampede.task.monitoring, xwf_id, job_id, sched_id)\n"
        "      --job ID            job id stamped on every event (default: the batch\n"
        "                          system's job id, else HOST-PID-TIME)\n"
        "      --tag KEY=VALUE     annotation added to every event (repeatable)\n"
        "      --summary PATH      also write the end-of-job record to PATH (one JSON)\n"
        "      --exit-status-fd N  attach: the process's wait status (a decimal) is\n"
        "                          written on descriptor N when it ends, by whoever\n"
        "                          reaps it (the Slurm plugin, docs/slurm.md)\n"
        "      --wait-all          run: wait until every descendant has exited, not just\n"
        "                          CMD (daemons included)\n"
        "      --flush-timeout S   at job end, wait at most S seconds for outputs (10)\n"
        "  -G, --gpu[=all]         GPU monitoring (docs/gpu.md): NVIDIA through NVML, AMD\n"
        "                          and other DRM drivers through sysfs and fdinfo; only\n"
        "                          the job's GPUs (CUDA_VISIBLE_DEVICES...) unless =all\n"
        "      --gpu-graphics-procs  also list graphics processes (KICKSTART_MON_GRAPHICS_PROCS)\n"
        "      --gpu-proc-util     list per-process utilisation samples "
        "(KICKSTART_MON_GRAPHICS_UTIL)\n"
        "      --gpu-pcie          PCIe throughput, ~40 ms per GPU (KICKSTART_MON_GRAPHICS_PCIE)\n"
        "      --gpu-all-procs     list other jobs' GPU processes too (default: the job's)\n"
        "      --telemetry-level N run: custom metrics from the job (libjobscope,\n"
        "                          jobscope.py, 'jobscope emit') with a level above N\n"
        "                          are dropped; 0 turns them off (default 1)\n"
        "      --scan-output       run: read CMD's stdout/stderr through pipes, pass every\n"
        "                          byte on, and turn MONITORING_PAYLOAD blocks into events\n"
        "      --strip-payloads    with --scan-output: remove the blocks from the output\n"
        "      --cgroup[=auto|PATH|off]  run: put the job in a cgroup of its own and\n"
        "                          report its totals (by default only where that costs\n"
        "                          the job nothing: jobscope in a non-root memory cgroup,\n"
        "                          or --limit; --cgroup warns when it cannot); attach:\n"
        "                          watch the PID's cgroup (auto) or PATH.\n"
        "                          --no-cgroup = --cgroup=off\n"
        "      --sampler auto|bpf|procfs  how the process tree is read: bpf (one pass of\n"
        "                          a BPF iterator; root, kernel BTF; docs/bpf.md), procfs\n"
        "                          (/proc files), auto (default: bpf when it can load)\n"
        "      --limit NAME=VALUE[,...]  stop the job past a limit (repeatable): memory=4G,\n"
        "                          rss=2G, wall=2h, cpu=30m (CPU seconds), procs=100,\n"
        "                          disk-write=10G; sizes K/M/G/T, durations s/m/h/d\n"
        "      --kill-grace S      seconds between SIGTERM and SIGKILL (default 10)\n"
        "      --measure-only      limits: only report violations, never kill\n"
        "\n"
        "Network outputs (docs/publishing.md): amqp[s]://USER:PASS@HOST[:PORT]/VHOST/EXCHANGE\n"
        "[?routing_key=K], rabbitmq[s]://USER:PASS@HOST:PORT/api/exchanges/VHOST/EX/publish,\n"
        "http[s]://...[#ndjson], elasticsearch[s]://HOST:PORT/INDEX, opentsdb[s]://HOST:PORT,\n"
        "influx[s]://HOST:PORT/DB, promrw[s]://HOST:PORT[/PATH] (Prometheus remote write),\n"
        "jobscope://HOST[:PORT] (a 'jobscope serve').  Events\n"
        "that cannot be delivered wait in a spool file and are replayed in order;\n"
        "'jobscope flush SPOOL' re-sends what is left at exit.\n"
        "  -o @FILE                read the destination URL from FILE (keeps passwords\n"
        "                          out of the process list)\n"
        "      --spool-dir DIR     where undeliverable events wait\n"
        "                          (default $JOBSCOPE_SPOOL_DIR, $XDG_STATE_HOME/jobscope/spool\n"
        "                          or /var/tmp/jobscope-spool-UID; must be yours, mode 0700)\n"
        "      --spool-max SIZE    cap on undelivered bytes per destination, K/M/G (1G)\n"
        "      --require-output    an unreachable or malformed destination is fatal (125)\n"
        "      --no-serve          do not stream to a local 'jobscope serve' (by default,\n"
        "                          events also go to one answering on its Unix socket)\n"
        "      --insecure          do not verify TLS certificates\n"
        "      --ca-file FILE      verify TLS peers against FILE instead of the system CAs\n"
        "  -q, --quiet             no summary, no diagnostics\n"
        "  -v, --verbose           diagnostics on stderr, prefixed 'jobscope:'\n"
        "  -h, --help              this help\n"
        "      --version           print the version\n"
        "\n"
        "Environment: KICKSTART_MON_URL (destination when no -o is given),\n"
        "KICKSTART_MON_INTERVAL (interval when no -i/-m), PEGASUS_WF_UUID, PEGASUS_WF_LABEL,\n"
        "PEGASUS_DAG_JOB_ID, CONDOR_JOBID, PEGASUS_XFORMATION, PEGASUS_TASK_ID, PEGASUS_SITE\n"
        "and MPI rank variables (annotations), SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, JOB_ID\n"
        "(SGE), COBALT_JOBID, FLUX_JOB_ID (job ids), JOBSCOPE_TELEMETRY_LEVEL.\n"
        "Fields: docs/events.md; custom metrics: docs/metrics.md; cgroups and\n"
        "limits: docs/cgroups.md.\n",
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
    if (s[strspn(s, "0123456789.eE+-")]) return -1; /* decimal only: no 0x10, no inf */
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0.01) || v > 86400) return -1;
    *out = v;
    return 0;
}

static int parse_format(const char *s, enum sink_format *f)
{
    static const struct {
        const char *name;
        enum sink_format f;
    } tab[] = {
        {"json", FORMAT_JSON},
        {"jsonl", FORMAT_JSON},
        {"csv", FORMAT_CSV},
        {"joremon-json", FORMAT_JOREMON_JSON},
        {"joremon-csv", FORMAT_JOREMON_CSV},
        {"jsons", FORMAT_JOREMON_JSON}, /* JoReMon's own spelling */
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(s, tab[i].name)) {
            *f = tab[i].f;
            return 0;
        }
    return -1;
}

enum {
    OPT_FORMAT = 1000,
    OPT_JOB,
    OPT_TAG,
    OPT_SUMMARY,
    OPT_VERSION,
    OPT_WAIT_ALL,
    OPT_FLUSH_TIMEOUT,
    OPT_GPU,
    OPT_GPU_GPROCS,
    OPT_GPU_PUTIL,
    OPT_GPU_PCIE,
    OPT_GPU_ALL_PROCS,
    OPT_TELEMETRY_LEVEL,
    OPT_SCAN_OUTPUT,
    OPT_STRIP_PAYLOADS,
    OPT_CGROUP,
    OPT_NO_CGROUP,
    OPT_LIMIT,
    OPT_KILL_GRACE,
    OPT_MEASURE_ONLY,
    OPT_SPOOL_DIR,
    OPT_SPOOL_MAX,
    OPT_INSECURE,
    OPT_CA_FILE,
    OPT_REQUIRE_OUTPUT,
    OPT_MODE,
    OPT_NULL_MISSING,
    OPT_PAYLOAD_SHAPE,
    OPT_NO_SERVE,
    OPT_SAMPLER,
    OPT_EXIT_STATUS_FD
};

/* JoReMon's -mode: which row types (bits 1 << JOREMON_CPU/IO/MEM, see
 * sink/joremon.h: 0 cpu, 1 io, 2 mem). */
static int parse_mode(const char *s, unsigned *out)
{
    if (!strcmp(s, "all"))
        *out = 7;
    else if (!strcmp(s, "cpu"))
        *out = 1;
    else if (!strcmp(s, "io"))
        *out = 2;
    else if (!strcmp(s, "mem"))
        *out = 4;
    else
        return -1;
    return 0;
}

/* A bad value in the environment (site profiles set these) must never stop
 * the job: one warning, and the default. */
static void env_warn(const js_options *o, const char *var, const char *val, const char *what)
{
    if (!o->quiet) fprintf(stderr, "jobscope: ignoring %s='%s' (%s)\n", var, val, what);
}

/* "123", "64K", "10M", "1G", "4GiB" -> bytes (util/size.h); -1 if bad. */
long long options_parse_size(const char *s)
{
    double v;
    return size_parse(s, &v) == 0 ? (long long)v : -1;
}

/* -o @FILE: the destination is the first non-empty line of FILE, so that
 * passwords stay out of argv.  Returns a new string, NULL with errno. */
char *options_read_url_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[4096], *r = NULL;
    while (!r && fgets(line, sizeof line, f)) {
        char *b = line, *e = line + strlen(line);
        while (*b && isspace((unsigned char)*b)) b++;
        while (e > b && isspace((unsigned char)e[-1])) *--e = 0;
        if (*b && *b != '#') r = strdup(b);
    }
    fclose(f);
    if (!r) errno = ENODATA;
    return r;
}

/* The copies of the destinations, kept until exit. */
static char *owned_outputs[JS_MAX_OUTPUTS];
static void free_owned_outputs(void)
{
    for (int i = 0; i < JS_MAX_OUTPUTS; i++) {
        free(owned_outputs[i]);
        owned_outputs[i] = NULL;
    }
}

/* Overwrites the password of every URL in argv[from..to) with '*', so that
 * ps and /proc/PID/cmdline never show it (the options keep their copies). */
static void scrub_argv_passwords(char **argv, int from, int to)
{
    for (int i = from; i < to; i++)
        if (strstr(argv[i], "://")) sink_url_scrub(argv[i]); /* and ?token=... values */
}

static int parse_level(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 255) return -1;
    *out = (int)v;
    return 0;
}

int options_parse(js_options *o, int attach, int argc, char **argv, int *exit_now)
{
    static const struct option longopts[] = {
        {"interval", required_argument, 0, 'i'},
        {"output", required_argument, 0, 'o'},
        {"format", required_argument, 0, OPT_FORMAT},
        {"job", required_argument, 0, OPT_JOB},
        {"tag", required_argument, 0, OPT_TAG},
        {"summary", required_argument, 0, OPT_SUMMARY},
        {"wait-all", no_argument, 0, OPT_WAIT_ALL},
        {"flush-timeout", required_argument, 0, OPT_FLUSH_TIMEOUT},
        {"spool-dir", required_argument, 0, OPT_SPOOL_DIR},
        {"spool-max", required_argument, 0, OPT_SPOOL_MAX},
        {"insecure", no_argument, 0, OPT_INSECURE},
        {"ca-file", required_argument, 0, OPT_CA_FILE},
        {"require-output", no_argument, 0, OPT_REQUIRE_OUTPUT},
        {"gpu", optional_argument, 0, OPT_GPU},
        {"gpu-graphics-procs", no_argument, 0, OPT_GPU_GPROCS},
        {"gpu-proc-util", no_argument, 0, OPT_GPU_PUTIL},
        {"gpu-pcie", no_argument, 0, OPT_GPU_PCIE},
        {"gpu-all-procs", no_argument, 0, OPT_GPU_ALL_PROCS},
        {"telemetry-level", required_argument, 0, OPT_TELEMETRY_LEVEL},
        {"scan-output", no_argument, 0, OPT_SCAN_OUTPUT},
        {"strip-payloads", no_argument, 0, OPT_STRIP_PAYLOADS},
        {"cgroup", optional_argument, 0, OPT_CGROUP},
        {"no-cgroup", no_argument, 0, OPT_NO_CGROUP},
        {"sampler", required_argument, 0, OPT_SAMPLER},
        {"no-serve", no_argument, 0, OPT_NO_SERVE},
        {"exit-status-fd", required_argument, 0, OPT_EXIT_STATUS_FD},
        {"limit", required_argument, 0, OPT_LIMIT},
        {"kill-grace", required_argument, 0, OPT_KILL_GRACE},
        {"measure-only", no_argument, 0, OPT_MEASURE_ONLY},
        {"mode", required_argument, 0, OPT_MODE},
        {"null-missing", no_argument, 0, OPT_NULL_MISSING},
        {"payload-shape", required_argument, 0, OPT_PAYLOAD_SHAPE},
        {"quiet", no_argument, 0, 'q'},
        {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, OPT_VERSION},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->attach = attach;
    o->interval = 1.0;
    o->flush_timeout = 10.0;
    o->kill_grace = 10.0;
    o->telemetry_level = -1;
    *exit_now = 0;
    int have_interval = 0;

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+i:m:o:qvhG", longopts, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (parse_interval(optarg, &o->interval))
                return bad("bad interval '%s': a number of seconds >= 0.01", optarg);
            have_interval = 1;
            o->online_off = 0;
            break;
        case 'm': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 0 || v > 86400)
                return bad("bad -m '%s': whole seconds, 0 (off) to 86400", optarg);
            if (v > 0) o->interval = (double)v;
            o->online_off = v == 0;
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
            for (int j = 0; j < o->ntags; j++)
                if (!strncmp(o->tags[j], optarg, (size_t)(strchr(optarg, '=') - optarg) + 1)) {
                    fprintf(stderr,
                            "jobscope: --tag %.*s given more than once: the last value wins\n",
                            (int)(strchr(optarg, '=') - optarg), optarg);
                    break;
                }
            o->tags[o->ntags++] = optarg;
            break;
        case OPT_SUMMARY:
            o->summary_path = optarg;
            break;
        case OPT_WAIT_ALL:
            o->wait_all = 1;
            break;
        case OPT_FLUSH_TIMEOUT: {
            char *end;
            o->flush_timeout = strtod(optarg, &end);
            if (end == optarg || *end || !isfinite(o->flush_timeout) || o->flush_timeout < 0)
                return bad("bad --flush-timeout '%s': seconds >= 0", optarg);
            break;
        }
        case OPT_SPOOL_DIR:
            if (!*optarg) return bad("empty --spool-dir%s", "");
            o->sink.spool_dir = optarg;
            break;
        case OPT_SPOOL_MAX:
            if ((o->sink.spool_max = options_parse_size(optarg)) < 0)
                return bad("bad --spool-max '%s': bytes, with K, M or G", optarg);
            break;
        case OPT_INSECURE:
            o->sink.insecure = 1;
            break;
        case OPT_CA_FILE:
            if (access(optarg, R_OK) < 0) return bad("cannot read --ca-file '%s'", optarg);
            o->sink.ca_file = optarg;
            break;
        case OPT_REQUIRE_OUTPUT:
            o->sink.require_output = 1;
            break;
        case 'G':
            o->gpu = o->gpu ? o->gpu : 1;
            break;
        case OPT_GPU:
            if (optarg && strcmp(optarg, "all")) return bad("bad --gpu=%s: only --gpu=all", optarg);
            o->gpu = optarg ? 2 : (o->gpu ? o->gpu : 1);
            break;
        case OPT_GPU_GPROCS:
            o->gpu_graphics_procs = 1;
            break;
        case OPT_GPU_PUTIL:
            o->gpu_proc_util = 1;
            break;
        case OPT_GPU_PCIE:
            o->gpu_pcie = 1;
            break;
        case OPT_GPU_ALL_PROCS:
            o->gpu_all_procs = 1;
            break;
        case OPT_EXIT_STATUS_FD: {
            char *end;
            long fd = strtol(optarg, &end, 10);
            if (!attach) return bad("--exit-status-fd=%s: attach only", optarg);
            if (end == optarg || *end || fd < 3 || fd > 1023)
                return bad("bad --exit-status-fd '%s': a descriptor number 3 to 1023", optarg);
            o->exit_status_fd = (int)fd;
            break;
        }
        case OPT_TELEMETRY_LEVEL:
            if (parse_level(optarg, &o->telemetry_level))
                return bad("bad --telemetry-level '%s': an integer 0 to 255", optarg);
            break;
        case OPT_SCAN_OUTPUT:
            o->scan_output = 1;
            break;
        case OPT_STRIP_PAYLOADS:
            o->scan_output = o->strip_payloads = 1;
            break;
        case OPT_CGROUP: {
            const char *a = optarg;
            /* attach: "--cgroup auto" / "--cgroup /path" as two words, when a PID follows */
            if (!a && attach && optind + 1 < argc &&
                (!strcmp(argv[optind], "auto") || !strcmp(argv[optind], "off") ||
                 argv[optind][0] == '/'))
                a = argv[optind++];
            if (!a || !strcmp(a, "auto") || !strcmp(a, "on"))
                o->cgroup_mode = JS_CGROUP_ON;
            else if (!strcmp(a, "off") || !strcmp(a, "no"))
                o->cgroup_mode = JS_CGROUP_OFF;
            else if (!*a)
                return bad("empty --cgroup path%s", "");
            else if (!attach)
                return bad(
                    "--cgroup=%s: run makes a cgroup of its own (--cgroup); a PATH is for attach",
                    a);
            else {
                o->cgroup_mode = JS_CGROUP_PATH;
                o->cgroup_path = a;
            }
            break;
        }
        case OPT_NO_CGROUP:
            o->cgroup_mode = JS_CGROUP_OFF;
            break;
        case OPT_SAMPLER:
            if (strcmp(optarg, "auto") && strcmp(optarg, "bpf") && strcmp(optarg, "procfs"))
                return bad("--sampler %s: expected auto, bpf or procfs", optarg);
            o->sampler = optarg;
            break;
        case OPT_NO_SERVE:
            o->no_serve = 1;
            break;
        case OPT_LIMIT: {
            js_limits tmp = {0, {0}};
            char err[256];
            if (limits_parse(optarg, &tmp, err, sizeof err) < 0) {
                fprintf(stderr, "jobscope: %s\n", err);
                return JS_EXIT_ERROR;
            }
            if (o->nlimits == JS_MAX_LIMITS)
                return bad("too many --limit options (at most %s)", "32");
            o->limits[o->nlimits++] = optarg;
            break;
        }
        case OPT_KILL_GRACE: {
            char *end;
            errno = 0;
            o->kill_grace = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o->kill_grace >= 0) || o->kill_grace > 86400)
                return bad("bad --kill-grace '%s': seconds, 0 to 86400", optarg);
            break;
        }
        case OPT_MEASURE_ONLY:
            o->measure_only = 1;
            break;
        case OPT_MODE:
            if (parse_mode(optarg, &o->sink.joremon_types))
                return bad("bad --mode '%s': cpu, mem, io or all", optarg);
            break;
        case OPT_NULL_MISSING:
            o->null_missing = 1;
            break;
        case OPT_PAYLOAD_SHAPE:
            if (strcmp(optarg, "panorama") && strcmp(optarg, "jobscope"))
                return bad("bad --payload-shape '%s': panorama or jobscope", optarg);
            o->payload_panorama = !strcmp(optarg, "panorama");
            break;
        case 'q':
            o->quiet = 1;
            o->verbose = 0;
            break;
        case 'v':
            o->verbose++;
            o->quiet = 0;
            break;
        case 'h':
            options_usage(stdout);
            *exit_now = 1;
            return 0;
        case OPT_VERSION:
            printf("jobscope %s\n", JOBSCOPE_VERSION_STR);
            *exit_now = 1;
            return 0;
        case '?':
        default:
            if (optopt && optopt < 256) {
                char s[2] = {(char)optopt, 0};
                if (strchr("imo", optopt)) return bad("option -%s needs a value", s);
                return bad("unknown option -%s", s);
            }
            return bad("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }

    if (!have_interval) {
        /* kickstart: whole seconds, 0 = monitoring off */
        const char *e = getenv("KICKSTART_MON_INTERVAL");
        char *end;
        if (e && *e) {
            double v = strtod(e, &end);
            if (end != e && !*end && v == 0)
                o->online_off = 1;
            else if (parse_interval(e, &o->interval))
                env_warn(o, "KICKSTART_MON_INTERVAL", e, "seconds, 0 = off; using 1");
        }
    }
    if (o->online_off) o->gpu = 0; /* kickstart: -G counts only together with -m */
    /* kickstart's GPU switches: their mere presence turns the part on */
    if (getenv("KICKSTART_MON_GRAPHICS_PROCS")) o->gpu_graphics_procs = 1;
    if (getenv("KICKSTART_MON_GRAPHICS_UTIL")) o->gpu_proc_util = 1;
    if (getenv("KICKSTART_MON_GRAPHICS_PCIE")) o->gpu_pcie = 1;
    if (o->telemetry_level < 0) {
        const char *e = getenv("JOBSCOPE_TELEMETRY_LEVEL");
        o->telemetry_level = 1;
        if (e && *e && parse_level(e, &o->telemetry_level)) {
            env_warn(o, "JOBSCOPE_TELEMETRY_LEVEL", e, "an integer 0 to 255; using 1");
            o->telemetry_level = 1;
        }
    }
    if (o->noutputs == 0) {
        const char *u = getenv("KICKSTART_MON_URL");
        if (u && *u) {
            /* a blank or control-character value is a mistake, not a file name */
            int blank = 1, ctl = 0;
            for (const char *k = u; *k; k++) {
                if (*k != ' ') blank = 0;
                if ((unsigned char)*k < 0x20 || *k == 0x7f) ctl = 1;
            }
            if (blank || ctl)
                return bad("bad KICKSTART_MON_URL '%s': blank or with control characters",
                           ctl ? "..." : u);
            o->outputs[o->noutputs++] = u;
        }
    }
    /* Own copies of the destinations (argv gets scrubbed), -o @FILE read. */
    for (int i = 0; i < o->noutputs; i++) {
        char *u = o->outputs[i][0] == '@' ? options_read_url_file(o->outputs[i] + 1)
                                          : strdup(o->outputs[i]);
        if (!u) {
            if (o->outputs[i][0] == '@')
                return bad("cannot read a destination URL from '%s'", o->outputs[i] + 1);
            return bad("out of memory%s", "");
        }
        o->outputs[i] = owned_outputs[i] = u;
    }
    atexit(free_owned_outputs);
    scrub_argv_passwords(argv, 1, optind);

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
