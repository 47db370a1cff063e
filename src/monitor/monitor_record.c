/* monitor_record.c — the end of a monitored job: the jobscope.end record
 * (totals, peaks, rusage, exit status, cores against the allocation), the
 * one-paragraph summary on stderr, and monitor_result for the caller. */
#include "monitor_priv.h"

static void put_peak(mset *e, const char *key, const tree_peak *p, int decimals)
{
    mset_open_obj(e, key);
    mset_put_fixed(e, "value", p->value, decimals);
    mset_put_fixed(e, "ts", p->ts, 6);
    mset_close(e);
}

static void put_rusage(mset *e, const char *key, const struct rusage *r)
{
    mset_open_obj(e, key);
    mset_put_fixed(e, "utime", (double)r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6, 6);
    mset_put_fixed(e, "stime", (double)r->ru_stime.tv_sec + r->ru_stime.tv_usec / 1e6, 6);
    mset_put_i64(e, "maxrss", r->ru_maxrss);
    mset_put_i64(e, "minflt", r->ru_minflt);
    mset_put_i64(e, "majflt", r->ru_majflt);
    mset_put_i64(e, "inblock", r->ru_inblock);
    mset_put_i64(e, "oublock", r->ru_oublock);
    mset_put_i64(e, "nvcsw", r->ru_nvcsw);
    mset_put_i64(e, "nivcsw", r->ru_nivcsw);
    mset_close(e);
}

int monitor_exit_status(const monitor *m)
{
    if (m->opt.attach && !m->have_status) return m->stop_signal ? 128 + m->stop_signal : 0;
    if (WIFEXITED(m->status)) return WEXITSTATUS(m->status);
    if (WIFSIGNALED(m->status)) return 128 + WTERMSIG(m->status);
    return JS_EXIT_ERROR;
}

/* The CPUs the job was given (the start event's alloc_cpus), against
 * which the end record and the closing summary measure its efficiency, as
 * the views do; the CPUs jobscope may run on when nothing was detected. */
static double alloc_cpus(const monitor *m)
{
    if (m->alloc.cpus > 0) return m->alloc.cpus;
    return hostinfo_cpus_available();
}

void monitor_emit_record(monitor *m)
{
    const tree_sample *s = &m->last;
    mset *b = &m->ev;
    double duration = m->end_ts - m->start_ts;
    mset_clear(b, EV_END, now_epoch());
    mset_label_num(b, "pid", m->root);
    mset_put_str(b, "exe", m->exe);
    mset_put_str(b, "cmd", m->cmd);
    int known = !m->opt.attach || m->have_status; /* a wait status to report */
    if (!known) {
        mset_put_str(b, "exit_type", m->stop_signal ? "detached" : "ended");
        mset_put_null(b, "exit_code");
        mset_put_null(b, "signal");
    } else if (m->kill_reason[0]) {
        mset_put_str(b, "exit_type", "limit");
    } else {
        mset_put_str(b, "exit_type", WIFSIGNALED(m->status) ? "signaled" : "exited");
    }
    if (known) {
        if (WIFEXITED(m->status))
            mset_put_i64(b, "exit_code", WEXITSTATUS(m->status));
        else
            mset_put_null(b, "exit_code");
        if (WIFSIGNALED(m->status)) {
            mset_put_i64(b, "signal", WTERMSIG(m->status));
            const char *abbrev = sigabbrev_np(WTERMSIG(m->status));
            char name[32];
            int n = snprintf(name, sizeof name, "SIG%s", abbrev ? abbrev : "UNKNOWN");
            mset_put_str(b, "signal_name", mset_copy(b, name, (size_t)n));
            mset_put_bool(b, "core_dumped", WCOREDUMP(m->status));
        } else {
            mset_put_null(b, "signal");
        }
        if (m->kill_reason[0]) mset_put_str(b, "limit", m->kill_reason);
    }
    mset_put_i64(b, "status", monitor_exit_status(m));
    mset_put_fixed(b, "start", m->start_ts, 6);
    mset_put_fixed(b, "end", m->end_ts, 6);
    mset_put_fixed(b, "duration", duration, 6);
    monitor_put_counters(m, b, s);
    double cpu = (double)(s->c.utime_us + s->c.stime_us) / 1e6;
    double cores = alloc_cpus(m);
    mset_put_fixed(b, "cpu_time", cpu, 6);
    if (cores == floor(cores))
        mset_put_i64(b, "cores", (long long)cores);
    else
        mset_put_fixed(b, "cores", cores, 2); /* a cgroup quota of 1.5 CPUs */
    mset_put_str(b, "cores_from", m->alloc.cpus_from);
    mset_put_fixed(b, "cpu_efficiency", duration > 0 ? cpu / (duration * cores) : 0.0, 4);
    mset_put_u64(b, "samples", m->nsamples);
    if (m->nstill) mset_put_u64(b, "samples_still", m->nstill);
    mset_put_u64(b, "total_procs", s->total_procs);
    mset_put_str(b, "sampler", proctree_sampler(m->tree));
    if (proctree_reader_outside(m->tree))
        mset_put_u64(b, "sampler_outside", proctree_reader_outside(m->tree));
    if (m->sampler_switch_ts > 0) mset_put_fixed(b, "sampler_since", m->sampler_switch_ts, 6);
    if (m->sampler_revert_ts > 0) mset_put_fixed(b, "sampler_reverted", m->sampler_revert_ts, 6);
    if (proctree_reader_fallbacks(m->tree))
        mset_put_u64(b, "sampler_fallbacks", proctree_reader_fallbacks(m->tree));
    mset_open_obj(b, "peaks");
    put_peak(b, "rss", &s->peak_rss_kb, 0);
    put_peak(b, "vm", &s->peak_vm_kb, 0);
    put_peak(b, "cpu_percent", &s->peak_cpu_percent, 2);
    put_peak(b, "procs", &s->peak_procs, 0);
    put_peak(b, "threads", &s->peak_threads, 0);
    mset_put_u64(b, "max_process_hwm", s->hwm_kb);
    mset_close(b);
    if (!m->opt.attach) {
        put_rusage(b, "rusage", &m->root_ru);
        struct rusage all;
        getrusage(RUSAGE_CHILDREN, &all);
        put_rusage(b, "rusage_children", &all);
    }
    for (int i = 0; i < m->nsources; i++)
        if (m->sources[i]->ops->record) m->sources[i]->ops->record(m->sources[i], &m->ctx, b);
    /* reaped processes whose final I/O could not be read exactly: the I/O
     * counters above may be short (docs/events.md) */
    if (m->reapio.inexact) mset_put_u64(b, "io_incomplete", m->reapio.inexact);
    emitter_settle(&m->em);
    mset_put_u64(b, "events_dropped", emitter_dropped(&m->em));
    emitter_put_errors(&m->em, b, "output_errors");
    jbuf *json = &m->summary;
    emitter_send(&m->em, b, m->summary_fd >= 0 ? json : NULL);
    if (m->summary_fd >= 0) {
        /* the same document, alone in its file */
        size_t n = json->len;
        if (write(m->summary_fd, json->p, n) != (ssize_t)n || write(m->summary_fd, "\n", 1) != 1)
            js_log(m->opt.verbose, NULL, "cannot write the summary file: %s", strerror(errno));
        close(m->summary_fd);
        m->summary_fd = -1;
    }
}

static void human_size(char *out, size_t n, double bytes)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (bytes >= 1024 && i < 4) bytes /= 1024, i++;
    snprintf(out, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

void monitor_print_summary(const monitor *m, const char *events_path)
{
    const tree_sample *s = &m->last;
    double dur = m->end_ts - m->start_ts;
    double cpu = (double)(s->c.utime_us + s->c.stime_us) / 1e6, cores = alloc_cpus(m);
    char rss[32], rd[32], wr[32], how[64];
    human_size(rss, sizeof rss, s->peak_rss_kb.value * 1024);
    human_size(rd, sizeof rd, (double)s->c.read_bytes);
    human_size(wr, sizeof wr, (double)s->c.write_bytes);
    if (m->opt.attach)
        snprintf(how, sizeof how, "ended");
    else if (WIFSIGNALED(m->status))
        snprintf(how, sizeof how, "killed by SIG%s%s", sigabbrev_np(WTERMSIG(m->status)) ?: "?",
                 m->kill_reason[0] ? " (limit)" : "");
    else
        snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(m->status));
    fprintf(stderr,
            "jobscope: %s %s after %.2f s\n"
            "jobscope:   CPU %.2f s user+sys, efficiency %.0f%% of %g core%s (%s)\n"
            "jobscope:   peak memory %s RSS, at most %u process%s at once, %llu seen\n"
            "jobscope:   disk read %s, written %s\n",
            m->opt.attach ? "process" : "job", how, dur, cpu,
            dur > 0 ? 100.0 * cpu / (dur * cores) : 0.0, cores, cores != 1 ? "s" : "",
            m->alloc.cpus > 0 ? m->alloc.cpus_from : "affinity", rss, (unsigned)s->peak_procs.value,
            s->peak_procs.value == 1 ? "" : "es", (unsigned long long)s->total_procs, rd, wr);
    if (events_path) fprintf(stderr, "jobscope:   events in %s\n", events_path);
}

/* What the caller asked to get back (monitor_result). */
void monitor_fill_result(const monitor *m, monitor_result *r)
{
    r->status = m->status;
    r->ru = m->root_ru;
    r->start_ts = m->start_ts;
    r->end_ts = m->end_ts;
    r->last = m->last;
    r->nsamples = m->nsamples;
}
