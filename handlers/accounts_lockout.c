/* Failed-login back-off that hands attackers no denial of service (issue 18), after OWASP's
 * "device cookies" design.
 *
 * - A successful login gives the client a device token (random, 256 bits, stored as its
 *   SHA-256 only, per user, living DEVICE_LIFETIME_MS from its last use). A client that sends
 *   it back with the same account's email is a known device.
 * - Failures are counted per client of an account: a known device's own count, or one count
 *   for every unknown client of the account (keyed by a digest of the email, so unknown emails
 *   are counted exactly like real ones). The first FREE_FAILURES failures cost nothing; after
 *   that each further attempt must wait 1 s, 2 s, 4 s, ... (doubling with every failure,
 *   capped at BACKOFF_CAP_S) after the last failure. A success forgets the count; a count
 *   whose last failure is FORGET_MS old is forgotten too (and purged).
 * - While a client is held back, an attempt that carries a second factor is still heard: with
 *   the right password and the right code it logs in; anything else answers the same 429.
 *   Without a second factor it is refused at once, before the password is hashed.
 * - Unknown clients' failures are also limited per client address (ADDRESS_FAILURES per
 *   ADDRESS_FAILURE_PERIOD_S, a GCRA quota of runtime/ratelimit.c): password spraying across
 *   accounts from one address stops there. A known device's failures count against it only.
 *
 * An attempt is counted as a failure before the password is hashed, and committed at once, so
 * however many attempts arrive together they all see each other; a success takes it back. */
#include <stdio.h>
#include <string.h>

#include "handlers/accounts.h"
#include "runtime/clock.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/ipaddr.h"
#include "runtime/log.h"
#include "runtime/storage.h"

#define FREE_FAILURES 10
#define BACKOFF_CAP_S 900
#define FORGET_MS INT64_C(86400000)
#define DEVICE_LIFETIME_MS (INT64_C(180) * 86400000)
#define DEVICES_PER_USER_TEXT "20" /* a user keeps their 20 most recently used devices */
#define ADDRESS_FAILURES 100
#define ADDRESS_FAILURE_PERIOD_S 3600
/* Wrong second factors (with the right password) per account for unknown clients, per device
 * for a known one: 5 at once, then one per 3 minutes. */
#define CODE_FAILURES 5
#define CODE_FAILURE_PERIOD_S 900

static int db_failed(const char *what)
{
    log_error("login guard: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* How long after its last failure a client with `failures` failures must wait. */
static int64_t backoff_delay_ms(int64_t failures)
{
    if (failures < FREE_FAILURES)
        return 0;
    int64_t k = failures - FREE_FAILURES;
    int64_t d = INT64_C(1000) << (k > 20 ? 20 : k);
    return d > BACKOFF_CAP_S * INT64_C(1000) ? BACKOFF_CAP_S * INT64_C(1000) : d;
}

/* The known device of user_id whose token is token: its id into out ("" when none). */
static int find_device(const char *user_id, const char *token, char *out, size_t n)
{
    char hash[DIGEST_HEX_LEN + 1];
    out[0] = '\0';
    if (!token || !*token || !user_id || !*user_id ||
        digest_sha256_hex(token, strlen(token), hash) != 0)
        return 0;
    struct db_stmt *st = storage_prepare(
        "SELECT id FROM login_devices WHERE token_hash = ? AND user_id = ? AND expires_at > ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, hash);
    db_bind_text(st, 2, user_id);
    db_bind_int64(st, 3, clock_now_ms());
    int rc = db_step(st);
    if (rc == DB_ROW)
        acc_copy_column(st, 0, out, n);
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : db_failed("device lookup");
}

static int backoff_load(const char *key, int64_t *failures, int64_t *last)
{
    *failures = *last = 0;
    struct db_stmt *st =
        storage_prepare("SELECT failures, last_failure_at FROM login_backoff WHERE key = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, key);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        *failures = db_column_int64(st, 0);
        *last = db_column_int64(st, 1);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("back-off lookup");
    if (*last < clock_now_ms() - FORGET_MS)
        *failures = *last = 0; /* quiet for a day: forgotten */
    return 0;
}

/* Sets key's count (deleting the row at 0). */
static int backoff_store(const char *key, int64_t failures, int64_t last)
{
    struct db_stmt *st = storage_prepare(
        failures > 0 ? "INSERT INTO login_backoff (key, failures, last_failure_at) "
                       "VALUES (?1, ?2, ?3) ON CONFLICT (key) DO UPDATE SET failures = ?2, "
                       "last_failure_at = ?3"
                     : "DELETE FROM login_backoff WHERE key = ?1");
    if (!st)
        return -1;
    db_bind_text(st, 1, key);
    if (failures > 0) {
        db_bind_int64(st, 2, failures);
        db_bind_int64(st, 3, last);
    }
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : db_failed("back-off store");
}

/* The client address as a quota key, an IPv6 client by its /64 (as runtime/pipeline.c). */
static void address_key(const struct req *r, char *key, size_t n)
{
    struct ipaddr a;
    const char *peer = r->peer ? r->peer : "";
    if (ipaddr_parse(peer, strlen(peer), &a) && !ipaddr_is_v4(&a)) {
        char text[INET6_ADDRSTRLEN];
        struct ipaddr block = ipaddr_block(&a);
        ipaddr_text(&block, text, sizeof text);
        snprintf(key, n, "login-fail-ip:%s/64", text);
        return;
    }
    snprintf(key, n, "login-fail-ip:%s", peer);
}

static void refuse(struct req *r, const char *policy, int64_t limit, int64_t period,
                   int64_t retry, const char *detail)
{
    struct ratelimit_verdict v;
    memset(&v, 0, sizeof v);
    v.limit = limit;
    v.period_s = period;
    v.retry_after = retry < 1 ? 1 : retry;
    v.reset_seconds = v.retry_after;
    v.reset_epoch = clock_now_s() + v.retry_after;
    ratelimit_set_headers(r, policy, &v);
    req_problem(r, 429, "rate_limited", "%s Retry in %lld s.", detail, (long long)v.retry_after);
}

void acc_guard_refuse(struct req *r, const struct acc_guard *g)
{
    refuse(r, "login_failures", FREE_FAILURES, BACKOFF_CAP_S, g->retry_after,
           g->device_id[0]
               ? "Too many failed logins from this device."
               : "Too many failed logins for this account from unknown devices: log in from a "
                 "device that logged in before (send its device_token), or add your second "
                 "factor (otp or recovery_code) to the password.");
}

int acc_guard_begin(struct req *r, const char *email_norm, const char *user_id,
                    const char *device_token, bool second_factor, struct acc_guard *g)
{
    memset(g, 0, sizeof *g);
    if (find_device(user_id, device_token, g->device_id, sizeof g->device_id) != 0)
        return -1;
    if (g->device_id[0]) {
        snprintf(g->key, sizeof g->key, "dev:%s", g->device_id);
    } else {
        char h[DIGEST_HEX_LEN + 1];
        if (digest_sha256_hex(email_norm, strlen(email_norm), h) != 0)
            return -1;
        snprintf(g->key, sizeof g->key, "acct:%.32s", h);
    }
    int64_t now = clock_now_ms(), failures = 0, last = 0;
    if (backoff_load(g->key, &failures, &last) != 0)
        return -1;
    int64_t allowed_at = last + backoff_delay_ms(failures);
    g->in_backoff = failures >= FREE_FAILURES && now < allowed_at;
    g->prev_failures = failures;
    g->prev_last = last;
    if (g->in_backoff && !second_factor) {
        g->retry_after = (allowed_at - now + 999) / 1000;
        acc_guard_refuse(r, g);
        return 0;
    }
    if (!g->device_id[0]) {
        struct ratelimit_verdict v;
        address_key(r, g->address_key, sizeof g->address_key);
        ratelimit_check(g->address_key, ADDRESS_FAILURES, ADDRESS_FAILURE_PERIOD_S,
                        ratelimit_now_ns(), &v);
        if (!v.allowed) {
            g->address_key[0] = '\0'; /* nothing spent */
            ratelimit_set_headers(r, "login_address_failures", &v);
            req_problem(r, 429, "rate_limited",
                        "Too many failed logins from this address; retry in %lld s, or log "
                        "in from a device that logged in before.",
                        (long long)v.retry_after);
            return 0;
        }
    }
    /* Counted as a failure up front; a success takes it back. */
    g->retry_after = (backoff_delay_ms(failures + 1) + 999) / 1000;
    return backoff_store(g->key, failures + 1, now) == 0 ? 1 : -1;
}

int acc_guard_undo(struct req *r, const struct acc_guard *g)
{
    if (g->address_key[0])
        ratelimit_refund(g->address_key, ADDRESS_FAILURES, ADDRESS_FAILURE_PERIOD_S,
                         ratelimit_now_ns());
    r->keep_writes = true; /* the answer may be a refusal (mfa_required) */
    return backoff_store(g->key, g->prev_failures, g->prev_last);
}

int acc_guard_success(struct req *r, const struct acc_guard *g)
{
    if (g->address_key[0])
        ratelimit_refund(g->address_key, ADDRESS_FAILURES, ADDRESS_FAILURE_PERIOD_S,
                         ratelimit_now_ns());
    r->keep_writes = true; /* kept even when the login ends in a refusal (no workspace) */
    return backoff_store(g->key, 0, 0);
}

/* ---- the second factor at login ----------------------------------------------------------- */

static void code_key(const struct acc_guard *g, const char *user_id, char *key, size_t n)
{
    snprintf(key, n, "login-code:%s", g->device_id[0] ? g->device_id : user_id);
}

int acc_guard_second_factor(struct req *r, const struct acc_guard *g, const struct login_user *u,
                            const char *otp, const char *recovery_code, int64_t *retry_after)
{
    (void)r;
    char key[RATELIMIT_KEY_MAX + 1];
    struct ratelimit_verdict v;
    code_key(g, u->id, key, sizeof key);
    *retry_after = 0;
    ratelimit_check(key, CODE_FAILURES, CODE_FAILURE_PERIOD_S, ratelimit_now_ns(), &v);
    if (!v.allowed) {
        *retry_after = v.retry_after;
        return 0;
    }
    int ok = otp ? acc_use_totp(u->id, u->mfa_secret, u->mfa_last_step, otp)
                 : acc_use_recovery_code(u->id, recovery_code);
    if (ok == 1)
        ratelimit_refund(key, CODE_FAILURES, CODE_FAILURE_PERIOD_S, ratelimit_now_ns());
    return ok;
}

void acc_guard_codes_refused(struct req *r, int64_t retry_after)
{
    refuse(r, "login_code_failures", CODE_FAILURES, CODE_FAILURE_PERIOD_S, retry_after,
           "Too many wrong one-time codes for this account.");
}

/* ---- device tokens ------------------------------------------------------------------------ */

const char *acc_device_issue(struct req *r, const char *user_id, const struct acc_guard *g,
                             const char *presented)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    int64_t expires = clock_now_ms() + DEVICE_LIFETIME_MS;
    if (g->device_id[0] && presented) { /* known: its life starts again */
        struct db_stmt *st = storage_prepare(
            "UPDATE login_devices SET last_used_at = ?, expires_at = ? WHERE id = ?");
        if (!st)
            return NULL;
        db_bind_text(st, 1, now);
        db_bind_int64(st, 2, expires);
        db_bind_text(st, 3, g->device_id);
        int rc = db_step(st);
        db_reset(st);
        return rc == DB_DONE ? arena_strdup(&r->arena, presented)
                                 : (db_failed("device renew"), NULL);
    }
    char *token = id_secret(&r->arena, 32), hash[DIGEST_HEX_LEN + 1];
    if (digest_sha256_hex(token, strlen(token), hash) != 0)
        return NULL;
    struct db_stmt *st = storage_prepare(
        "INSERT INTO login_devices (id, user_id, token_hash, created_at, last_used_at, "
        "expires_at) VALUES (?, ?, ?, ?, ?, ?)");
    if (!st)
        return NULL;
    const char *v[] = {id_new(&r->arena, "dev"), user_id, hash, now, now};
    for (int i = 0; i < 5; i++)
        db_bind_text(st, i + 1, v[i]);
    db_bind_int64(st, 6, expires);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        db_failed("device insert");
        return NULL;
    }
    const char *u[] = {user_id, user_id};
    if (storage_exec_texts("DELETE FROM login_devices WHERE user_id = ? AND id NOT IN (SELECT id "
                           "FROM login_devices WHERE user_id = ? ORDER BY last_used_at DESC, id "
                           "DESC LIMIT " DEVICES_PER_USER_TEXT ")",
                           u, 2) != 0)
        return NULL;
    return token;
}

int64_t acc_device_lifetime_s(void)
{
    return DEVICE_LIFETIME_MS / 1000;
}

/* ---- housekeeping (the OAuth purge job runs these: accounts_oauth_pages.c) ---- */

int acc_purge(const char *sql, int64_t before_ms)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    db_bind_int64(st, 1, before_ms);
    int rc = db_step(st), n = storage_changes();
    db_reset(st);
    return rc == DB_DONE ? n : -1;
}

int acc_device_purge_expired(int64_t before_ms)
{
    return acc_purge("DELETE FROM login_devices WHERE id IN (SELECT id FROM login_devices WHERE "
                     "expires_at < ? LIMIT 500)",
                     before_ms);
}

int acc_backoff_purge_quiet(int64_t before_ms)
{
    return acc_purge("DELETE FROM login_backoff WHERE key IN (SELECT key FROM login_backoff WHERE "
                     "last_failure_at < ? LIMIT 500)",
                     before_ms);
}
