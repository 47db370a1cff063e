/* size.h — the one parser of sizes on the command line (--limit memory=,
 * --spool-max, ...): a decimal number with an optional binary unit K, M,
 * G, T or P (powers of 1024), each optionally followed by B or iB, or a
 * plain B: "512", "64K", "1.5G", "4GiB", "10MB".  Case-insensitive. */
#ifndef JOBSCOPE_SIZE_H
#define JOBSCOPE_SIZE_H

/* 0 and *bytes (whole, >= 1, < 9.2e18) on success; -1 if bad. */
int size_parse(const char *s, double *bytes);
/* A plain decimal number at s: digits [. digits] or . digits (no sign,
 * exponent or hex, which strtod would take); *end just after it.  0 or -1.
 * Also for durations (limits.c). */
int size_number(const char *s, double *v, const char **end);

#endif
