/* bpfcount.c — see bpfcount.h.  Plain bpf(2) calls on the pinned maps
 * members and counts (bpfsys.c); the run's entry in counts is removed when
 * it closes, and by the next run to open once the run is gone (kill -9). */
#include "bpfcount.h"
#include "bpfpin.h"
#include "bpfsys.h"
#include "../proc/hostinfo.h"
#include "../util/clock.h"

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

struct bpfcount {
    int members, counts; /* map fds */
    uint32_t me;
    uint64_t added;       /* members we made (attach: seen by the sampler) */
    struct bpfforks last; /* the kernel's count at the last look */
    double last_at;       /* when (monotonic s): one look serves a whole sample */
};

/* counts entries of runs that are gone (their tgid is not alive any more). */
static void sweep_stale(int counts, uint32_t me)
{
    uint32_t key, next, gone[64];
    const uint32_t *prev = NULL;
    int ngone = 0;
    while (ngone < 64 && bpfsys_map_next_key(counts, prev, &next) == 0) {
        key = next;
        prev = &key;
        if (key != me && !hostinfo_starttime((pid_t)key)) gone[ngone++] = key;
    }
    for (int i = 0; i < ngone; i++) bpfsys_map_delete(counts, &gone[i]);
}

bpfcount *bpfcount_open(int run_mode)
{
    bpfset s;
    char err[512];
    if (bpfpin_open(&s, err, sizeof err) != 0 || s.fd[BPFSET_MEMBERS] < 0 ||
        s.fd[BPFSET_COUNTS] < 0) {
        bpfset_close(&s);
        errno = ENOENT;
        return NULL;
    }
    bpfcount *c = calloc(1, sizeof *c);
    if (!c) {
        bpfset_close(&s);
        errno = ENOMEM;
        return NULL;
    }
    c->members = s.fd[BPFSET_MEMBERS];
    c->counts = s.fd[BPFSET_COUNTS];
    s.fd[BPFSET_MEMBERS] = s.fd[BPFSET_COUNTS] = -1;
    bpfset_close(&s);
    c->me = (uint32_t)getpid();
    sweep_stale(c->counts, c->me);
    struct bpfforks zero = {0, 0};
    if (bpfsys_map_update(c->counts, &c->me, &zero, BPF_ANY) != 0) goto fail;
    /* a job nested in another run's: that run counts this job already */
    uint32_t run;
    if (bpfsys_map_lookup(c->members, &c->me, &run) == 0) {
        errno = EEXIST;
        goto fail;
    }
    return c;
fail:;
    int e = errno;
    bpfsys_map_delete(c->counts, &c->me);
    close(c->members);
    close(c->counts);
    free(c);
    errno = e;
    return NULL;
}

int bpfcount_spawning(bpfcount *c)
{
    return c ? bpfsys_map_update(c->members, &c->me, &c->me, BPF_NOEXIST) : 0;
}

void bpfcount_started(bpfcount *c, pid_t root)
{
    if (!c) return;
    uint32_t r = (uint32_t)root;
    if (bpfsys_map_update(c->members, &r, &c->me, BPF_NOEXIST) == 0) c->added++; /* not counted? */
    bpfsys_map_delete(c->members, &c->me);
}

void bpfcount_add(bpfcount *c, const pid_t *pids, int n)
{
    if (!c) return;
    for (int i = 0; i < n; i++) {
        uint32_t k = (uint32_t)pids[i];
        if (pids[i] > 0 && bpfsys_map_update(c->members, &k, &c->me, BPF_NOEXIST) == 0) c->added++;
    }
}

/* The kernel's count, looked up at most once a millisecond: the process
 * tree's discovery gate and the cgroup source ask in the same sample. */
static struct bpfforks counted(bpfcount *c)
{
    double now = now_mono();
    if (now - c->last_at > 0.001) {
        struct bpfforks f;
        if (bpfsys_map_lookup(c->counts, &c->me, &f) == 0) c->last = f;
        c->last_at = now;
    }
    return c->last;
}

int64_t bpfcount_forks(bpfcount *c)
{
    return c ? (int64_t)counted(c).forks : -1;
}

uint64_t bpfcount_total(bpfcount *c)
{
    if (!c) return 0;
    return counted(c).forks + c->added;
}

uint64_t bpfcount_lost(bpfcount *c)
{
    return c ? counted(c).lost : 0;
}

void bpfcount_close(bpfcount *c)
{
    if (!c) return;
    bpfsys_map_delete(c->members, &c->me);
    bpfsys_map_delete(c->counts, &c->me);
    close(c->members);
    close(c->counts);
    free(c);
}

#else /* built without the BPF sampler */

bpfcount *bpfcount_open(int run_mode)
{
    (void)run_mode;
    errno = ENOSYS;
    return NULL;
}
int bpfcount_spawning(bpfcount *c)
{
    (void)c;
    return 0;
}
void bpfcount_started(bpfcount *c, pid_t root)
{
    (void)c;
    (void)root;
}
void bpfcount_add(bpfcount *c, const pid_t *pids, int n)
{
    (void)c;
    (void)pids;
    (void)n;
}
uint64_t bpfcount_total(bpfcount *c)
{
    (void)c;
    return 0;
}
uint64_t bpfcount_lost(bpfcount *c)
{
    (void)c;
    return 0;
}
int64_t bpfcount_forks(bpfcount *c)
{
    (void)c;
    return -1;
}
void bpfcount_close(bpfcount *c)
{
    (void)c;
}

#endif
