/* limits_source.c — the "limits" source (source.h): enforces --limit.
 *
 * Every sample is checked against the tree (proc/proctree.h) and, where the
 * cgroup source has one, the cgroup figures.  In a cgroup jobscope made,
 * the kernel also enforces: memory.max / memory.limit_in_bytes for
 * `memory` (a spike between samples ends in the cgroup's OOM killer, seen
 * at the next sample through oom_kill) and pids.max for `procs` (a fork
 * bomb is refused by fork(), seen through pids.events).  A limit exceeded
 * gives one "jobscope.limit" event; unless --measure-only, the monitor is
 * asked to SIGTERM the whole tree (ctx->request_kill), the cgroup's
 * processes are signalled too, and SIGKILL follows after --kill-grace. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "limits.h"
#include "../source.h"

extern const source_ops limits_source_ops;
#include "../cgroup/cgroup.h"
#include "../util/log.h"

typedef struct limsrc {
    source base;
    js_limits lim;
    int measure_only, verbose, quiet, run_mode;
    double grace;
    unsigned exceeded; /* bit per limit */
    double value[LIM_N], ts[LIM_N], elapsed[LIM_N];
    const char *how[LIM_N]; /* "sample", "oom_kill", "fork_refused" */
    int enforced_mem, enforced_pids;
    uint64_t oom_base, pids_base;
    int killed;
    double kill_mono;
    mset ev; /* a jobscope.limit event */
} limsrc;

static source *limsrc_open(monitor_ctx *ctx, const void *config)
{
    const limits_config *o = config;
    if (!o->nspecs) return NULL;
    limsrc *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    for (int i = 0; i < o->nspecs; i++) {
        char err[256];
        if (limits_parse(o->specs[i], &s->lim, err, sizeof err) < 0) { /* options.c checked */
            js_log(1, NULL, "%s", err);
            free(s);
            return NULL;
        }
    }
    s->measure_only = o->measure_only;
    s->verbose = ctx->verbose;
    s->quiet = ctx->quiet;
    s->run_mode = ctx->run_mode;
    s->grace = ctx->kill_grace;
    mset_init(&s->ev);
    s->base.ops = &limits_source_ops;
    return &s->base;
}

/* After the spawn (jobscope has left the job's cgroup, so its own threads
 * do not count against pids.max): let the kernel enforce what it can. */
static void limsrc_start(source *src, monitor_ctx *ctx)
{
    limsrc *s = (limsrc *)src;
    int owned = 0;
    cgroup *cg = cgroup_source_cgroup(ctx, &owned);
    if (!cg || !owned || s->measure_only) return;
    cg_stats st;
    if (cg->ops->read(cg, &st) == 0) {
        s->oom_base = st.mem_oom_kill;
        s->pids_base = st.pids_max_events;
    }
    if ((s->lim.set & (1u << LIM_MEMORY)) &&
        cg->ops->set_memory_max(cg, (uint64_t)s->lim.max[LIM_MEMORY]) == 0)
        s->enforced_mem = 1;
    if ((s->lim.set & (1u << LIM_PROCS)) &&
        cg->ops->set_pids_max(cg, (uint64_t)s->lim.max[LIM_PROCS]) == 0)
        s->enforced_pids = 1;
    js_log(s->verbose, "limits", "kernel enforces%s%s in cgroup %s",
           s->enforced_mem ? " memory" : "", s->enforced_pids ? " procs" : "", cg->path);
}

static void violation(limsrc *s, monitor_ctx *ctx, const tree_sample *ts, int k, double v,
                      const char *how)
{
    s->exceeded |= 1u << k;
    s->value[k] = v;
    s->ts[k] = ts->ts;
    s->elapsed[k] = ts->elapsed;
    s->how[k] = how;
    mset *e = &s->ev;
    mset_clear(e, EV_LIMIT, ts->ts);
    mset_label_num(e, "pid", ctx->root);
    mset_put_str(e, "limit", limits_name(k));
    mset_put_num(e, "max", s->lim.max[k]);
    mset_put_num(e, "value", v);
    mset_put_str(e, "unit", limits_unit(k));
    mset_put_fixed(e, "elapsed", ts->elapsed, 3);
    mset_put_str(e, "detected_by", how);
    mset_put_str(e, "action", s->measure_only ? "report" : "kill");
    ctx->emit(ctx, e);
    if (!s->quiet && (s->verbose || !s->measure_only)) /* -q: the event says it */
        js_log(1, NULL, "limit %s=%.10g (%s) exceeded after %.1f s: %.10g (%s)%s", limits_name(k),
               s->lim.max[k], limits_unit(k), ts->elapsed, v,
               !strcmp(how, "sample")     ? "sampled"
               : !strcmp(how, "oom_kill") ? "the kernel's OOM killer hit the cgroup limit"
                                          : "the kernel refused a fork at the cgroup limit",
               s->measure_only ? "; measure only" : "; stopping the job");
    if (!s->measure_only && !s->killed) {
        s->killed = 1;
        s->kill_mono = now_mono();
        ctx->request_kill(ctx, limits_name(k));
        cgroup_source_kill(ctx, SIGTERM);
    }
}

static double maxd(double a, double b)
{
    return a > b ? a : b;
}

static void limsrc_sample(source *src, monitor_ctx *ctx, const tree_sample *ts, mset *ev)
{
    limsrc *s = (limsrc *)src;
    const cg_stats *st = cgroup_source_stats(ctx);
    for (int k = 0; k < LIM_N; k++) {
        if (!(s->lim.set & (1u << k)) || (s->exceeded & (1u << k))) continue;
        double v = 0, max = s->lim.max[k];
        const char *how = "sample";
        int hit = 0;
        switch (k) {
        case LIM_MEMORY:
            if (st && (st->have & CG_HAVE_MEM)) {
                /* what the kernel charges, less the page cache it can drop */
                double file = (st->have & CG_HAVE_MEM_STAT)
                                  ? (double)st->mem_file - (double)st->mem_shmem
                                  : 0;
                v = maxd((double)st->mem_current - maxd(file, 0), 0);
                if (s->enforced_mem && (st->have & CG_HAVE_OOM_KILL) &&
                    st->mem_oom_kill > s->oom_base) {
                    hit = 1;
                    how = "oom_kill";
                    if (st->have & CG_HAVE_MEM_PEAK) v = maxd(v, (double)st->mem_peak);
                }
            } else {
                v = (double)(ts->rss_kb + ts->swap_kb) * 1024;
            }
            break;
        case LIM_RSS:
            v = (double)ts->rss_kb * 1024;
            break;
        case LIM_WALL:
            v = ts->elapsed;
            break;
        case LIM_CPU:
            v = (double)(ts->c.utime_us + ts->c.stime_us) / 1e6;
            if (st && (st->have & CG_HAVE_CPU)) v = maxd(v, (double)st->cpu_usage_us / 1e6);
            break;
        case LIM_PROCS:
            v = ts->procs;
            if (s->enforced_pids && st && (st->have & CG_HAVE_PIDS) &&
                st->pids_max_events > s->pids_base) {
                hit = 1; /* the kernel refused a fork: the job wanted more */
                how = "fork_refused";
                v = maxd(v, max + 1);
            }
            break;
        case LIM_DISK_WRITE:
            v = (double)ts->c.write_bytes;
            if (st && (st->have & CG_HAVE_IO)) v = maxd(v, (double)st->io_wbytes);
            break;
        }
        if (hit || v > max) violation(s, ctx, ts, k, v, how);
    }
    if (s->killed && now_mono() >= s->kill_mono + s->grace) cgroup_source_kill(ctx, SIGKILL);
}

/* A still job's sample: the checks run (the wall clock moves), the sample
 * gets no values from this source. */
static int limsrc_again(source *src, monitor_ctx *ctx, const tree_sample *ts)
{
    limsrc_sample(src, ctx, ts, NULL);
    return 1;
}

/* Without a cgroup of its own: the tree members of the last sample that
 * outlived the main process (daemons ignoring SIGTERM) get SIGKILL after
 * the grace period -- only those proven to be the same processes still
 * (proctree_kill): a member's pid may belong to someone else by then.
 * (With a cgroup, the cgroup source sweeps it.) */
static void limsrc_stop(source *src, monitor_ctx *ctx)
{
    limsrc *s = (limsrc *)src;
    int owned = 0;
    if (!s->killed || (cgroup_source_cgroup(ctx, &owned) && owned)) return;
    for (;;) {
        if (proctree_kill(ctx->tree, 0) == 0) break; /* none left */
        if (now_mono() >= s->kill_mono + s->grace) {
            proctree_kill(ctx->tree, SIGKILL);
            break;
        }
        if (s->run_mode)
            while (waitpid(-1, NULL, WNOHANG) > 0) {}
        usleep(20000);
    }
    if (s->run_mode) {
        usleep(10000);
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
    }
}

static void limsrc_record(source *src, monitor_ctx *ctx, mset *rec)
{
    limsrc *s = (limsrc *)src;
    mset_open_arr(rec, "limits_exceeded");
    for (int k = 0; k < LIM_N; k++)
        if (s->exceeded & (1u << k)) mset_put_str(rec, NULL, limits_name(k));
    mset_close(rec);
    mset_open_obj(rec, "limits");
    mset_put_bool(rec, "measure_only", s->measure_only);
    mset_put_fixed(rec, "kill_grace", s->grace, 3);
    mset_open_obj(rec, "max");
    for (int k = 0; k < LIM_N; k++)
        if (s->lim.set & (1u << k)) mset_put_num(rec, limits_name(k), s->lim.max[k]);
    mset_close(rec);
    mset_open_arr(rec, "enforced_by_kernel");
    if (s->enforced_mem) mset_put_str(rec, NULL, "memory");
    if (s->enforced_pids) mset_put_str(rec, NULL, "procs");
    mset_close(rec);
    mset_open_arr(rec, "violations");
    for (int k = 0; k < LIM_N; k++) {
        if (!(s->exceeded & (1u << k))) continue;
        mset_open_obj(rec, NULL);
        mset_put_str(rec, "limit", limits_name(k));
        mset_put_num(rec, "value", s->value[k]);
        mset_put_num(rec, "max", s->lim.max[k]);
        mset_put_str(rec, "unit", limits_unit(k));
        mset_put_fixed(rec, "ts", s->ts[k], 6);
        mset_put_fixed(rec, "elapsed", s->elapsed[k], 3);
        mset_put_str(rec, "detected_by", s->how[k]);
        mset_close(rec);
    }
    mset_close(rec);
    mset_close(rec);
}

static void limsrc_close(source *src)
{
    limsrc *s = (limsrc *)src;
    mset_free(&s->ev);
    free(s);
}

const source_ops limits_source_ops = {
    .name = "limits",
    .open = limsrc_open,
    .start = limsrc_start,
    .sample = limsrc_sample,
    .again = limsrc_again,
    .stop = limsrc_stop,
    .record = limsrc_record,
    .close = limsrc_close,
};
