/* What the OAuth 2.0 handler files share, and the two things they give the rest of the
 * server (the CORS origin lookup for runtime/main.c, the purge job for handlers/jobs.c):
 *   accounts_oauth.c        the helpers declared here and the server metadata (RFC 8414);
 *   accounts_oauth_clients.c the clients a workspace registers (redirect URIs, web origins,
 *                           the CORS lookup, oauth_client_load, oauth_registered_redirect);
 *   accounts_oauth_grants.c the users' grants (list, revoke);
 *   accounts_oauth_pages.c  the browser side: browser sessions, the authorization endpoint, the
 *                           sign-in, one-time code and consent pages, the callback page and the
 *                           purge job;
 *   accounts_oauth_token.c  where a client presents a code or a token: client authentication,
 *                           authorization codes, the token and refresh endpoints and token
 *                           revocation (RFC 7009).
 * OAuth builds on the accounts files (accounts.h: users, login proof, sessions); they know
 * nothing of OAuth. */
#ifndef HANDLERS_ACCOUNTS_OAUTH_H
#define HANDLERS_ACCOUNTS_OAUTH_H

#include <stdbool.h>

#include "runtime/storage.h"
#include "handlers/accounts.h"
#include "runtime/digest.h"
#include "runtime/job_runner.h"
#include "runtime/req.h"

#define OAUTH_AUTHORIZE_PATH "/v1/accounts/auth/oauth/authorize"
/* Random bytes of a client secret, an authorization code, a browser cookie and a CSRF token. */
#define OAUTH_SECRET_BYTES 32
/* The longest redirect URI (and state) an authorization request carries. */
#define OAUTH_URI_MAX 600

/* A registered client as stored: what the API shows, and what it does not. */
struct oauth_stored_client {
    struct oauth_client c;
    const char *secret_hash; /* NULL for public clients */
    const char *scopes_text; /* space-separated */
};

/* The accounts API's answer to runtime/cors.h (cors_origin_fn): whether origin is registered
 * with the active OAuth client client_id, or with any active client when it is NULL.
 * (accounts_oauth_clients.c) */
bool accounts_cors_origin_allowed(const char *origin, const char *client_id);
/* The job that deletes expired codes, requests and browser sessions. (accounts_oauth_pages.c) */
struct job accounts_oauth_purge_job(void);

/* ---- defined in accounts_oauth.c ---- */

/* Logs a failed database step ("oauth: <what> failed: ..."). Returns -1. */
int oauth_db_failed(const char *what);
/* The SHA-256 of s in hex (how secrets, codes and cookies are stored). 0 / -1. */
int oauth_sha256_hex(const char *s, char out[DIGEST_HEX_LEN + 1]);
/* Constant-time equality of two NUL-terminated strings of public length. */
bool oauth_secure_equal(const char *a, const char *b);
/* A scope list's text ("a b c") is split by resource_words_split (runtime/resource.h), as
 * the words column of oauth_clients.scopes is. */
/* The token issuer: the base URL of this server. */
const char *oauth_issuer(void);

/* ---- defined in accounts_oauth_clients.c ---- */

/* Client id, of workspace wid (NULL: any workspace), into *x (its strings in r->arena).
 * 1 found, 0 not, -1 failure. */
int oauth_client_load(struct req *r, const char *id, const char *wid,
                      struct oauth_stored_client *x);
/* The registered URI of c that uri matches: exactly, or a loopback URI differing only in its
 * port (RFC 9700 §2.1, RFC 8252 §7.3). NULL when none. */
const char *oauth_registered_redirect(const struct oauth_client *c, const char *uri);

/* ---- defined in accounts_oauth_grants.c ---- */

/* The user's active grant to the client, widened to scope (created when there is none). Its
 * id into grant (n bytes), the scopes it holds now into *held (in r->arena). 0 / -1. */
int oauth_grant_upsert(struct req *r, const char *user_id, const struct oauth_stored_client *c,
                       const char *scope, char *grant, size_t n, const char **held);
/* Revokes, at now, the active grants of a client, or of a member (user_id in wid). 0 / -1. */
int oauth_grants_revoke_of_client(const char *client_id, const char *now);
int oauth_grants_revoke_of_member(const char *user_id, const char *wid, const char *now);

/* ---- defined in accounts_oauth_pages.c ---- */

/* Signs user_id out of every browser signed in on the authorization pages. 0 / -1. */
int oauth_browser_end_user(const char *user_id);

/* ---- defined in accounts_oauth_token.c ---- */

/* Deletes (a batch of at most 500) authorization codes that expired before before_ms. How
 * many, or -1. */
int oauth_code_purge_expired(int64_t before_ms);
/* Voids user_id's codes not yet exchanged (each would open a session). 0 / -1. */
int oauth_code_drop_unused(const char *user_id);

/* A new single-use authorization code (it lives 60 s) for user_id under grant_id, bound to
 * client c, redirect_uri, scope and the PKCE challenge; only its digest is stored. The code
 * into *code (in r->arena). 0 / -1. */
int oauth_code_issue(struct req *r, const struct oauth_stored_client *c, const char *grant_id,
                     const char *user_id, const char *redirect_uri, const char *scope,
                     const char *challenge, const char **code);

#endif
