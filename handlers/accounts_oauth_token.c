/* OAuth 2.0, authorization code with PKCE. This file: where a client presents a code or a
 * token (/v1/accounts/auth/oauth/{token,refresh,revoke}): client authentication (HTTP Basic or
 * the body), authorization codes (issued when the user approves on the consent page,
 * exchanged here), the token endpoint (accounts_issue_token: authorization_code with PKCE,
 * refresh_token), the refresh endpoint of a login's or an application's refresh token
 * (accounts_refresh_token) and token revocation (RFC 7009, accounts_revoke_token).
 * Neighbours: accounts_oauth.c, the clients, metadata, grants and the helpers the OAuth files
 * share (accounts_oauth.h);
 * accounts_oauth_pages.c, the browser side (the authorization endpoint and its pages).
 *
 * Codes are stored as SHA-256 digests of 256-bit random values only. A code is single use and
 * lives 60 s; using it twice revokes the session issued from it. */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "handlers/accounts.h"
#include "handlers/accounts_oauth.h"
#include "runtime/auth.h"
#include "runtime/clock.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/pkce.h"
#include "runtime/revocation.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define CODE_TTL_MS INT64_C(60000)

/* ==== client authentication (token, refresh and revocation endpoints) ==================== */

static void invalid_client(struct req *r, bool basic, const char *detail)
{
    req_problem(r, 401, "invalid_client", "%s", detail);
    if (basic)
        req_set_header(r, "WWW-Authenticate", "Basic realm=\"treasury\"");
}

/* Decodes one application/x-www-form-urlencoded component of HTTP Basic (RFC 6749 §2.3.1)
 * in place. false on a bad escape. */
static bool form_decode(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == '+') {
            *o++ = ' ';
        } else if (*p == '%') {
            int hi, lo;
            if (sscanf(p + 1, "%1x%1x", (unsigned *)&hi, (unsigned *)&lo) != 2)
                return false;
            *o++ = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return true;
}

/* HTTP Basic credentials: 1 parsed, 0 no Basic header, -1 malformed. */
static int basic_credentials(struct req *r, char **id, char **secret)
{
    const char *h = req_header(r, "Authorization");
    if (!h || strncasecmp(h, "Basic ", 6) != 0)
        return 0;
    const char *b64 = h + 6;
    while (*b64 == ' ')
        b64++;
    size_t n = strlen(b64);
    if (n == 0 || n > 1024 || n % 4 != 0)
        return -1;
    unsigned char *raw = arena_alloc(&r->arena, n / 4 * 3 + 1);
    int len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    if (len < 0)
        return -1;
    len -= (b64[n - 1] == '=') + (b64[n - 2] == '=');
    raw[len] = '\0';
    if (memchr(raw, '\0', (size_t)len))
        return -1;
    char *colon = strchr((char *)raw, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    *id = (char *)raw;
    *secret = colon + 1;
    return form_decode(*id) && form_decode(*secret) ? 1 : -1;
}

/* Client authentication at the token, refresh and revocation endpoints: HTTP Basic or
 * client_id (+ client_secret) in the body. Copies the authenticated client id into client
 * ("" when the request names no client: a login's refresh). 1 go on, 0 answered (401
 * invalid_client, 400 invalid_request), -1 failure. */
static int client_authenticate(struct req *r, const char *body_client_id, const char *body_secret,
                               char *client, size_t client_len)
{
    char *basic_id = NULL, *basic_secret = NULL;
    int basic = basic_credentials(r, &basic_id, &basic_secret);
    client[0] = '\0';
    if (basic < 0) {
        invalid_client(r, true, "The HTTP Basic client credentials are malformed.");
        return 0;
    }
    if (basic && body_secret) {
        req_problem(r, 400, "invalid_request",
                    "Authenticate the client one way only: HTTP Basic or client_secret.");
        return 0;
    }
    if (basic && body_client_id && strcmp(basic_id, body_client_id) != 0) {
        req_problem(r, 400, "invalid_request",
                    "client_id in the body differs from the HTTP Basic client.");
        return 0;
    }
    const char *id = basic ? basic_id : body_client_id;
    const char *secret = basic ? basic_secret : body_secret;
    if (!id)
        return 1; /* no client: a login's refresh token */
    struct oauth_stored_client *x = arena_alloc(&r->arena, sizeof *x);
    int found = oauth_client_load(r, id, NULL, x);
    if (found < 0)
        return -1;
    if (!found || x->c.status != OAUTH_CLIENT_STATUS_ACTIVE) {
        invalid_client(r, basic, "Client authentication failed: unknown or disabled client.");
        return 0;
    }
    if (x->c.type == OAUTH_CLIENT_TYPE_CONFIDENTIAL) {
        char hash[DIGEST_HEX_LEN + 1];
        if (!secret || !*secret || oauth_sha256_hex(secret, hash) != 0 || !x->secret_hash ||
            !oauth_secure_equal(hash, x->secret_hash)) {
            invalid_client(r, basic, "Client authentication failed: the client secret is missing "
                                     "or wrong.");
            return 0;
        }
    } else if (secret && *secret) {
        invalid_client(r, basic, "A public client has no secret; send only client_id.");
        return 0;
    }
    snprintf(client, client_len, "%s", x->c.id);
    return 1;
}

/* ==== authorization codes ================================================================= */

/* A code as stored, with whether its grant was revoked since. */
struct code_row {
    char client_id[ID_MAX], grant_id[ID_MAX], workspace_id[ID_MAX], user_id[ID_MAX];
    char redirect_uri[OAUTH_URI_MAX + 1], scope[1024], challenge[130], session_id[ID_MAX];
    int64_t expires_at;
    bool used, grant_revoked;
};

int oauth_code_issue(struct req *r, const struct oauth_stored_client *c, const char *grant_id,
                     const char *user_id, const char *redirect_uri, const char *scope,
                     const char *challenge, const char **code)
{
    char hash[DIGEST_HEX_LEN + 1];
    char *secret = id_secret(&r->arena, OAUTH_SECRET_BYTES);
    if (oauth_sha256_hex(secret, hash) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "INSERT INTO oauth_codes (code_hash, client_id, grant_id, workspace_id, user_id, "
        "redirect_uri, scope, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    const char *v[] = {hash,    c->c.id,      grant_id, c->c.workspace_id,
                       user_id, redirect_uri, scope,    challenge};
    for (int i = 0; i < 8; i++)
        db_bind_text(st, i + 1, v[i]);
    db_bind_int64(st, 9, clock_now_ms() + CODE_TTL_MS);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return oauth_db_failed("code insert");
    *code = secret;
    return 0;
}

static int code_load(const char *hash, struct code_row *k, bool *found)
{
    struct db_stmt *st = storage_prepare(
        "SELECT k.client_id, k.grant_id, k.workspace_id, k.user_id, k.redirect_uri, k.scope, "
        "k.code_challenge, k.expires_at, k.used_at, k.session_id, g.revoked_at FROM oauth_codes "
        "k JOIN oauth_grants g ON g.id = k.grant_id WHERE k.code_hash = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, hash);
    int rc = db_step(st);
    *found = rc == DB_ROW;
    if (*found) {
        acc_copy_column(st, 0, k->client_id, sizeof k->client_id);
        acc_copy_column(st, 1, k->grant_id, sizeof k->grant_id);
        acc_copy_column(st, 2, k->workspace_id, sizeof k->workspace_id);
        acc_copy_column(st, 3, k->user_id, sizeof k->user_id);
        acc_copy_column(st, 4, k->redirect_uri, sizeof k->redirect_uri);
        acc_copy_column(st, 5, k->scope, sizeof k->scope);
        acc_copy_column(st, 6, k->challenge, sizeof k->challenge);
        k->expires_at = db_column_int64(st, 7);
        k->used = !db_column_is_null(st, 8);
        acc_copy_column(st, 9, k->session_id, sizeof k->session_id);
        k->grant_revoked = !db_column_is_null(st, 10);
    }
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : oauth_db_failed("code load");
}

static int code_mark_used(const char *hash, const char *session_id)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    const char *v[] = {now, session_id, hash};
    return storage_exec_texts("UPDATE oauth_codes SET used_at = ?, session_id = COALESCE(?, "
                              "session_id) WHERE code_hash = ?",
                              v, 3);
}

int oauth_code_purge_expired(int64_t before_ms)
{
    return acc_purge("DELETE FROM oauth_codes WHERE code_hash IN (SELECT code_hash FROM "
                     "oauth_codes WHERE expires_at < ? LIMIT 500)",
                     before_ms);
}

int oauth_code_drop_unused(const char *user_id)
{
    const char *v[] = {user_id};
    return storage_exec_texts("DELETE FROM oauth_codes WHERE user_id = ? AND used_at IS NULL", v,
                              1);
}

/* ==== the token endpoint ================================================================== */

static void invalid_grant(struct req *r, const char *detail)
{
    req_problem(r, 400, "invalid_grant", "%s", detail);
}

static int exchange_code(struct req *r, const struct token_request *t, const char *client,
                         struct login_response **resp)
{
    const char *missing = !client[0]                  ? "client_id"
                          : !t->has_code              ? "code"
                          : !t->has_redirect_uri      ? "redirect_uri"
                          : !t->has_code_verifier     ? "code_verifier"
                                                      : NULL;
    if (missing) {
        req_problem(r, 400, "invalid_request", "%s is required for grant_type=authorization_code.",
                    missing);
        return 0;
    }
    if (!pkce_verifier_ok(t->code_verifier)) {
        req_problem(r, 400, "invalid_request",
                    "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.");
        return 0;
    }
    char hash[DIGEST_HEX_LEN + 1];
    struct code_row k;
    bool found = false;
    memset(&k, 0, sizeof k);
    if (oauth_sha256_hex(t->code, hash) != 0 || code_load(hash, &k, &found) != 0)
        return -1;
    if (!found || k.expires_at <= clock_now_ms() || strcmp(k.client_id, client) != 0) {
        invalid_grant(r, "The authorization code is unknown, expired, or was issued to another "
                         "client.");
        return 0;
    }
    if (k.used) {
        /* RFC 6749 §4.1.2: a code used twice is stolen or replayed; what it issued ends. */
        if (k.session_id[0] &&
            acc_revoke_session(r, k.session_id, k.user_id, k.workspace_id, "code_reuse") < 0)
            return -1;
        r->keep_writes = true;
        log_warn("oauth: authorization code of client %s used twice; its tokens are revoked",
                 client);
        invalid_grant(r, "The authorization code was already used; the tokens issued from it "
                         "are revoked.");
        return 0;
    }
    if (strcmp(k.redirect_uri, t->redirect_uri) != 0) {
        invalid_grant(r, "redirect_uri is not identical to the one of the authorization "
                         "request.");
        return 0;
    }
    if (code_mark_used(hash, NULL) != 0)
        return -1;
    if (!pkce_s256_matches(t->code_verifier, k.challenge)) {
        r->keep_writes = true; /* the code is spent either way */
        invalid_grant(r, "code_verifier does not match the code_challenge.");
        return 0;
    }
    char role[48], granted[1024], scope[1024];
    int64_t lifetime = 0;
    bool member = false;
    if (k.grant_revoked) {
        r->keep_writes = true;
        invalid_grant(r, "The user disconnected the application meanwhile.");
        return 0;
    }
    if (acc_find_standing(k.user_id, k.workspace_id, role, sizeof role, &lifetime, &member) != 0)
        return -1;
    if (!member) {
        r->keep_writes = true;
        invalid_grant(r, "The user can no longer use this workspace.");
        return 0;
    }
    int refused = acc_mfa_refused(k.workspace_id, k.user_id);
    if (refused < 0)
        return -1;
    if (refused) {
        r->keep_writes = true;
        invalid_grant(r, "The workspace requires multi-factor authentication, which the user "
                         "has not enabled.");
        return 0;
    }
    if (acc_role_scopes(k.workspace_id, role, granted, sizeof granted) != 0)
        return -1;
    acc_scope_intersection(k.scope, granted, scope, sizeof scope);
    const char *sid = NULL;
    *resp = acc_open_session(r, k.user_id, k.workspace_id, scope, lifetime, client, k.grant_id,
                             &sid);
    if (!*resp)
        return -1;
    return code_mark_used(hash, sid); /* a replay of the code revokes this session */
}

int accounts_issue_token(struct req *r, const struct accounts_issue_token_request *in,
                         struct accounts_issue_token_response *out)
{
    const struct token_request *t = in->body;
    char client[ID_MAX];
    int ok = client_authenticate(r, t->has_client_id ? t->client_id : NULL,
                                     t->has_client_secret ? t->client_secret : NULL, client,
                                     sizeof client);
    if (ok <= 0)
        return ok;
    struct login_response *resp = NULL;
    if (!t->has_grant_type) {
        req_problem(r, 400, "invalid_request", "grant_type is required.");
        return 0;
    }
    if (strcmp(t->grant_type, "authorization_code") == 0) {
        if (exchange_code(r, t, client, &resp) != 0)
            return -1;
    } else if (strcmp(t->grant_type, "refresh_token") == 0) {
        if (!client[0]) {
            req_problem(r, 400, "invalid_request",
                        "client_id is required; a login's refresh token goes to "
                        "/v1/accounts/auth/oauth/refresh.");
            return 0;
        }
        if (!t->has_refresh_token) {
            req_problem(r, 400, "invalid_request", "refresh_token is required.");
            return 0;
        }
        if (acc_refresh(r, t->refresh_token, t->has_scope ? t->scope : NULL, client, &resp) != 0)
            return -1;
    } else {
        req_problem(r, 400, "unsupported_grant_type",
                    "grant_type must be authorization_code or refresh_token.");
        return 0;
    }
    if (resp) {
        out->status = 200;
        out->body_200 = resp;
    }
    return 0;
}

int accounts_refresh_token(struct req *r, const struct accounts_refresh_token_request *in,
                           struct accounts_refresh_token_response *out)
{
    const struct refresh_request *b = in->body;
    char client[ID_MAX] = "";
    int ok = client_authenticate(r, b->has_client_id ? b->client_id : NULL,
                                     b->has_client_secret ? b->client_secret : NULL, client,
                                     sizeof client);
    if (ok <= 0)
        return ok;
    struct login_response *resp = NULL;
    if (acc_refresh(r, b->refresh_token, b->has_scope ? b->scope : NULL,
                    client[0] ? client : NULL, &resp) != 0)
        return -1;
    if (resp) {
        out->status = 200;
        out->body_200 = resp;
    }
    return 0;
}

/* ==== token revocation (RFC 7009) ========================================================= */

/* A presented token that is current: its session, user, workspace and the OAuth client it was
 * issued to ("" for a first-party token: a login's or a service account's). */
struct revocable {
    bool found;
    char session_id[64], user_id[64], workspace_id[64], client_id[64]; /* as token_claims */
};

/* An access token: one of our JWTs, unexpired and not revoked (what the API accepts). */
static void find_access_token(const char *token, struct revocable *t)
{
    struct token_claims c;
    if (token_verify(auth_key(), token, clock_now_s(), &c) != TOKEN_OK ||
        revocation_contains(c.sid) || revocation_contains(c.jti) || revocation_contains(c.sub))
        return;
    t->found = true;
    snprintf(t->session_id, sizeof t->session_id, "%s", c.sid);
    snprintf(t->user_id, sizeof t->user_id, "%s", c.sub);
    snprintf(t->workspace_id, sizeof t->workspace_id, "%s", c.wid);
    snprintf(t->client_id, sizeof t->client_id, "%s",
             strcmp(c.client_id, TOKEN_FIRST_PARTY) == 0 ? "" : c.client_id);
}

/* A refresh token of a session that is neither revoked nor expired (the token itself may be
 * one the session already rotated past: it is still that session's). 0 / -1. */
static int find_refresh_token(const char *token, struct revocable *t)
{
    struct acc_token_session s;
    bool found = false;
    if (acc_refresh_token_session(token, &s, &found) != 0)
        return -1;
    if (!found || !s.active)
        return 0;
    t->found = true;
    snprintf(t->session_id, sizeof t->session_id, "%s", s.session_id);
    snprintf(t->user_id, sizeof t->user_id, "%s", s.user_id);
    snprintf(t->workspace_id, sizeof t->workspace_id, "%s", s.workspace_id);
    snprintf(t->client_id, sizeof t->client_id, "%s", s.client_id);
    return 0;
}

int accounts_revoke_token(struct req *r, const struct accounts_revoke_token_request *in,
                          struct accounts_revoke_token_response *out)
{
    const struct revocation_request *b = in->body;
    char client[ID_MAX];
    int ok = client_authenticate(r, b->has_client_id ? b->client_id : NULL,
                                     b->has_client_secret ? b->client_secret : NULL, client,
                                     sizeof client);
    if (ok <= 0)
        return ok;
    if (!client[0]) {
        req_problem(r, 400, "invalid_request",
                    "Name the client: HTTP Basic, or client_id in the body (RFC 7009 §2.1).");
        return 0;
    }
    if (!b->has_token || !b->token[0]) { /* a parameter without a value is absent (RFC 6749 §3.2) */
        req_problem(r, 400, "invalid_request", "token is required.");
        return 0;
    }
    /* The hint only says where to look first; an unknown hint is no hint (RFC 7009 §2.1). */
    bool access_first = b->has_token_type_hint && strcmp(b->token_type_hint, "access_token") == 0;
    struct revocable t;
    memset(&t, 0, sizeof t);
    for (int pass = 0; pass < 2 && !t.found; pass++) {
        if ((pass == 0) == access_first)
            find_access_token(b->token, &t);
        else if (find_refresh_token(b->token, &t) != 0)
            return -1;
    }
    if (t.found && strcmp(t.client_id, client) != 0) {
        /* RFC 7009 §2.1: refused; someone holds another client's (or a login's) token. */
        log_warn("oauth: client %s asked to revoke a token of %s; refused", client,
                 t.client_id[0] ? t.client_id : "a first-party session");
        req_problem(r, 400, "invalid_grant",
                    "This token was not issued to this client; nothing was revoked.");
        return 0;
    }
    /* Either token ends its session: the refresh token and every access token of it. An
     * unknown, expired or already revoked token is answered 200 all the same (RFC 7009 §2.2). */
    if (t.found && acc_revoke_session(r, t.session_id, t.user_id, t.workspace_id,
                                      "token_revocation") < 0)
        return -1;
    out->status = 200;
    return 0;
}
