/* Key material in the data directory, created on first start: the JWT signing key (0600) and a
 * self-signed TLS certificate for localhost/127.0.0.1/::1 made with OpenSSL. */
#ifndef RUNTIME_KEYS_H
#define RUNTIME_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/token.h"

/* Loads <dir>/jwt-signing.key (creating it 0600 with 32 random bytes, hex, if absent) into
 * k->secret and sets k->kid from it. *created tells whether it was new. 0 / -1 + err. */
int keys_signing_key(const char *dir, struct token_key *k, bool *created, char *err, size_t errlen);
/* Ensures <dir>/tls.crt and <dir>/tls.key exist (EC P-256, 825 days, SAN DNS:localhost,
 * IP:127.0.0.1, IP:::1; key 0600). *created tells whether they were new. 0 / -1 + err. */
int keys_ensure_tls(const char *dir, bool *created, char *err, size_t errlen);
/* SHA-256 fingerprint "AB:CD:..." of the PEM certificate at path. 0 / -1 + err. */
int keys_cert_fingerprint(const char *cert_path, char *out, size_t outlen, char *err, size_t errlen);
/* Reads a whole file into a malloc'd NUL-terminated buffer. NULL + err on failure. */
char *keys_read_file(const char *path, size_t *len, char *err, size_t errlen);

#endif
