/* The accounts API: password login (POST /v1/api/login). Verifies the credentials with scrypt,
 * picks the workspace, opens a session holding the hashed refresh token and issues the JWT
 * access token carrying the scopes of the user's role in that workspace. */
#include "generated/accounts_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "generated/scopes.h"
#include "runtime/auth.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/password.h"
#include "runtime/ratelimit.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define REFRESH_TOKEN_BYTES 32
#define SESSION_LIFETIME_S (30 * 86400)
#define EMAIL_MAX 256
/* Failed-login guard per account (on top of the per-address `auth` quota): 10 failures in a
 * row are allowed, then one attempt per LOGIN_FAILURE_PERIOD_S / LOGIN_FAILURES = 90 s, the
 * wait growing back to nothing as the account stays quiet. Unknown emails are counted the
 * same way, so the guard reveals nothing about which accounts exist. */
#define LOGIN_FAILURES 10
#define LOGIN_FAILURE_PERIOD_S 900

struct login_user {
    char id[ID_MAX];
    char password_hash[PASSWORD_HASH_MAX];
    bool active;
};

static void lower_ascii(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++)
        out[i] = (in[i] >= 'A' && in[i] <= 'Z') ? (char)(in[i] - 'A' + 'a') : in[i];
    out[i] = '\0';
}

static void copy_column(sqlite3_stmt *st, int col, char *out, size_t n)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(out, n, "%s", t ? (const char *)t : "");
}

/* 0 with *found, or -1 on a database failure. */
static int find_user(const char *email_norm, struct login_user *u, bool *found)
{
    sqlite3_stmt *st =
        storage_prepare("SELECT id, password_hash, status FROM users WHERE email_norm = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, email_norm, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found) {
        copy_column(st, 0, u->id, sizeof u->id);
        copy_column(st, 1, u->password_hash, sizeof u->password_hash);
        const unsigned char *status = sqlite3_column_text(st, 2);
        u->active = status && strcmp((const char *)status, "active") == 0;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        log_error("login: user lookup failed: %s", sqlite3_errmsg(storage_db()));
        return -1;
    }
    return 0;
}

/* The membership to log in to: the requested workspace, or the oldest membership. Fills
 * workspace id, role and the workspace's token lifetime. 0 with *found, -1 on failure. */
static int find_membership(const char *user_id, const char *wanted, char *wid, size_t wid_len,
                           char *role, size_t role_len, int64_t *lifetime, bool *found)
{
    static const char by_id[] =
        "SELECT w.id, m.role, w.token_lifetime_seconds FROM members m "
        "JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = ? AND w.id = ?";
    static const char oldest[] =
        "SELECT w.id, m.role, w.token_lifetime_seconds FROM members m "
        "JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = ? "
        "ORDER BY m.created_at, w.id LIMIT 1";
    sqlite3_stmt *st = storage_prepare(wanted ? by_id : oldest);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, user_id, -1, SQLITE_STATIC);
    if (wanted)
        sqlite3_bind_text(st, 2, wanted, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found) {
        copy_column(st, 0, wid, wid_len);
        copy_column(st, 1, role, role_len);
        *lifetime = sqlite3_column_int64(st, 2);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        log_error("login: membership lookup failed: %s", sqlite3_errmsg(storage_db()));
        return -1;
    }
    return 0;
}

/* Scopes a role grants, space-separated in catalogue order. Until roles and permissions arrive
 * (admin API), `owner` holds every scope and `viewer` every read scope. */
static void role_scopes(const char *role, char *out, size_t n)
{
    size_t len = 0;
    bool owner = strcmp(role, "owner") == 0;
    out[0] = '\0';
    for (int i = 0; i < scopes_count; i++) {
        const char *s = scopes_names[i];
        size_t sl = strlen(s);
        bool read = sl > 5 && strcmp(s + sl - 5, ":read") == 0;
        if (!owner && !read)
            continue;
        if (len + sl + 2 > n)
            break;
        len += (size_t)snprintf(out + len, n - len, "%s%s", len ? " " : "", s);
    }
}

static int exec_texts(const char *sql, const char *const *v, int n)
{
    sqlite3_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    for (int i = 0; i < n; i++)
        sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        log_error("login: write failed: %s", sqlite3_errmsg(storage_db()));
        return -1;
    }
    return 0;
}

/* The guard's key: a digest of the normalized email, so any email fits in a quota key. */
static int failure_key(const char *email_norm, char *key, size_t n)
{
    char h[DIGEST_HEX_LEN + 1];
    if (digest_sha256_hex(email_norm, strlen(email_norm), h) != 0)
        return -1;
    snprintf(key, n, "login-fail:%.32s", h);
    return 0;
}

static void invalid_credentials(struct req *r)
{
    req_problem(r, 401, "invalid_credentials", "The email or password is incorrect.");
}

int accounts_login(struct req *r, const struct accounts_login_request *in,
                   struct accounts_login_response *out)
{
    const struct login_request *b = in->body;
    char email_norm[EMAIL_MAX];
    struct login_user u;
    bool found = false;

    memset(&u, 0, sizeof u);
    lower_ascii(b->email, email_norm, sizeof email_norm);

    /* Every attempt spends one from the account's failure quota up front (exact however many
     * arrive at once); a proven password gives it back below. */
    char guard[RATELIMIT_KEY_MAX + 1];
    struct ratelimit_verdict v;
    if (failure_key(email_norm, guard, sizeof guard) != 0)
        return -1;
    ratelimit_check(guard, LOGIN_FAILURES, LOGIN_FAILURE_PERIOD_S, ratelimit_now_ns(), &v);
    if (!v.allowed) {
        /* The headers describe the quota that refused the request, not the address's. */
        ratelimit_set_headers(r, "login_failures", &v);
        req_problem(r, 429, "rate_limited",
                    "Too many failed logins for this account; retry in %lld s.",
                    (long long)v.retry_after);
        return 0;
    }
    if (find_user(email_norm, &u, &found) != 0)
        return -1;
    /* scrypt takes a large part of a second at production cost: do it without holding the
     * database write lock the runtime opened, so logins never stall other writers. */
    storage_rollback();
    bool ok = found ? password_verify(b->password, u.password_hash)
                    : password_verify_dummy(b->password);
    if (storage_begin(true) != 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return 0;
    }
    if (!ok || !u.active) {
        invalid_credentials(r);
        return 0;
    }
    /* The user may have changed password or been suspended while scrypt ran. */
    struct login_user again;
    memset(&again, 0, sizeof again);
    if (find_user(email_norm, &again, &found) != 0)
        return -1;
    if (!found || !again.active || strcmp(again.id, u.id) != 0 ||
        strcmp(again.password_hash, u.password_hash) != 0) {
        invalid_credentials(r);
        return 0;
    }

    ratelimit_refund(guard, LOGIN_FAILURES, LOGIN_FAILURE_PERIOD_S, ratelimit_now_ns());

    /* Only now, with the credentials proven, may the answer depend on the account. */
    if (b->has_otp) {
        verr_add(&r->verr, "/otp", NULL, "mfa_not_enrolled", "%s",
                 "no multi-factor authentication is enrolled for this account");
        req_problem(r, 422, "mfa_not_enrolled",
                    "This account has no multi-factor authentication enrolled; omit otp.");
        r->with_errors = true;
        return 0;
    }
    char wid[ID_MAX], role[16];
    int64_t lifetime = 86400;
    if (find_membership(u.id, b->has_workspace_id ? b->workspace_id : NULL, wid, sizeof wid, role,
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
    if (lifetime < 900 || lifetime > 86400)
        lifetime = 86400; /* the column is bounded by the admin API; never trust it blindly */

    char *refresh = id_secret(&r->arena, REFRESH_TOKEN_BYTES);
    /* Refresh tokens are 256-bit random secrets, so a plain SHA-256 is the right storage
     * form: the database never holds a usable token, and lookup stays an index probe. */
    char refresh_hash[DIGEST_HEX_LEN + 1], now[40], expires[40];
    char *session_id = id_new(&r->arena, "ses");
    int64_t t = (int64_t)time(NULL);
    if (digest_sha256_hex(refresh, strlen(refresh), refresh_hash) != 0)
        return -1;
    format_now_rfc3339(now, sizeof now);
    format_time_rfc3339((t + SESSION_LIFETIME_S) * 1000, expires, sizeof expires);
    const char *session[] = {session_id, wid, u.id, refresh_hash, now, expires};
    if (exec_texts("INSERT INTO sessions (id, workspace_id, user_id, refresh_token_hash, "
                   "created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                   session, 6) != 0)
        return -1;
    const char *seen[] = {now, u.id};
    if (exec_texts("UPDATE users SET last_login_at = ? WHERE id = ?", seen, 2) != 0)
        return -1;

    struct token_claims c;
    memset(&c, 0, sizeof c);
    snprintf(c.sub, sizeof c.sub, "%s", u.id);
    snprintf(c.wid, sizeof c.wid, "%s", wid);
    snprintf(c.sid, sizeof c.sid, "%s", session_id);
    if (id_new_buf(c.jti, sizeof c.jti, "tok") != 0)
        return -1;
    role_scopes(role, c.scope, sizeof c.scope);
    c.iat = c.nbf = t;
    c.exp = t + lifetime;
    char *access = NULL;
    if (token_issue(auth_key(), &c, &access) != 0)
        return -1;

    struct login_response *resp = arena_alloc(&r->arena, sizeof *resp);
    resp->access_token = arena_strdup(&r->arena, access);
    free(access);
    resp->refresh_token = refresh;
    resp->expires_in = lifetime;
    resp->token_type = "Bearer";
    resp->scope = arena_strdup(&r->arena, c.scope);
    resp->workspace_id = arena_strdup(&r->arena, wid);
    out->status = 200;
    out->body_200 = resp;
    return 0;
}
