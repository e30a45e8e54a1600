/* The workspace API: the caller's workspace (read from its token's `wid`), its settings, the
 * request quota that applies to it, and its members. */
#include "generated/workspace_api.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/rows_workspace.h"
#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "handlers/accounts_directory.h"
#include "handlers/accounts_oauth.h"
#include "handlers/admin.h"
#include "handlers/workspace.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/jsonw.h"
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

int64_t workspace_idempotency_retention_s(struct req *r)
{
    struct workspace_treasury t;
    if (!r->principal.workspace_id || workspace_treasury_of(r, &t) != 0)
        return 0;
    return (int64_t)t.idempotency_retention_hours * 3600;
}

/* The answer's treasury: every setting, its default where unset (the row keeps NULL, so a
 * default is never frozen into it). After any save of w. */
static void fill_treasury(struct req *r, struct workspace *w)
{
    struct workspace_treasury_settings *t = arena_alloc(&r->arena, sizeof *t);
    if (w->treasury)
        *t = *w->treasury;
    const struct workspace_treasury *d = &treasury_defaults;
#define DEFAULT(m)                                                                               \
    do {                                                                                         \
        if (!t->has_##m) {                                                                       \
            t->m = d->m;                                                                         \
            t->has_##m = true;                                                                   \
        }                                                                                        \
    } while (0)
    DEFAULT(fx_quote_ttl_seconds);
    DEFAULT(fx_spread_bps);
    DEFAULT(transfer_signatures_required);
    DEFAULT(transfer_authorisation_hours);
    DEFAULT(require_mfa);
    DEFAULT(idempotency_retention_hours);
#undef DEFAULT
    w->treasury = t;
    w->has_treasury = true;
}

int workspace_get_workspace(struct req *r, const struct workspace_get_workspace_request *in,
                            struct workspace_get_workspace_response *out)
{
    (void)in;
    struct workspace_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = load(r, NULL, x);
    if (found <= 0)
        return found;
    fill_treasury(r, &x->obj);
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
    fill_treasury(r, &x->obj);
    out->status = 200;
    out->body_200 = &x->obj;
    return 0;
}

/* ---- the profile (PATCH /v1/workspace) ------------------------------------------------------ */

/* Whether the time zone database has the zone name: a TZif file of that name under TZDIR
 * (glibc's variable) or /usr/share/zoneinfo. The schema's pattern admits no `.`, so the name
 * cannot leave the folder; the posix/ and right/ copies of the database are no zone names. */
static bool timezone_known(const char *name)
{
    if (strncmp(name, "posix/", 6) == 0 || strncmp(name, "right/", 6) == 0 ||
        strcmp(name, "posixrules") == 0 || strcmp(name, "Factory") == 0)
        return false;
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && dir[0] ? dir : "/usr/share/zoneinfo", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char magic[4];
    bool tzif = fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, "TZif", 4) == 0;
    fclose(f);
    return tzif;
}

/* Whether another workspace has the slug. 1 / 0, -1 failure. */
static int slug_taken(struct req *r, const char *slug)
{
    const char *v[] = {slug, r->principal.workspace_id};
    char id[64];
    return storage_query_text("SELECT id FROM workspaces WHERE slug = ? AND id <> ?", v, 2, id,
                              sizeof id);
}

static void answer_slug_taken(struct req *r, const char *slug)
{
    req_problem(r, 409, "slug_taken", "The slug %s is taken; choose another.", slug);
}

static bool same_text(bool has_a, const char *a, bool has_b, const char *b)
{
    return has_a == has_b && (!has_a || strcmp(a, b) == 0);
}

static bool same_int(bool has_a, int64_t a, bool has_b, int64_t b)
{
    return has_a == has_b && (!has_a || a == b);
}

/* The audit detail: {"changed": [...]}, the members whose value changed from *o to *n (a
 * treasury setting as treasury.<name>; a reset to the default counts when it was set). */
static const char *changed_members(struct req *r, const struct workspace *o,
                                   const struct workspace_treasury_settings *ot,
                                   const struct workspace *n)
{
    static const struct workspace_treasury_settings none;
    const struct workspace_treasury_settings *nt = n->treasury ? n->treasury : &none;
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "changed");
    jsonw_array_begin(&w);
#define NOTE(differs, label)                                                                     \
    do {                                                                                         \
        if (differs)                                                                             \
            jsonw_string(&w, label);                                                             \
    } while (0)
    NOTE(strcmp(o->name, n->name) != 0, "name");
    NOTE(!same_text(o->has_slug, o->slug, n->has_slug, n->slug), "slug");
    NOTE(!same_text(o->has_base_currency, o->base_currency, n->has_base_currency,
                    n->base_currency),
         "base_currency");
    NOTE(!same_text(o->has_timezone, o->timezone, n->has_timezone, n->timezone), "timezone");
    NOTE(!same_int(o->has_fiscal_year_start_month, o->fiscal_year_start_month,
                   n->has_fiscal_year_start_month, n->fiscal_year_start_month),
         "fiscal_year_start_month");
#define NOTE_T(m) NOTE(!same_int(ot->has_##m, ot->m, nt->has_##m, nt->m), "treasury." #m)
    NOTE_T(fx_quote_ttl_seconds);
    NOTE_T(fx_spread_bps);
    NOTE_T(transfer_signatures_required);
    NOTE_T(transfer_authorisation_hours);
    NOTE_T(require_mfa);
    NOTE_T(idempotency_retention_hours);
#undef NOTE_T
#undef NOTE
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    size_t len = 0;
    char *text = jsonw_take(&w, &len);
    jsonw_release(&w);
    const char *out = text ? arena_printf(&r->arena, "%s", text) : NULL;
    free(text);
    return out;
}

int workspace_update_workspace(struct req *r, const struct workspace_update_workspace_request *in,
                               struct workspace_update_workspace_response *out)
{
    const struct workspace_update *u = in->body;
    struct workspace_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = load(r, in->has_if_match ? in->if_match : NULL, x);
    if (found <= 0)
        return found;
    if (u->has_timezone && !timezone_known(u->timezone)) {
        verr_add(&r->verr, "/timezone", NULL, "unknown_timezone", "%s",
                 "the time zone database has no such zone");
        req_problem(r, 422, "unknown_timezone", "%s is not a time zone of the IANA database.",
                    u->timezone);
        r->with_errors = true;
        return 0;
    }
    if (u->has_slug) {
        int taken = slug_taken(r, u->slug);
        if (taken < 0)
            return -1;
        if (taken) {
            answer_slug_taken(r, u->slug);
            return 0;
        }
    }
    /* the merge writes into the treasury object the row was read with: keep its values */
    struct workspace before = x->obj;
    struct workspace_treasury_settings before_t = {0};
    if (x->obj.treasury)
        before_t = *x->obj.treasury;
    merge_workspace_update_into_workspace(&r->arena, u, &x->obj);
    const char *detail = changed_members(r, &before, &before_t, &x->obj);
    if (!detail)
        return -1;
    int saved = acc_workspace_save_profile(r, x);
    if (saved == DB_ERR_UNIQUE) { /* another workspace took the slug meanwhile */
        answer_slug_taken(r, u->slug);
        return 0;
    }
    if (saved <= 0)
        return saved;
    if (audit_change(r, "workspace.updated", "workspace", x->obj.id, NULL, NULL, detail) != 0)
        return -1;
    fill_treasury(r, &x->obj);
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
