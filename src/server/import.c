/* import.c — `jobscope import [--server URL] [--token-file FILE] FILE...`:
 * loads event files written earlier (JSON Lines from `jobscope run -o`,
 * '-' for stdin) into a running `jobscope serve`, as Dragon's offline mode.
 * Default server: the local one on the well-known Unix socket, else
 * http://127.0.0.1:4242.  Events go in batches to POST /api/events, whose
 * answer comes once they are durable; a line that is not an event is
 * counted and reported, the rest is imported. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve_cmd.h"
#include "sink/formats/sbuf.h"
#include "util/serve_detect.h"

#define BATCH_BYTES (4u << 20)
#define EXIT_ERR    125

typedef struct importer {
    CURL *h;
    char url[4200];
    char *unix_path;
    struct curl_slist *hdrs;
    sbuf resp;
    unsigned long long events, failed, points;
} importer;

static size_t on_body(char *d, size_t sz, size_t nm, void *arg)
{
    sbuf_put(arg, d, sz * nm);
    return sz * nm;
}

static unsigned long long field(const char *json, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = json ? strstr(json, k) : NULL;
    return p ? strtoull(p + strlen(k), NULL, 10) : 0;
}

/* POSTs one NDJSON batch; 0, 413 when the server finds it too large, or
 * -1 with a message printed. */
static int post(importer *im, const char *body, size_t len, const char *file)
{
    sbuf_reset(&im->resp);
    curl_easy_setopt(im->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(im->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = curl_easy_perform(im->h);
    long st = 0;
    curl_easy_getinfo(im->h, CURLINFO_RESPONSE_CODE, &st);
    /* the server refuses a body larger than its limit on the headers and
     * closes: the send may fail after the 413 came */
    if (rc == CURLE_SEND_ERROR && st == 413) return 413;
    if (rc != CURLE_OK) {
        fprintf(stderr, "jobscope import: %s: %s\n", im->unix_path ? im->unix_path : im->url,
                curl_easy_strerror(rc));
        return -1;
    }
    if (st == 413) return 413;
    if (st != 200 && st != 400) {
        fprintf(stderr, "jobscope import: %s: HTTP %ld: %.300s\n", file, st,
                im->resp.p ? im->resp.p : "");
        return -1;
    }
    unsigned long long ok = field(im->resp.p, "accepted"), bad = field(im->resp.p, "failed");
    if (bad) {
        const char *d = im->resp.p ? strstr(im->resp.p, "\"details\":") : NULL;
        fprintf(stderr, "jobscope import: %s: %llu lines are not events%s%.200s\n", file, bad,
                d ? ", first: " : "", d ? d + 10 : "");
    }
    im->events += ok;
    im->failed += bad;
    im->points += field(im->resp.p, "points");
    return 0;
}

/* A batch of lines: the text and where each line starts. */
typedef struct batch {
    sbuf text;
    size_t *start;
    size_t n, cap;
    unsigned long long first_line; /* the file's line number of line 0 */
} batch;

/* Posts lines [a, b) of the batch; a part the server finds too large is
 * halved until one line is left, which is skipped and named: one huge line
 * does not cost the others (issue 23). */
static int post_lines(importer *im, batch *bt, size_t a, size_t b, const char *file)
{
    if (a >= b) return 0;
    size_t from = bt->start[a], to = b < bt->n ? bt->start[b] : bt->text.len;
    int rc = post(im, bt->text.p + from, to - from, file);
    if (rc != 413) return rc;
    if (b - a == 1) {
        fprintf(stderr,
                "jobscope import: %s: line %llu skipped: %zu bytes, larger than the server "
                "takes (its --body-limit)\n",
                file, bt->first_line + a, to - from);
        im->failed++;
        return 0;
    }
    size_t mid = a + (b - a) / 2;
    if (post_lines(im, bt, a, mid, file) < 0) return -1;
    return post_lines(im, bt, mid, b, file);
}

static int flush_batch(importer *im, batch *bt, const char *file)
{
    int rc = post_lines(im, bt, 0, bt->n, file);
    bt->first_line += bt->n;
    bt->n = 0;
    sbuf_reset(&bt->text);
    return rc;
}

static int import_file(importer *im, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "jobscope import: %s: %s\n", path, strerror(errno));
        return -1;
    }
    batch bt = {.first_line = 1};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        /* a long line goes alone: the batch before it first */
        if (bt.n && bt.text.len + (size_t)n > BATCH_BYTES && flush_batch(im, &bt, path) < 0) {
            rc = -1;
            break;
        }
        if (bt.n == bt.cap) {
            size_t nc = bt.cap ? bt.cap * 2 : 1024;
            size_t *ns = realloc(bt.start, nc * sizeof *ns);
            if (!ns) {
                bt.text.oom = 1;
            } else {
                bt.start = ns;
                bt.cap = nc;
            }
        }
        if (!bt.text.oom) {
            bt.start[bt.n++] = bt.text.len;
            sbuf_put(&bt.text, line, (size_t)n);
            if (line[n - 1] != '\n') sbuf_putc(&bt.text, '\n');
        }
        if (bt.text.oom) {
            fprintf(stderr, "jobscope import: out of memory\n");
            rc = -1;
            break;
        }
        if (bt.text.len >= BATCH_BYTES && flush_batch(im, &bt, path) < 0) {
            rc = -1;
            break;
        }
    }
    if (!rc && bt.n && flush_batch(im, &bt, path) < 0) rc = -1;
    free(line);
    free(bt.start);
    sbuf_free(&bt.text);
    if (f != stdin) fclose(f);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: jobscope import [--server URL] [--token-file FILE] FILE...\n"
               "\n"
               "Loads event files written earlier (JSON Lines, '-' = stdin) into a running\n"
               "'jobscope serve'; their numbers become queryable series.\n"
               "\n"
               "  --server URL        http://HOST:PORT or unix:PATH (default: the local server's\n"
               "                      Unix socket, else http://127.0.0.1:4242)\n"
               "  --token-file FILE   send 'Authorization: Bearer' with FILE's token\n"
               "  -q, --quiet         no summary line\n"
               "  -h, --help          this text\n"
               "\n"
               "Exit status: 0 when every line was imported, 1 when some lines were not events\n"
               "or larger than the server takes (they are named on stderr and skipped, the\n"
               "rest is imported), 125 when the server could not be reached or refused the\n"
               "data.\n");
}

int import_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"server", required_argument, 0, 's'},
        {"token-file", required_argument, 0, 't'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *server = NULL, *token_file = NULL;
    int quiet = 0, c;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            server = optarg;
            break;
        case 't':
            token_file = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            fprintf(stderr, "jobscope import: see 'jobscope import --help'\n");
            return EXIT_ERR;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "jobscope import: no FILE given (see 'jobscope import --help')\n");
        return EXIT_ERR;
    }
    importer im = {0};
    char detected[4200];
    if (!server)
        server = serve_detect(detected, sizeof detected) ? detected + 9 /* "unix://PATH" */
                                                         : "http://127.0.0.1:4242";
    curl_global_init(CURL_GLOBAL_DEFAULT);
    im.h = curl_easy_init();
    if (!strncmp(server, "unix:", 5)) {
        const char *p = server + 5;
        while (p[0] == '/' && p[1] == '/') p++;
        im.unix_path = strdup(p);
        snprintf(im.url, sizeof im.url, "http://localhost/api/events");
        curl_easy_setopt(im.h, CURLOPT_UNIX_SOCKET_PATH, im.unix_path);
    } else if (!strncmp(server, "http://", 7) || !strncmp(server, "https://", 8)) {
        size_t l = strlen(server);
        while (l && server[l - 1] == '/') l--;
        snprintf(im.url, sizeof im.url, "%.*s/api/events", (int)l, server);
    } else {
        fprintf(stderr, "jobscope import: --server %s: expected http://HOST:PORT or unix:PATH\n",
                server);
        curl_easy_cleanup(im.h);
        return EXIT_ERR;
    }
    im.hdrs = curl_slist_append(NULL, "Content-Type: application/x-ndjson");
    im.hdrs = curl_slist_append(im.hdrs, "Expect:");
    if (token_file) {
        FILE *f = fopen(token_file, "r");
        char tok[1024] = "", hdr[1100];
        if (!f || !fgets(tok, sizeof tok, f)) {
            fprintf(stderr, "jobscope import: --token-file %s: cannot read it\n", token_file);
            if (f) fclose(f);
            curl_slist_free_all(im.hdrs);
            curl_easy_cleanup(im.h);
            free(im.unix_path);
            return EXIT_ERR;
        }
        fclose(f);
        tok[strcspn(tok, "\r\n")] = 0;
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", tok);
        im.hdrs = curl_slist_append(im.hdrs, hdr);
    }
    curl_easy_setopt(im.h, CURLOPT_URL, im.url);
    curl_easy_setopt(im.h, CURLOPT_HTTPHEADER, im.hdrs);
    curl_easy_setopt(im.h, CURLOPT_POST, 1L);
    curl_easy_setopt(im.h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(im.h, CURLOPT_WRITEDATA, &im.resp);
    curl_easy_setopt(im.h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(im.h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(im.h, CURLOPT_TIMEOUT, 600L);
    curl_easy_setopt(im.h, CURLOPT_USERAGENT, "jobscope-import");
    /* a large body waits for the server's "100 Continue" (or its 413) */
    curl_easy_setopt(im.h, CURLOPT_EXPECT_100_TIMEOUT_MS, 10000L);
    int rc = 0;
    for (int i = optind; i < argc && !rc; i++)
        if (import_file(&im, argv[i]) < 0) rc = EXIT_ERR;
    if (!quiet && !rc)
        fprintf(stderr, "jobscope import: %llu events (%llu points) into %s%s\n", im.events,
                im.points, im.unix_path ? "unix:" : "", im.unix_path ? im.unix_path : im.url);
    curl_slist_free_all(im.hdrs);
    curl_easy_cleanup(im.h);
    sbuf_free(&im.resp);
    free(im.unix_path);
    curl_global_cleanup();
    if (!rc && im.failed) rc = 1;
    return rc;
}
