/* sampler.c — which process-tree sampler runs (`--sampler auto|bpf|procfs`,
 * docs/bpf.md).  procfs is proctree's own: /proc files per process.  bpf is
 * the plugin jobscope-bpf.so (src/bpf), loaded with dlopen only when used so
 * that a procfs run maps none of libbpf; it becomes the proctree's reader.
 *
 * Where the job has a cgroup of its own (jobscope made it: the default as
 * root, or --cgroup), the BPF program walks that cgroup's tasks, so its cost
 * follows the job; otherwise it walks every task of the host with an
 * ancestry filter.
 *
 * Loading BPF costs about 0.1 s of CPU (the verifier, the kernel's BTF) and
 * a transient 10 MiB, which a small job sampled once a second would never
 * earn back.  So --sampler bpf loads it before the job starts (an error if
 * it cannot), and auto, as root, starts with procfs and switches to BPF once
 * sampling /proc has cost as much CPU as the load (monitor_sampler_payback):
 * the rent-or-buy rule, never more than twice the cheaper choice's cost.
 * That rule assumes BPF is the cheaper one, which its host-task walk is not
 * on a crowded host with a small job: so auto then measures BPF for a few
 * samples and goes back to procfs if it costs more per process-sample
 * (monitor_sampler_verdict): the load is spent either way. */
#include "sampler.h"
#include "../util/companion.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*bpf_reader_fn)(pid_t root, pid_t anchor, const char *cgroup_dir, proctree_reader *out,
                             char *err, size_t errlen);

static int load_bpf(proctree_reader *out, pid_t root, pid_t anchor, const char *cgdir, char *err,
                    size_t errlen)
{
    char path[4096];
    if (!util_companion("jobscope-bpf.so", path, sizeof path)) {
        snprintf(err, errlen, "the BPF sampler is not built here (jobscope --version says why)");
        return -1;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    bpf_reader_fn open_reader = (bpf_reader_fn)dlsym(h, "jobscope_bpf_reader");
    if (!open_reader || open_reader(root, anchor, cgdir, out, err, errlen) != 0) {
        if (!open_reader) snprintf(err, errlen, "%s: no jobscope_bpf_reader", path);
        dlclose(h);
        return -1;
    }
    return 0; /* the plugin stays loaded for the reader */
}

int monitor_sampler_bpf(proctree_reader *out, pid_t root, pid_t anchor, const char *cgroup_dir,
                        char *err, size_t errlen)
{
    err[0] = 0;
    memset(out, 0, sizeof *out);
    if (load_bpf(out, root, anchor, cgroup_dir, err, errlen) == 0) return 0;
    if (cgroup_dir && load_bpf(out, root, anchor, NULL, err, errlen) == 0)
        return 0; /* kernel < 6.7 */
    return -1;
}

int monitor_sampler_may_bpf(void)
{
    char path[4096];
    return geteuid() == 0 && util_companion("jobscope-bpf.so", path, sizeof path);
}

double monitor_sampler_payback(void)
{
    const char *e = getenv("JOBSCOPE_BPF_PAYBACK");
    char *end;
    double v = e ? strtod(e, &end) : 0;
    return e && end != e && *end == 0 && v >= 0 && v < 1e6 ? v : 0.1;
}

void monitor_sampler_cost_add(sampler_cost *c, uint64_t ns, uint32_t procs)
{
    if (c->seen++ == 0) { /* the first sample warms up */
        c->first_ns = ns;
        c->first_procs = procs ? procs : 1;
        return;
    }
    c->ns += ns;
    c->proc_samples += procs ? procs : 1;
}

double monitor_sampler_cost_us(const sampler_cost *c)
{
    if (c->proc_samples) return (double)c->ns / 1e3 / (double)c->proc_samples;
    return c->first_procs ? (double)c->first_ns / 1e3 / (double)c->first_procs : 0;
}

uint64_t monitor_sampler_cost_total_ns(const sampler_cost *c)
{
    return c->first_ns + c->ns;
}

int monitor_sampler_verdict(const sampler_cost *procfs, const sampler_cost *bpf)
{
    if (bpf->seen < 6) return -1;
    if (!procfs->seen) return 1; /* nothing to compare with */
    return monitor_sampler_cost_us(bpf) > monitor_sampler_cost_us(procfs) ? 0 : 1;
}
