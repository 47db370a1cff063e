/* options.h — the command line of `jobscope run` and `jobscope attach`.
 *
 * options_parse() fills a js_options from argv and the environment
 * (KICKSTART_MON_URL, KICKSTART_MON_INTERVAL, ...).  A bad option is a one-
 * line error on stderr and exit status 125, the convention of env(1). */
#ifndef JOBSCOPE_OPTIONS_H
#define JOBSCOPE_OPTIONS_H

#include <stdio.h>
#include <sys/types.h>
#include "../sink/sink.h"

#define JOBSCOPE_VERSION_STR "0.1.0"

#define JS_EXIT_ERROR    125   /* jobscope's own failure */
#define JS_EXIT_NOEXEC   126   /* command found but not executable */
#define JS_EXIT_NOTFOUND 127   /* command not found */

#define JS_MAX_OUTPUTS 16
#define JS_MAX_TAGS    64

typedef struct js_options {
    int     attach;               /* 0: run, 1: attach */
    pid_t   pid;                  /* attach: the pid to watch */
    char  **argv;                 /* run: the command and its arguments */
    double  interval;             /* seconds, >= 0.01 */
    const char *outputs[JS_MAX_OUTPUTS];
    int     noutputs;
    enum sink_format format;
    const char *job_id;
    char   *tags[JS_MAX_TAGS];    /* "KEY=VALUE" */
    int     ntags;
    const char *summary_path;
    int     quiet, verbose;
    int     wait_all;             /* run: wait for every descendant, not just the main process */
    double  flush_timeout;
    double  kill_grace;           /* seconds between SIGTERM and SIGKILL (limits) */
    sink_options sink;            /* passed to every sink */
} js_options;

/* Returns 0 on success, or an exit status (0 for --help/--version). */
int options_parse(js_options *o, int attach, int argc, char **argv, int *exit_now);

void options_usage(FILE *f);

#endif
