/* monitor_auto.c — `--sampler auto` for one run (the costs and the rules are
 * sampler.c's and docs/bpf.md's): switch from procfs to BPF once procfs has
 * cost as much as a load, back when BPF proves dearer, procfs for a small tree
 * when BPF is pinned, BPF again once the tree has grown.  Called from the
 * sample in monitor.c. */
#include "monitor_priv.h"

/* auto: procfs until sampling it has cost what loading BPF costs, then BPF
 * (sampler.c).  Tried once; a failure keeps procfs, said with -v. */
void monitor_auto_switch(monitor *m)
{
    uint64_t spent = monitor_sampler_cost_total_ns(&m->cost_procfs);
    if (spent < m->bpf_payback_ns) return;
    /* pinned (no load to earn back): procfs's cost is known after a sample
     * past its first (which opens every file), for the comparison after */
    if (m->bpf_pinned && m->cost_procfs.seen < 3) return;
    m->bpf_pending = 0;
    proctree_reader r;
    char err[512], note[512];
    if (monitor_sampler_bpf(&r, m->opt.attach ? m->root : 0, m->opt.attach ? 0 : getpid(),
                            monitor_job_cgroup_dir(m), m->bpf_pinned, err, sizeof err, note,
                            sizeof note) != 0) {
        js_log(m->opt.verbose, NULL, "sampler: staying with procfs: %s", err);
        return;
    }
    proctree_set_reader(m->tree, &r);
    m->sampler_switch_ts = now_epoch();
    m->bpf_trial = 1;
    js_log(m->opt.verbose, NULL, "sampler: procfs -> bpf after %.3f s of sampling CPU, %s",
           (double)spent / 1e9, note);
}

/* BPF -> procfs; a pinned reader is parked (open: taking it back costs
 * nothing), one loaded for the run closed. */
static void to_procfs(monitor *m, uint32_t procs)
{
    if (m->bpf_pinned) {
        proctree_take_reader(m->tree, &m->parked);
    } else {
        proctree_reader none;
        memset(&none, 0, sizeof none);
        proctree_set_reader(m->tree, &none);
    }
    m->chosen_procs = procs;
}

/* auto, after the switch: back to procfs if BPF turned out dearer.  Pinned
 * and never compared (BPF from the first sample): a small tree tries
 * procfs, whose two reads a process can cost less than the BPF walk's
 * fixed part (the iterator made, read and closed, the records copied). */
void monitor_auto_revert(monitor *m, uint32_t procs)
{
    int v = monitor_sampler_verdict(&m->cost_procfs, &m->cost_bpf);
    if (v < 0) return;
    m->bpf_trial = 0;
    double bpf_us = monitor_sampler_cost_us(&m->cost_bpf),
           procfs_us = monitor_sampler_cost_us(&m->cost_procfs);
    if (v == 1 && !m->cost_procfs.seen && m->bpf_pinned && procs <= MONITOR_SMALL_TREE) {
        to_procfs(m, procs);
        m->procfs_trial = 1;
        js_log(m->opt.verbose, NULL, "sampler: trying procfs (bpf: %.2f us a process-sample)",
               bpf_us);
        return;
    }
    if (v == 1) {
        js_log(m->opt.verbose, NULL, "sampler: keeping bpf: %.2f us a process-sample against %.2f",
               bpf_us, procfs_us);
        return;
    }
    to_procfs(m, procs);
    m->sampler_revert_ts = now_epoch();
    js_log(m->opt.verbose, NULL, "sampler: bpf -> procfs: %.2f us a process-sample against %.2f",
           bpf_us, procfs_us);
}

/* Pinned, procfs on trial against BPF: the cheaper stays. */
void monitor_auto_keep_procfs(monitor *m)
{
    int v = monitor_sampler_verdict(&m->cost_bpf, &m->cost_procfs);
    if (v < 0) return;
    m->procfs_trial = 0;
    double bpf_us = monitor_sampler_cost_us(&m->cost_bpf),
           procfs_us = monitor_sampler_cost_us(&m->cost_procfs);
    if (v == 1) {
        m->sampler_revert_ts = now_epoch();
        js_log(m->opt.verbose, NULL,
               "sampler: bpf -> procfs: %.2f us a process-sample against %.2f", procfs_us, bpf_us);
        return;
    }
    proctree_set_reader(m->tree, &m->parked);
    memset(&m->parked, 0, sizeof m->parked);
    js_log(m->opt.verbose, NULL, "sampler: keeping bpf: %.2f us a process-sample against %.2f",
           bpf_us, procfs_us);
}

/* Pinned, procfs chosen for a small tree that has since doubled: BPF is
 * measured again (its cost per process falls as the tree grows). */
void monitor_auto_retry_bpf(monitor *m, uint32_t procs)
{
    if (!m->parked.read || procs <= MONITOR_SMALL_TREE || procs < 2 * m->chosen_procs) return;
    proctree_set_reader(m->tree, &m->parked);
    memset(&m->parked, 0, sizeof m->parked);
    memset(&m->cost_bpf, 0, sizeof m->cost_bpf);
    m->bpf_trial = 1;
    m->sampler_switch_ts = now_epoch();
    js_log(m->opt.verbose, NULL, "sampler: procfs -> bpf: the tree grew to %u processes",
           (unsigned)procs);
}
