/* OAuth 2.0: the users' grants (/v1/accounts/oauth/grants: the applications a user allowed
 * to act for them in a workspace; list, revoke). A grant's sessions end with it. What the
 * OAuth files share: accounts_oauth.h. */
#include <stddef.h>
#include <string.h>

#include "handlers/accounts.h"
#include "handlers/accounts_oauth.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

/* ==== grants ============================================================================== */

static int grant_row(struct req *r, struct db_stmt *st, void *item)
{
    struct oauth_grant *g = item;
    g->id = db_column_dup(&r->arena, st, 0);
    g->object = "oauth_grant";
    g->client_id = db_column_dup(&r->arena, st, 1);
    g->client_name = db_column_dup(&r->arena, st, 2);
    const char *scope = db_column_dup(&r->arena, st, 3);
    g->scopes = oauth_split_scopes(r, scope ? scope : "", &g->scopes_count);
    g->created_at = db_column_dup(&r->arena, st, 4);
    g->updated_at = db_column_dup(&r->arena, st, 5);
    return 0;
}

int accounts_list_oauth_grants(struct req *r, const struct accounts_list_oauth_grants_request *in,
                               struct accounts_list_oauth_grants_response *out)
{
    struct page pg;
    if (page_begin(r, &pg,
                   arena_printf(&r->arena, "oauth_grants&w=%s&u=%s", r->principal.workspace_id,
                                r->principal.user_id),
                   in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    struct db_stmt *st = storage_prepare(
        "SELECT g.id, g.client_id, c.name, g.scope, g.created_at, g.updated_at FROM oauth_grants "
        "g JOIN oauth_clients c ON c.id = g.client_id WHERE g.user_id = ?1 AND g.workspace_id = "
        "?2 AND g.revoked_at IS NULL AND (CAST(?3 AS TEXT) IS NULL OR g.created_at < ?3 OR "
        "(g.created_at = ?3 AND g.id < ?4)) ORDER BY g.created_at DESC, g.id DESC LIMIT ?5");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.user_id);
    db_bind_text(st, 2, r->principal.workspace_id);
    page_bind(&pg, st, 3, 4, 5);
    struct resource_page rp;
    if (resource_page_fill(r, &pg, st, sizeof(struct oauth_grant), grant_row,
                           offsetof(struct oauth_grant, created_at),
                           offsetof(struct oauth_grant, id), &rp) != 0)
        return -1;
    struct oauth_grant_page *p = arena_alloc(&r->arena, sizeof *p);
    RESOURCE_PAGE_SET(p, rp);
    out->status = 200;
    out->body_200 = p;
    return 0;
}

int accounts_revoke_oauth_grant(struct req *r,
                                const struct accounts_revoke_oauth_grant_request *in,
                                struct accounts_revoke_oauth_grant_response *out)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    int changed = 0;
    if (id_valid(in->id, "grt")) {
        struct db_stmt *st = storage_prepare(
            "UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND user_id = ? AND "
            "workspace_id = ? AND revoked_at IS NULL");
        if (!st)
            return -1;
        const char *v[] = {now, in->id, r->principal.user_id, r->principal.workspace_id};
        for (int i = 0; i < 4; i++)
            db_bind_text(st, i + 1, v[i]);
        int rc = db_step(st);
        changed = storage_changes();
        db_reset(st);
        if (rc != DB_DONE)
            return oauth_db_failed("grant revoke");
    }
    if (!changed) {
        req_problem(r, 404, "not_found", "You have no connected application %s.", in->id);
        return 0;
    }
    if (acc_revoke_sessions_of(r, "grant_id", in->id, "grant_revoked") != 0 ||
        audit_change(r, "oauth_grant.revoked", "oauth_grant", in->id, "active", "revoked",
                     NULL) != 0)
        return -1;
    out->status = 204;
    return 0;
}
