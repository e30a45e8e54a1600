/* The workspace API: the caller's workspace (read from its token's `wid`), its settings, the
 * request quota that applies to it, and its members. */
#include "handlers/workspace.h"

#include "generated/workspace_api.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "generated/rows_workspace.h"
#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "handlers/accounts_directory.h"
#include "handlers/accounts_oauth.h"
#include "handlers/admin.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/ratelimit.h"
#include "runtime/revocation.h"
#include "runtime/storage.h"

/* The token's workspace (its row is the tenant itself: rows_workspace, scoped by its own id),
 * 412 for a stale if_match (NULL: none), with its request quota: the operator's
 * (rate_limit_per_minute) or the server's default. 1 found, 0 answered (404: deleted under a
 * live token), -1 failure. */
static int load(struct req *r, const char *if_match, struct workspace_row *x)
{
    switch (resource_load(r, &rows_workspace, r->principal.workspace_id, x)) {
    case RESOURCE_MISSING:
        req_problem(r, 404, "not_found", "The workspace %s no longer exists.",
                    r->principal.workspace_id);
        return 0;
    case RESOURCE_FAILED:
        return -1;
    }
    if (if_match && !req_if_match(if_match, x->obj.version)) {
        req_precondition_failed(r, if_match, x->obj.version);
        return 0;
    }
    struct workspace_rate_limit *q = arena_alloc(&r->arena, sizeof *q);
    q->requests_per_minute = x->has_rate_limit_per_minute ? x->rate_limit_per_minute
                                                          : ratelimit_default();
    q->source = x->has_rate_limit_per_minute ? WORKSPACE_RATE_LIMIT_SOURCE_WORKSPACE
                                             : WORKSPACE_RATE_LIMIT_SOURCE_DEFAULT;
    x->obj.rate_limit = q;
    return 1;
}

/* ---- the treasury settings other APIs read (workspace.h) ---------------------------------- */

/* The defaults of WorkspaceTreasurySettings (openapi/workspace.yaml): a NULL column is unset. */
static const struct workspace_treasury treasury_defaults = {
    .fx_quote_ttl_seconds = 30,
    .fx_spread_bps = 0,
    .transfer_signatures_required = 2,
    .transfer_authorisation_hours = 72,
    .require_mfa = false,
    .idempotency_retention_hours = 24,
};

int workspace_treasury_of(struct req *r, struct workspace_treasury *out)
{
    *out = treasury_defaults;
    struct db_stmt *st = storage_prepare(
        "SELECT treasury_fx_quote_ttl_seconds, treasury_fx_spread_bps, "
        "treasury_transfer_signatures_required, treasury_transfer_authorisation_hours, "
        "treasury_require_mfa, treasury_idempotency_retention_hours FROM workspaces WHERE id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        int *ints[] = {&out->fx_quote_ttl_seconds, &out->fx_spread_bps,
                       &out->transfer_signatures_required, &out->transfer_authorisation_hours,
                       NULL, &out->idempotency_retention_hours};
        for (int c = 0; c < 6; c++) {
            if (db_column_is_null(st, c))
                continue;
            if (ints[c])
                *ints[c] = (int)db_column_int64(st, c);
            else
                out->require_mfa = db_column_int64(st, c) != 0;
        }
    }
    db_reset(st);
    if (rc != DB_ROW) {
        if (rc != DB_DONE)
            log_error("workspace: reading the treasury settings of %s failed: %s",
                      r->principal.workspace_id, storage_errmsg());
        return -1;
    }
    return 0;
}

int workspace_get_workspace(struct req *r, const struct workspace_get_workspace_request *in,
                            struct workspace_get_workspace_response *out)
{
    (void)in;
    struct workspace_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = load(r, NULL, x);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = &x->obj;
    return 0;
}

int workspace_update_workspace_settings(
    struct req *r, const struct workspace_update_workspace_settings_request *in,
    struct workspace_update_workspace_settings_response *out)
{
    struct workspace_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = load(r, in->has_if_match ? in->if_match : NULL, x);
    if (found <= 0)
        return found;
    x->obj.settings->token_lifetime_seconds = in->body->token_lifetime_seconds;
    if ((found = acc_workspace_save_settings(r, x)) <= 0)
        return found;
    out->status = 200;
    out->body_200 = &x->obj;
    return 0;
}

static int member_row(struct req *r, struct db_stmt *st, void *item)
{
    struct member *m = item;
    m->user_id = db_column_dup(&r->arena, st, 0);
    m->object = "member";
    m->email = db_column_dup(&r->arena, st, 1);
    if (!db_column_is_null(st, 2)) {
        m->name = db_column_dup(&r->arena, st, 2);
        m->has_name = true;
    }
    m->role = db_column_dup(&r->arena, st, 3);
    m->joined_at = db_column_dup(&r->arena, st, 4);
    return 0;
}

int workspace_list_members(struct req *r, const struct workspace_list_members_request *in,
                           struct workspace_list_members_response *out)
{
    const char *args[] = {r->principal.workspace_id};
    const struct resource_sql_list members = {
        .digest = arena_printf(&r->arena, "members&w=%s", r->principal.workspace_id),
        .sql = "SELECT u.id, u.email, u.name, m.role, m.created_at FROM members m "
               "JOIN users u ON u.id = m.user_id WHERE m.workspace_id = ?1 "
               "AND (CAST(?2 AS TEXT) IS NULL OR m.created_at < ?2 OR (m.created_at = ?2 "
               "AND u.id < ?3)) ORDER BY m.created_at DESC, u.id DESC LIMIT ?4",
        .args = args,
        .n_args = 1,
        .item_size = sizeof(struct member),
        .row = member_row,
        .key_offset = offsetof(struct member, joined_at),
        .id_offset = offsetof(struct member, user_id),
    };
    struct resource_page rp;
    int listed =
        resource_list_sql(r, &members, in->limit, in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    struct member_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

/* ---- removing a member -------------------------------------------------------------------- */

/* Whether role grants workspace:admin in the caller's workspace. 1 / 0, -1 failure. */
static int role_is_admin(struct req *r, const char *role)
{
    uint64_t mask = 0;
    int found = admin_role_mask(r->principal.workspace_id, role, &mask);
    return found < 0 ? -1 : found && (mask & SCOPE_WORKSPACE_ADMIN) == SCOPE_WORKSPACE_ADMIN;
}

/* Whether a member other than user_id holds a role granting workspace:admin. 1 / 0 / -1. */
static int another_admin(struct req *r, const char *user_id)
{
    struct db_stmt *st = storage_prepare(
        "SELECT DISTINCT role FROM members WHERE workspace_id = ? AND user_id <> ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, user_id);
    const char *roles[256];
    int n = 0, rc;
    while ((rc = db_step(st)) == DB_ROW && n < 256)
        roles[n++] = db_column_dup(&r->arena, st, 0);
    db_reset(st);
    if (rc != DB_DONE && rc != DB_ROW)
        return -1;
    for (int i = 0; i < n; i++) {
        int admin = role_is_admin(r, roles[i]);
        if (admin != 0)
            return admin;
    }
    return 0;
}

int workspace_remove_member(struct req *r, const struct workspace_remove_member_request *in,
                            struct workspace_remove_member_response *out)
{
    const char *wid = r->principal.workspace_id;
    const char *role = NULL;
    if (id_valid(in->id, "usr")) {
        struct db_stmt *st =
            storage_prepare("SELECT role FROM members WHERE workspace_id = ? AND user_id = ?");
        if (!st)
            return -1;
        db_bind_text(st, 1, wid);
        db_bind_text(st, 2, in->id);
        int rc = db_step(st);
        if (rc == DB_ROW)
            role = db_column_dup(&r->arena, st, 0);
        db_reset(st);
        if (rc != DB_ROW && rc != DB_DONE)
            return -1;
    }
    if (!role) {
        req_problem(r, 404, "not_found", "%s is not a member of this workspace.", in->id);
        return 0;
    }
    if (strcmp(in->id, r->principal.user_id) == 0) {
        req_problem(r, 409, "cannot_remove_self",
                    "You cannot remove yourself; another administrator of the workspace can.");
        return 0;
    }
    int admin = role_is_admin(r, role);
    int others = admin > 0 ? another_admin(r, in->id) : 1;
    if (admin < 0 || others < 0)
        return -1;
    if (!others) {
        req_problem(r, 409, "last_admin",
                    "%s is the last member holding workspace:admin; give another member an "
                    "administrator role first.",
                    in->id);
        return 0;
    }
    char now[40];
    format_now_rfc3339(now, sizeof now);
    int sessions = acc_revoke_member_sessions(r, in->id, wid, "member_removed");
    int tokens = sessions < 0 ? -1 : admin_revoke_tokens_created_by(r, in->id, now);
    if (tokens < 0)
        return -1;
    /* The service accounts they created acted for them: disabled with their tokens, whoever
     * minted those (the remaining admins re-create what they need). */
    int disabled = admin_disable_service_accounts_of(r, in->id, "creator removed");
    if (disabled < 0 || oauth_grants_revoke_of_member(in->id, wid, now) != 0 ||
        acc_member_delete(wid, in->id) != 0)
        return -1;
    const char *detail = arena_printf(&r->arena,
                                      "role %s; %d session(s) and %d service-account token(s) "
                                      "revoked, %d service account(s) disabled",
                                      role, sessions, tokens, disabled);
    if (audit_change(r, "member.removed", "member", in->id, "active", "removed", detail) != 0)
        return -1;
    out->status = 204;
    return 0;
}
