/* SQLite storage: one database file, WAL, synchronous=FULL, foreign keys, versioned migrations,
 * one connection per thread with a per-connection prepared-statement cache. Handlers write
 * portable SQL through these few calls; a 2xx is only sent after storage_commit() succeeded. */
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
/* BEGIN IMMEDIATE when write, else BEGIN. 0 / -1. */
int storage_begin(bool write);
int storage_commit(void);
void storage_rollback(void);
/* True while this thread has an open transaction. */
bool storage_in_tx(void);
/* Highest applied migration version, for tests and `--version`. */
int storage_schema_version(void);

#endif
