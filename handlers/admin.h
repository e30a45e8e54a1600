/* What the other APIs may ask of the admin API: the scopes a role grants. Declared here so
 * handlers/accounts.c never reaches into the roles table itself. */
#ifndef HANDLERS_ADMIN_H
#define HANDLERS_ADMIN_H

#include <stdint.h>

/* The scopes role grants in workspace_id, as a mask with workspace:admin expanded to every
 * scope: a built-in role (spec x-roles) or one of the workspace's own, read in the caller's
 * transaction. 1 found, 0 no such role, -1 database failure. */
int admin_role_mask(const char *workspace_id, const char *role, uint64_t *mask);

#endif
