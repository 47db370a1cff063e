/* hostinfo.h — the invocation context of the start event: host, kernel,
 * CPU model and count, memory, user, cwd, command line, rlimits. */
#ifndef JOBSCOPE_HOSTINFO_H
#define JOBSCOPE_HOSTINFO_H

#include <sys/types.h>
#include "../model/metric.h"

/* What /proc/cpuinfo says about the CPUs: the number of "processor"
 * entries and the first vendor_id, "cpu MHz" (rounded) and model name. */
typedef struct hostinfo_cpu {
    int count;
    unsigned long mhz;
    char vendor[64];
    char model[256];
} hostinfo_cpu;
/* 0, or -1 when /proc/cpuinfo cannot be read (*c is then zeroed). */
int hostinfo_cpuinfo(hostinfo_cpu *c);

/* CPUs this process may run on (affinity), at least 1. */
int hostinfo_cpus_available(void);
/* Adds the host's kernel, machine, CPU and memory figures to an event. */
void hostinfo_add(mset *e);
/* Adds the rlimits as an object "rlimits" ("unlimited" -> null). */
void hostinfo_add_rlimits(mset *e);
/* Command line of pid as one string (args joined by spaces), or NULL. Caller frees. */
char *hostinfo_cmdline(pid_t pid);
/* When pid started: /proc/PID/stat's starttime, clock ticks after boot; 0
 * if it is gone. */
unsigned long long hostinfo_starttime(pid_t pid);
/* cwd of pid, or NULL. Caller frees. */
char *hostinfo_cwd(pid_t pid);
/* Name of the user uid, or its number as text. Caller frees. */
char *hostinfo_user(uid_t uid);

#endif
