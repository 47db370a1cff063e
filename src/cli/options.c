/* options.c — the command line of run/attach as one table (see options.h).
 *
 * Each row of `option_table` is one option: short and long name, how its
 * argument is shown, the setter that checks it and writes the
 * monitor_config field it stands for, its --help text and what the man page
 * adds.  A row without a setter is text: a paragraph of --help, or a second
 * way of writing an option (`-o @FILE`).  getopt_long's tables are made from
 * it here; --help and the man page's OPTIONS section in options_help.c. */
#include "options.h"
#include "options_priv.h"
#include "../limits/limits.h"
#include "../util/size.h"
#include "../util/userinfo.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- parsing helpers ----------------------------------------------------- */

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

static int parse_level(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 255) return -1;
    *out = (int)v;
    return 0;
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

/* ---- setters: one per kind of option ------------------------------------- */

#define FIELD(f) offsetof(run_options, cfg.f)

static int *int_at(opt_ctx *x, const opt_def *d)
{
    return (int *)((char *)x->o + d->off);
}

static int set_flag(opt_ctx *x, const opt_def *d, const char *arg)
{
    *int_at(x, d) = 1;
    return 0;
}

/* a string that must not be empty */
static int set_string(opt_ctx *x, const opt_def *d, const char *arg)
{
    if (!*arg) return bad("empty --%s", d->name);
    *(const char **)((char *)x->o + d->off) = arg;
    return 0;
}

static int set_summary(opt_ctx *x, const opt_def *d, const char *arg)
{
    x->c->summary_path = arg;
    return 0;
}

static int set_exit_status_fd(opt_ctx *x, const opt_def *d, const char *arg)
{
    char *end;
    long fd = strtol(arg, &end, 10);
    if (!x->attach) return bad("--exit-status-fd=%s: attach only", arg);
    if (end == arg || *end || fd < 3 || fd > 1023)
        return bad("bad --exit-status-fd '%s': a descriptor number 3 to 1023", arg);
    x->c->exit_status_fd = (int)fd;
    return 0;
}

/* -i 0 is -m 0: no online samples, as kickstart's -m 0 (issue 21.7) */
static int is_zero(const char *s)
{
    char *end;
    return !s[strspn(s, "0123456789.eE+-")] && strtod(s, &end) == 0 && end != s && !*end;
}

static int set_interval(opt_ctx *x, const opt_def *d, const char *arg)
{
    x->have_interval = 1;
    x->c->online_off = is_zero(arg);
    if (x->c->online_off) return 0;
    if (parse_interval(arg, &x->c->interval))
        return bad("bad interval '%s': a number of seconds >= 0.01, or 0 (no online samples)", arg);
    return 0;
}

static int set_mon_interval(opt_ctx *x, const opt_def *d, const char *arg)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < 0 || v > 86400)
        return bad("bad -m '%s': whole seconds, 0 (off) to 86400", arg);
    if (v > 0) x->c->interval = (double)v;
    x->c->online_off = v == 0;
    x->have_interval = 1;
    return 0;
}

static int set_output(opt_ctx *x, const opt_def *d, const char *arg)
{
    if (x->c->noutputs == JS_MAX_OUTPUTS) return bad("too many outputs (at most %s)", "16");
    if (!*arg) return bad("empty output%s", "");
    x->c->outputs[x->c->noutputs++] = arg;
    return 0;
}

static int set_format(opt_ctx *x, const opt_def *d, const char *arg)
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
        if (!strcmp(arg, tab[i].name)) {
            x->c->sink.format = tab[i].f;
            return 0;
        }
    return bad("unknown format '%s' (json, csv, joremon-json, joremon-csv)", arg);
}

/* JoReMon's -mode: which row types (bits 1 << JOREMON_CPU/IO/MEM, see
 * sink/joremon.h: 0 cpu, 1 io, 2 mem). */
static int set_mode(opt_ctx *x, const opt_def *d, const char *arg)
{
    static const char *const modes[] = {"cpu", "io", "mem"};
    unsigned bits = 0;
    if (!strcmp(arg, "all")) bits = 7;
    for (unsigned i = 0; i < 3; i++)
        if (!strcmp(arg, modes[i])) bits = 1u << i;
    if (!bits) return bad("bad --mode '%s': cpu, mem, io or all", arg);
    x->c->sink.joremon_types = bits;
    return 0;
}

static int set_tag(opt_ctx *x, const opt_def *d, const char *arg)
{
    run_options *o = x->o;
    if (!strchr(arg, '=') || arg[0] == '=') return bad("bad --tag '%s': expected KEY=VALUE", arg);
    if (x->c->ntags == JS_MAX_TAGS) return bad("too many tags (at most %s)", "64");
    size_t klen = (size_t)(strchr(arg, '=') - arg);
    for (int j = 0; j < x->c->ntags; j++)
        if (!strncmp(o->tags[j], arg, klen + 1)) {
            fprintf(stderr, "jobscope: --tag %.*s given more than once: the last value wins\n",
                    (int)klen, arg);
            break;
        }
    o->tags[x->c->ntags++] = (char *)arg;
    return 0;
}

/* seconds >= 0 into the double at d->off */
static int set_seconds(opt_ctx *x, const opt_def *d, const char *arg)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end || !isfinite(v) || v < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "bad --%s '%.80s': seconds >= 0", d->name, arg);
        return bad("%s", msg);
    }
    *(double *)((char *)x->o + d->off) = v;
    return 0;
}

static int set_spool_max(opt_ctx *x, const opt_def *d, const char *arg)
{
    if ((x->c->sink.spool_max = options_parse_size(arg)) < 0)
        return bad("bad --spool-max '%s': bytes, with K, M or G", arg);
    return 0;
}

static int set_ca_file(opt_ctx *x, const opt_def *d, const char *arg)
{
    if (access(arg, R_OK) < 0) return bad("cannot read --ca-file '%s'", arg);
    x->c->sink.ca_file = arg;
    return 0;
}

/* -G, --gpu: the job's GPUs; --gpu=all: every GPU */
static int set_gpu(opt_ctx *x, const opt_def *d, const char *arg)
{
    if (arg && strcmp(arg, "all")) return bad("bad --gpu=%s: only --gpu=all", arg);
    x->c->gpu.mode = arg ? 2 : (x->c->gpu.mode ? x->c->gpu.mode : 1);
    return 0;
}

static int set_telemetry_level(opt_ctx *x, const opt_def *d, const char *arg)
{
    if (parse_level(arg, &x->c->metrics.telemetry_level))
        return bad("bad --telemetry-level '%s': an integer 0 to 255", arg);
    return 0;
}

static int set_strip_payloads(opt_ctx *x, const opt_def *d, const char *arg)
{
    x->c->metrics.scan_output = x->c->metrics.strip_payloads = 1;
    return 0;
}

/* "--cgroup auto" as two words (run and attach alike) when something
 * follows the word (the command, "--", the PID); attach also "--cgroup
 * /path".  A command named auto, on, off or no needs --cgroup=auto before it. */
static int set_cgroup(opt_ctx *x, const opt_def *d, const char *a)
{
    if (!a && optind + 1 < x->argc) {
        const char *w = x->argv[optind];
        if (!strcmp(w, "auto") || !strcmp(w, "on") || !strcmp(w, "off") || !strcmp(w, "no") ||
            (x->attach && w[0] == '/'))
            a = x->argv[optind++];
    }
    cgroup_config *cg = &x->c->cgroup;
    if (!a || !strcmp(a, "auto") || !strcmp(a, "on"))
        cg->mode = JS_CGROUP_ON;
    else if (!strcmp(a, "off") || !strcmp(a, "no"))
        cg->mode = JS_CGROUP_OFF;
    else if (!*a)
        return bad("empty --cgroup path%s", "");
    else if (!x->attach)
        return bad("--cgroup=%s: run makes a cgroup of its own (--cgroup); a PATH is for attach",
                   a);
    else {
        cg->mode = JS_CGROUP_PATH;
        cg->path = a;
    }
    return 0;
}

static int set_no_cgroup(opt_ctx *x, const opt_def *d, const char *arg)
{
    x->c->cgroup.mode = JS_CGROUP_OFF;
    return 0;
}

static int set_sampler(opt_ctx *x, const opt_def *d, const char *arg)
{
    if (strcmp(arg, "auto") && strcmp(arg, "bpf") && strcmp(arg, "procfs"))
        return bad("--sampler %s: expected auto, bpf or procfs", arg);
    x->c->sampler = arg;
    return 0;
}

static int set_limit(opt_ctx *x, const opt_def *d, const char *arg)
{
    js_limits tmp = {0, {0}};
    char err[256];
    if (limits_parse(arg, &tmp, err, sizeof err) < 0) {
        fprintf(stderr, "jobscope: %s\n", err);
        return JS_EXIT_ERROR;
    }
    if (x->c->limits.nspecs == JS_MAX_LIMITS)
        return bad("too many --limit options (at most %s)", "32");
    x->o->limits[x->c->limits.nspecs++] = arg;
    return 0;
}

static int set_kill_grace(opt_ctx *x, const opt_def *d, const char *arg)
{
    char *end;
    errno = 0;
    double v = x->c->kill_grace = strtod(arg, &end);
    if (errno || end == arg || *end || !(v >= 0) || v > 86400)
        return bad("bad --kill-grace '%s': seconds, 0 to 86400", arg);
    return 0;
}

static int set_payload_shape(opt_ctx *x, const opt_def *d, const char *arg)
{
    if (strcmp(arg, "panorama") && strcmp(arg, "jobscope"))
        return bad("bad --payload-shape '%s': panorama or jobscope", arg);
    x->c->metrics.payload_panorama = !strcmp(arg, "panorama");
    return 0;
}

static int set_quiet(opt_ctx *x, const opt_def *d, const char *arg)
{
    x->c->quiet = 1;
    x->c->verbose = 0;
    return 0;
}

static int set_verbose(opt_ctx *x, const opt_def *d, const char *arg)
{
    x->c->verbose++;
    x->c->quiet = 0;
    return 0;
}

static int set_help(opt_ctx *x, const opt_def *d, const char *arg)
{
    options_usage(stdout);
    x->exit_now = 1;
    return 0;
}

static int set_version(opt_ctx *x, const opt_def *d, const char *arg)
{
    printf("jobscope %s\n", JOBSCOPE_VERSION_STR);
    x->exit_now = 1;
    return 0;
}

/* ---- the table ------------------------------------------------------------ */

#define NO  no_argument
#define REQ required_argument
#define OPT optional_argument

const opt_def option_table[] = {
    {'i', "interval", REQ, "SECONDS", set_interval, 0,
     "sampling interval, decimal, >= 0.01 (default 1);\n"
     "0: no online samples, only the start and end events",
     NULL},
    {'m', NULL, REQ, "N", set_mon_interval, 0,
     "the same in whole seconds (pegasus-kickstart's flag);\n"
     "-m 0: no online samples, only the start and end events",
     "KICKSTART_MON_INTERVAL=0 does the same, as do jobscope monitor -i 0 and jobscope joremon "
     "-interval 0."},
    {'o', "output", REQ, "DEST", set_output, 0,
     "where events go (repeatable): '-' stdout, PATH or\n"
     "file://PATH for JSON Lines (appended), PATH.csv for CSV;\n"
     "in paths %r = MPI rank, %h host, %j job id, %p pid",
     NULL},
    {0, "format", REQ, "FMT", set_format, 0,
     "json, csv, joremon-json (or jsons) or joremon-csv: the\n"
     "format of every file output (default: CSV for *.csv,\n"
     "else JSON)",
     NULL},
    {0, "mode", REQ, "MODE", set_mode, 0, "JoReMon rows: cpu, mem, io or all (default all)",
     "Also the CSV columns."},
    {0, "null-missing", NO, NULL, set_flag, FIELD(null_missing),
     "unset workflow annotations and unmeasured iowait are\n"
     "null (default: \"\" and 0, as pegasus-kickstart wrote)",
     NULL},
    {0, "payload-shape", REQ, "panorama", set_payload_shape, 0,
     "payload events as Panorama stored them\n"
     "(stampede.task.monitoring, xwf_id, job_id, sched_id)",
     NULL},
    {0, "job", REQ, "ID", set_string, FIELD(job_id),
     "job id stamped on every event (default: the batch\n"
     "system's job id, else HOST-PID-TIME)",
     NULL},
    {0, "tag", REQ, "KEY=VALUE", set_tag, 0, "annotation added to every event (repeatable)", NULL},
    {0, "summary", REQ, "PATH", set_summary, 0,
     "also write the end-of-job record to PATH (one JSON)", NULL},
    {0, "exit-status-fd", REQ, "N", set_exit_status_fd, 0,
     "attach: the process's wait status (a decimal) is\n"
     "written on descriptor N when it ends, by whoever\n"
     "reaps it (the Slurm plugin, docs/slurm.md)",
     "The end record then has its exit code or signal, and N is closed once the final figures "
     "are read. A process seen gone before its status comes (the reaper has waited for it but "
     "not yet written) is given 5 s more for the status."},
    {0, "wait-all", NO, NULL, set_flag, FIELD(wait_all),
     "run: wait until every descendant has exited, not just\n"
     "CMD (daemons included)",
     NULL},
    {0, "flush-timeout", REQ, "S", set_seconds, FIELD(flush_timeout),
     "at job end, wait at most S seconds for outputs (10)", NULL},
    {0, "flush-interval", REQ, "S", set_seconds, FIELD(flush_interval),
     "file outputs: a sample waits at most S seconds to be\n"
     "written with the next ones (1; 0: each line at once)",
     "Samples that come sooner than 0.9 S after the file's last write are written together, in one "
     "write of whole lines (so with the default, at intervals of 1 s and more every sample is "
     "written when it comes); a still job's sample (the one before with its time put in: "
     "docs/cgroups.md) waits until 1.9 S, so at 1 s a still job's file gets a write every other "
     "second.  Any other event, the end record too, is written at once with them.  "
     "Pipes, terminals and FIFOs get every line at once.  A jobscope killed with SIGKILL loses at "
     "most the last 2 S seconds of a file's samples (docs/events.md)."},
    {'G', "gpu", OPT, "[=all]", set_gpu, 0,
     "GPU monitoring (docs/gpu.md): NVIDIA through NVML, AMD\n"
     "and other DRM drivers through sysfs and fdinfo; only\n"
     "the job's GPUs (CUDA_VISIBLE_DEVICES...) unless =all",
     NULL},
    {0, "gpu-graphics-procs", NO, NULL, set_flag, FIELD(gpu.graphics_procs),
     "also list graphics processes (KICKSTART_MON_GRAPHICS_PROCS)", NULL},
    {0, "gpu-proc-util", NO, NULL, set_flag, FIELD(gpu.proc_util),
     "list per-process utilisation samples (KICKSTART_MON_GRAPHICS_UTIL)", NULL},
    {0, "gpu-pcie", NO, NULL, set_flag, FIELD(gpu.pcie),
     "PCIe throughput, ~40 ms per GPU (KICKSTART_MON_GRAPHICS_PCIE)", NULL},
    {0, "gpu-all-procs", NO, NULL, set_flag, FIELD(gpu.all_procs),
     "list other jobs' GPU processes too (default: the job's)", NULL},
    {0, "telemetry-level", REQ, "N", set_telemetry_level, 0,
     "run: custom metrics from the job (libjobscope,\n"
     "jobscope.py, 'jobscope emit') with a level above N\n"
     "are dropped; 0 turns them off (default 1)",
     NULL},
    {0, "scan-output", NO, NULL, set_flag, FIELD(metrics.scan_output),
     "run: read CMD's stdout/stderr through pipes, pass every\n"
     "byte on, and turn MONITORING_PAYLOAD blocks into events",
     NULL},
    {0, "strip-payloads", NO, NULL, set_strip_payloads, 0,
     "with --scan-output: remove the blocks from the output", NULL},
    {0, "cgroup", OPT, "[=auto|PATH|off]", set_cgroup, 0,
     "run: put the job in a cgroup of its own and\n"
     "report its totals (by default only where that costs\n"
     "the job nothing: jobscope in a non-root memory cgroup,\n"
     "or --limit; --cgroup warns when it cannot); attach:\n"
     "watch the PID's cgroup (auto) or PATH.\n"
     "--no-cgroup = --cgroup=off",
     "The value may also be the next word (--cgroup auto -- CMD; attach: --cgroup /PATH PID). "
     "With attach --cgroup PATH, the BPF sampler walks that cgroup's tasks."},
    {0, "no-cgroup", NO, NULL, set_no_cgroup, 0, NULL, "The same as --cgroup=off."},
    {0, "sampler", REQ, "auto|bpf|procfs", set_sampler, 0,
     "how the process tree is read: bpf (one pass of\n"
     "a BPF iterator; root, kernel BTF; docs/bpf.md), procfs\n"
     "(/proc files), auto (default: as root, bpf from the\n"
     "start where it is pinned on the node, else procfs\n"
     "until reading /proc has cost what loading BPF costs;\n"
     "back to procfs if bpf turns out dearer)",
     "The BPF sampler is pinned by jobscope serve, or by the first run that loads it. The start "
     "event and the record say which ran. --sampler bpf where BPF cannot be used is an error "
     "(exit 125)."},
    {0, "limit", REQ, "NAME=VALUE[,...]", set_limit, 0,
     "stop the job past a limit (repeatable): memory=4G,\n"
     "rss=2G, wall=2h, cpu=30m (CPU seconds), procs=100,\n"
     "disk-write=10G; sizes K/M/G/T, durations s/m/h/d",
     NULL},
    {0, "kill-grace", REQ, "S", set_kill_grace, 0,
     "seconds between SIGTERM and SIGKILL (default 10)", NULL},
    {0, "measure-only", NO, NULL, set_flag, FIELD(limits.measure_only),
     "limits: only report violations, never kill", NULL},
    {0, NULL, NO, NULL, NULL, 0,
     "\n"
     "Network outputs (docs/publishing.md): amqp[s]://USER:PASS@HOST[:PORT]/VHOST/EXCHANGE\n"
     "[?routing_key=K], rabbitmq[s]://USER:PASS@HOST:PORT/api/exchanges/VHOST/EX/publish,\n"
     "http[s]://...[#ndjson], elasticsearch[s]://HOST:PORT/INDEX, opentsdb[s]://HOST:PORT,\n"
     "influx[s]://HOST:PORT/DB, promrw[s]://HOST:PORT[/PATH] (Prometheus remote write),\n"
     "jobscope://HOST[:PORT] (a 'jobscope serve').  Events\n"
     "that cannot be delivered wait in a spool file and are replayed in order;\n"
     "'jobscope flush SPOOL' re-sends what is left at exit.",
     NULL},
    {'o', NULL, REQ, "@FILE", NULL, 0,
     "read the destination URL from FILE (keeps passwords\n"
     "out of the process list)",
     NULL},
    {0, "spool-dir", REQ, "DIR", set_string, FIELD(sink.spool_dir),
     "where undeliverable events wait\n"
     "(default $JOBSCOPE_SPOOL_DIR, $XDG_STATE_HOME/jobscope/spool\n"
     "or /var/tmp/jobscope-spool-UID; must be yours, mode 0700)",
     NULL},
    {0, "spool-max", REQ, "SIZE", set_spool_max, 0,
     "cap on undelivered bytes per destination, K/M/G (1G)", NULL},
    {0, "require-output", NO, NULL, set_flag, FIELD(sink.require_output),
     "an unreachable or malformed destination is fatal (125)", NULL},
    {0, "no-serve", NO, NULL, set_flag, FIELD(no_serve),
     "do not stream to a local 'jobscope serve' (by default,\n"
     "events also go to one answering on its Unix socket)",
     "See jobscope-serve(1)."},
    {0, "insecure", NO, NULL, set_flag, FIELD(sink.insecure), "do not verify TLS certificates",
     NULL},
    {0, "ca-file", REQ, "FILE", set_ca_file, 0,
     "verify TLS peers against FILE instead of the system CAs", NULL},
    {'q', "quiet", NO, NULL, set_quiet, 0, "no summary, no diagnostics", NULL},
    {'v', "verbose", NO, NULL, set_verbose, 0, "diagnostics on stderr, prefixed 'jobscope:'", NULL},
    {'h', "help", NO, NULL, set_help, 0, "this help", NULL},
    {0, "version", NO, NULL, set_version, 0, "print the version", NULL},
};

const size_t option_count = sizeof option_table / sizeof option_table[0];
#define NOPTS (sizeof option_table / sizeof option_table[0])

/* ---- argv and the environment ------------------------------------------- */

/* A bad value in the environment (site profiles set these) must never stop
 * the job: one warning, and the default. */
static void env_warn(const monitor_config *c, const char *var, const char *val, const char *what)
{
    if (!c->quiet) fprintf(stderr, "jobscope: ignoring %s='%s' (%s)\n", var, val, what);
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

/* What the environment adds after argv: kickstart's interval and GPU
 * switches, the telemetry level, KICKSTART_MON_URL. */
static int options_env(opt_ctx *x)
{
    monitor_config *c = x->c;
    if (!x->have_interval) {
        /* kickstart: whole seconds, 0 = monitoring off */
        const char *e = getenv("KICKSTART_MON_INTERVAL");
        char *end;
        if (e && *e) {
            double v = strtod(e, &end);
            if (end != e && !*end && v == 0)
                c->online_off = 1;
            else if (parse_interval(e, &c->interval))
                env_warn(c, "KICKSTART_MON_INTERVAL", e, "seconds, 0 = off; using 1");
        }
    }
    if (c->online_off) c->gpu.mode = 0; /* kickstart: -G counts only together with -m */
    /* kickstart's GPU switches: their mere presence turns the part on */
    if (getenv("KICKSTART_MON_GRAPHICS_PROCS")) c->gpu.graphics_procs = 1;
    if (getenv("KICKSTART_MON_GRAPHICS_UTIL")) c->gpu.proc_util = 1;
    if (getenv("KICKSTART_MON_GRAPHICS_PCIE")) c->gpu.pcie = 1;
    if (c->metrics.telemetry_level < 0) {
        const char *e = getenv("JOBSCOPE_TELEMETRY_LEVEL");
        c->metrics.telemetry_level = 1;
        if (e && *e && parse_level(e, &c->metrics.telemetry_level)) {
            env_warn(c, "JOBSCOPE_TELEMETRY_LEVEL", e, "an integer 0 to 255; using 1");
            c->metrics.telemetry_level = 1;
        }
    }
    if (c->noutputs == 0) {
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
            c->outputs[c->noutputs++] = u;
        }
    }
    return 0;
}

int options_parse(run_options *o, int attach, int argc, char **argv, int *exit_now)
{
    static struct option longopts[NOPTS + 1];
    static char shortopts[2 * NOPTS + 2];
    size_t nl = 0, ns = 0;
    shortopts[ns++] = '+';
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *d = &option_table[i];
        if (!d->set) continue;
        int val = d->short_name ? d->short_name : 1000 + (int)i;
        if (d->name) longopts[nl++] = (struct option){d->name, d->has_arg, 0, val};
        if (d->short_name) {
            shortopts[ns++] = d->short_name;
            if (d->has_arg == REQ) shortopts[ns++] = ':';
        }
    }
    longopts[nl] = (struct option){0, 0, 0, 0};
    shortopts[ns] = 0;

    memset(o, 0, sizeof *o);
    monitor_config *c = &o->cfg;
    c->attach = attach;
    c->interval = 1.0;
    c->flush_timeout = 10.0;
    c->flush_interval = 1.0;
    c->kill_grace = 10.0;
    c->metrics.telemetry_level = -1;
    c->tags = o->tags;
    c->limits.specs = o->limits;
    opt_ctx x = {o, c, attach, argc, argv, 0, 0};
    *exit_now = 0;

    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        const opt_def *d = NULL;
        for (size_t i = 0; i < NOPTS && !d; i++)
            if (option_table[i].set &&
                (ch < 256 ? option_table[i].short_name == ch : (size_t)ch == 1000 + i))
                d = &option_table[i];
        if (!d) {
            if (optopt && optopt < 256) {
                char s[2] = {(char)optopt, 0};
                if (strchr("imo", optopt)) return bad("option -%s needs a value", s);
                return bad("unknown option -%s", s);
            }
            return bad("unknown or incomplete option '%s'", argv[optind - 1]);
        }
        int rc = d->set(&x, d, optarg);
        if (rc) return rc;
        if (x.exit_now) {
            *exit_now = 1;
            return 0;
        }
    }

    int rc = options_env(&x);
    if (rc) return rc;
    /* Own copies of the destinations (argv gets scrubbed), -o @FILE read. */
    for (int i = 0; i < c->noutputs; i++) {
        char *u = c->outputs[i][0] == '@' ? options_read_url_file(c->outputs[i] + 1)
                                          : strdup(c->outputs[i]);
        if (!u) {
            if (c->outputs[i][0] == '@')
                return bad("cannot read a destination URL from '%s'", c->outputs[i] + 1);
            return bad("out of memory%s", "");
        }
        c->outputs[i] = owned_outputs[i] = u;
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
        c->pid = (pid_t)pid;
    } else {
        if (optind >= argc) return bad("run needs a command%s", "");
        c->argv = argv + optind;
    }
    /* what every output is told */
    c->cgroup.for_limits = c->limits.nspecs > 0;
    c->sink.verbose = c->verbose;
    c->sink.flush_timeout = c->flush_timeout;
    c->sink.flush_interval = c->flush_interval;
    return 0;
}
