/* Unit tests for runtime/storage.c and the migrations: each test opens a database in its own
 * temporary directory. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/migrations.h"
#include "runtime/storage.h"
#include "runtime/storage_sqlite.h"
#include "tests/unit/unit.h"

static char dir[64];
static char path[128];

static int latest_version(void)
{
    return migrations_list[migrations_count - 1].version;
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
    CHECK(storage_schema_version() == latest_version());
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('workspaces', 'users', 'members', 'sessions', 'beneficiaries', "
                    "'schema_migrations', 'ratelimit_state', 'idempotency_keys', "
                    "'refresh_tokens', 'roles', 'service_accounts', 'service_account_tokens', "
                    "'invitations', 'mfa_recovery_codes', 'payments', 'payment_approvals', "
                    "'approval_policies', 'events', 'audit_events', 'payment_batches', "
                    "'batch_approvals', 'oauth_clients', 'oauth_grants', 'oauth_codes', "
                    "'oauth_browser_sessions', 'oauth_requests')") == 26);
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                    "name IN ('beneficiaries_list_idx', 'events_id_idx', 'events_resource_idx', "
                    "'audit_events_id_idx', 'payments_due_idx')") == 5);
    /* Dropped by migration 13: no query read them. */
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                    "name IN ('events_seq_idx', 'events_undelivered_idx', "
                    "'payments_status_idx')") == 0);
    done();
}

static void test_migrations_are_applied_once_across_reopens(void)
{
    char err[256] = "";
    CHECK(open_fresh() == 0);
    storage_close();
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(query_int("SELECT count(*) FROM schema_migrations") == (long long)migrations_count);
    CHECK(query_int("SELECT max(version) FROM schema_migrations") == latest_version());
    CHECK(storage_schema_version() == latest_version());
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
    struct db_stmt *st = storage_prepare(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'now')");
    CHECK(st != NULL);
    if (st) {
        db_bind_int64(st, 1, latest_version() + 1);
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
    CHECK(query_int("SELECT count(*) FROM schema_migrations") >= 1);
    struct db_stmt *st =
        storage_prepare("UPDATE schema_migrations SET name = 'something else' WHERE version = 1");
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

static const char events_snapshot[] =
    "SELECT group_concat(quote(seq) || quote(id) || quote(workspace_id) || quote(type) || "
    "quote(resource_type) || quote(resource_id) || quote(resource_version) || quote(data) || "
    "quote(request_id) || quote(idempotency_key) || quote(created_at) || quote(delivered_at), "
    "';') FROM (SELECT * FROM events ORDER BY seq)";
static const char audit_snapshot[] =
    "SELECT group_concat(quote(workspace_id) || quote(seq) || quote(id) || quote(occurred_at) || "
    "quote(actor_id) || quote(action) || quote(resource_type) || quote(resource_id) || "
    "quote(before_status) || quote(after_status) || quote(detail) || quote(request_id) || "
    "quote(prev_hash) || quote(hash), ';') FROM (SELECT * FROM audit_events "
    "ORDER BY workspace_id, seq)";

/* The first column of the first row as malloc'd text ("" for none). */
static char *snapshot(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        out = strdup(sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : "");
    sqlite3_finalize(st);
    return out;
}

/* A fresh database at path as a server left it before migration version: every earlier
 * migration applied and recorded. Open, for the caller to fill and close. */
static sqlite3 *open_before(int version)
{
    sqlite3 *db = NULL;
    fresh_path();
    CHECK(sqlite3_open(path, &db) == DB_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                           "name TEXT NOT NULL, applied_at TEXT NOT NULL)",
                       NULL, NULL, NULL) == DB_OK);
    for (size_t i = 0; i < migrations_count && migrations_list[i].version < version; i++) {
        char *sql = sqlite3_mprintf("%s; INSERT INTO schema_migrations VALUES (%d, %Q, "
                                    "'2026-01-01T00:00:00.000Z')",
                                    migrations_list[i].sql, migrations_list[i].version,
                                    migrations_list[i].name);
        CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == DB_OK);
        sqlite3_free(sql);
    }
    return db;
}

/* Migration 13 rebuilds events and audit_events: every row survives with every column, and
 * the numbering carries on from the last event. */
static void test_lean_writes_migration_keeps_every_event_and_audit_record(void)
{
    sqlite3 *db = open_before(13);
    CHECK(sqlite3_exec(
              db,
              "INSERT INTO workspaces (id, name, created_at, updated_at) VALUES "
              "('wsp_1', 'One', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z');"
              "INSERT INTO events (id, workspace_id, type, resource_type, resource_id, "
              "resource_version, data, request_id, idempotency_key, created_at, seq, "
              "delivered_at) VALUES "
              "('evt_a', 'wsp_1', 'payment.created', 'payment', 'pay_1', 1, '{}', 'req_1', NULL, "
              "'2026-01-01T00:00:00.000Z', 1, NULL),"
              "('evt_b', 'wsp_1', 'payment.approved', 'payment', 'pay_1', 2, '{\"a\":1}', "
              "'req_2', 'key-2', '2026-01-01T00:00:01.000Z', 7, '2026-01-01T00:00:02.000Z');"
              "INSERT INTO audit_events VALUES "
              "('wsp_1', 1, 'aud_a', '2026-01-01T00:00:00.000Z', 'usr_1', 'payment.created', "
              "'payment', 'pay_1', NULL, 'pending_approval', NULL, 'req_1', 'p0', 'h1'),"
              "('wsp_1', 2, 'aud_b', '2026-01-01T00:00:01.000Z', 'usr_2', 'payment.approved', "
              "'payment', 'pay_1', 'pending_approval', 'approved', 'four eyes', 'req_2', 'h1', "
              "'h2')",
              NULL, NULL, NULL) == DB_OK);
    char *events_before = snapshot(db, events_snapshot);
    char *audit_before = snapshot(db, audit_snapshot);
    sqlite3_close(db);

    char err[256] = "";
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(storage_schema_version() == latest_version());
    char *events_after = snapshot(storage_sqlite_db(), events_snapshot);
    char *audit_after = snapshot(storage_sqlite_db(), audit_snapshot);
    CHECK(events_before && strstr(events_before, "'evt_b'") && strstr(events_before, "'key-2'"));
    CHECK(audit_before && strstr(audit_before, "'four eyes'"));
    CHECK_STR(events_after, events_before);
    CHECK_STR(audit_after, audit_before);
    CHECK(query_int("SELECT COALESCE(MAX(seq), 0) + 1 FROM events") == 8);
    CHECK(query_int("SELECT count(*) FROM sqlite_master WHERE name = 'audit_events' AND "
                    "sql LIKE '%WITHOUT ROWID%'") == 1);
    free(events_before), free(audit_before), free(events_after), free(audit_after);
    done();
}

/* Migration 18 makes items still open at the upgrade fail closed: a service account's decision
 * no longer counts (its round starts over, an approval it gave is withdrawn), the minters of a
 * service account's tokens become makers of what it created, and a payment whose beneficiary
 * changed after it was last changed cannot be approved or sent on the old approvals. */
static void test_maker_review_migration_fails_open_items_closed(void)
{
    sqlite3 *db = open_before(18);
#define PAY_COLS "(id, workspace_id, amount, currency, type, priority, originating_account, " \
                 "beneficiary_id, effective_date, status, approvals_required, created_by, "    \
                 "version, created_at, updated_at, batch_id) VALUES "
#define BEN_ROW(id, updated)                                                                  \
    "('" id "', 'wsp_1', 'N', 'N', 'IBAN', 'DE89370400440532013000', NULL, NULL, NULL, NULL, " \
    "'EUR', 'DE', 'ordinary', NULL, NULL, NULL, 'active', 'unverified', 'approved', '{}', 1, " \
    "'2026-01-01T00:00:00.000Z', '" updated "')"
    CHECK(sqlite3_exec(
              db,
              "INSERT INTO workspaces (id, name, created_at, updated_at) VALUES "
              "('wsp_1', 'One', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z');"
              "INSERT INTO beneficiaries (id, workspace_id, name, account_holder_name, scheme, "
              "identification, bank_bic, bank_routing_number, bank_name, bank_country, currency, "
              "country, beneficiary_type, counterparty_id, external_id, email, status, "
              "verification_status, approval_status, metadata, version, created_at, updated_at) "
              "VALUES " BEN_ROW("ben_changed", "2026-01-05T00:00:00.000Z") ","
              BEN_ROW("ben_same", "2026-01-01T00:00:00.000Z") ";"
              "INSERT INTO service_accounts (id, workspace_id, name, role, status, version, "
              "created_by, created_at, updated_at) VALUES ('sa_1', 'wsp_1', 'bot', 'admin', "
              "'active', 1, 'usr_b', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');"
              "INSERT INTO service_account_tokens (id, service_account_id, workspace_id, scope, "
              "created_by, created_at) VALUES ('sat_1', 'sa_1', 'wsp_1', 'payments:write', "
              "'usr_a', '2026-01-01T00:00:00.000Z'), ('sat_late', 'sa_1', 'wsp_1', "
              "'payments:write', 'usr_late', '2026-01-09T00:00:00.000Z');"
              "INSERT INTO payment_batches (id, workspace_id, status, item_count, "
              "approvals_required, created_by, version, created_at, updated_at) VALUES "
              "('bat_1', 'wsp_1', 'approved', 1, 1, 'usr_a', 2, '2026-01-02T00:00:00.000Z', "
              "'2026-01-02T00:00:00.000Z');"
              "INSERT INTO batch_approvals (batch_id, user_id, decision, decided_at) VALUES "
              "('bat_1', 'sa_1', 'approved', '2026-01-02T00:00:00.000Z');"
              "INSERT INTO payments " PAY_COLS
              "('pay_sa_pending', 'wsp_1', 5, 'EUR', 'sepa', 'normal', 'acct', 'ben_same', "
              "'2026-02-01', 'pending_approval', 2, 'usr_c', 1, '2026-01-02T00:00:00.000Z', "
              "'2026-01-02T00:00:00.000Z', NULL),"
              "('pay_sa_approved', 'wsp_1', 5, 'EUR', 'sepa', 'normal', 'acct', 'ben_same', "
              "'2026-02-01', 'scheduled', 1, 'usr_c', 2, '2026-01-02T00:00:00.000Z', "
              "'2026-01-02T00:00:00.000Z', NULL),"
              "('pay_person', 'wsp_1', 5, 'EUR', 'sepa', 'normal', 'acct', 'ben_same', "
              "'2026-02-01', 'approved', 1, 'usr_c', 2, '2026-01-02T00:00:00.000Z', "
              "'2026-01-02T00:00:00.000Z', NULL),"
              "('pay_by_sa', 'wsp_1', 5, 'EUR', 'sepa', 'normal', 'acct', 'ben_same', "
              "'2026-02-01', 'pending_approval', 1, 'sa_1', 1, '2026-01-03T00:00:00.000Z', "
              "'2026-01-03T00:00:00.000Z', NULL),"
              "('pay_ben_changed', 'wsp_1', 5, 'EUR', 'sepa', 'normal', 'acct', 'ben_changed', "
              "'2026-02-01', 'approved', 0, 'usr_c', 1, '2026-01-02T00:00:00.000Z', "
              "'2026-01-02T00:00:00.000Z', NULL),"
              "('pay_item', 'wsp_1', 5, 'EUR', 'sepa', 'normal', 'acct', 'ben_same', "
              "'2026-02-01', 'approved', 1, 'usr_a', 2, '2026-01-02T00:00:00.000Z', "
              "'2026-01-02T00:00:00.000Z', 'bat_1');"
              "INSERT INTO payment_approvals (payment_id, round, user_id, decision, decided_at) "
              "VALUES ('pay_sa_pending', 1, 'sa_1', 'approved', '2026-01-02T00:00:00.000Z'),"
              "('pay_sa_pending', 1, 'usr_d', 'approved', '2026-01-02T00:00:00.000Z'),"
              "('pay_sa_approved', 1, 'sa_1', 'approved', '2026-01-02T00:00:00.000Z'),"
              "('pay_person', 1, 'usr_d', 'approved', '2026-01-02T00:00:00.000Z')",
              NULL, NULL, NULL) == DB_OK);
#undef PAY_COLS
#undef BEN_ROW
    sqlite3_close(db);

    char err[256] = "", buf[64];
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(storage_schema_version() == latest_version());
    CHECK(query_int("SELECT approval_round FROM payments WHERE id = 'pay_sa_pending'") == 2);
    CHECK_STR(query_text("SELECT status FROM payments WHERE id = 'pay_sa_pending'", buf,
                         sizeof buf),
              "pending_approval");
    CHECK(query_int("SELECT approval_round FROM payments WHERE id = 'pay_sa_approved'") == 2);
    CHECK_STR(query_text("SELECT status FROM payments WHERE id = 'pay_sa_approved'", buf,
                         sizeof buf),
              "pending_approval");
    CHECK(query_int("SELECT version FROM payments WHERE id = 'pay_sa_approved'") == 3);
    CHECK_STR(query_text("SELECT status FROM payments WHERE id = 'pay_person'", buf, sizeof buf),
              "approved");
    CHECK(query_int("SELECT approval_round FROM payments WHERE id = 'pay_person'") == 1);
    CHECK_STR(query_text("SELECT group_concat(person_id) FROM payment_makers WHERE "
                         "payment_id = 'pay_by_sa'", buf, sizeof buf),
              "usr_a");
    CHECK(query_int("SELECT beneficiary_round FROM payments WHERE id = 'pay_ben_changed'") == 0);
    CHECK(query_int("SELECT beneficiary_round FROM payments WHERE id = 'pay_person'") == 1);
    CHECK_STR(query_text("SELECT status FROM payment_batches WHERE id = 'bat_1'", buf,
                         sizeof buf),
              "pending_approval");
    CHECK(query_int("SELECT approval_round FROM payment_batches WHERE id = 'bat_1'") == 2);
    CHECK_STR(query_text("SELECT status FROM payments WHERE id = 'pay_item'", buf, sizeof buf),
              "pending_approval");
    done();
}

/* Migration 19 moves each account's last accepted TOTP step out of users (a table the
 * privilege cache watches) into mfa_steps, and supersedes the invitations still pending from
 * before they were e-mailed (no mail_id: their token went back to the inviter). */
static void test_identity_fixes_migration_moves_mfa_steps_and_supersedes_unmailed(void)
{
    sqlite3 *db = open_before(19);
    CHECK(sqlite3_exec(
              db,
              "INSERT INTO workspaces (id, name, created_at, updated_at) VALUES "
              "('wsp_1', 'One', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z');"
              "INSERT INTO users (id, email, email_norm, password_hash, created_at, updated_at, "
              "mfa_status, mfa_last_step) VALUES "
              "('usr_1', 'a@x.test', 'a@x.test', 'h', 'now', 'now', 'enabled', 59000123),"
              "('usr_2', 'b@x.test', 'b@x.test', 'h', 'now', 'now', 'none', 0);"
              "INSERT INTO invitations (id, workspace_id, email, email_norm, role, token_hash, "
              "status, invited_by, created_at, expires_at, mail_id) VALUES "
              "('inv_old', 'wsp_1', 'c@x.test', 'c@x.test', 'viewer', 't1', 'pending', 'usr_1', "
              "'now', 'later', NULL),"
              "('inv_mailed', 'wsp_1', 'd@x.test', 'd@x.test', 'viewer', 't2', 'pending', "
              "'usr_1', 'now', 'later', 'mail_1'),"
              "('inv_used', 'wsp_1', 'e@x.test', 'e@x.test', 'viewer', 't3', 'accepted', "
              "'usr_1', 'now', 'later', NULL)",
              NULL, NULL, NULL) == DB_OK);
    sqlite3_close(db);

    char err[256] = "", buf[64];
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(query_int("SELECT count(*) FROM schema_migrations WHERE version = 19") == 1);
    CHECK(query_int("SELECT last_step FROM mfa_steps WHERE user_id = 'usr_1'") == 59000123);
    CHECK(query_int("SELECT count(*) FROM mfa_steps") == 1);
    CHECK(query_int("SELECT count(*) FROM pragma_table_info('users') WHERE name = "
                    "'mfa_last_step'") == 0);
    CHECK_STR(query_text("SELECT status FROM invitations WHERE id = 'inv_old'", buf, sizeof buf),
              "superseded");
    CHECK_STR(query_text("SELECT status FROM invitations WHERE id = 'inv_mailed'", buf,
                         sizeof buf),
              "pending");
    CHECK_STR(query_text("SELECT status FROM invitations WHERE id = 'inv_used'", buf, sizeof buf),
              "accepted");
    done();
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
        UNIT_TEST(test_lean_writes_migration_keeps_every_event_and_audit_record),
        UNIT_TEST(test_maker_review_migration_fails_open_items_closed),
        UNIT_TEST(test_identity_fixes_migration_moves_mfa_steps_and_supersedes_unmailed),
        UNIT_TEST(test_checkpoint_restarts_the_wal_when_its_first_pass_falls_short),
        UNIT_TEST(test_a_checkpoint_answers_the_requests_of_the_commits_it_copied),
    };
    log_init(LOG_FORMAT_TEXT);
    return unit_run("storage", tests, sizeof tests / sizeof tests[0]);
}
