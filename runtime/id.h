/* Resource ids: a type prefix and a ULID, 26 Crockford base32 characters of a 48-bit Unix
 * millisecond timestamp followed by 80 random bits (OpenSSL RAND_bytes), e.g. "ben_01hv3k...".
 * Ordered by creation time (to the millisecond), never guessable. */
#ifndef RUNTIME_ID_H
#define RUNTIME_ID_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/arena.h"

#define ID_MAX 48
/* prefix without underscore ("ben"). Result lives in a. */
char *id_new(struct arena *a, const char *prefix);
/* Same into a caller buffer of ID_MAX bytes. 0 / -1. */
int id_new_buf(char *buf, size_t n, const char *prefix);
/* Shape check: prefix + "_" + 26 base32 chars. */
bool id_valid(const char *s, const char *prefix);
/* Random bytes as lowercase-free base64url (no padding): opaque secrets such as refresh
 * tokens. bytes <= 64. Result lives in a. */
char *id_secret(struct arena *a, size_t bytes);

#endif
