/* svg.h — a small SVG line-chart writer for static plots (`jobscope report
 * --svg DIR`, the curves of `jobscope stats --html`): axes with round ticks,
 * one polyline per series, an optional shaded band (p10-p90), thinned to at
 * most one point per half pixel so files stay small.  No dependency. */
#ifndef JOBSCOPE_SVG_H
#define JOBSCOPE_SVG_H

#include <stddef.h>
#include <stdio.h>

typedef struct svg_line {
    const char *label;
    const double *x, *y;   /* n points; NAN in y breaks the line */
    const double *lo, *hi; /* optional band around the line (NULL: none) */
    size_t n;
} svg_line;

enum svg_unit { SVG_PLAIN, SVG_BYTES, SVG_PERCENT, SVG_SECONDS };

/* Writes one <svg> element of w x h pixels.  x_time: x values are epoch
 * seconds, ticks show seconds since the first point.  Returns 0, -1 on a
 * write error. */
int svg_chart(FILE *f, const char *title, const char *xlabel, enum svg_unit yunit,
              const svg_line *lines, int nlines, int w, int h, int x_time);

/* s as text of HTML or SVG markup (< > & " escaped); NULL writes nothing. */
void svg_escape(FILE *f, const char *s);

/* "1.5 GiB", "12 MiB"... into buf. */
const char *svg_fmt_bytes(double v, char *buf, size_t len);

#endif
