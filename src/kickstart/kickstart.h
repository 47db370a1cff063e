/* kickstart.h — pegasus-kickstart, whole: the invocation record Pegasus
 * reads, the job chain around the main job, and kickstart's online
 * monitoring on jobscope's engine (docs/kickstart.md).
 *
 * The front end (src/cli/kickstart.c) parses kickstart's command line into
 * a ks_run and calls ks_execute(), which does what pegasus-kickstart's main()
 * does, in its order:
 *
 *   temporary files for stdout, stderr, metadata and integrity data
 *   (KICKSTART_TMP...), PATH from KICKSTART_PREPEND_PATH, the variables
 *   kickstart exports (ksrun.c); chdir to -w/-W; the main job's command
 *   (KICKSTART_WRAPPER, kickstart's variable rewriting: ksparse.c), its
 *   executable found and checked (kschain.c); -S files stat'ed; the chain
 *   setup, prejob, main job, postjob, cleanup with kickstart's success rules
 *   and -k/-K timeouts (kschain.c; the main job runs under the monitor,
 *   src/monitor, which also does -m's online monitoring); -s files; the
 *   record (ksrecord.c: statinfo ksstat.c, machine ksmachine.c, YAML
 *   ksyaml.c) appended to -l or stdout.
 *
 * Files: ksyaml.c (the YAML writer), ksparse.c (command lines, -I and @
 * files), ksstat.c (statinfo and captured data), kssum.c (sha256 of -s
 * files), ksmachine.c (the machine section, the primary interface),
 * kschain.c (the jobs), ksmon.c (the kickstart:// endpoint handed to the
 * job under -m), ksrecord.c (the record), ksrun.c (the sequence). */
#ifndef JOBSCOPE_KICKSTART_H
#define JOBSCOPE_KICKSTART_H

#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include "../monitor/monitor.h"

#define KS_VERSION      "3.0"  /* the record's schema version, as Pegasus 5 writes it */
#define KS_DATA_DEFAULT 262144 /* -B: characters of stdout/stderr kept */
#define KS_ARG_MAX      131072 /* longest argument after variable rewriting */

/* ---- ksyaml.c ------------------------------------------------------------ */

/* "s" with kickstart's escaping (NULL: ""). */
void ksyaml_quoted(FILE *out, const char *s);
/* The body of a double-quoted string, n bytes. */
void ksyaml_quote_body(FILE *out, const char *s, size_t n);
/* s bare as kickstart writes it, double-quoted only where bare text would
 * not read back as s. */
void ksyaml_plain(FILE *out, const char *s);
/* Characters (UTF-8 code points; an invalid byte counts one) in s. */
size_t ksyaml_count_chars(const char *s, size_t n);
/* The body of a literal block ("data: |"), each line indented; only the
 * last max_chars characters.  1 if it was truncated. */
int ksyaml_block(FILE *out, int indent, const char *s, size_t n, size_t max_chars);

/* ---- ksstat.c: a file kickstart stats (its statinfo) ---------------------- */

enum ks_source { KS_INVALID, KS_FILE, KS_HANDLE, KS_TEMP };

typedef struct ks_stat {
    enum ks_source source;
    char *name;     /* KS_FILE, KS_TEMP */
    int fd;         /* KS_HANDLE, KS_TEMP */
    int openmode;   /* KS_FILE: how the job's end opens it (O_*) */
    int truncate;   /* KS_FILE: truncate once in the working directory */
    int preserve;   /* KS_FILE (^): rename an existing file to NAME.000 first */
    char *lfn;      /* -s/-S: the logical name */
    struct stat st; /* as of the last update */
    int error;      /* errno of the last stat, 0 if it worked */
} ks_stat;

int ksstat_file(ks_stat *s, const char *name, int openmode, int truncate, int preserve);
int ksstat_handle(ks_stat *s, int fd);
/* mkstemp DIR/PREFIX.XXXXXX, close-on-exec, append mode. */
int ksstat_temp(ks_stat *s, const char *dir, const char *prefix);
void ksstat_set_lfn(ks_stat *s, const char *lfn);
/* Truncates a deferred file once, then stats it again. */
int ksstat_update(ks_stat *s);
/* The descriptor that becomes the job's fd (opened anew for a file); -1 if
 * it cannot be opened.  *opened: the caller closes it after the spawn. */
int ksstat_job_fd(const ks_stat *s, int *opened);
void ksstat_free(ks_stat *s);

typedef struct ks_data_opts {
    int include;     /* write the captured data (temporary files) */
    size_t max;      /* characters kept (-B); SIZE_MAX: all */
    int truncatable; /* 0: the whole file whatever -B says (metadata) */
} ks_data_opts;

/* The statinfo under "ID:" (for initial/final: the LFN or name), indented.
 * Returns the number of errors (a checksum that failed). */
int ksstat_write(FILE *out, int indent, const char *id, ks_stat *s, const ks_data_opts *d);

/* ---- kssum.c ------------------------------------------------------------- */

/* sha256 of the file as 64 hex digits; 0, or -1 (libcrypto missing,
 * unreadable file). *seconds: the time it took. */
int kssum_sha256(const char *path, char hex[65], double *seconds);

/* ---- ksmachine.c --------------------------------------------------------- */

/* The "machine:" section (kickstart's Linux provider), indented by 2. */
void ksmachine_write(FILE *out);
/* The primary interface's name and IPv4 address (kickstart's choice: the
 * first non-loopback interface that is up, preferring a public address);
 * "" and "0.0.0.0" if none. */
void ksmachine_primary_if(char *ifname, size_t ifsize, char *addr, size_t addrsize);

/* ---- ksparse.c ----------------------------------------------------------- */

/* A list of arguments, NULL-terminated. */
typedef struct ks_args {
    char **v;
    int n;
} ks_args;
void ks_args_free(ks_args *a);
int ks_args_push(ks_args *a, const char *s);

/* Kickstart's variable rewriting and quoting of a side job's command line
 * (KICKSTART_PREJOB, KICKSTART_WRAPPER...): words split on whitespace,
 * '...', "..." with \a \b \n \r \t \v, $VAR and ${VAR}.  0, or -1 with
 * kickstart's message in err ("Error 2: missing closing quote"). */
int ksparse_line(const char *line, ks_args *out, char *err, size_t errlen);
/* The same rewriting for one argument of the main job (already split). */
int ksparse_arg(const char *arg, ks_args *out, char *err, size_t errlen);
/* -I FILE: one argument per line (empty lines skipped).  0 or -1 + errno. */
int ksparse_argfile(const char *path, ks_args *out);

/* -s/-S: "LFN=PFN" or "PFN", or @FILE of such lines (# comments). */
typedef struct ks_filelist {
    char **lfn, **pfn; /* lfn[i] NULL: none */
    int n;
} ks_filelist;
int ksparse_filelist_add(ks_filelist *l, const char *item);
int ksparse_filelist_read(ks_filelist *l, const char *path); /* errno on failure */
void ksparse_filelist_free(ks_filelist *l);

/* ---- kstimer.c: -k/-K ---------------------------------------------------- */

typedef struct kstimer {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, stop, alarmed;
    int term, kill;        /* -k, -K seconds */
    pid_t side_pid;        /* the side job running now, 0 if none */
    const pid_t *main_pid; /* the main job's (monitor_result.pid) while it runs */
} kstimer;

/* Starts counting term_s seconds from now. */
int kstimer_start(kstimer *t, int term_s, int kill_s);
/* The side job now running (0: none); a job that starts after the timer
 * fired is signalled at once. */
void kstimer_side(kstimer *t, pid_t pid);
/* Where the running main job's pid is (NULL: none). */
void kstimer_main(kstimer *t, const pid_t *pid);
/* Whether the timeout fired. */
int kstimer_alarmed(kstimer *t);
/* Stops the timer (before the cleanup job); alarmed stays readable. */
void kstimer_stop(kstimer *t);

/* ---- kschain.c: one job of the chain ------------------------------------- */

typedef struct ks_job {
    int valid;    /* 0: none; 1: found and executable; 2: named, cannot run */
    ks_args argv; /* argv[0]: the executable's path */
    ks_stat exe;  /* its statinfo */
    struct timeval start, finish;
    pid_t pid;
    struct rusage ru;
    int status;         /* wait status; negative: failure (-127 not run) */
    int saverr;         /* errno of that failure */
    const char *prefix; /* failure message prefix */
    monitor_result mon; /* the main job: what the monitor measured */
    int monitored;      /* mon is filled */
} ks_job;

struct ks_run;
/* The job from its arguments (ownership taken): argv[0] found in the
 * working directory or on PATH, checked readable and executable (made so
 * with -X).  valid 2 and status -127 when it cannot run. */
void kschain_prepare(struct ks_run *r, ks_job *j, ks_args *argv);
/* Runs the chain with kickstart's rules (setup; prejob; main job if the
 * prejob succeeded; postjob if the main job did; cleanup always; -k/-K
 * across all but the cleanup).  Returns kickstart's result (exit code,
 * 128+signal, SIGALRM after a timeout), or -1 when a side job's command
 * line did not parse (kickstart then exits 1 with the record). */
int kschain_run(struct ks_run *r);
void kschain_free(ks_job *j);

/* ---- ksmon.c: the kickstart:// endpoint of the job ----------------------- */

typedef struct ksmon ksmon;
/* Listens on an ephemeral TCP port; *url = "kickstart://HOST:PORT". */
ksmon *ksmon_start(char *url, size_t urllen);
/* Stops it; the reports it took: *reports, from *procs distinct processes. */
void ksmon_stop(ksmon *m, unsigned long *reports, unsigned long *procs);

/* ---- the run ------------------------------------------------------------- */

typedef struct ks_run {
    /* kickstart's command line */
    const char *xformation, *derivation, *sitehandle, *wf_label, *wf_stamp;
    int no_header, full_info, omit_data, use_cdata, make_exec, trace;
    size_t data_size;               /* -B */
    int term_timeout, kill_timeout; /* -k, -K seconds */
    int mon_interval;               /* -m: -1 not given */
    int gpu;                        /* -G */
    const char *workdir;            /* -w / -W */
    int create_dir;
    ks_filelist initial, final; /* -S, -s */
    char **app;                 /* the job's argument vector */
    int napp;
    const char *kickstart_path; /* argv[0] */
    /* stdio: filled by the front end (-i -o -e -l) or by ks_execute */
    ks_stat input, output, error, logfile;
    int have_input, have_output, have_error, have_logfile;
    /* what kickstart records */
    struct timeval start, finish;
    mode_t umask;
    char prif[64], ipv4[64];
    ks_stat kickstart, metadata, integrity;
    ks_stat *initial_st, *final_st;
    int icount, fcount;
    ks_job setup, prejob, main, postjob, cleanup;
    char *cwd;
    int status;             /* kickstart's result */
    int alarmed;            /* a -k timeout fired */
    monitor_config mon;     /* the engine's config (front end: `jobscope run` options) */
    const char *mon_url;    /* the events' destination (KICKSTART_MON_URL) */
    char mon_endpoint[128]; /* kickstart:// handed to the job */
    unsigned long nested_reports, nested_procs;
    int quiet_record; /* a failure before any job: no record yet */
} ks_run;

/* Sets the defaults (temporary files, stdin /dev/null...) before the front
 * end parses the command line: as kickstart's initAppInfo. */
int ks_init(ks_run *r, const char *argv0);
/* Runs kickstart's sequence after the command line; returns the exit status. */
int ks_execute(ks_run *r);
/* Writes the record (also after an early failure); 0 or -1. */
int ksrecord_print(ks_run *r);
/* Releases everything; temporary files are removed. */
void ks_free(ks_run *r);
/* kickstart's usage text to f. */
void ks_usage(FILE *f, const char *prog);

#endif
