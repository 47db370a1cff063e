/* bpfload.c — the plugin jobscope-bpf.so (docs/bpf.md): loads the BPF
 * sampler's programs (tree.bpf.c) through the libbpf skeleton generated at
 * build time and hands their file descriptors to the caller (bpfpin.c),
 * which pins them for later runs.  This is the only code that links libbpf:
 * it parses the kernel's BTF for the CO-RE relocations and runs the
 * verifier, about 0.4 s of CPU and a transient 12 MiB, paid once per node
 * when the objects are pinned.  A run that finds them pinned never loads
 * it. */
#include "bpfpin.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf_rec.h"
#include "tree.skel.h"

/* libbpf's messages (the verifier's log among them) only with
 * JOBSCOPE_BPF_DEBUG=1: a failed load falls back, said in one line. */
static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    const char *d = getenv("JOBSCOPE_BPF_DEBUG");
    return d && *d && *d != '0' ? vfprintf(stderr, fmt, ap) : 0;
}

/* Opens and loads the skeleton; with_cgroup 0 leaves the cgroup program
 * out (kernels before 6.7 have no css_task iterator), with_count 0 the fork
 * and exit programs. */
static struct tree_bpf *load(int with_cgroup, int with_count)
{
    struct tree_bpf *skel = tree_bpf__open();
    if (!skel) return NULL;
    if (!with_cgroup) bpf_program__set_autoload(skel->progs.jobscope_cgroup, false);
    if (!with_count) {
        bpf_program__set_autoload(skel->progs.jobscope_fork, false);
        bpf_program__set_autoload(skel->progs.jobscope_exit, false);
    }
    if (tree_bpf__load(skel)) {
        int e = errno;
        tree_bpf__destroy(skel);
        errno = e;
        return NULL;
    }
    return skel;
}

static int dup_fd(int fd)
{
    return fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
}

int jobscope_bpf_load(int fds[BPFSET_N], char *err, size_t errlen);
int jobscope_bpf_load(int fds[BPFSET_N], char *err, size_t errlen)
{
    libbpf_set_print(quiet_print);
    for (int i = 0; i < BPFSET_N; i++) fds[i] = -1;
    static const int tries[][2] = {{1, 1}, {0, 1}, {0, 0}};
    struct tree_bpf *skel = NULL;
    int t;
    for (t = 0; t < 3 && !skel; t++) skel = load(tries[t][0], tries[t][1]);
    if (!skel) {
        snprintf(err, errlen,
                 "BPF: the kernel refused the program (%s): needs root, BTF and task iterators",
                 strerror(errno));
        return -1;
    }
    int with_cgroup = tries[t - 1][0], with_count = tries[t - 1][1];
    fds[BPFSET_TASKS] = dup_fd(bpf_program__fd(skel->progs.jobscope_tasks));
    if (with_cgroup) fds[BPFSET_CGROUP] = dup_fd(bpf_program__fd(skel->progs.jobscope_cgroup));
    fds[BPFSET_CFG] = dup_fd(bpf_map__fd(skel->maps.cfg));
    fds[BPFSET_OUTS] = dup_fd(bpf_map__fd(skel->maps.outs));
    if (with_count) { /* attached for as long as the links live (pinned: until removed) */
        struct bpf_link *f = bpf_program__attach(skel->progs.jobscope_fork);
        struct bpf_link *x = f ? bpf_program__attach(skel->progs.jobscope_exit) : NULL;
        if (f && x) {
            fds[BPFSET_MEMBERS] = dup_fd(bpf_map__fd(skel->maps.members));
            fds[BPFSET_COUNTS] = dup_fd(bpf_map__fd(skel->maps.counts));
            fds[BPFSET_LINK_FORK] = dup_fd(bpf_link__fd(f));
            fds[BPFSET_LINK_EXIT] = dup_fd(bpf_link__fd(x));
        }
        if (x) bpf_link__destroy(x); /* the dup'ed fds keep them attached */
        if (f) bpf_link__destroy(f);
    }
    tree_bpf__destroy(skel); /* the objects live on in the fds */
    malloc_trim(0);          /* libbpf parsed the kernel's BTF (MiBs): give it back */
    if (fds[BPFSET_TASKS] < 0 || fds[BPFSET_CFG] < 0 || fds[BPFSET_OUTS] < 0 ||
        (with_cgroup && fds[BPFSET_CGROUP] < 0)) {
        snprintf(err, errlen, "BPF: %s", strerror(errno));
        for (int k = 0; k < BPFSET_N; k++)
            if (fds[k] >= 0) close(fds[k]);
        return -1;
    }
    return 0;
}
