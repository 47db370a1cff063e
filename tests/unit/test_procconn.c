/* test_procconn.c — the netlink process connector counts every process a
 * tree started, short-lived ones included (skipped where the connector is
 * not available: not root, or not the initial namespaces). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "cgroup/cgroup.h"

static void test_count_forks(void **state)
{
    (void)state;
    procconn *pc = procconn_open();
    if (!pc) {
        print_message("process connector unavailable: skipped\n");
        skip();
    }
    /* the "job": a child that starts 6 short-lived children, each of which
     * starts one grandchild; 1 + 6 + 6 = 13 processes */
    pid_t job = fork();
    if (job == 0) {
        usleep(100000);          /* let the counter be seeded */
        for (int i = 0; i < 6; i++) {
            pid_t c = fork();
            if (c == 0) {
                pid_t g = fork();
                if (g == 0)
                    _exit(0);
                waitpid(g, NULL, 0);
                _exit(0);
            }
            waitpid(c, NULL, 0);
        }
        _exit(0);
    }
    procconn_start(pc, &job, 1);
    /* unrelated processes (ours) must not count */
    pid_t other = fork();
    if (other == 0)
        _exit(0);
    waitpid(other, NULL, 0);
    waitpid(job, NULL, 0);
    procconn_stop(pc);
    print_message("total=%llu lost=%llu\n", (unsigned long long)procconn_total(pc),
                  (unsigned long long)procconn_lost(pc));
    assert_int_equal(procconn_total(pc), 13);
    procconn_close(pc);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_count_forks) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
