/* stats_priv.h — what stats.c (reading jobs, the figures, the advice) and
 * stats_out.c (the text and HTML output) share: the metrics and curves a
 * group is described by, as in docs/views.md. */
#ifndef JOBSCOPE_STATS_PRIV_H
#define JOBSCOPE_STATS_PRIV_H

#include <stdio.h>
#include <jansson.h>
#include "report/svg.h"

#define NBINS 20 /* slices of the average run */

enum {
    M_MEM,
    M_CPU,
    M_EFF,
    M_WALL,
    M_CORES,
    M_WANT,
    M_READ,
    M_WRITE,
    M_GPUMEM,
    M_GPUUTIL,
    M_GPUS,
    NMET
};
extern const char *const stats_met_name[NMET];
extern const char *const stats_met_title[NMET];
extern const enum svg_unit stats_met_unit[NMET];

enum { C_CPU, C_MEM, C_IO, C_GPU, NCURVE };
extern const char *const stats_curve_name[NCURVE];
extern const char *const stats_curve_title[NCURVE];
extern const enum svg_unit stats_curve_unit[NCURVE];

/* The groups as text (one block per group) and as an HTML page. */
void stats_print_text(FILE *f, json_t *groups);
void stats_print_html(FILE *f, json_t *groups, json_t *all);

#endif
