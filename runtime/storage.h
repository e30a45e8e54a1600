/* Storage: the interface handlers and runtime modules use, over one of two engines chosen at
 * start (--database): SQLite, embedded (a file path; storage_sqlite.c: WAL, synchronous=FULL,
 * the storage VFS, group commit), or PostgreSQL (a postgresql:// URL; storage_pg.c: libpq,
 * synchronous_commit=on, several instances on one database). Both: one connection per thread
 * with its own prepared-statement cache, versioned migrations applied at open. Handlers write
 * SQL in the portable subset (README.md: The portable SQL) through these few calls; a 2xx is only sent
 * once its commit is durable: storage_commit() succeeded, or the group-commit writer's
 * storage_commit_unsynced() and then storage_sync(). */
#ifndef RUNTIME_STORAGE_H
#define RUNTIME_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- statements: what handlers and runtime modules use --------------------------------------
 * Prepared statements from SQL text in the project's portable subset (README.md: The portable SQL), typed
 * binds (1-based) and column reads (0-based), row by row. No engine type crosses this line. */
struct db_stmt;

/* db_step's answers: a row, the end, or an error mapped to the few kinds code acts on. */
enum {
    DB_OK = 0,
    DB_ROW = 100,
    DB_DONE = 101,
    DB_ERR = -1,             /* anything else (logged with the statement by the caller) */
    DB_ERR_UNIQUE = -2,      /* a UNIQUE or PRIMARY KEY constraint refused the row */
    DB_ERR_FOREIGN_KEY = -3, /* a FOREIGN KEY constraint refused the change */
    DB_ERR_RETRY = -4,       /* busy or a serialization failure: the runtime runs it again */
};

/* A parenthesised list of DB_IN_LIST_MAX placeholders, so that one portable statement takes a
 * page of ids ("WHERE id IN " DB_IN_LIST): prepare it with storage_prepare_in, bind the ids,
 * then NULL to the unused places (an IN list's NULL matches nothing). A page holds at most 100
 * items. */
#define DB_IN_LIST_MAX 100
#define DB_Q10_ "?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
#define DB_Q50_ DB_Q10_ ", " DB_Q10_ ", " DB_Q10_ ", " DB_Q10_ ", " DB_Q10_
#define DB_IN_LIST "(" DB_Q50_ ", " DB_Q50_ ")"
/* Places of the lists storage_prepare_in prepares: a multiple of this, up to DB_IN_LIST_MAX. */
#define DB_IN_LIST_STEP 10

/* Cached prepared statement for this thread's connection, reset and bindings cleared.
 * NULL on failure (logged). Never freed by the caller. */
struct db_stmt *storage_prepare(const char *sql);
/* storage_prepare for a statement whose only placeholders are one DB_IN_LIST, cut down to
 * the fewest places that hold n ids (a multiple of DB_IN_LIST_STEP; *places receives it): a
 * list's every place costs the engine work whether bound or NULL (SQLite fills a temporary
 * index with them), so a page of 20 looked through 100 places cost five times its due. Bind
 * the ids to 1..n and NULL to n+1..*places. A few statements of a few sizes each: the texts
 * are kept for the process's life (past a bound, the full list is prepared). */
struct db_stmt *storage_prepare_in(const char *sql, size_t n, int *places);
/* Runs sql (storage_prepare_in) with ids[0..n) in its DB_IN_LIST and calls each(ctx, st, i)
 * for every row, i the index of the id in column id_col (rows of no id given are skipped);
 * each answers 0, or -1 to stop. The number of rows handed to each, or -1 on a failure
 * (logged as what) or when each stopped. */
long storage_rows_by_id(const char *sql, const char *const *ids, size_t n, int id_col,
                        int (*each)(void *ctx, struct db_stmt *st, size_t i), void *ctx,
                        const char *what);
/* A statement on a second connection of this thread, outside whatever transaction the thread
 * has open: it commits on its own when it runs (autocommit), whether the transaction then
 * commits or not, and waits on a row another transaction holds instead of failing on the
 * conflict. For state shared between instances that must count even when the request's own
 * writes are undone (a refused attempt still spends its quota: runtime/ratelimit.c). Only
 * engines shared by several instances have it (PostgreSQL); NULL elsewhere (logged). */
struct db_stmt *storage_prepare_outside(const char *sql);
/* Binds: text and blobs are not copied, so they must stay valid until db_reset (a NULL text
 * binds SQL NULL). 0 / -1. */
int db_bind_text(struct db_stmt *st, int i, const char *v);
int db_bind_int64(struct db_stmt *st, int i, int64_t v);
int db_bind_null(struct db_stmt *st, int i);
int db_bind_blob(struct db_stmt *st, int i, const void *p, size_t n);
/* The next row (DB_ROW), the end (DB_DONE) or an error (< 0). */
int db_step(struct db_stmt *st);
/* Columns of the current row. Text and blobs stay valid until the next step or reset; a NULL
 * column reads as NULL text, 0, or an empty blob. */
const char *db_column_text(struct db_stmt *st, int col);
/* The text column copied into a (it outlives the row), NULL for SQL NULL: the one copy
 * helper handlers use. */
struct arena;
const char *db_column_dup(struct arena *a, struct db_stmt *st, int col);
int64_t db_column_int64(struct db_stmt *st, int col);
int db_column_int(struct db_stmt *st, int col);
bool db_column_is_null(struct db_stmt *st, int col);
const void *db_column_blob(struct db_stmt *st, int col, size_t *len);
/* Ends the statement's run (also mid-iteration) so it can run again. */
void db_reset(struct db_stmt *st);
/* Rows changed by this thread's last INSERT, UPDATE or DELETE. */
int64_t storage_changes(void);
/* The last error on this thread's connection, for a log line. */
const char *storage_errmsg(void);

/* Opens where (a SQLite file path, created if needed, or a postgresql:// URL), applies the
 * pending migrations of every component (runtime/storage_migrate.h), one transaction each.
 * Returns 0, or -1 with a message in err (>= 256 bytes). Call once from main. */
int storage_open(const char *where, char *err, size_t errlen);
/* Whether where names a PostgreSQL database (postgresql:// or postgres://). */
bool storage_is_postgresql_url(const char *where);
/* "sqlite" or "postgresql" once open. */
const char *storage_engine_name(void);
/* Whether writes go through the group-commit writer (runtime/group_commit.h): one writer
 * connection for the process, as SQLite has; PostgreSQL takes writes on every connection. */
bool storage_batches_writes(void);
/* Closes every thread's connection; call after the server stopped. */
void storage_close(void);
/* One statement with v[0..n) bound as text (a NULL binds SQL NULL), on this thread's
 * connection, for the many one-line reads and writes: storage_exec_texts runs one that returns
 * no row (0 / -1); storage_query_text copies the first column of its first row into out
 * (outlen bytes; a NULL column gives ""; out NULL: only whether there is a row) and answers 1
 * a row, 0 none, -1 failure. Failures are logged with the statement. */
int storage_exec_texts(const char *sql, const char *const *v, int n);
int storage_query_text(const char *sql, const char *const *v, int n, char *out, size_t outlen);
/* A transaction on this thread's connection. SQLite: BEGIN IMMEDIATE when write (after taking
 * the process's first-come-first-served write lock, released by commit or rollback), else
 * BEGIN. PostgreSQL: SERIALIZABLE when write, else REPEATABLE READ (a snapshot). 0 / -1. */
int storage_begin(bool write);
/* storage_begin, for a write that would conflict with every other write begun with the same
 * key (NULL or "": none), such as two writes of one workspace, which both extend its audit
 * chain: on PostgreSQL it first waits until no transaction of any instance holds the key, so
 * such writes queue instead of failing each other; SQLite has one writer anyway. */
int storage_begin_serial(bool write, const char *key);
/* Until called again with NULL, every write transaction this thread begins with storage_begin
 * is begun as storage_begin_serial(true, key): the pipeline sets the request's workspace, so
 * that a handler that ends its transaction and begins another (a login recording a failure
 * before it hashes) still queues behind the workspace's other writes. key must outlive it. */
void storage_serialize_writes(const char *key);
int storage_commit(void);
/* How many commits this thread has made: a caller that compares it before and after code it
 * ran knows whether that code committed anything. */
uint64_t storage_commit_count(void);
/* COMMIT without waiting for its fsync (the group-commit writer): the commit is visible to
 * other connections at once, but durable only after storage_sync(*wal) returned 0 (*wal NULL:
 * nothing to sync, the commit was synced or wrote nothing). Whoever calls it must keep
 * anything from acting on the commit before then. 0 / -1 as storage_commit. */
int storage_commit_unsynced(void **wal);
/* fdatasync of a WAL handed out by storage_commit_unsynced, from any thread; it stays valid
 * until storage_close. 0, or -1 with errno. */
int storage_sync(void *wal);
void storage_rollback(void);
/* One request's part of a group-committed transaction (runtime/group_commit.h): a savepoint
 * inside the open transaction, ended by storage_savepoint_end(keep): keep = release its
 * writes into the transaction, else roll back to it. While it is open, begin, commit and
 * rollback are refused (logged; the savepoint is then rolled back and end returns -1).
 * storage_savepoint_end returns -1 also when the transaction itself is gone (SQLite rolled it
 * back on an I/O, disk-full or out-of-memory error): everything since BEGIN is then lost. */
int storage_savepoint(void);
int storage_savepoint_end(bool keep);
/* The same part without a savepoint: cheaper (SQLite then copies no page aside before the
 * request changes it), but its writes can be undone only with the whole transaction.
 * storage_unguarded_end(keep) returns 0 when nothing is left to undo (keep, or the request
 * changed no row), 1 when its writes must be undone (refused with rows changed, or the code
 * inside tried to end the transaction: the caller rolls back and runs the batch again in
 * savepoints), -1 when the transaction is gone, as for storage_savepoint_end. */
int storage_unguarded_begin(void);
int storage_unguarded_end(bool keep);
/* A part inside whatever is open (a transaction, a request's savepoint or unguarded part)
 * that is undone alone: a named SAVEPOINT, which both engines nest. storage_nested_end(name,
 * keep) releases it, after rolling back to it unless keep. name: a constant SQL identifier.
 * 0 / -1. */
int storage_nested_begin(const char *name);
int storage_nested_end(const char *name, bool keep);
/* This thread's commits need not be durable at once (the housekeeping thread's purges: losing
 * one to a power cut only means it runs again). Best effort. */
void storage_lazy_sync(void);
/* A background job's item, claimed inside its write transaction before anything is done for
 * it (a rail told, a message sent): 1 this transaction holds the row of table whose column is
 * id until it ends, 0 another transaction (another instance's worker) holds it: skip it,
 * -1 failure. table and column are the caller's constants. SQLite: always 1 (one writer);
 * PostgreSQL: SELECT ... FOR UPDATE SKIP LOCKED. Every job that acts outside the database
 * claims its item so that N instances run it once. */
int storage_claim(const char *table, const char *column, const char *id);
/* After a rollback or a failed commit: whether the transaction failed on a conflict with a
 * concurrent one (PostgreSQL's serialization failures and deadlocks), so that running the
 * request again may succeed. The runtime does (pipeline.c); handlers never retry. Asking
 * clears it. */
bool storage_should_retry(void);
/* A number that changes whenever another connection commits to the database (SQLite's
 * PRAGMA data_version), or -1 when the engine cannot tell (PostgreSQL): then assume it did. */
int64_t storage_data_version(void);
/* True while this thread has an open transaction. */
bool storage_in_tx(void);
/* True when this thread prepared a statement or began a transaction since the last call. */
bool storage_used(void);
/* The checkpoint thread (the server starts it after storage_open and stops it before
 * storage_close): connections opened from then on leave WAL checkpoints to it instead of
 * running them inside a commit. 0 / -1. */
int storage_checkpoints_start(void);
void storage_checkpoints_stop(void);
#ifdef TREASURY_TEST_HOOKS
/* True while a commit's request for the checkpoint thread is still unanswered (for tests). */
bool storage_checkpoint_pending(void);
#endif
/* One checkpoint on the calling thread, as the checkpoint thread runs it: a pass alongside
 * commits, then a pass under the write lock, after which the next write starts the WAL over.
 * between (tests only; NULL otherwise) runs between the two passes. */
void storage_checkpoint(void (*between)(void));
/* After every transaction of this process that committed a changed row of one of tables
 * (at most STORAGE_WATCH_MAX names), calls changed() on the committing thread. SQLite hears it
 * from its update hook (rowid tables only: it reports no row changes of WITHOUT ROWID tables);
 * PostgreSQL from the table an INSERT, UPDATE or DELETE names at its start, when it changed a
 * row, and tells the other instances through a generation row (runtime/instances.h). Register
 * once, before serving.
 * How the privilege cache hears of a role or membership change (runtime/privileges.h).
 * 0, or -1 when there are too many names. */
#define STORAGE_WATCH_MAX 16
int storage_watch(const char *const *tables, size_t n, void (*changed)(void));
/* Calls what storage_watch() registered: engines after a commit of this process that changed a
 * watched table, runtime/instances.c after hearing that another instance committed one. */
void storage_watched_changed(void);
/* How many migrations the database has, over every component (schema_versions); 0 when
 * storage is not open. */
int storage_schema_version(void);

#endif
