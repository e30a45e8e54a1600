/* SHA-256 digests as lower-case hex, for values stored or compared by digest: refresh tokens,
 * request-body fingerprints, quota keys derived from emails. */
#ifndef RUNTIME_DIGEST_H
#define RUNTIME_DIGEST_H

#include <stddef.h>

#define DIGEST_HEX_LEN 64

#define DIGEST_BYTES 32

/* The raw digest. 0 / -1. */
int digest_sha256(const void *data, size_t n, unsigned char out[DIGEST_BYTES]);
/* out receives DIGEST_HEX_LEN hex digits and a NUL. 0 / -1. */
int digest_sha256_hex(const void *data, size_t n, char out[DIGEST_HEX_LEN + 1]);
/* HMAC-SHA-256 (RFC 2104) under a key set once: the key's two padded blocks are hashed when it
 * is set, so a MAC costs only its message (OpenSSL's one-shot HMAC() looks the algorithm up
 * and hashes the key anew on every call: most of the price of a short message). A set key is
 * read-only, usable from any thread. */
struct digest_hmac {
    void *inner, *outer; /* EVP_MD_CTX after (key ^ ipad), (key ^ opad) */
};
/* Sets (or replaces) h's key. 0 / -1. */
int digest_hmac_key(struct digest_hmac *h, const void *key, size_t n);
/* Frees h's key (h can be keyed again). */
void digest_hmac_forget(struct digest_hmac *h);
/* The MAC of data under h's key. 0 / -1. */
int digest_hmac(const struct digest_hmac *h, const void *data, size_t n,
                unsigned char out[DIGEST_BYTES]);
/* n bytes as 2n lower-case hex digits and a NUL. */
void digest_hex(const unsigned char *in, size_t n, char *out);

#endif
