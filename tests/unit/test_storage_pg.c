/* Unit tests for the PostgreSQL engine (runtime/storage_pg.c) through the storage interface.
 * They need a database: TREASURY_TEST_PG_URL, a postgresql:// URL of an empty C-collation
 * database (tests/http/test_storage_pg.py makes one in the test cluster and runs this binary
 * when the suite runs on PostgreSQL). Without it the binary says so and passes nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/storage.h"
#include "tests/unit/unit.h"

static const char *url;

static void open_db(void)
{
    char err[512];
    int rc = storage_open(url, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "  storage_open: %s\n", err);
    CHECK(rc == 0);
}

static int exec(const char *sql)
{
    return storage_exec_texts(sql, NULL, 0);
}

/* The first column of the first row of sql as an integer (-1: no row or a failure). */
static int64_t query_int(const char *sql)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    int64_t v = db_step(st) == DB_ROW ? db_column_int64(st, 0) : -1;
    db_reset(st);
    return v;
}

static void test_placeholders_are_rewritten_outside_quotes_and_comments(void)
{
    open_db();
    struct db_stmt *st = storage_prepare(
        "SELECT '?' || CAST(? AS TEXT), \"?q\".x, CAST(?3 AS TEXT), CAST(? AS TEXT) -- ?, ?5\n"
        "FROM (SELECT 'it''s ?' AS x) AS \"?q\"");
    CHECK(st != NULL);
    if (st) {
        /* ?, then ?3, then ? (one past the largest so far: 4); ?2 is never used */
        CHECK(db_bind_text(st, 1, "a") == 0);
        CHECK(db_bind_text(st, 3, "c") == 0);
        CHECK(db_bind_text(st, 4, "d") == 0);
        CHECK(db_bind_text(st, 5, "e") != 0); /* the comment's ?5 is no parameter */
        CHECK(db_step(st) == DB_ROW);
        CHECK_STR(db_column_text(st, 0), "?a");
        CHECK_STR(db_column_text(st, 1), "it's ?");
        CHECK_STR(db_column_text(st, 2), "c");
        CHECK_STR(db_column_text(st, 3), "d");
        CHECK(db_step(st) == DB_DONE);
        db_reset(st);
    }
    storage_close();
}

static void test_types_read_back_as_sqlite_gives_them(void)
{
    open_db();
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_types (k TEXT PRIMARY KEY, n BIGINT, b BYTEA)") == 0);
    struct db_stmt *st = storage_prepare("INSERT INTO t_types (k, n, b) VALUES (?, ?, ?)");
    const unsigned char blob[] = {0, 1, 0xff, 'x', 0};
    CHECK(st && db_bind_text(st, 1, "k1") == 0 && db_bind_int64(st, 2, INT64_MAX) == 0 &&
          db_bind_blob(st, 3, blob, sizeof blob) == 0);
    CHECK(st && db_step(st) == DB_DONE);
    CHECK(storage_changes() == 1);
    if (st)
        db_reset(st);
    st = storage_prepare("INSERT INTO t_types (k, n, b) VALUES (?, ?, ?)");
    CHECK(st && db_bind_text(st, 1, "k2") == 0 && db_bind_null(st, 2) == 0 &&
          db_bind_null(st, 3) == 0 && db_step(st) == DB_DONE);
    if (st)
        db_reset(st);
    st = storage_prepare("SELECT k, n, b, n IS NULL, k = 'k1' FROM t_types ORDER BY k");
    CHECK(st && db_step(st) == DB_ROW);
    if (st) {
        CHECK(db_column_int64(st, 1) == INT64_MAX);
        size_t len = 0;
        const unsigned char *b = db_column_blob(st, 2, &len);
        CHECK(len == sizeof blob && memcmp(b, blob, len) == 0);
        CHECK(db_column_int(st, 3) == 0); /* a boolean reads as 0 or 1 */
        CHECK_STR(db_column_text(st, 4), "1");
        CHECK(db_step(st) == DB_ROW);
        CHECK(db_column_is_null(st, 1) && db_column_text(st, 1) == NULL);
        CHECK(db_column_int64(st, 1) == 0);
        size_t len2 = 7;
        db_column_blob(st, 2, &len2);
        CHECK(len2 == 0);
        CHECK(db_column_int(st, 3) == 1);
        CHECK(db_step(st) == DB_DONE);
        db_reset(st);
    }
    storage_close();
}

static void test_errors_map_to_their_kinds_and_abort_the_transaction(void)
{
    open_db();
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_parent (id TEXT PRIMARY KEY)") == 0);
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_child (id TEXT PRIMARY KEY, "
               "parent TEXT REFERENCES t_parent(id))") == 0);
    CHECK(exec("INSERT INTO t_parent (id) VALUES ('p') ON CONFLICT DO NOTHING") == 0);
    CHECK(storage_begin(true) == 0);
    struct db_stmt *st = storage_prepare("INSERT INTO t_parent (id) VALUES (?)");
    CHECK(st && db_bind_text(st, 1, "p") == 0 && db_step(st) == DB_ERR_UNIQUE);
    if (st)
        db_reset(st);
    /* PostgreSQL refuses every later statement of the transaction, and so does commit */
    CHECK(query_int("SELECT 1") == -1);
    CHECK(storage_commit() != 0);
    CHECK(!storage_should_retry());
    CHECK(!storage_in_tx());
    CHECK(storage_begin(true) == 0);
    st = storage_prepare("INSERT INTO t_child (id, parent) VALUES ('c', ?)");
    CHECK(st && db_bind_text(st, 1, "nobody") == 0 && db_step(st) == DB_ERR_FOREIGN_KEY);
    if (st)
        db_reset(st);
    storage_rollback();
    storage_close();
}

static void test_a_savepoint_undoes_a_failed_statement_and_keeps_the_transaction(void)
{
    open_db();
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_sp (id TEXT PRIMARY KEY)") == 0);
    CHECK(exec("DELETE FROM t_sp") == 0);
    CHECK(storage_begin(true) == 0);
    CHECK(exec("INSERT INTO t_sp (id) VALUES ('kept')") == 0);
    CHECK(storage_savepoint() == 0);
    CHECK(exec("INSERT INTO t_sp (id) VALUES ('undone')") == 0);
    CHECK(exec("INSERT INTO t_sp (id) VALUES ('kept')") != 0); /* aborts ... */
    CHECK(storage_savepoint_end(true) == 0);                    /* ... the part only */
    CHECK(query_int("SELECT count(*) FROM t_sp") == 1);
    CHECK(storage_commit() == 0);
    CHECK(query_int("SELECT count(*) FROM t_sp WHERE id = 'kept'") == 1);
    storage_close();
}

/* Two threads, each its own connection: the same row updated by two SERIALIZABLE
 * transactions; the second to commit fails and says it may be run again. */
static pthread_barrier_t both_read;

static void *bump(void *arg)
{
    int *outcome = arg;
    *outcome = -9;
    if (storage_begin(true) != 0)
        return NULL;
    int64_t n = query_int("SELECT n FROM t_counter WHERE id = 1");
    pthread_barrier_wait(&both_read);
    struct db_stmt *st = storage_prepare("UPDATE t_counter SET n = ? WHERE id = 1");
    int rc = st ? (db_bind_int64(st, 1, n + 1), db_step(st)) : DB_ERR;
    if (st)
        db_reset(st);
    if (rc == DB_DONE && storage_commit() == 0) {
        *outcome = 0;
    } else {
        storage_rollback();
        *outcome = storage_should_retry() ? 1 : -1;
    }
    return NULL;
}

static void test_a_serialization_failure_asks_for_a_rerun(void)
{
    open_db();
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_counter (id BIGINT PRIMARY KEY, n BIGINT)") == 0);
    CHECK(exec("INSERT INTO t_counter (id, n) VALUES (1, 0) ON CONFLICT (id) DO UPDATE "
               "SET n = 0") == 0);
    pthread_barrier_init(&both_read, NULL, 2);
    pthread_t a, b;
    int ra = 0, rb = 0;
    pthread_create(&a, NULL, bump, &ra);
    pthread_create(&b, NULL, bump, &rb);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&both_read);
    CHECK((ra == 0 && rb == 1) || (ra == 1 && rb == 0));
    CHECK(query_int("SELECT n FROM t_counter WHERE id = 1") == 1);
    storage_close();
}

/* storage_claim: a row held by one transaction is skipped by another. */
static pthread_barrier_t claimed;
static int other_claim = -9;

static void *claim_too(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&claimed);
    if (storage_begin(true) == 0) {
        other_claim = storage_claim("t_items", "id", "i1");
        storage_rollback();
    }
    pthread_barrier_wait(&claimed);
    return NULL;
}

static void test_a_claimed_item_is_skipped_by_another_worker(void)
{
    open_db();
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_items (id TEXT PRIMARY KEY)") == 0);
    CHECK(exec("INSERT INTO t_items (id) VALUES ('i1') ON CONFLICT DO NOTHING") == 0);
    pthread_barrier_init(&claimed, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, claim_too, NULL);
    CHECK(storage_begin(true) == 0);
    CHECK(storage_claim("t_items", "id", "i1") == 1);
    pthread_barrier_wait(&claimed); /* the other tries while this one holds it */
    pthread_barrier_wait(&claimed);
    CHECK(other_claim == 0);
    CHECK(storage_claim("t_items", "id", "missing") == 0);
    storage_rollback();
    pthread_join(t, NULL);
    pthread_barrier_destroy(&claimed);
    storage_close();
}

/* storage_begin_serial: a second write of the same key waits for the first to end, and then
 * sees what it committed (its snapshot comes after the lock). */
static int64_t serial_seen = -9;

static void *second_writer(void *arg)
{
    (void)arg;
    if (storage_begin_serial(true, "wsp_same") == 0) {
        serial_seen = query_int("SELECT n FROM t_counter WHERE id = 2");
        storage_commit();
    }
    return NULL;
}

static void test_writes_of_one_key_queue_and_see_each_other(void)
{
    open_db();
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_counter (id BIGINT PRIMARY KEY, n BIGINT)") == 0);
    CHECK(exec("INSERT INTO t_counter (id, n) VALUES (2, 0) ON CONFLICT (id) DO UPDATE "
               "SET n = 0") == 0);
    CHECK(storage_begin_serial(true, "wsp_same") == 0);
    CHECK(exec("UPDATE t_counter SET n = 7 WHERE id = 2") == 0);
    pthread_t t;
    pthread_create(&t, NULL, second_writer, NULL);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK(serial_seen == -9); /* still waiting */
    CHECK(storage_commit() == 0);
    pthread_join(t, NULL);
    CHECK(serial_seen == 7);
    /* the lock went with the transaction: the same key is free again on this connection */
    CHECK(storage_begin_serial(true, "wsp_same") == 0);
    storage_rollback();
    storage_close();
}

static void test_a_statement_outside_commits_whatever_the_transaction_does(void)
{
    open_db();
    CHECK(exec("CREATE TABLE IF NOT EXISTS t_out (id TEXT PRIMARY KEY)") == 0);
    CHECK(exec("DELETE FROM t_out") == 0);
    CHECK(storage_begin(true) == 0);
    CHECK(exec("INSERT INTO t_out (id) VALUES ('inside')") == 0);
    struct db_stmt *st = storage_prepare_outside("INSERT INTO t_out (id) VALUES (?)");
    CHECK(st && db_bind_text(st, 1, "outside") == 0 && db_step(st) == DB_DONE);
    if (st)
        db_reset(st);
    storage_rollback();
    CHECK(query_int("SELECT count(*) FROM t_out WHERE id = 'outside'") == 1);
    CHECK(query_int("SELECT count(*) FROM t_out WHERE id = 'inside'") == 0);
    storage_close();
}

/* synchronous_commit: on for every connection whatever the database's default (a 2xx means
 * durable), off only on the side connection of storage_prepare_outside (quota state). */
static char setting_seen[16];

static void *read_setting(void *arg)
{
    (void)arg;
    struct db_stmt *st = storage_prepare("SELECT current_setting('synchronous_commit')");
    if (st && db_step(st) == DB_ROW)
        snprintf(setting_seen, sizeof setting_seen, "%s", db_column_text(st, 0));
    if (st)
        db_reset(st);
    return NULL;
}

static void test_connections_commit_synchronously_whatever_the_database_default(void)
{
    open_db();
    CHECK(exec("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', "
               "current_database()); END $$") == 0);
    storage_close();
    open_db(); /* new connections, which start with the database's default */
    struct db_stmt *st = storage_prepare("SELECT current_setting('synchronous_commit')");
    CHECK(st && db_step(st) == DB_ROW && strcmp(db_column_text(st, 0), "on") == 0);
    if (st)
        db_reset(st);
    pthread_t t; /* another thread's connection too */
    pthread_create(&t, NULL, read_setting, NULL);
    pthread_join(t, NULL);
    CHECK_STR(setting_seen, "on");
    st = storage_prepare_outside("SELECT current_setting('synchronous_commit')");
    CHECK(st && db_step(st) == DB_ROW && strcmp(db_column_text(st, 0), "off") == 0);
    if (st)
        db_reset(st);
    /* the connection's default really was off: it is what RESET would go back to */
    st = storage_prepare("SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'");
    CHECK(st && db_step(st) == DB_ROW && strcmp(db_column_text(st, 0), "off") == 0);
    if (st)
        db_reset(st);
    CHECK(exec("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET synchronous_commit', "
               "current_database()); END $$") == 0);
    storage_close();
}

int main(void)
{
    url = getenv("TREASURY_TEST_PG_URL");
    if (!url || !*url) {
        printf("storage_pg: no TREASURY_TEST_PG_URL, nothing run\nstorage_pg: 0 passed, 0 failed\n");
        return 0;
    }
    static const struct unit_test tests[] = {
        UNIT_TEST(test_placeholders_are_rewritten_outside_quotes_and_comments),
        UNIT_TEST(test_types_read_back_as_sqlite_gives_them),
        UNIT_TEST(test_errors_map_to_their_kinds_and_abort_the_transaction),
        UNIT_TEST(test_a_savepoint_undoes_a_failed_statement_and_keeps_the_transaction),
        UNIT_TEST(test_a_serialization_failure_asks_for_a_rerun),
        UNIT_TEST(test_a_claimed_item_is_skipped_by_another_worker),
        UNIT_TEST(test_writes_of_one_key_queue_and_see_each_other),
        UNIT_TEST(test_a_statement_outside_commits_whatever_the_transaction_does),
        UNIT_TEST(test_connections_commit_synchronously_whatever_the_database_default),
    };
    return unit_run("storage_pg", tests, sizeof tests / sizeof tests[0]);
}
