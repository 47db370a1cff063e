/* summary.h — `jobscope summary JOB|FILE`: one job's assessment on one
 * screen, as Princeton's `jobstats JOBID` prints it (summary.c).  The
 * printing functions take a job's page object (jobdata_json(): summary and
 * assessment), so they serve a file, a job of a running `jobscope serve`,
 * and a batch system's epilog (--oneline, for Slurm's AdminComment). */
#ifndef JOBSCOPE_SUMMARY_H
#define JOBSCOPE_SUMMARY_H

#include <stdio.h>
#include <jansson.h>

int summary_main(int argc, char **argv);

/* The report, `width` columns wide (80 by default). */
void summary_print(FILE *f, const json_t *job, int width);
/* One line: "jobscope: cpu 23% of 4 (SLURM_CPUS_PER_TASK), mem 1.2 GiB of
 * 8.0 GiB (15%), wall 00:12:03; next: --mem=1400M --cpus-per-task=1 ...". */
void summary_oneline(FILE *f, const json_t *job);

#endif
