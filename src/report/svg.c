/* svg.c — static line charts as SVG (see svg.h): used by `jobscope report
 * --svg` and by the curves of `jobscope stats --html`. */
#include "report/svg.h"

#include <math.h>
#include <string.h>

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                     "#9467bd", "#8c564b", "#e377c2", "#17becf"};

const char *svg_fmt_bytes(double v, char *buf, size_t len)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int k = 0;
    double a = fabs(v);
    while (a >= 1024 && k < 5) a /= 1024, v /= 1024, k++;
    snprintf(buf, len, a >= 100 || k == 0 ? "%.0f %s" : "%.1f %s", v, u[k]);
    return buf;
}

static void fmt_val(double v, enum svg_unit unit, char *buf, size_t len)
{
    switch (unit) {
    case SVG_BYTES:
        svg_fmt_bytes(v, buf, len);
        break;
    case SVG_PERCENT:
        snprintf(buf, len, "%g%%", v);
        break;
    case SVG_SECONDS:
        snprintf(buf, len, "%gs", v);
        break;
    default:
        snprintf(buf, len, "%g", v);
        break;
    }
}

/* A round step giving about n ticks over span (bytes: powers of 2 x 1024^k). */
static double nice_step(double span, int n, enum svg_unit unit)
{
    if (!(span > 0)) return 1;
    double raw = span / n;
    if (unit == SVG_BYTES && raw >= 1024) {
        double base = 1;
        while (base * 1024 <= raw) base *= 1024;
        double m = raw / base, s = 1;
        while (s < m) s *= 2;
        return s * base;
    }
    double p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

void svg_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

int svg_chart(FILE *f, const char *title, const char *xlabel, enum svg_unit yunit,
              const svg_line *lines, int nlines, int w, int h, int x_time)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
    for (int l = 0; l < nlines; l++)
        for (size_t i = 0; i < lines[l].n; i++) {
            double x = lines[l].x[i], y = lines[l].y[i];
            if (isnan(x)) continue;
            x0 = fmin(x0, x), x1 = fmax(x1, x);
            if (!isnan(y)) y0 = fmin(y0, y), y1 = fmax(y1, y);
            if (lines[l].hi && !isnan(lines[l].hi[i])) y1 = fmax(y1, lines[l].hi[i]);
        }
    if (!isfinite(x0)) x0 = 0, x1 = 1;
    if (x1 <= x0) x1 = x0 + 1;
    if (!isfinite(y1) || y1 <= y0) y1 = y0 + 1;
    double ystep = nice_step(y1 - y0, 5, yunit);
    y1 = ceil(y1 / ystep) * ystep;
    double xorg = x_time ? x0 : 0;
    double xstep = nice_step(x1 - x0, 6, SVG_PLAIN);
    const int ml = 70, mr = 15, mt = 28, mb = 38;
    const double pw = w - ml - mr, ph = h - mt - mb;
#define PX(x) (ml + ((x)-x0) / (x1 - x0) * pw)
#define PY(y) (mt + ph - ((y)-y0) / (y1 - y0) * ph)
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n",
            w, h, w, h);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", w, h);
    fputs("<text x=\"8\" y=\"17\" font-size=\"13\" font-weight=\"bold\">", f);
    svg_escape(f, title);
    fputs("</text>\n", f);
    char buf[64];
    for (double y = y0; y <= y1 + ystep / 2; y += ystep) {
        fmt_val(y, yunit, buf, sizeof buf);
        fprintf(f,
                "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                ml, ml + pw, PY(y), PY(y), ml - 4, PY(y) + 4, buf);
    }
    for (double x = ceil((x0 - xorg) / xstep) * xstep + xorg; x <= x1 + 1e-9; x += xstep)
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                PX(x), PX(x), mt, mt + ph, PX(x), mt + ph + 14, x - xorg);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">", ml + pw / 2,
            h - 6);
    svg_escape(f, xlabel);
    fputs("</text>\n", f);
    fprintf(
        f,
        "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#999\"/>\n",
        ml, mt, pw, ph);
    for (int l = 0; l < nlines; l++) {
        const svg_line *L = &lines[l];
        const char *col = colors[l % 8];
        /* at most one point per half pixel: the bucket's extremes survive */
        size_t step = L->n > (size_t)(2 * pw) ? L->n / (size_t)(2 * pw) : 1;
        if (L->lo && L->hi) {
            fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.18\" stroke=\"none\" points=\"", col);
            for (size_t i = 0; i < L->n; i += step)
                if (!isnan(L->hi[i])) fprintf(f, "%.1f,%.1f ", PX(L->x[i]), PY(L->hi[i]));
            for (size_t i = L->n; i-- > 0;)
                if (i % step == 0 && !isnan(L->lo[i]))
                    fprintf(f, "%.1f,%.1f ", PX(L->x[i]), PY(L->lo[i]));
            fputs("\"/>\n", f);
        }
        fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", col);
        int pen = 0;
        for (size_t i = 0; i < L->n; i += step) {
            double y = L->y[i];
            if (step > 1) { /* keep the bucket's max */
                for (size_t k = i; k < i + step && k < L->n; k++)
                    if (!isnan(L->y[k]) && (isnan(y) || L->y[k] > y)) y = L->y[k];
            }
            if (isnan(y) || isnan(L->x[i])) {
                pen = 0;
                continue;
            }
            fprintf(f, "%c%.1f %.1f", pen ? 'L' : 'M', PX(L->x[i]), PY(y));
            pen = 1;
        }
        fputs("\"/>\n", f);
        if (L->label && nlines > 1) {
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%d\" width=\"10\" height=\"3\" fill=\"%s\"/>"
                    "<text x=\"%.1f\" y=\"%d\">",
                    ml + pw - 150, mt + 10 + 13 * l, col, ml + pw - 136, mt + 14 + 13 * l);
            svg_escape(f, L->label);
            fputs("</text>\n", f);
        }
    }
#undef PX
#undef PY
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
