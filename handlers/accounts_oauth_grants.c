/* OAuth 2.0: the users' grants (/v1/accounts/oauth/grants: the applications a user allowed
 * to act for them in a workspace; list, revoke). A grant's sessions end with it. The one file
 * that writes oauth_grants: the consent page (accounts_oauth_pages.c), disabling a client and
 * removing a member go through the functions declared in accounts_oauth.h. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "handlers/accounts_oauth.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

/* ==== grants ============================================================================== */

int oauth_grant_upsert(struct req *r, const char *user_id, const struct oauth_stored_client *c,
                       const char *scope, char *grant, size_t n, const char **held)
{
    *held = scope;
    char now[40], wider[1024];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare("SELECT id, scope FROM oauth_grants WHERE user_id = ? AND "
                                       "client_id = ? AND revoked_at IS NULL");
    if (!st)
        return -1;
    db_bind_text(st, 1, user_id);
    db_bind_text(st, 2, c->c.id);
    int rc = db_step(st);
    char old[1024] = "";
    if (rc == DB_ROW) {
        acc_copy_column(st, 0, grant, n);
        acc_copy_column(st, 1, old, sizeof old);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return oauth_db_failed("grant lookup");
    if (rc == DB_ROW) {
        /* old + what is new, in catalogue order */
        char both[2100];
        snprintf(both, sizeof both, "%s %s", old, scope);
        uint64_t mask = 0;
        size_t count = 0;
        const char **names;
        resource_words_split(&r->arena, both, &names, &count);
        for (size_t i = 0; i < count; i++)
            mask |= scopes_mask(names[i]);
        scopes_text(mask, wider, sizeof wider);
        *held = arena_strdup(&r->arena, wider);
        const char *v[] = {wider, now, grant};
        return storage_exec_texts("UPDATE oauth_grants SET scope = ?, updated_at = ? WHERE id = ?",
                                  v, 3);
    }
    snprintf(grant, n, "%s", id_new(&r->arena, "grt"));
    const char *v[] = {grant, c->c.workspace_id, user_id, c->c.id, scope, now, now};
    return storage_exec_texts(
        "INSERT INTO oauth_grants (id, workspace_id, user_id, client_id, scope, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        v, 7);
}

int oauth_grants_revoke_of_client(const char *client_id, const char *now)
{
    const char *v[] = {now, client_id};
    return storage_exec_texts("UPDATE oauth_grants SET revoked_at = ? WHERE client_id = ? AND "
                              "revoked_at IS NULL",
                              v, 2);
}

int oauth_grants_revoke_of_member(const char *user_id, const char *wid, const char *now)
{
    const char *v[] = {now, user_id, wid};
    return storage_exec_texts("UPDATE oauth_grants SET revoked_at = ? WHERE user_id = ? AND "
                              "workspace_id = ? AND revoked_at IS NULL",
                              v, 3);
}

static int grant_row(struct req *r, struct db_stmt *st, void *item)
{
    struct oauth_grant *g = item;
    g->id = db_column_dup(&r->arena, st, 0);
    g->object = "oauth_grant";
    g->client_id = db_column_dup(&r->arena, st, 1);
    g->client_name = db_column_dup(&r->arena, st, 2);
    const char *scope = db_column_dup(&r->arena, st, 3);
    resource_words_split(&r->arena, scope ? scope : "", &g->scopes, &g->scopes_count);
    g->created_at = db_column_dup(&r->arena, st, 4);
    g->updated_at = db_column_dup(&r->arena, st, 5);
    return 0;
}

int accounts_list_oauth_grants(struct req *r, const struct accounts_list_oauth_grants_request *in,
                               struct accounts_list_oauth_grants_response *out)
{
    const char *args[] = {r->principal.user_id, r->principal.workspace_id};
    const struct resource_sql_list grants = {
        .digest = arena_printf(&r->arena, "oauth_grants&w=%s&u=%s", r->principal.workspace_id,
                               r->principal.user_id),
        .sql = "SELECT g.id, g.client_id, c.name, g.scope, g.created_at, g.updated_at FROM "
               "oauth_grants g JOIN oauth_clients c ON c.id = g.client_id WHERE g.user_id = ?1 "
               "AND g.workspace_id = ?2 AND g.revoked_at IS NULL AND (CAST(?3 AS TEXT) IS NULL "
               "OR g.created_at < ?3 OR (g.created_at = ?3 AND g.id < ?4)) "
               "ORDER BY g.created_at DESC, g.id DESC LIMIT ?5",
        .args = args,
        .n_args = 2,
        .item_size = sizeof(struct oauth_grant),
        .row = grant_row,
        .key_offset = offsetof(struct oauth_grant, created_at),
        .id_offset = offsetof(struct oauth_grant, id),
    };
    struct resource_page rp;
    int listed = resource_list_sql(r, &grants, in->limit, in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
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
