/* run.c — `jobscope run` / `jobscope attach`: parses the options
 * (options.c), hands each part of them to the engine as a monitor_config
 * (src/monitor/monitor.h), and runs it.  The only place where command-line
 * options meet the engine and its sources. */
#include "run.h"
#include "options.h"
#include "../monitor/monitor.h"

#include <string.h>

static void to_config(const js_options *o, monitor_config *c)
{
    memset(c, 0, sizeof *c);
    c->attach = o->attach;
    c->pid = o->pid;
    c->exit_status_fd = o->exit_status_fd;
    c->argv = o->argv;
    c->interval = o->interval;
    for (int i = 0; i < o->noutputs && i < MONITOR_MAX_OUTPUTS; i++)
        c->outputs[c->noutputs++] = o->outputs[i];
    c->sink = o->sink;
    c->job_id = o->job_id;
    c->tags = o->tags;
    c->ntags = o->ntags;
    c->summary_path = o->summary_path;
    c->quiet = o->quiet;
    c->verbose = o->verbose;
    c->wait_all = o->wait_all;
    c->flush_timeout = o->flush_timeout;
    c->kill_grace = o->kill_grace;
    c->online_off = o->online_off;
    c->null_missing = o->null_missing;
    c->no_serve = o->no_serve;
    c->cgroup.mode = o->cgroup_mode;
    c->cgroup.path = o->cgroup_path;
    c->cgroup.for_limits = o->nlimits > 0;
    c->sampler = o->sampler;
    c->limits.specs = o->limits;
    c->limits.nspecs = o->nlimits;
    c->limits.measure_only = o->measure_only;
    c->gpu.mode = o->gpu;
    c->gpu.graphics_procs = o->gpu_graphics_procs;
    c->gpu.proc_util = o->gpu_proc_util;
    c->gpu.pcie = o->gpu_pcie;
    c->gpu.all_procs = o->gpu_all_procs;
    c->metrics.telemetry_level = o->telemetry_level;
    c->metrics.scan_output = o->scan_output;
    c->metrics.strip_payloads = o->strip_payloads;
    c->metrics.payload_panorama = o->payload_panorama;
}

static int parse_config(int attach, int argc, char **argv, monitor_config *cfg, int *exit_now)
{
    static js_options opt; /* its strings outlive the monitor */
    *exit_now = 0;
    int rc = options_parse(&opt, attach, argc, argv, exit_now);
    if (rc || *exit_now) return rc;
    to_config(&opt, cfg);
    return 0;
}

int run_config(int argc, char **argv, monitor_config *cfg, int *exit_now)
{
    return parse_config(0, argc, argv, cfg, exit_now);
}

int monitor_main(int attach, int argc, char **argv)
{
    monitor_config cfg;
    int exit_now = 0;
    int rc = parse_config(attach, argc, argv, &cfg, &exit_now);
    if (rc || exit_now) return rc;
    monitor *m = monitor_new(&cfg);
    if (!m) return JS_EXIT_ERROR;
    return monitor_run(m);
}
