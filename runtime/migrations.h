/* The database schema as an ordered list of versioned migrations; storage_open() applies the
 * pending ones at start, each in its own transaction, and records them in schema_migrations. */
#ifndef RUNTIME_MIGRATIONS_H
#define RUNTIME_MIGRATIONS_H

#include <stddef.h>

struct migration {
    int version;      /* strictly increasing from 1 */
    const char *name; /* recorded with the version; a mismatch means a foreign database */
    const char *sql;  /* one or more statements, run with sqlite3_exec() */
};

extern const struct migration migrations_list[];
extern const size_t migrations_count;

#endif
