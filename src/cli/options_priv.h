/* options_priv.h — the table of run/attach options shared by the parser
 * (options.c) and the texts made from it (options_help.c: --help and the
 * man page's OPTIONS).  Private to src/cli. */
#ifndef JOBSCOPE_OPTIONS_PRIV_H
#define JOBSCOPE_OPTIONS_PRIV_H

#include "options.h"

#include <stddef.h>

typedef struct opt_def opt_def;

/* What a setter works on: the options, and argv for an option whose value
 * may be a second word (--cgroup auto). */
typedef struct opt_ctx {
    run_options *o;
    monitor_config *c;
    int attach;
    int argc;
    char **argv;
    int have_interval;
    int exit_now;
} opt_ctx;

/* 0, or the exit status (125) after one line on stderr. */
typedef int (*opt_setter)(opt_ctx *x, const opt_def *d, const char *arg);

struct opt_def {
    char short_name;  /* 0: none */
    const char *name; /* long name; NULL: short only */
    int has_arg;      /* no_argument, required_argument, optional_argument */
    const char *arg;  /* how the argument is shown ("SECONDS", "[=all]"); NULL: none */
    opt_setter set;   /* NULL: a row of text (help is printed as it is) or another
                       * spelling of an option above it (short_name/name set) */
    size_t off;       /* the int or string in run_options that set_flag/set_string write */
    const char *help; /* --help: lines separated by \n; NULL: only in the man page */
    const char *more; /* the man page: sentences after the help text */
};

/* Every option, in the order --help shows them (options.c). */
extern const opt_def option_table[];
extern const size_t option_count;

#endif
