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
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/ratelimit.h"
#include "runtime/revocation.h"
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

int handlers_revocations(int64_t now_s)
{
    char since[40];
    format_time_rfc3339((now_s - REVOCATION_TOKEN_LIFETIME_S) * 1000, since, sizeof since);
    struct db_stmt *st = storage_prepare(
        "SELECT id, revoked_at FROM sessions WHERE revoked_at IS NOT NULL AND revoked_at > ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, since);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *id = db_column_text(st, 0);
        const char *at = db_column_text(st, 1);
        int64_t ms = 0;
        /* An unreadable time is treated as "just now": kept a full lifetime. */
        int64_t revoked_s = format_time_parse(at, &ms) ? ms / 1000 : now_s;
        revocation_add(id, revoked_s + REVOCATION_TOKEN_LIFETIME_S);
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("revocations: reading revoked sessions failed: %s", storage_errmsg());
        return -1;
    }
    /* Service-account tokens never expire, so their revocations (and disabled accounts) are
     * kept for good. */
    st = storage_prepare("SELECT id FROM service_account_tokens WHERE revoked_at IS NOT NULL "
                         "UNION ALL SELECT id FROM service_accounts WHERE status = 'disabled'");
    if (!st)
        return -1;
    while ((rc = db_step(st)) == DB_ROW)
        revocation_add(db_column_text(st, 0), INT64_MAX);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("revocations: reading revoked tokens failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

int handlers_workspace_quotas(void)
{
    struct db_stmt *st = storage_prepare(
        "SELECT id, rate_limit_per_minute FROM workspaces WHERE rate_limit_per_minute IS NOT NULL");
    if (!st)
        return -1;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *id = db_column_text(st, 0);
        if (id)
            ratelimit_set_workspace_quota(id, db_column_int64(st, 1));
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("workspace quotas: reading failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}
