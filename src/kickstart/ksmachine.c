/* ksmachine.c — the record's "machine:" section as kickstart's Linux
 * provider writes it (uname, page size, memory and swap in KiB, CPUs, load,
 * the node's processes and tasks by state) plus the boot time its XML had,
 * and the primary interface of the invocation's "interface"/"hostaddr".
 *
 * CPU facts come from src/proc/hostinfo.c; the process states from each
 * /proc/PID/stat and /proc/PID/task/TID/stat (procread). */
#include "kickstart.h"
#include "../proc/hostinfo.h"
#include "../proc/procread.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

enum { ST_RUNNING, ST_SLEEPING, ST_WAITING, ST_STOPPED, ST_ZOMBIE, ST_OTHER, ST_N };
static const char *const state_names[ST_N] = {"running", "sleeping", "waiting",
                                              "stopped", "zombie",   "other"};

typedef struct ks_counts {
    unsigned total, state[ST_N];
    uint64_t vmsize_kb, rss_kb;
} ks_counts;

static int state_index(char c)
{
    switch (c) {
    case 'R':
        return ST_RUNNING;
    case 'S':
        return ST_SLEEPING;
    case 'D':
        return ST_WAITING;
    case 'T':
        return ST_STOPPED;
    case 'Z':
        return ST_ZOMBIE;
    default:
        return ST_OTHER;
    }
}

/* One /proc/.../stat into c; 0 if it was read. */
static int count_stat(const char *path, ks_counts *c, long page_kb)
{
    char buf[1024];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    proc_stat st;
    if (n <= 0 || procread_stat(buf, (size_t)n, &st) != 0) return -1;
    c->total++;
    c->state[state_index(st.state)]++;
    c->vmsize_kb += st.vsize / 1024;
    c->rss_kb += st.rss * (uint64_t)page_kb;
    return 0;
}

static int numeric(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

static void count_tasks(const char *pid, ks_counts *tasks, long page_kb)
{
    char dir[300], path[600];
    snprintf(dir, sizeof dir, "/proc/%s/task", pid);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!numeric(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
        count_stat(path, tasks, page_kb);
    }
    closedir(d);
}

static void count_processes(ks_counts *procs, ks_counts *tasks)
{
    long page_kb = sysconf(_SC_PAGESIZE) / 1024;
    DIR *d = opendir("/proc");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!numeric(e->d_name)) continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        if (count_stat(path, procs, page_kb) == 0) count_tasks(e->d_name, tasks, page_kb);
    }
    closedir(d);
}

static void put_counts(FILE *out, const char *what, const ks_counts *c, int sizes)
{
    fprintf(out, "    %s_total: %u\n", what, c->total);
    for (int s = 0; s < ST_N; s++)
        if (c->state[s]) fprintf(out, "    %s_%s: %u\n", what, state_names[s], c->state[s]);
    if (sizes)
        fprintf(out, "    %s_vmsize: %llu\n    %s_rss: %llu\n", what,
                (unsigned long long)c->vmsize_kb, what, (unsigned long long)c->rss_kb);
}

static void put_lower(FILE *out, const char *key, const char *v)
{
    char b[sizeof(((struct utsname *)0)->nodename)];
    size_t i = 0;
    for (; v[i] && i + 1 < sizeof b; i++) b[i] = (char)tolower((unsigned char)v[i]);
    b[i] = 0;
    fprintf(out, "    %s: ", key);
    ksyaml_plain(out, b);
    fputc('\n', out);
}

static void put_uname(FILE *out)
{
    struct utsname u;
    if (uname(&u) != 0) memset(&u, 0, sizeof u);
    fprintf(out, "    page-size: %ld\n", sysconf(_SC_PAGESIZE));
    put_lower(out, "uname_system", u.sysname);
    put_lower(out, "uname_nodename", u.nodename);
    fputs("    uname_release: ", out);
    ksyaml_plain(out, u.release);
    fputc('\n', out);
    put_lower(out, "uname_machine", u.machine);
}

static void put_memory(FILE *out)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0) memset(&si, 0, sizeof si);
    unsigned long long unit = si.mem_unit ? si.mem_unit : 1;
    fprintf(out,
            "    ram_total: %llu\n    ram_free: %llu\n    ram_shared: %llu\n    ram_buffer: %llu\n"
            "    swap_total: %llu\n    swap_free: %llu\n",
            si.totalram * unit / 1024, si.freeram * unit / 1024, si.sharedram * unit / 1024,
            si.bufferram * unit / 1024, si.totalswap * unit / 1024, si.freeswap * unit / 1024);
    struct timespec up;
    clock_gettime(CLOCK_BOOTTIME, &up);
    time_t boot = time(NULL) - up.tv_sec;
    struct tm lt;
    localtime_r(&boot, &lt);
    char b[40];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &lt);
    fprintf(out, "    boot: %s%+03ld:%02ld\n", b, lt.tm_gmtoff / 3600,
            labs(lt.tm_gmtoff) / 60 % 60);
}

/* kickstart writes the model with runs of blanks as one space. */
static void put_cpu(FILE *out)
{
    hostinfo_cpu c;
    hostinfo_cpuinfo(&c);
    char model[sizeof c.model];
    size_t k = 0;
    for (const char *s = c.model; *s;) {
        while (*s && !isspace((unsigned char)*s)) model[k++] = *s++;
        if (*s == ' ') model[k++] = *s++;
        while (*s && isspace((unsigned char)*s)) s++;
    }
    model[k] = 0;
    fprintf(out, "    cpu_count: %d\n    cpu_speed: %lu\n    cpu_vendor: ", c.count, c.mhz);
    ksyaml_plain(out, c.vendor);
    fputs("\n    cpu_model: ", out);
    ksyaml_plain(out, model);
    fputc('\n', out);
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "re");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = 0;
        fclose(f);
    }
    fprintf(out, "    load_min1: %.2f\n    load_min5: %.2f\n    load_min15: %.2f\n", load[0],
            load[1], load[2]);
}

void ksmachine_write(FILE *out)
{
    fputs("  machine:\n", out);
    put_uname(out);
    put_memory(out);
    put_cpu(out);
    ks_counts procs = {0}, tasks = {0};
    count_processes(&procs, &tasks);
    if (procs.total && tasks.total) {
        put_counts(out, "procs", &procs, 1);
        put_counts(out, "task", &tasks, 0);
    }
}

/* ---- the primary interface ------------------------------------------------- */

static int private_net(uint32_t a)
{
    return (a & 0xFF000000u) == 0x0A000000u ||                                  /* 10/8 */
           (a & 0xFFF00000u) == 0xAC100000u ||                                  /* 172.16/12 */
           (a & 0xFFFF0000u) == 0xC0A80000u || (a & 0xFFFE0000u) == 0xA9FE0000u /* link-local */
           || a == 0;
}

void ksmachine_primary_if(char *ifname, size_t ifsize, char *addr, size_t addrsize)
{
    snprintf(ifname, ifsize, "%s", "");
    snprintf(addr, addrsize, "%s", "0.0.0.0");
    struct ifaddrs *list, *first = NULL, *best = NULL;
    if (getifaddrs(&list) != 0) return;
    for (struct ifaddrs *i = list; i && !best; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
        uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
        if ((a >> 24) == 127) continue;
        if (!first) first = i;
        if (!private_net(a)) best = i;
    }
    if (!best) best = first;
    if (best) {
        snprintf(ifname, ifsize, "%s", best->ifa_name);
        inet_ntop(AF_INET, &((struct sockaddr_in *)best->ifa_addr)->sin_addr, addr,
                  (socklen_t)addrsize);
    }
    freeifaddrs(list);
}
