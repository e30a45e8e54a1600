/* Unit tests for runtime/storage.c and the migration runner (runtime/storage_migrate.c): each
 * test opens a database in its own temporary directory. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/storage.h"
#include "runtime/storage_migrate.h"
#include "runtime/storage_sqlite.h"
#include "tests/unit/unit.h"

static char dir[64];
static char path[128];

/* Every migration of every component: what a database has once storage_open() is done. */
static int all_migrations(void)
{
    size_t n = 0;
    for (size_t i = 0; i < migrate_components_count; i++)
        n += migrate_components[i].count;
    return (int)n;
}

static void remove_db(void)
{
    char p[160];
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* A new empty directory per test, so no test sees another's rows. */
static void fresh_path(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_storage.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/treasury.db", dir);
}

static int open_fresh(void)
{
    char err[256] = "";
    fresh_path();
    int rc = storage_open(path, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "  storage_open: %s\n", err);
    return rc;
}

static void done(void)
{
    storage_close();
    remove_db();
}

static long long query_int(const char *sql)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st || db_step(st) != DB_ROW)
        return -1;
    long long v = db_column_int64(st, 0);
    db_reset(st);
    return v;
}

static const char *query_text(const char *sql, char *buf, size_t n)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st || db_step(st) != DB_ROW)
        return NULL;
    const char *t = db_column_text(st, 0);
    snprintf(buf, n, "%s", t ? (const char *)t : "(null)");
    db_reset(st);
    return buf;
}

static int insert_workspace(const char *id, const char *name)
{
    struct db_stmt *st =
        storage_prepare("INSERT INTO workspaces (id, name, created_at, updated_at) "
                        "VALUES (?, ?, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z')");
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, name);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : -1;
}

static void test_open_creates_database_with_every_table(void)
{
    struct stat sb;
    CHECK(open_fresh() == 0);
    CHECK(stat(path, &sb) == 0);
    CHECK(storage_schema_version() == all_migrations());
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('workspaces', 'users', 'members', 'sessions', 'beneficiaries', "
                    "'schema_versions', 'ratelimit_state', 'idempotency_keys', "
                    "'refresh_tokens', 'roles', 'service_accounts', 'service_account_tokens', "
                    "'invitations', 'mfa_recovery_codes', 'payments', 'payment_approvals', "
                    "'approval_policies', 'events', 'audit_events', 'payment_batches', "
                    "'batch_approvals', 'oauth_clients', 'oauth_grants', 'oauth_codes', "
                    "'oauth_browser_sessions', 'oauth_requests')") == 26);
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                    "name IN ('beneficiaries_list_idx', 'events_id_idx', 'events_resource_idx', "
                    "'audit_events_id_idx', 'payments_due_idx')") == 5);
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'") == 0);
    /* The runtime first, then the APIs in handlers/sql/ORDER: accounts before the APIs whose
     * tables refer to its workspaces. */
    CHECK_STR(migrate_components[0].name, "runtime");
    CHECK_STR(migrate_components[1].name, "accounts");
    done();
}

static void test_migrations_are_applied_once_across_reopens(void)
{
    char err[256] = "";
    CHECK(open_fresh() == 0);
    storage_close();
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(query_int("SELECT count(*) FROM schema_versions") == all_migrations());
    CHECK(query_int("SELECT count(DISTINCT component) FROM schema_versions") ==
          (long long)migrate_components_count);
    CHECK(storage_schema_version() == all_migrations());
    done();
}

static void test_reopen_keeps_committed_data(void)
{
    char err[256] = "", buf[64];
    CHECK(open_fresh() == 0);
    CHECK(storage_begin(true) == 0);
    CHECK(insert_workspace("wsp_a", "Kept") == 0);
    CHECK(storage_commit() == 0);
    storage_close();
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK_STR(query_text("SELECT name FROM workspaces WHERE id = 'wsp_a'", buf, sizeof buf),
              "Kept");
    done();
}

static void test_connection_uses_wal_full_sync_and_busy_timeout(void)
{
    char buf[32];
    CHECK(open_fresh() == 0);
    CHECK_STR(query_text("PRAGMA journal_mode", buf, sizeof buf), "wal");
    CHECK(query_int("PRAGMA synchronous") == 2);
    CHECK(query_int("PRAGMA foreign_keys") == 1);
    CHECK(query_int("PRAGMA busy_timeout") == 5000);
    done();
}

static void test_foreign_keys_are_enforced(void)
{
    CHECK(open_fresh() == 0);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO members (workspace_id, user_id, role, created_at) "
        "VALUES ('wsp_missing', 'usr_missing', 'owner', '2024-01-01T00:00:00.000Z')");
    CHECK(st != NULL);
    if (st) {
        CHECK(db_step(st) == DB_ERR_FOREIGN_KEY);
        db_reset(st);
    }
    CHECK(query_int("SELECT count(*) FROM members") == 0);
    done();
}

static void test_users_email_norm_must_be_lower_case(void)
{
    CHECK(open_fresh() == 0);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO users (id, email, email_norm, password_hash, created_at, updated_at) "
        "VALUES ('usr_a', 'A@X.TEST', 'A@X.TEST', 'h', 'now', 'now')");
    CHECK(st != NULL);
    if (st) {
        CHECK(db_step(st) == DB_ERR);
        db_reset(st);
    }
    done();
}

static void test_prepare_returns_the_same_statement_reset_and_unbound(void)
{
    char sql[] = "SELECT ?1, ?1 IS NULL";
    char copy[sizeof sql];
    CHECK(open_fresh() == 0);
    struct db_stmt *a = storage_prepare("SELECT ?1, ?1 IS NULL");
    CHECK(a != NULL);
    if (!a) {
        done();
        return;
    }
    CHECK(db_bind_int64(a, 1, 42) == DB_OK);
    CHECK(db_step(a) == DB_ROW);
    CHECK(db_column_int(a, 0) == 42);
    CHECK(sqlite3_stmt_busy((sqlite3_stmt *)(void *)a));
    /* The same text from another buffer is the same cached statement. */
    memcpy(copy, sql, sizeof sql);
    struct db_stmt *b = storage_prepare(copy);
    CHECK(a == b);
    CHECK(!sqlite3_stmt_busy((sqlite3_stmt *)(void *)b));
    CHECK(db_step(b) == DB_ROW);
    CHECK(db_column_int(b, 1) == 1); /* binding cleared */
    db_reset(b);
    /* Different text in the reused buffer is a different statement. */
    snprintf(copy, sizeof copy, "SELECT 7");
    CHECK(storage_prepare(copy) != a);
    done();
}

/* The one-statement helpers: texts bound in order (NULL as NULL), the first column of the first
 * row, whether there was one, and failures answered -1 with nothing left running. */
static void test_exec_and_query_texts_bind_in_order_and_tell_row_none_failure(void)
{
    char out[16] = "unchanged";
    CHECK(open_fresh() == 0);
    CHECK(storage_begin(true) == 0);
    CHECK(storage_exec_texts("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)", NULL, 0) == 0);
    const char *row[] = {"a", "one"}, *nul[] = {"b", NULL};
    CHECK(storage_exec_texts("INSERT INTO t (k, v) VALUES (?, ?)", row, 2) == 0);
    CHECK(storage_exec_texts("INSERT INTO t (k, v) VALUES (?, ?)", nul, 2) == 0);
    CHECK(storage_exec_texts("INSERT INTO t (k, v) VALUES (?, ?)", row, 2) == -1); /* unique */
    const char *a[] = {"a"}, *b[] = {"b"}, *z[] = {"z"};
    CHECK(storage_query_text("SELECT v FROM t WHERE k = ?", a, 1, out, sizeof out) == 1);
    CHECK_STR(out, "one");
    CHECK(storage_query_text("SELECT v FROM t WHERE k = ?", b, 1, out, sizeof out) == 1);
    CHECK_STR(out, ""); /* a NULL column */
    snprintf(out, sizeof out, "unchanged");
    CHECK(storage_query_text("SELECT v FROM t WHERE k = ?", z, 1, out, sizeof out) == 0);
    CHECK_STR(out, "unchanged");
    CHECK(storage_query_text("SELECT 1 FROM t WHERE k = ?", a, 1, NULL, 0) == 1);
    CHECK(storage_query_text("SELECT json(?)", (const char *[]){"{not json"}, 1, out,
                             sizeof out) == -1); /* fails at step */
    CHECK(storage_query_text("SELECT 'a long value'", NULL, 0, out, 4) == 1);
    CHECK_STR(out, "a l"); /* cut to outlen, still terminated */
    storage_rollback();
    done();
}

static void test_prepare_cache_keeps_statements_past_its_initial_size(void)
{
    char sql[64];
    struct db_stmt *first[200];
    bool same = true;
    CHECK(open_fresh() == 0);
    for (int i = 0; i < 200; i++) {
        snprintf(sql, sizeof sql, "SELECT %d", i);
        first[i] = storage_prepare(sql);
        CHECK(first[i] != NULL);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(sql, sizeof sql, "SELECT %d", i);
        struct db_stmt *st = storage_prepare(sql);
        same = same && st == first[i] && db_step(st) == DB_ROW &&
               db_column_int(st, 0) == i;
    }
    CHECK(same);
    done();
}

/* A DB_IN_LIST statement prepared for n ids has the fewest places (a multiple of
 * DB_IN_LIST_STEP) that hold them: binding past them fails, the ids bound are found, the NULLs
 * match nothing, and asking again for as many gives the same cached statement. */
static void test_prepare_in_cuts_the_list_to_the_page(void)
{
    static const char sql[] = "SELECT id FROM workspaces WHERE id IN " DB_IN_LIST " ORDER BY id";
    CHECK(open_fresh() == 0);
    CHECK(insert_workspace("w1", "one") == 0 && insert_workspace("w2", "two") == 0 &&
          insert_workspace("w3", "three") == 0);
    static const struct {
        size_t n;
        int places;
    } sizes[] = {{0, 10}, {1, 10}, {10, 10}, {11, 20}, {20, 20}, {91, 100}, {100, 100}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int places = 0;
        struct db_stmt *st = storage_prepare_in(sql, sizes[k].n, &places);
        CHECK(st != NULL);
        CHECK(places == sizes[k].places);
        if (!st)
            continue;
        CHECK(db_bind_text(st, places, "w9") == 0);
        CHECK(db_bind_text(st, places + 1, "w9") != 0);
        db_bind_text(st, 1, "w3");
        db_bind_text(st, 2, "w1");
        for (int i = 3; i <= places; i++)
            db_bind_null(st, i);
        CHECK(db_step(st) == DB_ROW);
        CHECK_STR(db_column_text(st, 0), "w1");
        CHECK(db_step(st) == DB_ROW);
        CHECK_STR(db_column_text(st, 0), "w3");
        CHECK(db_step(st) == DB_DONE);
        db_reset(st);
        int again = 0;
        CHECK(storage_prepare_in(sql, sizes[k].n, &again) == st && again == places);
    }
    done();
}

static void test_prepare_refuses_more_than_one_statement(void)
{
    CHECK(open_fresh() == 0);
    CHECK(storage_prepare("SELECT 1; SELECT 2") == NULL);
    CHECK(storage_prepare("SELECT 1;  ") != NULL);
    CHECK(storage_prepare("SELECT nope FROM nowhere") == NULL);
    done();
}

static void test_rollback_discards_changes(void)
{
    CHECK(open_fresh() == 0);
    storage_rollback(); /* safe without a transaction */
    CHECK(!storage_in_tx());
    CHECK(storage_begin(true) == 0);
    CHECK(storage_in_tx());
    CHECK(insert_workspace("wsp_gone", "Gone") == 0);
    CHECK(query_int("SELECT count(*) FROM workspaces") == 1);
    storage_rollback();
    CHECK(!storage_in_tx());
    CHECK(query_int("SELECT count(*) FROM workspaces") == 0);
    done();
}

static void test_begin_inside_a_transaction_fails(void)
{
    CHECK(open_fresh() == 0);
    CHECK(storage_begin(false) == 0);
    CHECK(storage_begin(true) == -1);
    CHECK(storage_in_tx());
    CHECK(storage_commit() == 0);
    CHECK(storage_commit() == -1);
    done();
}

static void test_commit_resets_statements_left_mid_iteration(void)
{
    CHECK(open_fresh() == 0);
    CHECK(storage_begin(true) == 0);
    CHECK(insert_workspace("wsp_1", "One") == 0);
    CHECK(insert_workspace("wsp_2", "Two") == 0);
    struct db_stmt *st = storage_prepare("SELECT id FROM workspaces");
    CHECK(st && db_step(st) == DB_ROW);
    CHECK(storage_commit() == 0);
    CHECK(st && !sqlite3_stmt_busy((sqlite3_stmt *)(void *)st));
    done();
}

struct thread_result {
    sqlite3 *db;
    long long workspaces;
    long long foreign_keys;
    char journal[16];
};

static void *reader(void *arg)
{
    struct thread_result *r = arg;
    r->db = storage_sqlite_db();
    if (storage_begin(false) == 0) {
        r->workspaces = query_int("SELECT count(*) FROM workspaces");
        r->foreign_keys = query_int("PRAGMA foreign_keys");
        query_text("PRAGMA journal_mode", r->journal, sizeof r->journal);
        storage_commit();
    }
    return NULL;
}

static void test_each_thread_gets_its_own_configured_connection(void)
{
    struct thread_result r = {NULL, -1, -1, ""};
    pthread_t t;
    CHECK(open_fresh() == 0);
    CHECK(storage_begin(true) == 0);
    CHECK(insert_workspace("wsp_t", "Threaded") == 0);
    CHECK(storage_commit() == 0);
    CHECK(pthread_create(&t, NULL, reader, &r) == 0);
    pthread_join(t, NULL);
    CHECK(r.db != NULL && r.db != storage_sqlite_db());
    CHECK(r.workspaces == 1);
    CHECK(r.foreign_keys == 1);
    CHECK_STR(r.journal, "wal");
    done(); /* closes the exited thread's connection too (ASan reports a leak otherwise) */
}

static void test_storage_is_unusable_after_close(void)
{
    CHECK(open_fresh() == 0);
    done();
    CHECK(storage_sqlite_db() == NULL);
    CHECK(storage_begin(true) == -1);
    CHECK(!storage_in_tx());
    storage_rollback();
}

static void test_newer_schema_database_is_refused(void)
{
    char err[256] = "";
    CHECK(open_fresh() == 0);
    struct db_stmt *st = storage_prepare("INSERT INTO schema_versions (component, version, name, "
                                         "applied_at) VALUES ('runtime', ?, 'future', 'now')");
    CHECK(st != NULL);
    if (st) {
        db_bind_int64(st, 1, (int64_t)migrate_components[0].count + 1);
        CHECK(db_step(st) == DB_DONE);
        db_reset(st);
    }
    storage_close();
    CHECK(storage_open(path, err, sizeof err) == -1);
    CHECK(strstr(err, "newer") != NULL);
    CHECK(storage_sqlite_db() == NULL);
    storage_close(); /* harmless after a failed open */
    remove_db();
}

static void test_database_with_another_migration_history_is_refused(void)
{
    char err[256] = "";
    CHECK(open_fresh() == 0);
    CHECK(query_int("SELECT count(*) FROM schema_versions") >= 1);
    struct db_stmt *st = storage_prepare("UPDATE schema_versions SET name = 'something else' "
                                         "WHERE component = 'runtime' AND version = 1");
    CHECK(st && db_step(st) == DB_DONE);
    storage_close();
    CHECK(storage_open(path, err, sizeof err) == -1);
    CHECK(strstr(err, "different build") != NULL);
    storage_close();
    remove_db();
}

static void test_open_twice_is_refused(void)
{
    char err[256] = "";
    CHECK(open_fresh() == 0);
    CHECK(storage_open(path, err, sizeof err) == -1);
    CHECK(strstr(err, "already open") != NULL);
    done();
}

static int wal_frames; /* the WAL's length after the last commit (its WAL hook) */

static int count_frames(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)arg, (void)db, (void)name;
    wal_frames = frames;
    return DB_OK;
}

static int commit_rows(int rows)
{
    if (storage_begin(true) != 0)
        return -1;
    struct db_stmt *st = storage_prepare("INSERT INTO blobs (b) VALUES (zeroblob(3000))");
    int rc = st ? 0 : -1;
    for (int k = 0; k < rows && rc == 0; k++) {
        if (db_step(st) != DB_DONE)
            rc = -1;
        db_reset(st);
    }
    if (rc != 0) {
        storage_rollback();
        return -1;
    }
    return storage_commit();
}

static sqlite3 *old_reader; /* a reader of an older snapshot, as GETs are under load */

static void reader_finishes(void)
{
    CHECK(sqlite3_exec(old_reader, "COMMIT", NULL, NULL, NULL) == DB_OK);
}

/* A checkpoint brings the WAL back to its start even when its first pass cannot copy it all
 * (commits landed while it copied, or, as here, a reader still used an older snapshot): its
 * second pass, under the write lock, copies the rest, so the next write restarts the WAL. With
 * one pass the WAL never restarts under steady commits and grows to the backstop (16,000 pages,
 * 64 MiB), every checkpoint sorting its index anew. */
static void test_checkpoint_restarts_the_wal_when_its_first_pass_falls_short(void)
{
    CHECK(open_fresh() == 0);
    sqlite3_wal_hook(storage_sqlite_db(), count_frames, NULL);
    CHECK(sqlite3_exec(storage_sqlite_db(), "CREATE TABLE blobs (b BLOB)", NULL, NULL, NULL) ==
          DB_OK);
    CHECK(commit_rows(50) == 0);
    CHECK(sqlite3_open(path, &old_reader) == DB_OK);
    CHECK(sqlite3_exec(old_reader, "BEGIN; SELECT count(*) FROM blobs", NULL, NULL, NULL) ==
          DB_OK);
    CHECK(commit_rows(4) == 0); /* newer than the reader's snapshot: the first pass stops short */
    int before = wal_frames;
    storage_checkpoint(reader_finishes);
    CHECK(commit_rows(1) == 0);
    if (wal_frames >= 10)
        fprintf(stderr, "  the WAL holds %d frames after the checkpoint (%d before)\n",
                wal_frames, before);
    CHECK(before > 50 && wal_frames > 0 && wal_frames < 10); /* the last commit's pages only */
    CHECK(query_int("SELECT count(*) FROM blobs") == 55);
    sqlite3_close(old_reader);
    done();
}

static void one_more_commit(void)
{
    CHECK(commit_rows(1) == 0);
}

/* A checkpoint answers the requests of every commit it copied, also those made while it ran
 * (each commit's hook asks again as long as the WAL is past CHECKPOINT_PAGES). Left standing,
 * they ran a second checkpoint right after the first, whose pass under the write lock stalled
 * the writer for two fsyncs to copy a few frames of the new WAL. The connection keeps the hook
 * of the checkpoint thread, stopped here so that nothing but storage_checkpoint answers. */
static void test_a_checkpoint_answers_the_requests_of_the_commits_it_copied(void)
{
    CHECK(storage_checkpoints_start() == 0);
    CHECK(open_fresh() == 0);
    storage_checkpoints_stop();
    CHECK(sqlite3_exec(storage_sqlite_db(), "CREATE TABLE blobs (b BLOB)", NULL, NULL, NULL) ==
          DB_OK);
    CHECK(commit_rows(2100) == 0); /* a page each: past CHECKPOINT_PAGES (2,000) */
    CHECK(storage_checkpoint_pending());
    storage_checkpoint(one_more_commit); /* a commit between its passes asks again */
    CHECK(!storage_checkpoint_pending());
    CHECK(query_int("SELECT count(*) FROM blobs") == 2101);
    done();
}

static void test_a_component_this_build_lacks_is_refused(void)
{
    char err[256] = "";
    CHECK(open_fresh() == 0);
    CHECK(storage_exec_texts("INSERT INTO schema_versions (component, version, name, applied_at) "
                             "VALUES ('sheets', 1, 'baseline', 'now')",
                             NULL, 0) == 0);
    storage_close();
    CHECK(storage_open(path, err, sizeof err) == -1);
    CHECK(strstr(err, "sheets") != NULL && strstr(err, "newer") != NULL);
    storage_close();
    remove_db();
}

/* A server and an admin command (or instances) starting together on a new database: each
 * migration is applied by one of them, inside its write transaction, and the others find it
 * applied there instead of failing on tables that already exist. */
static void test_processes_starting_at_once_apply_each_migration_once(void)
{
    enum { N = 4 };
    pid_t pids[N];
    fresh_path();
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            char err[256] = "";
            int rc = storage_open(path, err, sizeof err);
            if (rc != 0)
                fprintf(stderr, "  child storage_open: %s\n", err);
            storage_close();
            _exit(rc == 0 ? 0 : 1);
        }
    }
    for (int i = 0; i < N; i++) {
        int status = -1;
        CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char err[256] = "";
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(query_int("SELECT count(*) FROM schema_versions") == all_migrations());
    done();
}

/* tests/fixtures/legacy_v19.sql (a database the last release of the single migration list
 * made) loaded into a new file at path. make unit runs from the repository's root. */
static int load_legacy(const char *extra_sql)
{
    FILE *f = fopen("tests/fixtures/legacy_v19.sql", "rb");
    if (!f) {
        perror("  tests/fixtures/legacy_v19.sql");
        return -1;
    }
    static char text[256 * 1024];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    sqlite3 *db = NULL;
    fresh_path();
    int rc = sqlite3_open(path, &db) == SQLITE_OK &&
                     sqlite3_exec(db, text, NULL, NULL, NULL) == SQLITE_OK &&
                     (!extra_sql || sqlite3_exec(db, extra_sql, NULL, NULL, NULL) == SQLITE_OK)
                 ? 0
                 : -1;
    if (rc != 0)
        fprintf(stderr, "  loading the fixture: %s\n", sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

/* Appends the rows of sql (one text parameter: p) to *out, columns joined by '|'. */
static void append_rows(sqlite3 *db, char **out, const char *prefix, const char *sql,
                        const char *p)
{
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    if (p)
        sqlite3_bind_text(st, 1, p, -1, SQLITE_TRANSIENT);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        char *line = sqlite3_mprintf("%s%s", *out, prefix);
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const unsigned char *v = sqlite3_column_text(st, i);
            char *next = sqlite3_mprintf("%s%s%s", line, i ? "|" : "", v ? (const char *)v : "~");
            sqlite3_free(line);
            line = next;
        }
        sqlite3_free(*out);
        *out = sqlite3_mprintf("%s\n", line);
        sqlite3_free(line);
    }
    sqlite3_finalize(st);
}

/* The schema of db as text, from the PRAGMAs: every table (and whether it is WITHOUT ROWID),
 * its columns in order with type, NOT NULL, default and primary-key position, its indexes
 * with their key columns (and the SQL of explicit ones, whitespace folded: partial indexes),
 * and its foreign keys. Not schema_versions (the runner's own) nor schema_migrations (gone
 * after adoption). */
static char *schema_of(sqlite3 *db)
{
    char *out = sqlite3_mprintf("");
    sqlite3_stmt *tables = NULL;
    CHECK(sqlite3_prepare_v2(db,
                             "SELECT name, sql LIKE '%WITHOUT ROWID%' FROM sqlite_master "
                             "WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN "
                             "('schema_versions', 'schema_migrations') ORDER BY name",
                             -1, &tables, NULL) == SQLITE_OK);
    while (tables && sqlite3_step(tables) == SQLITE_ROW) {
        char *t = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(tables, 0));
        char *line = sqlite3_mprintf("%stable %s%s\n", out, t,
                                     sqlite3_column_int(tables, 1) ? " WITHOUT ROWID" : "");
        sqlite3_free(out);
        out = line;
        append_rows(db, &out, "  column ",
                    "SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)",
                    t);
        append_rows(db, &out, "  index ",
                    "SELECT l.\"unique\", l.origin, l.partial, (SELECT group_concat(coalesce("
                    "x.name, x.cid) || ' ' || x.\"desc\" || ' ' || x.coll, ', ') FROM "
                    "pragma_index_xinfo(l.name) x WHERE x.key), CASE WHEN l.origin = 'c' THEN "
                    "l.name || ' ' || (SELECT replace(replace(replace(replace(m.sql, char(10), "
                    "' '), '    ', ' '), '  ', ' '), '  ', ' ') FROM sqlite_master m WHERE "
                    "m.name = l.name) END FROM pragma_index_list(?) l ORDER BY 4, 2",
                    t);
        append_rows(db, &out, "  foreign key ",
                    "SELECT \"table\", \"from\", \"to\", on_update, on_delete, match "
                    "FROM pragma_foreign_key_list(?) ORDER BY id, seq",
                    t);
        sqlite3_free(t);
    }
    sqlite3_finalize(tables);
    char *copy = strdup(out);
    sqlite3_free(out);
    return copy;
}

/* The runtime's tables of a database made by the single list refer to workspaces; a new
 * database's do not (runtime/sql/0001_baseline.sqlite.sql: the runtime knows no API's
 * tables). Adoption leaves the tables as they are, so these are the one difference. */
static const char *const legacy_runtime_fks[] = {
    "table audit_events WITHOUT ROWID\n",
    "table events\n",
    "table idempotency_keys\n",
};
#define WORKSPACE_FK "  foreign key workspaces|workspace_id|id|NO ACTION|NO ACTION|NONE\n"

/* s without the workspace foreign key of each table in legacy_runtime_fks; how many it had. */
static int drop_runtime_fks(char *s)
{
    int dropped = 0;
    for (size_t i = 0; i < sizeof legacy_runtime_fks / sizeof legacy_runtime_fks[0]; i++) {
        char *t = strstr(s, legacy_runtime_fks[i]);
        char *next_table = t ? strstr(t + 1, "\ntable ") : NULL;
        char *fk = t ? strstr(t, WORKSPACE_FK) : NULL;
        if (fk && (!next_table || fk < next_table)) {
            memmove(fk, fk + strlen(WORKSPACE_FK), strlen(fk + strlen(WORKSPACE_FK)) + 1);
            dropped++;
        }
    }
    return dropped;
}

/* A database of the last release of the single migration list is adopted as it is: every
 * component's baseline recorded as applied, schema_migrations gone, every row kept, and its
 * schema that of a new database (but for the runtime tables' references to workspaces). */
static void test_a_database_of_the_single_migration_list_is_adopted(void)
{
    char err[256] = "", buf[64];
    CHECK(load_legacy(NULL) == 0);
    CHECK(storage_open(path, err, sizeof err) == 0);
    if (err[0])
        fprintf(stderr, "  storage_open: %s\n", err);
    CHECK(storage_schema_version() == all_migrations());
    /* the components of the single list were adopted at their baseline; one added after it
     * (the ledger) had its first migration applied */
    long long baselines = 0;
    for (size_t i = 0; i < migrate_components_count; i++)
        baselines += migrate_components[i].count > 0 &&
                     strcmp(migrate_components[i].migrations[0].name, "baseline") == 0;
    CHECK(baselines < (long long)migrate_components_count);
    CHECK(query_int("SELECT count(*) FROM schema_versions WHERE version = 1 AND "
                    "name = 'baseline'") == baselines);
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'") == 0);
    CHECK(query_int("SELECT count(*) FROM workspaces") == 2);
    CHECK(query_int("SELECT count(*) FROM payments") == 1);
    CHECK(query_int("SELECT count(*) FROM idempotency_keys") == 1);
    CHECK(query_int("SELECT count(*) FROM events") == 2);
    CHECK(query_int("SELECT count(*) FROM audit_events") == 4);
    CHECK_STR(query_text("SELECT remittance_information FROM payments", buf, sizeof buf),
              "INV-1");
    char *adopted = schema_of(storage_sqlite_db());
    storage_close();
    /* Opened again: nothing more to apply or adopt. */
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(query_int("SELECT count(*) FROM schema_versions") == all_migrations());
    done();

    CHECK(open_fresh() == 0);
    char *fresh = schema_of(storage_sqlite_db());
    done();
    CHECK(adopted && fresh);
    if (adopted && fresh) {
        CHECK(strstr(adopted, "table payments\n") && strstr(adopted, "table audit_events"));
        CHECK(drop_runtime_fks(adopted) == 3);
        CHECK(drop_runtime_fks(fresh) == 0);
        if (strcmp(adopted, fresh) != 0)
            fprintf(stderr, "  adopted schema:\n%s\n  new schema:\n%s\n", adopted, fresh);
        CHECK_STR(adopted, fresh);
    }
    free(adopted);
    free(fresh);
}

/* An older database of that list cannot be adopted (its schema is not the baselines'): the
 * previous release brings it to version 19 first. Nothing is changed meanwhile. */
static void test_an_older_database_of_the_single_migration_list_is_refused(void)
{
    char err[256] = "";
    CHECK(load_legacy("DELETE FROM schema_migrations WHERE version > 17") == 0);
    CHECK(storage_open(path, err, sizeof err) == -1);
    CHECK(strstr(err, "version 17") != NULL);
    CHECK(strstr(err, "start the previous release once") != NULL);
    storage_close();
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name IN "
                                 "('schema_versions', 'schema_migrations')",
                             -1, &st, NULL) == SQLITE_OK);
    CHECK(st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    remove_db();
}

static void test_a_single_list_database_with_other_names_is_refused(void)
{
    char err[256] = "";
    CHECK(load_legacy("UPDATE schema_migrations SET name = 'mine' WHERE version = 7") == 0);
    CHECK(storage_open(path, err, sizeof err) == -1);
    CHECK(strstr(err, "different build") != NULL);
    storage_close();
    remove_db();
}

static void test_open_reports_a_file_that_is_not_a_database(void)
{
    char err[256] = "";
    fresh_path();
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("this is not an SQLite database, just some text long enough to be a header\n", f);
        fclose(f);
    }
    CHECK(storage_open(path, err, sizeof err) == -1);
    CHECK(err[0] != '\0');
    storage_close();
    remove_db();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_open_creates_database_with_every_table),
        UNIT_TEST(test_migrations_are_applied_once_across_reopens),
        UNIT_TEST(test_reopen_keeps_committed_data),
        UNIT_TEST(test_connection_uses_wal_full_sync_and_busy_timeout),
        UNIT_TEST(test_foreign_keys_are_enforced),
        UNIT_TEST(test_users_email_norm_must_be_lower_case),
        UNIT_TEST(test_prepare_returns_the_same_statement_reset_and_unbound),
        UNIT_TEST(test_exec_and_query_texts_bind_in_order_and_tell_row_none_failure),
        UNIT_TEST(test_prepare_cache_keeps_statements_past_its_initial_size),
        UNIT_TEST(test_prepare_in_cuts_the_list_to_the_page),
        UNIT_TEST(test_prepare_refuses_more_than_one_statement),
        UNIT_TEST(test_rollback_discards_changes),
        UNIT_TEST(test_begin_inside_a_transaction_fails),
        UNIT_TEST(test_commit_resets_statements_left_mid_iteration),
        UNIT_TEST(test_each_thread_gets_its_own_configured_connection),
        UNIT_TEST(test_storage_is_unusable_after_close),
        UNIT_TEST(test_newer_schema_database_is_refused),
        UNIT_TEST(test_database_with_another_migration_history_is_refused),
        UNIT_TEST(test_open_twice_is_refused),
        UNIT_TEST(test_open_reports_a_file_that_is_not_a_database),
        UNIT_TEST(test_a_component_this_build_lacks_is_refused),
        UNIT_TEST(test_processes_starting_at_once_apply_each_migration_once),
        UNIT_TEST(test_a_database_of_the_single_migration_list_is_adopted),
        UNIT_TEST(test_an_older_database_of_the_single_migration_list_is_refused),
        UNIT_TEST(test_a_single_list_database_with_other_names_is_refused),
        UNIT_TEST(test_checkpoint_restarts_the_wal_when_its_first_pass_falls_short),
        UNIT_TEST(test_a_checkpoint_answers_the_requests_of_the_commits_it_copied),
    };
    log_init(LOG_FORMAT_TEXT);
    return unit_run("storage", tests, sizeof tests / sizeof tests[0]);
}
