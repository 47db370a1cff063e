/* bench_tree.c — the "tree-N" workload: N mostly idle processes in a tree
 * (the root, children, every 4th child with a grandchild, every 5th process
 * with 2 extra threads).  Prints "ready ROOTPID" on stdout once all N are
 * up, then sleeps until killed; every descendant dies with its parent
 * (PR_SET_PDEATHSIG), so killing the root ends the whole tree.
 *   bench_tree N */
#include "bench.h"
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

static void *idle_thread(void *arg) { (void)arg; for (;;) pause(); return NULL; }

static void add_threads(int idx)
{
    if (idx % 5 != 0) return;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    for (int i = 0; i < 2; i++) {
        pthread_t t;
        pthread_create(&t, &a, idle_thread, NULL);
    }
    pthread_attr_destroy(&a);
}

static void become_member(int ready_fd, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    char c = 1;
    if (write(ready_fd, &c, 1) != 1) _exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: bench_tree N\n"); return 2; }
    int n = atoi(argv[1]);
    int pfd[2];
    if (pipe(pfd) != 0) { perror("pipe"); return 1; }
    pid_t root = getpid();
    int made = 1;                        /* the root */
    for (int i = 1; made < n; i++) {
        int grandchild = (i % 4 == 0) && made + 2 <= n;
        pid_t c = fork();
        if (c < 0) { perror("fork"); return 1; }
        if (c == 0) {
            close(pfd[0]);
            become_member(pfd[1], root);
            if (grandchild) {
                pid_t me = getpid();
                pid_t g = fork();
                if (g == 0) {
                    become_member(pfd[1], me);
                    close(pfd[1]);
                    add_threads(i + 1);
                    for (;;) pause();
                }
            }
            close(pfd[1]);
            add_threads(i);
            for (;;) pause();
        }
        made += 1 + grandchild;
    }
    close(pfd[1]);
    add_threads(0);
    int got = 0; char buf[256];
    while (got < n - 1) {
        ssize_t r = read(pfd[0], buf, sizeof buf);
        if (r > 0) got += (int)r;
        else if (r == 0) break;
    }
    close(pfd[0]);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;) pause();
}
