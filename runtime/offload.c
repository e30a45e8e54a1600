/* Offload pool (see offload.h): a FIFO queue and the threads offload_start asked for taking
 * from it. */
#include "runtime/offload.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/prctl.h>

#include "runtime/log.h"

#define OFFLOAD_THREADS_MAX 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct offload_item *head, *tail;
static pthread_t threads[OFFLOAD_THREADS_MAX];
static int started;
static bool stopping;

static void *worker(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-offload");
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!head && !stopping)
            pthread_cond_wait(&cv, &mu);
        struct offload_item *it = head;
        if (!it)
            break; /* stopping, and nothing left */
        head = it->next;
        if (!head)
            tail = NULL;
        pthread_mutex_unlock(&mu);
        it->run(it->ctx);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int offload_start(int nthreads)
{
    if (nthreads < 1)
        nthreads = 1;
    if (nthreads > OFFLOAD_THREADS_MAX)
        nthreads = OFFLOAD_THREADS_MAX;
    pthread_mutex_lock(&mu);
    stopping = false;
    for (started = 0; started < nthreads; started++) {
        if (pthread_create(&threads[started], NULL, worker, NULL) != 0)
            break;
    }
    int n = started;
    pthread_mutex_unlock(&mu);
    if (n < nthreads) {
        log_error("offload: cannot start its threads");
        offload_stop();
        return -1;
    }
    return 0;
}

void offload_submit(struct offload_item *it)
{
    it->next = NULL;
    pthread_mutex_lock(&mu);
    if (!started || stopping) {
        pthread_mutex_unlock(&mu);
        it->run(it->ctx);
        return;
    }
    if (tail)
        tail->next = it;
    else
        head = it;
    tail = it;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

struct offload_item *offload_take_queued(void)
{
    pthread_mutex_lock(&mu);
    struct offload_item *queued = head;
    head = tail = NULL;
    pthread_mutex_unlock(&mu);
    return queued;
}

void offload_stop(void)
{
    pthread_mutex_lock(&mu);
    int n = started;
    stopping = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_lock(&mu);
    started = 0;
    pthread_mutex_unlock(&mu);
}
