/* The per-request privilege lookup (see privileges.h). Three small indexed reads at most, and
 * only on a cache miss: the runtime caches the answer until one of the tables below changes. */
#include "handlers/privileges.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "handlers/admin.h"
#include "runtime/auth.h"
#include "runtime/log.h"
#include "runtime/storage.h"
#include "runtime/token.h"

const char *const handlers_privilege_tables[] = {
    "users",            /* status (a deactivated user has no standing) */
    "members",          /* membership and role */
    "roles",            /* a custom role's scopes */
    "service_accounts", /* status and role */
    "oauth_clients",    /* status and scopes */
};
const size_t handlers_privilege_tables_count =
    sizeof handlers_privilege_tables / sizeof handlers_privilege_tables[0];

int handlers_privileges(const char *wid, const char *sub, const char *client_id,
                        uint64_t *allowed)
{
    char role[64];
    int found;
    if (token_is_service_subject(sub)) {
        const char *v[] = {sub, wid};
        found = storage_query_text("SELECT role FROM service_accounts "
                                   "WHERE id = ? AND workspace_id = ? AND status = 'active'",
                                   v, 2, role, sizeof role);
    } else {
        int64_t lifetime = 0;
        bool member = false;
        if (acc_find_standing(sub, wid, role, sizeof role, &lifetime, &member) != 0)
            return -1;
        found = member;
    }
    if (found <= 0)
        return found;
    uint64_t mask = 0;
    if (admin_role_mask(wid, role, &mask) < 0)
        return -1; /* a role deleted from under its holders grants nothing: mask stays 0 */
    if (client_id) {
        char scopes[1024];
        const char *v[] = {client_id, wid};
        found = storage_query_text("SELECT scopes FROM oauth_clients "
                                   "WHERE id = ? AND workspace_id = ? AND status = 'active'",
                                   v, 2, scopes, sizeof scopes);
        if (found <= 0)
            return found;
        mask &= auth_parse_scopes(scopes);
    }
    *allowed = mask;
    return 1;
}
