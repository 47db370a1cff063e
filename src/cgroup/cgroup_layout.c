/* cgroup_layout.c — where the cgroups are: parses /proc/self/mountinfo
 * (cgroup2 and v1 mounts) and /proc/PID/cgroup, picks the v2 or the v1
 * reader, opens a process's cgroup or a named one, and creates the job's
 * own cgroup under jobscope's (cgroup_create_child).
 *
 * Layout choice: the unified hierarchy when its root lists the memory or
 * cpu controller (pure v2, or a hybrid that moved them there), else the v1
 * hierarchies when memory or cpuacct is mounted (hybrid/legacy, like this
 * project's development machine whose v2 mount is nearly empty). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cgroup.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    if (!out) return NULL;
    while (*s) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 4;
        } else {
            *o++ = *s++;
        }
    }
    *o = 0;
    return out;
}

static int has_token(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = list; p && *p;) {
        if (!strncmp(p, tok, n) && (p[n] == ',' || p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
            return 1;
        p = strpbrk(p, ", ");
        if (p) p++;
    }
    return 0;
}

int cgroup_mounts_parse(const char *mountinfo_path, cg_mounts *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(mountinfo_path ? mountinfo_path : "/proc/self/mountinfo", "re");
    if (!f) return -1;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char root[1024], mnt[1024], fstype[64], source[256], opts[1024];
        char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2 ||
            sscanf(dash + 3, "%63s %255s %1023s", fstype, source, opts) != 3)
            continue;
        if (!strcmp(fstype, "cgroup2")) {
            if (!m->v2) {
                m->v2 = unescape(mnt);
                m->v2_root = unescape(root);
            }
        } else if (!strcmp(fstype, "cgroup")) {
            for (int i = 0; i < CG_V1_N; i++)
                if (!m->v1[i] && has_token(opts, cg_v1_names[i])) {
                    m->v1[i] = unescape(mnt);
                    m->v1_root[i] = unescape(root);
                }
        }
    }
    fclose(f);
    if (m->v2) {
        char buf[512];
        if (cg_read_file(m->v2, "cgroup.controllers", buf, sizeof buf) > 0)
            m->v2_controllers = has_token(buf, "memory") || has_token(buf, "cpu");
    }
    return 0;
}

void cgroup_mounts_free(cg_mounts *m)
{
    free(m->v2);
    free(m->v2_root);
    for (int i = 0; i < CG_V1_N; i++) {
        free(m->v1[i]);
        free(m->v1_root[i]);
    }
    memset(m, 0, sizeof *m);
}

int cgroup_procpath_parse(const char *proc_cgroup_path, cg_procpath *p)
{
    memset(p, 0, sizeof *p);
    FILE *f = fopen(proc_cgroup_path, "re");
    if (!f) return -1;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = 0;
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (!strcmp(line, "0") && !*ctrls) {
            if (!p->v2) p->v2 = strdup(path);
            continue;
        }
        for (int i = 0; i < CG_V1_N; i++)
            if (!p->v1[i] && has_token(ctrls, cg_v1_names[i])) p->v1[i] = strdup(path);
    }
    fclose(f);
    return 0;
}

void cgroup_procpath_free(cg_procpath *p)
{
    free(p->v2);
    for (int i = 0; i < CG_V1_N; i++) free(p->v1[i]);
    memset(p, 0, sizeof *p);
}

int cgroup_layout_version(const cg_mounts *m)
{
    /* a knob for tests and odd setups: force one layout */
    const char *force = getenv("JOBSCOPE_CGROUP_LAYOUT");
    if (force && !strcmp(force, "v2") && m->v2) return 2;
    if (force && !strcmp(force, "v1") && (m->v1[CG_V1_MEMORY] || m->v1[CG_V1_CPUACCT])) return 1;
    if (m->v2 && m->v2_controllers) return 2;
    if (m->v1[CG_V1_MEMORY] || m->v1[CG_V1_CPUACCT]) return 1;
    return 0;
}

/* mount + (path less the mount's root) */
static int join(char *out, size_t cap, const char *mnt, const char *mroot, const char *path)
{
    size_t rl = mroot ? strlen(mroot) : 0;
    if (rl > 1 && !strncmp(path, mroot, rl) && (path[rl] == '/' || path[rl] == 0)) path += rl;
    while (*path == '/') path++;
    int n = snprintf(out, cap, "%s%s%s", mnt, *path ? "/" : "", path);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Opens the cgroup at path (relative to the hierarchies' roots) with the
 * reader the layout asks for. */
static cgroup *open_rel(const cg_mounts *m, int version, const char *const rel[CG_V1_N],
                        const char *v2rel)
{
    char buf[PATH_MAX];
    if (version == 2) {
        if (!v2rel || join(buf, sizeof buf, m->v2, m->v2_root, v2rel) < 0 || !is_dir(buf)) {
            errno = ENOENT;
            return NULL;
        }
        return cgroup_v2_open(buf);
    }
    char *dirs[CG_V1_N] = {0};
    const char *cdirs[CG_V1_N] = {0};
    int any = 0;
    for (int i = 0; i < CG_V1_N; i++) {
        if (!m->v1[i] || !rel[i] || join(buf, sizeof buf, m->v1[i], m->v1_root[i], rel[i]) < 0 ||
            !is_dir(buf))
            continue;
        cdirs[i] = dirs[i] = strdup(buf);
        any = 1;
    }
    cgroup *cg = NULL;
    if (any) {
        const char *name = rel[CG_V1_MEMORY]    ? rel[CG_V1_MEMORY]
                           : rel[CG_V1_CPUACCT] ? rel[CG_V1_CPUACCT]
                                                : "/";
        cg = cgroup_v1_open(cdirs, name);
    } else {
        errno = ENOENT;
    }
    for (int i = 0; i < CG_V1_N; i++) free(dirs[i]);
    return cg;
}

cgroup *cgroup_of_pid(pid_t pid)
{
    char path[64];
    cg_mounts m;
    cg_procpath p;
    cgroup *cg = NULL;
    if (pid)
        snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
    else
        strcpy(path, "/proc/self/cgroup");
    if (cgroup_mounts_parse(NULL, &m) < 0) return NULL;
    if (cgroup_procpath_parse(path, &p) < 0) {
        cgroup_mounts_free(&m);
        return NULL;
    }
    int v = cgroup_layout_version(&m);
    /* v1, another process: a hierarchy where it sits at the root (Slurm's
     * task/cgroup without jobacct_gather/cgroup leaves cpuacct there) holds
     * the whole machine, not the job: leave it out when another is its own */
    int own = 0;
    for (int i = 0; pid && v == 1 && i < CG_V1_N; i++)
        if (p.v1[i] && strcmp(p.v1[i], "/")) own = 1;
    for (int i = 0; own && i < CG_V1_N; i++)
        if (p.v1[i] && !strcmp(p.v1[i], "/")) {
            free(p.v1[i]);
            p.v1[i] = NULL;
        }
    if (v)
        cg = open_rel(&m, v, (const char *const *)p.v1, p.v2);
    else
        errno = ENOENT;
    cgroup_procpath_free(&p);
    cgroup_mounts_free(&m);
    return cg;
}

cgroup *cgroup_open_path(const char *path)
{
    cg_mounts m;
    cgroup *cg = NULL;
    if (!path || !*path || cgroup_mounts_parse(NULL, &m) < 0) {
        errno = EINVAL;
        return NULL;
    }
    int v = cgroup_layout_version(&m);
    const char *rel = path;
    /* a full path under one of the mounts: take the path inside it */
    if (m.v2 && !strncmp(path, m.v2, strlen(m.v2)) &&
        (path[strlen(m.v2)] == '/' || !path[strlen(m.v2)])) {
        if (is_dir(path)) cg = cgroup_v2_open(path);
        goto out;
    }
    for (int i = 0; i < CG_V1_N; i++) {
        size_t l = m.v1[i] ? strlen(m.v1[i]) : 0;
        if (l && !strncmp(path, m.v1[i], l) && (path[l] == '/' || !path[l])) {
            rel = path + l;
            v = 1;
            break;
        }
    }
    if (!*rel) rel = "/";
    if (v) {
        const char *rels[CG_V1_N];
        for (int i = 0; i < CG_V1_N; i++) rels[i] = rel;
        cg = open_rel(&m, v, rels, rel);
    }
out:
    if (!cg && !errno) errno = ENOENT;
    cgroup_mounts_free(&m);
    return cg;
}

/* Cgroups of earlier jobscopes whose job left a daemon behind could not be
 * removed at the end: remove those that are empty now, when their jobscope
 * (the pid in the name) is gone.  rmdir refuses a cgroup still in use. */
static void sweep_stale(const char *parent)
{
    DIR *d = opendir(parent);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        int n = 0;
        if (sscanf(e->d_name, "jobscope-%ld%n", &pid, &n) != 1 || pid <= 0 ||
            (e->d_name[n] && strcmp(e->d_name + n, ".self")))
            continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", parent, e->d_name) < (int)sizeof path) rmdir(path);
    }
    closedir(d);
}

static const char *const v2_ctl[] = {"memory", "cpu", "io", "pids"};
#define V2_NCTL 4

/* v2: enable the controllers jobscope reads in dir's children, one by one
 * (a missing one is not an error).  Returns a mask of those now on; *ours
 * gets the ones this call turned on. */
static unsigned v2_enable(const char *dir, unsigned *ours)
{
    char buf[512];
    unsigned on = 0;
    for (int i = 0; i < V2_NCTL; i++) {
        char w[16];
        if (cg_read_file(dir, "cgroup.subtree_control", buf, sizeof buf) >= 0 &&
            has_token(buf, v2_ctl[i])) {
            on |= 1u << i;
            continue;
        }
        snprintf(w, sizeof w, "+%s", v2_ctl[i]);
        if (cg_write_str(dir, "cgroup.subtree_control", w) == 0) {
            on |= 1u << i;
            *ours |= 1u << i;
        }
    }
    return on;
}

static int create_v2(const cg_mounts *m, const cg_procpath *p, const char *name, cg_child *out)
{
    char own[PATH_MAX], dir[PATH_MAX], self[PATH_MAX];
    if (!p->v2 || join(own, sizeof own, m->v2, m->v2_root, p->v2) < 0 ||
        snprintf(dir, sizeof dir, "%s/%s", own, name) >= (int)sizeof dir ||
        snprintf(self, sizeof self, "%s/%s.self", own, name) >= (int)sizeof self) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char buf[512];
    int need = !(cg_read_file(own, "cgroup.subtree_control", buf, sizeof buf) >= 0 &&
                 has_token(buf, "memory"));
    sweep_stale(own);
    if (mkdir(dir, 0755) < 0) return -1;
    out->cg = cgroup_v2_open(dir);
    unsigned ours = 0;
    if (need && v2_enable(own, &ours) == 0) {
        /* "no internal processes": own holds jobscope, so the controllers
         * cannot be enabled below it.  Move jobscope to a leaf of its own
         * and try again; if others still live in own, go without. */
        cgroup *leaf = NULL;
        if (mkdir(self, 0755) == 0 && (leaf = cgroup_v2_open(self)) &&
            leaf->ops->attach(leaf, getpid()) == 0) {
            if (v2_enable(own, &ours) != 0) {
                out->home = leaf;
                out->v2_parent = strdup(own);
                out->v2_enabled = ours;
                return out->cg ? 0 : -1;
            }
            cgroup *back = cgroup_v2_open(own);
            if (back) {
                back->ops->attach(back, getpid());
                back->ops->free(back);
            }
        }
        if (leaf) leaf->ops->free(leaf);
        rmdir(self);
    }
    out->home = cgroup_v2_open(own);
    return out->cg && out->home ? 0 : -1;
}

static int create_v1(const cg_mounts *m, const cg_procpath *p, const char *name, cg_child *out)
{
    char own[CG_V1_N][PATH_MAX], dir[CG_V1_N][PATH_MAX];
    const char *owns[CG_V1_N] = {0}, *dirs[CG_V1_N] = {0};
    int made = 0;
    for (int i = 0; i < CG_V1_N; i++) {
        if (!m->v1[i] || !p->v1[i] ||
            join(own[i], sizeof own[i], m->v1[i], m->v1_root[i], p->v1[i]) < 0 ||
            snprintf(dir[i], sizeof dir[i], "%s/%s", own[i], name) >= (int)sizeof dir[i])
            continue;
        sweep_stale(own[i]);
        if (mkdir(dir[i], 0755) < 0 && errno != EEXIST) {
            if (i == CG_V1_MEMORY || i == CG_V1_CPUACCT)
                goto fail; /* without these it is not worth it */
            continue;
        }
        owns[i] = own[i];
        dirs[i] = dir[i];
        made++;
    }
    if (!made) {
        errno = ENOENT;
        return -1;
    }
    char rel[PATH_MAX];
    const char *base = p->v1[CG_V1_MEMORY] ? p->v1[CG_V1_MEMORY] : p->v1[CG_V1_CPUACCT];
    snprintf(rel, sizeof rel, "%s%s%s", base ? base : "",
             base && base[strlen(base) - 1] == '/' ? "" : "/", name);
    out->cg = cgroup_v1_open(dirs, rel);
    out->home = cgroup_v1_open(owns, base ? base : "/");
    return out->cg && out->home ? 0 : -1;
fail:;
    int e = errno;
    for (int i = 0; i < CG_V1_N; i++)
        if (dirs[i]) rmdir(dirs[i]);
    errno = e;
    return -1;
}

int cgroup_create_child(const char *name, cg_child *out)
{
    cg_mounts m;
    cg_procpath p;
    memset(out, 0, sizeof *out);
    if (cgroup_mounts_parse(NULL, &m) < 0) return -1;
    if (cgroup_procpath_parse("/proc/self/cgroup", &p) < 0) {
        cgroup_mounts_free(&m);
        return -1;
    }
    int rc, v = cgroup_layout_version(&m);
    if (v == 2)
        rc = create_v2(&m, &p, name, out);
    else if (v == 1)
        rc = create_v1(&m, &p, name, out);
    else {
        errno = ENOENT;
        rc = -1;
    }
    int e = errno;
    if (rc < 0) {
        if (out->cg) {
            out->cg->ops->remove(out->cg);
            out->cg->ops->free(out->cg);
        }
        if (out->home) out->home->ops->free(out->home);
        memset(out, 0, sizeof *out);
    }
    cgroup_procpath_free(&p);
    cgroup_mounts_free(&m);
    errno = e;
    return rc;
}

int cgroup_memory_charged(void)
{
    cg_mounts m;
    cg_procpath p;
    if (cgroup_mounts_parse(NULL, &m) < 0) return 0;
    if (cgroup_procpath_parse("/proc/self/cgroup", &p) < 0) {
        cgroup_mounts_free(&m);
        return 0;
    }
    int v = cgroup_layout_version(&m), charged = 0;
    const char *path = v == 2 ? p.v2 : v == 1 && m.v1[CG_V1_MEMORY] ? p.v1[CG_V1_MEMORY] : NULL;
    if (path && strcmp(path, "/") != 0) charged = v == 1 || m.v2_controllers;
    cgroup_procpath_free(&p);
    cgroup_mounts_free(&m);
    return charged;
}

int cgroup_enter(cg_child *c)
{
    return c->cg->ops->attach(c->cg, getpid());
}
int cgroup_leave(cg_child *c)
{
    return c->home->ops->attach(c->home, getpid());
}

int cgroup_child_destroy(cg_child *c, double wait_s)
{
    int rc = 0;
    if (c->cg) {
        /* processes that just exited may linger a moment as zombies */
        for (int i = 0;; i++) {
            if (c->cg->ops->remove(c->cg) == 0 || errno == ENOENT) break;
            if (errno != EBUSY || i * 0.02 >= wait_s) {
                rc = -1;
                break;
            }
            usleep(20000);
        }
        c->cg->ops->free(c->cg);
    }
    if (c->v2_parent && c->home) {
        /* undo the leaf: switch off what we enabled, go back, remove it */
        for (int i = 0; i < V2_NCTL; i++)
            if (c->v2_enabled & (1u << i)) {
                char w[16];
                snprintf(w, sizeof w, "-%s", v2_ctl[i]);
                cg_write_str(c->v2_parent, "cgroup.subtree_control", w);
            }
        cgroup *own = cgroup_v2_open(c->v2_parent);
        if (own && own->ops->attach(own, getpid()) == 0) c->home->ops->remove(c->home);
        if (own) own->ops->free(own);
    }
    if (c->home) c->home->ops->free(c->home);
    free(c->v2_parent);
    memset(c, 0, sizeof *c);
    return rc;
}
