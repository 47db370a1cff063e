/* fuzz_spool.c — reading a spool file (what `jobscope flush` and the
 * publisher replay): any bytes on disk, never a crash, a hang or a record
 * outside the file. */
#include <unistd.h>
#include <fcntl.h>
#include "fuzz.h"
#include "sink/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/jobscope-fuzz-spool.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    if (write(fd, data, size) != (ssize_t)size) { close(fd); unlink(path); return 0; }
    close(fd);
    spool sp;
    char *label = NULL, err[256], *buf = NULL;
    size_t cap = 0;
    if (spool_open(&sp, path, &label, err, sizeof err) == 0) {
        pub_item items[16];
        off_t ends[16];
        int n, rounds = 0;
        while ((n = spool_read(&sp, 16, items, ends, &buf, &cap)) > 0 && rounds++ < 100000) {
            for (int i = 0; i < n; i++)
                if (!items[i].name || !items[i].json) abort();
            if (spool_consume(&sp, ends[n - 1], n) < 0) break;
        }
        sp.pending = 0;           /* keep the file: removed below either way */
        spool_close(&sp);
    }
    free(label);
    free(buf);
    unlink(path);
    return 0;
}
