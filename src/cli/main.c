/* main.c — jobscope's entry point: dispatches the subcommands.
 *
 *   jobscope run [OPTIONS] [--] CMD [ARG...]   monitor.c
 *   jobscope attach [OPTIONS] PID              monitor.c
 *
 * Other subcommands (emit, flush, ...) register in the table below. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "options.h"
#include "monitor.h"
#include "emit.h"
#include "flush.h"

static int cmd_run(int argc, char **argv)    { return monitor_main(0, argc, argv); }
static int cmd_attach(int argc, char **argv) { return monitor_main(1, argc, argv); }

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} commands[] = {
    { "run",    cmd_run,    "run [OPTIONS] [--] CMD [ARG...]  run CMD and monitor its whole process tree" },
    { "attach", cmd_attach, "attach [OPTIONS] PID             monitor a running process tree until it ends" },
    { "emit",   emit_main,  "emit NAME VALUE [--tag K=V]... [--level N]\n"
      "                  emit --payload FILE|-        send a custom metric / payload from inside a job" },
    { "flush",  flush_main, "flush [OPTIONS] SPOOL...         re-send the events a run left in a spool" },
};

/* The server side lives in its own program, jobscope-serve (server/main.c):
 * found beside this executable (the build tree), in ../lib/jobscope beside
 * it, or in the configured library directory; $JOBSCOPE_SERVE overrides. */
#ifndef JOBSCOPE_LIBDIR
#define JOBSCOPE_LIBDIR "/usr/local/lib/jobscope"
#endif
static const struct server_command { const char *name, *help; } server_commands[] = {
    { "serve",  "serve [OPTIONS]                  the per-node telemetry service (store, OpenTSDB API, dashboard)" },
    { "import", "import [--server URL] FILE...    load event files into a running 'jobscope serve'" },
};

static int exec_server(char **argv)
{
    const char *env = getenv("JOBSCOPE_SERVE");
    if (env && *env) execv(env, argv);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            strcpy(slash, "/jobscope-serve");
            execv(exe, argv);
            strcpy(slash, "/../lib/jobscope/jobscope-serve");
            execv(exe, argv);
        }
    }
    execv(JOBSCOPE_LIBDIR "/jobscope-serve", argv);
    fprintf(stderr, "jobscope: %s: jobscope-serve not found (%s); is jobscope fully installed?\n",
            argv[1], strerror(errno));
    return JS_EXIT_ERROR;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: jobscope COMMAND [OPTIONS] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  jobscope %s\n", commands[i].help);
    for (size_t i = 0; i < sizeof server_commands / sizeof server_commands[0]; i++)
        fprintf(f, "  jobscope %s\n", server_commands[i].help);
    fprintf(f, "\n'jobscope COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return JS_EXIT_ERROR;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("jobscope %s\n", JOBSCOPE_VERSION_STR);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof server_commands / sizeof server_commands[0]; i++)
        if (!strcmp(argv[1], server_commands[i].name))
            return exec_server(argv);
    fprintf(stderr, "jobscope: unknown command '%s' (try 'jobscope --help')\n", argv[1]);
    return JS_EXIT_ERROR;
}
