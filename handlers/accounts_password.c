/* The user's own account controls (issue 18): re-authentication by the current password (for
 * changing the password and the MFA settings), changing the password (every other session
 * ends), and signing out everywhere. Each writes an audit record in the token's workspace. */
#include "generated/accounts_api.h"

#include <stdio.h>
#include <string.h>

#include "handlers/accounts.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/password.h"
#include "runtime/ratelimit.h"
#include "runtime/storage.h"
#include "runtime/token.h"

/* Wrong current passwords per user: 5, then one per 3 minutes. */
#define REAUTH_FAILURES 5
#define REAUTH_FAILURE_PERIOD_S 900

bool acc_is_service_account(struct req *r)
{
    if (!token_is_service_subject(r->principal.user_id))
        return false;
    req_problem(r, 409, "not_a_user",
                "Service accounts have no password, sessions or multi-factor authentication.");
    return true;
}

/* The caller's password hash and email. 1 found (an active user), 0 not, -1 failure. */
static int load_user(const char *user_id, char *hash, size_t hash_len, char *email,
                     size_t email_len)
{
    struct db_stmt *st = storage_prepare(
        "SELECT password_hash, email FROM users WHERE id = ? AND status = 'active'");
    if (!st)
        return -1;
    db_bind_text(st, 1, user_id);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        acc_copy_column(st, 0, hash, hash_len);
        acc_copy_column(st, 1, email, email_len);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("reauthentication: user lookup failed: %s", storage_errmsg());
        return -1;
    }
    return rc == DB_ROW;
}

int acc_reauthenticate(struct req *r, const char *password, const char *new_password,
                       char *new_hash, size_t new_hash_len)
{
    if (acc_is_service_account(r))
        return 0;
    const char *uid = r->principal.user_id;
    char key[RATELIMIT_KEY_MAX + 1], hash[PASSWORD_HASH_MAX], email[EMAIL_MAX];
    char again[PASSWORD_HASH_MAX], email2[EMAIL_MAX];
    struct ratelimit_verdict v;
    snprintf(key, sizeof key, "reauth-fail:%s", uid);
    ratelimit_check(key, REAUTH_FAILURES, REAUTH_FAILURE_PERIOD_S, ratelimit_now_ns(), &v);
    if (!v.allowed) {
        ratelimit_set_headers(r, "reauthentication_failures", &v);
        req_problem(r, 429, "rate_limited", "Too many wrong passwords; retry in %lld s.",
                    (long long)v.retry_after);
        return 0;
    }
    int found = load_user(uid, hash, sizeof hash, email, sizeof email);
    if (found < 0)
        return -1;
    /* scrypt without the write lock (as a login): everything is read again afterwards. */
    storage_rollback();
    bool ok = found ? password_verify(password, hash) : password_verify_dummy(password);
    bool hashed = !ok || !new_password || password_hash(new_password, new_hash, new_hash_len) == 0;
    if (storage_begin(true) != 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return 0;
    }
    if (!hashed)
        return -1;
    found = ok ? load_user(uid, again, sizeof again, email2, sizeof email2) : 0;
    if (found < 0)
        return -1;
    if (!ok || !found || strcmp(again, hash) != 0) {
        verr_add(&r->verr, "/current_password", NULL, "reauthentication_failed", "%s",
                 "the current password is wrong");
        req_problem(r, 403, "reauthentication_failed", "The current password is wrong.");
        r->with_errors = true;
        return 0;
    }
    ratelimit_refund(key, REAUTH_FAILURES, REAUTH_FAILURE_PERIOD_S, ratelimit_now_ns());
    return 1;
}

/* Revokes every active session of the caller in every workspace except keep (NULL: all),
 * refused from the next request once committed, signs out every browser signed in on the
 * authorization pages, and voids the authorization codes not yet exchanged (each would open
 * a fresh session). How many sessions, or -1. */
static int revoke_user_sessions(struct req *r, const char *keep, const char *reason)
{
    const char *uid = r->principal.user_id;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare("SELECT id FROM sessions WHERE user_id = ?1 AND "
                                       "revoked_at IS NULL "
                                       "AND (CAST(?2 AS TEXT) IS NULL OR id <> ?2)");
    if (!st)
        return -1;
    db_bind_text(st, 1, uid);
    db_bind_text(st, 2, keep);
    int rc, n = 0;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *id = db_column_text(st, 0);
        acc_publish_revocation(r, arena_strdup(&r->arena, (const char *)id));
        n++;
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("sessions: listing failed: %s", storage_errmsg());
        return -1;
    }
    const char *v[] = {now, reason, uid, keep};
    if (storage_exec_texts("UPDATE sessions SET revoked_at = ?1, revoked_reason = ?2 WHERE "
                           "user_id = ?3 AND revoked_at IS NULL AND (CAST(?4 AS TEXT) IS NULL OR "
                           "id <> ?4)",
                           v, 4) != 0 ||
        storage_exec_texts("DELETE FROM oauth_browser_sessions WHERE user_id = ?", v + 2, 1) != 0 ||
        storage_exec_texts("DELETE FROM oauth_codes WHERE user_id = ? AND used_at IS NULL", v + 2,
                           1) != 0)
        return -1;
    return n;
}

int accounts_change_password(struct req *r, const struct accounts_change_password_request *in,
                             struct accounts_change_password_response *out)
{
    const struct change_password_request *b = in->body;
    char hash[PASSWORD_HASH_MAX], email[EMAIL_MAX], new_hash[PASSWORD_HASH_MAX];
    if (acc_is_service_account(r))
        return 0;
    int found = load_user(r->principal.user_id, hash, sizeof hash, email, sizeof email);
    if (found < 0)
        return -1;
    const char *weak = password_policy_violation(b->new_password, email);
    if (!weak && strcmp(b->new_password, b->current_password) == 0)
        weak = "must differ from the current password";
    if (weak) {
        verr_add(&r->verr, "/new_password", NULL, "weak_password", "%s", weak);
        req_problem(r, 422, "weak_password", "The new password %s.", weak);
        r->with_errors = true;
        return 0;
    }
    int ok = acc_reauthenticate(r, b->current_password, b->new_password, new_hash,
                                sizeof new_hash);
    if (ok <= 0)
        return ok;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    const char *v[] = {new_hash, now, r->principal.user_id};
    if (storage_exec_texts("UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?", v,
                           3) != 0)
        return -1;
    int n = revoke_user_sessions(r, r->principal.session_id, "password_changed");
    if (n < 0 ||
        audit_change(r, "user.password_changed", "user", r->principal.user_id, NULL, NULL,
                     arena_printf(&r->arena, "%d other session(s) revoked", n)) != 0)
        return -1;
    out->status = 204;
    return 0;
}

int accounts_revoke_all_sessions(struct req *r,
                                 const struct accounts_revoke_all_sessions_request *in,
                                 struct accounts_revoke_all_sessions_response *out)
{
    (void)in;
    if (acc_is_service_account(r))
        return 0;
    int n = revoke_user_sessions(r, NULL, "signed_out_everywhere");
    if (n < 0 || audit_change(r, "user.sessions_revoked", "user", r->principal.user_id, NULL,
                              NULL, arena_printf(&r->arena, "%d session(s) revoked", n)) != 0)
        return -1;
    out->status = 204;
    return 0;
}
