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
/* n bytes as 2n lower-case hex digits and a NUL. */
void digest_hex(const unsigned char *in, size_t n, char *out);

#endif
