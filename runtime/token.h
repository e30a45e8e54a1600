/* Access tokens: JWT (RFC 7519/9068) signed HS256 with the data-dir key, issued and verified
 * here with OpenSSL's HMAC rather than Debian's libjwt 1.10.2, whose jwt_decode() skips the
 * signature without a key and checks no claim: this module accepts HS256 only and checks typ,
 * signature (constant time), iss, aud, exp, nbf and iat itself (RFC 8725 §3.1, §3.11). */
#ifndef RUNTIME_TOKEN_H
#define RUNTIME_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOKEN_KEY_BYTES 32
#define TOKEN_MAX_BYTES 8192 /* longer bearer tokens are refused unparsed */
/* Subjects of service accounts: their tokens may have no exp (all others must). */
#define TOKEN_SERVICE_PREFIX "sa_"
/* True when sub (a JWT subject or a stored principal id) is a service account's. */
bool token_is_service_subject(const char *sub);
/* The client_id (RFC 9068) of tokens from our own login, refresh and service-account
 * endpoints; tokens issued to an OAuth application carry its client id ("cli_..."). */
#define TOKEN_FIRST_PARTY "first-party"

struct token_key {
    unsigned char secret[TOKEN_KEY_BYTES];
    char kid[32];           /* "k1"-style id, written in the JWT header */
    char issuer[256];       /* iss, e.g. "https://127.0.0.1:8443" */
    char audience[64];      /* aud, "treasury-api" */
    int64_t leeway_seconds; /* clock skew allowed on exp/nbf/iat, 30 */
};

struct token_claims {
    char sub[64];  /* user id */
    char wid[64];  /* workspace id */
    char sid[64];  /* session id */
    char jti[64];  /* token id */
    char client_id[64]; /* TOKEN_FIRST_PARTY or the OAuth client's id */
    char scope[1024]; /* space-separated scopes */
    int64_t iat, nbf, exp; /* exp == 0: no expiry, allowed only for service accounts (sa_ sub) */
    uint64_t scope_bits;   /* scope as auth_parse_scopes bits: set by runtime/auth.c before the
                              claims are cached, so a cache hit parses nothing (0 from verify) */
};

enum token_result {
    TOKEN_OK = 0,
    TOKEN_MALFORMED,     /* not three base64url parts, bad JSON, too long, non-UTF-8 */
    TOKEN_BAD_ALG,       /* header alg is not HS256 (none, HS512, RS256...) */
    TOKEN_BAD_TYP,       /* header typ is not at+jwt */
    TOKEN_BAD_SIGNATURE,
    TOKEN_EXPIRED,
    TOKEN_NOT_YET_VALID, /* nbf or iat in the future beyond leeway */
    TOKEN_BAD_ISSUER,
    TOKEN_BAD_AUDIENCE,
    TOKEN_MISSING_CLAIM, /* sub, wid, sid, jti, client_id, iat, exp or scope absent or wrong
                            type */
};

/* Signs claims; *out is malloc'd (caller frees). 0 / -1. */
int token_issue(const struct token_key *k, const struct token_claims *c, char **out);
/* Verifies everything listed above against now (Unix seconds) and fills *c on TOKEN_OK. */
enum token_result token_verify(const struct token_key *k, const char *token, int64_t now,
                               struct token_claims *c);
/* The exp, nbf and iat rules of token_verify alone, on claims it accepted earlier (the
 * verified-token cache): TOKEN_OK, TOKEN_EXPIRED or TOKEN_NOT_YET_VALID at now. */
enum token_result token_check_times(const struct token_key *k, const struct token_claims *c,
                                    int64_t now);
const char *token_result_str(enum token_result r);

#endif
