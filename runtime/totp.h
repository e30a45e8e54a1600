/* Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP): HMAC-SHA-1, 6 digits, 30 s
 * steps, the form every authenticator app (and oathtool) uses; secrets in RFC 4648 base32. */
#ifndef RUNTIME_TOTP_H
#define RUNTIME_TOTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOTP_SECRET_BYTES 20 /* 160 bits, RFC 4226 §4's recommendation */
#define TOTP_STEP_S 30
#define TOTP_DIGITS 6

/* Base32 (upper case, no padding) of n bytes into out (>= n * 8 / 5 + 2). */
void totp_base32(const unsigned char *in, size_t n, char *out);
/* Decodes base32 (case-insensitive, no padding); 0 / -1. *len gets the byte count. */
int totp_base32_decode(const char *in, unsigned char *out, size_t cap, size_t *len);
/* The code of a time step (Unix seconds / 30), written as 6 digits and a NUL. */
void totp_code(const unsigned char *key, size_t key_len, int64_t step, char out[TOTP_DIGITS + 1]);
/* The step of now that code matches, trying now's step and one either side (RFC 6238 §5.2
 * allows one step of drift), or -1. Constant-time comparison. */
int64_t totp_match(const unsigned char *key, size_t key_len, const char *code, int64_t now_s);

#endif
