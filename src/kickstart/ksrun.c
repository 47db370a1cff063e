/* ksrun.c — pegasus-kickstart's sequence (kickstart.h): the defaults set
 * before the command line is read (temporary files in KICKSTART_TMP, TMP,
 * TEMP, TMPDIR or /tmp; PATH from KICKSTART_PREPEND_PATH; the variables
 * the job is told: KICKSTART_INTEGRITY_DATA, KICKSTART_METADATA), then
 * after it: the working directory, the main job, -S, what kickstart exports
 * (PEGASUS_WF_LABEL, PEGASUS_XFORMATION, PEGASUS_TASK_ID, under -m
 * KICKSTART_MON_URL), the chain, -s, and the record.  A failure before the
 * chain still writes the record, with kickstart's exit status. */
#include "kickstart.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* kickstart's order of places for temporary files: each if a writable
 * directory. */
static const char *temp_dir(void)
{
    static const char *const vars[] = {"KICKSTART_TMP", "GRIDSTART_TMP", "TMP", "TEMP", "TMPDIR"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *d = getenv(vars[i]);
        struct stat st;
        if (d && *d && stat(d, &st) == 0 && S_ISDIR(st.st_mode) && access(d, W_OK | X_OK) == 0)
            return d;
    }
    return access("/tmp", W_OK | X_OK) == 0 ? "/tmp" : "/var/tmp";
}

/* KICKSTART_PREPEND_PATH goes before PATH (the job's and the search's). */
static int prepend_path(void)
{
    const char *pre = getenv("KICKSTART_PREPEND_PATH");
    if (!pre || !*pre) return 0;
    const char *path = getenv("PATH");
    if (!path || !*path) return setenv("PATH", pre, 1);
    char *both = malloc(strlen(pre) + strlen(path) + 2);
    if (!both) return -1;
    sprintf(both, "%s:%s", pre, path);
    int rc = strlen(both) >= PATH_MAX ? -1 : setenv("PATH", both, 1);
    if (rc)
        fprintf(
            stderr,
            "jobscope kickstart: New path from KICKSTART_PREPEND_PATH is larger than PATH_MAX\n");
    free(both);
    return rc;
}

/* The statinfo of kickstart itself: argv[0] as kickstart does when it is a
 * path, else the program that runs. */
static void stat_self(ks_run *r, const char *argv0)
{
    char self[PATH_MAX];
    ssize_t n = strchr(argv0, '/') ? -1 : readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) self[n] = 0;
    ksstat_file(&r->kickstart, n > 0 ? self : argv0, O_RDONLY, 0, 0);
}

int ks_init(ks_run *r, const char *argv0)
{
    memset(r, 0, sizeof *r);
    gettimeofday(&r->start, NULL);
    r->finish = r->start;
    r->umask = umask(0);
    umask(r->umask);
    r->data_size = KS_DATA_DEFAULT;
    r->kill_timeout = 5;
    r->mon_interval = -1;
    r->status = 1; /* until the chain says otherwise */
    r->kickstart_path = argv0;
    const char *tmp = temp_dir();
    stat_self(r, argv0);
    ksstat_file(&r->input, "/dev/null", O_RDONLY, 0, 0);
    ksstat_temp(&r->output, tmp, "ks.out");
    ksstat_temp(&r->error, tmp, "ks.err");
    ksstat_handle(&r->logfile, STDOUT_FILENO);
    ksstat_temp(&r->metadata, tmp, "ks.meta");
    ksstat_temp(&r->integrity, tmp, "ks.integrity");
    ksmachine_primary_if(r->prif, sizeof r->prif, r->ipv4, sizeof r->ipv4);
    if (prepend_path() != 0) return -1;
    if (r->integrity.name) setenv("KICKSTART_INTEGRITY_DATA", r->integrity.name, 1);
    if (r->metadata.name) setenv("KICKSTART_METADATA", r->metadata.name, 1);
    return 0;
}

/* ---- after the command line ------------------------------------------------ */

/* -w/-W: 0, or -1 after kickstart's message (-W makes the directory once). */
static int enter_workdir(ks_run *r)
{
    if (!r->workdir || chdir(r->workdir) == 0) return 0;
    if (r->create_dir) {
        if (mkdir(r->workdir, 0777) != 0) {
            fprintf(stderr, "jobscope kickstart: Unable to mkdir %s: %d: %s\n", r->workdir, errno,
                    strerror(errno));
            return -1;
        }
        if (chdir(r->workdir) == 0) return 0;
    }
    fprintf(stderr, "jobscope kickstart: Unable to chdir %s: %d: %s\n", r->workdir, errno,
            strerror(errno));
    return -1;
}

/* KICKSTART_WRAPPER's words, then each argument rewritten. */
static int main_args(ks_run *r, ks_args *a)
{
    char err[256];
    const char *wrapper = getenv("KICKSTART_WRAPPER");
    if (wrapper) {
        if (ksparse_line(wrapper, a, err, sizeof err) != 0) {
            fprintf(stderr, "jobscope kickstart: %s\n", err);
            return -1;
        }
        if (a->n == 0) fprintf(stderr, "jobscope kickstart: Error parsing wrapper arguments\n");
    }
    for (int i = 0; i < r->napp; i++)
        if (ksparse_arg(r->app[i], a, err, sizeof err) != 0) {
            fprintf(stderr, "jobscope kickstart: %s\n", err);
            return -1;
        }
    return 0;
}

static ks_stat *stat_list(const ks_filelist *l, int *count)
{
    *count = 0;
    if (!l->n) return NULL;
    ks_stat *v = calloc((size_t)l->n, sizeof *v);
    if (!v) return NULL;
    for (int i = 0; i < l->n; i++) {
        ksstat_file(&v[i], l->pfn[i], O_RDONLY, 0, 0);
        if (l->lfn[i]) ksstat_set_lfn(&v[i], l->lfn[i]);
    }
    *count = l->n;
    return v;
}

static void export_job(ks_run *r)
{
    if (r->wf_label) setenv("PEGASUS_WF_LABEL", r->wf_label, 1);
    if (r->xformation) setenv("PEGASUS_XFORMATION", r->xformation, 1);
    if (r->derivation) setenv("PEGASUS_TASK_ID", r->derivation, 1);
}

/* The record and the status after a failure before or in the chain. */
static int fail_with(ks_run *r, int code)
{
    ksrecord_print(r);
    return code;
}

int ks_execute(ks_run *r)
{
    if (enter_workdir(r) != 0) return fail_with(r, 127);
    ks_args a = {0};
    if (main_args(r, &a) != 0) {
        ks_args_free(&a);
        return fail_with(r, 1);
    }
    kschain_prepare(r, &r->main, &a);
    char cwd[PATH_MAX];
    r->cwd = getcwd(cwd, sizeof cwd) ? strdup(cwd) : NULL;
    if (r->main.valid != 1) {
        fprintf(stderr, "jobscope kickstart: FATAL: Unable to execute the specified binary. It "
                        "might not exist, have the correct permissions, or be of the right type "
                        "for the current system.\n");
        return fail_with(r, 127);
    }
    ksstat_update(&r->input);
    ksstat_update(&r->output);
    ksstat_update(&r->error);
    ksstat_update(&r->logfile);
    r->initial_st = stat_list(&r->initial, &r->icount);
    export_job(r);
    ksmon *mon = NULL;
    if (r->mon_interval > 0 && (mon = ksmon_start(r->mon_endpoint, sizeof r->mon_endpoint)))
        setenv("KICKSTART_MON_URL", r->mon_endpoint, 1);
    int result = kschain_run(r);
    ksmon_stop(mon, &r->nested_reports, &r->nested_procs);
    if (result < 0) return fail_with(r, 1);
    r->final_st = stat_list(&r->final, &r->fcount);
    r->status = result;
    return ksrecord_print(r) != 0 ? 1 : result;
}

void ks_free(ks_run *r)
{
    ks_stat *s[] = {&r->input,     &r->output,   &r->error,    &r->logfile,
                    &r->kickstart, &r->metadata, &r->integrity};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) ksstat_free(s[i]);
    for (int i = 0; i < r->icount; i++) ksstat_free(&r->initial_st[i]);
    for (int i = 0; i < r->fcount; i++) ksstat_free(&r->final_st[i]);
    free(r->initial_st);
    free(r->final_st);
    ks_job *j[] = {&r->setup, &r->prejob, &r->main, &r->postjob, &r->cleanup};
    for (size_t i = 0; i < sizeof j / sizeof j[0]; i++) kschain_free(j[i]);
    ksparse_filelist_free(&r->initial);
    ksparse_filelist_free(&r->final);
    free(r->cwd);
}

void ks_usage(FILE *f, const char *prog)
{
    const char *p = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    fprintf(f,
            "Usage:\t%s [-i fn] [-o fn] [-e fn] [-l fn] [-n xid] [-N did] \\\n"
            "\t[-w|-W cwd] [-R res] [-s [l=]p] [-S [l=]p] [-X] [-H] [-L lbl -T iso] \\\n"
            "\t[-B sz] [-F] [-f] [-m I [-G]] (-I fn | app [appflags])\n"
            "pegasus-kickstart's command line on jobscope (docs/kickstart.md):\n"
            " -i fn\tConnects stdin of app to file fn, default is \"/dev/null\".\n"
            " -o fn\tConnects stdout of app to file fn, default is a temporary file.\n"
            " -e fn\tConnects stderr of app to file fn, default is a temporary file.\n"
            " -l fn\tAppends the invocation record to file fn, default is stdout.\n"
            " -n xid\tProvides the TR name.\n"
            " -N did\tProvides the DV name.\n"
            " -R res\tReflects the resource handle into record.\n"
            " -B sz\tResizes the data section size for stdio capture, default is %d.\n"
            " -L lbl\tReflects the workflow label into record, no default.\n"
            " -T iso\tReflects the workflow time stamp into record, no default.\n"
            " -H\tOmit the machine section from the record.\n"
            " -I fn\tReads job and args from the file fn, one arg per line.\n"
            " -V\tDisplays the version and exit.\n"
            " -X\tMakes the application executable, no matter what.\n"
            " -w dir\tSets a different working directory dir for jobs.\n"
            " -W dir\tLike -w, but also creates the directory dir if necessary.\n"
            " -S l=p\tProvides filename pairs to stat after start, multi-option.\n"
            " \tIf the arg is prefixed with '@', it is a list-of-filenames file.\n"
            " -s l=p\tProvides filename pairs to stat before exit, multi-option.\n"
            " \tIf the arg is prefixed with '@', it is a list-of-filenames file.\n"
            " -F\tThis flag does nothing. Kept for historical reasons.\n"
            " -f\tPrint full information including environment and limits.\n"
            " \tIf the job fails, then -f is implied.\n"
            " -q\tOmit data for stdout and stderr if the job succeeds.\n"
            " -c\tAccepted (CDATA sections of the XML record).\n"
            " -k S\tSend TERM signal to job after S seconds. Default is 0, which means never.\n"
            " -K S\tSend KILL signal to job S seconds after a TERM signal. Default is 5.\n"
            " -t, -z, -Z\tAccepted (kickstart's per-process tracing; jobscope watches the whole "
            "tree).\n"
            " -m I\tOnline monitoring every I seconds to $KICKSTART_MON_URL (0 to 3600).\n"
            " -G\tGPU monitoring too, at the interval of -m.\n",
            p, KS_DATA_DEFAULT);
}
