/* run.c — `jobscope run` / `jobscope attach`: the options (options.c, whose
 * table writes each option straight into the engine's monitor_config) and
 * the engine (src/monitor/monitor.h) that runs them.  The only place where
 * the command line meets the engine and its sources. */
#include "run.h"
#include "options.h"
#include "../monitor/monitor.h"

int run_config(int argc, char **argv, monitor_config *cfg, int *exit_now)
{
    static run_options opt; /* its strings outlive the monitor */
    *exit_now = 0;
    int rc = options_parse(&opt, 0, argc, argv, exit_now);
    if (rc || *exit_now) return rc;
    *cfg = opt.cfg;
    return 0;
}

int monitor_main(int attach, int argc, char **argv)
{
    static run_options opt; /* its strings outlive the monitor */
    int exit_now = 0;
    int rc = options_parse(&opt, attach, argc, argv, &exit_now);
    if (rc || exit_now) return rc;
    monitor *m = monitor_new(&opt.cfg);
    if (!m) return JS_EXIT_ERROR;
    return monitor_run(m);
}
