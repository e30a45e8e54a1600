/* Bearer token check: the token module proves the JWT is ours and current; this file maps the
 * outcome to RFC 6750 responses and the operation's required scopes. */
#include "runtime/auth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "runtime/clock.h"
#include "runtime/instances.h"
#include "runtime/privileges.h"
#include "runtime/revocation.h"
#include "runtime/token_cache.h"

static const struct token_key *key;
static auth_scope_mask_fn *mask_of;
static uint64_t admin_scope, every_scope;

void auth_init(const struct token_key *k, auth_scope_mask_fn *scope_mask, uint64_t admin_bit,
               uint64_t all_bits)
{
    key = k;
    mask_of = scope_mask;
    admin_scope = admin_bit;
    every_scope = all_bits;
}

const struct token_key *auth_key(void)
{
    return key;
}

uint64_t auth_parse_scopes(const char *scopes)
{
    uint64_t bits = 0;
    char name[128];
    const char *p = scopes;
    while (p && *p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n > 0 && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            bits |= mask_of(name);
        }
        p += n;
    }
    if (bits & admin_scope)
        bits |= every_scope;
    return bits;
}

static void refuse(struct req *r, const char *why)
{
    char www[256];
    snprintf(www, sizeof www, "Bearer realm=\"" AUTH_REALM "\", error=\"invalid_token\", "
                              "error_description=\"%s\"", why);
    req_problem(r, 401, "invalid_token", "The access token is invalid: %s.", why);
    req_set_header(r, "WWW-Authenticate", www);
}

int auth_check(struct req *r)
{
    const char *h = req_header(r, "Authorization");
    if (req_query(r, "access_token")) {
        /* RFC 6750 §2.3 tokens in URLs end up in logs; we accept only the header. */
        req_problem(r, 400, "invalid_request",
                    "Send the access token in the Authorization header, never in the URL.");
        req_set_header(r, "WWW-Authenticate",
                       "Bearer realm=\"" AUTH_REALM "\", error=\"invalid_request\"");
        return -1;
    }
    if (!h || !*h) {
        req_problem(r, 401, "unauthorized",
                    "This operation needs a bearer token: Authorization: Bearer <access_token>.");
        req_set_header(r, "WWW-Authenticate", "Bearer realm=\"" AUTH_REALM "\"");
        return -1;
    }
    if (strncasecmp(h, "Bearer ", 7) != 0) {
        refuse(r, "the Authorization scheme must be Bearer");
        return -1;
    }
    const char *tok = h + 7;
    while (*tok == ' ')
        tok++;
    struct token_claims c;
    int64_t now = clock_now_s();
    if (!token_cache_get(key, tok, now, &c)) {
        enum token_result tr = token_verify(key, tok, now, &c);
        if (tr != TOKEN_OK) {
            refuse(r, token_result_str(tr));
            return -1;
        }
        c.scope_bits = auth_parse_scopes(c.scope);
        token_cache_put(tok, &c);
    }
    /* Revoked sessions (logout, refresh-token reuse), tokens (service-account tokens) and
     * principals (disabled service accounts): an in-memory check, no database round trip
     * (runtime/revocation.c). */
    if (revocation_contains(c.sid) || revocation_contains(c.jti) ||
        revocation_contains(c.sub)) {
        refuse(r, "the token has been revoked");
        return -1;
    }
    /* What other instances on the same database revoked or changed meanwhile
     * (runtime/instances.h; nothing to hear with SQLite). */
    int elsewhere = instances_hear(c.sid, c.jti, c.sub, now);
    if (elsewhere < 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return -1;
    }
    if (elsewhere > 0) {
        refuse(r, "the token has been revoked");
        return -1;
    }
    /* The token's scopes as far as the principal may still use them: a narrowed role or
     * client, a removed member or a disabled account counts from the next request on
     * (runtime/privileges.h; cached, so a hit costs a hash and a lock). */
    const char *client = strcmp(c.client_id, TOKEN_FIRST_PARTY) != 0 ? c.client_id : NULL;
    uint64_t allowed = 0;
    int standing = privileges_current(c.wid, c.sub, client, &allowed);
    if (standing < 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return -1;
    }
    if (standing == 0) {
        refuse(r, "its principal no longer has access to this workspace");
        return -1;
    }
    struct principal *p = &r->principal;
    p->authenticated = true;
    p->user_id = arena_strdup(&r->arena, c.sub);
    p->workspace_id = arena_strdup(&r->arena, c.wid);
    p->session_id = arena_strdup(&r->arena, c.sid);
    p->token_id = arena_strdup(&r->arena, c.jti);
    p->scopes = c.scope_bits & allowed;
    if (client)
        p->client_id = arena_strdup(&r->arena, client);
    if (p->client_id && r->op->first_party) {
        req_problem(r, 403, "insufficient_scope",
                    "Tokens issued to an OAuth application cannot manage the user's own account "
                    "(sessions, MFA, connected applications); sign in to do that.");
        req_set_header(r, "WWW-Authenticate",
                       "Bearer realm=\"" AUTH_REALM "\", error=\"insufficient_scope\"");
        return -1;
    }
    if ((p->scopes & r->op->scopes) != r->op->scopes) {
        char www[512];
        snprintf(www, sizeof www,
                 "Bearer realm=\"" AUTH_REALM "\", error=\"insufficient_scope\", scope=\"%s\"",
                 r->op->scopes_text);
        req_problem(r, 403, "insufficient_scope", "This operation needs the scope(s): %s.",
                    r->op->scopes_text);
        req_set_header(r, "WWW-Authenticate", www);
        return -1;
    }
    return 0;
}
