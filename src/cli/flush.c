/* flush.c — `jobscope flush [OPTIONS] SPOOL...`: delivers the events that a
 * run could not deliver before its --flush-timeout and left in spool files.
 *
 * SPOOL is a spool file or a directory of them (*.spool).  Each file names
 * its destination with the password removed; the URL to use is, in order,
 * -o URL (or -o @FILE), KICKSTART_MON_URL when it is the same destination,
 * or the recorded one when it had no password.  Delivered records are cut
 * from the file as they are confirmed, so an interrupted flush resumes where
 * it stopped; a fully delivered file is removed.  Exit status: 0 when every
 * file was delivered, 1 when events are left, 125 on bad usage. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "flush.h"
#include "options.h"
#include "../sink/delivery/publisher.h"
#include "../sink/delivery/spool.h"

static void flush_usage(FILE *f)
{
    fputs("usage: jobscope flush [OPTIONS] SPOOL...\n"
          "\n"
          "Re-sends the events a run left undelivered in spool files (SPOOL is a\n"
          "*.spool file or a directory of them), in order, then removes each\n"
          "file that was delivered completely.\n"
          "\n"
          "  -o, --output URL|@FILE  the destination (needed when the recorded one had\n"
          "                          a password, which spool files never keep)\n"
          "      --flush-timeout S   give up after S seconds in all (default 60)\n"
          "      --insecure          do not verify TLS certificates\n"
          "      --ca-file FILE      CA certificates to verify TLS peers with\n"
          "  -q, --quiet             no report\n"
          "  -h, --help              this help\n"
          "Exit status: 0 all delivered, 1 events left, 125 bad usage.\n",
          f);
}

static int flush_one(const char *path, const char *url_opt, const sink_options *so,
                     double *deadline, double timeout, int quiet)
{
    char err[512], *label = NULL;
    spool sp;
    if (spool_open(&sp, path, &label, err, sizeof err) < 0) {
        fprintf(stderr, "jobscope: %s\n", err);
        return 1;
    }
    long pending = sp.pending;
    /* Do not remove an empty spool here: publisher_adopt_spool reopens it. */
    close(sp.fd);
    free(sp.path);
    char *url = NULL;
    const char *env = getenv("KICKSTART_MON_URL");
    if (url_opt) {
        url = strdup(url_opt);
    } else if (env && *env) {
        char *r = sink_redact_url(env);
        if (r && !strcmp(r, label)) url = strdup(env);
        free(r);
    }
    if (!url) {
        if (strstr(label, ":***@")) {
            fprintf(
                stderr,
                "jobscope: %s: the destination %s had a password, which spool files do not keep: "
                "give it with -o URL or -o @FILE\n",
                path, label);
            free(label);
            return 1;
        }
        url = strdup(label);
    }
    sink *s = sink_open(url, so, err, sizeof err);
    publisher *p = s ? publisher_of(s) : NULL;
    int rc = 1;
    if (!s) {
        fprintf(stderr, "jobscope: %s\n", err);
    } else if (!p) {
        fprintf(stderr, "jobscope: %s: not a network destination\n", s->label);
    } else if (publisher_adopt_spool(p, path, err, sizeof err) < 0) {
        fprintf(stderr, "jobscope: %s: %s\n", path, err);
    } else {
        rc = s->ops->flush(s, flush_time_left(deadline, timeout)) == 0 ? 0 : 1;
        pub_stats st;
        publisher_get_stats(p, &st);
        if (!quiet)
            fprintf(stderr, "jobscope: %s: %llu of %ld event%s delivered to %s\n", path,
                    st.delivered, pending, pending == 1 ? "" : "s", s->label);
    }
    if (s) s->ops->close(s); /* reports what is left and where */
    free(url);
    free(label);
    return rc;
}

static int is_spool_name(const char *n)
{
    size_t l = strlen(n);
    return l > 6 && !strcmp(n + l - 6, ".spool");
}

int flush_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'},
        {"flush-timeout", required_argument, 0, 1},
        {"insecure", no_argument, 0, 2},
        {"ca-file", required_argument, 0, 3},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    sink_options so;
    memset(&so, 0, sizeof so);
    char *url = NULL;
    double timeout = 60, deadline = 0; /* one deadline for every spool */
    int quiet = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            free(url);
            if (optarg[0] == '@') {
                if (!(url = options_read_url_file(optarg + 1))) {
                    fprintf(stderr, "jobscope: cannot read a destination URL from '%s'\n",
                            optarg + 1);
                    return JS_EXIT_ERROR;
                }
            } else {
                url = strdup(optarg);
                sink_url_scrub(optarg); /* hide its secrets from ps */
            }
            break;
        case 1: {
            char *end;
            timeout = strtod(optarg, &end);
            if (end == optarg || *end || !isfinite(timeout) || timeout < 0) {
                fprintf(stderr, "jobscope: bad --flush-timeout '%s'\n", optarg);
                return JS_EXIT_ERROR;
            }
            break;
        }
        case 2:
            so.insecure = 1;
            break;
        case 3:
            so.ca_file = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            flush_usage(stdout);
            return 0;
        default:
            fprintf(stderr,
                    "jobscope: flush: unknown or incomplete option '%s' (try 'jobscope flush "
                    "--help')\n",
                    argv[optind - 1]);
            return JS_EXIT_ERROR;
        }
    }
    if (optind >= argc) {
        flush_usage(stderr);
        return JS_EXIT_ERROR;
    }
    int left = 0, files = 0;
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "jobscope: %s: %s\n", argv[i], strerror(errno));
            return JS_EXIT_ERROR;
        }
        if (!S_ISDIR(st.st_mode)) {
            so.spool_dir = NULL;
            files++;
            left |= flush_one(argv[i], url, &so, &deadline, timeout, quiet);
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            if (is_spool_name(names[k]->d_name)) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
                so.spool_dir = argv[i];
                files++;
                left |= flush_one(path, url, &so, &deadline, timeout, quiet);
            }
            free(names[k]);
        }
        free(names);
    }
    if (!files && !quiet) fprintf(stderr, "jobscope: no spool files found\n");
    if (url) memset(url, 0, strlen(url));
    free(url);
    return left ? 1 : 0;
}
