/* Unit tests for runtime/storage_vfs.c: a commit's WAL frames reach the file in one write, and
 * every other connection reads exactly what was committed - after FULL commits, after commits
 * without a sync (synchronous=NORMAL), after rolled-back transactions that spilled frames, and
 * for commits larger than what is gathered at once. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "runtime/storage_vfs.h"
#include "tests/unit/unit.h"

static char dir[64];
static char path[128];

static void fresh_path(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_storage_vfs.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/t.db", dir);
}

static void remove_db(void)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char p[160];
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    rmdir(dir);
}

static bool exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "  %s: %s\n", sql, err ? err : "?");
        sqlite3_free(err);
        return false;
    }
    return true;
}

static sqlite3 *open_db(const char *vfs, const char *synchronous)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs) != SQLITE_OK)
        return NULL;
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", synchronous);
    sqlite3_busy_timeout(db, 5000);
    if (!exec(db, "PRAGMA journal_mode = WAL") || !exec(db, sql) ||
        !exec(db, "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)")) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static sqlite3_int64 query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    sqlite3_int64 v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static bool intact(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW &&
              strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    sqlite3_finalize(st);
    return ok;
}

/* Inserts n rows of size bytes each, in the caller's transaction or its own. */
static bool insert_rows(sqlite3 *db, int n, int size)
{
    char sql[192];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
             "INSERT INTO t (v) SELECT randomblob(%d) FROM c",
             n, size);
    return exec(db, sql);
}

/* This process's write calls so far (/proc/self/io syscw). */
static long write_calls(void)
{
    return unit_proc_number("/proc/self/io", "syscw:");
}

/* Write calls one commit of 24 rows (a page each) takes through vfs. */
static long writes_of_a_commit(const char *vfs)
{
    fresh_path();
    sqlite3 *db = open_db(vfs, "FULL");
    CHECK(db != NULL);
    long n = -1;
    if (db) {
        CHECK(insert_rows(db, 1, 10)); /* the WAL exists and has its header */
        long before = write_calls();
        CHECK(exec(db, "BEGIN") && insert_rows(db, 24, 3000) && exec(db, "COMMIT"));
        n = write_calls() - before;
        CHECK(query_int(db, "SELECT count(*) FROM t") == 25);
        sqlite3_close(db);
    }
    remove_db();
    return n;
}

static void test_a_commit_reaches_the_wal_in_one_write(void)
{
    CHECK(storage_vfs_register(NULL) == SQLITE_OK);
    long plain = writes_of_a_commit(NULL);
    long gathered = writes_of_a_commit(STORAGE_VFS);
    /* The default VFS writes each frame's header and page apart; gathered, one write. */
    CHECK(plain >= 48);
    CHECK(gathered >= 1 && gathered <= 2);
    if (plain < 48 || gathered > 2)
        fprintf(stderr, "  write calls: %ld plain, %ld gathered\n", plain, gathered);
}

static void test_other_connections_read_every_commit(void)
{
    fresh_path();
    sqlite3 *a = open_db(STORAGE_VFS, "FULL");
    sqlite3 *b = open_db(NULL, "FULL");
    CHECK(a && b);
    if (a && b) {
        sqlite3_int64 rows = 0;
        for (int i = 1; i <= 40; i++) {
            CHECK(insert_rows(a, i % 7 + 1, 700 * (i % 5) + 10));
            rows += i % 7 + 1;
            CHECK(query_int(b, "SELECT count(*) FROM t") == rows);
        }
        /* Commits that SQLite does not sync: the frames must still be in the file when the
         * commit becomes visible, each time. */
        CHECK(exec(a, "PRAGMA synchronous = NORMAL"));
        for (int i = 1; i <= 20; i++) {
            CHECK(insert_rows(a, i % 5 + 1, 1500));
            rows += i % 5 + 1;
            CHECK(query_int(b, "SELECT count(*) FROM t") == rows);
            CHECK(query_int(b, "SELECT count(*) FROM t WHERE length(v) = 1500") ==
                  query_int(a, "SELECT count(*) FROM t WHERE length(v) = 1500"));
        }
        CHECK(intact(b));
        /* Such a connection's frames are written at the publication barrier once, and its WAL
         * writes go straight to the file from then on (the default VFS's two per frame). */
        long before = write_calls();
        CHECK(exec(a, "BEGIN") && insert_rows(a, 24, 3000) && exec(a, "COMMIT"));
        CHECK(write_calls() - before >= 48);
        rows += 24;
        CHECK(exec(b, "PRAGMA wal_checkpoint(TRUNCATE)"));
        CHECK(insert_rows(a, 3, 100)); /* the WAL starts over from its header */
        CHECK(query_int(b, "SELECT count(*) FROM t") == rows + 3);
        CHECK(intact(b));
    }
    sqlite3_close(a);
    sqlite3_close(b);
    remove_db();
}

static void test_spilled_rolled_back_and_oversized_transactions(void)
{
    fresh_path();
    sqlite3 *a = open_db(STORAGE_VFS, "FULL");
    sqlite3 *b = open_db(NULL, "FULL");
    CHECK(a && b);
    if (a && b) {
        CHECK(exec(a, "PRAGMA cache_size = 8")); /* pages spill to the WAL mid-transaction */
        CHECK(insert_rows(a, 5, 100));
        /* Rolled back after spilling about 800 KiB of frames. */
        CHECK(exec(a, "BEGIN") && insert_rows(a, 200, 3500) && exec(a, "ROLLBACK"));
        CHECK(query_int(b, "SELECT count(*) FROM t") == 5);
        CHECK(query_int(a, "SELECT count(*) FROM t") == 5);
        /* Committed, far more than one write's worth, with a savepoint undone inside. */
        CHECK(exec(a, "BEGIN") && insert_rows(a, 100, 3500) && exec(a, "SAVEPOINT s") &&
              insert_rows(a, 50, 3500) && exec(a, "ROLLBACK TO s") && exec(a, "RELEASE s") &&
              insert_rows(a, 10, 20) && exec(a, "COMMIT"));
        CHECK(query_int(b, "SELECT count(*) FROM t") == 115);
        CHECK(query_int(b, "SELECT count(*) FROM t WHERE length(v) = 3500") == 100);
        CHECK(intact(b));
        CHECK(intact(a));
    }
    sqlite3_close(a);
    sqlite3_close(b);
    /* What the WAL holds is read back by a fresh connection after both closed. */
    sqlite3 *c = open_db(STORAGE_VFS, "FULL");
    CHECK(c && query_int(c, "SELECT count(*) FROM t") == 115 && intact(c));
    sqlite3_close(c);
    remove_db();
}

/* On a, a transaction of 20 page-sized rows committed while the file size limit leaves room for
 * one more WAL frame only, so its write-out fails (EFBIG): the COMMIT's result, after rolling
 * back whatever SQLite left open. */
static int commit_past_the_size_limit(sqlite3 *a)
{
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", path);
    struct stat sb;
    CHECK(stat(wal, &sb) == 0);
    struct rlimit old, cap;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    cap = old;
    cap.rlim_cur = (rlim_t)sb.st_size + 4096; /* room for one frame, not for 20 */
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &cap) == 0);
    bool began = exec(a, "BEGIN") && insert_rows(a, 20, 3000);
    int rc = sqlite3_exec(a, "COMMIT", NULL, NULL, NULL);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, was);
    CHECK(began);
    if (!sqlite3_get_autocommit(a))
        CHECK(exec(a, "ROLLBACK"));
    return rc;
}

/* A gathered write-out that fails (here the file size limit, EFBIG) fails the commit: nothing
 * of it is visible, and the connection commits again once writes succeed. */
static void test_a_failed_write_out_fails_the_commit(void)
{
    fresh_path();
    sqlite3 *a = open_db(STORAGE_VFS, "FULL");
    sqlite3 *b = open_db(NULL, "FULL");
    CHECK(a && b);
    if (a && b) {
        CHECK(insert_rows(a, 3, 100));
        CHECK(commit_past_the_size_limit(a) != SQLITE_OK);
        CHECK(query_int(b, "SELECT count(*) FROM t") == 3);
        CHECK(query_int(a, "SELECT count(*) FROM t") == 3);
        CHECK(insert_rows(a, 20, 3000));
        CHECK(query_int(b, "SELECT count(*) FROM t") == 23);
        CHECK(intact(b));
    }
    sqlite3_close(a);
    sqlite3_close(b);
    remove_db();
}

/* Deferred syncs (the group-commit writer's): the first sync of a WAL is real, later ones write
 * the frames out - another connection reads the commit - and hand the WAL over for the fsync;
 * a write-out that fails still fails the COMMIT and hands nothing over; the header of a WAL
 * that starts over is synced for real. */
static void test_a_deferred_sync_writes_out_and_leaves_the_fsync(void)
{
    fresh_path();
    sqlite3 *a = open_db(STORAGE_VFS, "FULL");
    sqlite3 *b = open_db(NULL, "FULL");
    CHECK(a && b);
    if (a && b) {
        CHECK(!storage_vfs_defer_syncs(true));
        unsigned long first = storage_vfs_real_syncs();
        CHECK(insert_rows(a, 1, 10));
        CHECK(storage_vfs_take_deferred() == NULL); /* the first sync was real */
        CHECK(storage_vfs_real_syncs() > first);
        first = storage_vfs_real_syncs();
        CHECK(insert_rows(a, 5, 3000));
        void *wal = storage_vfs_take_deferred();
        CHECK(wal != NULL);
        CHECK(storage_vfs_real_syncs() == first);
        CHECK(storage_vfs_take_deferred() == NULL); /* handed over once */
        CHECK(query_int(b, "SELECT count(*) FROM t") == 6);
        CHECK(wal && storage_vfs_sync(wal) == 0);

        CHECK(commit_past_the_size_limit(a) != SQLITE_OK);
        CHECK(storage_vfs_take_deferred() == NULL);
        CHECK(query_int(b, "SELECT count(*) FROM t") == 6);
        CHECK(storage_vfs_defer_syncs(false));
        CHECK(insert_rows(a, 1, 10));
        CHECK(storage_vfs_take_deferred() == NULL); /* not deferring: synced */
        CHECK(query_int(b, "SELECT count(*) FROM t") == 7);
        /* The WAL starts over after a full checkpoint: the sync of its new header is real,
         * the commit's own is deferred; the next commit syncs nothing for real. */
        CHECK(query_int(b, "PRAGMA wal_checkpoint(TRUNCATE)") == 0);
        CHECK(!storage_vfs_defer_syncs(true));
        unsigned long real = storage_vfs_real_syncs();
        CHECK(insert_rows(a, 1, 10));
        CHECK(storage_vfs_take_deferred() == wal);
        CHECK(storage_vfs_real_syncs() == real + 1);
        CHECK(insert_rows(a, 1, 10));
        CHECK(storage_vfs_take_deferred() == wal);
        CHECK(storage_vfs_real_syncs() == real + 1);
        CHECK(storage_vfs_defer_syncs(true));
        storage_vfs_defer_syncs(false);
        CHECK(query_int(b, "SELECT count(*) FROM t") == 9);
        CHECK(intact(b));
    }
    sqlite3_close(a);
    sqlite3_close(b);
    remove_db();
}

/* A checkpoint copying 2.3 MiB into the database starts its writeback twice, once per MiB
 * written (so that its closing fsync does not flush it all at once); the WAL's own writes
 * start none. */
static void test_a_checkpoint_starts_the_writeback_of_what_it_copies(void)
{
    fresh_path();
    sqlite3 *db = open_db(STORAGE_VFS, "FULL");
    CHECK(db != NULL);
    if (db) {
        CHECK(exec(db, "PRAGMA wal_autocheckpoint = 0"));
        unsigned long before = storage_vfs_writebacks();
        CHECK(exec(db, "BEGIN") && insert_rows(db, 600, 3000) && exec(db, "COMMIT"));
        CHECK(storage_vfs_writebacks() == before); /* the WAL only, so far */
        CHECK(exec(db, "PRAGMA wal_checkpoint(PASSIVE)"));
        CHECK(storage_vfs_writebacks() - before == 2);
        CHECK(query_int(db, "SELECT count(*) FROM t") == 600 && intact(db));
        sqlite3_close(db);
    }
    remove_db();
}

/* The thread below: a connection that spills frames and rolls back, closed by the main thread
 * while this thread lives on, then another connection of this thread writing. */
static sqlite3 *spilled;
static pthread_mutex_t turn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
static int turn;

static void wait_turn(int t)
{
    pthread_mutex_lock(&turn_mu);
    while (turn != t)
        pthread_cond_wait(&turn_cv, &turn_mu);
    pthread_mutex_unlock(&turn_mu);
}

static void give_turn(int t)
{
    pthread_mutex_lock(&turn_mu);
    turn = t;
    pthread_cond_broadcast(&turn_cv);
    pthread_mutex_unlock(&turn_mu);
}

static void *spill_then_write(void *arg)
{
    bool *ok = arg;
    spilled = open_db(STORAGE_VFS, "FULL");
    *ok = spilled && exec(spilled, "PRAGMA cache_size = 8") && exec(spilled, "BEGIN") &&
          insert_rows(spilled, 20, 3500) && exec(spilled, "ROLLBACK");
    give_turn(1);
    wait_turn(2);
    sqlite3 *other = open_db(STORAGE_VFS, "FULL");
    *ok = *ok && other && insert_rows(other, 3, 10) &&
          query_int(other, "SELECT count(*) FROM t") == 3;
    sqlite3_close(other);
    return NULL;
}

/* Nothing stays gathered past the transaction that wrote it, so closing a connection from
 * another thread leaves nothing behind that its thread would later write out (under ASan a
 * use after free). */
static void test_a_connection_closed_by_another_thread_leaves_nothing_gathered(void)
{
    fresh_path();
    turn = 0;
    bool ok = false;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, spill_then_write, &ok) == 0);
    wait_turn(1);
    sqlite3_close(spilled);
    give_turn(2);
    pthread_join(t, NULL);
    CHECK(ok);
    remove_db();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_commit_reaches_the_wal_in_one_write),
        UNIT_TEST(test_other_connections_read_every_commit),
        UNIT_TEST(test_spilled_rolled_back_and_oversized_transactions),
        UNIT_TEST(test_a_failed_write_out_fails_the_commit),
        UNIT_TEST(test_a_connection_closed_by_another_thread_leaves_nothing_gathered),
        UNIT_TEST(test_a_deferred_sync_writes_out_and_leaves_the_fsync),
        UNIT_TEST(test_a_checkpoint_starts_the_writeback_of_what_it_copies),
    };
    return unit_run("storage_vfs", tests, sizeof tests / sizeof tests[0]);
}
