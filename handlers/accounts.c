/* The accounts API: password login, refresh-token rotation, logout and the user's sessions.
 * A login opens a session (a refresh-token family, the `sid` claim) in one workspace; its
 * access tokens carry the scopes of the user's role there. Refresh tokens are single use:
 * presenting a used one revokes the session (RFC 9700 §4.14.2). Revocations reach the bearer
 * check through runtime/revocation.c, without a database round trip per request. */
#include "generated/accounts_api.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/rows_accounts.h"
#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "handlers/admin.h"
#include "handlers/privileges.h"
#include "runtime/audit.h"
#include "runtime/auth.h"
#include "runtime/clock.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/password.h"
#include "runtime/resource.h"
#include "runtime/revocation.h"
#include "runtime/seal.h"
#include "runtime/totp.h"
#include "runtime/ratelimit.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define REFRESH_TOKEN_BYTES 32
#define SESSION_LIFETIME_S (30 * 86400)

void acc_lower_ascii(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++)
        out[i] = (in[i] >= 'A' && in[i] <= 'Z') ? (char)(in[i] - 'A' + 'a') : in[i];
    out[i] = '\0';
}

void acc_copy_column(struct db_stmt *st, int col, char *out, size_t n)
{
    const char *t = db_column_text(st, col);
    snprintf(out, n, "%s", t ? (const char *)t : "");
}

/* 0 with *found, or -1 on a database failure. */
int acc_find_user(const char *email_norm, struct login_user *u, bool *found)
{
    struct db_stmt *st =
        storage_prepare("SELECT id, password_hash, status, mfa_status, mfa_secret, "
                        "COALESCE((SELECT last_step FROM mfa_steps WHERE user_id = users.id), 0) "
                        "FROM users WHERE email_norm = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, email_norm);
    int rc = db_step(st);
    *found = rc == DB_ROW;
    if (*found) {
        acc_copy_column(st, 0, u->id, sizeof u->id);
        acc_copy_column(st, 1, u->password_hash, sizeof u->password_hash);
        const char *status = db_column_text(st, 2);
        u->active = status && strcmp((const char *)status, "active") == 0;
        const char *mfa = db_column_text(st, 3);
        u->mfa_enabled = mfa && strcmp((const char *)mfa, "enabled") == 0;
        acc_copy_column(st, 4, u->mfa_secret, sizeof u->mfa_secret);
        u->mfa_last_step = db_column_int64(st, 5);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("login: user lookup failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

/* The membership to log in to: the requested workspace, or the oldest membership. Fills
 * workspace id, role and the workspace's token lifetime. 0 with *found, -1 on failure. */
int acc_find_membership(const char *user_id, const char *wanted, char *wid, size_t wid_len,
                           char *role, size_t role_len, int64_t *lifetime, bool *found)
{
    static const char by_id[] =
        "SELECT w.id, m.role, w.token_lifetime_seconds FROM members m "
        "JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = ? AND w.id = ?";
    static const char oldest[] =
        "SELECT w.id, m.role, w.token_lifetime_seconds FROM members m "
        "JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = ? "
        "ORDER BY m.created_at, w.id LIMIT 1";
    struct db_stmt *st = storage_prepare(wanted ? by_id : oldest);
    if (!st)
        return -1;
    db_bind_text(st, 1, user_id);
    if (wanted)
        db_bind_text(st, 2, wanted);
    int rc = db_step(st);
    *found = rc == DB_ROW;
    if (*found) {
        acc_copy_column(st, 0, wid, wid_len);
        acc_copy_column(st, 1, role, role_len);
        *lifetime = db_column_int64(st, 2);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("login: membership lookup failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

/* The scopes role grants in workspace wid, space-separated in catalogue order (every scope
 * for workspace:admin). An unknown role (a custom role since deleted) grants nothing. */
int acc_role_scopes(const char *wid, const char *role, char *out, size_t n)
{
    uint64_t mask = 0;
    int found = admin_role_mask(wid, role, &mask);
    if (found < 0)
        return -1;
    if (!found)
        log_warn("role %s of workspace %s does not exist: it grants no scope", role, wid);
    scopes_text(found ? mask : 0, out, n);
    return 0;
}

/* A new refresh token of session sid: stored hashed (a 256-bit random secret, so a plain
 * SHA-256 suffices: the database never holds a usable token) in the family's history and as
 * the session's current token. Result lives in r->arena; NULL on failure. */
static char *new_refresh_token(struct req *r, const char *sid, const char *now)
{
    char *token = id_secret(&r->arena, REFRESH_TOKEN_BYTES);
    char hash[DIGEST_HEX_LEN + 1];
    if (digest_sha256_hex(token, strlen(token), hash) != 0)
        return NULL;
    const char *row[] = {hash, sid, now};
    const char *current[] = {hash, sid};
    if (storage_exec_texts("INSERT INTO refresh_tokens (token_hash, session_id, created_at) "
                           "VALUES (?, ?, ?)",
                           row, 3) != 0 ||
        storage_exec_texts("UPDATE sessions SET refresh_token_hash = ? WHERE id = ?", current, 2) !=
            0)
        return NULL;
    return token;
}

/* Signs an access token of the session and returns the login-shaped answer (in r->arena). */
static struct login_response *token_pair(struct req *r, const char *user_id, const char *wid,
                                         const char *sid, const char *scope, int64_t lifetime,
                                         const char *refresh, const char *client_id)
{
    struct token_claims c;
    int64_t t = clock_now_s();
    memset(&c, 0, sizeof c);
    snprintf(c.sub, sizeof c.sub, "%s", user_id);
    snprintf(c.client_id, sizeof c.client_id, "%s", client_id ? client_id : TOKEN_FIRST_PARTY);
    snprintf(c.wid, sizeof c.wid, "%s", wid);
    snprintf(c.sid, sizeof c.sid, "%s", sid);
    snprintf(c.scope, sizeof c.scope, "%s", scope);
    if (id_new_buf(c.jti, sizeof c.jti, "tok") != 0)
        return NULL;
    c.iat = c.nbf = t;
    c.exp = t + lifetime;
    char *access = NULL;
    if (token_issue(auth_key(), &c, &access) != 0)
        return NULL;
    struct login_response *resp = arena_alloc(&r->arena, sizeof *resp);
    resp->access_token = arena_strdup(&r->arena, access);
    free(access);
    resp->refresh_token = refresh;
    resp->expires_in = lifetime;
    resp->token_type = "Bearer";
    resp->scope = arena_strdup(&r->arena, scope);
    resp->workspace_id = arena_strdup(&r->arena, wid);
    return resp;
}

bool acc_has_scope(const char *list, const char *name, size_t n)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len;
        while (*p == ' ')
            p++;
    }
    return false;
}

/* The scopes of want that are also in allowed, in want's order. */
void acc_scope_intersection(const char *want, const char *allowed, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = want; *p;) {
        size_t k = strcspn(p, " ");
        if (k > 0 && acc_has_scope(allowed, p, k) && len + k + 2 <= n)
            len += (size_t)snprintf(out + len, n - len, "%s%.*s", len ? " " : "", (int)k, p);
        p += k;
        while (*p == ' ')
            p++;
    }
}

/* The first scope of want not in allowed (into out), or false when want is a subset. */
bool acc_scope_beyond(const char *want, const char *allowed, char *out, size_t n)
{
    for (const char *p = want; *p;) {
        size_t k = strcspn(p, " ");
        if (k > 0 && !acc_has_scope(allowed, p, k)) {
            snprintf(out, n, "%.*s", (int)k, p);
            return true;
        }
        p += k;
        while (*p == ' ')
            p++;
    }
    return false;
}

void acc_publish_revocation(struct req *r, const char *sid)
{
    /* Until every access token the session issued has expired. */
    revocation_after_commit(r, sid, clock_now_s() + REVOCATION_TOKEN_LIFETIME_S);
}

/* Marks session sid revoked (reason: logout, revoked, refresh_token_reuse, ...) and, once the
 * transaction commits, refuses its tokens from the very next request. 1 when it was active,
 * 0 when there was no such active session of user_id in wid, -1 on failure. */
int acc_revoke_session(struct req *r, const char *sid, const char *user_id, const char *wid,
                          const char *reason)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "UPDATE sessions SET revoked_at = ?, revoked_reason = ? "
        "WHERE id = ? AND user_id = ? AND workspace_id = ? AND revoked_at IS NULL");
    if (!st)
        return -1;
    const char *v[] = {now, reason, sid, user_id, wid};
    for (int i = 0; i < 5; i++)
        db_bind_text(st, i + 1, v[i]);
    int rc = db_step(st);
    int changed = storage_changes();
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("sessions: revoking failed: %s", storage_errmsg());
        return -1;
    }
    if (changed == 0)
        return 0;
    acc_publish_revocation(r, sid);
    return 1;
}

/* Revokes the active sessions that match where (a condition on sessions with parameters
 * ?1..?n bound to v), reason recorded, and refuses their tokens once the transaction commits.
 * How many, or -1. */
static int revoke_where(struct req *r, const char *where, const char *const *v, int n,
                        const char *reason)
{
    char sql[320], now[40];
    snprintf(sql, sizeof sql, "SELECT id FROM sessions WHERE %s AND revoked_at IS NULL", where);
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    for (int i = 0; i < n; i++)
        db_bind_text(st, i + 1, v[i]);
    int rc, count = 0;
    while ((rc = db_step(st)) == DB_ROW) {
        acc_publish_revocation(r, db_column_dup(&r->arena, st, 0));
        count++;
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("sessions: listing those to revoke failed: %s", storage_errmsg());
        return -1;
    }
    format_now_rfc3339(now, sizeof now);
    snprintf(sql, sizeof sql,
             "UPDATE sessions SET revoked_at = ?%d, revoked_reason = ?%d WHERE %s AND "
             "revoked_at IS NULL",
             n + 1, n + 2, where);
    const char *all[8];
    for (int i = 0; i < n; i++)
        all[i] = v[i];
    all[n] = now;
    all[n + 1] = reason;
    return storage_exec_texts(sql, all, n + 2) == 0 ? count : -1;
}

int acc_revoke_sessions_of(struct req *r, const char *column_name, const char *id,
                           const char *reason)
{
    const char *v[] = {id};
    const char *where = strcmp(column_name, "grant_id") == 0 ? "grant_id = ?1" : "client_id = ?1";
    return revoke_where(r, where, v, 1, reason) < 0 ? -1 : 0;
}

int acc_revoke_user_sessions(struct req *r, const char *user_id, const char *keep,
                             const char *reason)
{
    const char *v[] = {user_id, keep};
    return revoke_where(r, "user_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR id <> ?2)", v, 2,
                        reason);
}

int acc_revoke_member_sessions(struct req *r, const char *user_id, const char *wid,
                               const char *reason)
{
    const char *v[] = {user_id, wid};
    return revoke_where(r, "user_id = ?1 AND workspace_id = ?2", v, 2, reason);
}

struct login_response *acc_open_session(struct req *r, const char *user_id, const char *wid,
                                       const char *scope, int64_t lifetime,
                                       const char *client_id, const char *grant_id,
                                       const char **sid_out)
{
    char now[40], expires[40];
    char *session_id = id_new(&r->arena, "ses");
    if (lifetime < 900 || lifetime > 86400)
        lifetime = 86400; /* the column is bounded by the API; never trust it blindly */
    format_now_rfc3339(now, sizeof now);
    format_time_rfc3339((clock_now_s() + SESSION_LIFETIME_S) * 1000, expires, sizeof expires);
    /* The session row first (refresh_tokens refers to it); its current-token column is
     * filled by new_refresh_token() right after. */
    struct db_stmt *st = storage_prepare(
        "INSERT INTO sessions (id, workspace_id, user_id, refresh_token_hash, created_at, "
        "expires_at, scope, client_id, grant_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return NULL;
    const char *v[] = {session_id, wid, user_id, session_id, now, expires, scope, client_id,
                       grant_id};
    for (int i = 0; i < 9; i++)
        db_bind_text(st, i + 1, v[i]); /* NULL binds SQL NULL */
    int rc = db_step(st);
    db_reset(st);
    /* The last login is the membership's: another workspace never learns of this one. */
    const char *seen[] = {now, wid, user_id};
    if (rc != DB_DONE ||
        storage_exec_texts("INSERT INTO member_logins (last_login_at, workspace_id, user_id) "
                           "VALUES (?1, ?2, ?3) ON CONFLICT (workspace_id, user_id) "
                           "DO UPDATE SET last_login_at = ?1",
                           seen, 3) != 0) {
        log_error("sessions: opening failed: %s", storage_errmsg());
        return NULL;
    }
    char *refresh = new_refresh_token(r, session_id, now);
    if (!refresh)
        return NULL;
    if (sid_out)
        *sid_out = session_id;
    return token_pair(r, user_id, wid, session_id, scope, lifetime, refresh, client_id);
}

/* A login's session: the role's scopes in wid, living the workspace's token lifetime. */
static struct login_response *open_session(struct req *r, const char *user_id, const char *wid,
                                           const char *role, int64_t lifetime)
{
    char scope[1024];
    if (acc_role_scopes(wid, role, scope, sizeof scope) != 0)
        return NULL;
    return acc_open_session(r, user_id, wid, scope, lifetime, NULL, NULL, NULL);
}

static void invalid_credentials(struct req *r)
{
    req_problem(r, 401, "invalid_credentials", "The email or password is incorrect.");
}

/* ---- second factor (TOTP, RFC 6238) ------------------------------------------------------- */

/* The account's TOTP key from its sealed secret. 0 / -1. */
static int mfa_key(const char *sealed, unsigned char *key, size_t *len)
{
    char b32[128];
    size_t n = 0;
    if (seal_open(sealed, (unsigned char *)b32, sizeof b32 - 1, &n) != 0)
        return -1;
    b32[n] = '\0';
    int rc = totp_base32_decode(b32, key, TOTP_SECRET_BYTES, len);
    OPENSSL_cleanse(b32, sizeof b32);
    return rc;
}

/* Accepts a TOTP code once: its step must be newer than the last accepted one. true when the
 * code was right and is now used. -1 on failure. The last step has a table of its own, not a
 * column of users: that table is watched by the privilege cache (handlers/privileges.c), which
 * every MFA login would otherwise empty. The upsert's condition keeps the check atomic: of two
 * logins with one code, only one changes the row. */
int acc_use_totp(const char *user_id, const char *sealed, int64_t last_step, const char *code)
{
    unsigned char key[TOTP_SECRET_BYTES];
    size_t len = 0;
    if (mfa_key(sealed, key, &len) != 0) {
        log_error("mfa: the secret of %s cannot be opened (another signing key?)", user_id);
        return -1;
    }
    int64_t step = totp_match(key, len, code, clock_now_s());
    OPENSSL_cleanse(key, sizeof key);
    if (step < 0 || step <= last_step)
        return 0;
    struct db_stmt *st = storage_prepare(
        "INSERT INTO mfa_steps (user_id, last_step) VALUES (?2, ?1) ON CONFLICT (user_id) "
        "DO UPDATE SET last_step = ?1 WHERE mfa_steps.last_step < ?1");
    if (!st)
        return -1;
    db_bind_int64(st, 1, step);
    db_bind_text(st, 2, user_id);
    int rc = db_step(st), changed = storage_changes();
    db_reset(st);
    if (rc != DB_DONE)
        return -1;
    return changed == 1;
}

/* Uses one unused recovery code. 1 used now, 0 wrong or used before, -1 failure. */
int acc_use_recovery_code(const char *user_id, const char *code)
{
    char hash[DIGEST_HEX_LEN + 1], now[40];
    if (digest_sha256_hex(code, strlen(code), hash) != 0)
        return -1;
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare("UPDATE mfa_recovery_codes SET used_at = ? WHERE "
                                       "user_id = ? AND code_hash = ? AND used_at IS NULL");
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, user_id);
    db_bind_text(st, 3, hash);
    int rc = db_step(st), changed = storage_changes();
    db_reset(st);
    return rc != DB_DONE ? -1 : changed == 1;
}

/* The second factor of a login whose password was right: 1 go on, 0 answered, -1 failure.
 * *failure tells whether the attempt counts as a failed login. */
static int login_second_factor(struct req *r, const struct login_user *u,
                               const struct acc_credentials *c, const struct acc_guard *g,
                               bool *failure)
{
    *failure = false;
    if (!u->mfa_enabled) {
        if (c->otp || c->recovery_code) {
            verr_add(&r->verr, c->otp ? "/otp" : "/recovery_code", NULL, "mfa_not_enrolled",
                     "%s", "no multi-factor authentication is enrolled for this account");
            req_problem(r, 422, "mfa_not_enrolled",
                        "This account has no multi-factor authentication enrolled; omit otp.");
            r->with_errors = true;
            return 0;
        }
        return 1;
    }
    if (!c->otp && !c->recovery_code) {
        req_problem(r, 401, "mfa_required",
                    "This account uses multi-factor authentication: send the current code "
                    "from the authenticator app as otp (or a recovery_code).");
        return 0;
    }
    int64_t wait = 0;
    int ok = acc_guard_second_factor(r, g, u, c->otp, c->recovery_code, &wait);
    if (ok < 0)
        return -1;
    if (!ok) {
        *failure = true;
        if (wait > 0)
            acc_guard_codes_refused(r, wait);
        else
            req_problem(r, 401, "invalid_otp",
                        "The one-time code is wrong, expired, or was already used.");
        return 0;
    }
    return 1;
}

/* While the client is held back: only the right password with the right second factor of an
 * MFA account logs in; 1 go on, 0 answered (always the back-off's 429), -1 failure. */
static int held_back_second_factor(struct req *r, const struct login_user *u,
                                   const struct acc_credentials *c, const struct acc_guard *g)
{
    int64_t wait = 0;
    int ok = u->mfa_enabled ? acc_guard_second_factor(r, g, u, c->otp, c->recovery_code, &wait)
                            : 0;
    if (ok == 0)
        acc_guard_refuse(r, g);
    return ok;
}

const char *acc_turn_key(struct req *r, const char *email_norm)
{
    return arena_printf(&r->arena, "account:%s", email_norm);
}

int acc_prove_account(struct req *r, const char *email_norm, const struct acc_credentials *c,
                      struct login_user *again, struct acc_guard *g)
{
    struct login_user u;
    bool found = false;

    memset(&u, 0, sizeof u);
    if (acc_find_user(email_norm, &u, &found) != 0)
        return -1;
    /* The failed-login guard (accounts_lockout.c) counts the attempt as a failure up front,
     * committed before scrypt so that attempts arriving together all see each other; a
     * proven login takes it back below. */
    int go = acc_guard_begin(r, email_norm, found ? u.id : "", c->device_token,
                             c->otp || c->recovery_code, g);
    if (go <= 0)
        return go;
    /* scrypt takes a large part of a second at production cost: do it without holding the
     * database write lock the runtime opened, so logins never stall other writers. */
    if (storage_commit() != 0) {
        storage_rollback();
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return 0;
    }
    bool ok = found ? password_verify(c->password, u.password_hash)
                    : password_verify_dummy(c->password);
    /* From here on the account's attempts take turns (PostgreSQL: its advisory lock; SQLite
     * has one writer): one TOTP code sent by several logins at once lets exactly one in, and
     * the others see it used instead of conflicting. (The attempt is already committed as a
     * failure: a conflict now could not be run again from the start.) */
    storage_serialize_writes(acc_turn_key(r, email_norm));
    if (storage_begin(true) != 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return 0;
    }
    /* The user may have changed password or been suspended while scrypt ran. */
    memset(again, 0, sizeof *again);
    if (ok && u.active && acc_find_user(email_norm, again, &found) != 0)
        return -1;
    if (!ok || !u.active || !found || !again->active || strcmp(again->id, u.id) != 0 ||
        strcmp(again->password_hash, u.password_hash) != 0) {
        if (g->in_backoff)
            acc_guard_refuse(r, g);
        else
            invalid_credentials(r);
        return 0;
    }

    /* Only now, with the password proven, may the answer depend on the account. */
    if (g->in_backoff) {
        int mfa = held_back_second_factor(r, again, c, g);
        if (mfa <= 0)
            return mfa;
    } else {
        bool failure = false;
        int mfa = login_second_factor(r, again, c, g, &failure);
        if (mfa < 0 || (mfa == 0 && !failure && acc_guard_undo(r, g) != 0))
            return -1;
        if (mfa == 0)
            return 0;
    }
    return acc_guard_success(r, g) == 0 ? 1 : -1;
}

int accounts_login(struct req *r, const struct accounts_login_request *in,
                   struct accounts_login_response *out)
{
    const struct login_request *b = in->body;
    const struct acc_credentials cred = {
        .password = b->password,
        .device_token = b->has_device_token ? b->device_token : NULL,
        .otp = b->has_otp ? b->otp : NULL,
        .recovery_code = b->has_recovery_code ? b->recovery_code : NULL,
    };
    char email_norm[EMAIL_MAX];
    struct login_user u;
    struct acc_guard g;
    bool found = false;

    acc_lower_ascii(b->email, email_norm, sizeof email_norm);
    int proven = acc_prove_account(r, email_norm, &cred, &u, &g);
    if (proven <= 0)
        return proven;
    char wid[ID_MAX], role[48];
    int64_t lifetime = 86400;
    if (acc_find_membership(u.id, b->has_workspace_id ? b->workspace_id : NULL, wid, sizeof wid, role,
                        sizeof role, &lifetime, &found) != 0)
        return -1;
    if (!found) {
        verr_add(&r->verr, b->has_workspace_id ? "/workspace_id" : "", NULL,
                 "workspace_not_available", "%s",
                 "the user is not an active member of this workspace");
        req_problem(r, 422, "workspace_not_available",
                    b->has_workspace_id ? "You are not a member of workspace %s."
                                        : "You are not a member of any workspace%s.",
                    b->has_workspace_id ? b->workspace_id : "");
        r->with_errors = true;
        return 0;
    }
    int refused = acc_refuse_without_mfa(r, wid, u.id);
    if (refused != 0)
        return refused < 0 ? -1 : 0;
    struct login_response *resp = open_session(r, u.id, wid, role, lifetime);
    if (!resp)
        return -1;
    resp->device_token = acc_device_issue(r, u.id, &g, cred.device_token);
    if (!resp->device_token)
        return -1;
    resp->has_device_token = true;
    out->status = 200;
    out->body_200 = resp;
    return 0;
}

/* ---- a workspace that requires MFA (treasury.require_mfa, PATCH /v1/workspace) -------------- */

int acc_refuse_without_mfa(struct req *r, const char *wid, const char *user_id)
{
    int refused = acc_mfa_refused(wid, user_id);
    if (refused == 1)
        req_problem(r, 403, "workspace_requires_mfa",
                    "Workspace %s requires multi-factor authentication of its members, and this "
                    "account has none: enrol it (POST /v1/accounts/mfa/enroll) from a session "
                    "you still have, or ask an administrator of the workspace.",
                    wid);
    return refused;
}

int acc_mfa_refused(const char *wid, const char *user_id)
{
    const char *v[] = {wid, user_id};
    return storage_query_text("SELECT 1 FROM workspaces w JOIN users u ON u.id = ?2 "
                              "WHERE w.id = ?1 AND w.treasury_require_mfa = 1 "
                              "AND u.mfa_status <> 'enabled'",
                              v, 2, NULL, 0);
}

/* ---- refresh ------------------------------------------------------------------------------ */

struct family {
    char session_id[ID_MAX];
    char workspace_id[ID_MAX];
    char user_id[ID_MAX];
    char scope[1024];
    char expires_at[40];
    char client_id[ID_MAX]; /* the OAuth application of the session; "" for a login's */
    bool used;    /* this refresh token was presented before */
    bool revoked; /* the session was revoked */
};

/* The session a refresh token belongs to. 0 with *found, -1 on failure. */
static int find_family(const char *hash, struct family *f, bool *found)
{
    struct db_stmt *st = storage_prepare(
        "SELECT s.id, s.workspace_id, s.user_id, s.scope, s.expires_at, rt.used_at, "
        "s.revoked_at, s.client_id FROM refresh_tokens rt JOIN sessions s ON s.id = "
        "rt.session_id WHERE rt.token_hash = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, hash);
    int rc = db_step(st);
    *found = rc == DB_ROW;
    if (*found) {
        acc_copy_column(st, 0, f->session_id, sizeof f->session_id);
        acc_copy_column(st, 1, f->workspace_id, sizeof f->workspace_id);
        acc_copy_column(st, 2, f->user_id, sizeof f->user_id);
        acc_copy_column(st, 3, f->scope, sizeof f->scope);
        acc_copy_column(st, 4, f->expires_at, sizeof f->expires_at);
        f->used = !db_column_is_null(st, 5);
        f->revoked = !db_column_is_null(st, 6);
        acc_copy_column(st, 7, f->client_id, sizeof f->client_id);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("refresh: lookup failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

/* The role of an active user in the workspace and the workspace's token lifetime. 0 with
 * *found (false when the user is gone, not active, or no longer a member), -1 on failure. */
int acc_find_standing(const char *user_id, const char *wid, char *role, size_t role_len,
                         int64_t *lifetime, bool *found)
{
    struct db_stmt *st = storage_prepare(
        "SELECT m.role, w.token_lifetime_seconds FROM members m "
        "JOIN users u ON u.id = m.user_id JOIN workspaces w ON w.id = m.workspace_id "
        "WHERE m.user_id = ? AND m.workspace_id = ? AND u.status = 'active'");
    if (!st)
        return -1;
    db_bind_text(st, 1, user_id);
    db_bind_text(st, 2, wid);
    int rc = db_step(st);
    *found = rc == DB_ROW;
    if (*found) {
        acc_copy_column(st, 0, role, role_len);
        *lifetime = db_column_int64(st, 1);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("refresh: membership lookup failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

static void invalid_grant(struct req *r, const char *detail)
{
    req_problem(r, 400, "invalid_grant", "%s", detail);
}

int acc_refresh_token_session(const char *refresh_token, struct acc_token_session *s,
                              bool *found)
{
    char hash[DIGEST_HEX_LEN + 1], now[40];
    struct family f;
    memset(&f, 0, sizeof f);
    memset(s, 0, sizeof *s);
    if (digest_sha256_hex(refresh_token, strlen(refresh_token), hash) != 0 ||
        find_family(hash, &f, found) != 0)
        return -1;
    if (!*found)
        return 0;
    format_now_rfc3339(now, sizeof now);
    snprintf(s->session_id, sizeof s->session_id, "%s", f.session_id);
    snprintf(s->user_id, sizeof s->user_id, "%s", f.user_id);
    snprintf(s->workspace_id, sizeof s->workspace_id, "%s", f.workspace_id);
    snprintf(s->client_id, sizeof s->client_id, "%s", f.client_id);
    s->active = !f.revoked && strcmp(f.expires_at, now) > 0;
    return 0;
}

int acc_refresh(struct req *r, const char *refresh_token, const char *want_scope,
                const char *client_id, struct login_response **resp_out)
{
    char hash[DIGEST_HEX_LEN + 1], now[40], role[48], scope[1024], beyond[128];
    struct family f;
    bool found = false;
    int64_t lifetime = 86400;

    *resp_out = NULL;
    memset(&f, 0, sizeof f);
    if (digest_sha256_hex(refresh_token, strlen(refresh_token), hash) != 0 ||
        find_family(hash, &f, &found) != 0)
        return -1;
    if (!found) {
        invalid_grant(r, "The refresh token is not valid; log in again.");
        return 0;
    }
    /* A refresh token is bound to the client it was issued to (RFC 6749 §6): an application's
     * only to that application, a login's to no application. */
    if (strcmp(f.client_id, client_id ? client_id : "") != 0) {
        invalid_grant(r, "This refresh token was not issued to this client.");
        return 0;
    }
    if (f.revoked) {
        invalid_grant(r, "The session of this refresh token has ended; log in again.");
        return 0;
    }
    if (f.used) {
        /* A used token coming back means two parties hold the family: end it for both. */
        if (acc_revoke_session(r, f.session_id, f.user_id, f.workspace_id, "refresh_token_reuse") < 0)
            return -1;
        r->keep_writes = true;
        log_warn("refresh token reuse in session %s: session revoked", f.session_id);
        invalid_grant(r, "This refresh token was already used; its session has been revoked. "
                         "Log in again.");
        return 0;
    }
    format_now_rfc3339(now, sizeof now);
    if (strcmp(f.expires_at, now) <= 0) {
        invalid_grant(r, "The session of this refresh token has expired; log in again.");
        return 0;
    }
    if (acc_find_standing(f.user_id, f.workspace_id, role, sizeof role, &lifetime, &found) != 0)
        return -1;
    if (!found) {
        if (acc_revoke_session(r, f.session_id, f.user_id, f.workspace_id, "membership_ended") < 0)
            return -1;
        r->keep_writes = true;
        invalid_grant(r, "The user can no longer use this workspace; the session has ended.");
        return 0;
    }
    int refused = acc_mfa_refused(f.workspace_id, f.user_id);
    if (refused < 0)
        return -1;
    if (refused) {
        invalid_grant(r, "The workspace now requires multi-factor authentication, which this "
                         "account has not enabled: enrol it, then log in again.");
        return 0;
    }
    if (want_scope && acc_scope_beyond(want_scope, f.scope, beyond, sizeof beyond)) {
        req_problem(r, 400, "invalid_scope",
                    "The scope %s was not granted to this session; ask for a subset of: %s.",
                    beyond, f.scope);
        return 0;
    }
    /* Never more than the session was granted, nor than the role and the OAuth client
     * grant today (the per-request check's own lookup: handlers/privileges.c). */
    char granted[1024];
    uint64_t allowed = 0;
    int standing = handlers_privileges(f.workspace_id, f.user_id,
                                       f.client_id[0] ? f.client_id : NULL, &allowed);
    if (standing < 0)
        return -1;
    if (standing == 0) {
        if (acc_revoke_session(r, f.session_id, f.user_id, f.workspace_id, "client_disabled") < 0)
            return -1;
        r->keep_writes = true;
        invalid_grant(r, "The application can no longer be used in this workspace; the session "
                         "has ended.");
        return 0;
    }
    scopes_text(allowed, granted, sizeof granted);
    acc_scope_intersection(want_scope ? want_scope : f.scope, granted, scope, sizeof scope);
    if (lifetime < 900 || lifetime > 86400)
        lifetime = 86400;

    struct db_stmt *st = storage_prepare(
        "UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL");
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, hash);
    int rc = db_step(st), changed = storage_changes();
    db_reset(st);
    if (rc != DB_DONE || changed != 1) {
        log_error("refresh: marking the token used failed (changed %d)", changed);
        return -1;
    }
    const char *seen[] = {now, f.session_id};
    if (storage_exec_texts("UPDATE sessions SET last_used_at = ? WHERE id = ?", seen, 2) != 0)
        return -1;
    char *refresh = new_refresh_token(r, f.session_id, now);
    if (!refresh)
        return -1;
    *resp_out = token_pair(r, f.user_id, f.workspace_id, f.session_id, scope, lifetime, refresh,
                           f.client_id[0] ? f.client_id : NULL);
    return *resp_out ? 0 : -1;
}

/* ---- logout and sessions ------------------------------------------------------------------ */

int accounts_logout(struct req *r, const struct accounts_logout_request *in,
                    struct accounts_logout_response *out)
{
    (void)in;
    const struct principal *p = &r->principal;
    /* A service account's token is its own session: logging out revokes that token. */
    bool service = token_is_service_subject(p->user_id);
    if ((service ? admin_revoke_service_token(r, p->workspace_id, p->user_id, p->token_id)
                 : acc_revoke_session(r, p->session_id, p->user_id, p->workspace_id, "logout")) < 0)
        return -1;
    out->status = 204; /* also when the session was already gone: the caller is logged out */
    return 0;
}

int accounts_revoke_session(struct req *r, const struct accounts_revoke_session_request *in,
                            struct accounts_revoke_session_response *out)
{
    const struct principal *p = &r->principal;
    int rc = id_valid(in->id, "ses")
                 ? acc_revoke_session(r, in->id, p->user_id, p->workspace_id, "revoked")
                 : 0;
    if (rc < 0)
        return -1;
    if (rc == 0) {
        req_problem(r, 404, "not_found", "You have no active session %s in this workspace.",
                    in->id);
        return 0;
    }
    out->status = 204;
    return 0;
}

int accounts_list_sessions(struct req *r, const struct accounts_list_sessions_request *in,
                           struct accounts_list_sessions_response *out)
{
    /* The caller's (x-table owner) live sessions: not revoked, not expired. */
    char now[40];
    format_now_rfc3339(now, sizeof now);
    const struct resource_filter f[] = {
        RESOURCE_NULL("revoked_at"),
        RESOURCE_MOVING("expires_at", RESOURCE_GT, now),
    };
    struct resource_page rp;
    int rc = resource_list(r, &rows_session, f, 2, in->limit, in->has_cursor ? in->cursor : NULL,
                           &rp);
    if (rc <= 0)
        return rc;
    struct session *s = rp.items;
    for (size_t i = 0; i < rp.count; i++)
        s[i].current = r->principal.session_id && strcmp(s[i].id, r->principal.session_id) == 0;
    struct session_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

/* ---- managing MFA ------------------------------------------------------------------------- */

#define RECOVERY_CODES 10
/* After 5 wrong codes in a row on confirm/disable, one attempt per 3 minutes: a stolen access
 * token cannot brute-force its way to turning MFA off. */
#define MFA_FAILURES 5
#define MFA_FAILURE_PERIOD_S 900

struct mfa_row {
    char email[EMAIL_MAX];
    char status[16];
    char secret[256];
    int64_t last_step;
};

/* The caller's MFA state; answers 409 for service accounts. 1 found, 0 answered, -1 failure. */
static int load_mfa(struct req *r, struct mfa_row *m)
{
    if (token_is_service_subject(r->principal.user_id)) {
        req_problem(r, 409, "not_a_user", "Service accounts have no multi-factor authentication.");
        return 0;
    }
    struct db_stmt *st = storage_prepare(
        "SELECT email, mfa_status, mfa_secret, COALESCE((SELECT last_step FROM mfa_steps "
        "WHERE user_id = users.id), 0) FROM users WHERE id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.user_id);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        acc_copy_column(st, 0, m->email, sizeof m->email);
        acc_copy_column(st, 1, m->status, sizeof m->status);
        acc_copy_column(st, 2, m->secret, sizeof m->secret);
        m->last_step = db_column_int64(st, 3);
    }
    db_reset(st);
    if (rc != DB_ROW) {
        log_error("mfa: the token's user %s is not in the database", r->principal.user_id);
        return -1;
    }
    return 1;
}

static int64_t recovery_codes_left(const char *user_id)
{
    struct db_stmt *st = storage_prepare(
        "SELECT count(*) FROM mfa_recovery_codes WHERE user_id = ? AND used_at IS NULL");
    if (!st)
        return -1;
    db_bind_text(st, 1, user_id);
    int64_t n = db_step(st) == DB_ROW ? db_column_int64(st, 0) : -1;
    db_reset(st);
    return n;
}

/* A new MFA status and secret; no step of the new secret (or none) used yet. */
static int set_mfa(const char *user_id, const char *status, const char *sealed)
{
    const char *user[] = {user_id};
    return acc_user_set_mfa(user_id, status, sealed) == 0 &&
                   storage_exec_texts("DELETE FROM mfa_steps WHERE user_id = ?", user, 1) == 0
               ? 0
               : -1;
}

/* Gives back an attempt spent by mfa_attempt (as on_rewind: the run is thrown away). */
static void give_back_mfa_attempt(struct req *r)
{
    ratelimit_refund(r->on_rewind_arg, MFA_FAILURES, MFA_FAILURE_PERIOD_S, ratelimit_now_ns());
}

/* A right code: the attempt is given back, and nothing is left to give back on a rewind. */
static void mfa_right_code(struct req *r, const char *key)
{
    ratelimit_refund(key, MFA_FAILURES, MFA_FAILURE_PERIOD_S, ratelimit_now_ns());
    r->on_rewind = NULL;
}

/* Spends one attempt of the caller's MFA-code quota; false (429 answered) when there is none
 * left. The caller gives it back on a right code (mfa_right_code); a run thrown away to be
 * run again gives it back too (on_rewind), so a wrong code is counted once. */
static bool mfa_attempt(struct req *r, char *key, size_t n)
{
    struct ratelimit_verdict v;
    snprintf(key, n, "mfa-fail:%s", r->principal.user_id);
    ratelimit_check(key, MFA_FAILURES, MFA_FAILURE_PERIOD_S, ratelimit_now_ns(), &v);
    if (v.allowed) {
        r->on_rewind = give_back_mfa_attempt;
        r->on_rewind_arg = arena_strdup(&r->arena, key);
        return true;
    }
    ratelimit_set_headers(r, "mfa_failures", &v);
    req_problem(r, 429, "rate_limited", "Too many wrong codes; retry in %lld s.",
                (long long)v.retry_after);
    return false;
}

static void invalid_code(struct req *r, const char *pointer)
{
    verr_add(&r->verr, pointer, NULL, "invalid_code", "%s",
             "the code is wrong, expired, or was already used");
    req_problem(r, 422, "invalid_code", "The code is wrong, expired, or was already used.");
    r->with_errors = true;
}

int accounts_get_mfa(struct req *r, const struct accounts_get_mfa_request *in,
                     struct accounts_get_mfa_response *out)
{
    (void)in;
    struct mfa_row m;
    int found = load_mfa(r, &m);
    if (found <= 0)
        return found;
    struct mfa_status *st = arena_alloc(&r->arena, sizeof *st);
    st->status = mfa_status_status_parse(m.status);
    st->recovery_codes_left = recovery_codes_left(r->principal.user_id);
    if (!st->status || st->recovery_codes_left < 0)
        return -1;
    out->status = 200;
    out->body_200 = st;
    return 0;
}

int accounts_enroll_mfa(struct req *r, const struct accounts_enroll_mfa_request *in,
                        struct accounts_enroll_mfa_response *out)
{
    struct mfa_row m;
    int found = acc_reauthenticate(r, in->body->current_password, NULL, NULL, 0);
    if (found <= 0)
        return found;
    found = load_mfa(r, &m);
    if (found <= 0)
        return found;
    if (strcmp(m.status, "enabled") == 0) {
        req_problem(r, 409, "mfa_already_enabled",
                    "Multi-factor authentication is already on; disable it before enrolling "
                    "another authenticator.");
        return 0;
    }
    unsigned char key[TOTP_SECRET_BYTES];
    char b32[64];
    if (RAND_bytes(key, sizeof key) != 1)
        return -1;
    totp_base32(key, sizeof key, b32);
    OPENSSL_cleanse(key, sizeof key);
    char *sealed = seal(&r->arena, (const unsigned char *)b32, strlen(b32));
    if (!sealed || set_mfa(r->principal.user_id, "pending", sealed) != 0 ||
        audit_change(r, "user.mfa_enrolment_started", "user", r->principal.user_id, m.status,
                     "pending", NULL) != 0)
        return -1;
    struct mfa_enrollment *e = arena_alloc(&r->arena, sizeof *e);
    e->status = "pending";
    e->secret = arena_strdup(&r->arena, b32);
    e->otpauth_uri = arena_printf(&r->arena,
                                  "otpauth://totp/treasury:%s?secret=%s&issuer=treasury"
                                  "&algorithm=SHA1&digits=6&period=30",
                                  format_uri_component(&r->arena, m.email), b32);
    OPENSSL_cleanse(b32, sizeof b32);
    out->status = 201;
    out->body_201 = e;
    return 0;
}

int accounts_confirm_mfa(struct req *r, const struct accounts_confirm_mfa_request *in,
                         struct accounts_confirm_mfa_response *out)
{
    struct mfa_row m;
    char guard[RATELIMIT_KEY_MAX + 1], now[40];
    int found = load_mfa(r, &m);
    if (found <= 0)
        return found;
    if (strcmp(m.status, "pending") != 0) {
        req_problem(r, 409, "mfa_not_pending",
                    "There is no enrolment to confirm; start one with POST "
                    "/v1/accounts/mfa/enroll.");
        return 0;
    }
    if (!mfa_attempt(r, guard, sizeof guard))
        return 0;
    int ok = acc_use_totp(r->principal.user_id, m.secret, m.last_step, in->body->code);
    if (ok < 0)
        return -1;
    if (!ok) {
        invalid_code(r, "/code");
        return 0;
    }
    mfa_right_code(r, guard);
    const char *user[] = {r->principal.user_id};
    if (acc_user_enable_mfa(r->principal.user_id) != 0 ||
        storage_exec_texts("DELETE FROM mfa_recovery_codes WHERE user_id = ?", user, 1) != 0 ||
        audit_change(r, "user.mfa_enabled", "user", r->principal.user_id, "pending", "enabled",
                     NULL) != 0)
        return -1;
    struct mfa_confirmation *c = arena_alloc(&r->arena, sizeof *c);
    c->status = "enabled";
    c->recovery_codes = arena_alloc(&r->arena, RECOVERY_CODES * sizeof *c->recovery_codes);
    format_now_rfc3339(now, sizeof now);
    for (int i = 0; i < RECOVERY_CODES; i++) {
        unsigned char raw[8];
        char b32[16], hash[DIGEST_HEX_LEN + 1];
        if (RAND_bytes(raw, sizeof raw) != 1)
            return -1;
        totp_base32(raw, sizeof raw, b32); /* 13 characters; 12 used: 60 bits */
        for (int j = 0; j < 12; j++)
            b32[j] = (char)(b32[j] >= 'A' && b32[j] <= 'Z' ? b32[j] - 'A' + 'a' : b32[j]);
        char *code = arena_printf(&r->arena, "%.4s-%.4s-%.4s", b32, b32 + 4, b32 + 8);
        if (digest_sha256_hex(code, strlen(code), hash) != 0)
            return -1;
        const char *row[] = {r->principal.user_id, hash, now};
        if (storage_exec_texts("INSERT INTO mfa_recovery_codes (user_id, code_hash, created_at) "
                               "VALUES (?, ?, ?)",
                               row, 3) != 0)
            return -1;
        c->recovery_codes[c->recovery_codes_count++] = code;
    }
    out->status = 200;
    out->body_200 = c;
    return 0;
}

int accounts_disable_mfa(struct req *r, const struct accounts_disable_mfa_request *in,
                         struct accounts_disable_mfa_response *out)
{
    const struct mfa_proof *p = in->body;
    struct mfa_row m;
    char guard[RATELIMIT_KEY_MAX + 1];
    int found = acc_reauthenticate(r, p->current_password, NULL, NULL, 0);
    if (found <= 0)
        return found;
    found = load_mfa(r, &m);
    if (found <= 0)
        return found;
    if (strcmp(m.status, "enabled") != 0) {
        req_problem(r, 409, "mfa_not_enabled", "Multi-factor authentication is not on.");
        return 0;
    }
    if (!mfa_attempt(r, guard, sizeof guard))
        return 0;
    int ok = p->has_code ? acc_use_totp(r->principal.user_id, m.secret, m.last_step, p->code)
                         : acc_use_recovery_code(r->principal.user_id, p->recovery_code);
    if (ok < 0)
        return -1;
    if (!ok) {
        /* The failed attempt must stay counted although the answer is a refusal. */
        invalid_code(r, p->has_code ? "/code" : "/recovery_code");
        return 0;
    }
    mfa_right_code(r, guard);
    const char *user[] = {r->principal.user_id};
    if (set_mfa(r->principal.user_id, "none", NULL) != 0 ||
        storage_exec_texts("DELETE FROM mfa_recovery_codes WHERE user_id = ?", user, 1) != 0 ||
        audit_change(r, "user.mfa_disabled", "user", r->principal.user_id, "enabled", "none",
                     p->has_code ? "with a code" : "with a recovery code") != 0)
        return -1;
    struct mfa_status *st = arena_alloc(&r->arena, sizeof *st);
    st->status = MFA_STATUS_STATUS_NONE;
    st->recovery_codes_left = 0;
    out->status = 200;
    out->body_200 = st;
    return 0;
}
