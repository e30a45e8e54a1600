/* Unpadded base64url (RFC 4648 §5), the one spelling of binary in our tokens, cursors and
 * sealed secrets. Decoding is strict: alphabet only, no padding, canonical trailing bits, so
 * every value has exactly one text. */
#ifndef RUNTIME_BASE64URL_H
#define RUNTIME_BASE64URL_H

#include <stddef.h>

/* Characters for n bytes (without the NUL). */
#define BASE64URL_LEN(n) ((n) / 3 * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))

/* out needs BASE64URL_LEN(n) + 1 bytes; NUL-terminated. */
void base64url_encode(const unsigned char *in, size_t n, char *out);
/* Decodes n characters into out (cap bytes; a NUL is appended when room remains). 0 and *len,
 * or -1 for any character outside the alphabet, a length no encoding has, non-canonical
 * trailing bits, or an output that does not fit. */
int base64url_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *len);

#endif
