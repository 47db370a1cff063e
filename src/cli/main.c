/* main.c — jobscope's entry point: dispatches the subcommands.
 *
 *   jobscope run [OPTIONS] [--] CMD [ARG...]   run.c, src/monitor/
 *   jobscope attach [OPTIONS] PID              run.c, src/monitor/
 *
 * Other subcommands (emit, flush, ...) register in the table below. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "options.h"
#include "run.h"
#include "emit.h"
#include "flush.h"
#include "../util/companion.h"
#include "dropin.h"

static int cmd_run(int argc, char **argv)
{
    return monitor_main(0, argc, argv);
}
static int cmd_attach(int argc, char **argv)
{
    return monitor_main(1, argc, argv);
}

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"run", cmd_run, "run [OPTIONS] [--] CMD [ARG...]  run CMD and monitor its whole process tree"},
    {"attach", cmd_attach,
     "attach [OPTIONS] PID             monitor a running process tree until it ends"},
    {"emit", emit_main,
     "emit NAME VALUE [--tag K=V]... [--level N]\n"
     "                  emit --payload FILE|-        send a custom metric / payload from inside a "
     "job"},
    {"flush", flush_main,
     "flush [OPTIONS] SPOOL...         re-send the events a run left in a spool"},
    {"kickstart", kickstart_main,
     "kickstart [KICKSTART OPTIONS] CMD  pegasus-kickstart's command line (docs/kickstart.md)"},
    {"monitor", pmonitor_main,
     "monitor [-g] [-i N] CMD [ARG...]  pegasus-monitor's command line (MPI ranks)"},
    {"joremon", joremon_main,
     "joremon [-pid N -interval S ...]  JoReMon's command line (docs/events.md)"},
};

/* Called through a link with another tool's name: that tool's command line. */
static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} dropin_names[] = {
    {"pegasus-kickstart", kickstart_main},
    {"pegasus-kickstart-cpu", kickstart_main}, /* the names Pegasus installs it under */
    {"pegasus-kickstart-cuda", kickstart_main},
    {"pegasus-monitor", pmonitor_main},
    {"joremon", joremon_main},
};

/* The server side lives in its own program, jobscope-serve (server/main.c):
 * found beside this executable (the build tree), in ../lib/jobscope beside
 * it, or in the configured library directory; $JOBSCOPE_SERVE overrides. */
static const struct server_command {
    const char *name, *help;
} server_commands[] = {
    {"serve", "serve [OPTIONS]                  the per-node telemetry service (store, OpenTSDB "
              "API, dashboard)"},
    {"import", "import [--server URL] FILE...    load event files into a running 'jobscope serve'"},
    {"stats", "stats DIR|FILE...|--server URL   statistics over many jobs, right-sizing advice"},
    {"report",
     "report EVENTS... [-o FILE.html]  a self-contained HTML report of jobs, --svg plots"},
    {"summary", "summary JOB|FILE [--oneline]     one job's efficiency report (as jobstats)"},
};

static int exec_server(char **argv)
{
    const char *env = getenv("JOBSCOPE_SERVE");
    char path[PATH_MAX + 64];
    if (env && *env)
        execv(env, argv);
    else if (util_companion("jobscope-serve", path, sizeof path))
        execv(path, argv);
    else
        errno = ENOENT;
    fprintf(stderr, "jobscope: %s: jobscope-serve not found (%s); is jobscope fully installed?\n",
            argv[1], strerror(errno));
    return JS_EXIT_ERROR;
}

/* --version: the version, then what this build and this machine offer. */
static int print_version(void)
{
    char path[PATH_MAX + 64];
    printf("jobscope %s\n", JOBSCOPE_VERSION_STR);
    printf("network plugin: %s\n",
           util_companion("jobscope-net.so", path, sizeof path) ? path : "not found");
    printf("server program: %s\n",
           util_companion("jobscope-serve", path, sizeof path) ? path : "not found");
    void *nvml = dlopen(getenv("JOBSCOPE_NVML_LIBRARY") ? getenv("JOBSCOPE_NVML_LIBRARY")
                                                        : "libnvidia-ml.so.1",
                        RTLD_LAZY | RTLD_LOCAL);
    printf("nvml: %s\n",
           nvml ? "libnvidia-ml.so.1 loadable" : "not found (NVIDIA GPUs not monitored)");
    if (nvml) dlclose(nvml);
    int v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
    int v1 =
        access("/sys/fs/cgroup/memory", F_OK) == 0 || access("/sys/fs/cgroup/cpuacct", F_OK) == 0;
    printf("cgroups: %s\n", v1 && !v2 ? "v1" : v2 && !v1 ? "v2" : v1 ? "hybrid (v1 + v2)" : "none");
    if (util_companion("jobscope-bpf.so", path, sizeof path))
        printf("samplers: procfs, bpf (%s; needs root and kernel BTF)\n", path);
    else
        printf("samplers: procfs (bpf: not built: needs clang, bpftool, libbpf and kernel BTF)\n");
    return 0;
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
    const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    for (size_t i = 0; i < sizeof dropin_names / sizeof dropin_names[0]; i++)
        if (!strcmp(self, dropin_names[i].name)) return dropin_names[i].fn(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return JS_EXIT_ERROR;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        return print_version();
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof server_commands / sizeof server_commands[0]; i++)
        if (!strcmp(argv[1], server_commands[i].name)) return exec_server(argv);
    fprintf(stderr, "jobscope: unknown command '%s' (try 'jobscope --help')\n", argv[1]);
    return JS_EXIT_ERROR;
}
