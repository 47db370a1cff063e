/* bpfsample.c — a run's side of the BPF sampler (see bpfsample.h): its own
 * entry in the pinned maps, an iterator link of its own, one read per
 * sample, and the per-thread records folded into per-process figures
 * computed the way the kernel computes /proc/PID/stat, io and status.
 * Plain bpf(2) calls (bpfsys.c): no libbpf, no BTF, no verifier here.
 *
 * Per-run state in the shared maps (tree.bpf.c): cfg[tgid] (the host walk's
 * filter; the cgroup walk's count), outs[tgid] (the cgroup walk's record
 * array, made by the run).  Entries of runs that are gone without closing
 * (kill -9) are removed by the next run that opens (their tgid no longer
 * started at the time they say). */
#include "bpfsample.h"
#include "../proc/hostinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef JOBSCOPE_BPF
#include <linux/types.h>
#include <linux/bpf.h>
#include "bpf_rec.h"
#include "bpfsys.h"

#define NS_PER_TICK 10000000ull /* USER_HZ = 100 */

/* The cgroup walk's record array: kernel memory of the run's own, so it
 * starts at 2048 records (0.75 MiB; tree-1000 is 1402 threads) and grows
 * fourfold, up to 262,144, after a read that did not fit. */
#define OUT_FIRST 2048u
#define OUT_MAX   (1u << 18)

struct bpfsample {
    bpfset set;
    int link;   /* this run's iterator link */
    int out_fd; /* cgroup walk: this run's record array, or -1 */
    uint32_t out_cap;
    uint32_t me;       /* our tgid: the key of our entries */
    int32_t self_kids; /* cgroup walk: the reading thread's live children at the last read */
    uint64_t start;    /* our start time, ticks after boot */
    struct bpfrec *rec;
    size_t nrec, caprec;
    uint32_t *keys; /* for the batch read */
    bpf_proc *procs;
    struct acc *acc;
    size_t nprocs, capprocs;
    struct slot *hash; /* tgid -> index in procs; a slot of another gen is empty */
    size_t caphash;
    uint32_t gen;
    long page_kb;
};

struct slot {
    uint32_t gen;
    int32_t idx;
};

/* One sampler per process: the maps are keyed by tgid. */
static int open_here;

int bpfsample_built(void)
{
    return 1;
}

/* Entries of runs that ended without closing (kill -9): their tgid is gone
 * or started later than they say. */
static void sweep_stale(const bpfset *s, uint32_t me)
{
    uint32_t key, next;
    const uint32_t *prev = NULL;
    uint32_t gone[64];
    int ngone = 0;
    while (ngone < 64 && bpfsys_map_next_key(s->fd[BPFSET_CFG], prev, &next) == 0) {
        key = next;
        prev = &key;
        struct bpfcfg c;
        if (key == me || bpfsys_map_lookup(s->fd[BPFSET_CFG], &key, &c) != 0) continue;
        if (hostinfo_starttime((pid_t)key) != c.start) gone[ngone++] = key;
    }
    for (int i = 0; i < ngone; i++) {
        bpfsys_map_delete(s->fd[BPFSET_OUTS], &gone[i]);
        bpfsys_map_delete(s->fd[BPFSET_CFG], &gone[i]);
    }
}

/* A record array of cap records for the cgroup walk, put in outs[me]. */
static int new_out(bpfsample *b, uint32_t cap)
{
    int fd = bpfsys_map_create_array("jobscope_out", sizeof(struct bpfrec), cap, BPF_F_INNER_MAP);
    if (fd < 0) return -1;
    uint32_t v = (uint32_t)fd;
    if (bpfsys_map_update(b->set.fd[BPFSET_OUTS], &b->me, &v, BPF_ANY) != 0) {
        close(fd);
        return -1;
    }
    uint32_t *k = realloc(b->keys, cap * sizeof *k);
    if (!k) {
        close(fd);
        return -1;
    }
    b->keys = k;
    if (b->out_fd >= 0) close(b->out_fd);
    b->out_fd = fd;
    b->out_cap = cap;
    return 0;
}

bpfsample *bpfsample_open_set(bpfset *set, pid_t root, pid_t anchor, const char *cgroup_dir,
                              char *err, size_t errlen)
{
    if (open_here) {
        snprintf(err, errlen, "BPF: one sampler per process");
        bpfset_close(set);
        return NULL;
    }
    bpfsample *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        bpfset_close(set);
        return NULL;
    }
    b->set = *set;
    for (int i = 0; i < BPFSET_N; i++) set->fd[i] = -1;
    b->link = -1;
    b->out_fd = -1;
    b->self_kids = -1;
    b->gen = 1;
    b->page_kb = sysconf(_SC_PAGESIZE) / 1024;
    b->me = (uint32_t)getpid();
    b->start = hostinfo_starttime((pid_t)b->me);
    open_here = 1;
    sweep_stale(&b->set, b->me);
    struct bpfcfg c = {(uint32_t)root, (uint32_t)anchor, b->start, 0, 0};
    if (bpfsys_map_update(b->set.fd[BPFSET_CFG], &b->me, &c, BPF_ANY) != 0) {
        snprintf(err, errlen, "BPF: cannot register this run: %s", strerror(errno));
        goto fail;
    }
    if (cgroup_dir && b->set.fd[BPFSET_CGROUP] < 0) {
        snprintf(err, errlen, "BPF: this kernel has no cgroup task iterator (6.7+)");
        goto fail;
    }
    if (cgroup_dir) {
        int cfd = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cfd < 0) {
            snprintf(err, errlen, "BPF: %s: %s", cgroup_dir, strerror(errno));
            goto fail;
        }
        if (new_out(b, OUT_FIRST) != 0) {
            snprintf(err, errlen, "BPF: cannot make the record array: %s", strerror(errno));
            close(cfd);
            goto fail;
        }
        b->link = bpfsys_iter_link(b->set.fd[BPFSET_CGROUP], cfd);
        close(cfd);
    } else {
        b->link = bpfsys_iter_link(b->set.fd[BPFSET_TASKS], -1);
    }
    if (b->link < 0) {
        snprintf(err, errlen, "BPF: cannot attach the iterator: %s", strerror(errno));
        goto fail;
    }
    return b;
fail:
    bpfsample_close(b);
    return NULL;
}

bpfsample *bpfsample_open(pid_t root, pid_t anchor, const char *cgroup_dir, char *err,
                          size_t errlen)
{
    bpfset set;
    if (bpfpin_get(&set, err, errlen, NULL, 0) != 0) return NULL;
    return bpfsample_open_set(&set, root, anchor, cgroup_dir, err, errlen);
}

int bpfsample_cgroup_walk(const bpfsample *b)
{
    return b->out_fd >= 0;
}

void bpfsample_close(bpfsample *b)
{
    if (!b) return;
    if (b->set.fd[BPFSET_OUTS] >= 0) bpfsys_map_delete(b->set.fd[BPFSET_OUTS], &b->me);
    if (b->set.fd[BPFSET_CFG] >= 0) bpfsys_map_delete(b->set.fd[BPFSET_CFG], &b->me);
    if (b->link >= 0) close(b->link);
    if (b->out_fd >= 0) close(b->out_fd);
    bpfset_close(&b->set);
    free(b->rec);
    free(b->keys);
    free(b->procs);
    free(b->acc);
    free(b->hash);
    free(b);
    open_here = 0;
}

static int rec_room(bpfsample *b, size_t n)
{
    if (n <= b->caprec) return 0;
    size_t ncap = b->caprec ? b->caprec : 256;
    while (ncap < n) ncap *= 2;
    struct bpfrec *r = realloc(b->rec, ncap * sizeof *r);
    if (!r) return -1;
    b->rec = r;
    b->caprec = ncap;
    return 0;
}

/* Runs the iterator to its end: the host walk's records land in b->rec; the
 * cgroup walk writes only its struct bpfend, and its records are then
 * copied out of our array in one batch. */
static int read_records(bpfsample *b)
{
    int fd = bpfsys_iter_create(b->link);
    if (fd < 0) return -1;
    size_t bytes = 0;
    if (b->out_fd < 0 && rec_room(b, 64) < 0) {
        close(fd);
        return -1;
    }
    struct bpfend end = {0, 0, 0, 0};
    for (;;) {
        char *dst;
        size_t room;
        if (b->out_fd >= 0) {
            dst = (char *)&end + bytes;
            room = sizeof end - bytes;
            if (!room) break;
        } else {
            if (b->caprec * sizeof *b->rec - bytes < 64 * sizeof *b->rec &&
                rec_room(b, b->caprec * 2) < 0) {
                close(fd);
                return -1;
            }
            dst = (char *)b->rec + bytes;
            room = b->caprec * sizeof *b->rec - bytes;
        }
        ssize_t r = read(fd, dst, room);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            close(fd);
            return -1;
        }
        if (r == 0) break;
        bytes += (size_t)r;
    }
    close(fd);
    if (b->out_fd < 0) {
        b->nrec = bytes / sizeof *b->rec;
        return 0;
    }
    if (bytes != sizeof end || end.magic != BPFEND_MAGIC) return -1;
    b->self_kids = (int32_t)end.self_kids;
    if (end.lost) { /* incomplete: the caller uses /proc; a bigger array next time */
        uint32_t cap = b->out_cap;
        while (cap < OUT_MAX && cap < end.count + end.lost + end.lost / 2) cap *= 4;
        if (cap > OUT_MAX) cap = OUT_MAX;
        if (cap > b->out_cap) new_out(b, cap);
        return -1;
    }
    b->nrec = 0;
    if (!end.count) return 0;
    if (rec_room(b, end.count) < 0) return -1;
    uint32_t n = end.count;
    if (bpfsys_array_read(b->out_fd, b->keys, b->rec, &n) != 0 && errno != ENOENT) return -1;
    b->nrec = n;
    return 0;
}

/* The kernel's cputime_adjust(): rtime split in the ratio of the sampled
 * ticks, never below what it reported before (prev). */
static void cputime_adjust(uint64_t rtime, uint64_t utime, uint64_t stime, uint64_t prev_u,
                           uint64_t prev_s, uint64_t *ut, uint64_t *st)
{
    if (prev_s + prev_u >= rtime) {
        *ut = prev_u;
        *st = prev_s;
        return;
    }
    if (stime == 0)
        utime = rtime;
    else if (utime == 0)
        stime = rtime;
    else {
        stime = (uint64_t)((unsigned __int128)stime * rtime / (stime + utime));
        if (stime > rtime) stime = rtime;
    }
    if (stime < prev_s) stime = prev_s;
    utime = rtime - stime;
    if (utime < prev_u) {
        utime = prev_u;
        stime = rtime - utime;
    }
    *ut = utime;
    *st = stime;
}

/* Per-process sums while the records of one read are folded. */
typedef struct acc {
    uint64_t ut, st, rt, minflt, majflt, nvcsw, nivcsw, io[BPFREC_NIO];
    const struct bpfrec *leader;
    uint32_t nthreads, kids;
    int counted; /* kids is the kernel's count */
} acc;

/* Open addressing, tgid -> slot in b->procs / b->acc (cap a power of two).
 * Emptied by a new generation, not by clearing the table every read. */
static size_t slot_of(const bpfsample *b, pid_t pid)
{
    size_t mask = b->caphash - 1, i = ((uint32_t)pid * 2654435761u) & mask;
    while (b->hash[i].gen == b->gen && b->procs[b->hash[i].idx].pid != pid) i = (i + 1) & mask;
    return i;
}

static long slot_get(const bpfsample *b, size_t i)
{
    return b->hash[i].gen == b->gen ? b->hash[i].idx : -1;
}

static void slot_set(bpfsample *b, size_t i, long idx)
{
    b->hash[i].gen = b->gen;
    b->hash[i].idx = (int32_t)idx;
}

static void new_gen(bpfsample *b)
{
    if (++b->gen == 0) { /* wrapped: old slots could look current */
        memset(b->hash, 0, b->caphash * sizeof *b->hash);
        b->gen = 1;
    }
}

static int grow(bpfsample *b, size_t need)
{
    if (need <= b->capprocs && need * 2 <= b->caphash) return 0;
    size_t cap = b->capprocs ? b->capprocs : 256;
    while (cap < need) cap *= 2;
    bpf_proc *p = realloc(b->procs, cap * sizeof *p);
    if (!p) return -1;
    b->procs = p;
    acc *a = realloc(b->acc, cap * sizeof *a);
    if (!a) return -1;
    b->acc = a;
    b->capprocs = cap;
    free(b->hash);
    b->caphash = cap * 2;
    b->hash = calloc(b->caphash, sizeof *b->hash); /* gen 0: empty */
    return b->hash ? 0 : -1;
}

/* The /proc figures of one process from its sums and its leader's record. */
static void fold(const bpfsample *b, const acc *a, bpf_proc *p)
{
    const struct bpfrec *l = a->leader;
    uint64_t ut = a->ut + l->sig_utime, st = a->st + l->sig_stime,
             rt = a->rt + l->sig_sum_sched_runtime;
    uint64_t aut, ast;
    cputime_adjust(rt, ut, st, l->prev_utime, l->prev_stime, &aut, &ast);
    memcpy(p->comm, l->comm, sizeof p->comm);
    p->comm[sizeof p->comm - 1] = 0;
    memset(&p->st, 0, sizeof p->st);
    p->st.ppid = (pid_t)l->ppid;
    p->st.state = 'S';
    p->st.utime = aut / NS_PER_TICK;
    p->st.stime = ast / NS_PER_TICK;
    p->st.cutime = l->sig_cutime / NS_PER_TICK;
    p->st.cstime = l->sig_cstime / NS_PER_TICK;
    p->st.minflt = a->minflt + l->sig_min_flt;
    p->st.majflt = a->majflt + l->sig_maj_flt;
    p->st.cminflt = l->sig_cmin_flt;
    p->st.cmajflt = l->sig_cmaj_flt;
    p->st.num_threads = l->nr_threads;
    p->st.starttime = l->start_boottime / NS_PER_TICK;
    p->st.vsize = l->total_vm * (uint64_t)b->page_kb * 1024;
    p->st.rss = l->rss_pages;
    p->st.blkio_ticks = l->blkio_delay / NS_PER_TICK;
    uint64_t io[BPFREC_NIO];
    for (int k = 0; k < BPFREC_NIO; k++) io[k] = a->io[k] + l->sig_io[k];
    p->io.rchar = io[0];
    p->io.wchar = io[1];
    p->io.syscr = io[2];
    p->io.syscw = io[3];
    p->io.read_bytes = io[4];
    p->io.write_bytes = io[5];
    p->io.cancelled_write_bytes = io[6];
    memset(&p->ps, 0, sizeof p->ps);
    p->ps.vmsize_kb = l->total_vm * (uint64_t)b->page_kb;
    p->ps.vmrss_kb = l->rss_pages * (uint64_t)b->page_kb;
    p->ps.vmswap_kb = l->swap_pages * (uint64_t)b->page_kb;
    p->ps.vmhwm_kb =
        (l->hiwater_rss > l->rss_pages ? l->hiwater_rss : l->rss_pages) * (uint64_t)b->page_kb;
    p->ps.nvcsw = a->nvcsw + l->sig_nvcsw;
    p->ps.nivcsw = a->nivcsw + l->sig_nivcsw;
    p->cpu_ns = rt;
    p->nthreads_seen = a->nthreads;
    p->kids = a->counted ? (int32_t)a->kids : -1;
}

int bpfsample_read(bpfsample *b, const bpf_proc **out)
{
    if (read_records(b) < 0) return -1;
    if (grow(b, b->nrec + 1) < 0) return -1;
    new_gen(b);
    size_t n = 0;
    for (size_t i = 0; i < b->nrec; i++) { /* sum the threads of each process */
        const struct bpfrec *r = &b->rec[i];
        size_t h = slot_of(b, (pid_t)r->tgid);
        if (slot_get(b, h) < 0) {
            slot_set(b, h, (long)n);
            b->procs[n].pid = (pid_t)r->tgid;
            memset(&b->acc[n], 0, sizeof b->acc[n]);
            n++;
        }
        acc *a = &b->acc[slot_get(b, h)];
        a->ut += r->utime;
        a->st += r->stime;
        a->rt += r->sum_exec_runtime;
        a->minflt += r->min_flt;
        a->majflt += r->maj_flt;
        a->nvcsw += r->nvcsw;
        a->nivcsw += r->nivcsw;
        for (int k = 0; k < BPFREC_NIO; k++) a->io[k] += r->io[k];
        a->nthreads++;
        if (r->flags & BPFREC_KIDS) {
            a->kids += r->nchild;
            a->counted = 1;
        }
        if (r->flags & BPFREC_LEADER) a->leader = r;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) { /* a group seen without its leader is skipped */
        if (!b->acc[i].leader) continue;
        fold(b, &b->acc[i], &b->procs[i]);
        if (kept != i) {
            b->procs[kept] = b->procs[i];
            b->acc[kept] = b->acc[i];
        }
        kept++;
    }
    b->nprocs = kept;
    new_gen(b);
    for (size_t i = 0; i < kept; i++) slot_set(b, slot_of(b, b->procs[i].pid), (long)i);
    *out = b->procs;
    return (int)kept;
}

int bpfsample_self_kids(const bpfsample *b)
{
    return b->self_kids;
}

const bpf_proc *bpfsample_find(const bpfsample *b, pid_t pid)
{
    if (!b->caphash) return NULL;
    long i = slot_get(b, slot_of(b, pid));
    return i >= 0 ? &b->procs[i] : NULL;
}

#else /* built without clang/bpftool/libbpf/BTF */

struct bpfsample {
    int unused;
};

int bpfsample_built(void)
{
    return 0;
}

bpfsample *bpfsample_open_set(bpfset *set, pid_t root, pid_t anchor, const char *cgroup_dir,
                              char *err, size_t errlen)
{
    (void)root;
    (void)anchor;
    (void)cgroup_dir;
    bpfset_close(set);
    snprintf(err, errlen,
             "BPF sampler not built (needs clang, bpftool, libbpf and kernel BTF at build time)");
    return NULL;
}
bpfsample *bpfsample_open(pid_t root, pid_t anchor, const char *cgroup_dir, char *err,
                          size_t errlen)
{
    bpfset set;
    for (int i = 0; i < BPFSET_N; i++) set.fd[i] = -1;
    return bpfsample_open_set(&set, root, anchor, cgroup_dir, err, errlen);
}
int bpfsample_cgroup_walk(const bpfsample *b)
{
    (void)b;
    return 0;
}
int bpfsample_read(bpfsample *b, const bpf_proc **out)
{
    (void)b;
    *out = NULL;
    return -1;
}
int bpfsample_self_kids(const bpfsample *b)
{
    (void)b;
    return -1;
}
const bpf_proc *bpfsample_find(const bpfsample *b, pid_t pid)
{
    (void)b;
    (void)pid;
    return NULL;
}
void bpfsample_close(bpfsample *b)
{
    (void)b;
}

#endif

static int reader_read(void *ctx, const proc_snap **out)
{
    return bpfsample_read(ctx, out);
}
static int reader_self_kids(void *ctx)
{
    return bpfsample_self_kids(ctx);
}
static void reader_close(void *ctx)
{
    bpfsample_close(ctx);
}

void bpfsample_reader(bpfsample *b, proctree_reader *out)
{
    memset(out, 0, sizeof *out);
    out->name = "bpf";
    out->walk = bpfsample_cgroup_walk(b) ? "bpf-cgroup" : "bpf-tasks";
    out->partial = bpfsample_cgroup_walk(b);
    out->ctx = b;
    out->read = reader_read;
    out->self_kids = reader_self_kids;
    out->close = reader_close;
}
