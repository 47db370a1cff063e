/* proctree.c — discovery and exact accounting of the job's process tree
 * (the rules are in proctree.h).
 *
 * Per member we keep /proc/PID/{stat,io,status} open and re-read them with
 * pread; status (the costliest file, only needed for swap, VmHWM and context
 * switches) is read about every 10 s per process and at the final sample.  New
 * members are found either through /proc/PID/task/TID/children (kernels with
 * CONFIG_PROC_CHILDREN) or through a scan of /proc that reads the stat of
 * pids it has not classified yet; pids known to be outside the tree are
 * cached by (pid, inode) so steady state costs one getdents pass.  Either
 * walk is skipped when no task was created on the host since the last one
 * and no member has gone (discovery_due).
 *
 * This file samples the members and answers proctree.h's queries; finding
 * them (the pid map, the file readers, the records, both walks) is
 * proctree_find.c's, over the structures of proctree_priv.h. */
#include "proctree_priv.h"

/* ---- sampling ---------------------------------------------------------- */

static void self_children(proctree *t)
{
    if (!t->self_thr || (t->gen & 63) == 1) {
        int n = t->nself_thr, cap = n;
        proctree_thr_relist(t, t->self, &t->self_thr, &n, &cap);
        t->nself_thr = n;
    }
    for (int i = 0; i < t->nself_thr; i++) {
        thr *th = &t->self_thr[i];
        proctree_read_children_file(t, &th->fd, t->self, th->tid, proctree_child_found);
    }
}

/* First field of a schedstat file: time on CPU in ns (0 if unreadable). */
static uint64_t sched_ns(const proctree *t, int *fd, pid_t pid, pid_t tid)
{
    char b[128];
    ssize_t n = proctree_read_at(t, fd, pid, tid, "schedstat", b, sizeof b, 0);
    uint64_t v = 0;
    for (ssize_t i = 0; i < n && b[i] >= '0' && b[i] <= '9'; i++)
        v = v * 10 + (uint64_t)(b[i] - '0');
    return v;
}

/* The process's own CPU in ns, to refine its tick-based utime+stime when
 * sampling faster than the 10 ms ticks allow.  Threads that exited are only
 * in the tick count, so the result is never below it. */
static uint64_t proc_self_ns(const proctree *t, proc *p, uint64_t tick_ns)
{
    uint64_t ticks_ns = p->self_ticks * tick_ns, ns = 0;
    if (p->nthreads <= 1)
        ns = sched_ns(t, &p->fd_sched, p->pid, 0);
    else if (p->thr && (uint32_t)p->nthr == p->nthreads)
        for (int i = 0; i < p->nthr; i++)
            ns += sched_ns(t, &p->thr[i].fd_sched, p->pid, p->thr[i].tid);
    return ns > ticks_ns ? ns : ticks_ns;
}

/* Is a discovery walk needed this sample?  A member can only have a child
 * we have not seen if a task was created since the last walk began, or if
 * its parent left (an orphan is re-parented, possibly before any walk read
 * it).  /proc/loadavg's last field is the last pid handed out in jobscope's
 * pid namespace, which a task created in any nested namespace takes too:
 * while it and the member list stand still, the walk would find nothing.
 * Every status round (about 10 s, and the final sample) walks anyway, which
 * bounds the one blind spot: exactly pid_max creations between two looks.
 * Without a readable loadavg (a fixture) every sample walks. */
static int discovery_due(proctree *t, int full)
{
    int64_t made = t->creations ? t->creations(t->creations_ctx) : -1;
    if (made >= 0) { /* the kernel counts the job's own creations: exact */
        int due = full || t->member_gone || made != t->walk_creations;
        t->walk_creations = made;
        t->walk_last_pid = -1; /* a look at loadavg after this one walks */
        if (due) t->member_gone = 0;
        return due;
    }
    t->walk_creations = -1;
    char b[128];
    long last = -1;
    ssize_t n = proctree_read_at(t, &t->fd_loadavg, 0, 0, "loadavg", b, sizeof b, 0);
    if (n > 0) {
        char *sp = strrchr(b, ' ');
        if (sp) last = strtol(sp + 1, NULL, 10);
    }
    int due = full || t->member_gone || last < 0 || last != t->walk_last_pid;
    t->walk_last_pid = last;
    if (due) t->member_gone = 0;
    return due;
}

/* Reads one member; returns 0 if it is gone. */
static int read_member(proctree *t, proc *p, int want_status)
{
    ssize_t n = proctree_read_at(t, &p->fd_stat, p->pid, 0, "stat", t->buf, sizeof t->buf, 0);
    proc_stat st;
    if (n <= 0 || procread_stat(t->buf, (size_t)n, &st) != 0) return 0;
    if (p->read_ok && st.starttime != p->starttime) return 0;   /* pid reused */
    if (st.state == 'Z' || st.state == 'X') t->member_gone = 1; /* orphans moved on */
    p->state = st.state;
    p->starttime = st.starttime;
    p->ppid = st.ppid;
    p->cpu_u = st.utime + st.cutime;
    p->cpu_s = st.stime + st.cstime;
    p->self_ticks = st.utime + st.stime;
    p->minflt = st.minflt + st.cminflt;
    p->majflt = st.majflt + st.cmajflt;
    p->blkio = st.blkio_ticks;
    p->nthreads = (uint32_t)st.num_threads;
    p->rss_pages = st.rss;
    p->vsize = st.vsize;
    n = proctree_read_at(t, &p->fd_io, p->pid, 0, "io", t->buf, sizeof t->buf, 0);
    proc_io io;
    if (n > 0 && procread_io(t->buf, (size_t)n, &io) == 0) {
        p->io = io;
        p->have_io = 1;
    }
    if (want_status || !p->have_status) {
        n = proctree_read_at(t, &p->fd_status, p->pid, 0, "status", t->buf, sizeof t->buf, 0);
        proc_status ps;
        if (n > 0 && procread_status(t->buf, (size_t)n, &ps) == 0) {
            p->swap_kb = ps.vmswap_kb;
            if (ps.vmhwm_kb > p->hwm_kb) p->hwm_kb = ps.vmhwm_kb;
            p->nvcsw = ps.nvcsw;
            p->nivcsw = ps.nivcsw;
            p->have_status = 1;
        }
    }
    p->read_ok = 1;
    return 1;
}

/* Fills one member from the reader's figures; 0 if the pid was reused. */
static int member_from_snap(proctree *t, proc *p, const proc_snap *s)
{
    const proc_stat *st = &s->st;
    if (p->read_ok && st->starttime != p->starttime) return 0;
    p->state = st->state;
    p->starttime = st->starttime;
    p->ppid = st->ppid;
    p->cpu_u = st->utime + st->cutime;
    p->cpu_s = st->stime + st->cstime;
    p->self_ticks = st->utime + st->stime;
    p->minflt = st->minflt + st->cminflt;
    p->majflt = st->majflt + st->cmajflt;
    p->nthreads = (uint32_t)st->num_threads;
    p->rss_pages = st->rss;
    p->vsize = st->vsize;
    p->blkio = st->blkio_ticks;
    p->io = s->io;
    p->have_io = 1;
    p->swap_kb = s->ps.vmswap_kb;
    if (s->ps.vmhwm_kb > p->hwm_kb) p->hwm_kb = s->ps.vmhwm_kb;
    p->nvcsw = s->ps.nvcsw;
    p->nivcsw = s->ps.nivcsw;
    p->have_status = 1;
    p->cpu_ns = s->cpu_ns;
    p->kids = s->kids;
    p->kids_seen = 0;
    p->snap_gen = t->gen;
    p->read_ok = 1;
    return 1;
}

/* Discovery and figures from the reader: every process it returned becomes
 * (or stays) a member, queued with its figures already filled.  A reader
 * that also says how many live children each process has (a cgroup walk,
 * which cannot see members that left the cgroup) lets us find the parents
 * of members it missed: their children files are read (kids_missing).  -1
 * if the reader failed (this sample then reads /proc). */
static int read_from_reader(proctree *t)
{
    const proc_snap *v;
    int n = t->reader.read(t->reader.ctx, &v);
    t->kids_missing = 0;
    if (n < 0) {
        t->reader_fallbacks++;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (v[i].pid == t->self) continue;
        proc *p = proc_get(t, v[i].pid);
        if (!p && !(p = proc_add(t, v[i].pid))) continue;
        if (!member_from_snap(t, p, &v[i])) continue; /* reused pid: gone */
        if (p->gen != t->gen) {
            p->gen = t->gen;
            proctree_queue_push(t, (int)(p - t->procs));
        }
    }
    uint32_t self_seen = 0;
    for (int qi = 0; qi < t->nqueue; qi++) { /* children returned, per parent */
        proc *c = &t->procs[t->queue[qi]];
        proc *parent = proc_get(t, c->ppid);
        if (parent && parent->snap_gen == t->gen) parent->kids_seen++;
        if (c->ppid == t->self) self_seen++;
    }
    int self_kids = t->reader.self_kids ? t->reader.self_kids(t->reader.ctx) : -1;
    t->self_missing = self_kids < 0 || self_seen < (uint32_t)self_kids;
    for (int qi = 0; qi < t->nqueue; qi++) {
        proc *p = &t->procs[t->queue[qi]];
        if (p->kids >= 0 && p->kids_seen < (uint32_t)p->kids) t->kids_missing = 1;
    }
    return 0;
}

/* discovery_due once a sample, when first needed: with the reader, most
 * samples need no walk and do not read /proc/loadavg at all */
static int walk_due(proctree *t, int *walk, int full)
{
    if (*walk < 0) *walk = discovery_due(t, full);
    return *walk;
}

/* With the reader: are this member's children to be looked for in /proc?
 * Those of a member it returned when it missed some of them; those of a
 * member it did not return (left the cgroup, or re-parented out of the
 * root's ancestry) when a walk is due, or the first time it is read. */
static int reader_walks(proctree *t, const proc *p, int snap, int *walk, int full)
{
    if (snap) return p->kids >= 0 && p->kids_seen < (uint32_t)p->kids;
    return !p->walked || walk_due(t, walk, full);
}

static void peak(tree_peak *pk, double v, double ts)
{
    if (v > pk->value || pk->ts == 0) {
        pk->value = v;
        pk->ts = ts;
    }
}

static uint64_t clamp(uint64_t *last, uint64_t now)
{
    if (now > *last) *last = now;
    return *last;
}

/* CPU is clamped as a total, then split: user and system each never
 * decrease, and their sum is the clamped total.  Clamping each on its own
 * would lock in a split that later moved (the kernel's cputime_adjust
 * settles a process's split when it is reaped), so that utime + stime
 * would exceed every total the kernel ever showed. */
static void clamp_cpu(uint64_t *lu, uint64_t *ls, uint64_t u, uint64_t s)
{
    uint64_t t = u + s, tl = *lu + *ls;
    if (t < tl) t = tl;
    uint64_t hi = t - *ls;
    if (u < *lu) u = *lu;
    if (u > hi) u = hi;
    *lu = u;
    *ls = t - u;
}

int proctree_sample_still(proctree *t, tree_sample *out)
{
    if (!t->have_last || t->full_next) return -1;
    double ts = now_epoch();
    out->ts = ts;
    out->elapsed = ts - t->start_ts;
    out->cpu_percent = 0;
    out->still = 1;
    if (ts > t->last_ts) t->last_ts = ts; /* the next rate starts here */
    return 0;
}

int proctree_sample(proctree *t, tree_sample *out)
{
    double ts = now_epoch();
    t->gen++;
    t->nqueue = 0;
    int full = t->full_next || (t->gen % t->status_every) == 0;
    t->full_next = 0;

    /* 1. roots, then the members already known, then discovery (or all of
     * it at once from the reader) */
    int from_reader = t->reader.read && read_from_reader(t) == 0;
    /* after samples from the reader, /proc's discovery starts with a walk */
    int walk = from_reader ? -1 : discovery_due(t, full || t->prev_from_reader);
    t->prev_from_reader = from_reader;
    if (from_reader) {
        /* members the reader did not return are read from /proc below, and
         * where the reader may miss some (a cgroup walk), jobscope's own
         * children are looked at too when it returned fewer than jobscope
         * has: re-parented orphans that left the cgroup */
        if (t->mode == PROCTREE_RUN && t->children_mode && t->reader.partial &&
            (full || (t->self_missing && walk_due(t, &walk, full))))
            self_children(t);
    } else if (t->mode == PROCTREE_ATTACH) {
        proc *r = proc_get(t, t->root);
        if (!r && t->gen == 1) proctree_child_found(t, t->root);
    } else if (t->children_mode && walk) {
        self_children(t);
    }
    for (int i = 0; i < t->nprocs; i++) {
        proc *p = &t->procs[i];
        if (p->pid && p->gen != t->gen) {
            p->gen = t->gen;
            proctree_queue_push(t, i);
        }
    }
    if (!t->children_mode &&
        (from_reader ? t->kids_missing || (t->reader.partial && walk_due(t, &walk, full)) : walk))
        proctree_scan_proc(t);

    /* 2. read members in queue order; children mode discovers as it goes */
    tree_counters live = {0};
    uint64_t live_blkio = 0, rss = 0, vm = 0, swap = 0;
    uint32_t procs = 0, threads = 0, zombies = 0;
    uint64_t tick_us = 1000000 / (uint64_t)t->ticks;
    int64_t hires_adj_us = 0; /* precise own CPU minus its tick value */
    for (int qi = 0; qi < t->nqueue; qi++) {
        proc *p = &t->procs[t->queue[qi]];
        if (!p->pid) continue;
        int snap = from_reader && p->snap_gen == t->gen;
        int want_status = full || ((p->status_phase + t->gen) % t->status_every) == 0;
        if (!snap && !read_member(t, p, want_status)) {
            p->gen = t->gen - 1; /* not alive in this sample */
            continue;
        }
        if (!snap) p->cpu_ns = 0;
        if (from_reader && !snap && !p->outside) {
            p->outside = 1;
            t->reader_outside++;
        }
        if (t->children_mode && (from_reader ? reader_walks(t, p, snap, &walk, full) : walk)) {
            int idx = t->queue[qi];
            p->walked = 1;
            t->nfound = 0;
            proctree_read_children(t, p->pid, &p->thr, &p->nthr, &p->cap_thr, p->nthreads,
                                   &p->thr_count);
            for (int k = 0; k < t->nfound; k++) proctree_child_found(t, t->found[k]);
            p = &t->procs[idx]; /* procs[] may have moved */
        } else if (t->children_mode && t->hires && !snap && p->nthreads > 1 &&
                   p->thr_count != p->nthreads) {
            proctree_thr_relist(t, p->pid, &p->thr, &p->nthr, &p->cap_thr); /* for schedstat */
            p->thr_count = p->nthreads;
        }
        live.utime_us += p->cpu_u * tick_us;
        live.stime_us += p->cpu_s * tick_us;
        if (snap && p->cpu_ns > p->self_ticks * tick_us * 1000)
            hires_adj_us += (int64_t)(p->cpu_ns / 1000) - (int64_t)(p->self_ticks * tick_us);
        else if (t->hires && !snap)
            hires_adj_us += (int64_t)(proc_self_ns(t, p, tick_us * 1000) / 1000) -
                            (int64_t)(p->self_ticks * tick_us);
        live.minflt += p->minflt;
        live.majflt += p->majflt;
        live.rchar += p->io.rchar;
        live.wchar += p->io.wchar;
        live.syscr += p->io.syscr;
        live.syscw += p->io.syscw;
        live.read_bytes += p->io.read_bytes;
        live.write_bytes += p->io.write_bytes;
        live.cancelled_write_bytes += p->io.cancelled_write_bytes;
        live.nvcsw += p->nvcsw;
        live.nivcsw += p->nivcsw;
        live_blkio += p->blkio;
        if (p->hwm_kb > t->hwm_kb) t->hwm_kb = p->hwm_kb;
        if (p->state == 'Z' || p->state == 'X') { /* its totals count, it is not alive */
            zombies++;
            continue;
        }
        rss += p->rss_pages * (uint64_t)t->pagesize_kb;
        vm += p->vsize / 1024;
        swap += p->swap_kb;
        procs++;
        threads += p->nthreads;
    }
    /* the gauges of the last sample that saw a process alive (proctree.h) */
    if (procs) {
        t->alive.rss_kb = rss, t->alive.vm_kb = vm, t->alive.swap_kb = swap;
        t->alive.procs = procs, t->alive.threads = threads;
    }
    /* 3. members that did not answer are gone: decide first, then remove */
    int nvan = 0;
    for (int i = 0; i < t->nprocs; i++) {
        proc *p = &t->procs[i];
        if (p->pid && p->gen != t->gen) {
            p->folded = (uint8_t)proc_folded(t, p, 0);
            nvan++;
            t->member_gone = 1;
        }
    }
    for (int i = 0; nvan && i < t->nprocs; i++) {
        proc *p = &t->procs[i];
        if (p->pid && p->gen != t->gen) {
            proc_vanished(t, p, p->folded);
            nvan--;
        }
    }

    /* 4. totals = carry + live, never decreasing */
    tree_sample *o = out;
    memset(o, 0, sizeof *o);
    o->ts = ts;
    o->elapsed = ts - t->start_ts;
    tree_counters *c = &o->c, *L = &t->last, *C = &t->carry;
    clamp_cpu(&L->utime_us, &L->stime_us, C->utime_us + live.utime_us, C->stime_us + live.stime_us);
    c->utime_us = L->utime_us;
    c->stime_us = L->stime_us;
    c->rchar = clamp(&L->rchar, C->rchar + live.rchar);
    c->wchar = clamp(&L->wchar, C->wchar + live.wchar);
    c->syscr = clamp(&L->syscr, C->syscr + live.syscr);
    c->syscw = clamp(&L->syscw, C->syscw + live.syscw);
    c->read_bytes = clamp(&L->read_bytes, C->read_bytes + live.read_bytes);
    c->write_bytes = clamp(&L->write_bytes, C->write_bytes + live.write_bytes);
    c->cancelled_write_bytes =
        clamp(&L->cancelled_write_bytes, C->cancelled_write_bytes + live.cancelled_write_bytes);
    c->minflt = clamp(&L->minflt, C->minflt + live.minflt);
    c->majflt = clamp(&L->majflt, C->majflt + live.majflt);
    c->nvcsw = clamp(&L->nvcsw, C->nvcsw + live.nvcsw);
    c->nivcsw = clamp(&L->nivcsw, C->nivcsw + live.nivcsw);
    c->iowait_us = clamp(&L->iowait_us, (t->carry_blkio_ticks + live_blkio) * tick_us);
    o->iowait_valid = t->delayacct;
    o->procs = procs;
    o->threads = threads;
    o->zombies = zombies;
    o->alive = t->alive;
    o->rss_kb = rss;
    o->vm_kb = vm;
    o->swap_kb = swap;
    o->hwm_kb = t->hwm_kb;
    o->total_procs = t->total_procs;
    /* the rate uses the unclamped total, refined to ns at high rates */
    double cpu_s = ((double)(C->utime_us + C->stime_us + live.utime_us + live.stime_us) +
                    (double)hires_adj_us) /
                   1e6;
    if (t->have_last && ts > t->last_ts) {
        /* CPU of processes that lived and died between two samples becomes
         * visible at once when they are reaped; over a short interval that
         * would read as more cores than the job can use: cap at the truth's
         * upper bound. */
        o->cpu_percent = 100.0 * (cpu_s - t->last_cpu_s) / (ts - t->last_ts);
        if (o->cpu_percent > 100.0 * t->ncpus) o->cpu_percent = 100.0 * t->ncpus;
        if (o->cpu_percent < 0) o->cpu_percent = 0;
    }
    t->last_ts = ts;
    t->last_cpu_s = cpu_s;
    t->have_last = 1;
    peak(&t->peaks.peak_rss_kb, (double)rss, ts);
    peak(&t->peaks.peak_vm_kb, (double)vm, ts);
    peak(&t->peaks.peak_cpu_percent, o->cpu_percent, ts);
    peak(&t->peaks.peak_procs, procs, ts);
    peak(&t->peaks.peak_threads, threads, ts);
    o->peak_rss_kb = t->peaks.peak_rss_kb;
    o->peak_vm_kb = t->peaks.peak_vm_kb;
    o->peak_cpu_percent = t->peaks.peak_cpu_percent;
    o->peak_procs = t->peaks.peak_procs;
    o->peak_threads = t->peaks.peak_threads;
    o->root_pid = t->root;

    /* 5. publish the member list for other threads */
    pthread_mutex_lock(&t->lock);
    if (t->cap_members < t->nprocs) {
        pid_t *m = realloc(t->members, sizeof *m * (size_t)t->nprocs);
        if (m) {
            t->members = m;
            t->cap_members = t->nprocs;
        }
    }
    t->nmembers = 0;
    for (int i = 0; i < t->nprocs && t->nmembers < t->cap_members; i++)
        if (t->procs[i].pid) t->members[t->nmembers++] = t->procs[i].pid;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

/* ---- life cycle and queries -------------------------------------------- */

proctree *proctree_new(const char *proc_root, enum proctree_mode mode, pid_t root, double interval)
{
    proctree *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (!proc_root || !*proc_root) proc_root = "/proc";
    if (strlen(proc_root) >= sizeof t->proc) {
        free(t);
        errno = ENAMETOOLONG;
        return NULL;
    }
    strcpy(t->proc, proc_root);
    t->mode = mode;
    t->root = root;
    t->self = getpid();
    t->interval = interval;
    t->ticks = sysconf(_SC_CLK_TCK);
    if (t->ticks <= 0) t->ticks = 100;
    t->pagesize_kb = sysconf(_SC_PAGESIZE) / 1024;
    if (t->pagesize_kb <= 0) t->pagesize_kb = 4;
    t->ncpus = hostinfo_cpus_available();
    t->hires = interval < 0.1 && !getenv("JOBSCOPE_NO_SCHEDSTAT");
    proctree_fd_budget_init();
    /* status (swap, VmHWM, context switches) is the costliest file: about
     * every 10 s per process, staggered, and always at the final sample */
    t->status_every = interval >= 10.0 ? 1 : (uint32_t)(10.0 / interval + 0.5);
    if (t->status_every < 1) t->status_every = 1;
    t->start_ts = now_epoch();
    pthread_mutex_init(&t->lock, NULL);

    const char *force = getenv("JOBSCOPE_DISCOVERY");
    char path[280];
    snprintf(path, sizeof path, "%s/self/task/%d/children", t->proc, (int)t->self);
    t->children_mode = access(path, R_OK) == 0;
    if (force && !strcmp(force, "scan")) t->children_mode = 0;

    t->fd_loadavg = NO_FD;
    t->walk_last_pid = -1;
    t->walk_creations = -1;

    t->delayacct = 1;
    snprintf(path, sizeof path, "%s/sys/kernel/task_delayacct", t->proc);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char c = '1';
        if (read(fd, &c, 1) == 1) t->delayacct = c != '0';
        close(fd);
    }
    return t;
}

void proctree_free(proctree *t)
{
    if (!t) return;
    for (int i = 0; i < t->nprocs; i++)
        if (t->procs[i].pid) proc_remove(t, &t->procs[i]);
    for (int i = 0; i < t->nself_thr; i++) proctree_close_fd(&t->self_thr[i].fd);
    free(t->self_thr);
    proctree_close_fd(&t->fd_loadavg);
    if (t->procdir) closedir(t->procdir);
    pidmap_free(&t->map);
    pidmap_free(&t->outside);
    pidmap_free(&t->awaiting);
    if (t->reader.close) t->reader.close(t->reader.ctx);
    free(t->procs);
    free(t->free_list);
    free(t->queue);
    free(t->found);
    free(t->members);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void proctree_full_next(proctree *t)
{
    t->full_next = 1;
}

int proctree_discovery_children(const proctree *t)
{
    return t->children_mode;
}

void proctree_set_reader(proctree *t, const proctree_reader *r)
{
    if (t->reader.close) t->reader.close(t->reader.ctx);
    t->reader = *r;
}

void proctree_take_reader(proctree *t, proctree_reader *out)
{
    *out = t->reader;
    memset(&t->reader, 0, sizeof t->reader);
}

const char *proctree_sampler(const proctree *t)
{
    return t->reader.read ? t->reader.name : "procfs";
}

const char *proctree_discovery(const proctree *t)
{
    if (t->reader.read) return t->reader.walk;
    return t->children_mode ? "children" : "scan";
}

uint64_t proctree_reader_fallbacks(const proctree *t)
{
    return t->reader_fallbacks;
}

void proctree_set_creations(proctree *t, int64_t (*fn)(void *ctx), void *ctx)
{
    t->creations = fn;
    t->creations_ctx = ctx;
    t->walk_creations = -1;
}

uint64_t proctree_reader_outside(const proctree *t)
{
    return t->reader_outside;
}

void proctree_reaped(proctree *t, pid_t pid, const struct rusage *ru, const proc_io *io)
{
    t->member_gone = 1; /* its orphans came to us: walk next time */
    proc *p = proc_get(t, pid);
    tree_counters *C = &t->carry;
    C->utime_us += (uint64_t)ru->ru_utime.tv_sec * 1000000u + (uint64_t)ru->ru_utime.tv_usec;
    C->stime_us += (uint64_t)ru->ru_stime.tv_sec * 1000000u + (uint64_t)ru->ru_stime.tv_usec;
    C->minflt += (uint64_t)ru->ru_minflt;
    C->majflt += (uint64_t)ru->ru_majflt;
    C->nvcsw += (uint64_t)ru->ru_nvcsw;
    C->nivcsw += (uint64_t)ru->ru_nivcsw;
    const proc_io *src = io ? io : (p && p->have_io ? &p->io : NULL);
    if (src) {
        C->rchar += src->rchar;
        C->wchar += src->wchar;
        C->syscr += src->syscr;
        C->syscw += src->syscw;
        C->read_bytes += src->read_bytes;
        C->write_bytes += src->write_bytes;
        C->cancelled_write_bytes += src->cancelled_write_bytes;
    }
    if ((uint64_t)ru->ru_maxrss > t->hwm_kb) t->hwm_kb = (uint64_t)ru->ru_maxrss;
    if (p)
        p->reaped = 1;
    else if (pidmap_get(&t->awaiting, pid))
        pidmap_del(&t->awaiting, pid);
    else
        t->total_procs++;
}

int proctree_contains(proctree *t, pid_t pid)
{
    int found = 0;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->nmembers; i++)
        if (t->members[i] == pid) {
            found = 1;
            break;
        }
    pthread_mutex_unlock(&t->lock);
    return found;
}

int proctree_pids(proctree *t, pid_t *out, int max)
{
    pthread_mutex_lock(&t->lock);
    int n = t->nmembers < max ? t->nmembers : max;
    memcpy(out, t->members, sizeof *out * (size_t)n);
    pthread_mutex_unlock(&t->lock);
    return n;
}

/* Is p, as recorded, still this live process?  pidfd (opened by pid just
 * before) then refers to it.  The kept stat descriptor proves it: it
 * points at the process it was opened for, and reads fail once that one is
 * gone, even if its pid was handed out again; without one, the start time
 * read now must be the one recorded. */
static int proc_is_still(proctree *t, proc *p)
{
    if (!p->read_ok) return 0;
    proc_stat st;
    ssize_t n;
    if (p->fd_stat >= 0) {
        do n = pread(p->fd_stat, t->buf, sizeof t->buf - 1, 0);
        while (n < 0 && errno == EINTR);
    } else {
        int fd = proctree_open_file(t, p->pid, 0, "stat");
        if (fd < 0) return 0;
        n = read(fd, t->buf, sizeof t->buf - 1);
        close(fd);
    }
    if (n <= 0 || procread_stat(t->buf, (size_t)n, &st) != 0) return 0;
    return st.starttime == p->starttime && st.state != 'Z' && st.state != 'X';
}

int proctree_kill(proctree *t, int sig)
{
    int n = 0;
    for (int i = 0; i < t->nprocs; i++) {
        proc *p = &t->procs[i];
        if (!p->pid || p->pid == t->self || (sig && p->signalled == sig)) continue;
        /* pin the process first, then prove it is the member */
        int pfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
        if (pfd < 0 && errno != ENOSYS) continue; /* gone */
        if (!proc_is_still(t, p)) {
            if (pfd >= 0) close(pfd);
            continue;
        }
        int rc = sig == 0   ? 0
                 : pfd >= 0 ? (int)syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0)
                            : kill(p->pid, sig); /* a kernel before 5.3: checked just now */
        if (pfd >= 0) close(pfd);
        if (rc == 0) {
            n++;
            p->signalled = (uint8_t)sig;
        }
    }
    return n;
}
