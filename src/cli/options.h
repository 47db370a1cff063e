/* options.h — the command line of `jobscope run` and `jobscope attach`.
 *
 * One table (options.c) holds every option: its names, its argument, its
 * help text and the setter that writes it into the engine's monitor_config
 * (src/monitor/monitor.h) -- the one place where an option meets the field
 * it sets.  From the same table options_parse() reads argv, options_usage()
 * prints `--help` and options_man() writes the OPTIONS section of
 * man/jobscope-run.1.scd (tests/unit/test_options.c keeps the page equal to
 * it).  The environment (KICKSTART_MON_URL, KICKSTART_MON_INTERVAL, ...) is
 * read after argv.  A bad option is a one-line error on stderr and exit
 * status 125, the convention of env(1). */
#ifndef JOBSCOPE_OPTIONS_H
#define JOBSCOPE_OPTIONS_H

#include <stdio.h>
#include <sys/types.h>
#include "../monitor/monitor.h"
#include "../util/common.h"

#define JS_MAX_OUTPUTS MONITOR_MAX_OUTPUTS
#define JS_MAX_TAGS    64
#define JS_MAX_LIMITS  32

/* What `jobscope run/attach` hands to the engine, and the storage its
 * pointers need (they must outlive the monitor). */
typedef struct run_options {
    monitor_config cfg;
    char *tags[JS_MAX_TAGS];           /* cfg.tags: "KEY=VALUE" */
    const char *limits[JS_MAX_LIMITS]; /* cfg.limits.specs, each checked by limits_parse() */
} run_options;

/* Fills *o from argv and the environment.  Returns 0 on success, or an
 * exit status; *exit_now is set (status 0) after --help or --version. */
int options_parse(run_options *o, int attach, int argc, char **argv, int *exit_now);

/* `jobscope run --help`. */
void options_usage(FILE *f);
/* The OPTIONS section of jobscope-run(1), in scdoc, from the same table. */
void options_man(FILE *f);

/* "64K", "10M", "1G", "4GiB" -> bytes, -1 if bad (--spool-max): util/size.h. */
long long options_parse_size(const char *s);
/* The destination URL in FILE (-o @FILE), a new string; NULL + errno. */
char *options_read_url_file(const char *path);

#endif
