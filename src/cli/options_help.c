/* options_help.c — the texts made from the table of run/attach options
 * (options_priv.h): --help, and the OPTIONS section of
 * man/jobscope-run.1.scd in scdoc (tests/helpers/options_man rewrites it;
 * test_options checks that it is exactly this), so that neither can drift
 * from what the parser takes. */
#include "options_priv.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* "  -i, --interval SECONDS" / "      --format FMT" / "  -m N" */
static int option_left(char *out, size_t n, const opt_def *d)
{
    const char *sep = d->arg && d->arg[0] != '[' ? " " : "";
    const char *arg = d->arg ? d->arg : "";
    if (d->short_name && d->name)
        return snprintf(out, n, "  -%c, --%s%s%s", d->short_name, d->name, sep, arg);
    if (d->short_name) return snprintf(out, n, "  -%c%s%s", d->short_name, sep, arg);
    return snprintf(out, n, "      --%s%s%s", d->name, sep, arg);
}

void options_usage(FILE *f)
{
    fputs("usage: jobscope run [OPTIONS] [--] CMD [ARG...]\n"
          "       jobscope attach [OPTIONS] PID\n"
          "\n"
          "Runs CMD (or watches the running process PID) and samples the resource usage\n"
          "of its whole process tree -- every descendant, daemons and short-lived\n"
          "processes included -- writing JSON events (kickstart.inv.online samples, a\n"
          "start event and an end-of-job record). Exit status: CMD's own (128+N if\n"
          "killed by signal N); 125 jobscope error, 126 CMD not executable, 127 not found.\n"
          "\n",
          f);
    for (size_t i = 0; i < option_count; i++) {
        const opt_def *d = &option_table[i];
        if (!d->short_name && !d->name) { /* a paragraph */
            fprintf(f, "%s\n", d->help);
            continue;
        }
        if (!d->help) continue; /* said in another option's help */
        char left[96];
        int n = option_left(left, sizeof left, d);
        fprintf(f, "%s%*s", left, n < 26 ? 26 - n : 2, "");
        for (const char *h = d->help; *h;) {
            size_t l = strcspn(h, "\n");
            fprintf(f, "%.*s\n", (int)l, h);
            h += l;
            if (*h) fprintf(f, "%26s", ""), h++;
        }
    }
    fputs("\n"
          "Environment: KICKSTART_MON_URL (destination when no -o is given),\n"
          "KICKSTART_MON_INTERVAL (interval when no -i/-m), PEGASUS_WF_UUID, PEGASUS_WF_LABEL,\n"
          "PEGASUS_DAG_JOB_ID, CONDOR_JOBID, PEGASUS_XFORMATION, PEGASUS_TASK_ID, PEGASUS_SITE\n"
          "and MPI rank variables (annotations), SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, JOB_ID\n"
          "(SGE), COBALT_JOBID, FLUX_JOB_ID (job ids), JOBSCOPE_TELEMETRY_LEVEL.\n"
          "Fields: docs/events.md; custom metrics: docs/metrics.md; cgroups and\n"
          "limits: docs/cgroups.md.\n",
          f);
}

/* scdoc: '*' starts bold, '_' at the start of a word underlines; a
 * backslash keeps them literal. */
static void man_text(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '*' || s[i] == '\\' ||
            (s[i] == '_' && (i == 0 || !isalnum((unsigned char)s[i - 1]))))
            fputc('\\', f);
        fputc(s[i], f);
    }
}

/* An argument in capitals is a placeholder (underlined); a word shown in
 * lower case is typed as it is. */
static void man_arg(FILE *f, const char *arg)
{
    int placeholder = 1;
    for (const char *c = arg; *c; c++)
        if (islower((unsigned char)*c)) placeholder = 0;
    if (arg[0] != '[') fputc(' ', f);
    if (placeholder) fputc('_', f);
    man_text(f, arg, strlen(arg));
    if (placeholder) fputc('_', f);
}

void options_man(FILE *f)
{
    fputs("# OPTIONS\n", f);
    for (size_t i = 0; i < option_count; i++) {
        const opt_def *d = &option_table[i];
        if (!d->short_name && !d->name) continue; /* --help's paragraphs */
        fputc('\n', f);
        if (d->short_name) fprintf(f, "*-%c*", d->short_name);
        if (d->short_name && d->name) fputs(", ", f);
        if (d->name) fprintf(f, "*--%s*", d->name);
        if (d->arg) man_arg(f, d->arg);
        fputs("\n\t", f);
        /* the help as one sentence: capital first, full stop last */
        const char *h = d->help ? d->help : "";
        size_t n = strlen(h);
        if (n) fputc(toupper((unsigned char)h[0]), f);
        for (size_t k = 1; k < n; k++) {
            size_t l = strcspn(h + k, "\n");
            man_text(f, h + k, l);
            k += l;
            if (k < n) fputc(' ', f);
        }
        if (n && h[n - 1] != '.') fputc('.', f);
        if (d->more) {
            if (n) fputc(' ', f);
            man_text(f, d->more, strlen(d->more));
        }
        fputc('\n', f);
    }
}
