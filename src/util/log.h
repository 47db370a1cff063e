/* log.h — jobscope's diagnostics on stderr: one line, the program's name
 * ("jobscope: ") then an optional topic ("cgroup: ") then the message.
 * Diagnostics are for -v (enabled = verbose); a failure that repeats every
 * sample is reported once with log_once, as collectd's c_complain_once
 * does, and again after log_release (it recovered, then failed anew).
 *
 * A long-running service names itself once at start-up, as syslog's
 * openlog() does: `jobscope serve` logs "2026-11-25T10:00:00Z jobscope
 * serve: peers: ..." (UTC time first, so that a log file reads as one).
 * The one-line fatal errors of the command line (util/common.h) are not
 * diagnostics: they are written by the command itself. */
#ifndef JOBSCOPE_LOG_H
#define JOBSCOPE_LOG_H

typedef struct log_once {
    unsigned long count; /* failures since the last release */
} log_once;

/* The program's name in every line (default "jobscope") and whether each
 * line starts with the UTC time.  Called once by main, before any thread
 * starts; name must outlive the program. */
void js_log_identity(const char *name, int timestamps);

/* Writes the line when enabled. */
__attribute__((format(printf, 3, 4))) void js_log(int enabled, const char *topic, const char *fmt,
                                                  ...);
/* Counts a failure; writes the line (when enabled) only for the first one
 * since the last release.  Returns 1 if this was the first. */
__attribute__((format(printf, 4, 5))) int js_log_once(log_once *c, int enabled, const char *topic,
                                                      const char *fmt, ...);
/* The condition is over: the next failure is reported again. */
void js_log_release(log_once *c);

#endif
