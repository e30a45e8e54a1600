/* Verified access tokens, remembered: a bounded direct-mapped table from a token's text to the
 * claims token_verify() found in it, so a client's next requests with the same token skip the
 * base64url decoding, both JSON parses and the HMAC (runtime/auth.c). An entry is found only
 * by the whole token, compared in constant time; every hit re-checks exp, nbf and iat against
 * the current time, and revocation is checked by the caller on every request as before. */
#ifndef RUNTIME_TOKEN_CACHE_H
#define RUNTIME_TOKEN_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/token.h"

/* Claims of a token verified earlier and still current at now (Unix seconds, with the key's
 * leeway), into *c. false: not cached (or no longer current): verify it. */
bool token_cache_get(const struct token_key *k, const char *token, int64_t now,
                     struct token_claims *c);
/* Remembers a token token_verify() accepted (tokens longer than the slot are not kept). */
void token_cache_put(const char *token, const struct token_claims *c);
/* Forgets everything (tests; a signing-key change). */
void token_cache_clear(void);

#endif
