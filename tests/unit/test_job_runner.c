/* Unit tests for runtime/job_runner.c: a job runs at start and then once per period, a round that
 * reports a full batch runs again without waiting, and stop ends a long sleep at once. */
#include <time.h>

#include "runtime/job_runner.h"
#include "tests/unit/unit.h"

static int runs, full_rounds;

static int counting(void)
{
    __atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
    return 0;
}

/* Reports a full batch (10) for its first five rounds, then nothing left. */
static int draining(void)
{
    int n = __atomic_add_fetch(&full_rounds, 1, __ATOMIC_SEQ_CST);
    return n <= 5 ? 10 : 0;
}

/* Waits (at most about two seconds) until *counter reaches want. */
static int wait_for(int *counter, int want)
{
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 2000 && __atomic_load_n(counter, __ATOMIC_SEQ_CST) < want; i++)
        nanosleep(&ms, NULL);
    return __atomic_load_n(counter, __ATOMIC_SEQ_CST);
}

static void test_a_job_runs_at_start_and_stop_ends_its_sleep(void)
{
    const struct job j = {"counting", counting, 0, 3600000};
    runs = 0;
    CHECK(job_runner_start(&j, 1) == 0);
    CHECK(wait_for(&runs, 1) == 1);
    job_runner_stop(); /* would wait an hour if stop did not wake it */
    CHECK(runs == 1);
}

static void test_a_full_batch_runs_again_without_waiting(void)
{
    const struct job j = {"draining", draining, 10, 3600000};
    full_rounds = 0;
    CHECK(job_runner_start(&j, 1) == 0);
    CHECK(wait_for(&full_rounds, 6) == 6); /* five full rounds, then the one that found none */
    job_runner_stop();
    CHECK(full_rounds == 6);
}

static void test_more_jobs_than_threads_are_refused(void)
{
    struct job many[JOB_RUNNER_MAX + 1];
    for (size_t i = 0; i < JOB_RUNNER_MAX + 1; i++)
        many[i] = (struct job){"counting", counting, 0, 3600000};
    runs = 0;
    CHECK(job_runner_start(many, JOB_RUNNER_MAX + 1) == -1);
    CHECK(runs == 0);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_job_runs_at_start_and_stop_ends_its_sleep),
        UNIT_TEST(test_a_full_batch_runs_again_without_waiting),
        UNIT_TEST(test_more_jobs_than_threads_are_refused),
    };
    return unit_run("job_runner", tests, sizeof tests / sizeof tests[0]);
}
