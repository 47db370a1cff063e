/* main.c — entry point of build/jobscope-serve, the server side of jobscope.
 *
 * `jobscope serve|import|report|stats ...` executes this program (see
 * cli/main.c), so the monitor never links the store, the HTTP server or the
 * dashboard.  Each subcommand registers one line in the table below; its
 * implementation lives in its own folder (server/, report/, ...).  The
 * modules of `jobscope serve` are listed here too: the server layer knows
 * no module of the views above it. */
#include <stdio.h>
#include <string.h>
#include "server_main.h"

static const server_module *const modules[] = SERVER_MODULES;

static int serve_cmd(int argc, char **argv)
{
    return serve_main(argc, argv, modules);
}

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
} commands[] = {SERVER_COMMANDS};

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].name && !strcmp(name, commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "jobscope: unknown command '%s' (try 'jobscope --help')\n", name);
    return 125;
}
