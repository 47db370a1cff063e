/* monitor_auto.c — `--sampler auto` for one run (the costs and the rules are
 * sampler.c's and docs/bpf.md's): switch from procfs to BPF once procfs has
 * cost as much as a load, back when BPF proves dearer, procfs for a small tree
 * when BPF is pinned, BPF again once the tree has grown.  Called from the
 * sample in monitor.c.  A load (no pinned sampler yet) runs on a thread of
 * its own, so that sampling never waits for the verifier. */
#include "monitor_priv.h"

#include <pthread.h>
#include <stdatomic.h>

/* A load of the BPF sampler on a thread of its own: the verifier and the
 * kernel's BTF take 0.4 s of CPU, and seconds on a busy host, during which
 * the sampling thread goes on reading /proc.  The thread touches nothing of
 * the monitor's: what it needs is copied in, what it made is taken once it
 * is done (monitor_auto_switch, monitor_auto_end). */
typedef struct auto_load {
    pthread_t thread;
    atomic_int done;
    pid_t root, anchor;
    char *cgroup_dir;
    double spent_s, started_mono; /* procfs's CPU when the load started */
    uint64_t samples_at_start;
    int rc;
    proctree_reader reader;
    char err[512], note[512];
} auto_load;

static void *load_main(void *arg)
{
    auto_load *l = arg;
    l->rc = monitor_sampler_bpf(&l->reader, l->root, l->anchor, l->cgroup_dir, 0, l->err,
                                sizeof l->err, l->note, sizeof l->note);
    atomic_store(&l->done, 1);
    return NULL;
}

static void load_free(auto_load *l)
{
    free(l->cgroup_dir);
    free(l);
}

/* Starts the load; 0 if it runs, -1 if no thread could (the caller loads
 * here and now). */
static int load_start(monitor *m, double spent_s)
{
    auto_load *l = calloc(1, sizeof *l);
    if (!l) return -1;
    const char *cg = monitor_job_cgroup_dir(m);
    l->root = m->opt.attach ? m->root : 0;
    l->anchor = m->opt.attach ? 0 : getpid();
    l->cgroup_dir = cg ? strdup(cg) : NULL;
    l->spent_s = spent_s;
    l->started_mono = now_mono();
    l->samples_at_start = m->nsamples;
    atomic_init(&l->done, 0);
    /* no signal of the job's or jobscope's is ever delivered to it */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = (cg && !l->cgroup_dir) ? -1 : pthread_create(&l->thread, NULL, load_main, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        load_free(l);
        return -1;
    }
    m->loading = l;
    js_log(m->opt.verbose, NULL,
           "sampler: loading bpf after %.3f s of sampling CPU; procfs samples meanwhile", spent_s);
    return 0;
}

/* The reader is in use from the next sample on. */
static void install(monitor *m, proctree_reader *r, const char *note, double spent_s)
{
    proctree_set_reader(m->tree, r);
    m->sampler_switch_ts = now_epoch();
    m->bpf_trial = 1;
    js_log(m->opt.verbose, NULL, "sampler: procfs -> bpf after %.3f s of sampling CPU, %s", spent_s,
           note);
}

/* The load on its thread is done: its reader in use, or procfs kept. */
static void load_finish(monitor *m)
{
    auto_load *l = m->loading;
    pthread_join(l->thread, NULL);
    m->loading = NULL;
    m->bpf_pending = 0;
    if (l->rc != 0) {
        js_log(m->opt.verbose, NULL, "sampler: staying with procfs: %s", l->err);
    } else {
        js_log(
            m->opt.verbose, NULL, "sampler: bpf loaded in %.2f s, while procfs took %llu samples",
            now_mono() - l->started_mono, (unsigned long long)(m->nsamples - l->samples_at_start));
        install(m, &l->reader, l->note, l->spent_s);
    }
    load_free(l);
}

/* auto: procfs until sampling it has cost what loading BPF costs, then BPF
 * (sampler.c), loaded on a thread while procfs goes on sampling.  Tried
 * once; a failure keeps procfs, said with -v. */
void monitor_auto_switch(monitor *m)
{
    if (m->loading) {
        if (atomic_load(&m->loading->done)) load_finish(m);
        return;
    }
    uint64_t spent = monitor_sampler_cost_total_ns(&m->cost_procfs);
    if (spent < m->bpf_payback_ns) return;
    /* pinned (no load to earn back): procfs's cost is known after a sample
     * past its first (which opens every file), for the comparison after */
    if (m->bpf_pinned && m->cost_procfs.seen < 3) return;
    if (!m->bpf_pinned && load_start(m, (double)spent / 1e9) == 0) return;
    /* pinned (opening it is a few bpf(2) calls), or no thread could be
     * made for the load: here and now */
    m->bpf_pending = 0;
    proctree_reader r;
    char err[512], note[512];
    if (monitor_sampler_bpf(&r, m->opt.attach ? m->root : 0, m->opt.attach ? 0 : getpid(),
                            monitor_job_cgroup_dir(m), m->bpf_pinned, err, sizeof err, note,
                            sizeof note) != 0) {
        js_log(m->opt.verbose, NULL, "sampler: staying with procfs: %s", err);
        return;
    }
    install(m, &r, note, (double)spent / 1e9);
}

/* The job is over: a load still on its thread is waited for (a load cut
 * short could leave half a pinned set behind) and its reader closed. */
void monitor_auto_end(monitor *m)
{
    auto_load *l = m->loading;
    if (!l) return;
    pthread_join(l->thread, NULL);
    m->loading = NULL;
    if (l->rc == 0 && l->reader.close) l->reader.close(l->reader.ctx);
    load_free(l);
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
