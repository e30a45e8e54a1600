/* Secrets the server must read back (TOTP seeds), sealed at rest with AES-256-GCM under a key
 * derived from the data-dir signing key, so a copy of the database alone does not hold them. */
#ifndef RUNTIME_SEAL_H
#define RUNTIME_SEAL_H

#include <stddef.h>

#include "runtime/arena.h"

/* Derives the sealing key from secret (HMAC-SHA-256 with a fixed label); call once at start. */
void seal_init(const unsigned char *secret, size_t len);
/* "v1." + base64url(nonce | ciphertext | tag) of n bytes of plaintext; NULL on failure.
 * Result lives in a. */
char *seal(struct arena *a, const unsigned char *plain, size_t n);
/* The plaintext (into out, cap bytes) of a sealed text; -1 when it was not sealed with this
 * key, was altered, or does not fit. */
int seal_open(const char *sealed, unsigned char *out, size_t cap, size_t *n);

#endif
