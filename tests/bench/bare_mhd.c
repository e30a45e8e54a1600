/* The bench's floor: bare libmicrohttpd with the server's own daemon settings (TLS priorities,
 * SERVER_MHD_FLAGS' poll thread pool of one thread per usable core, per-connection memory), and
 * nothing of the server on top: no routing, authentication, rate limit, idempotency, JSON or
 * access log. tests/bench/bench.py runs it beside the server and quotes the server against it.
 *
 *   GET  any path       200 {"status":"ok"}
 *   POST /full          the body INSERTed as one row, its own transaction, synchronous=FULL
 *                       (an fsync per request), then 201
 *   POST /normal        the same with synchronous=NORMAL (nothing synced: not durable)
 *
 * Usage: bare_mhd PORT CERT.pem KEY.pem DATA-DIR. Runs until killed. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <microhttpd.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/server.h" /* SERVER_TLS_PRIORITIES, SERVER_CONNECTION_MEMORY */

#define MAX_BODY 8192

struct store {
    pthread_mutex_t mu; /* the pool's threads share the connection */
    sqlite3 *db;
    sqlite3_stmt *insert;
};

static struct store full = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};
static struct store normal = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};

struct body {
    size_t len;
    char data[MAX_BODY];
};

/* The whole of a PEM file (the certificate, then the key: two calls at most). */
static char *slurp(const char *path)
{
    static char bufs[2][16384];
    static int next;
    FILE *f = fopen(path, "rb");
    if (!f || next == 2) {
        perror(path);
        exit(1);
    }
    char *out = bufs[next++];
    size_t n = fread(out, 1, sizeof bufs[0] - 1, f);
    out[n] = '\0';
    fclose(f);
    return out;
}

static void open_store(struct store *s, const char *dir, const char *name, const char *sync)
{
    char path[4096], sql[256];
    snprintf(path, sizeof path, "%s/%s.db", dir, name);
    snprintf(sql, sizeof sql,
             "PRAGMA journal_mode = WAL; PRAGMA synchronous = %s; "
             "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
             sync);
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != 0 ||
        sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO t (body) VALUES (?)", -1, &s->insert, NULL) !=
            SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", path, sqlite3_errmsg(s->db));
        exit(1);
    }
}

static int insert(struct store *s, const struct body *b)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_bind_text(s->insert, 1, b->data, (int)b->len, SQLITE_STATIC);
    int rc = sqlite3_step(s->insert);
    sqlite3_reset(s->insert);
    pthread_mutex_unlock(&s->mu);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The answers: never written, but libmicrohttpd's buffer parameter is not const. */
static char ok_json[] = "{\"status\":\"ok\"}";
static char created_json[] = "{\"status\":\"created\"}";
static char not_found_json[] = "{\"status\":\"not found\"}";
static char failed_json[] = "{\"status\":\"insert failed\"}";

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, char *json)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ctx)
{
    (void)cls;
    (void)version;
    struct body *b = *ctx;
    if (!b) { /* answered on a later call: the first would close the connection */
        b = calloc(1, sizeof *b);
        *ctx = b;
        return b ? MHD_YES : MHD_NO;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (b->len + n > sizeof b->data)
            return MHD_NO;
        memcpy(b->data + b->len, upload, n);
        b->len += n;
        return MHD_YES;
    }
    if (strcmp(method, "POST") != 0)
        return answer(conn, 200, ok_json);
    struct store *s = strcmp(url, "/full") == 0     ? &full
                      : strcmp(url, "/normal") == 0 ? &normal
                                                    : NULL;
    if (!s)
        return answer(conn, 404, not_found_json);
    if (insert(s, b) != 0)
        return answer(conn, 500, failed_json);
    return answer(conn, 201, created_json);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    free(*ctx);
    *ctx = NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s PORT CERT.pem KEY.pem DATA-DIR\n", argv[0]);
        return 2;
    }
    open_store(&full, argv[4], "full", "FULL");
    open_store(&normal, argv[4], "normal", "NORMAL");
    cpu_set_t set;
    unsigned threads = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        threads = (unsigned)CPU_COUNT(&set);
    struct MHD_Daemon *d = MHD_start_daemon(
        SERVER_MHD_FLAGS | MHD_USE_TLS,
        (uint16_t)atoi(argv[1]), NULL, NULL, &on_request, NULL, MHD_OPTION_THREAD_POOL_SIZE,
        threads, MHD_OPTION_HTTPS_MEM_CERT, slurp(argv[2]), MHD_OPTION_HTTPS_MEM_KEY,
        slurp(argv[3]), MHD_OPTION_HTTPS_PRIORITIES, SERVER_TLS_PRIORITIES,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVER_CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, &on_completed, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bare_mhd: cannot start on port %s\n", argv[1]);
        return 1;
    }
    printf("listening\n");
    fflush(stdout);
    for (;;)
        pause();
}
