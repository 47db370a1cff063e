/* tree_metrics.c — see tree_metrics.h. */
#include "tree_metrics.h"
#include "../event/event.h"

void tree_metrics_fill(mset *m, const tree_sample *s, pid_t root, const char *exe, int null_missing)
{
    mset_clear(m, EV_SAMPLE, s->ts);
    mset_label_num(m, "pid", root);
    mset_label_str(m, "exe", exe, 0);
    mset_label_str(m, "cmd", s->root_cmd, 1);
    mset_label_str(m, "cwd", s->root_cwd, 1);
    mset_label_str(m, "user", s->user, 1);
    mset_f64(m, M_ELAPSED, s->elapsed);
    mset_u64(m, M_UTIME, s->c.utime_us);
    mset_u64(m, M_STIME, s->c.stime_us);
    if (s->iowait_valid)
        mset_u64(m, M_IOWAIT, s->c.iowait_us);
    else if (null_missing)
        mset_null(m, M_IOWAIT);
    else
        mset_missing(m, M_IOWAIT); /* kickstart: a number, 0 when not measured */
    mset_u64(m, M_BREAD, s->c.read_bytes);
    mset_u64(m, M_BWRITE, s->c.write_bytes);
    mset_u64(m, M_RCHAR, s->c.rchar);
    mset_u64(m, M_WCHAR, s->c.wchar);
    mset_u64(m, M_SYSCR, s->c.syscr);
    mset_u64(m, M_SYSCW, s->c.syscw);
    mset_u64(m, M_READ_BYTES, s->c.read_bytes);
    mset_u64(m, M_WRITE_BYTES, s->c.write_bytes);
    mset_u64(m, M_CANCELLED_WRITE_BYTES, s->c.cancelled_write_bytes);
    mset_u64(m, M_MINFLT, s->c.minflt);
    mset_u64(m, M_MAJFLT, s->c.majflt);
    mset_u64(m, M_NVCSW, s->c.nvcsw);
    mset_u64(m, M_NIVCSW, s->c.nivcsw);
    /* no process alive (the final sample): the gauges of the last sample
     * that saw one, not a drop to 0 (proctree.h, tree_alive) */
    const tree_alive now = {s->procs, s->threads, s->rss_kb, s->vm_kb, s->swap_kb};
    const tree_alive *g = s->procs || !s->alive.procs ? &now : &s->alive;
    mset_u64(m, M_VM, g->vm_kb);
    mset_u64(m, M_RSS, g->rss_kb);
    mset_u64(m, M_SWAP, g->swap_kb);
    mset_u64(m, M_PROCS, g->procs);
    mset_u64(m, M_THREADS, g->threads);
    mset_u64(m, M_ZOMBIES, s->zombies);
    mset_f64(m, M_CPU_PERCENT, s->cpu_percent);
    mset_u64(m, M_MAX_HWM, s->hwm_kb);
    mset_u64(m, M_TOTAL_PROCS, s->total_procs);
    mset_u64(m, M_BSEND, 0);
    mset_u64(m, M_BRECV, 0);
    mset_f64(m, M_ROOT_START, s->root_start);
    mset_f64(m, M_PEAK_CPU_PERCENT, s->peak_cpu_percent.value);
    mset_f64(m, M_PEAK_RSS, s->peak_rss_kb.value);
}
