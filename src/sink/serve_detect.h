/* serve_detect.h — where a local `jobscope serve` listens, so that
 * `jobscope run`/`attach` stream into it with no flag (docs/serve.md).
 *
 * The well-known socket: $JOBSCOPE_SERVE_SOCKET when set, else
 * /run/jobscope/serve.sock for root, else $XDG_RUNTIME_DIR/jobscope/serve.sock,
 * else /tmp/jobscope-UID/serve.sock.  The server creates the directory 0700;
 * the monitor trusts a socket only in a directory owned by itself or root
 * and writable by nobody else.  Built into jobscope (no plugin needed). */
#ifndef JOBSCOPE_SERVE_DETECT_H
#define JOBSCOPE_SERVE_DETECT_H

#include <stddef.h>

/* The socket path (whether or not anything listens); 0 or -1 (too long). */
int serve_socket_path(char *buf, size_t len);
/* 1 and url = "jobscope+unix://PATH" when a server accepts a connection on
 * the well-known socket; 0 otherwise.  Costs one connect(). */
int serve_detect(char *url, size_t len);

#endif
