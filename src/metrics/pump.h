/* pump.h — `jobscope run --scan-output`: the job's stdout and stderr go into
 * pipes; a thread reads them, writes every byte on, at once and unchanged,
 * to jobscope's own stdout and stderr, and feeds each stream to its payload
 * scanner (payload.h).  With strip on, payload blocks are removed from what
 * is written on.  Without strip a relay process (pump.c) passes the bytes
 * on and outlives jobscope until every writer is gone; we scan its copy.
 * stdout and stderr on one open file description share one pipe.  When
 * jobscope's own stdout/stderr break, the job's pipe is closed (SIGPIPE). */
#ifndef JOBSCOPE_METRICS_PUMP_H
#define JOBSCOPE_METRICS_PUMP_H

#include <spawn.h>
#include <stddef.h>

typedef struct pump pump;

typedef struct pump_cbs {
    void (*block)(void *ctx, const char *stream, const char *p, size_t n);
    void (*error)(void *ctx, const char *stream, const char *reason, size_t size);
    void *ctx;
    /* Called in the --scan-output relay right after it forked (no
     * allocation): move it out of the job's cgroup (NULL: nothing to do). */
    int (*send_home)(void *ctx, pid_t pid);
} pump_cbs;

/* Creates the pipes.  out_fd/err_fd: where the bytes go (1 and 2). */
pump *pump_open(int strip, int out_fd, int err_fd, const pump_cbs *cb);
/* The child's side: dup2 the pipes onto 1 and 2 in the spawned job. */
int pump_spawn_actions(pump *p, posix_spawn_file_actions_t *fa);
/* After the spawn: close the child's side here, start the thread. */
int pump_start(pump *p);
/* The job ended: read on until both pipes reach EOF, or until they stay
 * quiet for grace_s (a background process still holds them). */
void pump_stop(pump *p, double grace_s);
void pump_free(pump *p);
unsigned long long pump_bytes(const pump *p, int stream); /* 0: stdout, 1: stderr */

#endif
