/* Password hashing with scrypt (OpenSSL EVP_PBE_scrypt), PHC-style encoded string with its own
 * parameters and salt; constant-time comparison; a dummy verification for unknown accounts so
 * timing does not reveal which emails exist. */
#ifndef RUNTIME_PASSWORD_H
#define RUNTIME_PASSWORD_H

#include <stdbool.h>
#include <stddef.h>

#define PASSWORD_HASH_MAX 160
#define PASSWORD_MIN_LEN 12
#define PASSWORD_MAX_LEN 256

/* Call first in main, before OpenSSL allocates anything: scrypt's work buffer (16 MiB at the
 * default cost) then gets a mapping of its own for each hash, backed by transparent huge pages
 * where the kernel allows them (madvise), and is given back when the hash is done. */
void password_memory_init(void);
/* Cost for new hashes: N = 2^log2n (default 14 with r = 8, p = 5: OWASP's equivalent of
 * 2^17/8/1 at 16 MiB per hash; tests lower it with TREASURY_SCRYPT_LOG2N, range 10..20). */
void password_set_cost(int log2n);
/* "$scrypt$ln=14,r=8,p=5$<salt b64>$<hash b64>" into out (PASSWORD_HASH_MAX). 0 / -1. At most
 * two hashes (new or verified) are computed at once; more callers wait their turn. */
int password_hash(const char *password, char *out, size_t outlen);
/* Recomputes with the encoded parameters; constant-time compare. False on any malformed input. */
bool password_verify(const char *password, const char *encoded);
/* Same work as a verification against a fixed hash; always false. */
bool password_verify_dummy(const char *password);
/* Password policy for passwords people choose (NIST SP 800-63B §5.1.1.2): 12 to 256 code
 * points of valid UTF-8, not the account's email or its local part (any case), not a
 * well-known password (a built-in list, compared case-insensitively) and not one character
 * repeated. NULL when acceptable, else a static reason. */
const char *password_policy_violation(const char *password, const char *email);

/* Printable random password of len chars (len < outlen) for generated admin passwords. 0 / -1. */
int password_generate(char *out, size_t outlen, size_t len);

#endif
