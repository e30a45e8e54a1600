/* Composition root: configuration, data directory, storage, keys, first-start bootstrap, then
 * the server until SIGINT/SIGTERM. The only runtime file that knows the generated tables. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "generated/problems.h"
#include "generated/routes.h"
#include "generated/scopes.h"
#include "handlers/accounts_oauth.h"
#include "handlers/invitations.h"
#include "handlers/jobs.h"
#include "handlers/privileges.h"
#include "handlers/workspace.h"
#include "handlers/admin_cli.h"
#include "runtime/auth.h"
#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/cors.h"
#include "runtime/cursor.h"
#include "runtime/group_commit.h"
#include "runtime/housekeeping.h"
#include "runtime/idempotency.h"
#include "runtime/job_runner.h"
#include "runtime/keys.h"
#include "runtime/log.h"
#include "runtime/mail.h"
#include "runtime/offload.h"
#include "runtime/password.h"
#include "runtime/privileges.h"
#include "runtime/ratelimit.h"
#include "runtime/revocation.h"
#include "runtime/seal.h"
#include "runtime/server.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define ERRLEN 2048 /* room for a data-dir path (CONFIG_PATH_MAX) and a reason */

static struct token_key signing_key;

static bool builtin_role(const char *key)
{
    return scopes_role(key) != NULL;
}

/* The data directory holds every tenant's data and the keys: like PostgreSQL's, it may be
 * 0700 or 0750, never writable by its group nor open to others. Group-readable, it shows the
 * group the names of its files and nothing in them but the public TLS certificate (the others
 * are 0600: umask 077), which warn logs (the check an operator command makes before opening
 * the storage does not, so it is said once). */
static int ensure_data_dir(const char *dir, bool warn, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "data directory %s is not a directory", dir);
            return -1;
        }
        if (st.st_mode & 027) {
            snprintf(err, errlen,
                     "data directory %s is %s (mode %04o); it holds every workspace's data and "
                     "the keys. Fix with: chmod 700 %s",
                     dir, (st.st_mode & 007) ? "open to other users" : "writable by its group",
                     (unsigned)(st.st_mode & 07777), dir);
            return -1;
        }
        if (warn && (st.st_mode & 040))
            log_warn("data directory %s is readable by its group (mode %04o): the group sees "
                     "the names of the files in it, and reads none but the TLS certificate "
                     "(the others are 0600). Unless that is meant, chmod 700 %s",
                     dir, (unsigned)(st.st_mode & 07777), dir);
        return 0;
    }
    if (mkdir(dir, 0700) != 0) {
        snprintf(err, errlen, "cannot create data directory %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Files created before the umask was set (0644: SQLite's default mode, which its WAL and SHM
 * copy) are made private; the umask keeps every new one so. */
static void private_files(const char *db)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char path[CONFIG_PATH_MAX + 40];
    struct stat st;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(path, sizeof path, "%s%s", db, suffixes[i]);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 077))
            continue;
        if (chmod(path, st.st_mode & 0700) == 0)
            log_warn("%s was readable by others (mode %04o); made it private (%04o)", path,
                     (unsigned)(st.st_mode & 07777), (unsigned)(st.st_mode & 0700));
        else
            log_warn("%s is readable by others (mode %04o) and cannot be changed: %s", path,
                     (unsigned)(st.st_mode & 07777), strerror(errno));
    }
}

/* The SQLite file the server uses: --database, or treasury.db in the data directory. */
static void sqlite_path(const struct config *c, char *path, size_t n)
{
    if (c->database[0])
        snprintf(path, n, "%s", c->database);
    else
        snprintf(path, n, "%s/treasury.db", c->data_dir);
}

static int open_storage(const struct config *c, char *err, size_t errlen)
{
    char path[CONFIG_PATH_MAX + 32];
    char why[512] = "";
    if (ensure_data_dir(c->data_dir, true, err, errlen) != 0)
        return -1;
    if (storage_is_postgresql_url(c->database)) {
        /* The URL may hold a password: never echoed. */
        if (storage_open(c->database, why, sizeof why) != 0) {
            snprintf(err, errlen, "cannot open the PostgreSQL database: %s", why);
            return -1;
        }
        return 0;
    }
    sqlite_path(c, path, sizeof path);
    private_files(path);
    if (storage_open(path, why, sizeof why) != 0) {
        snprintf(err, errlen, "cannot open database %s: %s", path, why);
        return -1;
    }
    return 0;
}

/* admin_open_fn: an operator command about to run. Only one that may create the first
 * workspace creates a missing data directory or database. */
static int open_for_admin(bool create, void *arg, char *err, size_t errlen)
{
    const struct config *c = arg;
    char path[CONFIG_PATH_MAX + 32];
    struct stat st;
    sqlite_path(c, path, sizeof path);
    if (stat(c->data_dir, &st) == 0 && ensure_data_dir(c->data_dir, false, err, errlen) != 0)
        return -1; /* an existing directory's permissions first */
    if (!create && !storage_is_postgresql_url(c->database) && stat(path, &st) != 0) {
        snprintf(err, errlen, "no database at %s (check --data-dir; start the server once or "
                              "run admin create-workspace to create one)", path);
        return -1;
    }
    return open_storage(c, err, errlen);
}

/* The offload lanes (offload.h): password hashes, as many as may run at once (password.c);
 * with PostgreSQL also the writes, each waiting on the database's commit for most of its time,
 * as many as may wait at once (SQLite: the group-commit writer takes them). */
#define HASHING_THREADS 2
#define PG_WRITE_THREADS 16

static void apply_password_cost(void)
{
    const char *v = getenv("TREASURY_SCRYPT_LOG2N");
    if (v && *v)
        password_set_cost(atoi(v));
}

/* Connections, lingering sockets and the database each hold a descriptor: --max-connections
 * 1024 alone passes a soft limit of 1024, so the soft limit is raised to the hard one. */
static void raise_descriptor_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            log_warn("cannot raise the open-file limit to %llu: %s",
                     (unsigned long long)rl.rlim_max, strerror(errno));
    }
}

static int run_server(const struct config *c)
{
    char err[ERRLEN] = "";
    char cert_path[CONFIG_PATH_MAX + 16], key_path[CONFIG_PATH_MAX + 16];
    char *cert_pem = NULL, *key_pem = NULL;
    char fp[160];
    bool created = false;
    int rc = 1;
    sigset_t stop_signals;

    log_init(c->log_format);
    apply_password_cost();
    raise_descriptor_limit();
    if (open_storage(c, err, sizeof err) != 0)
        goto out;
    if (clock_init(c->data_dir) != 0) {
        snprintf(err, sizeof err, "cannot set up the test clock in %s", c->data_dir);
        goto out;
    }
    if (keys_signing_key(c->data_dir, &signing_key, &created, err, sizeof err) != 0)
        goto out;
    if (created)
        log_info("created JWT signing key %s/jwt-signing.key (kid %s)", c->data_dir,
                 signing_key.kid);
    snprintf(signing_key.issuer, sizeof signing_key.issuer, "%s", c->public_url);
    snprintf(signing_key.audience, sizeof signing_key.audience, "treasury-api");
    signing_key.leeway_seconds = 30;
    cursor_init(signing_key.secret, sizeof signing_key.secret);
    seal_init(signing_key.secret, sizeof signing_key.secret);

    if (c->tls_cert[0]) {
        snprintf(cert_path, sizeof cert_path, "%s", c->tls_cert);
        snprintf(key_path, sizeof key_path, "%s", c->tls_key);
    } else {
        if (keys_ensure_tls(c->data_dir, &created, err, sizeof err) != 0)
            goto out;
        snprintf(cert_path, sizeof cert_path, "%s/tls.crt", c->data_dir);
        snprintf(key_path, sizeof key_path, "%s/tls.key", c->data_dir);
        if (created)
            log_info("created self-signed TLS certificate %s for localhost, 127.0.0.1, ::1",
                     cert_path);
    }
    cert_pem = keys_read_file(cert_path, NULL, err, sizeof err);
    if (!cert_pem)
        goto out;
    key_pem = keys_read_file(key_path, NULL, err, sizeof err);
    if (!key_pem)
        goto out;
    if (keys_cert_fingerprint(cert_path, fp, sizeof fp, err, sizeof err) != 0)
        goto out;
    log_info("TLS certificate %s SHA-256 fingerprint %s", cert_path, fp);

    if (mail_init(c->smtp_url, c->mail_from, c->data_dir, err, sizeof err) != 0)
        goto out;
    if (admin_bootstrap(stdout, err, sizeof err) != 0)
        goto out;
    fflush(stdout);
    if (routes_init(err, sizeof err) != 0)
        goto out;
    problem_register(generated_problem_codes, generated_problem_codes_count);
    auth_init(&signing_key, &scopes_mask, SCOPE_WORKSPACE_ADMIN, scopes_all());
    cors_init(&accounts_cors_origin_allowed); /* the origins OAuth clients registered */
    /* Scopes as the principal holds them now, re-read after any change to what decides them. */
    privileges_init(&handlers_privileges);
    if (storage_watch(handlers_privilege_tables, handlers_privilege_tables_count,
                      &privileges_changed) != 0) {
        snprintf(err, sizeof err, "too many privilege tables to watch");
        goto out;
    }
    ratelimit_init(c->rate_limit);
    ratelimit_set_quotas_source(&handlers_workspace_quotas);
    revocation_set_source(&handlers_revocations);
    idempotency_set_retention_source(&workspace_idempotency_retention_s);
    /* Quotas spent before a restart still count: a restart is no way around a limit. */
    if (ratelimit_restore(ratelimit_now_ns()) != 0 || ratelimit_load_overrides() != 0) {
        snprintf(err, sizeof err, "cannot load the rate-limit state from the database");
        goto out;
    }
    if (revocation_load(clock_now_s()) != 0) {
        snprintf(err, sizeof err, "cannot load the revoked sessions from the database");
        goto out;
    }

    /* Block the stop signals in every thread (libmicrohttpd's inherit the mask) and wait for
     * them here, so shutdown runs in ordinary code, not in a signal handler. */
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (log_buffer_start() != 0 || housekeeping_start() != 0) {
        snprintf(err, sizeof err, "cannot start the log flusher and housekeeping threads");
        goto out;
    }
    /* SQLite's checkpoints have a thread of their own; PostgreSQL runs its own. */
    if ((storage_batches_writes() && storage_checkpoints_start() != 0) ||
        group_commit_start() != 0 || offload_start(HASHING_THREADS, storage_batches_writes() ? 0 : PG_WRITE_THREADS) != 0) {
        snprintf(err, sizeof err, "cannot start the checkpoint, group-commit and offload threads");
        group_commit_stop();
        storage_checkpoints_stop();
        housekeeping_stop();
        goto out;
    }
    if (server_start(c, cert_pem, key_pem, &routes_match, err, sizeof err) != 0) {
        offload_stop();
        group_commit_stop();
        storage_checkpoints_stop();
        housekeeping_stop();
        goto out;
    }
    const struct job mail = mail_job(); /* the outbox the handlers (and admin commands) fill */
    if (handlers_jobs(c) != 0 || job_runner_add(&mail) != 0 || job_runner_start() != 0) {
        job_runner_stop(); /* forgets what was added */
        snprintf(err, sizeof err, "cannot start the background jobs");
        server_stop();
        offload_stop();
        group_commit_stop();
        storage_checkpoints_stop();
        housekeeping_stop();
        goto out;
    }
    if (c->http_port)
        log_info("listening on %s (addresses %s; plain HTTP on port %d answers 400 use_https)",
                 c->public_url, c->listen, c->http_port);
    else
        log_info("listening on %s (addresses %s)", c->public_url, c->listen);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    log_info("received %s, draining in-flight requests", sig == SIGINT ? "SIGINT" : "SIGTERM");
    server_stop();
    offload_stop();
    group_commit_stop();
    job_runner_stop();
    housekeeping_stop();
    storage_checkpoints_stop();
    log_info("stopped");
    rc = 0;
out:
    log_buffer_stop(); /* whatever access lines are still buffered are written first */
    mail_shutdown();
    if (rc != 0)
        log_error("%s", err);
    storage_close();
    free(cert_pem);
    free(key_pem);
    return rc;
}

int main(int argc, char **argv)
{
    struct config c;
    /* Everything this process creates (database, WAL, keys, spool) is its user's alone. */
    umask(077);
    password_memory_init(); /* before OpenSSL allocates anything */
    switch (config_parse(&c, argc, argv, stdout, stderr)) {
    case CONFIG_EXIT_OK:
        return 0;
    case CONFIG_USAGE:
        return 2;
    case CONFIG_OK:
        break;
    }
    admin_init(&builtin_role);
    admin_set_inviter(&invitations_issue_by_operator, c.public_url);
    if (c.subcommand_argc) {
        log_init(LOG_FORMAT_TEXT);
        apply_password_cost();
        int rc = admin_main(argc - c.subcommand_argc, argv + c.subcommand_argc, stdout, stderr,
                            &open_for_admin, &c);
        storage_close();
        return rc;
    }
    return run_server(&c);
}
