/* sampler.c — which process-tree sampler runs (`--sampler auto|bpf|procfs`,
 * docs/bpf.md).  procfs is proctree's own: /proc files per process.  bpf is
 * src/bpf's sampler, installed as the proctree's reader: its programs are
 * opened where they are pinned, or loaded through the plugin jobscope-bpf.so
 * (dlopen: a procfs run, or one that finds them pinned, maps no libbpf).
 *
 * Where the job has a cgroup of its own (jobscope made it: the default as
 * root, or --cgroup), the BPF program walks that cgroup's tasks, so its cost
 * follows the job; otherwise it walks every task of the host with an
 * ancestry filter.
 *
 * Loading BPF costs about 0.4 s of CPU (the verifier, the kernel's BTF) and
 * a transient 12 MiB, so it is done once per node: `jobscope serve`, or the
 * first run that loads it, pins the programs (src/bpf/bpfpin.h) and later
 * runs open them for a few bpf(2) calls.  --sampler bpf opens (or loads)
 * it before the job starts (an error if it cannot).  auto, as root, uses a
 * pinned sampler from the first sample; without one it starts with procfs
 * and loads BPF once sampling /proc has cost as much CPU as the load
 * (monitor_sampler_payback): the rent-or-buy rule, never more than twice
 * the cheaper choice's cost.
 * That rule assumes BPF is the cheaper one, which its host-task walk is not
 * on a crowded host with a small job: so auto then measures BPF for a few
 * samples and goes back to procfs if it costs more per process-sample
 * (monitor_sampler_verdict): the load is spent either way.  Nor is BPF the
 * cheaper one for a tree of a few processes, pinned or not: its walk has a
 * fixed part (an iterator made, read and closed, a batch copy) that two
 * pread()s a process undercut.  So a pinned run that started with BPF tries
 * procfs once BPF has been measured, where the tree is small
 * (MONITOR_SMALL_TREE), keeps the cheaper, and measures BPF again (still
 * open) when the tree has doubled past that size. */
#include "sampler.h"
#include "../bpf/bpfsample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int monitor_sampler_bpf(proctree_reader *out, pid_t root, pid_t anchor, const char *cgroup_dir,
                        int pinned_only, char *err, size_t errlen, char *how, size_t howlen)
{
    err[0] = 0;
    memset(out, 0, sizeof *out);
    bpfset set;
    char why[512], dir[1024];
    if (!bpfpin_dir(dir, sizeof dir)) snprintf(dir, sizeof dir, "(pinning off)");
    int rc = bpfpin_open(&set, why, sizeof why);
    if (rc == 0) {
        snprintf(how, howlen, "from the pinned sampler in %s", dir);
    } else if (pinned_only) {
        snprintf(err, errlen, "%s", why);
        return -1;
    } else {
        char refused[512]; /* a pinned set that is there but cannot be used */
        snprintf(refused, sizeof refused, "%s", rc == -1 ? why : "");
        if (bpfpin_load(&set, 1, err, errlen, why, sizeof why) != 0) return -1;
        if (set.pinned)
            snprintf(how, howlen, "loaded and pinned in %s for later runs", dir);
        else
            snprintf(how, howlen, "loaded for this run only: %s", refused[0] ? refused : why);
    }
    if (cgroup_dir && set.fd[BPFSET_CGROUP] < 0) cgroup_dir = NULL; /* kernel < 6.7 */
    bpfsample *b = bpfsample_open_set(&set, root, anchor, cgroup_dir, err, errlen);
    if (!b) return -1;
    const proc_snap *v;
    if (bpfsample_read(b, &v) < 0 && bpfsample_read(b, &v) < 0) {
        /* one trial read (a second after the array grew): fail now, not mid-job */
        snprintf(err, errlen, "BPF: the first read of the tree failed");
        bpfsample_close(b);
        return -1;
    }
    bpfsample_reader(b, out);
    return 0;
}

int monitor_sampler_may_bpf(void)
{
    return geteuid() == 0 && bpfpin_built();
}

int monitor_sampler_pinned(void)
{
    char dir[512];
    return monitor_sampler_may_bpf() && bpfpin_dir(dir, sizeof dir) && access(dir, X_OK) == 0;
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

int monitor_sampler_verdict(const sampler_cost *was, const sampler_cost *now)
{
    if (now->seen < 6) return -1;
    if (!was->seen) return 1; /* nothing to compare with */
    return monitor_sampler_cost_us(now) > monitor_sampler_cost_us(was) ? 0 : 1;
}
