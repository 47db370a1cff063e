/* bpfpin.c — the sampler's objects loaded once per node (see bpfpin.h):
 * finding the pinned set safely, loading through the plugin, publishing a
 * fresh load for later runs.  No libbpf here: a run that finds the set
 * pinned pays a few bpf(2) calls (bpfsys.c). */
#include "bpfpin.h"
#include "bpfsys.h"
#include "../util/companion.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#ifdef JOBSCOPE_BPF
#include "tree_id.h" /* JOBSCOPE_BPF_ID, generated from the compiled program */
#endif

#define PIN_ROOT_DEFAULT "/sys/fs/bpf/jobscope"
#define PATHLEN          1024 /* a pin directory, or an object in one */

static const char *const pin_names[BPFSET_N] = {"prog_tasks", "prog_cgroup", "map_cfg",
                                                "map_outs",   "map_members", "map_counts",
                                                "link_fork",  "link_exit"};

/* Objects a set may lack: the cgroup walk before kernel 6.7, the process
 * count where the fork and exit programs could not be attached. */
static int optional(int i)
{
    return i == BPFSET_CGROUP || i >= BPFSET_MEMBERS;
}

int bpfpin_built(void)
{
#ifdef JOBSCOPE_BPF
    return 1;
#else
    return 0;
#endif
}

static const char *pin_root(void)
{
    const char *e = getenv("JOBSCOPE_BPF_PIN_DIR");
    if (e && (!strcmp(e, "off") || !strcmp(e, "none"))) return NULL;
    return e && *e ? e : PIN_ROOT_DEFAULT;
}

const char *bpfpin_dir(char *buf, size_t n)
{
#ifdef JOBSCOPE_BPF
    const char *root = pin_root();
    if (!root) return NULL;
    snprintf(buf, n, "%s/%s", root, JOBSCOPE_BPF_ID);
    return buf;
#else
    (void)buf;
    (void)n;
    return NULL;
#endif
}

static void set_init(bpfset *s)
{
    for (int i = 0; i < BPFSET_N; i++) s->fd[i] = -1;
    s->pinned = 0;
}

void bpfset_close(bpfset *s)
{
    for (int i = 0; i < BPFSET_N; i++)
        if (s->fd[i] >= 0) close(s->fd[i]);
    set_init(s);
}

/* Only root's, and nobody else may write: st of the directory or an object. */
static int safe_mode(const struct stat *st)
{
    return st->st_uid == 0 && (st->st_mode & 077) == 0;
}

int bpfpin_open(bpfset *s, char *err, size_t errlen)
{
    set_init(s);
    char dir[PATHLEN];
    if (!bpfpin_built()) {
        snprintf(err, errlen, "the BPF sampler is not built here");
        return -1;
    }
    if (!bpfpin_dir(dir, sizeof dir)) {
        snprintf(err, errlen, "pinning is off (JOBSCOPE_BPF_PIN_DIR)");
        return -1;
    }
    if (geteuid() != 0) {
        snprintf(err, errlen, "the pinned sampler is root's");
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        int absent = errno == ENOENT;
        snprintf(err, errlen, "no pinned sampler in %s: %s", dir, strerror(errno));
        return absent ? -2 : -1;
    }
    struct statfs fs;
    struct stat st;
    int ok = fstatfs(dfd, &fs) == 0 && fs.f_type == BPF_FS_MAGIC && fstat(dfd, &st) == 0;
    if (!ok || !safe_mode(&st)) {
        snprintf(err, errlen, "%s: %s", dir,
                 !ok ? "not on a BPF filesystem" : "not root's alone (mode or owner): ignored");
        close(dfd);
        return -1;
    }
    for (int i = 0; i < BPFSET_N; i++) {
        if (fstatat(dfd, pin_names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (optional(i) && errno == ENOENT) continue;
            snprintf(err, errlen, "%s/%s: %s", dir, pin_names[i], strerror(errno));
            goto fail;
        }
        if (!S_ISREG(st.st_mode) || !safe_mode(&st)) {
            snprintf(err, errlen, "%s/%s: not root's alone (mode or owner): ignored", dir,
                     pin_names[i]);
            goto fail;
        }
        char path[PATHLEN + 32];
        snprintf(path, sizeof path, "%s/%s", dir, pin_names[i]);
        s->fd[i] = bpfsys_obj_get(path);
        if (s->fd[i] < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            goto fail;
        }
    }
    close(dfd);
    s->pinned = 1;
    return 0;
fail:
    close(dfd);
    bpfset_close(s);
    return -1;
}

typedef int (*bpf_load_fn)(int fds[BPFSET_N], char *err, size_t errlen);

/* Removes a directory of pins (a publication that lost the race). */
static void remove_pins(const char *dir)
{
    char path[PATHLEN + 32];
    for (int i = 0; i < BPFSET_N; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, pin_names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* Pins s into this build's directory: into a fresh directory first, then
 * renamed into place, so a run never sees half a set; when another process
 * published first, its set stays and ours is dropped. */
static int publish(const bpfset *s, char *note, size_t notelen)
{
    char dir[PATHLEN];
    const char *root = pin_root();
    if (!bpfpin_dir(dir, sizeof dir) || !root) {
        snprintf(note, notelen, "pinning is off (JOBSCOPE_BPF_PIN_DIR)");
        return -1;
    }
    if (mkdir(root, 0755) != 0 && errno != EEXIST) {
        snprintf(note, notelen, "cannot pin in %s: %s", root, strerror(errno));
        return -1;
    }
    struct statfs fs;
    if (statfs(root, &fs) != 0 || fs.f_type != BPF_FS_MAGIC) {
        snprintf(note, notelen, "cannot pin in %s: not on a BPF filesystem", root);
        return -1;
    }
    char tmp[PATHLEN];
    snprintf(tmp, sizeof tmp, "%s/new-%ld", root, (long)getpid()); /* no dots in bpffs names */
    remove_pins(tmp);
    mode_t old = umask(077);
    int rc = mkdir(tmp, 0700);
    for (int i = 0; rc == 0 && i < BPFSET_N; i++) {
        if (s->fd[i] < 0) continue;
        char path[PATHLEN + 32];
        snprintf(path, sizeof path, "%s/%s", tmp, pin_names[i]);
        rc = bpfsys_obj_pin(s->fd[i], path);
    }
    umask(old);
    if (rc != 0) {
        snprintf(note, notelen, "cannot pin in %s: %s", root, strerror(errno));
        remove_pins(tmp);
        return -1;
    }
    if (rename(tmp, dir) != 0) {
        int e = errno;
        remove_pins(tmp);
        if (e == EEXIST || e == ENOTEMPTY) /* another process published first */
            snprintf(note, notelen, "another set is pinned in %.400s already", dir);
        else
            snprintf(note, notelen, "cannot pin %.400s: %s", dir, strerror(e));
        return -1;
    }
    return 0;
}

int bpfpin_load(bpfset *s, int publish_it, char *err, size_t errlen, char *note, size_t notelen)
{
    set_init(s);
    if (note && notelen) note[0] = 0;
    char path[4096];
    if (!bpfpin_built() || !util_companion("jobscope-bpf.so", path, sizeof path)) {
        snprintf(err, errlen, "the BPF sampler is not built here (jobscope --version says why)");
        return -1;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    bpf_load_fn load = (bpf_load_fn)dlsym(h, "jobscope_bpf_load");
    int rc = load ? load(s->fd, err, errlen) : -1;
    if (!load) snprintf(err, errlen, "%s: no jobscope_bpf_load", path);
    /* libbpf is not needed any more: the objects live on in the fds */
    dlclose(h);
    if (rc != 0) {
        bpfset_close(s);
        return -1;
    }
    char why[512];
    if (publish_it && publish(s, why, sizeof why) == 0)
        s->pinned = 1;
    else if (publish_it && note && notelen)
        snprintf(note, notelen, "%s", why);
    return 0;
}

int bpfpin_get(bpfset *s, char *err, size_t errlen, char *note, size_t notelen)
{
    char why[512];
    if (bpfpin_open(s, why, sizeof why) == 0) return 0;
    return bpfpin_load(s, 1, err, errlen, note, notelen);
}

int bpfpin_node(char *msg, size_t msglen)
{
    bpfset s;
    char dir[PATHLEN];
    if (!bpfpin_built()) {
        snprintf(msg, msglen, "BPF sampler: not built");
        return -2;
    }
    if (geteuid() != 0) {
        snprintf(msg, msglen, "BPF sampler: not pinned (not root)");
        return -2;
    }
    if (!bpfpin_dir(dir, sizeof dir)) {
        snprintf(msg, msglen, "BPF sampler: pinning is off (JOBSCOPE_BPF_PIN_DIR)");
        return -2;
    }
    char why[512];
    if (bpfpin_open(&s, why, sizeof why) == 0) {
        bpfset_close(&s);
        snprintf(msg, msglen, "BPF sampler: pinned in %s", dir);
        return 0;
    }
    /* the default place: mount bpffs where systemd would have, as bpftool does */
    const char *root = pin_root();
    struct statfs fs;
    if (!strcmp(root, PIN_ROOT_DEFAULT) && statfs("/sys/fs/bpf", &fs) == 0 &&
        fs.f_type != BPF_FS_MAGIC)
        mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700");
    char err[512], note[512];
    if (bpfpin_load(&s, 1, err, sizeof err, note, sizeof note) != 0) {
        snprintf(msg, msglen, "BPF sampler: not loaded: %s", err);
        return -1;
    }
    int pinned = s.pinned;
    bpfset_close(&s);
    if (!pinned) {
        snprintf(msg, msglen, "BPF sampler: not pinned: %s", note);
        return -1;
    }
    snprintf(msg, msglen, "BPF sampler: loaded and pinned in %s", dir);
    return 0;
}
