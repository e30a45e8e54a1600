/* What an engine behind runtime/storage.h provides (storage_sqlite.c, storage_pg.c): the
 * statement interface and transactions, on a connection per thread that the engine opens on
 * first use. Only runtime/storage*.c include this. storage.c picks the engine from the
 * --database setting and forwards every call of the interface to it. */
#ifndef RUNTIME_STORAGE_ENGINE_H
#define RUNTIME_STORAGE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/storage.h"

struct storage_engine {
    const char *name; /* "sqlite", "postgresql" */
    int dialect;      /* enum migrate_dialect: which text of a migration it runs */
    /* Connects to where (a file path, a URL) and sets the connection up; storage_open() then
     * applies the pending migrations (storage_migrate.c). 0 / -1 + err. */
    int (*open)(const char *where, char *err, size_t errlen);
    void (*close)(void);
    struct db_stmt *(*prepare)(const char *sql);
    struct db_stmt *(*prepare_outside)(const char *sql); /* NULL: the engine has none */
    int (*bind_text)(struct db_stmt *st, int i, const char *v);
    int (*bind_int64)(struct db_stmt *st, int i, int64_t v);
    int (*bind_null)(struct db_stmt *st, int i);
    int (*bind_blob)(struct db_stmt *st, int i, const void *p, size_t n);
    int (*step)(struct db_stmt *st);
    const char *(*column_text)(struct db_stmt *st, int col);
    int64_t (*column_int64)(struct db_stmt *st, int col);
    bool (*column_is_null)(struct db_stmt *st, int col);
    const void *(*column_blob)(struct db_stmt *st, int col, size_t *len);
    void (*reset)(struct db_stmt *st);
    int64_t (*changes)(void);
    const char *(*errmsg)(void);
    int (*begin)(bool write);
    int (*begin_serial)(bool write, const char *key);
    int (*commit)(void);
    void (*rollback)(void);
    bool (*in_tx)(void);
    void (*lazy_sync)(void);
    /* storage_data_version (storage.h). */
    int64_t (*data_version)(void);
    /* A request's part of an open write transaction (storage.h: storage_savepoint...). */
    int (*savepoint)(void);
    int (*savepoint_end)(bool keep);
    int (*unguarded_begin)(void);
    int (*unguarded_end)(bool keep);
    /* storage_claim: 1 claimed, 0 another transaction holds it, -1 failure. */
    int (*claim)(const char *table, const char *column, const char *id);
    /* For the migration runner (storage_migrate.c). A write transaction (ended by commit or
     * rollback) that holds the engine's schema lock until it ends, taken before the
     * transaction reads anything, so what it reads next includes every migration committed by
     * another process that held the lock before. 0 / -1. */
    int (*begin_migration)(void);
    /* Runs sql, one or more statements without parameters, in the open transaction. 0 / -1 +
     * err. */
    int (*exec_script)(const char *sql, char *err, size_t errlen);
    /* Whether the database has a table of that name: 1 / 0, or -1 on failure. */
    int (*has_table)(const char *name);
    /* Whether the transaction last ended on this thread failed on a conflict with another
     * (serialization failure, deadlock): running it again may succeed. Asking clears it. */
    bool (*should_retry)(void);
};

extern const struct storage_engine storage_engine_sqlite;
extern const struct storage_engine storage_engine_pg;

/* For engines: whether table is one storage_watch() registered (storage_watched_changed() is
 * then theirs to call after a commit that changed one). */
bool storage_is_watched(const char *table);

#endif
