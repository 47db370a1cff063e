/* ksmon.c — the kickstart://HOST:PORT endpoint jobscope kickstart hands its
 * job under -m, as pegasus-kickstart does (sink/kswire.h): a nested
 * pegasus-monitor, libinterpose or `jobscope run` reports there instead of
 * failing on an unset or foreign URL.
 *
 * pegasus-kickstart adds what it receives to its own process-group totals.
 * jobscope's online events already count every process of the job's tree,
 * the reporters' included (a child subreaper loses none), so adding the
 * reports would count them twice: they are received, checked (one whole
 * record per connection), counted for the record's monitoring summary and
 * otherwise dropped. */
#include "kickstart.h"
#include "../util/thread.h"
#include "../sink/kswire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KSMON_MAX_PROCS 4096 /* distinct reporters remembered */

struct ksmon {
    int lfd, stop_pipe[2];
    pthread_t th;
    unsigned long reports;
    uint64_t *seen; /* host << 32 | pid of each reporter */
    unsigned long nseen;
};

static void remember(ksmon *m, const kswire_stats *s)
{
    uint64_t key = (uint64_t)s->host << 32 | (uint32_t)s->pid;
    for (unsigned long i = 0; i < m->nseen; i++)
        if (m->seen[i] == key) return;
    if (m->nseen < KSMON_MAX_PROCS) m->seen[m->nseen++] = key;
}

/* One connection: one record, read within a second. */
static void take_report(ksmon *m)
{
    int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return;
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    kswire_stats s;
    size_t got = 0;
    while (got < sizeof s) {
        ssize_t n = recv(fd, (char *)&s + got, sizeof s - got, 0);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (got != sizeof s) return;
    m->reports++;
    remember(m, &s);
}

static void *ksmon_thread(void *arg)
{
    ksmon *m = arg;
    for (;;) {
        struct pollfd p[2] = {{m->lfd, POLLIN, 0}, {m->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[0].revents & POLLIN) take_report(m);
        if (p[1].revents) break;
    }
    return NULL;
}

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

ksmon *ksmon_start(char *url, size_t urllen)
{
    ksmon *m = calloc(1, sizeof *m);
    if (!m || !(m->seen = calloc(KSMON_MAX_PROCS, sizeof *m->seen))) {
        free(m);
        return NULL;
    }
    int port = 0;
    char host[256];
    m->lfd = listen_any(&port);
    if (m->lfd < 0 || gethostname(host, sizeof host) != 0 || pipe2(m->stop_pipe, O_CLOEXEC) != 0) {
        if (m->lfd >= 0) close(m->lfd);
        free(m->seen);
        free(m);
        return NULL;
    }
    host[sizeof host - 1] = 0;
    snprintf(url, urllen, "kickstart://%s:%d", host, port);
    int rc = util_thread_create(&m->th, ksmon_thread, m);
    if (rc != 0) {
        close(m->lfd);
        close(m->stop_pipe[0]);
        close(m->stop_pipe[1]);
        free(m->seen);
        free(m);
        return NULL;
    }
    return m;
}

void ksmon_stop(ksmon *m, unsigned long *reports, unsigned long *procs)
{
    *reports = *procs = 0;
    if (!m) return;
    while (write(m->stop_pipe[1], "x", 1) < 0 && errno == EINTR) {}
    pthread_join(m->th, NULL);
    *reports = m->reports;
    *procs = m->nseen;
    close(m->lfd);
    close(m->stop_pipe[0]);
    close(m->stop_pipe[1]);
    free(m->seen);
    free(m);
}
