/* stats_out.c — `jobscope stats` as text and as an HTML page (stats.c
 * computes the groups' figures as JSON; --json prints that as it is): per
 * group the cautions, the distributions, the average run (text: every
 * other slice; HTML: SVG curves), the advice in three syntaxes and what
 * current requests waste. */
#include "report/stats_priv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void fmt_metric(int m, double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "-");
        return;
    }
    switch (stats_met_unit[m]) {
    case SVG_BYTES:
        svg_fmt_bytes(v, buf, len);
        break;
    case SVG_PERCENT:
        snprintf(buf, len, m == M_EFF ? "%.1f%%" : "%.1f%%", m == M_EFF ? 100 * v : v);
        break;
    case SVG_SECONDS:
        snprintf(buf, len, "%.1fs", v);
        break;
    default:
        snprintf(buf, len, "%.2f", v);
        break;
    }
}

void stats_print_text(FILE *f, json_t *groups)
{
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        fprintf(f, "== %s: %lld jobs\n", json_string_value(json_object_get(g, "group")),
                (long long)json_integer_value(json_object_get(g, "count")));
        size_t ci;
        json_t *cnote;
        json_array_foreach(json_object_get(g, "cautions"), ci, cnote)
            fprintf(f, "  caution: %s\n", json_string_value(cnote));
        if (!json_integer_value(json_object_get(g, "count"))) {
            fputs("  no run that ended on its own: no figures, no advice\n\n", f);
            continue;
        }
        fprintf(f, "  %-30s %10s %10s %10s %10s %10s\n", "", "p50", "p90", "p95", "p99", "max");
        json_t *dist = json_object_get(g, "distributions");
        for (int m = 0; m < NMET; m++) {
            json_t *d = json_object_get(dist, stats_met_name[m]);
            if (!json_integer_value(json_object_get(d, "n"))) continue;
            if (m >= M_GPUMEM && json_number_value(json_object_get(d, "max")) <= 0) continue;
            fprintf(f, "  %-30s", stats_met_title[m]);
            static const char *const k[] = {"p50", "p90", "p95", "p99", "max"};
            for (int q = 0; q < 5; q++) {
                char b[32];
                fmt_metric(m, json_number_value(json_object_get(d, k[q])), b, sizeof b);
                fprintf(f, " %10s", b);
            }
            fputc('\n', f);
        }
        json_t *curves = json_object_get(g, "average_run");
        for (int c = 0; c < NCURVE; c++) {
            json_t *cv = json_object_get(curves, stats_curve_name[c]);
            if (!cv) continue;
            fprintf(f, "  average run, %s (median by 10%% of the job):", stats_curve_title[c]);
            json_t *med = json_object_get(cv, "median");
            for (int b = 1; b < NBINS; b += 2) {
                double v = json_number_value(json_array_get(med, (size_t)b));
                char buf[32];
                if (stats_curve_unit[c] == SVG_BYTES)
                    svg_fmt_bytes(v, buf, sizeof buf);
                else
                    snprintf(buf, sizeof buf, "%.0f", v);
                fprintf(f, " %s", buf);
            }
            fputc('\n', f);
        }
        json_t *adv = json_object_get(g, "advice");
        fprintf(f, "  advice (margin %.0f%% on memory and wall time):\n",
                100 * json_number_value(json_object_get(adv, "margin")));
        static const char *const qs[] = {"p95", "p99"};
        for (int q = 0; q < 2; q++) {
            json_t *a = json_object_get(adv, qs[q]);
            fprintf(f, "   fits %s of runs:\n", q ? "99%" : "95%");
            const char *hc = json_string_value(json_object_get(a, "htcondor"));
            fprintf(f, "     HTCondor: ");
            for (const char *p = hc; p && *p; p++)
                fputs(*p == '\n' ? (p[1] ? "; " : "") : (char[2]){*p, 0}, f);
            fprintf(f, "\n     Slurm:    %s\n     Pegasus:  ",
                    json_string_value(json_object_get(a, "slurm")));
            const char *pg = json_string_value(json_object_get(a, "pegasus"));
            for (const char *p = pg; p && *p; p++)
                fputs(*p == '\n' ? (p[1] ? "; " : "") : (char[2]){*p, 0}, f);
            fputc('\n', f);
        }
        json_t *w = json_object_get(g, "waste"), *x;
        if ((x = json_object_get(w, "memory")))
            fprintf(f,
                    "  current memory requests (%lld jobs): %.0f%% unused on average, %.1f of %.1f "
                    "GiB-hours "
                    "unused, %lld jobs above their request\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    100 * json_number_value(json_object_get(x, "mean_unused_fraction")),
                    json_number_value(json_object_get(x, "unused_gib_hours")),
                    json_number_value(json_object_get(x, "requested_gib_hours")),
                    (long long)json_integer_value(json_object_get(x, "over_request")));
        if ((x = json_object_get(w, "cores")))
            fprintf(f, "  current core requests (%lld jobs): %.1f of %.1f core-hours unused\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    json_number_value(json_object_get(x, "unused_core_hours")),
                    json_number_value(json_object_get(x, "requested_core_hours")));
        if ((x = json_object_get(w, "wall")))
            fprintf(f,
                    "  current wall-time requests (%lld jobs): %.0f s unused on average, %lld jobs "
                    "over\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    json_number_value(json_object_get(x, "mean_unused_seconds")),
                    (long long)json_integer_value(json_object_get(x, "over_request")));
        if ((x = json_object_get(w, "gpus")))
            fprintf(f, "  current GPU requests (%lld jobs): %.1f GPU-hours requested, %.1f used\n",
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    json_number_value(json_object_get(x, "requested_gpu_hours")),
                    json_number_value(json_object_get(x, "used_gpu_hours")));
        fputc('\n', f);
    }
}

void stats_print_html(FILE *f, json_t *groups, json_t *all)
{
    fputs(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>jobscope stats</title>\n"
        "<style>body{font-family:sans-serif;margin:1.5em;max-width:1100px}table{border-collapse:"
        "collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th:first-child,td:first-child"
        "{text-align:left}pre{background:#f4f4f4;padding:6px}.charts "
        "svg{margin:4px}</style></head><body>\n",
        f);
    fprintf(f, "<h1>jobscope stats</h1><p>%lld job files.</p>\n",
            (long long)json_integer_value(json_object_get(all, "files")));
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        fputs("<h2>", f);
        svg_escape(f, json_string_value(json_object_get(g, "group")));
        fprintf(f, " — %lld jobs</h2>\n",
                (long long)json_integer_value(json_object_get(g, "count")));
        size_t ci;
        json_t *cnote;
        json_array_foreach(json_object_get(g, "cautions"), ci, cnote)
        {
            fputs("<p class=\"caution\">⚠ ", f);
            svg_escape(f, json_string_value(cnote));
            fputs("</p>\n", f);
        }
        if (!json_integer_value(json_object_get(g, "count"))) continue;
        fputs("<table><tr><th></th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th>"
              "</tr>\n",
              f);
        json_t *dist = json_object_get(g, "distributions");
        for (int m = 0; m < NMET; m++) {
            json_t *d = json_object_get(dist, stats_met_name[m]);
            if (!json_integer_value(json_object_get(d, "n"))) continue;
            fprintf(f, "<tr><td>%s</td>", stats_met_title[m]);
            static const char *const k[] = {"p50", "p90", "p95", "p99", "max"};
            for (int q = 0; q < 5; q++) {
                char b[32];
                fmt_metric(m, json_number_value(json_object_get(d, k[q])), b, sizeof b);
                fprintf(f, "<td>%s</td>", b);
            }
            fputs("</tr>\n", f);
        }
        fputs("</table>\n<h3>Average run (median, p10–p90 band, over normalised job time)</h3>"
              "<div class=\"charts\">\n",
              f);
        json_t *curves = json_object_get(g, "average_run");
        for (int c = 0; c < NCURVE; c++) {
            json_t *cv = json_object_get(curves, stats_curve_name[c]);
            if (!cv) continue;
            double x[NBINS], y[NBINS], lo[NBINS], hi[NBINS];
            for (int b = 0; b < NBINS; b++) {
                x[b] = 100.0 * (b + 0.5) / NBINS;
                json_t *v = json_array_get(json_object_get(cv, "median"), (size_t)b);
                y[b] = json_is_number(v) ? json_number_value(v) : NAN;
                v = json_array_get(json_object_get(cv, "p10"), (size_t)b);
                lo[b] = json_is_number(v) ? json_number_value(v) : NAN;
                v = json_array_get(json_object_get(cv, "p90"), (size_t)b);
                hi[b] = json_is_number(v) ? json_number_value(v) : NAN;
            }
            svg_line L = {"median", x, y, lo, hi, NBINS};
            svg_chart(f, stats_curve_title[c], "% of the job's wall time", stats_curve_unit[c], &L,
                      1, 520, 240, 0);
        }
        fputs("</div>\n<h3>Right-sizing advice</h3>\n", f);
        json_t *adv = json_object_get(g, "advice");
        fprintf(f, "<p>Margin %.0f%% on memory and wall time.</p>\n",
                100 * json_number_value(json_object_get(adv, "margin")));
        static const char *const qs[] = {"p95", "p99"};
        for (int q = 0; q < 2; q++) {
            json_t *a = json_object_get(adv, qs[q]);
            fprintf(f, "<h4>Fits %s of runs</h4><pre># HTCondor\n", q ? "99%" : "95%");
            svg_escape(f, json_string_value(json_object_get(a, "htcondor")));
            fputs("\n# Slurm\n", f);
            svg_escape(f, json_string_value(json_object_get(a, "slurm")));
            fputs("\n\n# Pegasus (transformation catalog)\n", f);
            svg_escape(f, json_string_value(json_object_get(a, "pegasus")));
            fputs("</pre>\n", f);
        }
        char *w = json_dumps(json_object_get(g, "waste"), JSON_INDENT(1));
        if (w && strcmp(w, "{}")) {
            fputs("<h3>What current requests waste</h3><pre>", f);
            svg_escape(f, w);
            fputs("</pre>\n", f);
        }
        free(w);
    }
    fputs("</body></html>\n", f);
}
