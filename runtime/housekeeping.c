/* The housekeeping thread: a loop on a condition variable with a one-second timeout, so stop
 * wakes it at once. Its database connection commits with synchronous=NORMAL: what it writes
 * (quota checkpoints, purges) is never something a client was told is durable. */
#include "runtime/housekeeping.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/prctl.h>

#include "runtime/clock.h"
#include "runtime/idempotency.h"
#include "runtime/instances.h"
#include "runtime/log.h"
#include "runtime/ratelimit.h"
#include "runtime/revocation.h"
#include "runtime/storage.h"

#define PERIOD_S 1
#define PURGE_BATCH 500

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool running, stopping;
static int64_t last_data_version = -1;

/* Changes when another connection (a request thread, or an operator's `admin` process)
 * commits, so quotas are re-read only after something may have changed (-1: the engine cannot
 * tell, re-read every round). */
static int64_t data_version(void)
{
    return storage_data_version();
}

void housekeeping_run_once(void)
{
    int64_t now = clock_now_ns();
    ratelimit_checkpoint(now);
    int64_t dv = data_version();
    if (dv < 0 || dv != last_data_version) {
        /* Both reload fully, so a failed round is simply tried again next second. */
        /* With several instances, every request reads the shared revocations anyway
         * (instances.h): only the quotas need reloading. */
        if (ratelimit_load_overrides() == 0 &&
            (instances_shared() || revocation_load(now / 1000000000) == 0))
            last_data_version = dv;
    }
    instances_prune(now / 1000000000);
    int n;
    do {
        n = idempotency_purge(now / 1000000, PURGE_BATCH);
    } while (n == PURGE_BATCH && !stopping);
}

static void *loop(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-housekeeping");
    storage_lazy_sync();
    pthread_mutex_lock(&lock);
    while (!stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += PERIOD_S;
        int rc = 0;
        while (!stopping && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&wake, &lock, &until);
        if (stopping)
            break;
        pthread_mutex_unlock(&lock);
        housekeeping_run_once();
        pthread_mutex_lock(&lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int housekeeping_start(void)
{
    stopping = false;
    if (pthread_create(&thread, NULL, loop, NULL) != 0) {
        log_error("housekeeping: cannot start its thread");
        return -1;
    }
    running = true;
    return 0;
}

void housekeeping_stop(void)
{
    if (running) {
        pthread_mutex_lock(&lock);
        stopping = true;
        pthread_cond_signal(&wake);
        pthread_mutex_unlock(&lock);
        pthread_join(thread, NULL);
        running = false;
    }
    if (ratelimit_checkpoint(ratelimit_now_ns()) != 0)
        log_warn("housekeeping: the last rate-limit checkpoint failed; quotas restart fuller");
}
