/* ksrecord.c — the invocation record, in Pegasus 5 kickstart's YAML and
 * order: the invocation's attributes, the jobs of the chain, jobids, cwd,
 * kickstart's own usage, the machine, the files (-S, -s, integrity data,
 * stdin, stdout, stderr, metadata; kickstart and logfile when something
 * failed or with -f), then environment and resource limits (likewise).
 * jobscope adds one section at the end, "monitoring:", the summary of its
 * online monitoring and of the main job's whole process tree.
 *
 * Appended to -l FILE (or written to kickstart's stdout) in one stream, as
 * kickstart does, so that several records (and Pegasus' multipart records)
 * can follow each other in a job's .out file.  docs/kickstart.md lists
 * each field and where it differs from kickstart's. */
#include "kickstart.h"
#include "../sink/sink.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double tv_secs(struct timeval t)
{
    return (double)t.tv_sec + t.tv_usec / 1e6;
}

/* kickstart's timestamps: local time, milliseconds and the zone's offset. */
static void put_time(FILE *out, struct timeval t)
{
    struct tm lt;
    time_t s = t.tv_sec;
    localtime_r(&s, &lt);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &lt);
    long off = lt.tm_gmtoff;
    fprintf(out, "%s.%03ld%+03ld:%02ld", b, (long)t.tv_usec / 1000, off / 3600,
            labs(off) / 60 % 60);
}

static void put_kv_plain(FILE *out, int indent, const char *key, const char *v)
{
    fprintf(out, "%*s%s: ", indent, "", key);
    ksyaml_plain(out, v);
    fputc('\n', out);
}

static void put_usage(FILE *out, int indent, const struct rusage *u)
{
    fprintf(out, "%*susage:\n", indent, "");
    int in = indent + 2;
    fprintf(out, "%*sutime: %.3f\n%*sstime: %.3f\n", in, "", tv_secs(u->ru_utime), in, "",
            tv_secs(u->ru_stime));
    const char *k[] = {"maxrss", "minflt", "majflt",   "nswap", "inblock", "outblock",
                       "msgsnd", "msgrcv", "nsignals", "nvcsw", "nivcsw"};
    long v[] = {u->ru_maxrss,   u->ru_minflt,  u->ru_majflt, u->ru_nswap,
                u->ru_inblock,  u->ru_oublock, u->ru_msgsnd, u->ru_msgrcv,
                u->ru_nsignals, u->ru_nvcsw,   u->ru_nivcsw};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        fprintf(out, "%*s%s: %ld\n", in, "", k[i], v[i]);
}

/* The status: raw, then how it ended (kickstart writes "singalled_name";
 * the name Pegasus' parser reads, "signalled_name", is written too). */
static void put_status(FILE *out, const ks_job *j)
{
    int st = j->status;
    fprintf(out, "    status:\n      raw: %d\n", st);
    if (st < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%d   %s%s", j->saverr, j->prefix ? j->prefix : "",
                 strerror(j->saverr));
        put_kv_plain(out, 6, "failure_error", msg);
    } else if (WIFEXITED(st)) {
        fprintf(out, "      regular_exitcode: %d\n", WEXITSTATUS(st));
    } else if (WIFSIGNALED(st)) {
        const char *name = strsignal(WTERMSIG(st));
        fprintf(out, "      signalled_signal: %d\n      singalled_name: ", WTERMSIG(st));
        ksyaml_quoted(out, name);
        fputs("\n      signalled_name: ", out);
        ksyaml_quoted(out, name);
        fprintf(out, "\n      corefile: %s\n", WCOREDUMP(st) ? "true" : "false");
    } else if (WIFSTOPPED(st)) {
        fprintf(out, "      suspended_signal: %d\n      suspended_name: ", WSTOPSIG(st));
        ksyaml_quoted(out, strsignal(WSTOPSIG(st)));
        fputc('\n', out);
    }
}

static void put_job(FILE *out, const char *tag, ks_job *j)
{
    if (!j->valid) return;
    fprintf(out, "  %s:\n    start: ", tag);
    put_time(out, j->start);
    double d = tv_secs(j->finish) - tv_secs(j->start);
    fprintf(out, "\n    duration: %.3f\n", d < 0.003 ? 0.003 : d);
    if (j->pid) fprintf(out, "    pid: %d\n", (int)j->pid);
    put_usage(out, 4, &j->ru);
    put_status(out, j);
    ks_data_opts none = {0};
    ksstat_write(out, 4, "executable", &j->exe, &none);
    fputs("    argument_vector:\n", out);
    for (int i = 1; i < j->argv.n; i++) {
        fputs("      - ", out);
        ksyaml_quoted(out, j->argv.v[i]);
        fputc('\n', out);
    }
    fputs("    procs:\n", out);
}

static void put_jobids(FILE *out)
{
    fputs("  jobids:\n", out);
    const char *v;
    if ((v = getenv("CONDOR_JOBID"))) put_kv_plain(out, 4, "condor", v);
    if ((v = getenv("GLOBUS_GRAM_JOB_CONTACT"))) put_kv_plain(out, 4, "gram", v);
    static const char *const lrm[][2] = {{"SLURM_JOBID", "slurm"},
                                         {"COBALT_JOBID", "cobalt"},
                                         {"JOB_ID", "sge"},
                                         {"LSB_JOBID", "lsf"},
                                         {"PBS_JOBID", "pbs"}};
    for (size_t i = 0; i < sizeof lrm / sizeof lrm[0]; i++)
        if ((v = getenv(lrm[i][0]))) {
            put_kv_plain(out, 4, "lrmtype", lrm[i][1]);
            put_kv_plain(out, 4, "lrm", v);
            break;
        }
}

/* The host's name for hostaddr (kickstart: reverse DNS, else nothing;
 * here the node's own name then). */
static void put_hostname(FILE *out, const char *addr)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    char host[NI_MAXHOST] = "";
    if (inet_pton(AF_INET, addr, &sa.sin_addr) == 1 && strcmp(addr, "0.0.0.0") != 0)
        getnameinfo((struct sockaddr *)&sa, sizeof sa, host, sizeof host, NULL, 0, NI_NAMEREQD);
    if (!host[0] && gethostname(host, sizeof host) != 0) return;
    host[sizeof host - 1] = 0;
    put_kv_plain(out, 2, "hostname", host);
}

static void put_invocation(FILE *out, ks_run *r)
{
    fprintf(out, "- invocation: True\n  version: " KS_VERSION "\n  start: ");
    put_time(out, r->start);
    fprintf(out, "\n  duration: %.3f\n", tv_secs(r->finish) - tv_secs(r->start));
    const char *keys[] = {"transformation", "derivation", "resource", "wf-label", "wf-stamp"};
    const char *vals[] = {r->xformation, r->derivation, r->sitehandle, r->wf_label, r->wf_stamp};
    for (int i = 0; i < 5; i++)
        if (vals[i] && *vals[i]) {
            fprintf(out, "  %s: ", keys[i]);
            ksyaml_quoted(out, vals[i]);
            fputc('\n', out);
        }
    put_kv_plain(out, 2, "interface", r->prif);
    put_kv_plain(out, 2, "hostaddr", r->ipv4);
    put_hostname(out, r->ipv4);
    fprintf(out, "  pid: %d\n  uid: %u\n", (int)getpid(), (unsigned)getuid());
    char buf[4096];
    struct passwd pw, *pwp = NULL;
    if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &pwp) == 0 && pwp)
        put_kv_plain(out, 2, "user", pw.pw_name);
    fprintf(out, "  gid: %u\n", (unsigned)getgid());
    struct group gr, *grp = NULL;
    if (getgrgid_r(getgid(), &gr, buf, sizeof buf, &grp) == 0 && grp)
        put_kv_plain(out, 2, "group", gr.gr_name);
    fprintf(out, "  umask: 0o0%03o\n", (unsigned)r->umask);
}

/* ---- files, environment, limits -------------------------------------------- */

static int any_failure(const ks_run *r)
{
    return r->status || r->setup.status || r->prejob.status || r->main.status ||
           r->postjob.status || r->cleanup.status;
}

/* The KICKSTART_INTEGRITY_DATA file, as the tool that wrote it wrote it. */
static void put_integrity(FILE *out, ks_run *r)
{
    if (r->integrity.source != KS_TEMP) return;
    char buf[65536];
    ssize_t n;
    for (off_t at = 0; (n = pread(r->integrity.fd, buf, sizeof buf, at)) > 0; at += n)
        fwrite(buf, 1, (size_t)n, out);
}

static int put_files(FILE *out, ks_run *r, int full)
{
    int errors = 0;
    ks_data_opts d = {!r->omit_data || any_failure(r), r->data_size, 1};
    ks_data_opts meta = {1, SIZE_MAX, 0};
    fputs("  files:\n", out);
    for (int i = 0; i < r->icount; i++)
        errors += ksstat_write(out, 4, "initial", &r->initial_st[i], &d);
    for (int i = 0; i < r->fcount; i++)
        errors += ksstat_write(out, 4, "final", &r->final_st[i], &d);
    put_integrity(out, r);
    errors += ksstat_write(out, 4, "stdin", &r->input, &d);
    ksstat_update(&r->output);
    errors += ksstat_write(out, 4, "stdout", &r->output, &d);
    ksstat_update(&r->error);
    errors += ksstat_write(out, 4, "stderr", &r->error, &d);
    errors += ksstat_write(out, 4, "metadata", &r->metadata, &meta);
    if (full) {
        errors += ksstat_write(out, 4, "kickstart", &r->kickstart, &d);
        ksstat_update(&r->logfile);
        errors += ksstat_write(out, 4, "logfile", &r->logfile, &d);
    }
    return errors;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_environment(FILE *out)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **v = malloc(sizeof *v * (n + 1));
    if (!v) return;
    memcpy(v, environ, sizeof *v * (n + 1));
    qsort(v, n, sizeof *v, by_name);
    fputs("  environment:\n", out);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(v[i], '=');
        if (!eq) continue;
        fputs("    \"", out);
        ksyaml_quote_body(out, v[i], (size_t)(eq - v[i]));
        fputs("\": ", out);
        ksyaml_quoted(out, eq + 1);
        fputc('\n', out);
    }
    free(v);
}

/* kickstart's names: resources it has no case for are RESOURCE_N. */
static const char *const rlimit_names[] = {
    "RLIMIT_CPU",   "RLIMIT_FSIZE",      "RLIMIT_DATA",     "RLIMIT_STACK",   "RLIMIT_CORE",
    NULL,           "RLIMIT_NPROC",      "RLIMIT_NOFILE",   "RLIMIT_MEMLOCK", "RLIMIT_AS",
    "RLIMIT_LOCKS", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",    "RLIMIT_RTPRIO",
};

static void put_limit_value(FILE *out, rlim_t v)
{
    if (v == RLIM_INFINITY)
        fputs("unlimited\n", out);
    else
        fprintf(out, "%llu\n", (unsigned long long)v);
}

static void put_limits(FILE *out)
{
    fputs("  limits:\n", out);
    for (int i = 0; i < RLIMIT_NLIMITS; i++) {
        struct rlimit l;
        if (getrlimit(i, &l) != 0) continue;
        char name[32];
        if (i < (int)(sizeof rlimit_names / sizeof rlimit_names[0]) && rlimit_names[i])
            snprintf(name, sizeof name, "%s", rlimit_names[i]);
        else
            snprintf(name, sizeof name, "RESOURCE_%d", i);
        fprintf(out, "    %s_soft: ", name);
        put_limit_value(out, l.rlim_cur);
        fprintf(out, "    %s_hard: ", name);
        put_limit_value(out, l.rlim_max);
    }
}

/* jobscope's addition: the online monitoring and the main job's tree. */
static void put_monitoring(FILE *out, const ks_run *r)
{
    const ks_job *j = &r->main;
    int online = r->mon_interval > 0;
    fprintf(out, "  monitoring:\n    interval: %d\n", online ? r->mon_interval : 0);
    if (online && r->mon_url) {
        char *label = sink_redact_url(r->mon_url);
        fputs("    destination: ", out);
        ksyaml_quoted(out, label ? label : "");
        fputc('\n', out);
        free(label);
    }
    fprintf(out, "    samples: %llu\n",
            online && j->monitored ? (unsigned long long)j->mon.nsamples : 0ULL);
    if (r->mon_endpoint[0]) {
        fputs("    endpoint: ", out);
        ksyaml_quoted(out, r->mon_endpoint);
        fprintf(out, "\n    nested_reports: %lu\n    nested_processes: %lu\n", r->nested_reports,
                r->nested_procs);
    }
    if (!j->monitored || j->mon.spawn_error) return;
    const tree_sample *s = &j->mon.last;
    fprintf(out,
            "    tree:\n      utime: %.3f\n      stime: %.3f\n      max_hwm: %llu\n"
            "      peak_rss: %.0f\n      peak_vm: %.0f\n      peak_procs: %.0f\n"
            "      peak_threads: %.0f\n      total_procs: %llu\n      rchar: %llu\n"
            "      wchar: %llu\n      read_bytes: %llu\n      write_bytes: %llu\n",
            s->c.utime_us / 1e6, s->c.stime_us / 1e6, (unsigned long long)s->hwm_kb,
            s->peak_rss_kb.value, s->peak_vm_kb.value, s->peak_procs.value, s->peak_threads.value,
            (unsigned long long)s->total_procs, (unsigned long long)s->c.rchar,
            (unsigned long long)s->c.wchar, (unsigned long long)s->c.read_bytes,
            (unsigned long long)s->c.write_bytes);
}

static int write_record(FILE *out, ks_run *r, const struct rusage *self)
{
    put_invocation(out, r);
    put_job(out, "setup", &r->setup);
    put_job(out, "prejob", &r->prejob);
    put_job(out, "mainjob", &r->main);
    put_job(out, "postjob", &r->postjob);
    put_job(out, "cleanup", &r->cleanup);
    put_jobids(out);
    put_kv_plain(out, 2, "cwd", r->cwd ? r->cwd : "");
    put_usage(out, 2, self);
    if (!r->no_header) ksmachine_write(out);
    int full = any_failure(r) || r->full_info;
    int errors = put_files(out, r, full);
    if (full) {
        put_environment(out);
        put_limits(out);
    }
    put_monitoring(out, r);
    return errors;
}

int ksrecord_print(ks_run *r)
{
    int fd = r->logfile.source == KS_FILE
                 ? open(r->logfile.name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)
                 : dup(r->logfile.fd);
    if (fd < 0) {
        fprintf(stderr, "jobscope kickstart: ERROR: Unable to open output file\n");
        return -1;
    }
    FILE *out = fdopen(fd, "w");
    if (!out) {
        close(fd);
        return -1;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    ksstat_update(&r->logfile);
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    gettimeofday(&r->finish, NULL);
    int errors = write_record(out, r, &self);
    int bad = fflush(out) != 0;
    fsync(fd);
    bad |= fclose(out) != 0;
    return errors || bad ? -1 : 0;
}
