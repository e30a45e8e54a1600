/* Bearer authentication and scope checks for every protected operation (RFC 6750 answers:
 * 401 invalid_token / 403 insufficient_scope with WWW-Authenticate). */
#ifndef RUNTIME_AUTH_H
#define RUNTIME_AUTH_H

#include <stdint.h>

#include "runtime/req.h"
#include "runtime/token.h"

#define AUTH_REALM "treasury"

typedef uint64_t auth_scope_mask_fn(const char *name);

/* k must outlive the server. scope_mask maps a scope name to its bit (0 if unknown);
 * admin_bit is workspace:admin, which grants all_bits. */
void auth_init(const struct token_key *k, auth_scope_mask_fn *scope_mask, uint64_t admin_bit,
               uint64_t all_bits);
const struct token_key *auth_key(void);
/* Bits of a space-separated scope list, workspace:admin expanded; unknown names ignored. */
uint64_t auth_parse_scopes(const char *scopes);
/* Verifies the bearer token and r->op's scopes, filling r->principal. 0 = go on; -1 = a
 * 400/401/403 problem with WWW-Authenticate is recorded on r. */
int auth_check(struct req *r);

#endif
