/* The storage interface (storage.h) over the engine chosen when it opens: a file path opens
 * SQLite (storage_sqlite.c), a postgresql:// URL PostgreSQL (storage_pg.c). Every call goes to
 * the engine; what is the same for both (the migrations, storage_migrate.c; the one-statement
 * helpers, storage_used, the watched tables) is here. */
#include "runtime/storage.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/log.h"
#include "runtime/storage_engine.h"
#include "runtime/storage_migrate.h"

static const struct storage_engine *E; /* set by storage_open, for the process's life */
static int migrations_applied;         /* storage_schema_version() */
/* A statement prepared or a transaction begun on this thread since storage_used() last asked. */
static _Thread_local bool used;
/* storage_watch: the tables, and what to call after a commit that changed one. */
static const char *watched[STORAGE_WATCH_MAX];
static size_t n_watched;
static void (*watched_changed)(void);

bool storage_is_postgresql_url(const char *where)
{
    return strncmp(where, "postgresql://", 13) == 0 || strncmp(where, "postgres://", 11) == 0;
}

int storage_open(const char *where, char *err, size_t errlen)
{
    if (E) {
        snprintf(err, errlen, "storage is already open");
        return -1;
    }
    const struct storage_engine *e =
        storage_is_postgresql_url(where) ? &storage_engine_pg : &storage_engine_sqlite;
    if (e->open(where, err, errlen) != 0)
        return -1;
    E = e;
    if (migrate_run(e, migrate_components, migrate_components_count, &migrations_applied, err,
                    errlen) != 0) {
        storage_close();
        return -1;
    }
    return 0;
}

void storage_close(void)
{
    if (E)
        E->close();
    E = NULL;
    migrations_applied = 0;
}

const char *storage_engine_name(void)
{
    return E ? E->name : "none";
}

bool storage_batches_writes(void)
{
    return E == &storage_engine_sqlite;
}

struct db_stmt *storage_prepare(const char *sql)
{
    used = true;
    if (!E) {
        log_error("storage: used before storage_open() or after storage_close()");
        return NULL;
    }
    return E->prepare(sql);
}

/* storage_prepare_in's texts: (statement, places) -> the statement with that many places.
 * Process-wide, so that every thread's statement cache sees the same few texts. */
#define IN_TEXTS_MAX 64
struct in_text {
    char *sql; /* a copy of the statement as given */
    int places;
    char *text;
};
static struct in_text in_texts[IN_TEXTS_MAX];
static size_t n_in_texts;
static pthread_mutex_t in_texts_lock = PTHREAD_MUTEX_INITIALIZER;

/* sql with its DB_IN_LIST (at list, of the statement's text) cut to places places; malloc'd. */
static char *in_text(const char *sql, const char *list, int places)
{
    size_t head = (size_t)(list - sql), tail = strlen(list + sizeof DB_IN_LIST - 1);
    char *t = malloc(head + 3 * (size_t)places + tail + 1);
    if (!t)
        return NULL;
    char *o = t;
    memcpy(o, sql, head);
    o += head;
    *o++ = '(';
    for (int i = 0; i < places; i++) {
        memcpy(o, i ? ", ?" : "?", i ? 3 : 1);
        o += i ? 3 : 1;
    }
    *o++ = ')';
    memcpy(o, list + sizeof DB_IN_LIST - 1, tail + 1);
    return t;
}

struct db_stmt *storage_prepare_in(const char *sql, size_t n, int *places)
{
    int want = n == 0 ? DB_IN_LIST_STEP
                      : (int)((n + DB_IN_LIST_STEP - 1) / DB_IN_LIST_STEP * DB_IN_LIST_STEP);
    const char *list = strstr(sql, DB_IN_LIST);
    *places = DB_IN_LIST_MAX;
    if (!list || want >= DB_IN_LIST_MAX)
        return storage_prepare(sql);
    const char *text = NULL;
    pthread_mutex_lock(&in_texts_lock);
    for (size_t i = 0; i < n_in_texts && !text; i++)
        if (in_texts[i].places == want && strcmp(in_texts[i].sql, sql) == 0)
            text = in_texts[i].text;
    if (!text && n_in_texts < IN_TEXTS_MAX) {
        char *copy = strdup(sql), *t = in_text(sql, list, want);
        if (copy && t) {
            in_texts[n_in_texts++] = (struct in_text){copy, want, t};
            text = t;
        } else {
            free(copy);
            free(t);
        }
    }
    pthread_mutex_unlock(&in_texts_lock);
    if (!text)
        return storage_prepare(sql); /* past the bound: the full list still answers right */
    *places = want;
    return storage_prepare(text);
}

long storage_rows_by_id(const char *sql, const char *const *ids, size_t n, int id_col,
                        int (*each)(void *ctx, struct db_stmt *st, size_t i), void *ctx,
                        const char *what)
{
    if (n == 0)
        return 0;
    if (n > DB_IN_LIST_MAX) {
        log_error("%s: %zu ids, more than DB_IN_LIST_MAX", what, n);
        return -1;
    }
    int places = 0;
    struct db_stmt *st = storage_prepare_in(sql, n, &places);
    if (!st)
        return -1;
    for (int i = 0; i < places; i++) {
        if ((size_t)i < n)
            db_bind_text(st, i + 1, ids[i]);
        else
            db_bind_null(st, i + 1);
    }
    long handed = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *id = db_column_text(st, id_col);
        for (size_t i = 0; id && i < n; i++)
            if (strcmp(ids[i], id) == 0) {
                if (each(ctx, st, i) != 0) {
                    db_reset(st);
                    return -1;
                }
                handed++;
                break;
            }
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("%s failed: %s", what, storage_errmsg());
        return -1;
    }
    return handed;
}

struct db_stmt *storage_prepare_outside(const char *sql)
{
    used = true;
    if (!E || !E->prepare_outside) {
        log_error("storage: no statements outside the transaction on this engine");
        return NULL;
    }
    return E->prepare_outside(sql);
}

int db_bind_text(struct db_stmt *st, int i, const char *v)
{
    return E->bind_text(st, i, v);
}

int db_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    return E->bind_int64(st, i, v);
}

int db_bind_null(struct db_stmt *st, int i)
{
    return E->bind_null(st, i);
}

int db_bind_blob(struct db_stmt *st, int i, const void *p, size_t n)
{
    return E->bind_blob(st, i, p, n);
}

int db_step(struct db_stmt *st)
{
    return E->step(st);
}

const char *db_column_text(struct db_stmt *st, int col)
{
    return E->column_text(st, col);
}

const char *db_column_dup(struct arena *a, struct db_stmt *st, int col)
{
    const char *t = E->column_text(st, col);
    return t ? arena_strdup(a, t) : NULL;
}

int64_t db_column_int64(struct db_stmt *st, int col)
{
    return E->column_int64(st, col);
}

int db_column_int(struct db_stmt *st, int col)
{
    return (int)E->column_int64(st, col);
}

bool db_column_is_null(struct db_stmt *st, int col)
{
    return E->column_is_null(st, col);
}

const void *db_column_blob(struct db_stmt *st, int col, size_t *len)
{
    return E->column_blob(st, col, len);
}

void db_reset(struct db_stmt *st)
{
    E->reset(st);
}

int64_t storage_changes(void)
{
    return E ? E->changes() : 0;
}

const char *storage_errmsg(void)
{
    return E ? E->errmsg() : "storage is not open";
}

/* storage_serialize_writes: the key of the request this thread runs, or NULL. */
static _Thread_local const char *serial_key;

void storage_serialize_writes(const char *key)
{
    serial_key = key && *key ? key : NULL;
}

int storage_begin(bool write)
{
    used = true;
    if (!E) {
        log_error("storage: used before storage_open() or after storage_close()");
        return -1;
    }
    return write && serial_key ? E->begin_serial(write, serial_key) : E->begin(write);
}

int storage_begin_serial(bool write, const char *key)
{
    used = true;
    if (!E) {
        log_error("storage: used before storage_open() or after storage_close()");
        return -1;
    }
    return E->begin_serial(write, key);
}

/* Commits this thread made (storage_commit_count). */
static _Thread_local uint64_t commits;

int storage_commit(void)
{
    int rc = E ? E->commit() : -1;
    if (rc == 0)
        commits++;
    return rc;
}

uint64_t storage_commit_count(void)
{
    return commits;
}

void storage_rollback(void)
{
    if (E)
        E->rollback();
}

bool storage_in_tx(void)
{
    return E && E->in_tx();
}

void storage_lazy_sync(void)
{
    if (E)
        E->lazy_sync();
}

int storage_schema_version(void)
{
    return migrations_applied;
}

int storage_savepoint(void)
{
    return E ? E->savepoint() : -1;
}

int storage_savepoint_end(bool keep)
{
    return E ? E->savepoint_end(keep) : -1;
}

int storage_nested_begin(const char *name)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SAVEPOINT %s", name);
    return storage_exec_texts(sql, NULL, 0);
}

int storage_nested_end(const char *name, bool keep)
{
    char sql[96];
    snprintf(sql, sizeof sql, "ROLLBACK TO SAVEPOINT %s", name);
    if (!keep && storage_exec_texts(sql, NULL, 0) != 0)
        return -1;
    snprintf(sql, sizeof sql, "RELEASE SAVEPOINT %s", name);
    return storage_exec_texts(sql, NULL, 0);
}

int storage_unguarded_begin(void)
{
    return E ? E->unguarded_begin() : -1;
}

int storage_unguarded_end(bool keep)
{
    return E ? E->unguarded_end(keep) : -1;
}

int storage_claim(const char *table, const char *column, const char *id)
{
    return E ? E->claim(table, column, id) : -1;
}

int64_t storage_data_version(void)
{
    return E ? E->data_version() : -1;
}

bool storage_should_retry(void)
{
    return E && E->should_retry();
}

bool storage_used(void)
{
    bool was = used;
    used = false;
    return was;
}

/* The statement of sql with v bound, or NULL (logged). */
static struct db_stmt *prepare_texts(const char *sql, const char *const *v, int n)
{
    struct db_stmt *st = storage_prepare(sql);
    for (int i = 0; st && i < n; i++) {
        if (db_bind_text(st, i + 1, v[i]) != 0) {
            log_error("storage: binding failed for: %s", sql);
            db_reset(st);
            return NULL;
        }
    }
    return st;
}

int storage_exec_texts(const char *sql, const char *const *v, int n)
{
    struct db_stmt *st = prepare_texts(sql, v, n);
    if (!st)
        return -1;
    int rc = db_step(st);
    if (rc != DB_DONE)
        log_error("storage: %s (code %d) for: %s", storage_errmsg(), rc, sql);
    db_reset(st);
    return rc == DB_DONE ? 0 : -1;
}

int storage_query_text(const char *sql, const char *const *v, int n, char *out, size_t outlen)
{
    struct db_stmt *st = prepare_texts(sql, v, n);
    if (!st)
        return -1;
    int rc = db_step(st);
    if (rc == DB_ROW && out) {
        const char *t = db_column_text(st, 0);
        snprintf(out, outlen, "%s", t ? t : "");
    }
    if (rc != DB_ROW && rc != DB_DONE)
        log_error("storage: %s (code %d) for: %s", storage_errmsg(), rc, sql);
    db_reset(st);
    return rc == DB_ROW ? 1 : rc == DB_DONE ? 0 : -1;
}

int storage_watch(const char *const *tables, size_t n, void (*changed)(void))
{
    if (n > STORAGE_WATCH_MAX)
        return -1;
    for (size_t i = 0; i < n; i++)
        watched[i] = tables[i];
    n_watched = n;
    watched_changed = changed;
    return 0;
}

bool storage_is_watched(const char *table)
{
    for (size_t i = 0; i < n_watched; i++) {
        if (strcmp(table, watched[i]) == 0)
            return true;
    }
    return false;
}

void storage_watched_changed(void)
{
    if (watched_changed)
        watched_changed();
}
