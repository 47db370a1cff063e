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
 * out (kernels before 6.7 have no css_task iterator). */
static struct tree_bpf *load(int with_cgroup)
{
    struct tree_bpf *skel = tree_bpf__open();
    if (!skel) return NULL;
    if (!with_cgroup) bpf_program__set_autoload(skel->progs.jobscope_cgroup, false);
    if (tree_bpf__load(skel)) {
        int e = errno;
        tree_bpf__destroy(skel);
        errno = e;
        return NULL;
    }
    return skel;
}

int jobscope_bpf_load(int fds[BPFSET_N], char *err, size_t errlen);
int jobscope_bpf_load(int fds[BPFSET_N], char *err, size_t errlen)
{
    libbpf_set_print(quiet_print);
    for (int i = 0; i < BPFSET_N; i++) fds[i] = -1;
    int with_cgroup = 1;
    struct tree_bpf *skel = load(1);
    if (!skel) {
        with_cgroup = 0;
        skel = load(0);
    }
    if (!skel) {
        snprintf(err, errlen,
                 "BPF: the kernel refused the program (%s): needs root, BTF and task iterators",
                 strerror(errno));
        return -1;
    }
    fds[BPFSET_TASKS] = fcntl(bpf_program__fd(skel->progs.jobscope_tasks), F_DUPFD_CLOEXEC, 0);
    if (with_cgroup)
        fds[BPFSET_CGROUP] =
            fcntl(bpf_program__fd(skel->progs.jobscope_cgroup), F_DUPFD_CLOEXEC, 0);
    fds[BPFSET_CFG] = fcntl(bpf_map__fd(skel->maps.cfg), F_DUPFD_CLOEXEC, 0);
    fds[BPFSET_OUTS] = fcntl(bpf_map__fd(skel->maps.outs), F_DUPFD_CLOEXEC, 0);
    tree_bpf__destroy(skel); /* the objects live on in the fds */
    malloc_trim(0);          /* libbpf parsed the kernel's BTF (MiBs): give it back */
    for (int i = 0; i < BPFSET_N; i++)
        if (fds[i] < 0 && (i != BPFSET_CGROUP || with_cgroup)) {
            snprintf(err, errlen, "BPF: %s", strerror(errno));
            for (int k = 0; k < BPFSET_N; k++)
                if (fds[k] >= 0) close(fds[k]);
            return -1;
        }
    return 0;
}
