/* serve_detect.c — see serve_detect.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "serve_detect.h"

int serve_socket_path(char *buf, size_t len)
{
    const char *env = getenv("JOBSCOPE_SERVE_SOCKET"), *rt = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (geteuid() == 0)
        n = snprintf(buf, len, "/run/jobscope/serve.sock");
    else if (rt && *rt == '/')
        n = snprintf(buf, len, "%s/jobscope/serve.sock", rt);
    else
        n = snprintf(buf, len, "/tmp/jobscope-%u/serve.sock", (unsigned)geteuid());
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int serve_detect(char *url, size_t len)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (serve_socket_path(sa.sun_path, sizeof sa.sun_path) < 0) return 0;
    char dir[sizeof sa.sun_path];
    snprintf(dir, sizeof dir, "%s", sa.sun_path);
    char *slash = strrchr(dir, '/');
    if (!slash) return 0;
    *slash = slash == dir ? '/' : 0;
    if (slash == dir) dir[1] = 0;
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0) ||
        (st.st_mode & 022))
        return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    int ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    if (!ok) return 0;
    int n = snprintf(url, len, "jobscope+unix://%s", sa.sun_path);
    return n > 0 && (size_t)n < len;
}
