/* joremon.c — JoReMon-compatible rows (see joremon.h).
 *
 * Semantics follow JoReMon: CPUTime is cumulative CPU seconds of the job,
 * ClockTime seconds since the watched process started (not since jobscope
 * attached), CPUPercent the lifetime average 100 x CPUTime / ClockTime (100 =
 * one core) and PeakCPUPercent its maximum so far, byte counters cumulative,
 * RSS and VMS in bytes.  Values cover the whole tree (JoReMon watched one
 * pid).  jobscope's per-interval CPU % stays in its own events. */
#include "joremon.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const type_names[JOREMON_NTYPES] = {
    "joremon.CPUInfo",
    "joremon.IOInfo",
    "joremon.MemInfo",
};

/* Go's RFC3339Nano: the fraction without trailing zeros, no dot when 0. */
size_t joremon_timestamp(char *out, size_t n, double ts)
{
    time_t sec = (time_t)ts;
    long nsec = (long)((ts - (double)sec) * 1e9);
    if (nsec < 0) nsec = 0;
    if (nsec > 999999999) nsec = 999999999;
    struct tm tm;
    localtime_r(&sec, &tm);
    char base[32], zone[8];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm); /* +0100 -> +01:00 */
    char frac[16] = "";
    if (nsec) {
        int len = snprintf(frac, sizeof frac, ".%09ld", nsec);
        while (len > 1 && frac[len - 1] == '0') frac[--len] = 0;
    }
    if (!strcmp(zone, "+0000")) return (size_t)snprintf(out, n, "%s%sZ", base, frac);
    return (size_t)snprintf(out, n, "%s%s%.3s:%.2s", base, frac, zone, zone + 3);
}

/* The columns, in JoReMon's CSV order (sorted by name). */
enum col {
    C_CMD,
    C_CPUPCT,
    C_CPUTIME,
    C_CWD,
    C_CLOCK,
    C_HOST,
    C_JOBID,
    C_PID,
    C_PEAKCPU,
    C_PEAKRSS,
    C_RBDISK,
    C_RBTOTAL,
    C_RSS,
    C_TS,
    C_TYPE,
    C_USER,
    C_VMS,
    C_WBDISK,
    C_WBTOTAL,
    NCOLS
};
static const char *const col_names[NCOLS] = {
    "CMD",
    "CPUPercent",
    "CPUTime",
    "CWD",
    "ClockTime",
    "Hostname",
    "JobID",
    "PID",
    "PeakCPUPercent",
    "PeakRSS",
    "RBytesFromDisk",
    "RBytesTotal",
    "RSS",
    "Timestamp",
    "Type",
    "User",
    "VMS",
    "WBytesFromDisk",
    "WBytesTotal",
};

static int col_in_type(enum col c, int type)
{
    switch (c) {
    case C_CPUTIME:
    case C_CLOCK:
    case C_CPUPCT:
    case C_PEAKCPU:
        return type == JOREMON_CPU;
    case C_RBDISK:
    case C_WBDISK:
    case C_RBTOTAL:
    case C_WBTOTAL:
        return type == JOREMON_IO;
    case C_RSS:
    case C_PEAKRSS:
    case C_VMS:
        return type == JOREMON_MEM;
    default:
        return 1;
    }
}

static double clock_time(const mset *s)
{
    return mset_get(s, M_ROOT_START) > 0 ? s->ts - mset_get(s, M_ROOT_START)
                                         : mset_get(s, M_ELAPSED);
}

/* JoReMon's CPUPercent: CPU time over the process's lifetime, percent. */
static double lifetime_cpu_percent(const mset *s)
{
    double clk = clock_time(s);
    return clk > 0 ? 100.0 * (double)(mset_raw(s, M_UTIME) + mset_raw(s, M_STIME)) / 1e6 / clk
                   : 0.0;
}

void joremon_state_update(joremon_state *st, const mset *s)
{
    double v = lifetime_cpu_percent(s);
    if (v > st->peak_cpu) st->peak_cpu = v;
}

/* Numeric value of a column (NaN for strings). */
static double col_num(enum col c, const mset *s, const joremon_state *st)
{
    switch (c) {
    case C_PID:
        return (double)mset_label_num_get(s, "pid");
    case C_CPUTIME:
        return (double)(mset_raw(s, M_UTIME) + mset_raw(s, M_STIME)) / 1e6;
    case C_CLOCK:
        return clock_time(s);
    case C_CPUPCT:
        return lifetime_cpu_percent(s);
    case C_PEAKCPU:
        return st ? st->peak_cpu : lifetime_cpu_percent(s);
    case C_RBDISK:
        return mset_get(s, M_READ_BYTES);
    case C_WBDISK:
        return mset_get(s, M_WRITE_BYTES);
    case C_RBTOTAL:
        return mset_get(s, M_RCHAR);
    case C_WBTOTAL:
        return mset_get(s, M_WCHAR);
    case C_RSS:
        return mset_get(s, M_RSS) * 1024.0;
    case C_PEAKRSS:
        return mset_get(s, M_PEAK_RSS) * 1024.0;
    case C_VMS:
        return mset_get(s, M_VM) * 1024.0;
    default:
        return 0;
    }
}

static const char *col_str(enum col c, const mset *s, const annotations *ann, int type, char *tsbuf,
                           size_t tsn)
{
    switch (c) {
    case C_CMD:
        return mset_label(s, "cmd") ? mset_label(s, "cmd") : "";
    case C_CWD:
        return mset_label(s, "cwd") ? mset_label(s, "cwd") : "";
    case C_HOST:
        return ann && ann->hostname ? ann->hostname : "";
    case C_JOBID:
        return ann && ann->job_id ? ann->job_id : "";
    case C_USER:
        return mset_label(s, "user") ? mset_label(s, "user") : "";
    case C_TYPE:
        return type_names[type];
    case C_TS:
        joremon_timestamp(tsbuf, tsn, s->ts);
        return tsbuf;
    default:
        return NULL;
    }
}

/* JSON field order of JoReMon's structs. */
static const enum col json_order[] = {
    C_JOBID,   C_TYPE,    C_PID,   C_CWD,     C_CMD,     C_HOST,   C_USER,
    C_TS,      C_CPUTIME, C_CLOCK, C_CPUPCT,  C_PEAKCPU, C_RBDISK, C_WBDISK,
    C_RBTOTAL, C_WBTOTAL, C_RSS,   C_PEAKRSS, C_VMS,
};

void joremon_json(jbuf *out, const mset *s, const annotations *ann, int type,
                  const joremon_state *st)
{
    char tsbuf[64];
    jw_obj_open(out, NULL);
    for (size_t i = 0; i < sizeof json_order / sizeof json_order[0]; i++) {
        enum col c = json_order[i];
        if (!col_in_type(c, type)) continue;
        const char *str = col_str(c, s, ann, type, tsbuf, sizeof tsbuf);
        if (str)
            jw_str(out, col_names[c], str);
        else if (c == C_PID || c == C_RBDISK || c == C_WBDISK || c == C_RBTOTAL || c == C_WBTOTAL ||
                 c == C_RSS || c == C_PEAKRSS || c == C_VMS)
            jw_u64(out, col_names[c], (uint64_t)col_num(c, s, st));
        else
            jw_num(out, col_names[c], col_num(c, s, st));
    }
    jw_obj_close(out);
}

static void csv_cell(jbuf *out, const char *v)
{
    if (!strpbrk(v, ",\"\n\r")) {
        jbuf_puts(out, v);
        return;
    }
    jbuf_putc(out, '"');
    for (; *v; v++) {
        if (*v == '"') jbuf_putc(out, '"');
        jbuf_putc(out, *v);
    }
    jbuf_putc(out, '"');
}

/* A column is in the CSV when a selected row type has it (-mode cpu: the
 * 12 columns of JoReMon's CPU rows). */
static int col_selected(enum col c, unsigned types)
{
    if (!types) types = (1u << JOREMON_NTYPES) - 1;
    for (int t = 0; t < JOREMON_NTYPES; t++)
        if ((types & (1u << t)) && col_in_type(c, t)) return 1;
    return 0;
}

void joremon_csv_header(jbuf *out, unsigned types)
{
    int first = 1;
    for (int c = 0; c < NCOLS; c++) {
        if (!col_selected((enum col)c, types)) continue;
        if (!first) jbuf_putc(out, ',');
        first = 0;
        jbuf_puts(out, col_names[c]);
    }
}

void joremon_csv_row(jbuf *out, const mset *s, const annotations *ann, int type, unsigned types,
                     const joremon_state *st)
{
    char tsbuf[64], num[64];
    int first = 1;
    for (int c = 0; c < NCOLS; c++) {
        if (!col_selected((enum col)c, types)) continue;
        if (!first) jbuf_putc(out, ',');
        first = 0;
        if (!col_in_type((enum col)c, type)) continue;
        const char *str = col_str((enum col)c, s, ann, type, tsbuf, sizeof tsbuf);
        if (str)
            csv_cell(out, str);
        else
            jbuf_put(out, num, fmt_fixed(num, col_num((enum col)c, s, st), 6)); /* Go's %f */
    }
}

int joremon_type_selected(unsigned types, int type)
{
    return !types || (types & (1u << type));
}
