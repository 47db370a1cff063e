/* proctree_find.c — who is in the job's tree: a pid map, the readers of a
 * member's /proc files (kept open, re-read with pread), the member records,
 * and discovery, either through /proc/PID/task/TID/children or through a
 * scan of /proc that caches the pids known to be outside.  proctree.c calls
 * it from its sample (see proctree.h for the rules). */
#include "proctree_priv.h"

/* ---- pid map ----------------------------------------------------------- */

static size_t pm_slot(const pidmap *m, pid_t pid)
{
    return ((uint32_t)pid * 2654435761u) & (m->cap - 1);
}

int pidmap_get(const pidmap *m, pid_t pid)
{
    if (!m->cap) return 0;
    for (size_t i = pm_slot(m, pid);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == pid) return m->vals[i];
        if (m->keys[i] == 0) return 0;
    }
}

static int pm_grow(pidmap *m);

static void pm_put(pidmap *m, pid_t pid, int val)
{
    if ((m->used + 1) * 2 > m->cap && pm_grow(m) != 0) return;
    for (size_t i = pm_slot(m, pid);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == pid) {
            m->vals[i] = val;
            return;
        }
        if (m->keys[i] == 0) {
            m->keys[i] = pid;
            m->vals[i] = val;
            m->used++;
            return;
        }
    }
}

void pidmap_del(pidmap *m, pid_t pid)
{
    if (!m->cap) return;
    size_t i = pm_slot(m, pid);
    for (;; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == 0) return;
        if (m->keys[i] == pid) break;
    }
    m->keys[i] = 0;
    m->used--;
    /* re-insert the rest of the cluster */
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        pid_t k = m->keys[j];
        int v = m->vals[j];
        m->keys[j] = 0;
        m->used--;
        pm_put(m, k, v);
    }
}

static int pm_grow(pidmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    pidmap n = {calloc(ncap, sizeof(pid_t)), calloc(ncap, sizeof(int)), ncap, 0};
    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) pm_put(&n, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = n;
    return 0;
}

void pidmap_free(pidmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- reading ----------------------------------------------------------- */

int proctree_open_file(const proctree *t, pid_t pid, pid_t tid, const char *name)
{
    char path[280];
    if (!pid)
        snprintf(path, sizeof path, "%s/%s", t->proc, name); /* not per process */
    else if (tid)
        snprintf(path, sizeof path, "%s/%d/task/%d/%s", t->proc, (int)pid, (int)tid, name);
    else
        snprintf(path, sizeof path, "%s/%d/%s", t->proc, (int)pid, name);
    return open(path, O_RDONLY | O_CLOEXEC);
}

#define GONE (-2)

/* Kept-open descriptors, and how many we allow ourselves: past the budget
 * files are opened, read and closed each time (slower, still correct). */
static int open_fds, fd_budget = 900;

void proctree_fd_budget_init(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fd_budget = rl.rlim_cur > 256 ? (int)rl.rlim_cur - 128 : (int)rl.rlim_cur / 2;
}

/* Reads a whole small file through a cached fd (from offset off).  Returns
 * the bytes read (0: empty), GONE if the process or thread has exited, -1 if
 * the file cannot be read (permission, no fd left). */
ssize_t proctree_read_at(const proctree *t, int *fd, pid_t pid, pid_t tid, const char *name,
                         char *buf, size_t cap, off_t off)
{
    if (*fd == FD_UNAVAILABLE) return -1;
    int f = *fd;
    if (f == NO_FD) {
        f = proctree_open_file(t, pid, tid, name);
        if (f < 0) {
            if (errno == ENOENT || errno == ESRCH) return GONE;
            if (errno == EMFILE || errno == ENFILE) return -1;
            *fd = FD_UNAVAILABLE;
            return -1;
        }
        if (open_fds < fd_budget) {
            *fd = f;
            open_fds++;
        }
    }
    ssize_t n;
    do n = pread(f, buf, cap - 1, off);
    while (n < 0 && errno == EINTR);
    if (*fd != f) close(f);
    if (n < 0) return errno == ESRCH || errno == ENOENT ? GONE : -1;
    buf[n] = 0;
    return n;
}

/* A children file can be longer than one read: seq_file hands out at most a
 * page of whole records per read, so a read that came back nearly a page
 * long (or filled the buffer) may have more behind it.  Pids are never split
 * because we continue from the end of the last whole pid.  Returns GONE if
 * the thread has exited. */
int proctree_read_children_file(proctree *t, int *fd, pid_t pid, pid_t tid,
                                void (*fn)(void *, pid_t))
{
    off_t off = 0;
    for (;;) {
        ssize_t r = proctree_read_at(t, fd, pid, tid, "children", t->buf, sizeof t->buf, off);
        if (r == GONE) return GONE;
        if (r <= 0) return 0;
        size_t use = (size_t)r;
        int more = r >= 4096 - 24 || r == (ssize_t)sizeof t->buf - 1;
        if (more) { /* stop at the last space */
            while (use > 0 && t->buf[use - 1] != ' ') use--;
            if (use == 0) return 0;
        }
        procread_pids(t->buf, use, fn, t);
        if (!more) return 0;
        off += (off_t)use;
    }
}

void proctree_close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        open_fds--;
    }
    *fd = NO_FD;
}

/* ---- records ----------------------------------------------------------- */

proc *proc_get(proctree *t, pid_t pid)
{
    int v = pidmap_get(&t->map, pid);
    return v ? &t->procs[v - 1] : NULL;
}

proc *proc_add(proctree *t, pid_t pid)
{
    int idx;
    if (t->nfree) {
        idx = t->free_list[--t->nfree];
    } else {
        if (t->nprocs == t->cap) {
            int ncap = t->cap ? t->cap * 2 : 64;
            proc *np = realloc(t->procs, sizeof *np * (size_t)ncap);
            int *nf = realloc(t->free_list, sizeof *nf * (size_t)ncap);
            if (!np || !nf) {
                if (np) t->procs = np;
                if (nf) t->free_list = nf;
                return NULL;
            }
            t->procs = np;
            t->free_list = nf;
            t->cap = ncap;
        }
        idx = t->nprocs++;
    }
    proc *p = &t->procs[idx];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->fd_stat = p->fd_io = p->fd_status = p->fd_sched = NO_FD;
    p->status_phase = (uint32_t)pid; /* staggers status reads across samples */
    pm_put(&t->map, pid, idx + 1);
    t->total_procs++;
    return p;
}

void proc_remove(proctree *t, proc *p)
{
    proctree_close_fd(&p->fd_stat);
    proctree_close_fd(&p->fd_io);
    proctree_close_fd(&p->fd_status);
    proctree_close_fd(&p->fd_sched);
    for (int i = 0; i < p->nthr; i++) {
        proctree_close_fd(&p->thr[i].fd);
        proctree_close_fd(&p->thr[i].fd_sched);
    }
    free(p->thr);
    pidmap_del(&t->map, p->pid);
    p->pid = 0;
    t->free_list[t->nfree++] = (int)(p - t->procs);
}

/* Did the kernel fold a vanished member's totals into something we count?
 * Yes if its parent is alive in the tree, if jobscope is its parent (it will
 * be or was reaped by us, exactly), or if its parent vanished too but was
 * itself folded (P reaped X, then G reaped P: G's cutime holds both). */
int proc_folded(proctree *t, const proc *p, int depth)
{
    if (t->mode == PROCTREE_RUN && p->ppid == t->self) return 1;
    const proc *parent = proc_get(t, p->ppid);
    if (!parent || !parent->pid) return 0;
    if (parent->gen == t->gen) return 1;
    if (parent->reaped) return 1;
    return depth < 256 && proc_folded(t, parent, depth + 1);
}

/* A member is gone: carry what the kernel did not fold into a live member. */
void proc_vanished(proctree *t, proc *p, int folded)
{
    if (!p->reaped && p->read_ok) {
        uint64_t tick_us = 1000000 / (uint64_t)t->ticks;
        if (!folded) {
            t->carry.utime_us += p->cpu_u * tick_us;
            t->carry.stime_us += p->cpu_s * tick_us;
            t->carry.minflt += p->minflt;
            t->carry.majflt += p->majflt;
            t->carry.rchar += p->io.rchar;
            t->carry.wchar += p->io.wchar;
            t->carry.syscr += p->io.syscr;
            t->carry.syscw += p->io.syscw;
            t->carry.read_bytes += p->io.read_bytes;
            t->carry.write_bytes += p->io.write_bytes;
            t->carry.cancelled_write_bytes += p->io.cancelled_write_bytes;
            t->carry.nvcsw += p->nvcsw;
            t->carry.nivcsw += p->nivcsw;
        }
    }
    /* a child of ours that vanished before we reaped it (a zombie is not in
     * its cgroup any more): proctree_reaped must not count it again */
    if (t->mode == PROCTREE_RUN && p->ppid == t->self && !p->reaped)
        pm_put(&t->awaiting, p->pid, 1);
    if (p->read_ok) {
        /* self-only counters are never folded into a parent */
        t->carry_blkio_ticks += p->blkio;
        if (p->hwm_kb > t->hwm_kb) t->hwm_kb = p->hwm_kb;
    }
    proc_remove(t, p);
}

/* ---- discovery: children files ----------------------------------------- */

void proctree_queue_push(proctree *t, int idx)
{
    if (t->nqueue == t->cap_queue) {
        int ncap = t->cap_queue ? t->cap_queue * 2 : 128;
        int *nq = realloc(t->queue, sizeof *nq * (size_t)ncap);
        if (!nq) return;
        t->queue = nq;
        t->cap_queue = ncap;
    }
    t->queue[t->nqueue++] = idx;
}

void proctree_child_found(void *arg, pid_t pid)
{
    proctree *t = arg;
    proc *p = proc_get(t, pid);
    if (!p) p = proc_add(t, pid);
    if (p && p->gen != t->gen) {
        p->gen = t->gen; /* queued this round */
        proctree_queue_push(t, (int)(p - t->procs));
    }
}

/* Collects pids without touching procs[] (which proctree_child_found may move). */
static void child_collect(void *arg, pid_t pid)
{
    proctree *t = arg;
    if (t->nfound == t->cap_found) {
        int ncap = t->cap_found ? t->cap_found * 2 : 64;
        pid_t *n = realloc(t->found, sizeof *n * (size_t)ncap);
        if (!n) return;
        t->found = n;
        t->cap_found = ncap;
    }
    t->found[t->nfound++] = pid;
}

/* Lists /proc/PID/task into *thr (keeping open fds of known tids). */
void proctree_thr_relist(const proctree *t, pid_t pid, thr **tv, int *n, int *cap)
{
    char path[260];
    snprintf(path, sizeof path, "%s/%d/task", t->proc, (int)pid);
    DIR *d = opendir(path);
    if (!d) return;
    thr *old = *tv;
    int nold = *n;
    thr *nv = NULL;
    int nn = 0, ncap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        pid_t tid = (pid_t)atoi(de->d_name);
        if (nn == ncap) {
            ncap = ncap ? ncap * 2 : 4;
            thr *g = realloc(nv, sizeof *g * (size_t)ncap);
            if (!g) break;
            nv = g;
        }
        nv[nn].tid = tid;
        nv[nn].fd = nv[nn].fd_sched = NO_FD;
        for (int i = 0; i < nold; i++)
            if (old[i].tid == tid) {
                nv[nn].fd = old[i].fd;
                nv[nn].fd_sched = old[i].fd_sched;
                old[i].fd = old[i].fd_sched = NO_FD;
                break;
            }
        nn++;
    }
    closedir(d);
    for (int i = 0; i < nold; i++) {
        proctree_close_fd(&old[i].fd);
        proctree_close_fd(&old[i].fd_sched);
    }
    free(old);
    *tv = nv;
    *n = nn;
    *cap = ncap;
}

/* Reads every thread's children file; relists threads when their number
 * changed or one vanished. */
void proctree_read_children(proctree *t, pid_t pid, thr **tv, int *n, int *cap, uint32_t nthreads,
                            uint32_t *listed)
{
    if (!*tv || *listed != nthreads) {
        proctree_thr_relist(t, pid, tv, n, cap);
        *listed = nthreads;
    }
    for (int pass = 0; pass < 2; pass++) {
        int stale = 0;
        for (int i = 0; i < *n; i++) {
            thr *th = &(*tv)[i];
            if (proctree_read_children_file(t, &th->fd, pid, th->tid, child_collect) == GONE)
                stale = 1;
        }
        if (!stale) break;
        proctree_thr_relist(t, pid, tv, n, cap);
    }
}

/* ---- discovery: /proc scan --------------------------------------------- */

void proctree_scan_proc(proctree *t)
{
    if (!t->procdir) t->procdir = opendir(t->proc);
    if (!t->procdir) return;
    rewinddir(t->procdir);
    struct dirent *de;
    /* pending: new pids whose parent is not yet known to be a member */
    pid_t *pend = NULL, *pend_pp = NULL;
    int npend = 0, cappend = 0;
    while ((de = readdir(t->procdir))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
        pid_t pid = (pid_t)atoi(de->d_name);
        if (pid == t->self) continue;
        proc *p = proc_get(t, pid);
        if (p) { /* already a member */
            if (p->gen != t->gen) {
                p->gen = t->gen;
                proctree_queue_push(t, (int)(p - t->procs));
            }
            continue;
        }
        int ino = (int)(de->d_ino & 0x7fffffff) | 1;
        if (pidmap_get(&t->outside, pid) == ino) continue;
        int fd = proctree_open_file(t, pid, 0, "stat");
        if (fd < 0) continue;
        ssize_t r = pread(fd, t->buf, sizeof t->buf - 1, 0);
        close(fd);
        proc_stat st;
        if (r <= 0 || procread_stat(t->buf, (size_t)r, &st) != 0) continue;
        proc *parent = proc_get(t, st.ppid);
        int member = (parent && parent->pid) || (t->mode == PROCTREE_RUN && st.ppid == t->self) ||
                     (pid == t->root);
        if (member) {
            proctree_child_found(t, pid);
            continue;
        }
        if (npend == cappend) {
            cappend = cappend ? cappend * 2 : 64;
            pid_t *a = realloc(pend, sizeof *a * (size_t)cappend);
            pid_t *b = realloc(pend_pp, sizeof *b * (size_t)cappend);
            if (!a || !b) {
                free(a ? a : pend);
                free(b ? b : pend_pp);
                return;
            }
            pend = a;
            pend_pp = b;
        }
        pend[npend] = pid;
        pend_pp[npend] = (pid_t)ino; /* remember inode; ppid stored below */
        npend++;
        pm_put(&t->outside, pid, -(int)st.ppid); /* provisional: negative = ppid */
    }
    /* resolve pids whose parent was itself new this round */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < npend; i++) {
            if (!pend[i]) continue;
            pid_t ppid = (pid_t)-pidmap_get(&t->outside, pend[i]);
            proc *parent = proc_get(t, ppid);
            if (parent && parent->pid) {
                pidmap_del(&t->outside, pend[i]);
                proctree_child_found(t, pend[i]);
                pend[i] = 0;
                changed = 1;
            }
        }
    }
    for (int i = 0; i < npend; i++)
        if (pend[i]) pm_put(&t->outside, pend[i], pend_pp[i]);
    free(pend);
    free(pend_pp);
    /* keep the outside cache from growing without bound */
    if (t->outside.used > 65536) pidmap_free(&t->outside);
}
