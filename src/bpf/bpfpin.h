/* bpfpin.h — the BPF sampler's programs and maps, loaded once per node and
 * reused (docs/bpf.md, "Loaded once per node").
 *
 * Loading costs about 0.4 s of CPU (libbpf parses the kernel's BTF, the
 * verifier checks both programs) and a transient 12 MiB: paid once, by
 * `jobscope serve` at its start or by the first run that loads BPF, which
 * pin the programs and maps in bpffs, in a directory of this build's own
 * (PIN_ROOT/ID, ID naming the compiled program).  Every later run opens the
 * pinned objects with four bpf(2) calls and no verifier.
 *
 * Who may use them: root only.  The directory is 0700 and each object 0600,
 * owned by root; a run checks that before opening anything (a directory or
 * object that another user could have written is ignored and the run loads
 * its own).  What one run changes in the shared maps is its own entry,
 * keyed by its own tgid, which the programs find from the reading task:
 * runs cannot see or steer each other's sampling (bpfsample.c).
 *
 * $JOBSCOPE_BPF_PIN_DIR names PIN_ROOT (default /sys/fs/bpf/jobscope);
 * "off" turns pinning off (every run loads its own, as before). */
#ifndef JOBSCOPE_BPFPIN_H
#define JOBSCOPE_BPFPIN_H

#include <stddef.h>

enum {
    BPFSET_TASKS,     /* the host-task walk */
    BPFSET_CGROUP,    /* the cgroup walk */
    BPFSET_CFG,       /* per-run state of the walks */
    BPFSET_OUTS,      /* per-run record arrays of the cgroup walk */
    BPFSET_MEMBERS,   /* the process count: live members of each run's job */
    BPFSET_COUNTS,    /* the process count: per run */
    BPFSET_LINK_FORK, /* the fork and exit programs, attached */
    BPFSET_LINK_EXIT,
    BPFSET_N
};

/* Open objects of the sampler: fd[BPFSET_CGROUP] is -1 on kernels without
 * the cgroup walk (before 6.7), the process count's four -1 where the fork
 * and exit programs could not be attached. */
typedef struct bpfset {
    int fd[BPFSET_N];
    int pinned; /* 1: opened from (or published to) the pin directory */
} bpfset;

/* 1 if this jobscope was built with the BPF sampler. */
int bpfpin_built(void);
/* This build's pin directory into buf; NULL when pinning is off. */
const char *bpfpin_dir(char *buf, size_t n);

/* Opens the pinned set (root, checked owner and modes).  0; -2 when none
 * is pinned; -1 when it cannot be used (not root, unsafe modes...); err
 * says why in one line. */
int bpfpin_open(bpfset *s, char *err, size_t errlen);
/* Loads the programs through the plugin (jobscope-bpf.so); with publish,
 * pins them for later runs too (a failure to pin is said in note, not an
 * error).  0, or -1 with err set. */
int bpfpin_load(bpfset *s, int publish, char *err, size_t errlen, char *note, size_t notelen);
/* The pinned set if there is one, else a fresh load, published. */
int bpfpin_get(bpfset *s, char *err, size_t errlen, char *note, size_t notelen);
void bpfset_close(bpfset *s);

/* For `jobscope serve` at its start: makes sure this node has the sampler
 * pinned (as root; mounts bpffs on /sys/fs/bpf when nothing is mounted
 * there and the default PIN_ROOT is used, as bpftool does).  0: pinned (now
 * or already), -1: could not (msg says why: no bpffs, the kernel refused...),
 * -2: not for this process (not root, not built, pinning off). */
int bpfpin_node(char *msg, size_t msglen);

#endif
