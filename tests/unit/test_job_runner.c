/* Unit tests for runtime/job_runner.c: a job runs at start and then once per period, a round that
 * reports a full batch runs again without waiting, stop ends a long sleep at once, and there is
 * no fixed number of jobs to outgrow. */
#include <time.h>
#include <unistd.h>

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
    CHECK(job_runner_add(&j) == 0);
    CHECK(job_runner_start() == 0);
    CHECK(wait_for(&runs, 1) == 1);
    job_runner_stop(); /* would wait an hour if stop did not wake it */
    CHECK(runs == 1);
}

static void test_a_full_batch_runs_again_without_waiting(void)
{
    const struct job j = {"draining", draining, 10, 3600000};
    full_rounds = 0;
    CHECK(job_runner_add(&j) == 0);
    CHECK(job_runner_start() == 0);
    CHECK(wait_for(&full_rounds, 6) == 6); /* five full rounds, then the one that found none */
    job_runner_stop();
    CHECK(full_rounds == 6);
}

/* One counter per job: each job's round counts itself, so a job that did not run (or ran
 * another's round) shows. */
#define MANY 20 /* more than the eight entries of the array the runner once had */
static int counters[MANY];
#define COUNTER(i)                                                                            \
    static int count_##i(void)                                                                \
    {                                                                                         \
        __atomic_add_fetch(&counters[i], 1, __ATOMIC_SEQ_CST);                                \
        return 0;                                                                             \
    }
COUNTER(0) COUNTER(1) COUNTER(2) COUNTER(3) COUNTER(4) COUNTER(5) COUNTER(6) COUNTER(7)
COUNTER(8) COUNTER(9) COUNTER(10) COUNTER(11) COUNTER(12) COUNTER(13) COUNTER(14)
COUNTER(15) COUNTER(16) COUNTER(17) COUNTER(18) COUNTER(19)

static void test_any_number_of_jobs_each_run_on_their_own(void)
{
    static int (*const run[MANY])(void) = {
        count_0,  count_1,  count_2,  count_3,  count_4,  count_5,  count_6,
        count_7,  count_8,  count_9,  count_10, count_11, count_12, count_13,
        count_14, count_15, count_16, count_17, count_18, count_19,
    };
    for (int i = 0; i < MANY; i++) {
        counters[i] = 0;
        /* a local each time: the runner keeps its own copy */
        struct job j = {"counting", run[i], 0, 3600000};
        CHECK(job_runner_add(&j) == 0);
    }
    CHECK(job_runner_start() == 0);
    for (int i = 0; i < MANY; i++)
        CHECK(wait_for(&counters[i], 1) == 1);
    const struct job late = {"late", counting, 0, 3600000};
    CHECK(job_runner_add(&late) == -1); /* the list is fixed once started */
    job_runner_stop();
    for (int i = 0; i < MANY; i++)
        CHECK(counters[i] == 1);
}

/* Stop forgets the jobs: a second start runs only what was added after it. */
static void test_stop_forgets_the_jobs(void)
{
    const struct job j = {"counting", counting, 0, 3600000};
    runs = 0;
    CHECK(job_runner_add(&j) == 0);
    CHECK(job_runner_start() == 0);
    CHECK(wait_for(&runs, 1) == 1);
    job_runner_stop();
    CHECK(job_runner_start() == 0); /* nothing added: nothing runs */
    usleep(50 * 1000);
    job_runner_stop();
    CHECK(runs == 1);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_job_runs_at_start_and_stop_ends_its_sleep),
        UNIT_TEST(test_a_full_batch_runs_again_without_waiting),
        UNIT_TEST(test_any_number_of_jobs_each_run_on_their_own),
        UNIT_TEST(test_stop_forgets_the_jobs),
    };
    return unit_run("job_runner", tests, sizeof tests / sizeof tests[0]);
}
