/* procread.c — hand-written parsers for procfs text (see procread.h). */
#include "procread.h"

#include <string.h>

static const char *skip_field(const char *p, const char *end)
{
    while (p < end && *p != ' ') p++;
    return p < end ? p + 1 : end;
}

static const char *read_u64(const char *p, const char *end, uint64_t *v)
{
    uint64_t x = 0;
    int neg = 0;
    if (p < end && *p == '-') neg = 1, p++;
    while (p < end && *p >= '0' && *p <= '9') x = x * 10 + (uint64_t)(*p++ - '0');
    *v = neg ? 0 : x;
    return p < end && *p == ' ' ? p + 1 : p;
}

int procread_stat(const char *buf, size_t n, proc_stat *o)
{
    const char *end = buf + n;
    const char *p = NULL;
    for (const char *q = end; q > buf; q--) /* comm may hold ')' and spaces */
        if (q[-1] == ')') {
            p = q;
            break;
        }
    if (!p || p + 2 >= end) return -1;
    p++; /* the space */
    memset(o, 0, sizeof *o);
    o->state = *p; /* field 3 */
    p = skip_field(p, end);
    uint64_t f[40]; /* fields 4..43 */
    int i = 0;
    for (; i < 40 && p < end && *p != '\n'; i++) p = read_u64(p, end, &f[i]);
    if (i < 21) return -1; /* need up to rss (field 24) */
    for (; i < 40; i++) f[i] = 0;
#define F(k) f[(k)-4]
    o->ppid = (pid_t)F(4);
    o->minflt = F(10);
    o->cminflt = F(11);
    o->majflt = F(12);
    o->cmajflt = F(13);
    o->utime = F(14);
    o->stime = F(15);
    o->cutime = F(16);
    o->cstime = F(17);
    o->num_threads = F(20);
    o->starttime = F(22);
    o->vsize = F(23);
    o->rss = F(24);
    o->blkio_ticks = F(42);
#undef F
    return 0;
}

int procread_io(const char *buf, size_t n, proc_io *o)
{
    uint64_t *dst[] = {&o->rchar,
                       &o->wchar,
                       &o->syscr,
                       &o->syscw,
                       &o->read_bytes,
                       &o->write_bytes,
                       &o->cancelled_write_bytes};
    const char *p = buf, *end = buf + n;
    memset(o, 0, sizeof *o);
    size_t k = 0;
    while (p < end && k < 7) {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        if (!colon) break;
        p = colon + 1;
        while (p < end && *p == ' ') p++;
        uint64_t v = 0;
        while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
        *dst[k++] = v;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    return k == 7 ? 0 : -1;
}

static uint64_t line_u64(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
    return v;
}

int procread_status(const char *buf, size_t n, proc_status *o)
{
    static const struct {
        const char *key;
        size_t len;
        int idx;
    } keys[] = {
        {"VmSize:", 7, 0},
        {"VmRSS:", 6, 1},
        {"VmSwap:", 7, 2},
        {"VmHWM:", 6, 3},
        {"voluntary_ctxt_switches:", 24, 4},
        {"nonvoluntary_ctxt_switches:", 27, 5},
        {"Uid:", 4, 6},
    };
    const char *p = buf, *end = buf + n;
    int found = 0;
    memset(o, 0, sizeof *o);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            if ((size_t)(le - p) > keys[i].len && !memcmp(p, keys[i].key, keys[i].len)) {
                uint64_t v = line_u64(p + keys[i].len, le);
                switch (keys[i].idx) {
                case 0:
                    o->vmsize_kb = v;
                    break;
                case 1:
                    o->vmrss_kb = v;
                    break;
                case 2:
                    o->vmswap_kb = v;
                    break;
                case 3:
                    o->vmhwm_kb = v;
                    break;
                case 4:
                    o->nvcsw = v;
                    break;
                case 5:
                    o->nivcsw = v;
                    break;
                case 6:
                    o->uid = (uint32_t)v;
                    break;
                }
                found++;
                break;
            }
        }
        p = le + 1;
    }
    return found ? 0 : -1;
}

int procread_pids(const char *buf, size_t n, void (*fn)(void *arg, pid_t pid), void *arg)
{
    const char *p = buf, *end = buf + n;
    int count = 0;
    while (p < end) {
        while (p < end && (*p < '0' || *p > '9')) p++;
        if (p >= end) break;
        /* a pid has at most 10 digits and fits pid_t; a longer run (or a
         * larger value) is no pid: skip it rather than overflow */
        long long v = 0;
        int too_big = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (!too_big) v = v * 10 + (*p - '0');
            if (v > 0x7fffffffLL) too_big = 1;
            p++;
        }
        if (too_big || v <= 0) continue;
        fn(arg, (pid_t)v);
        count++;
    }
    return count;
}
