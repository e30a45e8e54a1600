/* The SQLite engine's own handle, for code that is about SQLite itself and nothing else: the
 * engine's unit tests. Everything else goes through runtime/storage.h. */
#ifndef RUNTIME_STORAGE_SQLITE_H
#define RUNTIME_STORAGE_SQLITE_H

#include <sqlite3.h>

/* This thread's connection, opened on first use. NULL on failure (logged). */
sqlite3 *storage_sqlite_db(void);

#endif
