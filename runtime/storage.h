/* SQLite storage: one database file, WAL, synchronous=FULL, foreign keys, versioned migrations,
 * one connection per thread with a per-connection prepared-statement cache, opened through the
 * storage VFS (storage_vfs.h: a commit's WAL frames in one write). Handlers write portable SQL
 * through these few calls; a 2xx is only sent once its commit is durable: storage_commit()
 * succeeded, or the group-commit writer's storage_commit_unsynced() and then storage_sync(). */
#ifndef RUNTIME_STORAGE_H
#define RUNTIME_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sqlite3.h>

/* Opens (creating if needed) path, applies pending migrations in one transaction each.
 * Returns 0, or -1 with a message in err (>= 256 bytes). Call once from main. */
int storage_open(const char *path, char *err, size_t errlen);
/* Closes every thread's connection; call after the server stopped. */
void storage_close(void);
/* This thread's connection, opened on first use. NULL on failure (logged). */
sqlite3 *storage_db(void);
/* Cached prepared statement for this thread's connection, reset and bindings cleared.
 * NULL on failure (logged). Do not finalize it. */
sqlite3_stmt *storage_prepare(const char *sql);
/* One statement with v[0..n) bound as text (a NULL binds SQL NULL), on this thread's
 * connection, for the many one-line reads and writes: storage_exec_texts runs one that returns
 * no row (0 / -1); storage_query_text copies the first column of its first row into out
 * (outlen bytes; a NULL column gives ""; out NULL: only whether there is a row) and answers 1
 * a row, 0 none, -1 failure. Failures are logged with the statement. */
int storage_exec_texts(const char *sql, const char *const *v, int n);
int storage_query_text(const char *sql, const char *const *v, int n, char *out, size_t outlen);
/* BEGIN IMMEDIATE when write (after taking the process's first-come-first-served write lock,
 * released by commit or rollback), else BEGIN. 0 / -1. */
int storage_begin(bool write);
int storage_commit(void);
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
 * (at most STORAGE_WATCH_MAX names; rowid tables: SQLite reports no row changes of WITHOUT
 * ROWID tables), calls changed() on the committing thread. Register once, before serving.
 * How the privilege cache hears of a role or membership change (runtime/privileges.h).
 * 0, or -1 when there are too many names. */
#define STORAGE_WATCH_MAX 16
int storage_watch(const char *const *tables, size_t n, void (*changed)(void));
/* Highest applied migration version, for tests and `--version`. */
int storage_schema_version(void);

#endif
