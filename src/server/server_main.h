/* server_main.h — the subcommands of build/jobscope-serve (main.c).
 * To add one: declare its entry point here and add it to SERVER_COMMANDS;
 * cli/main.c lists the names it hands over (server_subcommands). */
#ifndef JOBSCOPE_SERVER_MAIN_H
#define JOBSCOPE_SERVER_MAIN_H

#include "serve_cmd.h"
#include "report/stats.h"
#include "report/summary.h"

#define SERVER_COMMANDS                                                                            \
    {"serve", serve_main}, {"import", import_main}, {"stats", stats_main},                         \
        {"report", report_main}, {"summary", summary_main}, {NULL, NULL},

#endif
