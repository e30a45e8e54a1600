/* Opaque pagination cursors: the position (sort key + id) and a digest of the list's filters,
 * HMAC-signed so a client can neither forge a position nor reuse a cursor with other filters. */
#ifndef RUNTIME_CURSOR_H
#define RUNTIME_CURSOR_H

#include <stddef.h>

#include "runtime/arena.h"

/* Derives the cursor key from secret (the token signing key); call once at start. */
void cursor_init(const unsigned char *secret, size_t len);
/* filters: any canonical text of the list's filters ("status=active&currency=EUR").
 * Result lives in a. */
char *cursor_encode(struct arena *a, const char *filters, const char *sort_key, const char *id);
/* 0 and *sort_key, *id (in a), or -1 when the cursor is malformed, tampered with, or was made
 * for different filters. */
int cursor_decode(struct arena *a, const char *cursor, const char *filters, char **sort_key,
                  char **id);

#endif
