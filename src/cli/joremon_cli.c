/* joremon_cli.c — `jobscope joremon` (or a link named joremon): JoReMon's
 * command line (CC-IN2P3's Go sampler, docs/events.md#joremon) on top of
 * `jobscope attach`:
 *
 *   -pid N         the process to watch (JoReMon's default: 1)
 *   -interval N    seconds between reports (default 5)
 *   -job ID        JobID of every row
 *   -format F      jsons (default) or csv
 *   -mode M        cpu, mem, io or all (default all): which rows, and so
 *                  which CSV columns
 *   -out NAME      output file name in -folder; '-' or absent: stdout
 *   -folder DIR    output folder (default ".")
 *
 * Flags are spelled as Go's flag package reads them: -name value,
 * -name=value, with one or two dashes.  Rows are written as JoReMon wrote
 * them, for the watched process's whole tree. */
#include "dropin.h"
#include "run.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int jr_bad(const char *fmt, const char *arg)
{
    fputs("jobscope joremon: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (try 'jobscope joremon -h')\n", stderr);
    return JS_EXIT_ERROR;
}

static void jr_usage(FILE *f)
{
    fputs("usage: jobscope joremon [-pid N] [-interval S] [-job ID] [-format jsons|csv]\n"
          "                        [-mode cpu|mem|io|all] [-out NAME|-] [-folder DIR]\n"
          "JoReMon's flags on top of 'jobscope attach' (docs/events.md, JoReMon section).\n"
          "Defaults: -pid 1 -interval 5 -format jsons -mode all -folder . ; no -out: stdout.\n",
          f);
}

int joremon_main(int argc, char **argv)
{
    static const char *const names[] = {"pid",  "interval", "job",   "format",
                                        "mode", "out",      "folder"};
    const char *val[7] = {"1", "5", NULL, "jsons", "all", NULL, "."};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) return jr_bad("unexpected argument '%s'", a);
        a += a[1] == '-' ? 2 : 1;
        if (!strcmp(a, "h") || !strcmp(a, "help")) {
            jr_usage(stdout);
            return 0;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        int k = -1;
        for (int n = 0; n < 7; n++)
            if (strlen(names[n]) == len && !strncmp(a, names[n], len)) k = n;
        if (k < 0) return jr_bad("flag provided but not defined: '%s'", argv[i]);
        if (eq)
            val[k] = eq + 1;
        else if (i + 1 < argc)
            val[k] = argv[++i];
        else
            return jr_bad("flag needs an argument: '%s'", argv[i]);
    }
    const char *fmt;
    if (!strcmp(val[3], "jsons") || !strcmp(val[3], "json"))
        fmt = "joremon-json";
    else if (!strcmp(val[3], "csv"))
        fmt = "joremon-csv";
    else
        return jr_bad("bad -format '%s': csv or jsons", val[3]);
    char *out;
    if (!val[5] || !*val[5] || !strcmp(val[5], "-"))
        out = strdup("-");
    else if (val[5][0] == '/')
        out = strdup(val[5]);
    else if (asprintf(&out, "%s/%s", val[6], val[5]) < 0)
        out = NULL;
    if (!out) return jr_bad("out of memory%s", "");

    char *rv[20];
    int k = 0;
    rv[k++] = "attach";
    rv[k++] = "-q";
    rv[k++] = "-i";
    rv[k++] = (char *)val[1];
    rv[k++] = "--format";
    rv[k++] = (char *)fmt;
    rv[k++] = "--mode";
    rv[k++] = (char *)val[4];
    if (val[2]) {
        rv[k++] = "--job";
        rv[k++] = (char *)val[2];
    }
    rv[k++] = "-o";
    rv[k++] = out;
    rv[k++] = (char *)val[0];
    rv[k] = NULL;
    int rc = monitor_main(1, k, rv);
    free(out);
    return rc;
}
