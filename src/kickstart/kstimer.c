/* kstimer.c — kickstart's -k/-K timeouts: -k S seconds after the chain
 * started, the job running now gets SIGTERM ("Job timed out, sending
 * SIGTERM" on kickstart's stderr), then every -K seconds SIGKILL while one
 * still runs ("Job still running, sending SIGKILL"); the stages not yet
 * started are skipped (kschain.c reads `alarmed`).  The cleanup job runs
 * after the timer is stopped, as kickstart resets its alarm before it.
 *
 * A thread in place of kickstart's SIGALRM: the main job runs under the
 * monitor, whose pid the thread reads from the monitor_result. */
#include "kickstart.h"
#include "../util/thread.h"
#include "../util/clock.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pid_t current_pid(kstimer *t)
{
    if (t->side_pid > 0) return t->side_pid;
    if (t->main_pid) return __atomic_load_n(t->main_pid, __ATOMIC_ACQUIRE);
    return 0;
}

/* Waits secs or until stopped (mutex held); 1 if stopped. */
static int wait_for(kstimer *t, double secs)
{
    struct timespec until;
    mono_deadline(&until, secs);
    while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0) {}
    return t->stop;
}

static void *timer_thread(void *arg)
{
    kstimer *t = arg;
    pthread_mutex_lock(&t->mu);
    int sig = SIGTERM;
    if (!wait_for(t, t->term)) {
        t->alarmed = 1;
        for (;;) {
            pid_t pid = current_pid(t);
            if (pid > 0) {
                fputs(sig == SIGKILL ? "Job still running, sending SIGKILL\n"
                                     : "Job timed out, sending SIGTERM\n",
                      stderr);
                kill(pid, sig);
                sig = SIGKILL;
            }
            if (wait_for(t, pid > 0 ? t->kill : 1)) break;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int kstimer_start(kstimer *t, int term_s, int kill_s)
{
    t->term = term_s;
    t->kill = kill_s;
    t->stop = t->alarmed = 0;
    t->side_pid = 0;
    t->main_pid = NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&t->mu, NULL);
    t->running = util_thread_create(&t->th, timer_thread, t) == 0;
    return t->running ? 0 : -1;
}

void kstimer_side(kstimer *t, pid_t pid)
{
    if (!t->running) return;
    pthread_mutex_lock(&t->mu);
    t->side_pid = pid;
    int late = t->alarmed && pid > 0; /* fired while this job was starting */
    pthread_mutex_unlock(&t->mu);
    if (late) kill(pid, SIGTERM);
}

void kstimer_main(kstimer *t, const pid_t *pid)
{
    if (!t->running) return;
    pthread_mutex_lock(&t->mu);
    t->main_pid = pid;
    pthread_mutex_unlock(&t->mu);
}

int kstimer_alarmed(kstimer *t)
{
    if (!t->running) return t->alarmed;
    pthread_mutex_lock(&t->mu);
    int a = t->alarmed;
    pthread_mutex_unlock(&t->mu);
    return a;
}

void kstimer_stop(kstimer *t)
{
    if (!t->running) return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    t->running = 0;
}
