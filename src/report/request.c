/* request.c — a resource request in HTCondor, Slurm and Pegasus syntax (see
 * request.h).  HTCondor: request_memory in MiB, allowed_execute_duration in
 * seconds, gpus_minimum_memory in MiB; Slurm: --mem in MiB, --time as
 * HH:MM:SS; Pegasus profiles: memory MiB, runtime seconds. */
#include "report/request.h"
#include "report/jobdata.h"

#include <math.h>
#include <stdio.h>

#define MIB 1048576.0

jd_request jd_request_make(double mem, double cores, double wall, double gpus, double gpu_mem,
                           double margin)
{
    jd_request r;
    r.mem = isnan(mem) ? NAN : ceil(mem * (1 + margin) / MIB) * MIB;
    r.cores = isnan(cores) ? NAN : fmax(1, cores);
    r.wall = isnan(wall) ? NAN : ceil(wall * (1 + margin) / 60) * 60;
    r.gpus = isnan(gpus) ? 0 : ceil(gpus - 1e-9);
    r.gpu_mem = (isnan(gpu_mem) || r.gpus == 0) ? NAN : ceil(gpu_mem * (1 + margin) / MIB) * MIB;
    r.tasks = 0;
    return r;
}

/* The CPUs of a node: those of a task times the tasks. */
static double node_cpus(const jd_request *r)
{
    return r->cores * (r->tasks > 1 ? r->tasks : 1);
}

void jd_fmt_bytes(double v, char *buf, size_t len)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (!isfinite(v)) {
        snprintf(buf, len, "-");
        return;
    }
    int k = 0;
    double a = fabs(v);
    while (a >= 1024 && k < 5) a /= 1024, v /= 1024, k++;
    snprintf(buf, len, a >= 100 || k == 0 ? "%.0f %s" : "%.1f %s", v, u[k]);
}

void jd_fmt_hms(double s, char *buf, size_t len)
{
    long t = isfinite(s) && s > 0 ? (long)s : 0;
    snprintf(buf, len, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

void jd_request_htcondor(const jd_request *r, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len,
                                "request_memory = %.0fM\nrequest_cpus = %.0f\n"
                                "allowed_execute_duration = %.0f\n",
                                r->mem / MIB, node_cpus(r), r->wall);
    if (r->gpus > 0 && n < len) {
        n += (size_t)snprintf(buf + n, len - n, "request_gpus = %.0f\n", r->gpus);
        if (!isnan(r->gpu_mem) && n < len)
            snprintf(buf + n, len - n, "gpus_minimum_memory = %.0f\n", r->gpu_mem / MIB);
    }
}

void jd_request_slurm(const jd_request *r, char *buf, size_t len)
{
    char hms[32];
    jd_fmt_hms(r->wall, hms, sizeof hms);
    char tasks[48] = "";
    if (r->tasks > 1) snprintf(tasks, sizeof tasks, "--ntasks-per-node=%.0f ", r->tasks);
    size_t n = (size_t)snprintf(buf, len, "--mem=%.0fM %s--cpus-per-task=%.0f --time=%s",
                                r->mem / MIB, tasks, r->cores, hms);
    if (r->gpus > 0 && n < len) snprintf(buf + n, len - n, " --gres=gpu:%.0f", r->gpus);
}

void jd_request_pegasus(const jd_request *r, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len,
                                "profile pegasus \"memory\" \"%.0f\"\n"
                                "profile pegasus \"cores\" \"%.0f\"\n"
                                "profile pegasus \"runtime\" \"%.0f\"\n",
                                r->mem / MIB, node_cpus(r), r->wall);
    if (r->gpus > 0 && n < len)
        snprintf(buf + n, len - n, "profile pegasus \"gpus\" \"%.0f\"\n", r->gpus);
}

static json_t *jreq_num(double v)
{
    return isfinite(v) ? json_real(v) : jd_null();
}

json_t *jd_request_json(const jd_request *r)
{
    char buf[512];
    json_t *o = json_object();
    json_object_set_new(o, "memory_bytes", jreq_num(r->mem));
    json_object_set_new(o, "cores",
                        isfinite(r->cores) ? json_integer((json_int_t)r->cores) : jd_null());
    json_object_set_new(o, "wall_seconds", jreq_num(r->wall));
    json_object_set_new(o, "gpus", json_integer((json_int_t)r->gpus));
    json_object_set_new(o, "gpu_memory_bytes", jreq_num(r->gpu_mem));
    if (r->tasks > 1) json_object_set_new(o, "tasks_per_node", json_integer((json_int_t)r->tasks));
    jd_request_htcondor(r, buf, sizeof buf);
    json_object_set_new(o, "htcondor", json_string(buf));
    jd_request_slurm(r, buf, sizeof buf);
    json_object_set_new(o, "slurm", json_string(buf));
    jd_request_pegasus(r, buf, sizeof buf);
    json_object_set_new(o, "pegasus", json_string(buf));
    return o;
}
