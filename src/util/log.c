/* log.c — see log.h.  One fputs-style write per line (stderr is unbuffered,
 * so the line is composed first and written at once). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* The program's identity: set once by main before threads start (as
 * openlog()), read-only afterwards. */
static const char *log_name = "jobscope";
static int log_stamps;

void js_log_identity(const char *name, int timestamps)
{
    log_name = name ? name : "jobscope";
    log_stamps = timestamps;
}

static void vlog(const char *topic, const char *fmt, va_list ap)
{
    char line[1024], ts[32] = "";
    if (log_stamps) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    }
    int n = snprintf(line, sizeof line, "%s%s: %s%s", ts, log_name, topic ? topic : "",
                     topic ? ": " : "");
    if (n < 0) return;
    if ((size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    fprintf(stderr, "%s\n", line);
}

void js_log(int enabled, const char *topic, const char *fmt, ...)
{
    if (!enabled) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(topic, fmt, ap);
    va_end(ap);
}

int js_log_once(log_once *c, int enabled, const char *topic, const char *fmt, ...)
{
    if (c->count++) return 0;
    if (enabled) {
        va_list ap;
        va_start(ap, fmt);
        vlog(topic, fmt, ap);
        va_end(ap);
    }
    return 1;
}

void js_log_release(log_once *c)
{
    c->count = 0;
}
