/* Unit tests for runtime/job_runner.c: a job runs at start and then once per period, a round that
 * reports a full batch runs again without waiting, stop ends a long sleep at once, there is no
 * fixed number of jobs to outgrow, and a job acts outside the database only once what its
 * round read is durable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/group_commit.h"
#include "runtime/job_runner.h"
#include "runtime/storage.h"
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
    const struct job j = {.name = "counting", .run = counting, .batch = 0, .period_ms = 3600000};
    runs = 0;
    CHECK(job_runner_add(&j) == 0);
    CHECK(job_runner_start() == 0);
    CHECK(wait_for(&runs, 1) == 1);
    job_runner_stop(); /* would wait an hour if stop did not wake it */
    CHECK(runs == 1);
}

static void test_a_full_batch_runs_again_without_waiting(void)
{
    const struct job j = {.name = "draining", .run = draining, .batch = 10, .period_ms = 3600000};
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
        struct job j = {.name = "counting", .run = run[i], .batch = 0, .period_ms = 3600000};
        CHECK(job_runner_add(&j) == 0);
    }
    CHECK(job_runner_start() == 0);
    for (int i = 0; i < MANY; i++)
        CHECK(wait_for(&counters[i], 1) == 1);
    const struct job late = {.name = "late", .run = counting, .batch = 0, .period_ms = 3600000};
    CHECK(job_runner_add(&late) == -1); /* the list is fixed once started */
    job_runner_stop();
    for (int i = 0; i < MANY; i++)
        CHECK(counters[i] == 1);
}

/* Stop forgets the jobs: a second start runs only what was added after it. */
static void test_stop_forgets_the_jobs(void)
{
    const struct job j = {.name = "counting", .run = counting, .batch = 0, .period_ms = 3600000};
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

/* ---- acting only on durable commits ---- */

static char dir[64], path[128], hold[160];

/* A write of the group-commit writer: one row into t. */
static bool insert_row(void *ctx, bool guarded)
{
    (void)ctx;
    if ((guarded ? storage_savepoint() : storage_unguarded_begin()) != 0)
        return false;
    struct db_stmt *st = storage_prepare("INSERT INTO t (k) VALUES (1)");
    bool ok = st && db_step(st) == DB_DONE;
    if (st)
        db_reset(st);
    return guarded ? storage_savepoint_end(ok) != 0 : storage_unguarded_end(ok) > 0;
}

static int inserted;
static void inserted_done(void *ctx, enum group_commit_outcome outcome)
{
    (void)ctx;
    __atomic_store_n(&inserted, outcome == GROUP_COMMIT_COMMITTED ? 1 : -1, __ATOMIC_SEQ_CST);
}

/* Rows in t, read on the calling thread's connection; -1 on failure. */
static long long rows(void)
{
    long long n = -1;
    if (storage_begin(false) != 0)
        return -1;
    struct db_stmt *st = storage_prepare("SELECT count(*) FROM t");
    if (st && db_step(st) == DB_ROW)
        n = db_column_int64(st, 0);
    if (st)
        db_reset(st);
    storage_rollback();
    return n;
}

/* The job: run reads t (the row the writer committed, visible but held from the disk by the
 * test hook) and notes the latest commit it could have seen; act notes whether that was
 * durable when it was called. */
static int read_rows, ran, acted, acted_durable;
static uint64_t seen_by_run;

static int read_table(void)
{
    __atomic_store_n(&read_rows, (int)rows(), __ATOMIC_SEQ_CST);
    seen_by_run = group_commit_visible();
    __atomic_add_fetch(&ran, 1, __ATOMIC_SEQ_CST);
    return 1;
}

static int act_outside(void)
{
    __atomic_store_n(&acted_durable, group_commit_durable(seen_by_run), __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&acted, 1, __ATOMIC_SEQ_CST);
    return 0;
}

/* While the syncer's fsync is held (the test build's hook), a committed row is visible but not
 * durable: the job's run reads it, and the runner must not call act until the fsync returned.
 * This is what keeps a rail from hearing of a payment whose approval a crash could undo. */
static void test_a_job_acts_only_once_what_it_read_is_durable(void)
{
    char err[256] = "";
    snprintf(dir, sizeof dir, "/tmp/test_job_runner.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/treasury.db", dir);
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(storage_begin(true) == 0);
    struct db_stmt *st = storage_prepare("CREATE TABLE t (k INTEGER NOT NULL)");
    CHECK(st && db_step(st) == DB_DONE);
    db_reset(st);
    CHECK(storage_commit() == 0);
    snprintf(hold, sizeof hold, "%s/hold-sync", dir);
    FILE *f = fopen(hold, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    setenv("TREASURY_TEST_HOLD_SYNC", hold, 1);
    CHECK(group_commit_start() == 0);

    static struct group_commit_item write;
    write = (struct group_commit_item){.run = insert_row, .done = inserted_done};
    group_commit_submit(&write);
    for (int i = 0; i < 5000 && rows() != 1; i++)
        usleep(1000);
    CHECK(rows() == 1); /* visible */
    CHECK(!group_commit_durable(group_commit_visible())); /* not durable: the fsync is held */

    const struct job j = {.name = "acting", .run = read_table, .act = act_outside,
                          .batch = 0, .period_ms = 3600000};
    CHECK(job_runner_add(&j) == 0);
    CHECK(job_runner_start() == 0);
    CHECK(wait_for(&ran, 1) == 1);
    CHECK(__atomic_load_n(&read_rows, __ATOMIC_SEQ_CST) == 1); /* run saw the row */
    usleep(200 * 1000);
    CHECK(__atomic_load_n(&acted, __ATOMIC_SEQ_CST) == 0); /* and act waits for the disk */

    CHECK(unlink(hold) == 0);
    CHECK(wait_for(&acted, 1) == 1);
    CHECK(__atomic_load_n(&acted_durable, __ATOMIC_SEQ_CST) == 1);
    job_runner_stop();
    CHECK(wait_for(&inserted, 1) == 1); /* the writer's item is told too */
    group_commit_stop();
    unsetenv("TREASURY_TEST_HOLD_SYNC");
    storage_close();
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char p[180];
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_job_runs_at_start_and_stop_ends_its_sleep),
        UNIT_TEST(test_a_full_batch_runs_again_without_waiting),
        UNIT_TEST(test_any_number_of_jobs_each_run_on_their_own),
        UNIT_TEST(test_stop_forgets_the_jobs),
        UNIT_TEST(test_a_job_acts_only_once_what_it_read_is_durable),
    };
    return unit_run("job_runner", tests, sizeof tests / sizeof tests[0]);
}
