/* thread.h — threads of jobscope's own (publishers, the kickstart timer and
 * endpoints): they take no signal, so that the monitor, which reads its
 * signals through a signalfd, gets every one of them. */
#ifndef JOBSCOPE_THREAD_H
#define JOBSCOPE_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread; 0 or an errno. */
int util_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
