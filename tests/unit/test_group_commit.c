/* Unit tests for runtime/group_commit.c and the savepoints it runs requests in
 * (runtime/storage.c): batching, a failed statement undoing only its own item, refusals,
 * misuse of the transaction from inside an item, the order items run in, and the second,
 * guarded run of a batch when an unguarded item must be undone. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/group_commit.h"
#include "runtime/storage.h"
#include "runtime/storage_sqlite.h"
#include "tests/unit/unit.h"

static char dir[64];
static char path[128];

static void open_fresh(void)
{
    char err[256] = "";
    snprintf(dir, sizeof dir, "/tmp/test_group_commit.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/treasury.db", dir);
    if (storage_open(path, err, sizeof err) != 0) {
        fprintf(stderr, "storage_open: %s\n", err);
        exit(1);
    }
    CHECK(storage_begin(true) == 0);
    struct db_stmt *st = storage_prepare("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    CHECK(st && db_step(st) == DB_DONE);
    db_reset(st);
    CHECK(storage_commit() == 0);
}

static void close_and_remove(void)
{
    char p[160];
    storage_close();
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    rmdir(dir);
}

static long long count_rows(const char *where)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM t WHERE %s", where);
    long long n = -1;
    if (storage_begin(false) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(sql);
    if (st && db_step(st) == DB_ROW)
        n = db_column_int64(st, 0);
    storage_rollback();
    return n;
}

enum kind { INSERT, DUPLICATE, REFUSE, REFUSE_CLEAN, MISUSE, LOSE_TX };

struct item {
    struct group_commit_item gc;
    int key;
    enum kind kind;
    bool kept;                       /* its last run ended with its writes kept */
    int order;                       /* when it last ran, counted across the test */
    int runs, guarded_runs;          /* times run, and of those in a savepoint */
    atomic_int outcome;              /* enum group_commit_outcome + 1; 0: not done yet */
};

static atomic_int ran_count;

static bool insert(int key, const char *v)
{
    struct db_stmt *st = storage_prepare("INSERT INTO t (k, v) VALUES (?, ?)");
    if (!st)
        return false;
    db_bind_int64(st, 1, key);
    db_bind_text(st, 2, v);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE;
}

static bool run(void *ctx, bool guarded)
{
    struct item *it = ctx;
    it->order = atomic_fetch_add(&ran_count, 1);
    it->runs++;
    it->guarded_runs += guarded;
    if ((guarded ? storage_savepoint() : storage_unguarded_begin()) != 0)
        return false;
    bool ok = true;
    switch (it->kind) {
    case INSERT:
        ok = insert(it->key, "a") && insert(it->key + 100000, "b");
        break;
    case DUPLICATE:
        /* First statement works, the second fails: the first must be undone too. */
        ok = insert(it->key, "a") && insert(it->key, "again");
        break;
    case REFUSE:
        insert(it->key, "a");
        ok = false; /* a business refusal: its writes are discarded */
        break;
    case REFUSE_CLEAN:
        ok = false; /* refused before writing anything: nothing to undo */
        break;
    case LOSE_TX:
        /* What SQLite does on an I/O or disk-full error: the whole transaction is gone. */
        insert(it->key, "a");
        sqlite3_exec(storage_sqlite_db(), "ROLLBACK", NULL, NULL, NULL);
        break;
    case MISUSE:
        insert(it->key, "a");
        storage_rollback(); /* must be refused: it would end everyone's transaction */
        CHECK(storage_in_tx());
        CHECK(storage_commit() == -1);
        break;
    }
    if (guarded) {
        it->kept = storage_savepoint_end(ok) == 0 && ok;
        return false;
    }
    int end = storage_unguarded_end(ok);
    it->kept = end == 0 && ok;
    return end > 0;
}

static void done_cb(void *ctx, enum group_commit_outcome outcome)
{
    struct item *it = ctx;
    atomic_store(&it->outcome, (int)outcome + 1);
}

static void init_item(struct item *it, int key, enum kind kind)
{
    memset(it, 0, sizeof *it);
    it->key = key;
    it->kind = kind;
    it->gc = (struct group_commit_item){ .run = run, .done = done_cb, .ctx = it };
}

static void wait_all(struct item *items, int n)
{
    for (int i = 0; i < n; i++) {
        while (atomic_load(&items[i].outcome) == 0)
            usleep(1000);
    }
}

/* While the test holds the write lock, everything submitted queues up; released, the writer
 * runs the first item alone and then the rest as one batch, in submission order. */
static void test_items_queued_during_a_commit_form_one_batch(void)
{
    enum { N = 50 };
    static struct item items[N];
    open_fresh();
    CHECK(group_commit_start() == 0);
    struct group_commit_stats before = group_commit_stats();
    atomic_store(&ran_count, 0);
    CHECK(storage_begin(true) == 0); /* the "previous commit" */
    for (int i = 0; i < N; i++) {
        init_item(&items[i], i + 1, INSERT);
        group_commit_submit(&items[i].gc);
    }
    usleep(50 * 1000);
    CHECK(atomic_load(&ran_count) == 0); /* nobody ran while the lock was held */
    CHECK(storage_commit() == 0);
    wait_all(items, N);
    struct group_commit_stats after = group_commit_stats();
    CHECK(after.items - before.items == N);
    CHECK(after.batches - before.batches <= 2);
    CHECK(after.largest >= N - 1);
    for (int i = 0; i < N; i++) {
        CHECK(items[i].order == i);
        CHECK(items[i].kept);
        CHECK(items[i].runs == 1 && items[i].guarded_runs == 0); /* no savepoints needed */
        CHECK(atomic_load(&items[i].outcome) == GROUP_COMMIT_COMMITTED + 1);
    }
    CHECK(after.reruns == before.reruns);
    CHECK(count_rows("1") == 2 * N);
    group_commit_stop();
    close_and_remove();
}

/* A failed statement, a refusal and an attempt to end the transaction, all in one batch with
 * good items around them: each undoes only its own writes. */
static void test_a_failing_item_undoes_only_its_own_writes(void)
{
    enum { N = 40 };
    static struct item items[N];
    open_fresh();
    CHECK(group_commit_start() == 0);
    CHECK(storage_begin(true) == 0);
    for (int i = 0; i < N; i++) {
        enum kind k = i % 10 == 3 ? DUPLICATE : i % 10 == 6 ? REFUSE : i == 9 ? MISUSE : INSERT;
        init_item(&items[i], i + 1, k);
        group_commit_submit(&items[i].gc);
    }
    CHECK(storage_commit() == 0);
    wait_all(items, N);
    int good = 0;
    for (int i = 0; i < N; i++) {
        char where[64];
        snprintf(where, sizeof where, "k = %d OR k = %d", i + 1, i + 1 + 100000);
        CHECK(atomic_load(&items[i].outcome) == GROUP_COMMIT_COMMITTED + 1);
        if (items[i].kind == INSERT) {
            good++;
            CHECK(items[i].kept);
            CHECK(count_rows(where) == 2);
        } else {
            CHECK(!items[i].kept);
            CHECK(count_rows(where) == 0);
        }
    }
    CHECK(count_rows("1") == 2 * good);
    CHECK(count_rows("v = 'again'") == 0);
    CHECK(group_commit_stats().reruns > 0); /* undone through the batch's second, guarded run */
    group_commit_stop();
    close_and_remove();
}

/* SQLite rolls the transaction back under an item: the items since BEGIN are lost (none of their
 * rows stay), the items after it commit in a new transaction, and the writer goes on. */
static void test_a_transaction_lost_under_an_item_fails_only_its_part_of_the_batch(void)
{
    enum { N = 10, LOSER = 4 };
    static struct item items[N], later;
    open_fresh();
    CHECK(group_commit_start() == 0);
    CHECK(storage_begin(true) == 0);
    for (int i = 0; i < N; i++) {
        init_item(&items[i], i + 1, i == LOSER ? LOSE_TX : INSERT);
        group_commit_submit(&items[i].gc);
    }
    CHECK(storage_commit() == 0);
    wait_all(items, N);
    /* Item 0 may have run alone before the others queued; the rest share one batch. */
    for (int i = 1; i < N; i++) {
        char where[64];
        snprintf(where, sizeof where, "k = %d OR k = %d", i + 1, i + 1 + 100000);
        int outcome = atomic_load(&items[i].outcome) - 1;
        if (i <= LOSER) {
            CHECK(outcome == GROUP_COMMIT_LOST);
            CHECK(count_rows(where) == 0);
        } else {
            CHECK(outcome == GROUP_COMMIT_COMMITTED);
            CHECK(count_rows(where) == 2);
        }
    }
    /* The write lock was given back: later writes still go through. */
    init_item(&later, 500, INSERT);
    group_commit_submit(&later.gc);
    wait_all(&later, 1);
    CHECK(atomic_load(&later.outcome) == GROUP_COMMIT_COMMITTED + 1);
    group_commit_stop();
    close_and_remove();
}

struct submitter {
    struct item *items;
    int from, n;
};

static void *submit_many(void *arg)
{
    struct submitter *s = arg;
    for (int i = 0; i < s->n; i++)
        group_commit_submit(&s->items[s->from + i].gc);
    return NULL;
}

/* Four threads submitting at once: every item runs exactly once and everything commits. */
static void test_concurrent_submitters_lose_nothing(void)
{
    enum { THREADS = 4, PER = 500, N = THREADS * PER };
    static struct item items[N];
    open_fresh();
    CHECK(group_commit_start() == 0);
    for (int i = 0; i < N; i++)
        init_item(&items[i], i + 1, INSERT);
    pthread_t t[THREADS];
    struct submitter s[THREADS];
    for (int i = 0; i < THREADS; i++) {
        s[i] = (struct submitter){ items, i * PER, PER };
        pthread_create(&t[i], NULL, submit_many, &s[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    wait_all(items, N);
    for (int i = 0; i < N; i++)
        CHECK(atomic_load(&items[i].outcome) == GROUP_COMMIT_COMMITTED + 1);
    CHECK(count_rows("1") == 2 * N);
    group_commit_stop();
    close_and_remove();
}

/* Without a writer thread (before start, after stop), an item still runs, on the caller. */
static void test_submit_without_the_writer_runs_inline(void)
{
    static struct item it;
    open_fresh();
    init_item(&it, 7, INSERT);
    group_commit_submit(&it.gc);
    CHECK(atomic_load(&it.outcome) == GROUP_COMMIT_COMMITTED + 1);
    CHECK(count_rows("k = 7") == 1);
    close_and_remove();
}

/* Unguarded first: a batch runs again in savepoints only when an item left writes it wants
 * undone. The items before it run twice (their first run's writes went with the rolled back
 * transaction), the rest once, guarded; each keeps exactly its own rows. A refusal that wrote
 * nothing needs no second run. */
static void test_a_batch_runs_again_in_savepoints_only_when_an_item_must_be_undone(void)
{
    enum { N = 8, UNDO = 4 };
    static struct item first, clean[N], items[N];
    open_fresh();
    CHECK(group_commit_start() == 0);

    /* A clean refusal among good items: one run each, no rerun. */
    CHECK(storage_begin(true) == 0);
    init_item(&first, 1000, INSERT);
    group_commit_submit(&first.gc); /* the writer takes it alone and waits for the lock */
    usleep(20 * 1000);
    for (int i = 0; i < N; i++) {
        init_item(&clean[i], 2000 + i, i == UNDO ? REFUSE_CLEAN : INSERT);
        group_commit_submit(&clean[i].gc);
    }
    struct group_commit_stats before = group_commit_stats();
    CHECK(storage_commit() == 0);
    wait_all(clean, N);
    CHECK(group_commit_stats().reruns == before.reruns);
    for (int i = 0; i < N; i++) {
        CHECK(clean[i].runs == 1 && clean[i].guarded_runs == 0);
        CHECK(clean[i].kept == (i != UNDO));
    }

    /* A refusal after a write: the batch runs again, guarded. */
    CHECK(storage_begin(true) == 0);
    init_item(&first, 3000, INSERT);
    group_commit_submit(&first.gc);
    usleep(20 * 1000);
    for (int i = 0; i < N; i++) {
        init_item(&items[i], 4000 + i, i == UNDO ? REFUSE : INSERT);
        group_commit_submit(&items[i].gc);
    }
    before = group_commit_stats();
    CHECK(storage_commit() == 0);
    wait_all(items, N);
    CHECK(group_commit_stats().reruns == before.reruns + 1);
    for (int i = 0; i < N; i++) {
        char where[64];
        snprintf(where, sizeof where, "k = %d OR k = %d", 4000 + i, 4000 + i + 100000);
        CHECK(items[i].runs == (i <= UNDO ? 2 : 1));
        CHECK(items[i].guarded_runs == 1);
        CHECK(items[i].kept == (i != UNDO));
        CHECK(count_rows(where) == (i == UNDO ? 0 : 2));
        CHECK(atomic_load(&items[i].outcome) == GROUP_COMMIT_COMMITTED + 1);
    }
    group_commit_stop();
    close_and_remove();
}

/* A savepoint needs an open transaction and does not nest. */
static void test_savepoint_calls_outside_a_transaction_fail(void)
{
    open_fresh();
    CHECK(storage_savepoint() == -1);
    CHECK(storage_savepoint_end(true) == -1);
    CHECK(storage_begin(true) == 0);
    CHECK(storage_savepoint() == 0);
    CHECK(storage_savepoint() == -1); /* no nesting */
    CHECK(storage_savepoint_end(true) == 0);
    CHECK(storage_commit() == 0);
    close_and_remove();
}

static void test_unguarded_parts_need_a_transaction_and_do_not_nest(void)
{
    open_fresh();
    CHECK(storage_unguarded_begin() == -1);
    CHECK(storage_unguarded_end(true) == -1);
    CHECK(storage_begin(true) == 0);
    CHECK(storage_unguarded_begin() == 0);
    CHECK(storage_unguarded_begin() == -1); /* no nesting */
    CHECK(storage_savepoint() == -1);
    CHECK(insert(1, "a"));
    CHECK(storage_unguarded_end(true) == 0); /* kept: nothing to undo */
    CHECK(storage_unguarded_begin() == 0);
    CHECK(storage_unguarded_end(false) == 0); /* refused, changed nothing */
    CHECK(storage_unguarded_begin() == 0);
    CHECK(!insert(1, "duplicate")); /* a failed statement changes nothing */
    CHECK(storage_unguarded_end(false) == 0);
    CHECK(storage_unguarded_begin() == 0);
    CHECK(insert(2, "b"));
    CHECK(storage_unguarded_end(false) == 1); /* refused after a write: undo needed */
    storage_rollback();
    close_and_remove();
}


static atomic_int waiter_done;

static void waiter_cb(void *ctx, enum group_commit_outcome outcome)
{
    (void)ctx;
    CHECK(outcome == GROUP_COMMIT_COMMITTED);
    atomic_fetch_add(&waiter_done, 1);
}

static void wait_visible(const char *where)
{
    for (int i = 0; i < 5000 && count_rows(where) != 1; i++)
        usleep(1000);
    CHECK(count_rows(where) == 1);
}

static void hold_syncs(const char *hold, bool on)
{
    if (on) {
        FILE *f = fopen(hold, "w");
        CHECK(f != NULL);
        if (f)
            fclose(f);
    } else {
        CHECK(unlink(hold) == 0);
    }
}

/* Starts the group commit with the syncer's test hook on the file hold (not there yet) and
 * runs the writer's first commit, whose sync is real. */
static void start_with_hold_hook(char hold[160])
{
    static struct item warm;
    open_fresh();
    snprintf(hold, 160, "%s/hold-sync", dir);
    setenv("TREASURY_TEST_HOLD_SYNC", hold, 1);
    CHECK(group_commit_start() == 0);
    init_item(&warm, 1, INSERT);
    group_commit_submit(&warm.gc);
    wait_all(&warm, 1);
}

static void stop_with_hold_hook(void)
{
    group_commit_stop();
    unsetenv("TREASURY_TEST_HOLD_SYNC");
    close_and_remove();
}

/* The writer does not wait for the fsync: with the syncer held (the test hook), two batches
 * commit one after the other and are visible to this connection, but neither item is told and
 * a read of them is not released. Let go, one fsync covers both, the items are told in commit
 * order and the read is released. */
static void test_commits_are_told_only_once_the_fsync_covering_them_returned(void)
{
    static struct item a, b;
    static struct group_commit_item read;
    char hold[160];
    open_fresh();
    snprintf(hold, sizeof hold, "%s/hold-sync", dir);
    hold_syncs(hold, true);
    setenv("TREASURY_TEST_HOLD_SYNC", hold, 1);
    CHECK(group_commit_start() == 0);
    struct group_commit_stats before = group_commit_stats();
    uint64_t seen = group_commit_visible();
    CHECK(group_commit_durable(seen));
    CHECK(!group_commit_after_durable(seen, &read)); /* durable already: nothing to wait for */

    init_item(&a, 1, INSERT);
    group_commit_submit(&a.gc);
    wait_visible("k = 1");
    init_item(&b, 2, INSERT);
    group_commit_submit(&b.gc);
    wait_visible("k = 2");
    seen = group_commit_visible();
    CHECK(seen >= 2);
    CHECK(!group_commit_durable(seen));
    atomic_store(&waiter_done, 0);
    read = (struct group_commit_item){ .done = waiter_cb };
    CHECK(group_commit_after_durable(seen, &read));
    usleep(100 * 1000);
    CHECK(atomic_load(&a.outcome) == 0 && atomic_load(&b.outcome) == 0);
    CHECK(atomic_load(&waiter_done) == 0);

    CHECK(unlink(hold) == 0);
    wait_all(&a, 1);
    wait_all(&b, 1);
    group_commit_wait_durable(seen);
    CHECK(group_commit_durable(seen));
    for (int i = 0; i < 1000 && atomic_load(&waiter_done) == 0; i++)
        usleep(1000);
    CHECK(atomic_load(&waiter_done) == 1);
    CHECK(atomic_load(&a.outcome) == GROUP_COMMIT_COMMITTED + 1);
    CHECK(atomic_load(&b.outcome) == GROUP_COMMIT_COMMITTED + 1);
    struct group_commit_stats after = group_commit_stats();
    CHECK(after.batches - before.batches == 2);
    CHECK(after.syncs - before.syncs == 1);
    stop_with_hold_hook();
}

/* While the syncer's fsync runs (held by the test hook), what arrives joins one open
 * transaction instead of several small commits: nothing of it is visible yet, and it commits
 * as one batch once the fsync returned. */
static void test_items_arriving_during_an_fsync_join_one_open_batch(void)
{
    enum { N = 5 };
    static struct item a, more[N];
    char hold[160];
    start_with_hold_hook(hold);

    hold_syncs(hold, true);
    struct group_commit_stats before = group_commit_stats();
    init_item(&a, 2, INSERT); /* committed, its fsync held */
    group_commit_submit(&a.gc);
    wait_visible("k = 2");
    usleep(20 * 1000); /* the syncer has taken it */
    for (int i = 0; i < N; i++) {
        init_item(&more[i], 10 + i, INSERT);
        group_commit_submit(&more[i].gc);
        usleep(5 * 1000);
    }
    usleep(100 * 1000);
    CHECK(count_rows("k >= 10 AND k < 100") == 0); /* run, not committed */
    CHECK(atomic_load(&a.outcome) == 0);

    hold_syncs(hold, false);
    wait_all(&a, 1);
    wait_all(more, N);
    CHECK(count_rows("k >= 10 AND k < 100") == N);
    struct group_commit_stats after = group_commit_stats();
    CHECK(after.batches - before.batches == 2); /* a, then the N together */
    CHECK(after.largest >= N);
    for (int i = 0; i < N; i++)
        CHECK(atomic_load(&more[i].outcome) == GROUP_COMMIT_COMMITTED + 1);
    stop_with_hold_hook();
}

static bool told_within(struct item *it, int ms)
{
    for (int i = 0; i < ms && atomic_load(&it->outcome) == 0; i++)
        usleep(1000);
    return atomic_load(&it->outcome) != 0;
}

/* While reads arrive, the writer syncs each commit inside its COMMIT: it is durable once
 * visible, its item is told at once, and so is a read still waiting for an earlier commit
 * whose fsync the syncer holds (one fsync of the WAL covers both) - all while that fsync is
 * held. Once no read came for a while (READS_WINDOW_MS, 100 ms), the fsync is deferred again.
 * Last in this file: the note of a read is process-wide. */
static void test_commits_are_synced_in_themselves_while_reads_arrive(void)
{
    static struct item a, b, c;
    static struct group_commit_item read;
    char hold[160];
    start_with_hold_hook(hold);

    hold_syncs(hold, true);
    struct group_commit_stats before = group_commit_stats();
    init_item(&a, 2, INSERT); /* no reads yet: deferred, its fsync held */
    group_commit_submit(&a.gc);
    wait_visible("k = 2");
    uint64_t seen = group_commit_visible();
    CHECK(!group_commit_durable(seen));
    atomic_store(&waiter_done, 0);
    read = (struct group_commit_item){ .done = waiter_cb };
    CHECK(group_commit_after_durable(seen, &read));

    group_commit_note_read();
    init_item(&b, 3, INSERT);
    group_commit_submit(&b.gc);
    CHECK(told_within(&b, 5000)); /* the held fsync does not hold it */
    CHECK(atomic_load(&b.outcome) == GROUP_COMMIT_COMMITTED + 1);
    CHECK(group_commit_durable(group_commit_visible()) && group_commit_visible() > seen);
    CHECK(atomic_load(&waiter_done) == 1); /* a is durable with b */
    CHECK(atomic_load(&a.outcome) == 0);   /* told by the syncer, still held */
    CHECK(group_commit_stats().synced - before.synced == 1);
    hold_syncs(hold, false);
    CHECK(told_within(&a, 5000));

    usleep(150 * 1000); /* no read for longer than READS_WINDOW_MS */
    hold_syncs(hold, true);
    init_item(&c, 4, INSERT);
    group_commit_submit(&c.gc);
    wait_visible("k = 4");
    CHECK(!told_within(&c, 100)); /* deferred again: held with the fsync */
    hold_syncs(hold, false);
    CHECK(told_within(&c, 5000));
    CHECK(group_commit_stats().synced - before.synced == 1);
    stop_with_hold_hook();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_items_queued_during_a_commit_form_one_batch),
        UNIT_TEST(test_a_failing_item_undoes_only_its_own_writes),
        UNIT_TEST(test_a_transaction_lost_under_an_item_fails_only_its_part_of_the_batch),
        UNIT_TEST(test_concurrent_submitters_lose_nothing),
        UNIT_TEST(test_submit_without_the_writer_runs_inline),
        UNIT_TEST(test_savepoint_calls_outside_a_transaction_fail),
        UNIT_TEST(test_a_batch_runs_again_in_savepoints_only_when_an_item_must_be_undone),
        UNIT_TEST(test_unguarded_parts_need_a_transaction_and_do_not_nest),
        UNIT_TEST(test_commits_are_told_only_once_the_fsync_covering_them_returned),
        UNIT_TEST(test_items_arriving_during_an_fsync_join_one_open_batch),
        UNIT_TEST(test_commits_are_synced_in_themselves_while_reads_arrive),
    };
    return unit_run("group_commit", tests, sizeof tests / sizeof tests[0]);
}
