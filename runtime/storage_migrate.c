/* The migration runner (storage_migrate.h), the same for every engine: it speaks the storage
 * interface plus three engine operations (a write transaction holding the schema lock, a
 * multi-statement script, whether a table exists).
 *
 * schema_versions records every applied migration as (component, version, name). Each
 * migration runs in its own write transaction, and whether it is applied is read again inside
 * that transaction, under the lock: two processes starting at once (a server and an admin
 * command, or N instances on one PostgreSQL) neither apply one twice nor see one half done. */
#include "runtime/storage_migrate.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/storage.h"
#include "runtime/storage_engine.h"

/* BIGINT: an integer column of the portable subset (INTEGER affinity in SQLite). */
static const char create_versions_sql[] = "CREATE TABLE schema_versions (\n"
                                          "    component TEXT NOT NULL,\n"
                                          "    version BIGINT NOT NULL,\n"
                                          "    name TEXT NOT NULL,\n"
                                          "    applied_at TEXT NOT NULL,\n"
                                          "    PRIMARY KEY (component, version)\n"
                                          ")";

/* Databases made before components had migrations of their own hold one list, recorded in
 * schema_migrations (version, name). Its last release left them at version 19 with these
 * names; every component's 0001_baseline is exactly that schema, so such a database is adopted
 * by recording the baselines as applied. Only SQLite databases were ever made this way. */
static const char *const legacy_names[] = {
    "initial",
    "ratelimit_idempotency",
    "sessions_refresh",
    "roles",
    "service_accounts",
    "invitations",
    "mfa",
    "payments",
    "settlement",
    "batches",
    "events_seq",
    "oauth",
    "lean_writes",
    "oauth_origins",
    "maker_checker",
    "identity",
    "account_security",
    "maker_review",
    "identity_fixes",
};
#define LEGACY_COUNT ((int)(sizeof legacy_names / sizeof legacy_names[0]))
/* The first migration of a component that a legacy database already has. A component added
 * later names its first migration otherwise, and it is applied to an adopted database. */
#define BASELINE_NAME "baseline"

static int fail(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s: %s", what, storage_errmsg());
    return -1;
}

static const struct migrate_component *find_component(const struct migrate_component *c, size_t n,
                                                      const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(c[i].name, name) == 0)
            return &c[i];
    }
    return NULL;
}

/* The embedded list is generated and checked by codegen/embed_sql.py; this guards the runner
 * against a list put together by hand (tests). */
static int check_list(const struct migrate_component *c, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        if (!c[i].name || !*c[i].name || find_component(c, i, c[i].name)) {
            snprintf(err, errlen, "migration list is malformed at component %zu", i);
            return -1;
        }
        for (size_t j = 0; j < c[i].count; j++) {
            const struct migration *m = &c[i].migrations[j];
            if (m->version != (int)j + 1 || !m->name || !*m->name || !m->sql[MIGRATE_SQLITE] ||
                !m->sql[MIGRATE_PG]) {
                snprintf(err, errlen, "migration list of %s is malformed at entry %zu", c[i].name,
                         j);
                return -1;
            }
        }
    }
    return 0;
}

/* Refuses a database written by a newer build, or one whose history differs from ours. Inside
 * a transaction. */
static int check_applied(const struct migrate_component *c, size_t n, char *err, size_t errlen)
{
    struct db_stmt *st = storage_prepare("SELECT component, version, name FROM schema_versions "
                                         "ORDER BY component, version");
    if (!st)
        return fail(err, errlen, "reading schema_versions");
    int rc, ret = 0;
    while (ret == 0 && (rc = db_step(st)) == DB_ROW) {
        const char *comp = db_column_text(st, 0);
        int64_t v = db_column_int64(st, 1);
        const char *name = db_column_text(st, 2);
        const struct migrate_component *k = find_component(c, n, comp ? comp : "");
        if (!k || v < 1 || (uint64_t)v > k->count) {
            snprintf(err, errlen,
                     "the database has migration %lld of %s, which this build does not know "
                     "(its newest of %s is %zu); run a newer treasury-server",
                     (long long)v, comp ? comp : "", comp ? comp : "", k ? k->count : 0);
            ret = -1;
        } else if (!name || strcmp(name, k->migrations[v - 1].name) != 0) {
            snprintf(err, errlen,
                     "database migration %s %lld is \"%s\" but this build's is \"%s\"; "
                     "the database belongs to a different build",
                     comp, (long long)v, name ? name : "", k->migrations[v - 1].name);
            ret = -1;
        }
    }
    if (ret == 0 && rc != DB_DONE)
        ret = fail(err, errlen, "reading schema_versions");
    db_reset(st);
    return ret;
}

static int record(const char *component, const struct migration *m, char *err, size_t errlen)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO schema_versions (component, version, name, applied_at) VALUES (?, ?, ?, ?)");
    if (!st)
        return fail(err, errlen, "recording the migration");
    db_bind_text(st, 1, component);
    db_bind_int64(st, 2, m->version);
    db_bind_text(st, 3, m->name);
    db_bind_text(st, 4, now);
    int rc = db_step(st);
    int ret = rc == DB_DONE ? 0 : fail(err, errlen, "recording the migration");
    db_reset(st);
    return ret;
}

/* A database of the single list: adopted at version 19, refused at any other. Inside the
 * transaction that has just created schema_versions. */
static int adopt_legacy(const struct storage_engine *e, const struct migrate_component *c, size_t n,
                        char *err, size_t errlen)
{
    struct db_stmt *st = storage_prepare("SELECT version, name FROM schema_migrations "
                                         "ORDER BY version");
    if (!st)
        return fail(err, errlen, "reading schema_migrations");
    int rc, count = 0, ret = 0;
    while (ret == 0 && (rc = db_step(st)) == DB_ROW) {
        int64_t v = db_column_int64(st, 0);
        const char *name = db_column_text(st, 1);
        if (v != count + 1 || v > LEGACY_COUNT || !name || strcmp(name, legacy_names[count])) {
            snprintf(err, errlen,
                     "the database's schema_migrations has migration %lld \"%s\", which no "
                     "release of treasury-server made; the database belongs to a different build",
                     (long long)v, name ? name : "");
            ret = -1;
        }
        count++;
    }
    if (ret == 0 && rc != DB_DONE)
        ret = fail(err, errlen, "reading schema_migrations");
    db_reset(st);
    if (ret != 0)
        return -1;
    if (count < LEGACY_COUNT) {
        snprintf(err, errlen,
                 "the database is at schema version %d of the previous releases' single "
                 "migration list; this build adopts only version %d: start the previous release "
                 "once to bring it to version %d, then this one",
                 count, LEGACY_COUNT, LEGACY_COUNT);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (c[i].count > 0 && strcmp(c[i].migrations[0].name, BASELINE_NAME) == 0 &&
            record(c[i].name, &c[i].migrations[0], err, errlen) != 0)
            return -1;
    }
    /* Gone, so that a previous release refuses the database instead of taking it for one of
     * its own (it would fail creating its first table) once migrations it does not know have
     * changed the schema. */
    if (e->exec_script("DROP TABLE schema_migrations", err, errlen) != 0)
        return -1;
    log_info("storage: adopted a database of the previous releases' migration list (version %d) "
             "as every component's baseline",
             LEGACY_COUNT);
    return 0;
}

/* schema_versions, created (and a legacy database adopted) under the schema lock. */
static int prepare_versions(const struct storage_engine *e, const struct migrate_component *c,
                            size_t n, char *err, size_t errlen)
{
    if (e->begin_migration() != 0)
        return fail(err, errlen, "starting the migration transaction");
    int has = e->has_table("schema_versions");
    int legacy = has == 0 ? e->has_table("schema_migrations") : 0;
    if (has < 0 || legacy < 0) {
        fail(err, errlen, "reading the catalogue");
        goto rollback;
    }
    if (has == 0 && (e->exec_script(create_versions_sql, err, errlen) != 0 ||
                     (legacy && adopt_legacy(e, c, n, err, errlen) != 0)))
        goto rollback;
    if (storage_commit() != 0)
        return fail(err, errlen, "creating schema_versions");
    return 0;
rollback:
    storage_rollback();
    return -1;
}

static int is_applied(const char *component, int version, bool *applied, char *err, size_t errlen)
{
    struct db_stmt *st =
        storage_prepare("SELECT 1 FROM schema_versions WHERE component = ? AND version = ?");
    if (!st)
        return fail(err, errlen, "reading schema_versions");
    db_bind_text(st, 1, component);
    db_bind_int64(st, 2, version);
    int rc = db_step(st);
    *applied = rc == DB_ROW;
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : fail(err, errlen, "reading schema_versions");
}

static int apply_one(const struct storage_engine *e, const struct migrate_component *c, size_t n,
                     const struct migrate_component *k, const struct migration *m, char *err,
                     size_t errlen)
{
    char why[512] = "";
    bool applied = false;
    if (e->begin_migration() != 0)
        return fail(err, errlen, "starting the migration transaction");
    if (check_applied(c, n, err, errlen) != 0 ||
        is_applied(k->name, m->version, &applied, err, errlen) != 0) {
        storage_rollback();
        return -1;
    }
    if (applied) {
        storage_rollback();
        return 0;
    }
    if (e->exec_script(m->sql[e->dialect], why, sizeof why) != 0 ||
        record(k->name, m, why, sizeof why) != 0) {
        storage_rollback();
        snprintf(err, errlen, "migration %s %d (%s) failed: %s", k->name, m->version, m->name, why);
        return -1;
    }
    if (storage_commit() != 0) {
        snprintf(err, errlen, "migration %s %d (%s) failed: %s", k->name, m->version, m->name,
                 storage_errmsg());
        return -1;
    }
    log_info("storage: applied migration %s %d (%s)", k->name, m->version, m->name);
    return 0;
}

int migrate_run(const struct storage_engine *e, const struct migrate_component *c, size_t n,
                int *applied, char *err, size_t errlen)
{
    if (check_list(c, n, err, errlen) != 0 || prepare_versions(e, c, n, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < c[i].count; j++) {
            if (apply_one(e, c, n, &c[i], &c[i].migrations[j], err, errlen) != 0)
                return -1;
        }
    }
    /* Also with nothing to apply, so that every build refuses a newer database. */
    if (storage_begin(false) != 0)
        return fail(err, errlen, "starting a read transaction");
    char count[32] = "0";
    int rc = check_applied(c, n, err, errlen);
    if (rc == 0 && storage_query_text("SELECT count(*) FROM schema_versions", NULL, 0, count,
                                      sizeof count) != 1)
        rc = fail(err, errlen, "reading schema_versions");
    storage_commit();
    if (rc != 0)
        return -1;
    *applied = (int)strtol(count, NULL, 10);
    return 0;
}
