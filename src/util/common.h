/* common.h — the few constants every layer of jobscope shares: its version
 * and the exit statuses of its own failures (the convention of env(1)). */
#ifndef JOBSCOPE_COMMON_H
#define JOBSCOPE_COMMON_H

#define JOBSCOPE_VERSION_STR "0.1.0"

#define JS_EXIT_ERROR    125 /* jobscope's own failure */
#define JS_EXIT_NOEXEC   126 /* command found but not executable */
#define JS_EXIT_NOTFOUND 127 /* command not found */

#endif
