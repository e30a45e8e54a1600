/* PKCE (RFC 7636) checks for the OAuth token endpoint: the syntax of a code_verifier and of an
 * S256 code_challenge, and whether BASE64URL(SHA-256(verifier)) equals the challenge. */
#ifndef RUNTIME_PKCE_H
#define RUNTIME_PKCE_H

#include <stdbool.h>

/* 43 to 128 characters of the unreserved set A-Z a-z 0-9 - . _ ~ (§4.1). */
bool pkce_verifier_ok(const char *verifier);
/* An S256 challenge: exactly 43 base64url characters (§4.2). */
bool pkce_challenge_ok(const char *challenge);
/* The S256 transformation of verifier equals challenge, compared in constant time (§4.6). */
bool pkce_s256_matches(const char *verifier, const char *challenge);

#endif
