/* companion.h — where jobscope's companion files live: the network plugin
 * (jobscope-net.so), the BPF plugin and the server program (jobscope-serve).
 * One search order for every caller: $JOBSCOPE_PLUGIN_DIR, beside this
 * executable (the build tree), ../lib/jobscope beside it (an installed
 * tree), then the configured library directory. */
#ifndef JOBSCOPE_UTIL_COMPANION_H
#define JOBSCOPE_UTIL_COMPANION_H

#include <stddef.h>

/* 1 and the canonical path of the first existing `name` in out, or 0. */
int util_companion(const char *name, char *out, size_t outlen);

#endif
