/* fuzz_procread.c — the /proc parsers (stat, io, status, children lists), fed
 * arbitrary file contents as a hostile or changing /proc could give them. */
#include <sys/types.h>
#include "fuzz.h"
#include "proc/procread.h"

static void on_pid(void *arg, pid_t pid) { (void)arg; (void)pid; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *b = (const char *)data;
    proc_stat st;
    proc_io io;
    proc_status ps;
    procread_stat(b, size, &st);
    procread_io(b, size, &io);
    procread_status(b, size, &ps);
    procread_pids(b, size, on_pid, NULL);
    return 0;
}
