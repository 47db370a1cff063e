/* server_main.h — the subcommands of build/jobscope-serve (main.c) and the
 * modules `jobscope serve` is made of.
 * To add a subcommand: declare its entry point here and add it to
 * SERVER_COMMANDS; cli/main.c lists the names it hands over
 * (server_subcommands).  To add a module (a file with SERVER_MODULE(...)):
 * declare it here and add it to SERVER_MODULES, whose order is the order
 * of their init() (and of their routes among equals). */
#ifndef JOBSCOPE_SERVER_MAIN_H
#define JOBSCOPE_SERVER_MAIN_H

#include "serve_cmd.h"
#include "server.h"
#include "report/stats.h"
#include "report/summary.h"

extern const server_module repo_module; /* src/repo/repo_module.c: repository, dashboard */

#define SERVER_MODULES                                                                             \
    {                                                                                              \
        &repo_module, &core_module, &ingest_module, &query_module, &consume_module,                \
            &forward_module, &node_module, &peers_module, NULL                                     \
    }

#define SERVER_COMMANDS                                                                            \
    {"serve", serve_cmd}, {"import", import_main}, {"stats", stats_main}, {"report", report_main}, \
        {"summary", summary_main}, {NULL, NULL},

#endif
