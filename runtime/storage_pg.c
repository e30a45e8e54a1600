/* The PostgreSQL engine (storage_engine.h) through libpq: one connection per thread, opened on
 * first use from the --database URL, each with its own cache of named prepared statements.
 * SQL arrives in the portable subset (README.md: The portable SQL) with SQLite's placeholders, `?` and
 * `?NNN`, rewritten once per statement to `$N`. Parameters travel as text (blobs as binary), so
 * PostgreSQL infers each one's type from where it stands; results come back as text.
 *
 * Transactions: writes are SERIALIZABLE, reads REPEATABLE READ (a snapshot, as a SQLite read
 * transaction has). A serialization failure or deadlock makes every later statement of the
 * transaction fail, as PostgreSQL does, and is remembered (storage_should_retry) so that the
 * runtime, not the handler, rolls back and runs the request again. Commits wait for the WAL
 * flush (synchronous_commit=on): a 2xx still means durable. */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/log.h"
#include "runtime/storage_engine.h"
#include "runtime/storage_migrate.h"

#define BOOLOID 16
#define BYTEAOID 17
#define TEXTOID 25
#define MAX_PARAMS 999
#define CACHE_INITIAL_SLOTS 64 /* power of two; grows at half full */

struct pstmt {
    char *sql; /* the caller's text: the cache's key */
    uint64_t hash;
    char name[24]; /* the prepared statement's name on this connection */
    int nparams;
    const char **values;
    int *lengths, *formats;
    char (*ints)[24]; /* text of integer binds */
    PGresult *res;
    int row, nrows;
    bool executed;
    unsigned char *blob; /* a decoded bytea column */
    struct pconn *conn;
};

struct pconn {
    PGconn *pg;
    struct pstmt **slots; /* open addressing, linear probing */
    size_t nslots, used;
    unsigned long next_name;
    int64_t changes;
    char err[512];
    bool in_tx, tx_failed, retry;
    bool changed_watched;
    bool serial_held; /* the session's advisory lock serial_lock (pg_begin_serial) */
    bool relaxed;     /* synchronous_commit off: the side connection (pg_prepare_outside) */
    int64_t serial_lock;
    struct pconn *next;
};

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pconn *conns;
static char *db_url;
static atomic_uint generation;
static _Thread_local struct pconn *my_conn;
static _Thread_local unsigned my_generation;

static void set_err(struct pconn *c, const char *what, const char *msg)
{
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        n--;
    snprintf(c->err, sizeof c->err, "%s%s%.*s", what ? what : "", what ? ": " : "", (int)n, msg);
}

/* A command that returns nothing, on c. 0 / -1 (message in c->err). */
static int command(struct pconn *c, const char *sql)
{
    PGresult *res = PQexec(c->pg, sql);
    ExecStatusType s = PQresultStatus(res);
    int ret = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : -1;
    if (ret != 0)
        set_err(c, sql, PQresultErrorMessage(res));
    PQclear(res);
    return ret;
}

/* The first column of the first row of sql as text into out. 0 / -1. */
static int query_one(struct pconn *c, const char *sql, char *out, size_t n)
{
    PGresult *res = PQexec(c->pg, sql);
    int ret = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0) {
        snprintf(out, n, "%s", PQgetvalue(res, 0, 0));
        ret = 0;
    } else {
        set_err(c, sql, PQresultErrorMessage(res));
    }
    PQclear(res);
    return ret;
}

static void stmt_free(struct pstmt *s)
{
    if (!s)
        return;
    PQclear(s->res);
    free(s->sql);
    free(s->values);
    free(s->lengths);
    free(s->formats);
    free(s->ints);
    free(s->blob);
    free(s);
}

static void conn_close(struct pconn *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nslots; i++)
        stmt_free(c->slots[i]);
    free(c->slots);
    if (c->pg)
        PQfinish(c->pg);
    free(c);
}

/* Settings of every connection: durable commits, UTC, and no statement waits on a lock for
 * longer than SQLite's busy timeout. */
static const char *const session_settings[] = {
    "SET synchronous_commit = on",
    "SET client_encoding = 'UTF8'",
    "SET standard_conforming_strings = on",
    "SET TIME ZONE 'UTC'",
    "SET lock_timeout = '5s'",
    "SET client_min_messages = warning",
};

static struct pconn *conn_open(const char *url, char *err, size_t errlen)
{
    struct pconn *c = calloc(1, sizeof *c);
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
    /* A dead server or network must not hang a thread inside libpq: bounded connection
     * attempts, TCP keepalives, and a bound on unacknowledged data (the URL may override). */
    static const char *const keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
                                       "tcp_user_timeout", "dbname", NULL};
    const char *const values[] = {"10", "1", "30", "30000", url, NULL};
    c->pg = PQconnectdbParams(keys, values, 1);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        snprintf(err, errlen, "cannot connect to PostgreSQL: %s",
                 c->pg ? PQerrorMessage(c->pg) : "out of memory");
        size_t n = strlen(err);
        while (n && err[n - 1] == '\n')
            err[--n] = '\0';
        goto fail;
    }
    for (size_t i = 0; i < sizeof session_settings / sizeof session_settings[0]; i++) {
        if (command(c, session_settings[i]) != 0) {
            snprintf(err, errlen, "%s", c->err);
            goto fail;
        }
    }
    return c;
fail:
    conn_close(c);
    return NULL;
}

static struct pconn *existing(void)
{
    if (my_conn && my_generation == atomic_load(&generation))
        return my_conn;
    return NULL;
}

/* A second connection of the thread, for the statements that must not be part of its open
 * transaction (storage_prepare_outside): its own session, autocommit, READ COMMITTED. */
static _Thread_local struct pconn *my_side;
/* The connection of this thread's last statement, whose error storage_errmsg reports. */
static _Thread_local struct pconn *last_used;
static _Thread_local unsigned my_side_generation;

static struct pconn *connection(struct pconn **mine, unsigned *mine_generation);

static struct pconn *current(void)
{
    return connection(&my_conn, &my_generation);
}

static struct pconn *side(void)
{
    return connection(&my_side, &my_side_generation);
}

/* Takes c out of the list of connections and closes it. */
static void discard(struct pconn *c)
{
    pthread_mutex_lock(&conns_lock);
    for (struct pconn **p = &conns; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    pthread_mutex_unlock(&conns_lock);
    if (last_used == c)
        last_used = NULL;
    conn_close(c);
}

/* The thread's connection in *mine, opened on first use (and after storage_close, anew). */
static struct pconn *connection(struct pconn **mine, unsigned *mine_generation)
{
    char err[512] = "";
    if (*mine && *mine_generation == atomic_load(&generation)) {
        /* A connection the server ended (a restart, a failover, pg_terminate_backend) is
         * replaced between transactions: a new session, its settings applied, its statements
         * prepared again as they are used. (PQreset would keep our statement cache, whose
         * names the new session does not know.) */
        if (PQstatus((*mine)->pg) != CONNECTION_BAD || (*mine)->in_tx)
            return *mine;
        log_warn("storage: the connection to PostgreSQL was lost; connecting again");
        discard(*mine);
        *mine = NULL;
    }
    struct pconn *c;
    pthread_mutex_lock(&conns_lock);
    unsigned gen = atomic_load(&generation);
    char *url = db_url ? strdup(db_url) : NULL;
    bool opened = db_url != NULL;
    pthread_mutex_unlock(&conns_lock);
    if (!opened) {
        log_error("storage: used before storage_open() or after storage_close()");
        return NULL;
    }
    if (!url) {
        log_error("storage: out of memory");
        return NULL;
    }
    c = conn_open(url, err, sizeof err);
    free(url);
    if (!c) {
        log_error("storage: %s", err);
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
    *mine = c;
    *mine_generation = gen;
    return c;
}

/* ---- placeholders -------------------------------------------------------------------------
 * SQLite's `?` (one more than the largest number so far) and `?NNN` become `$N`; text inside
 * quotes and comments is left alone. Returns the new text (malloc'd) and the parameter count,
 * or NULL for a number out of range; used[N - 1] is set for each number the text uses. */
static char *rewrite_placeholders(const char *sql, int *nparams, bool used[MAX_PARAMS])
{
    size_t n = strlen(sql);
    char *out = malloc(n * 4 + 1); /* "?" -> "$999" at most */
    if (!out)
        return NULL;
    size_t j = 0;
    int max = 0;
    for (size_t i = 0; i < n;) {
        char ch = sql[i];
        if (ch == '\'' || ch == '"') { /* a literal or quoted identifier; doubled quote escapes */
            out[j++] = sql[i++];
            while (i < n) {
                out[j++] = sql[i];
                if (sql[i++] == ch) {
                    if (i < n && sql[i] == ch) {
                        out[j++] = sql[i++];
                        continue;
                    }
                    break;
                }
            }
            continue;
        }
        if (ch == '-' && i + 1 < n && sql[i + 1] == '-') {
            while (i < n && sql[i] != '\n')
                out[j++] = sql[i++];
            continue;
        }
        if (ch == '/' && i + 1 < n && sql[i + 1] == '*') { /* not nested: the subset has none */
            while (i < n && !(sql[i] == '*' && i + 1 < n && sql[i + 1] == '/'))
                out[j++] = sql[i++];
            continue; /* the closing star and slash are copied as ordinary characters */
        }
        if (ch != '?') {
            out[j++] = sql[i++];
            continue;
        }
        i++;
        int num = 0;
        if (i < n && sql[i] >= '0' && sql[i] <= '9') {
            while (i < n && sql[i] >= '0' && sql[i] <= '9') {
                num = num * 10 + (sql[i++] - '0');
                if (num > MAX_PARAMS)
                    break;
            }
        } else {
            num = max + 1;
        }
        if (num < 1 || num > MAX_PARAMS) {
            free(out);
            return NULL;
        }
        if (num > max)
            max = num;
        used[num - 1] = true;
        j += (size_t)sprintf(out + j, "$%d", num);
    }
    out[j] = '\0';
    *nparams = max;
    return out;
}

/* ---- the statement cache ------------------------------------------------------------------ */

static uint64_t hash_sql(const char *s)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3u;
    }
    return h;
}

static struct pstmt **find_slot(struct pstmt **slots, size_t nslots, const char *sql, uint64_t h)
{
    size_t mask = nslots - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct pstmt *e = slots[i];
        if (!e || (e->hash == h && strcmp(e->sql, sql) == 0))
            return &slots[i];
    }
}

static int cache_grow(struct pconn *c)
{
    size_t n = c->nslots * 2;
    struct pstmt **slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < c->nslots; i++) {
        if (c->slots[i])
            *find_slot(slots, n, c->slots[i]->sql, c->slots[i]->hash) = c->slots[i];
    }
    free(c->slots);
    c->slots = slots;
    c->nslots = n;
    return 0;
}

static void stmt_clear(struct pstmt *s)
{
    PQclear(s->res);
    s->res = NULL;
    s->executed = false;
    s->row = s->nrows = 0;
}

static struct db_stmt *D(struct pstmt *s)
{
    return (struct db_stmt *)(void *)s;
}

static struct pstmt *P(struct db_stmt *st)
{
    return (struct pstmt *)(void *)st;
}

static struct db_stmt *prepare_on(struct pconn *c, const char *sql);

static struct db_stmt *pg_prepare(const char *sql)
{
    return prepare_on(current(), sql);
}

static struct db_stmt *pg_prepare_outside(const char *sql)
{
    struct pconn *c = side();
    /* What it writes (quota state) is worth no fsync: a crash loses at most the last moments
     * of spent quota. */
    if (c && !c->relaxed) {
        if (command(c, "SET synchronous_commit = off") != 0)
            log_warn("storage: %s", c->err);
        c->relaxed = true;
    }
    return prepare_on(c, sql);
}

/* sql's statement on connection c (NULL: none), from its cache or prepared now. */
static struct db_stmt *prepare_on(struct pconn *c, const char *sql)
{
    if (!c)
        return NULL;
    last_used = c;
    uint64_t h = hash_sql(sql);
    struct pstmt **slot = find_slot(c->slots, c->nslots, sql, h);
    struct pstmt *s = *slot;
    if (s) {
        stmt_clear(s);
        for (int i = 0; i < s->nparams; i++) {
            s->values[i] = NULL;
            s->lengths[i] = 0;
            s->formats[i] = 0;
        }
        return D(s);
    }
    int nparams = 0;
    bool used[MAX_PARAMS] = {false};
    char *text = rewrite_placeholders(sql, &nparams, used);
    if (!text) {
        log_error("storage: prepare failed: a placeholder out of range in: %.100s", sql);
        return NULL;
    }
    s = calloc(1, sizeof *s);
    size_t np = nparams ? (size_t)nparams : 1;
    if (s) {
        s->sql = strdup(sql);
        s->values = calloc(np, sizeof *s->values);
        s->lengths = calloc(np, sizeof *s->lengths);
        s->formats = calloc(np, sizeof *s->formats);
        s->ints = calloc(np, sizeof *s->ints);
    }
    if (!s || !s->sql || !s->values || !s->lengths || !s->formats || !s->ints ||
        ((c->used + 1) * 2 > c->nslots && cache_grow(c) != 0)) {
        free(text);
        stmt_free(s);
        log_error("storage: out of memory preparing a statement");
        return NULL;
    }
    s->hash = h;
    s->nparams = nparams;
    s->conn = c;
    snprintf(s->name, sizeof s->name, "s%lu", ++c->next_name);
    /* A number the text skips (SQLite allows binding ?4 of a statement that uses only ?3 and
     * ?5: one bind function may serve an INSERT and an UPDATE of the same columns) has no
     * place for PostgreSQL to infer its type from: it is declared text, and its value unused.
     * Every other type is left to PostgreSQL (0). */
    Oid types[MAX_PARAMS];
    for (int i = 0; i < nparams; i++)
        types[i] = used[i] ? 0 : TEXTOID;
    PGresult *res = PQprepare(c->pg, s->name, text, nparams, nparams ? types : NULL);
    free(text);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        set_err(c, NULL, PQresultErrorMessage(res));
        log_error("storage: prepare failed: %s for: %.200s", c->err, sql);
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (c->in_tx)
            c->tx_failed = true;
        if (state && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0))
            c->retry = true;
        PQclear(res);
        stmt_free(s);
        return NULL;
    }
    PQclear(res);
    *find_slot(c->slots, c->nslots, sql, h) = s;
    c->used++;
    return D(s);
}

static int param_index(struct pstmt *s, int i)
{
    if (i < 1 || i > s->nparams) {
        log_error("storage: bind of parameter %d of %d for: %.100s", i, s->nparams, s->sql);
        return -1;
    }
    return i - 1;
}

static int pg_bind_text(struct db_stmt *st, int i, const char *v)
{
    struct pstmt *s = P(st);
    int k = param_index(s, i);
    if (k < 0)
        return -1;
    s->values[k] = v;
    s->formats[k] = 0;
    s->lengths[k] = 0;
    return 0;
}

static int pg_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    struct pstmt *s = P(st);
    int k = param_index(s, i);
    if (k < 0)
        return -1;
    snprintf(s->ints[k], sizeof s->ints[k], "%lld", (long long)v);
    s->values[k] = s->ints[k];
    s->formats[k] = 0;
    return 0;
}

static int pg_bind_null(struct db_stmt *st, int i)
{
    return pg_bind_text(st, i, NULL);
}

static int pg_bind_blob(struct db_stmt *st, int i, const void *p, size_t n)
{
    struct pstmt *s = P(st);
    int k = param_index(s, i);
    if (k < 0 || n > INT32_MAX)
        return -1;
    s->values[k] = n ? p : "";
    s->lengths[k] = (int)n;
    s->formats[k] = 1;
    return 0;
}

/* A failed statement's SQLSTATE as the interface's kind; a failure that aborts the
 * transaction is remembered, and one worth running again noted for the runtime. */
static int mapped_error(struct pconn *c, const PGresult *res)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (c->in_tx)
        c->tx_failed = true;
    if (!state)
        return DB_ERR;
    if (strcmp(state, "23505") == 0)
        return DB_ERR_UNIQUE;
    if (strcmp(state, "23503") == 0)
        return DB_ERR_FOREIGN_KEY;
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
        strcmp(state, "55P03") == 0) {
        c->retry = true;
        return DB_ERR_RETRY;
    }
    return DB_ERR;
}

static int pg_step(struct db_stmt *st)
{
    struct pstmt *s = P(st);
    struct pconn *c = s->conn;
    last_used = c;
    if (!s->executed) {
        s->executed = true;
        s->row = -1;
        s->nrows = 0;
        s->res = PQexecPrepared(c->pg, s->name, s->nparams, s->values, s->lengths, s->formats,
                                0);
        ExecStatusType status = PQresultStatus(s->res);
        if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
            set_err(c, NULL, PQresultErrorMessage(s->res));
            int rc = mapped_error(c, s->res);
            PQclear(s->res);
            s->res = NULL;
            return rc;
        }
        const char *tag = PQcmdStatus(s->res);
        if (strncmp(tag, "INSERT", 6) == 0 || strncmp(tag, "UPDATE", 6) == 0 ||
            strncmp(tag, "DELETE", 6) == 0) {
            c->changes = strtoll(PQcmdTuples(s->res), NULL, 10);
            if (c->changes > 0 && !c->changed_watched) {
                /* The statement's table, for storage_watch: the word after INTO, UPDATE or
                 * FROM at the start of the text. */
                const char *p = s->sql;
                while (*p == ' ' || *p == '\n')
                    p++;
                const char *kw = strncmp(tag, "INSERT", 6) == 0   ? "INSERT INTO "
                                 : strncmp(tag, "UPDATE", 6) == 0 ? "UPDATE "
                                                                  : "DELETE FROM ";
                size_t kl = strlen(kw);
                if (strncasecmp(p, kw, kl) == 0) {
                    char table[64];
                    size_t t = 0;
                    for (p += kl; t + 1 < sizeof table && (*p == '_' || (*p >= 'a' && *p <= 'z') ||
                                                           (*p >= '0' && *p <= '9'));)
                        table[t++] = *p++;
                    table[t] = '\0';
                    if (storage_is_watched(table))
                        c->changed_watched = true;
                }
            }
        }
        if (status == PGRES_TUPLES_OK)
            s->nrows = PQntuples(s->res);
    }
    if (!s->res)
        return DB_ERR;
    s->row++;
    return s->row < s->nrows ? DB_ROW : DB_DONE;
}

static bool has_value(struct pstmt *s, int col)
{
    return s->res && s->row >= 0 && s->row < s->nrows && col >= 0 && col < PQnfields(s->res) &&
           !PQgetisnull(s->res, s->row, col);
}

static const char *pg_column_text(struct db_stmt *st, int col)
{
    struct pstmt *s = P(st);
    if (!has_value(s, col))
        return NULL;
    const char *v = PQgetvalue(s->res, s->row, col);
    if (PQftype(s->res, col) == BOOLOID) /* a comparison read as SQLite answers it: 1 or 0 */
        return v[0] == 't' ? "1" : "0";
    return v;
}

static int64_t pg_column_int64(struct db_stmt *st, int col)
{
    const char *v = pg_column_text(st, col);
    return v ? strtoll(v, NULL, 10) : 0;
}

static bool pg_column_is_null(struct db_stmt *st, int col)
{
    return !has_value(P(st), col);
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* A bytea column arrives in text as \x and hex digits (bytea_output = hex, the default). */
static const void *pg_column_blob(struct db_stmt *st, int col, size_t *len)
{
    struct pstmt *s = P(st);
    *len = 0;
    if (!has_value(s, col))
        return "";
    const char *v = PQgetvalue(s->res, s->row, col);
    size_t n = (size_t)PQgetlength(s->res, s->row, col);
    if (PQftype(s->res, col) != BYTEAOID) {
        *len = n;
        return v;
    }
    if (n < 2 || v[0] != '\\' || v[1] != 'x')
        return "";
    size_t out = (n - 2) / 2;
    unsigned char *b = realloc(s->blob, out + 1);
    if (!b)
        return "";
    s->blob = b;
    for (size_t i = 0; i < out; i++) {
        int hi = hexval(v[2 + 2 * i]), lo = hexval(v[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return "";
        b[i] = (unsigned char)(hi << 4 | lo);
    }
    b[out] = '\0';
    *len = out;
    return b;
}

static void pg_reset(struct db_stmt *st)
{
    stmt_clear(P(st));
}

static int64_t pg_changes(void)
{
    struct pconn *c = existing();
    return c ? c->changes : 0;
}

static const char *pg_errmsg(void)
{
    struct pconn *c = existing();
    if (last_used && (last_used == c || (last_used == my_side && my_side_generation ==
                                                                      atomic_load(&generation))))
        return last_used->err;
    return c ? c->err : "no connection";
}

/* Results left by statements stopped mid-iteration: freed at every transaction boundary. */
static void clear_results(struct pconn *c)
{
    for (size_t i = 0; i < c->nslots; i++) {
        if (c->slots[i] && c->slots[i]->res)
            stmt_clear(c->slots[i]);
    }
}

static _Thread_local bool retry_wanted;

/* Opens a transaction on this thread's connection with begin (a BEGIN statement). */
static struct pconn *begin_tx(const char *begin)
{
    struct pconn *c = current();
    if (!c)
        return NULL;
    if (c->in_tx) {
        log_error("storage: begin while a transaction is already open");
        return NULL;
    }
    clear_results(c);
    c->tx_failed = c->retry = c->changed_watched = false;
    retry_wanted = false;
    if (command(c, begin) != 0) {
        log_error("storage: %s", c->err);
        return NULL;
    }
    c->in_tx = true;
    return c;
}

static int pg_begin(bool write)
{
    return begin_tx(write ? "BEGIN ISOLATION LEVEL SERIALIZABLE"
                          : "BEGIN ISOLATION LEVEL REPEATABLE READ")
               ? 0
               : -1;
}

static void release_serial(struct pconn *c);

/* A write whose transactions always conflict with each other's (every write of a workspace
 * extends its audit chain) waits its turn instead: a session advisory lock on the key, taken
 * before BEGIN so that the transaction's snapshot is taken after the previous holder
 * committed (a lock taken inside the transaction would come after its snapshot, and the
 * conflict would remain). Released once the transaction ended. The wait is bounded by
 * lock_timeout (then 503 unavailable). */
static int pg_begin_serial(bool write, const char *key)
{
    struct pconn *c = current();
    if (!c)
        return -1;
    if (write && key && *key && !c->in_tx && !c->serial_held) {
        uint64_t h = 0xcbf29ce484222325u; /* FNV-1a of the key */
        for (const char *p = key; *p; p++) {
            h ^= (unsigned char)*p;
            h *= 0x100000001b3u;
        }
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%lld)", (long long)(int64_t)h);
        if (command(c, sql) != 0) {
            log_error("storage: %s", c->err);
            return -1;
        }
        c->serial_held = true;
        c->serial_lock = (int64_t)h;
    }
    if (pg_begin(write) != 0) {
        release_serial(c);
        return -1;
    }
    return 0;
}

/* Gives back the lock pg_begin_serial took, once its transaction has ended. (A connection
 * that broke has lost it already: PostgreSQL frees a session's locks when it ends.) */
static void release_serial(struct pconn *c)
{
    if (!c->serial_held)
        return;
    c->serial_held = false;
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%lld)", (long long)c->serial_lock);
    if (PQstatus(c->pg) == CONNECTION_OK && command(c, sql) != 0)
        log_warn("storage: %s", c->err);
}

static void pg_rollback(void)
{
    struct pconn *c = existing();
    if (!c)
        return;
    clear_results(c);
    if (c->in_tx && command(c, "ROLLBACK") != 0)
        log_error("storage: %s", c->err);
    if (c->in_tx) /* after a failed commit the flag is already where it belongs */
        retry_wanted = c->retry;
    c->in_tx = c->tx_failed = c->retry = c->changed_watched = false;
    release_serial(c);
}

static int pg_commit(void)
{
    struct pconn *c = existing();
    if (!c || !c->in_tx) {
        log_error("storage: commit without an open transaction");
        return -1;
    }
    clear_results(c);
    if (c->tx_failed) { /* PostgreSQL would answer COMMIT with ROLLBACK */
        log_error("storage: commit of a transaction a statement failed in");
        pg_rollback();
        return -1;
    }
    /* Other instances hear of a change to a watched table from this row (runtime/instances.h),
     * bumped inside the commit that made the change. */
    if (c->changed_watched) {
        /* Two commits that both changed watched tables both move this row: the later one is
         * a serialization failure, rerun like any other. */
        PGresult *bump =
            PQexec(c->pg, "UPDATE storage_generations SET value = value + 1 WHERE name = 'watched'");
        bool bumped = PQresultStatus(bump) == PGRES_COMMAND_OK;
        if (!bumped) {
            set_err(c, "the watched generation", PQresultErrorMessage(bump));
            mapped_error(c, bump);
            log_error("storage: %s", c->err);
        }
        PQclear(bump);
        if (!bumped) {
            pg_rollback();
            return -1;
        }
    }
    PGresult *res = PQexec(c->pg, "COMMIT");
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK && strcmp(PQcmdStatus(res), "COMMIT") == 0;
    if (!ok) {
        set_err(c, "COMMIT", PQresultErrorMessage(res));
        mapped_error(c, res);
        log_error("storage: %s", c->err);
    }
    PQclear(res);
    if (!ok) {
        retry_wanted = c->retry;
        c->in_tx = c->tx_failed = c->retry = c->changed_watched = false;
        /* A failed COMMIT ends the transaction; a lost connection leaves its fate unknown to
         * us, and the request answers 500 ("not stored") either way. */
        release_serial(c);
        return -1;
    }
    bool changed = c->changed_watched;
    c->in_tx = c->tx_failed = c->retry = c->changed_watched = false;
    release_serial(c);
    if (changed)
        storage_watched_changed();
    return 0;
}

static bool pg_in_tx(void)
{
    struct pconn *c = existing();
    return c && c->in_tx;
}

static bool pg_should_retry(void)
{
    bool was = retry_wanted;
    retry_wanted = false;
    return was;
}

/* A request's part of a transaction: a savepoint (PostgreSQL has no cheaper kind; rolling back
 * to it also clears a failed statement's abort of the transaction). */
static _Thread_local bool in_savepoint;

static int pg_savepoint(void)
{
    struct pconn *c = existing();
    if (!c || !c->in_tx || in_savepoint) {
        log_error("storage: savepoint outside a transaction or inside another");
        return -1;
    }
    clear_results(c);
    if (command(c, "SAVEPOINT request") != 0) {
        log_error("storage: %s", c->err);
        c->tx_failed = true;
        return -1;
    }
    in_savepoint = true;
    return 0;
}

static int pg_savepoint_end(bool keep)
{
    struct pconn *c = existing();
    if (!in_savepoint)
        return -1;
    in_savepoint = false;
    if (!c || !c->in_tx)
        return -1;
    clear_results(c);
    if (c->tx_failed)
        keep = false;
    if (!keep && command(c, "ROLLBACK TO SAVEPOINT request") != 0) {
        log_error("storage: %s", c->err);
        return -1;
    }
    c->tx_failed = false;
    if (command(c, "RELEASE SAVEPOINT request") != 0) {
        log_error("storage: %s", c->err);
        c->tx_failed = true;
        return -1;
    }
    return c->retry ? -1 : 0;
}

static int pg_unguarded_begin(void)
{
    return pg_savepoint();
}

static int pg_unguarded_end(bool keep)
{
    return pg_savepoint_end(keep) == 0 ? 0 : -1;
}

/* table and column are the caller's constants, never input. */
static int pg_claim(const char *table, const char *column, const char *id)
{
    struct pconn *c = existing();
    if (!c || !c->in_tx) {
        log_error("storage: claim outside a transaction");
        return -1;
    }
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s WHERE %s = ? FOR UPDATE SKIP LOCKED", table,
             column);
    struct db_stmt *st = pg_prepare(sql);
    if (!st)
        return -1;
    pg_bind_text(st, 1, id);
    int rc = pg_step(st);
    pg_reset(st);
    if (rc == DB_ROW)
        return 1;
    return rc == DB_DONE ? 0 : -1;
}

static int64_t pg_data_version(void)
{
    return -1;
}

static void pg_lazy_sync(void)
{
    struct pconn *c = current();
    if (c && command(c, "SET synchronous_commit = off") != 0)
        log_warn("storage: %s", c->err);
}

/* The schema lock: a transaction-level advisory lock (released by COMMIT or ROLLBACK) of a
 * number of our own ("treasury" in ASCII). READ COMMITTED, unlike every other write: each
 * statement after the lock sees what the previous holder committed, where a SERIALIZABLE
 * snapshot, taken by the lock's own statement, would not. */
#define SCHEMA_LOCK "SELECT pg_advisory_xact_lock(8390876177658426745)"

static int pg_begin_migration(void)
{
    struct pconn *c = begin_tx("BEGIN ISOLATION LEVEL READ COMMITTED");
    if (!c)
        return -1;
    /* An instance starting while another applies a slow migration waits for it, and the
     * migration's DDL waits for the tables' locks, however long: not the 5 s of requests. */
    if (command(c, "SET LOCAL lock_timeout = 0") != 0 || command(c, SCHEMA_LOCK) != 0) {
        pg_rollback();
        return -1;
    }
    return 0;
}

/* PQexec runs a string of several statements in the open transaction. */
static int pg_exec_script(const char *sql, char *err, size_t errlen)
{
    struct pconn *c = existing();
    if (!c) {
        snprintf(err, errlen, "no connection");
        return -1;
    }
    PGresult *res = PQexec(c->pg, sql);
    ExecStatusType s = PQresultStatus(res);
    int ret = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : -1;
    if (ret != 0) {
        set_err(c, NULL, PQresultErrorMessage(res));
        snprintf(err, errlen, "%s", c->err);
        c->tx_failed = true;
    }
    PQclear(res);
    return ret;
}

static int pg_has_table(const char *name)
{
    struct db_stmt *st = pg_prepare("SELECT 1 FROM information_schema.tables "
                                    "WHERE table_schema = current_schema() AND table_name = ?");
    if (!st)
        return -1;
    pg_bind_text(st, 1, name);
    int rc = pg_step(st);
    pg_reset(st);
    return rc == DB_ROW ? 1 : rc == DB_DONE ? 0 : -1;
}

/* Listing order compares ids and timestamps as bytes, as SQLite does: a database whose
 * collation orders text by language rules would order pages differently from their cursors. */
static int check_collation(struct pconn *c, char *err, size_t errlen)
{
    char coll[64];
    if (query_one(c, "SELECT datcollate FROM pg_database WHERE datname = current_database()",
                  coll, sizeof coll) != 0) {
        snprintf(err, errlen, "%s", c->err);
        return -1;
    }
    if (strcmp(coll, "C") != 0 && strcmp(coll, "POSIX") != 0) {
        snprintf(err, errlen,
                 "the database's collation is %s; treasury-server needs C (bytewise) order: "
                 "create it with createdb --locale=C --template=template0",
                 coll);
        return -1;
    }
    return 0;
}

static int pg_open(const char *url, char *err, size_t errlen)
{
    pthread_mutex_lock(&conns_lock);
    bool already = db_url != NULL;
    pthread_mutex_unlock(&conns_lock);
    if (already) {
        snprintf(err, errlen, "storage is already open");
        return -1;
    }
    struct pconn *c = conn_open(url, err, errlen);
    if (!c)
        return -1;
    if (check_collation(c, err, errlen) != 0) {
        conn_close(c);
        return -1;
    }
    char *copy = strdup(url);
    if (!copy) {
        conn_close(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_lock(&conns_lock);
    db_url = copy;
    c->next = conns;
    conns = c;
    my_conn = c;
    my_generation = atomic_load(&generation);
    pthread_mutex_unlock(&conns_lock);
    return 0;
}

static void pg_close(void)
{
    pthread_mutex_lock(&conns_lock);
    struct pconn *list = conns;
    conns = NULL;
    free(db_url);
    db_url = NULL;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&conns_lock);
    my_conn = my_side = last_used = NULL;
    in_savepoint = retry_wanted = false;
    while (list) {
        struct pconn *next = list->next;
        conn_close(list);
        list = next;
    }
}

const struct storage_engine storage_engine_pg = {
    .name = "postgresql",
    .dialect = MIGRATE_PG,
    .open = pg_open,
    .close = pg_close,
    .prepare = pg_prepare,
    .prepare_outside = pg_prepare_outside,
    .bind_text = pg_bind_text,
    .bind_int64 = pg_bind_int64,
    .bind_null = pg_bind_null,
    .bind_blob = pg_bind_blob,
    .step = pg_step,
    .column_text = pg_column_text,
    .column_int64 = pg_column_int64,
    .column_is_null = pg_column_is_null,
    .column_blob = pg_column_blob,
    .reset = pg_reset,
    .changes = pg_changes,
    .errmsg = pg_errmsg,
    .begin = pg_begin,
    .begin_serial = pg_begin_serial,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .in_tx = pg_in_tx,
    .lazy_sync = pg_lazy_sync,
    .begin_migration = pg_begin_migration,
    .exec_script = pg_exec_script,
    .has_table = pg_has_table,
    .should_retry = pg_should_retry,
    .savepoint = pg_savepoint,
    .savepoint_end = pg_savepoint_end,
    .unguarded_begin = pg_unguarded_begin,
    .unguarded_end = pg_unguarded_end,
    .claim = pg_claim,
    .data_version = pg_data_version,
};
