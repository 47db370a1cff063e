/* jobdata_load.c — reads one job's event file into a jobdata (jobdata.h):
 * JSON Lines of jobscope, pegasus-kickstart or JoReMon, or JoReMon's CSV
 * (its rows become objects), "-" for stdin. */
#include "report/jobdata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void split_csv(char *line, char **cells, int max, int *n)
{
    *n = 0;
    char *p = line;
    while (*n < max) {
        cells[(*n)++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
}

int jobdata_load(jobdata *j, const char *path, size_t *bad, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, nev = 0, nbad = 0;
    ssize_t len;
    char *hdr[32];
    int nhdr = 0;
    char *hdrline = NULL;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) continue;
        if (*p == '{') {
            json_error_t je;
            json_t *ev = json_loadb(p, (size_t)(len - (p - line)), 0, &je);
            if (ev && !jobdata_add(j, ev))
                nev++;
            else
                nbad++;
            json_decref(ev);
        } else if (!hdrline && !strncmp(p, "CMD,", 4)) {
            hdrline = strdup(p); /* JoReMon CSV header */
            if (hdrline) split_csv(hdrline, hdr, 32, &nhdr);
        } else if (hdrline) {
            char *cells[32];
            int nc;
            split_csv(p, cells, 32, &nc);
            json_t *ev = json_object();
            for (int k = 0; k < nc && k < nhdr; k++) {
                if (!*cells[k]) continue;
                char *end;
                double v = strtod(cells[k], &end);
                json_object_set_new(ev, hdr[k],
                                    (*end || end == cells[k] || !strcmp(hdr[k], "JobID"))
                                        ? json_string(cells[k])
                                        : json_real(v));
            }
            if (!jobdata_add(j, ev)) nev++;
            json_decref(ev);
        } else {
            nbad++;
        }
    }
    int rerr = ferror(f);
    free(line);
    free(hdrline);
    if (f != stdin) fclose(f);
    if (bad) *bad += nbad;
    if (rerr) {
        snprintf(err, errlen, "%s: read error", path);
        return -1;
    }
    if (!nev) {
        snprintf(err, errlen,
                 "%s: no events (JSON Lines of jobscope, kickstart or JoReMon, "
                 "or JoReMon CSV expected)",
                 path);
        return -1;
    }
    jobdata_finish(j);
    return 0;
}
