/* What the runtime asks the handlers about principals and workspaces, since it knows no table:
 * what a principal may do now, for the per-request privilege check (runtime/privileges.h),
 * and the tables it reads, which runtime/main.c registers with the privilege cache and the
 * storage watch (a new table that decides privileges is added to handlers_privilege_tables);
 * the revocations to load at start; the workspaces' own quotas. */
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

/* A runtime revocation_source_fn (runtime/revocation.h): sessions revoked in the last token
 * lifetime, revoked service-account tokens and disabled service accounts. */
int handlers_revocations(int64_t now_s);
/* A runtime ratelimit_quotas_fn (runtime/ratelimit.h): the workspaces' own quotas (`admin
 * set-rate-limit`). */
int handlers_workspace_quotas(void);

#endif
