/* The SQLite engine (storage_engine.h): the database file, one lazily opened connection per
 * thread with its own prepared-statement cache, transactions, what the migration runner needs
 * (storage_migrate.c), and what only a one-writer engine has: the group-commit writer's
 * savepoints and deferred syncs, and WAL checkpoints on a thread of their own. */
#include "runtime/storage_sqlite.h"

#include <ctype.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "runtime/log.h"
#include "runtime/storage_engine.h"
#include "runtime/storage_migrate.h"
#include "runtime/storage_vfs.h"

#define BUSY_TIMEOUT_MS 5000
#define CACHE_INITIAL_SLOTS 64 /* power of two; grows at half full */
#define SQL_EXCERPT 100

struct cached {
    char *sql; /* own copy: a caller may build SQL in a buffer it later reuses */
    uint64_t hash;
    sqlite3_stmt *stmt;
};

/* storage_prepare's first look: by the address of the caller's SQL text (a string literal
 * nearly always), confirmed by comparing the text, before hashing it. */
#define MEMO_BITS 6
#define MEMO_SLOTS (1 << MEMO_BITS)
struct memo {
    const char *key; /* the caller's pointer */
    const char *sql; /* the cache's own copy of the text */
    sqlite3_stmt *stmt;
};

struct conn {
    sqlite3 *db;
    struct cached *slots; /* open addressing, linear probing */
    size_t nslots, used;
    struct memo memo[MEMO_SLOTS];
    struct conn *next;
};

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn *conns; /* every thread's connection, so storage_close() reaches them all */
static char *db_path;
/* Bumped by storage_close(): a thread-local connection from an earlier open is stale and must
 * not be touched (it has been freed), so it is recognised without dereferencing it. */
static atomic_uint generation;

static _Thread_local struct conn *my_conn;
static _Thread_local unsigned my_generation;

/* The process's write lock, first come first served (a ticket lock): every write transaction
 * of this process takes it before BEGIN IMMEDIATE, so our own threads queue here in order
 * instead of polling SQLite's lock through the busy handler (which sleeps 1, 2, 5, 10... ms
 * and would starve a login behind a stream of group-commit batches). Other processes (admin
 * commands) still meet SQLite's lock and the busy timeout. */
static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t write_cv = PTHREAD_COND_INITIALIZER;
static unsigned long write_next, write_serving;
static _Thread_local bool write_held;
/* An open request savepoint (storage_savepoint) on this thread, and whether the code inside it
 * tried to end the enclosing transaction. */
static _Thread_local bool in_savepoint;
static _Thread_local bool savepoint_misused;
/* sqlite3_total_changes64 when an unguarded request part began (storage_unguarded_begin). */
static _Thread_local sqlite3_int64 unguarded_changes;
/* Whether this thread's open transaction changed a table storage_watch() registered. */
static _Thread_local bool changed_watched;

/* Checkpoints on a thread of their own (storage_checkpoints_start): connections opened after the
 * start do not checkpoint when they commit (SQLite's default, every 1000 WAL pages, which would
 * stall the group-commit writer while it copies pages); their WAL hook wakes the checkpointer
 * instead, which copies the WAL into the database concurrently with new writes (PASSIVE).
 * Should it fall far behind, a committing connection checkpoints itself as before.
 * Every 2000 pages (8 MiB): each checkpoint's last pass stalls the writer for two fsyncs,
 * however few frames it copies, so fewer checkpoints stall it less; POST -c64 spent about 7 %
 * less CPU per request than at 1000, with the same p99 (4000 raised the p99 by 3-5 ms: its
 * longer first pass leaves more for the locked one and flushes more beside the WAL's fsyncs). */
#define CHECKPOINT_PAGES 2000
#define CHECKPOINT_BACKSTOP_PAGES 16000 /* 64 MiB */
static pthread_mutex_t ckpt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ckpt_cv = PTHREAD_COND_INITIALIZER;
static pthread_t ckpt_thread;
static bool ckpt_running, ckpt_stopping, ckpt_wanted;
static atomic_bool ckpt_hooked;

/* The SQL text only (values are always bound, never inlined), folded onto one log line. */
static void sql_excerpt(const char *sql, char *buf, size_t n)
{
    size_t j = 0;
    bool space = false;
    const char *p = sql;
    for (; *p && j + 5 < n; p++) {
        if (isspace((unsigned char)*p)) {
            space = j > 0;
            continue;
        }
        if (space) {
            buf[j++] = ' ';
            space = false;
        }
        buf[j++] = *p;
    }
    while (*p && isspace((unsigned char)*p))
        p++;
    if (*p) {
        memcpy(buf + j, "...", 3);
        j += 3;
    }
    buf[j] = '\0';
}

static void db_error(sqlite3 *db, const char *what, const char *sql)
{
    char ex[SQL_EXCERPT];
    sql_excerpt(sql ? sql : "", ex, sizeof ex);
    log_error("storage: %s failed: %s (code %d)%s%s", what,
              db ? sqlite3_errmsg(db) : "no connection", db ? sqlite3_extended_errcode(db) : 0,
              sql ? " for: " : "", ex);
}

/* Runs sql without a result; on failure the message goes to err, or to the log without err. */
static int exec_sql(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return 0;
    if (err) {
        snprintf(err, errlen, "%s", msg ? msg : sqlite3_errstr(rc));
    } else {
        char ex[SQL_EXCERPT];
        sql_excerpt(sql, ex, sizeof ex);
        log_error("storage: exec failed: %s (code %d) for: %s", msg ? msg : sqlite3_errstr(rc), rc,
                  ex);
    }
    sqlite3_free(msg);
    return -1;
}

/* First column of the first row of a one-off query, as text. */
static int query_text(sqlite3 *db, const char *sql, char *out, size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int ret = -1;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", sql, sqlite3_errmsg(db));
        goto out;
    }
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        snprintf(err, errlen, "%s: %s", sql, rc == SQLITE_DONE ? "no result" : sqlite3_errmsg(db));
        goto out;
    }
    const unsigned char *v = sqlite3_column_text(st, 0);
    snprintf(out, n, "%s", v ? (const char *)v : "");
    ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

/* Applies one PRAGMA and reads it back: a pragma SQLite does not understand or cannot honour
 * (WAL on a read-only medium) is otherwise silently ignored. Switching a new file to WAL takes
 * an exclusive lock, and when several processes open it at once SQLite answers SQLITE_BUSY at
 * once to all but one, without the busy handler (which could deadlock them): that is tried
 * again, every 10 ms, for as long as the busy timeout. */
static int pragma_set(sqlite3 *db, const char *set, const char *get, const char *want, char *err,
                      size_t errlen)
{
    char got[32];
    for (int waited = 0;; waited += 10) {
        int rc = sqlite3_exec(db, set, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            break;
        if ((rc & 0xff) != SQLITE_BUSY || waited >= BUSY_TIMEOUT_MS) {
            snprintf(err, errlen, "%s: %s", set, sqlite3_errmsg(db));
            return -1;
        }
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    if (query_text(db, get, got, sizeof got, err, errlen) != 0)
        return -1;
    if (strcmp(got, want) != 0) {
        snprintf(err, errlen, "%s left \"%s\", expected \"%s\"", set, got, want);
        return -1;
    }
    return 0;
}

/* Applied to every connection, in this order, and read back. */
static const struct {
    const char *set, *get, *want;
} pragmas[] = {
    {"PRAGMA journal_mode = WAL", "PRAGMA journal_mode", "wal"},
    {"PRAGMA synchronous = FULL", "PRAGMA synchronous", "2"}, /* a 2xx means durable */
    {"PRAGMA foreign_keys = ON", "PRAGMA foreign_keys", "1"},
    /* Savepoint sub-journals and sort scratch in memory: a group-committed request's
     * savepoint would otherwise spill to a temporary file (open, write, unlink) past 64 KiB. */
    {"PRAGMA temp_store = MEMORY", "PRAGMA temp_store", "2"},
};

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)arg;
    if (pages >= CHECKPOINT_BACKSTOP_PAGES) {
        /* Inside a commit whose sync may have been deferred (storage_commit_unsynced): the
         * checkpoint's own sync of the WAL, before it copies frames, must be real. */
        bool deferring = storage_vfs_defer_syncs(false);
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        storage_vfs_defer_syncs(deferring);
    } else if (pages >= CHECKPOINT_PAGES) {
        pthread_mutex_lock(&ckpt_mu);
        ckpt_wanted = true;
        pthread_cond_signal(&ckpt_cv);
        pthread_mutex_unlock(&ckpt_mu);
    }
    return SQLITE_OK;
}

static void conn_close(struct conn *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nslots; i++) {
        if (!c->slots[i].sql)
            continue;
        sqlite3_finalize(c->slots[i].stmt);
        free(c->slots[i].sql);
    }
    free(c->slots);
    if (c->db) {
        int rc = sqlite3_close(c->db);
        if (rc != SQLITE_OK) {
            /* A caller still holds its own unfinalized statements: let SQLite close the
             * handle once they are gone instead of leaking it. */
            log_error("storage: close failed: %s (code %d)", sqlite3_errstr(rc), rc);
            sqlite3_close_v2(c->db);
        }
    }
    free(c);
}

/* sqlite3_update_hook: notes a change to a watched table (storage_watch). */
static void row_changed(void *arg, int op, const char *db, const char *table, sqlite3_int64 row)
{
    (void)arg, (void)op, (void)db, (void)row;
    if (!changed_watched && storage_is_watched(table))
        changed_watched = true;
}

/* create: only storage_open() may create the file; a thread opening later must find the
 * migrated database, not an empty one someone deleted it for. */
static struct conn *conn_open(const char *path, bool create, char *err, size_t errlen)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->nslots = CACHE_INITIAL_SLOTS;
    c->slots = calloc(c->nslots, sizeof *c->slots);
    if (!c->slots) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    int rc = sqlite3_open_v2(path, &c->db, flags, STORAGE_VFS);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s", c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    rc = sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "busy_timeout: %s", sqlite3_errmsg(c->db));
        goto fail;
    }
    /* busy_timeout first: switching to WAL needs a lock another process may hold. */
    for (size_t i = 0; i < sizeof pragmas / sizeof pragmas[0]; i++) {
        if (pragma_set(c->db, pragmas[i].set, pragmas[i].get, pragmas[i].want, err, errlen) != 0)
            goto fail;
    }
    if (atomic_load(&ckpt_hooked))
        sqlite3_wal_hook(c->db, wal_hook, NULL); /* replaces the automatic checkpoint */
    sqlite3_update_hook(c->db, row_changed, NULL);
    return c;
fail:
    conn_close(c);
    return NULL;
}

static struct conn *existing(void)
{
    if (my_conn && my_generation == atomic_load(&generation))
        return my_conn;
    return NULL;
}

static struct conn *current(void)
{
    char err[256] = "";
    struct conn *c = existing();
    if (c)
        return c;

    pthread_mutex_lock(&conns_lock);
    unsigned gen = atomic_load(&generation);
    char *path = db_path ? strdup(db_path) : NULL;
    bool opened = db_path != NULL;
    pthread_mutex_unlock(&conns_lock);
    if (!opened) {
        log_error("storage: used before storage_open() or after storage_close()");
        return NULL;
    }
    if (!path) {
        log_error("storage: out of memory");
        return NULL;
    }
    c = conn_open(path, false, err, sizeof err);
    free(path);
    if (!c) {
        log_error("storage: cannot open a connection: %s", err);
        return NULL;
    }
    pthread_mutex_lock(&conns_lock);
    if (gen != atomic_load(&generation)) {
        pthread_mutex_unlock(&conns_lock);
        conn_close(c);
        log_error("storage: closed while opening a connection");
        return NULL;
    }
    c->next = conns;
    conns = c;
    pthread_mutex_unlock(&conns_lock);
    my_conn = c;
    my_generation = gen;
    return c;
}

sqlite3 *storage_sqlite_db(void)
{
    struct conn *c = current();
    return c ? c->db : NULL;
}

/* FNV-1a over the text. */
static uint64_t hash_sql(const char *s)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3u;
    }
    return h;
}

static struct cached *find_slot(struct cached *slots, size_t nslots, const char *sql, uint64_t h)
{
    size_t mask = nslots - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct cached *e = &slots[i];
        if (!e->sql || (e->hash == h && strcmp(e->sql, sql) == 0))
            return e;
    }
}

/* Doubles the table; entries move, statements stay prepared. No eviction: a statement handed
 * out may still be stepping, and a program's set of SQL texts is finite. */
static int cache_grow(struct conn *c)
{
    size_t n = c->nslots * 2;
    struct cached *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < c->nslots; i++) {
        if (c->slots[i].sql)
            *find_slot(slots, n, c->slots[i].sql, c->slots[i].hash) = c->slots[i];
    }
    free(c->slots);
    c->slots = slots;
    c->nslots = n;
    return 0;
}

static bool only_space(const char *s)
{
    for (; *s; s++) {
        if (!isspace((unsigned char)*s) && *s != ';')
            return false;
    }
    return true;
}

static sqlite3_stmt *reuse(struct conn *c, sqlite3_stmt *st, const char *sql)
{
    /* reset's result repeats the last step's error, which that step already reported. */
    sqlite3_reset(st);
    if (sqlite3_clear_bindings(st) != SQLITE_OK) {
        db_error(c->db, "clear bindings", sql);
        return NULL;
    }
    return st;
}

static sqlite3_stmt *prepare(const char *sql)
{
    struct conn *c = current();
    if (!c)
        return NULL;
    uint64_t at = (uint64_t)(uintptr_t)sql * UINT64_C(0x9E3779B97F4A7C15); /* Fibonacci hash */
    struct memo *m = &c->memo[at >> (64 - MEMO_BITS)];
    if (m->key == sql && strcmp(m->sql, sql) == 0)
        return reuse(c, m->stmt, sql);
    uint64_t h = hash_sql(sql);
    struct cached *e = find_slot(c->slots, c->nslots, sql, h);
    if (e->sql) {
        *m = (struct memo){sql, e->sql, e->stmt};
        return reuse(c, e->stmt, sql);
    }

    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, &tail);
    if (rc != SQLITE_OK) {
        db_error(c->db, "prepare", sql);
        return NULL;
    }
    /* Only the first statement would ever run; refuse rather than drop the rest silently. */
    if (!st || (tail && !only_space(tail))) {
        sqlite3_finalize(st);
        char ex[SQL_EXCERPT];
        sql_excerpt(sql, ex, sizeof ex);
        log_error("storage: prepare failed: expected exactly one statement in: %s", ex);
        return NULL;
    }
    char *copy = strdup(sql);
    if (!copy || ((c->used + 1) * 2 > c->nslots && cache_grow(c) != 0)) {
        free(copy);
        sqlite3_finalize(st);
        log_error("storage: out of memory caching a statement");
        return NULL;
    }
    e = find_slot(c->slots, c->nslots, sql, h);
    e->sql = copy;
    e->hash = h;
    e->stmt = st;
    c->used++;
    *m = (struct memo){sql, copy, st};
    return st;
}

/* A statement left mid-iteration keeps its read snapshot alive; end them all before the
 * transaction boundary so every request starts and ends clean. */
static void reset_busy(struct conn *c)
{
    for (size_t i = 0; i < c->nslots; i++) {
        if (c->slots[i].sql && sqlite3_stmt_busy(c->slots[i].stmt))
            sqlite3_reset(c->slots[i].stmt);
    }
}

static int step_done(struct conn *c, const char *sql)
{
    sqlite3_stmt *st = prepare(sql);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        db_error(c->db, "step", sql);
        sqlite3_reset(st);
        return -1;
    }
    sqlite3_reset(st);
    return 0;
}

static void write_lock(void)
{
    pthread_mutex_lock(&write_mu);
    unsigned long ticket = write_next++;
    while (ticket != write_serving)
        pthread_cond_wait(&write_cv, &write_mu);
    pthread_mutex_unlock(&write_mu);
    write_held = true;
}

static void write_unlock(void)
{
    if (!write_held)
        return;
    write_held = false;
    pthread_mutex_lock(&write_mu);
    write_serving++;
    pthread_cond_broadcast(&write_cv);
    pthread_mutex_unlock(&write_mu);
}

/* Code running inside a request savepoint must not end the batch's transaction. */
static void sq_rollback(void);

static bool refuse_in_savepoint(const char *what)
{
    if (!in_savepoint)
        return false;
    log_error("storage: %s inside a group-committed request; mark the operation "
              "x-own-transaction", what);
    savepoint_misused = true;
    return true;
}

static int sq_begin(bool write)
{
    if (refuse_in_savepoint("begin"))
        return -1;
    struct conn *c = current();
    if (!c)
        return -1;
    if (!sqlite3_get_autocommit(c->db)) {
        log_error("storage: begin while a transaction is already open");
        return -1;
    }
    changed_watched = false;
    reset_busy(c);
    if (write)
        write_lock();
    if (step_done(c, write ? "BEGIN IMMEDIATE" : "BEGIN") == 0)
        return 0;
    write_unlock();
    return -1;
}

static int sq_commit(void)
{
    if (refuse_in_savepoint("commit"))
        return -1;
    struct conn *c = existing();
    if (!c || sqlite3_get_autocommit(c->db)) {
        log_error("storage: commit without an open transaction");
        write_unlock();
        return -1;
    }
    reset_busy(c);
    if (step_done(c, "COMMIT") == 0) {
        write_unlock();
        if (changed_watched)
            storage_watched_changed();
        changed_watched = false;
        return 0;
    }
    /* Not committed: leave the connection clean for the next request. */
    sq_rollback();
    return -1;
}

int storage_commit_unsynced(void **wal)
{
    bool deferring = storage_vfs_defer_syncs(true);
    int rc = sq_commit();
    storage_vfs_defer_syncs(deferring);
    void *w = storage_vfs_take_deferred();
    *wal = rc == 0 ? w : NULL;
    return rc;
}

int storage_sync(void *wal)
{
    return storage_vfs_sync(wal);
}

/* ---- the statement interface (storage.h): a struct db_stmt is the engine's statement ---- */
static sqlite3_stmt *S(struct db_stmt *st)
{
    return (sqlite3_stmt *)(void *)st;
}

static struct db_stmt *sq_prepare(const char *sql)
{
    return (struct db_stmt *)(void *)prepare(sql);
}

static int sq_bind_text(struct db_stmt *st, int i, const char *v)
{
    return sqlite3_bind_text(S(st), i, v, -1, SQLITE_STATIC) == SQLITE_OK ? 0 : -1;
}

static int sq_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    return sqlite3_bind_int64(S(st), i, v) == SQLITE_OK ? 0 : -1;
}

static int sq_bind_null(struct db_stmt *st, int i)
{
    return sqlite3_bind_null(S(st), i) == SQLITE_OK ? 0 : -1;
}

static int sq_bind_blob(struct db_stmt *st, int i, const void *p, size_t n)
{
    if (n > INT32_MAX)
        return -1;
    return sqlite3_bind_blob(S(st), i, n ? p : "", (int)n, SQLITE_STATIC) == SQLITE_OK ? 0 : -1;
}

/* SQLite's extended result codes mapped to the interface's few kinds. */
static int mapped_error(sqlite3 *db, int rc)
{
    int ext = db ? sqlite3_extended_errcode(db) : rc;
    switch (ext) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
        return DB_ERR_UNIQUE;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
        return DB_ERR_FOREIGN_KEY;
    default:
        break;
    }
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return DB_ERR_RETRY;
    default:
        return DB_ERR;
    }
}

static int sq_step(struct db_stmt *st)
{
    int rc = sqlite3_step(S(st));
    if (rc == SQLITE_ROW)
        return DB_ROW;
    if (rc == SQLITE_DONE)
        return DB_DONE;
    return mapped_error(sqlite3_db_handle(S(st)), rc);
}

static const char *sq_column_text(struct db_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(S(st), col);
}

static int64_t sq_column_int64(struct db_stmt *st, int col)
{
    return sqlite3_column_int64(S(st), col);
}

static bool sq_column_is_null(struct db_stmt *st, int col)
{
    return sqlite3_column_type(S(st), col) == SQLITE_NULL;
}

static const void *sq_column_blob(struct db_stmt *st, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(S(st), col);
    int n = sqlite3_column_bytes(S(st), col);
    *len = n > 0 ? (size_t)n : 0;
    return p ? p : "";
}

static void sq_reset(struct db_stmt *st)
{
    sqlite3_reset(S(st));
}

static int64_t sq_changes(void)
{
    struct conn *c = existing();
    return c ? sqlite3_changes64(c->db) : 0;
}

static const char *sq_errmsg(void)
{
    struct conn *c = existing();
    return c ? sqlite3_errmsg(c->db) : "no connection";
}

static void sq_rollback(void)
{
    if (refuse_in_savepoint("rollback"))
        return;
    struct conn *c = existing();
    if (c && !sqlite3_get_autocommit(c->db)) {
        reset_busy(c);
        if (step_done(c, "ROLLBACK") != 0) {
            /* The cached statement could not even be prepared (out of memory); try directly. */
            exec_sql(c->db, "ROLLBACK", NULL, 0);
        }
    }
    changed_watched = false;
    write_unlock();
}

static int sq_savepoint(void)
{
    struct conn *c = existing();
    if (!c || sqlite3_get_autocommit(c->db) || in_savepoint) {
        log_error("storage: savepoint outside a transaction or inside another");
        return -1;
    }
    reset_busy(c);
    if (step_done(c, "SAVEPOINT request") != 0)
        return -1;
    in_savepoint = true;
    savepoint_misused = false;
    return 0;
}

static int sq_savepoint_end(bool keep)
{
    struct conn *c = existing();
    if (!in_savepoint)
        return -1;
    in_savepoint = false;
    if (savepoint_misused)
        keep = false;
    /* Some errors (disk full, I/O, out of memory) make SQLite roll the whole transaction
     * back: then there is no savepoint left to end, and the caller must know. */
    if (!c || sqlite3_get_autocommit(c->db))
        return -1;
    reset_busy(c);
    if (!keep && step_done(c, "ROLLBACK TO request") != 0)
        return -1;
    if (step_done(c, "RELEASE request") != 0)
        return -1;
    return savepoint_misused ? -1 : 0;
}

static int sq_unguarded_begin(void)
{
    struct conn *c = existing();
    if (!c || sqlite3_get_autocommit(c->db) || in_savepoint) {
        log_error("storage: request part outside a transaction or inside another");
        return -1;
    }
    in_savepoint = true; /* begin, commit and rollback are refused as in a savepoint */
    savepoint_misused = false;
    unguarded_changes = sqlite3_total_changes64(c->db);
    return 0;
}

static int sq_unguarded_end(bool keep)
{
    struct conn *c = existing();
    if (!in_savepoint)
        return -1;
    in_savepoint = false;
    if (!c || sqlite3_get_autocommit(c->db))
        return -1;
    /* A failed statement undoes its own changes and does not count them, so an unchanged
     * total means the request left no row behind. */
    bool changed = sqlite3_total_changes64(c->db) != unguarded_changes;
    if (savepoint_misused || (!keep && changed))
        return 1;
    return 0;
}

static void sq_lazy_sync(void)
{
    sqlite3 *db = storage_sqlite_db();
    if (db)
        exec_sql(db, "PRAGMA synchronous = NORMAL", NULL, 0);
}

static bool sq_in_tx(void)
{
    struct conn *c = existing();
    return c && !sqlite3_get_autocommit(c->db);
}

/* BEGIN IMMEDIATE takes SQLite's write lock, the database's one lock against other processes
 * too, before anything is read: the schema lock. */
static int sq_begin_migration(void)
{
    return sq_begin(true);
}

static int sq_exec_script(const char *sql, char *err, size_t errlen)
{
    struct conn *c = existing();
    if (!c) {
        snprintf(err, errlen, "no connection");
        return -1;
    }
    reset_busy(c);
    return exec_sql(c->db, sql, err, errlen);
}

static int sq_has_table(const char *name)
{
    struct db_stmt *st =
        sq_prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    if (!st)
        return -1;
    sq_bind_text(st, 1, name);
    int rc = sq_step(st);
    sq_reset(st);
    return rc == DB_ROW ? 1 : rc == DB_DONE ? 0 : -1;
}

static int checkpoint_passive(sqlite3 *db)
{
    int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        log_warn("storage: checkpoint failed: %s (code %d)", sqlite3_errmsg(db), rc);
    return rc;
}

/* Copies the WAL into the database in two passes. The first runs alongside new commits and
 * copies the bulk. The second holds the write lock, so no commit lands while it copies the
 * few frames committed meanwhile: the WAL is then wholly in the database, and the next write
 * transaction starts the WAL over from its beginning (SQLite restarts it when a writer begins
 * on a fully copied WAL and no reader still uses its frames). Without the second pass a steady
 * stream of commits keeps the copy always a little behind, the WAL never restarts, and it
 * grows to the backstop, with every checkpoint sorting its index anew. */
void storage_checkpoint(void (*between)(void))
{
    sqlite3 *db = storage_sqlite_db();
    if (!db) {
        log_warn("storage: checkpoint failed: no connection");
        return;
    }
    if (checkpoint_passive(db) != SQLITE_OK)
        return;
    if (between)
        between();
    write_lock();
    checkpoint_passive(db);
    /* Every commit so far is in the pass just made: the requests those commits' hooks made
     * meanwhile are answered. Left standing, they ran a second checkpoint right after this one
     * that copied the few frames of the new WAL and, like every second pass, held the write
     * lock for its two fsyncs: about 2 ms of stalled writer per checkpoint under load. */
    pthread_mutex_lock(&ckpt_mu);
    ckpt_wanted = false;
    pthread_mutex_unlock(&ckpt_mu);
    write_unlock();
}

static void *checkpointer_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-checkpoint");
    pthread_mutex_lock(&ckpt_mu);
    while (!ckpt_stopping) {
        if (!ckpt_wanted) {
            pthread_cond_wait(&ckpt_cv, &ckpt_mu);
            continue;
        }
        ckpt_wanted = false;
        pthread_mutex_unlock(&ckpt_mu);
        storage_checkpoint(NULL);
        pthread_mutex_lock(&ckpt_mu);
    }
    pthread_mutex_unlock(&ckpt_mu);
    return NULL;
}

int storage_checkpoints_start(void)
{
    pthread_mutex_lock(&ckpt_mu);
    ckpt_stopping = ckpt_wanted = false;
    int rc = pthread_create(&ckpt_thread, NULL, checkpointer_main, NULL);
    ckpt_running = rc == 0;
    pthread_mutex_unlock(&ckpt_mu);
    if (rc != 0) {
        log_error("storage: cannot start the checkpoint thread");
        return -1;
    }
    atomic_store(&ckpt_hooked, true);
    return 0;
}

#ifdef TREASURY_TEST_HOOKS
bool storage_checkpoint_pending(void)
{
    pthread_mutex_lock(&ckpt_mu);
    bool wanted = ckpt_wanted;
    pthread_mutex_unlock(&ckpt_mu);
    return wanted;
}
#endif

void storage_checkpoints_stop(void)
{
    pthread_mutex_lock(&ckpt_mu);
    bool was = ckpt_running;
    ckpt_stopping = true;
    ckpt_running = false;
    atomic_store(&ckpt_hooked, false); /* connections opened from now on checkpoint themselves */
    pthread_cond_signal(&ckpt_cv);
    pthread_mutex_unlock(&ckpt_mu);
    if (was)
        pthread_join(ckpt_thread, NULL);
}

static int sq_open(const char *path, char *err, size_t errlen)
{
    /* No global memory statistics: with them every SQLite allocation takes a process-wide
     * mutex. Must precede SQLite's initialisation; refused (harmlessly) afterwards. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    int vrc = storage_vfs_register(NULL);
    if (vrc != SQLITE_OK) {
        snprintf(err, errlen, "cannot register the storage VFS: %s", sqlite3_errstr(vrc));
        return -1;
    }
    pthread_mutex_lock(&conns_lock);
    bool already = db_path != NULL;
    pthread_mutex_unlock(&conns_lock);
    if (already) {
        snprintf(err, errlen, "storage is already open");
        return -1;
    }
    struct conn *c = conn_open(path, true, err, errlen);
    if (!c)
        return -1;
    char *copy = strdup(path);
    if (!copy) {
        conn_close(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_lock(&conns_lock);
    db_path = copy;
    c->next = conns;
    conns = c;
    my_conn = c;
    my_generation = atomic_load(&generation);
    pthread_mutex_unlock(&conns_lock);
    return 0;
}

static void sq_close(void)
{
    pthread_mutex_lock(&conns_lock);
    struct conn *list = conns;
    conns = NULL;
    free(db_path);
    db_path = NULL;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&conns_lock);
    my_conn = NULL;
    while (list) {
        struct conn *next = list->next;
        conn_close(list);
        list = next;
    }
}

/* One writer at a time, queued in the process's write lock: no transaction of ours fails on a
 * conflict with another. */
static bool sq_should_retry(void)
{
    return false;
}

static int64_t sq_data_version(void)
{
    sqlite3_stmt *st = prepare("PRAGMA data_version");
    int64_t v = -1;
    if (st && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    if (st)
        sqlite3_reset(st);
    return v;
}

/* One writer at a time: the transaction that reads an item owns it. */
static int sq_claim(const char *table, const char *column, const char *id)
{
    (void)table, (void)column, (void)id;
    return 1;
}

/* One writer at a time already: the key changes nothing. */
static int sq_begin_serial(bool write, const char *key)
{
    (void)key;
    return sq_begin(write);
}

const struct storage_engine storage_engine_sqlite = {
    .name = "sqlite",
    .dialect = MIGRATE_SQLITE,
    .open = sq_open,
    .close = sq_close,
    .prepare = sq_prepare,
    .bind_text = sq_bind_text,
    .bind_int64 = sq_bind_int64,
    .bind_null = sq_bind_null,
    .bind_blob = sq_bind_blob,
    .step = sq_step,
    .column_text = sq_column_text,
    .column_int64 = sq_column_int64,
    .column_is_null = sq_column_is_null,
    .column_blob = sq_column_blob,
    .reset = sq_reset,
    .changes = sq_changes,
    .errmsg = sq_errmsg,
    .begin = sq_begin,
    .begin_serial = sq_begin_serial,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .in_tx = sq_in_tx,
    .lazy_sync = sq_lazy_sync,
    .begin_migration = sq_begin_migration,
    .exec_script = sq_exec_script,
    .has_table = sq_has_table,
    .should_retry = sq_should_retry,
    .savepoint = sq_savepoint,
    .savepoint_end = sq_savepoint_end,
    .unguarded_begin = sq_unguarded_begin,
    .unguarded_end = sq_unguarded_end,
    .claim = sq_claim,
    .data_version = sq_data_version,
};
