/* clock.h — the one place jobscope reads clocks.  Every layer uses these
 * (the sampler, the publishers, the pump, the GPU threads) instead of its
 * own clock_gettime wrapper. */
#ifndef JOBSCOPE_CLOCK_H
#define JOBSCOPE_CLOCK_H

#include <time.h>

double now_epoch(void); /* CLOCK_REALTIME as double seconds */
double now_mono(void);  /* CLOCK_MONOTONIC as double seconds */
long now_mono_ms(void); /* CLOCK_MONOTONIC in whole milliseconds */
/* *ts = CLOCK_MONOTONIC now + secs (negative: now), for condition variables
 * created with pthread_condattr_setclock(CLOCK_MONOTONIC). */
void mono_deadline(struct timespec *ts, double secs);

#endif
