/* One thread per job, sleeping on a shared condition variable between rounds. */
#include "runtime/job_runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <sys/prctl.h>

#include "runtime/log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool stopping;
static struct job jobs_list[JOB_RUNNER_MAX];
static pthread_t threads[JOB_RUNNER_MAX];
static size_t started;

static void *loop(void *arg)
{
    const struct job *j = arg;
    char name[16];
    snprintf(name, sizeof name, "tr-%s", j->name); /* truncated to what the kernel keeps */
    prctl(PR_SET_NAME, name);
    pthread_mutex_lock(&lock);
    while (!stopping) {
        pthread_mutex_unlock(&lock);
        int n = j->run();
        pthread_mutex_lock(&lock);
        if (n >= j->batch && j->batch > 0)
            continue; /* more is due: no sleep */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = until.tv_nsec + (int64_t)j->period_ms * 1000000;
        until.tv_sec += (time_t)(ns / 1000000000);
        until.tv_nsec = (long)(ns % 1000000000);
        int rc = 0;
        while (!stopping && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&wake, &lock, &until);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int job_runner_start(const struct job *jobs, size_t n)
{
    if (n > JOB_RUNNER_MAX) {
        log_error("jobs: %zu jobs, at most %d", n, JOB_RUNNER_MAX);
        return -1;
    }
    stopping = false;
    for (size_t i = 0; i < n; i++) {
        jobs_list[i] = jobs[i];
        if (pthread_create(&threads[i], NULL, loop, &jobs_list[i]) != 0) {
            log_error("jobs: cannot start the thread of %s", jobs[i].name);
            job_runner_stop();
            return -1;
        }
        started = i + 1;
    }
    return 0;
}

void job_runner_stop(void)
{
    pthread_mutex_lock(&lock);
    stopping = true;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    started = 0;
}
