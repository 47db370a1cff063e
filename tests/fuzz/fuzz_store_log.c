/* fuzz_store_log.c — what the store reads back from its own files, which a
 * disk, a power cut or a person may have damaged (docs/store.md): a log
 * segment replayed at store_open (records, CRCs, zstd records, resync after
 * damage), and chunk parts decoded (store_chunk_decode).  Whatever the bytes,
 * open either fails with a message or gives a store whose every series reads
 * back in time order; a chunk decodes or is refused, within its arrays. */
#include "fuzz.h"
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "store/codec.h"
#include "store/store.h"

static char dir[] = "/tmp/jobscope-fuzz-store.XXXXXX";
static int n_runs;

static int check(void *arg, const store_series *se)
{
    store *s = arg;
    store_points p = {0};
    if (store_read(s, se->id, INT64_MIN, INT64_MAX, &p) == 0)
        for (size_t i = 1; i < p.n; i++)
            if (p.ts[i] <= p.ts[i - 1]) abort();
    store_points_free(&p);
    return 0;
}

static void quiet(void *arg, const char *line)
{
    (void)arg;
    (void)line;
}

static void remove_dir(void)
{
    rmdir(dir); /* each input's store is removed after it */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (data[0] & 1) { /* a chunk */
        int64_t *ts = NULL;
        double *val = NULL;
        size_t n = 0, cap = 0;
        if (store_chunk_decode(data + 1, size - 1, &ts, &val, &n, &cap) == 0 && n > cap) abort();
        free(ts);
        free(val);
        return 0;
    }
    if (!n_runs++ && (!mkdtemp(dir) || atexit(remove_dir) != 0)) abort();
    char sub[256], path[400];
    snprintf(sub, sizeof sub, "%s/s%d", dir, n_runs);
    snprintf(path, sizeof path, "%s/wal", sub);
    if (mkdir(sub, 0700) < 0 || mkdir(path, 0700) < 0) abort();
    snprintf(path, sizeof path, "%s/wal/0000000000000001.wal", sub);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    char err[256];
    store_config c = {sub, 0, 0, 0, quiet, NULL};
    store *s = store_open(&c, err, sizeof err);
    if (s) {
        char **names;
        int nn = store_names(s, STORE_METRICS, "", 100, &names);
        for (int i = 0; i < nn; i++) {
            store_series_of(s, names[i], check, s);
            free(names[i]);
        }
        if (nn >= 0) free(names);
        store_close(s);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
    if (system(cmd) != 0) abort();
    return 0;
}
