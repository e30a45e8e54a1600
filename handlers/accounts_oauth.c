/* OAuth 2.0, authorization code with PKCE (RFC 6749, 7636, 8414, 9207, 9700), in five files.
 * This one: the helpers the OAuth files share (accounts_oauth.h) and the authorization server
 * metadata (RFC 8414, /.well-known/oauth-authorization-server).
 * Neighbours: accounts_oauth_clients.c, the clients a workspace registers;
 * accounts_oauth_grants.c, the users' grants; accounts_oauth_pages.c, the browser side
 * (browser sessions, the authorization endpoint, the sign-in, one-time code and consent pages,
 * the callback page, the purge job); accounts_oauth_token.c, where a client presents a code or
 * a token (client authentication, authorization codes, the token and refresh endpoints,
 * revocation: RFC 7009).
 *
 * Tokens are the login's: a session (refresh-token family) bound to the client and the grant,
 * so revoking either ends them at once. */
#include <openssl/crypto.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/accounts_oauth.h"
#include "runtime/auth.h"
#include "runtime/digest.h"
#include "runtime/log.h"
#include "runtime/storage.h"

/* ==== small helpers (the ones not static are shared: accounts_oauth.h) ===================== */

int oauth_db_failed(const char *what)
{
    log_error("oauth: %s failed: %s", what, storage_errmsg());
    return -1;
}

int oauth_sha256_hex(const char *s, char out[DIGEST_HEX_LEN + 1])
{
    return digest_sha256_hex(s, strlen(s), out);
}

/* Constant-time equality of two NUL-terminated strings of public length. */
bool oauth_secure_equal(const char *a, const char *b)
{
    size_t n = strlen(a);
    return n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

const char *oauth_issuer(void)
{
    return auth_key()->issuer;
}

/* ==== metadata ============================================================================ */

int accounts_get_authorization_server_metadata(
    struct req *r, const struct accounts_get_authorization_server_metadata_request *in,
    struct accounts_get_authorization_server_metadata_response *out)
{
    (void)in;
    static const char *code[] = {"code"}, *query[] = {"query"};
    static const char *grants[] = {"authorization_code", "refresh_token"};
    static const char *s256[] = {"S256"};
    static const char *auth_methods[] = {"none", "client_secret_basic", "client_secret_post"};
    struct authorization_server_metadata *m = arena_alloc(&r->arena, sizeof *m);
    m->issuer = oauth_issuer();
    m->authorization_endpoint = arena_printf(&r->arena, "%s" OAUTH_AUTHORIZE_PATH, oauth_issuer());
    m->token_endpoint = arena_printf(&r->arena, "%s/v1/accounts/auth/oauth/token", oauth_issuer());
    m->response_types_supported = code;
    m->response_types_supported_count = 1;
    m->response_modes_supported = query;
    m->response_modes_supported_count = 1;
    m->has_response_modes_supported = true;
    m->grant_types_supported = grants;
    m->grant_types_supported_count = 2;
    m->code_challenge_methods_supported = s256;
    m->code_challenge_methods_supported_count = 1;
    m->token_endpoint_auth_methods_supported = auth_methods;
    m->token_endpoint_auth_methods_supported_count = 3;
    m->revocation_endpoint =
        arena_printf(&r->arena, "%s/v1/accounts/auth/oauth/revoke", oauth_issuer());
    m->revocation_endpoint_auth_methods_supported = auth_methods; /* the token endpoint's */
    m->revocation_endpoint_auth_methods_supported_count = 3;
    m->scopes_supported = arena_alloc(&r->arena, (size_t)scopes_count * sizeof(const char *));
    for (int i = 0; i < scopes_count; i++)
        if (!(scopes_mask(scopes_names[i]) & SCOPES_WITHHELD))
            m->scopes_supported[m->scopes_supported_count++] = scopes_names[i];
    m->authorization_response_iss_parameter_supported = true;
    m->has_authorization_response_iss_parameter_supported = true;
    m->service_documentation = arena_printf(&r->arena, "%s/v1/openapi.json", oauth_issuer());
    m->has_service_documentation = true;
    out->status = 200;
    out->body_200 = m;
    return 0;
}
