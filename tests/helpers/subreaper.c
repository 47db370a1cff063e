/* subreaper.c — stands in for a batch system's step daemon (Slurm's
 * slurmstepd, systemd, HTCondor's starter are child subreapers): runs CMD as
 * a child subreaper, reaps every descendant that is re-parented to it, and
 * writes one "PID STATUS" line per reaped process to FILE (STATUS: the exit
 * code, or 128+N for signal N).  Exits with CMD's own status.
 *
 *   subreaper FILE CMD [ARG...]
 *
 * The fault test kills jobscope with SIGKILL mid-job and then checks that
 * the job's exit status reached this process, the nearest subreaper. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: subreaper FILE CMD [ARG...]\n");
        return 2;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("prctl");
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 2;
    }
    setvbuf(out, NULL, _IOLBF, 0);
    pid_t cmd = fork();
    if (cmd < 0) {
        perror("fork");
        return 2;
    }
    if (cmd == 0) {
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    int cmd_status = 0;
    for (;;) {
        int st;
        pid_t p = wait(&st);
        if (p < 0) {
            if (errno == EINTR) continue;
            break;                                  /* ECHILD: every descendant reaped */
        }
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        fprintf(out, "%d %d\n", (int)p, code);
        if (p == cmd) cmd_status = code;
    }
    fclose(out);
    return cmd_status;
}
