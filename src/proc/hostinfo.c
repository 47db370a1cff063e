/* hostinfo.c — facts about the machine and the job for the start event. */
#include "hostinfo.h"
#include "procread.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

int hostinfo_cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static char *read_small(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    for (ssize_t r; b;) {
        if (n + 1 >= cap) {
            char *g = realloc(b, cap *= 2);
            if (!g) {
                free(b);
                b = NULL;
                break;
            }
            b = g;
        }
        r = read(fd, b + n, cap - n - 1);
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (b) b[n] = 0;
    if (len) *len = n;
    return b;
}

/* The value after "KEY<blanks>: " in a cpuinfo line, up to the newline. */
static const char *cpuinfo_value(const char *line, const char *key, size_t *len)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || (line[k] != ' ' && line[k] != '\t' && line[k] != ':'))
        return NULL;
    const char *v = strchr(line, ':');
    if (!v) return NULL;
    v += 1 + (v[1] == ' ');
    *len = strcspn(v, "\n");
    return v;
}

int hostinfo_cpuinfo(hostinfo_cpu *c)
{
    memset(c, 0, sizeof *c);
    char *info = read_small("/proc/cpuinfo", NULL);
    if (!info) return -1;
    for (const char *line = info; *line;
         line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
        size_t n = 0;
        const char *v;
        if ((v = cpuinfo_value(line, "processor", &n)))
            c->count++;
        else if (!c->vendor[0] && (v = cpuinfo_value(line, "vendor_id", &n)))
            snprintf(c->vendor, sizeof c->vendor, "%.*s", (int)n, v);
        else if (!c->model[0] && (v = cpuinfo_value(line, "model name", &n)))
            snprintf(c->model, sizeof c->model, "%.*s", (int)n, v);
        else if (!c->mhz && (v = cpuinfo_value(line, "cpu MHz", &n)))
            c->mhz = (unsigned long)(strtod(v, NULL) + 0.5);
    }
    free(info);
    return 0;
}

/* The strings are read into local buffers: the set keeps copies. */
static void put_copy(mset *e, const char *key, const char *v)
{
    mset_put_str(e, key, mset_copy(e, v, strlen(v)));
}

void hostinfo_add(mset *e)
{
    struct utsname u;
    if (uname(&u) == 0) {
        put_copy(e, "kernel", u.release);
        put_copy(e, "machine", u.machine);
    }
    hostinfo_cpu cpu;
    if (hostinfo_cpuinfo(&cpu) == 0 && cpu.model[0])
        put_copy(e, "cpu_model", cpu.model);
    else
        mset_put_null(e, "cpu_model");
    mset_put_i64(e, "cpus_online", sysconf(_SC_NPROCESSORS_ONLN));
    mset_put_i64(e, "cpus_available", hostinfo_cpus_available());
    char *mem = read_small("/proc/meminfo", NULL);
    if (mem) {
        char *m = strstr(mem, "MemTotal:");
        if (m) mset_put_u64(e, "mem_total_kb", strtoull(m + 9, NULL, 10));
        free(mem);
    }
    mset_put_i64(e, "clock_ticks", sysconf(_SC_CLK_TCK));
    mset_put_i64(e, "page_size", sysconf(_SC_PAGESIZE));
}

void hostinfo_add_rlimits(mset *e)
{
    static const struct {
        const char *name;
        int res;
    } lim[] = {
        {"as", RLIMIT_AS},         {"core", RLIMIT_CORE},   {"cpu", RLIMIT_CPU},
        {"data", RLIMIT_DATA},     {"fsize", RLIMIT_FSIZE}, {"memlock", RLIMIT_MEMLOCK},
        {"nofile", RLIMIT_NOFILE}, {"nproc", RLIMIT_NPROC}, {"rss", RLIMIT_RSS},
        {"stack", RLIMIT_STACK},
    };
    mset_open_obj(e, "rlimits");
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
        struct rlimit r;
        if (getrlimit(lim[i].res, &r) != 0) continue;
        mset_open_obj(e, lim[i].name);
        if (r.rlim_cur == RLIM_INFINITY)
            mset_put_null(e, "soft");
        else
            mset_put_u64(e, "soft", r.rlim_cur);
        if (r.rlim_max == RLIM_INFINITY)
            mset_put_null(e, "hard");
        else
            mset_put_u64(e, "hard", r.rlim_max);
        mset_close(e);
    }
    mset_close(e);
}

char *hostinfo_cmdline(pid_t pid)
{
    char path[48];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    size_t n = 0;
    char *s = read_small(path, &n);
    if (!s) return NULL;
    while (n > 0 && s[n - 1] == 0) n--;
    for (size_t i = 0; i < n; i++)
        if (!s[i]) s[i] = ' ';
    s[n] = 0;
    return s;
}

unsigned long long hostinfo_starttime(pid_t pid)
{
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    proc_stat st;
    if (n <= 0 || procread_stat(buf, (size_t)n, &st) != 0) return 0;
    return st.starttime;
}

char *hostinfo_cwd(pid_t pid)
{
    char path[48], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/cwd", (int)pid);
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n < 0) return NULL;
    buf[n] = 0;
    return strdup(buf);
}

char *hostinfo_user(uid_t uid)
{
    struct passwd pw, *res = NULL;
    char buf[2048];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return strdup(pw.pw_name);
    char num[24];
    snprintf(num, sizeof num, "%u", (unsigned)uid);
    return strdup(num);
}
