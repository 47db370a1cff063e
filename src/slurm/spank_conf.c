/* spank_conf.c — the Slurm plugin's settings and the monitor's command line
 * (see spank_conf.h; docs/slurm.md lists every key). */
#include "spank_conf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void spank_conf_defaults(spank_conf *c, const char *jobscope)
{
    memset(c, 0, sizeof *c);
    snprintf(c->jobscope, sizeof c->jobscope, "%s", jobscope);
    c->min_interval = 0.1;
    c->level = -1;
    c->enabled = 1;
    c->serve = 1;
}

static int parse_seconds(const char *s, double *out)
{
    char *end;
    if (!*s || s[strspn(s, "0123456789.")]) return -1; /* decimal only */
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || v < 0.01 || v > 86400) return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    if (!strcasecmp(s, "yes") || !strcasecmp(s, "on") || !strcmp(s, "1") || !strcasecmp(s, "true"))
        *out = 1;
    else if (!strcasecmp(s, "no") || !strcasecmp(s, "off") || !strcmp(s, "0") ||
             !strcasecmp(s, "false"))
        *out = 0;
    else
        return -1;
    return 0;
}

/* copies v into dst (SPANK_CONF_STR); -1 when too long */
static int put_str(char *dst, const char *v)
{
    size_t n = strlen(v);
    if (n >= SPANK_CONF_STR) return -1;
    memcpy(dst, v, n + 1);
    return 0;
}

int spank_conf_site(spank_conf *c, int argc, char *const *argv, char *err, size_t errlen)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        if (!eq) {
            snprintf(err, errlen, "plugstack argument '%s': expected key=value", a);
            return -1;
        }
        size_t kl = (size_t)(eq - a);
        const char *v = eq + 1;
        int bad = 0;
#define KEY(k) (kl == sizeof k - 1 && !strncmp(a, k, kl))
        if (KEY("jobscope")) {
            bad = !*v || put_str(c->jobscope, v);
        } else if (KEY("output")) {
            if (c->noutputs == SPANK_CONF_MAX_OUTPUTS) {
                snprintf(err, errlen, "plugstack: more than %d outputs", SPANK_CONF_MAX_OUTPUTS);
                return -1;
            }
            bad = !*v || put_str(c->outputs[c->noutputs++], v);
        } else if (KEY("interval")) {
            bad = parse_seconds(v, &c->interval);
        } else if (KEY("min_interval")) {
            bad = parse_seconds(v, &c->min_interval);
        } else if (KEY("level")) {
            char *end;
            long l = strtol(v, &end, 10);
            bad = !*v || *end || l < 0 || l > 255;
            if (!bad) c->level = (int)l;
        } else if (KEY("gpu")) {
            bad = parse_bool(v, &c->gpu);
        } else if (KEY("default")) {
            bad = parse_bool(v, &c->enabled);
        } else if (KEY("serve")) {
            bad = parse_bool(v, &c->serve);
        } else if (KEY("extern")) {
            bad = parse_bool(v, &c->extern_step);
        } else if (KEY("spool")) {
            bad = !*v || put_str(c->spool_dir, v);
        } else if (KEY("log")) {
            bad = put_str(c->log, v);
        } else {
            snprintf(err, errlen, "plugstack argument '%s': unknown key", a);
            return -1;
        }
#undef KEY
        if (bad) {
            snprintf(err, errlen, "plugstack argument '%s': bad value", a);
            return -1;
        }
    }
    return 0;
}

int spank_conf_user(spank_conf *c, const char *arg, char *err, size_t errlen)
{
    spank_conf t = *c; /* applied only when every item is good */
    const char *p = arg ? arg : "";
    if (!*p) {
        snprintf(err, errlen, "--jobscope needs a value: off, on, interval=S, gpu, nogpu");
        return -1;
    }
    while (*p) {
        size_t n = strcspn(p, ",");
        char item[64];
        if (n == 0 || n >= sizeof item) {
            snprintf(err, errlen, "--jobscope=%s: bad item", arg);
            return -1;
        }
        memcpy(item, p, n);
        item[n] = 0;
        if (!strcmp(item, "off"))
            t.enabled = 0;
        else if (!strcmp(item, "on"))
            t.enabled = 1;
        else if (!strcmp(item, "gpu"))
            t.gpu = 1;
        else if (!strcmp(item, "nogpu"))
            t.gpu = 0;
        else if (!strncmp(item, "interval=", 9)) {
            double v;
            if (parse_seconds(item + 9, &v) || v < c->min_interval) {
                snprintf(err, errlen, "--jobscope: interval '%s': seconds, at least %g", item + 9,
                         c->min_interval);
                return -1;
            }
            t.interval = v;
            t.enabled = 1;
        } else {
            snprintf(err, errlen, "--jobscope: unknown item '%s' (off, on, interval=S, gpu, nogpu)",
                     item);
            return -1;
        }
        p += n;
        if (*p == ',') p++;
    }
    *c = t;
    return 0;
}

/* ---- the command line ------------------------------------------------------ */

typedef struct argbuf {
    char **argv;
    int n, max;
    char *buf;
    size_t used, len;
    int full;
} argbuf;

static void arg_add(argbuf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg_add(argbuf *a, const char *fmt, ...)
{
    if (a->full || a->n + 2 > a->max) {
        a->full = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(a->buf + a->used, a->len - a->used, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= a->len - a->used) {
        a->full = 1;
        return;
    }
    a->argv[a->n++] = a->buf + a->used;
    a->argv[a->n] = NULL;
    a->used += (size_t)k + 1;
}

/* An output path (not a URL) may name the step and task: %s and %t.  The
 * other placeholders (%j %r %h %p) are jobscope's own (outpath.h). */
static void add_output(argbuf *a, const char *out, const spank_task_ids *ids)
{
    char path[SPANK_CONF_STR * 2];
    size_t k = 0;
    int url = strstr(out, "://") != NULL;
    for (const char *p = out; *p && k + 1 < sizeof path; p++) {
        const char *rep = NULL;
        if (!url && p[0] == '%' && p[1] == 's') rep = ids->step;
        if (!url && p[0] == '%' && p[1] == 't') rep = ids->task;
        if (rep) {
            for (; *rep && k + 1 < sizeof path; rep++) path[k++] = *rep;
            p++;
        } else {
            path[k++] = *p;
        }
    }
    path[k] = 0;
    arg_add(a, "-o");
    arg_add(a, "%s", path);
}

static void add_tag(argbuf *a, const char *key, const char *val)
{
    if (!val[0]) return;
    arg_add(a, "--tag");
    arg_add(a, "%s=%s", key, val);
}

int spank_conf_argv(const spank_conf *c, const spank_task_ids *ids, pid_t pid, int status_fd,
                    char **argv, int max, char *buf, size_t buflen)
{
    argbuf a = {argv, 0, max, buf, 0, buflen, 0};
    if (max < 1 || buflen < 1) return -1;
    argv[0] = NULL;
    arg_add(&a, "%s", c->jobscope);
    arg_add(&a, "attach");
    if (!c->log[0]) arg_add(&a, "-q");
    arg_add(&a, "--exit-status-fd=%d", status_fd);
    arg_add(&a, "--job=%s", ids->job_id);
    if (c->interval > 0) arg_add(&a, "--interval=%g", c->interval);
    if (c->level >= 0) arg_add(&a, "--telemetry-level=%d", c->level);
    if (c->gpu) arg_add(&a, "--gpu");
    if (c->spool_dir[0]) arg_add(&a, "--spool-dir=%s", c->spool_dir);
    if (!c->serve) arg_add(&a, "--no-serve");
    /* the task's own cgroup (task/cgroup, proctrack/cgroup): its CPU and
     * memory peak as the kernel counts them, exited processes included */
    arg_add(&a, "--cgroup=auto");
    for (int i = 0; i < c->noutputs; i++) add_output(&a, c->outputs[i], ids);
    /* with no output of the site's, events go to the node's serve only */
    if (!c->noutputs) {
        arg_add(&a, "-o");
        arg_add(&a, "/dev/null");
    }
    add_tag(&a, "slurm_job_id", ids->raw_job_id);
    add_tag(&a, "slurm_step", ids->step);
    add_tag(&a, "slurm_task", ids->task);
    add_tag(&a, "slurm_array_job_id", ids->array_job_id);
    add_tag(&a, "slurm_array_task_id", ids->array_task_id);
    add_tag(&a, "slurm_user", ids->user);
    add_tag(&a, "slurm_account", ids->account);
    add_tag(&a, "slurm_partition", ids->partition);
    add_tag(&a, "slurm_cluster", ids->cluster);
    add_tag(&a, "slurm_alloc_cores", ids->alloc_cores);
    add_tag(&a, "slurm_alloc_mem_mb", ids->alloc_mem_mb);
    add_tag(&a, "slurm_step_cores", ids->step_cores);
    add_tag(&a, "slurm_step_mem_mb", ids->step_mem_mb);
    arg_add(&a, "%ld", (long)pid);
    return a.full ? -1 : a.n;
}
