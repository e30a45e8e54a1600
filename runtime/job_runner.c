/* One thread per job, sleeping on a shared condition variable between rounds. The jobs are a
 * list that grows as they are added (no fixed number of them to outgrow); each entry is
 * allocated on its own, so the pointer its thread holds stays put. */
#include "runtime/job_runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/prctl.h>

#include "runtime/group_commit.h"
#include "runtime/log.h"

struct entry {
    struct job job;
    pthread_t thread;
    bool running; /* its thread was started (and is joined by stop) */
    struct entry *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool stopping, started;
static struct entry *entries; /* in the order added */
static struct entry **tail = &entries;

/* One round of j: run; then, when it found something and j acts outside the database, the
 * wait until what run could have read is durable (group_commit_visible read after run's
 * reads), then act. */
static int round_of(const struct job *j)
{
    int n = j->run();
    if (n <= 0 || !j->act)
        return n;
    group_commit_wait_durable(group_commit_visible());
    return j->act() == 0 ? n : -1;
}

static void *loop(void *arg)
{
    const struct job *j = &((struct entry *)arg)->job;
    char name[16];
    snprintf(name, sizeof name, "tr-%s", j->name); /* truncated to what the kernel keeps */
    prctl(PR_SET_NAME, name);
    pthread_mutex_lock(&lock);
    while (!stopping) {
        pthread_mutex_unlock(&lock);
        int n = round_of(j);
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

int job_runner_add(const struct job *j)
{
    if (started) {
        log_error("jobs: %s added after the jobs started", j->name);
        return -1;
    }
    struct entry *e = calloc(1, sizeof *e);
    if (!e) {
        log_error("jobs: out of memory adding %s", j->name);
        return -1;
    }
    e->job = *j;
    *tail = e;
    tail = &e->next;
    return 0;
}

int job_runner_start(void)
{
    stopping = false;
    started = true;
    for (struct entry *e = entries; e; e = e->next) {
        if (pthread_create(&e->thread, NULL, loop, e) != 0) {
            log_error("jobs: cannot start the thread of %s", e->job.name);
            job_runner_stop();
            return -1;
        }
        e->running = true;
    }
    return 0;
}

void job_runner_stop(void)
{
    pthread_mutex_lock(&lock);
    stopping = true;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    while (entries) {
        struct entry *e = entries;
        if (e->running)
            pthread_join(e->thread, NULL);
        entries = e->next;
        free(e);
    }
    tail = &entries;
    started = false;
}
