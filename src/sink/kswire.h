/* kswire.h — pegasus-kickstart's monitoring wire (KICKSTART_MON_URL=
 * kickstart://HOST:PORT): what a real kickstart running with -m hands its
 * job, and what jobscope kickstart hands its own (src/kickstart/ksmon.c).
 *
 * One report per TCP connection: the reporter connects, sends one
 * ProcStats structure in the C layout of kickstart's procfs.h on an LP64
 * machine (296 bytes, host byte order, no PAPI counters), and closes.  The
 * listener keeps the latest report per (host, pid) and adds them up with
 * its own readings: pegasus-monitor reports its whole process group as one
 * MERGED record under its own pid, and so does `jobscope run`
 * (sink/kickstart.c). */
#ifndef JOBSCOPE_KSWIRE_H
#define JOBSCOPE_KSWIRE_H

#include <stdint.h>

enum kswire_type { KSWIRE_PROCFS = 0, KSWIRE_INTERPOSE = 1, KSWIRE_MERGED = 2 };

typedef struct kswire_stats {
    int32_t type; /* kswire_type */
    int32_t pad0;
    double ts;     /* epoch seconds */
    uint32_t host; /* IPv4 address of the reporter, host byte order */
    int32_t pid, ppid;
    uint32_t rank;
    uint64_t rchar, wchar, syscr, syscw;
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
    double utime, stime, iowait;       /* seconds */
    uint64_t vmpeak, vm, rsspeak, rss; /* kB */
    uint32_t procs, threads;
    uint64_t bsend, brecv;
    char exe[128];
} kswire_stats;

_Static_assert(sizeof(kswire_stats) == 296, "kickstart's ProcStats is 296 bytes on LP64");

#endif
