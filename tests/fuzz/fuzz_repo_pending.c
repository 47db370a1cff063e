/* fuzz_repo_pending.c — the repository's log of pending samples
 * (src/repo/repo_pending.c), read back at open after a crash, which a
 * disk, a power cut or a person may have damaged: whatever its records
 * (lengths, cut ones, texts that are not events or not JSON), the open
 * succeeds, writes what it can, and starts the log again, so that the
 * next open finds exactly the same events (a log is replayed once).
 *
 * Input: the log's body after its header (generation 1, not yet written). */
#include "fuzz.h"
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "repo/repo.h"

static char dir[] = "/tmp/jobscope-fuzz-pending.XXXXXX";
static int n_runs;

static void remove_dir(void)
{
    rmdir(dir); /* each input's repository is removed after it */
}

/* Events the repository answers, paging by id (at most 100 pages). */
static long long count_events(repo *r)
{
    long long n = 0;
    repo_event_filter f = {.limit = 10000};
    for (int page = 0; page < 100; page++) {
        json_t *o = repo_events(r, &f);
        if (!o) abort();
        n += (long long)json_array_size(json_object_get(o, "events"));
        json_t *next = json_object_get(o, "next");
        int more = json_is_integer(next);
        if (more) f.after = json_integer_value(next);
        json_decref(o);
        if (!more) break;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!n_runs++ && (!mkdtemp(dir) || atexit(remove_dir) != 0)) abort();
    char sub[256], path[400], log[420];
    snprintf(sub, sizeof sub, "%s/r%d", dir, n_runs);
    if (mkdir(sub, 0700) < 0) abort();
    snprintf(path, sizeof path, "%s/repo.sqlite", sub);
    snprintf(log, sizeof log, "%s-pending", path);
    FILE *f = fopen(log, "wb");
    if (!f) abort();
    fputs("JSPEND1 1\n", f);
    fwrite(data, 1, size, f);
    fclose(f);
    char err[256];
    repo *r = repo_open(path, err, sizeof err);
    if (!r) abort(); /* a damaged log never stops the repository */
    long long first = count_events(r);
    json_decref(repo_workflows(r));
    repo_close(r);
    r = repo_open(path, err, sizeof err);
    if (!r || count_events(r) != first) abort(); /* nothing twice */
    repo_close(r);
    char cmd[500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
    if (system(cmd) != 0) abort();
    return 0;
}
