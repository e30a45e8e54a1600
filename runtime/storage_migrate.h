/* The schema as components, each with its own ordered migrations: the runtime's own tables
 * (runtime/sql/) first, then each API's (handlers/sql/<api>/, in the order handlers/sql/ORDER
 * gives). codegen/embed_sql.py embeds the .sql files into the build (migrate_components, a C
 * file under the build directory); storage_open() runs migrate_run() once the engine is
 * connected (runtime/storage_migrate.c; README.md: Changing the schema). Applied migrations
 * are recorded per component in schema_versions. */
#ifndef RUNTIME_STORAGE_MIGRATE_H
#define RUNTIME_STORAGE_MIGRATE_H

#include <stddef.h>

/* Which text of a migration an engine runs: its .sqlite.sql or .pg.sql file (both the same
 * text when the component has one .sql file for every engine). */
enum migrate_dialect { MIGRATE_SQLITE, MIGRATE_PG, MIGRATE_DIALECTS };

struct migration {
    int version;                       /* 1, 2, 3, ... within its component */
    const char *name;                  /* from the file name; recorded with the version */
    const char *sql[MIGRATE_DIALECTS]; /* one or more statements */
};

struct migrate_component {
    const char *name; /* "runtime", or the API's folder under handlers/sql/ */
    const struct migration *migrations;
    size_t count;
};

/* Generated (codegen/embed_sql.py): every component, the runtime's first. */
extern const struct migrate_component migrate_components[];
extern const size_t migrate_components_count;

struct storage_engine;

/* Applies the pending migrations of components (n of them) through engine e, just connected
 * (storage_open), each in its own write transaction under the engine's schema lock, and adopts
 * a database made by the single migration list of earlier releases. Refuses a database with a
 * migration this build does not know or names differently. *applied: how many migrations the
 * database has now, over every component. 0 / -1 + err. */
int migrate_run(const struct storage_engine *e, const struct migrate_component *components,
                size_t n, int *applied, char *err, size_t errlen);

#endif
