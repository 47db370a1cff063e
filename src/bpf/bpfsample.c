/* bpfsample.c — user-space half of the BPF sampler (see bpfsample.h): loads
 * tree.bpf.c through its generated libbpf skeleton, reads the iterator once
 * per sample (one read() loop, no /proc file opened), and folds the per-thread
 * records into per-process figures computed the way the kernel computes
 * /proc/PID/stat, io and status. */
#include "bpfsample.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef JOBSCOPE_BPF
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf_rec.h"
#include "tree.skel.h"

#define NS_PER_TICK 10000000ull /* USER_HZ = 100 */

struct bpfsample {
    struct tree_bpf *skel;
    struct bpf_link *link;
    struct ring_buffer *ring; /* the cgroup program's records */
    struct bpfrec *rec;
    size_t nrec, caprec;
    bpf_proc *procs;
    struct acc *acc;
    size_t nprocs, capprocs;
    long *hash; /* tgid -> index in procs, -1 empty */
    size_t caphash;
    long page_kb;
    /* to reload with a bigger ring when a job outgrows it */
    pid_t root, anchor;
    char *cgroup_dir;
    uint32_t ring_bytes;
    int grow;
};

/* The cgroup program's ring buffer: its pages are mapped (twice) into
 * jobscope for as long as it runs, so it starts small (1 MiB: about 2,900
 * tasks) and grows fourfold, up to 64 MiB, when a job overflows it. */
#define RING_FIRST (1u << 20)
#define RING_MAX   (64u << 20)

int bpfsample_built(void)
{
    return 1;
}

static int ring_record(void *ctx, void *data, size_t size);

/* libbpf's messages (the verifier's log among them) only with
 * JOBSCOPE_BPF_DEBUG=1: a failed load falls back, said in one line. */
static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    const char *d = getenv("JOBSCOPE_BPF_DEBUG");
    return d && *d && *d != '0' ? vfprintf(stderr, fmt, ap) : 0;
}

static void unload(bpfsample *b)
{
    if (b->ring) ring_buffer__free(b->ring);
    if (b->link) bpf_link__destroy(b->link);
    if (b->skel) tree_bpf__destroy(b->skel);
    b->ring = NULL;
    b->link = NULL;
    b->skel = NULL;
}

/* Loads and attaches the program (the cgroup one with a ring of
 * b->ring_bytes).  0, or -1 with err set. */
static int load(bpfsample *b, char *err, size_t errlen)
{
    const char *cgroup_dir = b->cgroup_dir;
    b->skel = tree_bpf__open();
    if (!b->skel) {
        snprintf(err, errlen, "BPF: cannot open the program: %s", strerror(errno));
        return -1;
    }
    /* load only the program that will run: the cgroup one needs kernel 6.7+ */
    bpf_program__set_autoload(
        cgroup_dir ? b->skel->progs.jobscope_tree : b->skel->progs.jobscope_cgroup, false);
    bpf_map__set_max_entries(b->skel->maps.records, cgroup_dir ? b->ring_bytes : 4096);
    if (tree_bpf__load(b->skel)) {
        snprintf(err, errlen,
                 "BPF: the kernel refused the program (%s): needs root, BTF and task iterators",
                 strerror(errno));
        return -1;
    }
    b->skel->bss->root_tgid = (__u32)b->root;
    b->skel->bss->anchor_tgid = (__u32)b->anchor;
    if (cgroup_dir) {
        int cfd = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cfd < 0) {
            snprintf(err, errlen, "BPF: %s: %s", cgroup_dir, strerror(errno));
            return -1;
        }
        union bpf_iter_link_info li;
        memset(&li, 0, sizeof li);
        li.cgroup.cgroup_fd = (__u32)cfd;
        li.cgroup.order = BPF_CGROUP_ITER_SELF_ONLY;
        LIBBPF_OPTS(bpf_iter_attach_opts, o, .link_info = &li, .link_info_len = sizeof li);
        b->link = bpf_program__attach_iter(b->skel->progs.jobscope_cgroup, &o);
        close(cfd);
        b->ring = ring_buffer__new(bpf_map__fd(b->skel->maps.records), ring_record, b, NULL);
        if (!b->ring) {
            snprintf(err, errlen, "BPF: cannot map the ring buffer: %s", strerror(errno));
            return -1;
        }
    } else {
        b->link = bpf_program__attach_iter(b->skel->progs.jobscope_tree, NULL);
    }
    if (!b->link) {
        snprintf(err, errlen, "BPF: cannot attach the task iterator: %s", strerror(errno));
        return -1;
    }
    return 0;
}

bpfsample *bpfsample_open(pid_t root, pid_t anchor, const char *cgroup_dir, char *err,
                          size_t errlen)
{
    libbpf_set_print(quiet_print);
    bpfsample *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->page_kb = sysconf(_SC_PAGESIZE) / 1024;
    b->root = root;
    b->anchor = anchor;
    b->ring_bytes = RING_FIRST;
    if (cgroup_dir && !(b->cgroup_dir = strdup(cgroup_dir))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (load(b, err, errlen) != 0) goto fail;
    return b;
fail:
    bpfsample_close(b);
    return NULL;
}

void bpfsample_close(bpfsample *b)
{
    if (!b) return;
    unload(b);
    free(b->cgroup_dir);
    free(b->rec);
    free(b->procs);
    free(b->acc);
    free(b->hash);
    free(b);
}

static int rec_room(bpfsample *b, size_t n)
{
    if (n <= b->caprec) return 0;
    size_t ncap = b->caprec ? b->caprec : 1024;
    while (ncap < n) ncap *= 2;
    struct bpfrec *r = realloc(b->rec, ncap * sizeof *r);
    if (!r) return -1;
    b->rec = r;
    b->caprec = ncap;
    return 0;
}

/* One record out of the ring buffer (cgroup program). */
static int ring_record(void *ctx, void *data, size_t size)
{
    bpfsample *b = ctx;
    if (size != sizeof(struct bpfrec) || rec_room(b, b->nrec + 1) < 0) return -1;
    memcpy(&b->rec[b->nrec++], data, sizeof(struct bpfrec));
    return 0;
}

/* Reads the iterator to its end into b->rec. */
static int read_records(bpfsample *b)
{
    if (b->grow) { /* the last read overflowed the ring: a bigger one */
        char err[256];
        b->grow = 0;
        unload(b);
        b->ring_bytes *= 4;
        if (load(b, err, sizeof err) != 0) {
            unload(b);
            return -1;
        }
    }
    if (!b->link) return -1;
    uint64_t lost = b->ring ? b->skel->bss->lost : 0;
    int fd = bpf_iter_create(bpf_link__fd(b->link));
    if (fd < 0) return -1;
    size_t bytes = 0, cap = b->caprec * sizeof *b->rec;
    for (;;) {
        if (cap - bytes < 64 * sizeof *b->rec) {
            size_t ncap = b->caprec ? b->caprec * 2 : 1024;
            struct bpfrec *n = realloc(b->rec, ncap * sizeof *n);
            if (!n) {
                close(fd);
                return -1;
            }
            b->rec = n;
            b->caprec = ncap;
            cap = ncap * sizeof *n;
        }
        ssize_t r = read(fd, (char *)b->rec + bytes, cap - bytes);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            close(fd);
            return -1;
        }
        if (r == 0) break;
        bytes += (size_t)r;
    }
    close(fd);
    b->nrec = bytes / sizeof *b->rec;
    if (b->ring) {
        if (ring_buffer__consume(b->ring) < 0) return -1;
        if (b->skel->bss->lost != lost) { /* incomplete: the caller uses /proc */
            if (b->ring_bytes < RING_MAX) b->grow = 1;
            return -1;
        }
    }
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
    uint32_t nthreads;
} acc;

/* Open addressing, tgid -> slot in b->procs / b->acc (cap a power of two). */
static size_t slot_of(const bpfsample *b, pid_t pid)
{
    size_t mask = b->caphash - 1, i = ((uint32_t)pid * 2654435761u) & mask;
    while (b->hash[i] >= 0 && b->procs[b->hash[i]].pid != pid) i = (i + 1) & mask;
    return i;
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
    b->hash = malloc(b->caphash * sizeof *b->hash);
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
}

int bpfsample_read(bpfsample *b, const bpf_proc **out)
{
    if (read_records(b) < 0) return -1;
    if (grow(b, b->nrec + 1) < 0) return -1;
    memset(b->hash, 0xff, b->caphash * sizeof *b->hash);
    size_t n = 0;
    for (size_t i = 0; i < b->nrec; i++) { /* sum the threads of each process */
        const struct bpfrec *r = &b->rec[i];
        size_t h = slot_of(b, (pid_t)r->tgid);
        if (b->hash[h] < 0) {
            b->hash[h] = (long)n;
            b->procs[n].pid = (pid_t)r->tgid;
            memset(&b->acc[n], 0, sizeof b->acc[n]);
            n++;
        }
        acc *a = &b->acc[b->hash[h]];
        a->ut += r->utime;
        a->st += r->stime;
        a->rt += r->sum_exec_runtime;
        a->minflt += r->min_flt;
        a->majflt += r->maj_flt;
        a->nvcsw += r->nvcsw;
        a->nivcsw += r->nivcsw;
        for (int k = 0; k < BPFREC_NIO; k++) a->io[k] += r->io[k];
        a->nthreads++;
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
    memset(b->hash, 0xff, b->caphash * sizeof *b->hash);
    for (size_t i = 0; i < kept; i++) b->hash[slot_of(b, b->procs[i].pid)] = (long)i;
    *out = b->procs;
    return (int)kept;
}

const bpf_proc *bpfsample_find(const bpfsample *b, pid_t pid)
{
    if (!b->caphash) return NULL;
    long i = b->hash[slot_of(b, pid)];
    return i >= 0 ? &b->procs[i] : NULL;
}

#endif

static int reader_read(void *ctx, const proc_snap **out)
{
    return bpfsample_read(ctx, out);
}
static void reader_close(void *ctx)
{
    bpfsample_close(ctx);
}

int jobscope_bpf_reader(pid_t root, pid_t anchor, const char *cgroup_dir, proctree_reader *out,
                        char *err, size_t errlen)
{
    bpfsample *b = bpfsample_open(root, anchor, cgroup_dir, err, errlen);
    if (!b) return -1;
    const proc_snap *v;
    if (bpfsample_read(b, &v) < 0) { /* one trial read: fail now, not mid-job */
        snprintf(err, errlen, "BPF: the first read of the tree failed");
        bpfsample_close(b);
        return -1;
    }
    malloc_trim(0); /* libbpf parsed the kernel's BTF (MiBs) to load: give it back */
    memset(out, 0, sizeof *out);
    out->name = "bpf";
    out->walk = cgroup_dir ? "bpf-cgroup" : "bpf-tasks";
    out->ctx = b;
    out->read = reader_read;
    out->close = reader_close;
    return 0;
}

#ifndef JOBSCOPE_BPF /* built without clang/bpftool/libbpf/BTF */

struct bpfsample {
    int unused;
};

int bpfsample_built(void)
{
    return 0;
}

bpfsample *bpfsample_open(pid_t root, pid_t anchor, const char *cgroup_dir, char *err,
                          size_t errlen)
{
    (void)root;
    (void)anchor;
    (void)cgroup_dir;
    snprintf(err, errlen,
             "BPF sampler not built (needs clang, bpftool, libbpf and kernel BTF at build time)");
    return NULL;
}
int bpfsample_read(bpfsample *b, const bpf_proc **out)
{
    (void)b;
    *out = NULL;
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
