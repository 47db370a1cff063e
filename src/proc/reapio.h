/* reapio.h — the I/O of a child jobscope reaps, when its zombie's
 * /proc/PID/io cannot be read.
 *
 * The kernel makes a zombie's /proc/PID/io root's (a task without memory is
 * owned by root), so a user who is not root cannot read the final I/O of
 * the children jobscope reaps.  But wait4() adds that I/O -- the child's own
 * and its reaped descendants' -- to jobscope's signal-level counters, which
 * /proc/self/io shows together with the counters of jobscope's live
 * threads.  So the child's I/O is the growth of
 *
 *     S = /proc/self/io  -  sum over live threads of /proc/self/task/TID/io
 *
 * across the wait4().  S changes only when jobscope reaps or one of its
 * threads exits; a snapshot of it is taken so that no other thread did I/O
 * while it was read (their files are read before and after, and must agree;
 * the reading thread's own reads are known and subtracted), retried a few
 * times, else the figure is marked inexact.
 *
 *   reapio r; reapio_init(&r);
 *   reapio_before(&r);              before wait4
 *   wait4(...)
 *   reapio_after(&r, &io)           0: io exact; -1: io a best effort */
#ifndef JOBSCOPE_REAPIO_H
#define JOBSCOPE_REAPIO_H

#include <stdint.h>
#include <sys/types.h>
#include "procread.h"

#define REAPIO_MAX_THREADS 64 /* jobscope's own threads: a handful */

/* S at one moment, and the threads it was taken with (sorted) and their
 * counters: a thread that exits moves its I/O into S. */
typedef struct reapio_snap {
    proc_io sig;
    pid_t tids[REAPIO_MAX_THREADS];
    proc_io io[REAPIO_MAX_THREADS];
    int n, valid;
} reapio_snap;

typedef struct reapio {
    reapio_snap base; /* S before the wait4 */
    int have_base;    /* reapio_before ran */
    int base_exact;
    unsigned long inexact; /* reaps whose I/O was not exact */
} reapio;

void reapio_init(reapio *r);
/* Before a wait4 of a child whose I/O is not readable. */
void reapio_before(reapio *r);
/* After it: *io is the reaped child's I/O.  0 if exact, -1 if not. */
int reapio_after(reapio *r, proc_io *io);

#endif
