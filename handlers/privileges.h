/* What a principal may do now, for the runtime's per-request privilege check
 * (runtime/privileges.h): the lookup and the tables it reads, which runtime/main.c registers
 * with the privilege cache and the storage watch. A new table that decides privileges is added
 * to PRIVILEGE_TABLES. */
#ifndef HANDLERS_PRIVILEGES_H
#define HANDLERS_PRIVILEGES_H

#include <stddef.h>
#include <stdint.h>

/* A runtime privileges_lookup_fn: the member's role in wid (an active user) or the service
 * account's role (an active account), intersected with the OAuth client's scopes (an active
 * client of wid) when the token was issued to one. */
int handlers_privileges(const char *wid, const char *sub, const char *client_id,
                        uint64_t *allowed);

/* Every table handlers_privileges reads: a committed change to any of them empties the cache. */
extern const char *const handlers_privilege_tables[];
extern const size_t handlers_privilege_tables_count;

#endif
