/* Unit tests for runtime/offload.c: the lanes, and the cap on the items of one key. */
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "runtime/offload.h"
#include "tests/unit/unit.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool release_busy;       /* the busy key's items may end */
static int busy_running, busy_most, busy_done, quiet_done;

static void busy(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&mu);
    busy_running++;
    if (busy_running > busy_most)
        busy_most = busy_running;
    pthread_cond_broadcast(&cv);
    while (!release_busy)
        pthread_cond_wait(&cv, &mu);
    busy_running--;
    busy_done++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void quiet(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&mu);
    quiet_done++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* Waits (at most 5 s) until *v reaches want; the value it reached. */
static int wait_for(int *v, int want)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&mu);
    while (*v < want && pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    int got = *v;
    pthread_mutex_unlock(&mu);
    return got;
}

static void test_one_busy_key_leaves_threads_for_the_others(void)
{
    CHECK(offload_start(1, 8) == 0);
    struct offload_item many[12], other[3];
    for (int i = 0; i < 12; i++) {
        many[i] = (struct offload_item){.run = busy, .key = "wsp_busy"};
        offload_submit(OFFLOAD_WRITES, &many[i]);
    }
    CHECK(wait_for(&busy_running, OFFLOAD_PER_KEY) == OFFLOAD_PER_KEY);
    /* the busy key holds its share of the eight threads and no more ... */
    usleep(50 * 1000);
    pthread_mutex_lock(&mu);
    CHECK(busy_running == OFFLOAD_PER_KEY);
    pthread_mutex_unlock(&mu);
    /* ... so another key's and an unkeyed item run at once */
    other[0] = (struct offload_item){.run = quiet, .key = "wsp_quiet"};
    other[1] = (struct offload_item){.run = quiet, .key = NULL};
    other[2] = (struct offload_item){.run = quiet, .key = "wsp_quiet"};
    for (int i = 0; i < 3; i++)
        offload_submit(OFFLOAD_WRITES, &other[i]);
    CHECK(wait_for(&quiet_done, 3) == 3);
    /* released, the busy key's items all run, never more than their share at once */
    pthread_mutex_lock(&mu);
    release_busy = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    CHECK(wait_for(&busy_done, 12) == 12);
    CHECK(busy_most == OFFLOAD_PER_KEY);
    offload_stop();
}

static void test_queued_items_of_a_capped_key_are_taken_at_shutdown(void)
{
    release_busy = false;
    busy_running = busy_most = busy_done = 0;
    CHECK(offload_start(1, 8) == 0);
    struct offload_item many[6];
    for (int i = 0; i < 6; i++) {
        many[i] = (struct offload_item){.run = busy, .key = "wsp_busy"};
        offload_submit(OFFLOAD_WRITES, &many[i]);
    }
    CHECK(wait_for(&busy_running, OFFLOAD_PER_KEY) == OFFLOAD_PER_KEY);
    int taken = 0;
    for (struct offload_item *it = offload_take_queued(); it; it = it->next)
        taken++;
    CHECK(taken == 6 - OFFLOAD_PER_KEY); /* those waiting their key's turn are not lost */
    pthread_mutex_lock(&mu);
    release_busy = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    offload_stop();
    CHECK(busy_done == OFFLOAD_PER_KEY);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_one_busy_key_leaves_threads_for_the_others),
        UNIT_TEST(test_queued_items_of_a_capped_key_are_taken_at_shutdown),
    };
    return unit_run("offload", tests, sizeof tests / sizeof tests[0]);
}
