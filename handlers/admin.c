/* The admin control API: roles and service accounts. Built-in roles come from the spec
 * (x-roles, generated into generated/scopes.c) and cannot change; a workspace adds its own with
 * PUT /admin/roles/{key}, stored with their scopes in catalogue order. Service accounts hold a
 * role; their tokens carry a subset of its scopes, never expire, and are revoked through
 * runtime/revocation.c (token id, or the account id for all of them). */
#include "generated/admin_api.h"
#include "generated/rows_admin.h"

#include "handlers/admin.h"
#include "handlers/invitations.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/scopes.h"
#include "runtime/audit.h"
#include "runtime/auth.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/revocation.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define CUSTOM_ROLES_MAX 100
#define SCOPES_TEXT_MAX 1024

static uint64_t expand(uint64_t mask)
{
    return (mask & SCOPE_WORKSPACE_ADMIN) ? scopes_all() : mask;
}

static uint64_t mask_of_text(const char *text)
{
    uint64_t mask = 0;
    char name[80];
    for (const char *p = text; p && *p;) {
        size_t k = strcspn(p, " ");
        if (k > 0 && k < sizeof name) {
            memcpy(name, p, k);
            name[k] = '\0';
            mask |= scopes_mask(name);
        }
        p += k;
        while (*p == ' ')
            p++;
    }
    return mask;
}

int admin_role_mask(const char *workspace_id, const char *role, uint64_t *mask)
{
    const struct scopes_role *builtin = scopes_role(role);
    if (builtin) {
        *mask = expand(builtin->mask);
        return 1;
    }
    struct db_stmt *st =
        storage_prepare("SELECT scopes FROM roles WHERE workspace_id = ? AND key = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, workspace_id);
    db_bind_text(st, 2, role);
    int rc = db_step(st), found = rc == DB_ROW;
    if (found)
        *mask = expand(mask_of_text(db_column_text(st, 0)));
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("roles: lookup failed: %s", storage_errmsg());
        return -1;
    }
    return found;
}

int admin_principal_role(const char *workspace_id, const char *principal_id, char *role,
                         size_t n)
{
    const char *v[] = {workspace_id, principal_id};
    return storage_query_text(
        "SELECT role FROM members WHERE workspace_id = ?1 AND user_id = ?2 "
        "UNION ALL SELECT role FROM service_accounts WHERE workspace_id = ?1 AND id = ?2",
        v, 2, role, n);
}

int admin_service_account_creator(const char *workspace_id, const char *service_account_id,
                                  char *creator, size_t n)
{
    const char *v[] = {workspace_id, service_account_id};
    return storage_query_text(
        "SELECT created_by FROM service_accounts WHERE workspace_id = ? AND id = ?", v, 2, creator,
        n);
}

int admin_service_token_minter(const char *workspace_id, const char *service_account_id,
                               const char *token_id, char *minter, size_t n)
{
    const char *v[] = {token_id, service_account_id, workspace_id};
    return storage_query_text("SELECT created_by FROM service_account_tokens "
                              "WHERE id = ? AND service_account_id = ? AND workspace_id = ?",
                              v, 3, minter, n);
}

/* A space-separated scope list as the array the Role schema holds (in r->arena). */
static void split_scopes(struct req *r, const char *text, struct role *out)
{
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == ' ';
    out->scopes = arena_alloc(&r->arena, (n + 1) * sizeof *out->scopes);
    out->scopes_count = 0;
    for (const char *p = text; *p;) {
        size_t k = strcspn(p, " ");
        if (k > 0)
            out->scopes[out->scopes_count++] = arena_strndup(&r->arena, p, k);
        p += k;
        while (*p == ' ')
            p++;
    }
}

int admin_role_approval_limit(const char *workspace_id, const char *role, const char *currency,
                              int64_t *limit, bool *limited)
{
    *limited = false;
    if (scopes_role(role))
        return 0; /* built-in roles have no limit */
    struct db_stmt *st = storage_prepare(rows_role.select_sql);
    if (!st)
        return -1;
    db_bind_text(st, 1, role);
    db_bind_text(st, 2, workspace_id);
    struct arena a;
    struct role_row row;
    arena_init(&a);
    int rc = db_step(st), ret = 0;
    if (rc == DB_ROW && rows_role.read(&a, st, 0, &row) != 0)
        ret = -1;
    else if (rc == DB_ROW && row.obj.has_approval_limits) {
        *limited = true;
        *limit = 0; /* a currency not listed cannot be approved at all */
        for (size_t i = 0; i < row.obj.approval_limits_count; i++)
            if (strcmp(row.obj.approval_limits[i].currency, currency) == 0)
                *limit = row.obj.approval_limits[i].amount;
    } else if (rc != DB_ROW && rc != DB_DONE) {
        ret = -1;
    }
    db_reset(st);
    arena_release(&a);
    return ret;
}

int admin_list_roles(struct req *r, const struct admin_list_roles_request *in,
                     struct admin_list_roles_response *out)
{
    (void)in;
    struct resource_page custom;
    if (resource_list_every(r, &rows_role, CUSTOM_ROLES_MAX, &custom) != 0)
        return -1;
    struct role_list *list = arena_alloc(&r->arena, sizeof *list);
    list->data = arena_alloc(&r->arena, ((size_t)scopes_roles_count + custom.count) *
                                            sizeof *list->data);
    for (int i = 0; i < scopes_roles_count; i++) {
        struct role *role = &list->data[list->data_count++];
        char scopes[SCOPES_TEXT_MAX];
        scopes_text(scopes_roles[i].mask, scopes, sizeof scopes);
        role->key = scopes_roles[i].key;
        role->object = "role";
        role->name = scopes_roles[i].name;
        role->description = scopes_roles[i].description;
        role->has_description = true;
        split_scopes(r, scopes, role);
        role->system = true;
    }
    for (size_t i = 0; i < custom.count; i++)
        list->data[list->data_count++] = ((const struct role_row *)custom.items)[i].obj;
    out->status = 200;
    out->body_200 = list;
    return 0;
}

static int64_t custom_role_count(struct req *r)
{
    struct db_stmt *st = storage_prepare("SELECT count(*) FROM roles WHERE workspace_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    int64_t n = db_step(st) == DB_ROW ? db_column_int64(st, 0) : -1;
    db_reset(st);
    return n;
}

int admin_put_role(struct req *r, const struct admin_put_role_request *in,
                   struct admin_put_role_response *out)
{
    const struct role_definition *d = in->body;
    if (scopes_role(in->id)) {
        req_problem(r, 409, "role_is_builtin",
                    "%s is a built-in role and cannot be changed; pick another key.", in->id);
        return 0;
    }
    uint64_t mask = 0;
    for (size_t i = 0; i < d->scopes_count; i++) {
        uint64_t bit = scopes_mask(d->scopes[i]);
        if (!bit)
            verr_add(&r->verr, "/scopes", arena_printf(&r->arena, "%zu", i), "unknown_scope",
                     "%s is not a scope of this API (see x-scopes in /v1/openapi.json)",
                     d->scopes[i]);
        mask |= bit;
    }
    for (size_t i = 0; d->has_approval_limits && i < d->approval_limits_count; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(d->approval_limits[i].currency, d->approval_limits[j].currency) == 0)
                verr_add(&r->verr, "/approval_limits", arena_printf(&r->arena, "%zu", i),
                         "duplicate_currency", "%s already has a limit at index %zu",
                         d->approval_limits[i].currency, j);
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The role definition is not valid.");
        return 0;
    }
    struct role_row *row = arena_alloc(&r->arena, sizeof *row);
    struct role *role = &row->obj;
    int found = resource_load(r, &rows_role, in->id, row);
    if (found < 0)
        return -1;
    if (in->has_if_match && (!found || !req_if_match(in->if_match, role->version))) {
        if (found)
            req_precondition_failed(r, in->if_match, role->version);
        else
            req_problem(r, 412, "precondition_failed",
                        "If-Match %s was sent, but the role %s does not exist yet.",
                        in->if_match, in->id);
        return 0;
    }
    if (!found) {
        int64_t n = custom_role_count(r);
        if (n < 0)
            return -1;
        if (n >= CUSTOM_ROLES_MAX) {
            req_problem(r, 422, "role_limit_reached",
                        "This workspace already has %d roles of its own, the most it may "
                        "have.",
                        CUSTOM_ROLES_MAX);
            return 0;
        }
        resource_new(r, &rows_role, row);
        role->key = in->id;
        role->has_version = true;
    }
    /* The audit record names the scopes before and after: a privilege change. */
    const char *before = "";
    for (size_t i = 0; found && i < role->scopes_count; i++)
        before = arena_printf(&r->arena, "%s%s%s", before, i ? " " : "", role->scopes[i]);
    char scopes[SCOPES_TEXT_MAX];
    scopes_text(mask, scopes, sizeof scopes);
    /* Replaced as a whole; the scopes in catalogue order. */
    role->name = d->name;
    role->description = d->has_description ? d->description : NULL;
    role->has_description = d->has_description;
    split_scopes(r, scopes, role);
    role->approval_limits = d->has_approval_limits ? d->approval_limits : NULL;
    role->approval_limits_count = d->has_approval_limits ? d->approval_limits_count : 0;
    role->has_approval_limits = d->has_approval_limits;
    if (found) {
        int saved = resource_save(r, &rows_role, row);
        if (saved <= 0)
            return saved == 0 ? 0 : -1; /* 0: answered 412, another writer came first */
    } else if (resource_insert(r, &rows_role, row) != 0) {
        return -1;
    }
    if (audit_change(r, found ? "role.updated" : "role.created", "role", in->id, NULL, NULL,
                     found ? arena_printf(&r->arena, "scopes: [%s] -> [%s]%s", before, scopes,
                                          d->has_approval_limits ? "; approval limits set" : "")
                           : arena_printf(&r->arena, "scopes: [%s]%s", scopes,
                                          d->has_approval_limits ? "; approval limits set"
                                                                 : "")) != 0)
        return -1;
    out->status = found ? 200 : 201;
    if (found)
        out->body_200 = role;
    else
        out->body_201 = role;
    /* Role.version is optional (the built-in roles have none), so the dispatcher does not
     * derive the ETag from the body: a custom role sets it. */
    out->etag = req_etag(r, role->version);
    return 0;
}

/* ---- service accounts --------------------------------------------------------------------- */

/* A token's status is not stored: it is revoked once it has a revoked_at. */
static void token_status(struct service_account_token *t)
{
    t->status = t->revoked_at ? SERVICE_ACCOUNT_TOKEN_STATUS_REVOKED
                              : SERVICE_ACCOUNT_TOKEN_STATUS_ACTIVE;
}

/* The workspace's service account: 1 found, 0 answered 404, -1 failure. */
static int load_service_account(struct req *r, const char *id, struct service_account *sa)
{
    struct service_account_row *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load_current(r, &rows_service_account, id, NULL, row);
    if (found == 1)
        *sa = row->obj;
    return found;
}

static int exec_bound(struct db_stmt *st, const char *what)
{
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("service accounts: %s failed: %s", what, storage_errmsg());
        return -1;
    }
    return 0;
}

int admin_list_service_accounts(struct req *r,
                                const struct admin_list_service_accounts_request *in,
                                struct admin_list_service_accounts_response *out)
{
    struct resource_page rp;
    int listed = resource_list(r, &rows_service_account, NULL, 0, in->limit,
                               in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    resource_page_objects(r, &rows_service_account, sizeof(struct service_account), &rp);
    struct service_account_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

/* Only people create service accounts and issue their tokens: a service account acts for the
 * person who minted its token (maker-checker, handlers/payments_makers.c), so a service
 * account that made others would start a chain ending at no person. 1 go on, 0 answered 403. */
static int person_delegates(struct req *r)
{
    if (!token_is_service_subject(r->principal.user_id))
        return 1;
    req_problem(r, 403, "service_account_cannot_delegate",
                "You are service account %s; only a person (a member signed in) creates service "
                "accounts and issues their tokens.",
                r->principal.user_id);
    return 0;
}

int admin_create_service_account(struct req *r,
                                 const struct admin_create_service_account_request *in,
                                 struct admin_create_service_account_response *out)
{
    const struct service_account_create *c = in->body;
    if (!person_delegates(r))
        return 0;
    uint64_t mask = 0;
    int known = admin_role_mask(r->principal.workspace_id, c->role, &mask);
    if (known < 0)
        return -1;
    if (!known) {
        verr_add(&r->verr, "/role", NULL, "unknown_role",
                 "%s is neither a built-in role nor one of this workspace's", c->role);
        req_problem_validation(r, 422, "The service account's role does not exist.");
        return 0;
    }
    struct service_account_row *row = arena_alloc(&r->arena, sizeof *row);
    struct service_account *sa = &row->obj;
    resource_new(r, &rows_service_account, row);
    merge_service_account_create_into_service_account(&r->arena, c, sa);
    sa->status = SERVICE_ACCOUNT_STATUS_ACTIVE;
    row->created_by = r->principal.user_id; /* whose delegation it is (payments_makers.c) */
    if (resource_insert(r, &rows_service_account, row) != 0 ||
        audit_change(r, "service_account.created", "service_account", sa->id, NULL, "active",
                     arena_printf(&r->arena, "role %s", c->role)) != 0)
        return -1;
    out->status = 201;
    out->body_201 = sa;
    out->location = arena_printf(&r->arena, "/v1/admin/service-accounts/%s", sa->id);
    return 0;
}

int admin_get_service_account(struct req *r, const struct admin_get_service_account_request *in,
                              struct admin_get_service_account_response *out)
{
    struct service_account *sa = arena_alloc(&r->arena, sizeof *sa);
    int found = load_service_account(r, in->id, sa);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = sa;
    return 0;
}

/* Disables the active service account id of r's workspace and revokes every token of it, with
 * the audit record (detail). The caller publishes the revocation after the commit. 0 / -1. */
static int disable(struct req *r, const char *id, const char *detail)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "UPDATE service_accounts SET status = 'disabled', version = version + 1, "
        "updated_at = ?1, disabled_at = ?1 WHERE id = ?2 AND workspace_id = ?3");
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, id);
    db_bind_text(st, 3, r->principal.workspace_id);
    if (exec_bound(st, "disable") != 0)
        return -1;
    st = storage_prepare("UPDATE service_account_tokens SET revoked_at = ? "
                         "WHERE service_account_id = ? AND revoked_at IS NULL");
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, id);
    if (exec_bound(st, "revoking its tokens") != 0)
        return -1;
    /* The account id is every one of its tokens' subject: one entry refuses them all. */
    revocation_after_commit(r, id, INT64_MAX);
    return audit_change(r, "service_account.disabled", "service_account", id, "active",
                        "disabled", detail);
}

#define DISABLE_MAX 1000

int admin_disable_service_accounts_of(struct req *r, const char *user_id, const char *detail)
{
    struct db_stmt *st = storage_prepare(
        "SELECT id FROM service_accounts WHERE workspace_id = ? AND created_by = ? AND "
        "status = 'active' ORDER BY id");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, user_id);
    const char **found = arena_alloc(&r->arena, DISABLE_MAX * sizeof *found);
    int n = 0, rc;
    while ((rc = db_step(st)) == DB_ROW && n < DISABLE_MAX)
        found[n++] = db_column_dup(&r->arena, st, 0);
    db_reset(st);
    if (rc != DB_DONE && rc != DB_ROW) {
        log_error("service accounts: listing a creator's failed: %s",
                  storage_errmsg());
        return -1;
    }
    if (rc == DB_ROW) { /* more than DISABLE_MAX: refuse rather than leave some active */
        log_error("service accounts: %s created more than %d", user_id, DISABLE_MAX);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (disable(r, found[i], detail) != 0)
            return -1;
    return n;
}

int admin_disable_service_account(struct req *r,
                                  const struct admin_disable_service_account_request *in,
                                  struct admin_disable_service_account_response *out)
{
    struct service_account *sa = arena_alloc(&r->arena, sizeof *sa);
    int found = load_service_account(r, in->id, sa);
    if (found <= 0)
        return found;
    if (sa->status == SERVICE_ACCOUNT_STATUS_ACTIVE) {
        if (disable(r, sa->id, "every token revoked") != 0 ||
            load_service_account(r, in->id, sa) != 1)
            return -1;
    }
    out->status = 200;
    out->body_200 = sa;
    return 0;
}

int admin_list_service_account_tokens(struct req *r,
                                      const struct admin_list_service_account_tokens_request *in,
                                      struct admin_list_service_account_tokens_response *out)
{
    struct service_account *sa = arena_alloc(&r->arena, sizeof *sa);
    int found = load_service_account(r, in->id, sa);
    if (found <= 0)
        return found;
    struct resource_filter of_account =
        RESOURCE_TEXT("service_account_id", RESOURCE_EQ, sa->id);
    struct resource_page rp;
    int listed = resource_list(r, &rows_service_account_token, &of_account, 1, in->limit,
                               in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    resource_page_objects(r, &rows_service_account_token, sizeof(struct service_account_token),
                          &rp);
    for (size_t i = 0; i < rp.count; i++)
        token_status((struct service_account_token *)rp.items + i);
    struct service_account_token_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

int admin_create_service_account_token(
    struct req *r, const struct admin_create_service_account_token_request *in,
    struct admin_create_service_account_token_response *out)
{
    const struct service_account_token_create *c = in->body;
    if (!person_delegates(r))
        return 0;
    struct service_account *sa = arena_alloc(&r->arena, sizeof *sa);
    int found = load_service_account(r, in->id, sa);
    if (found <= 0)
        return found;
    if (sa->status != SERVICE_ACCOUNT_STATUS_ACTIVE) {
        req_problem(r, 409, "service_account_disabled",
                    "Service account %s is disabled; it gets no new tokens.", sa->id);
        return 0;
    }
    uint64_t allowed = 0, mask = 0;
    if (admin_role_mask(r->principal.workspace_id, sa->role, &allowed) < 0)
        return -1;
    for (size_t i = 0; i < c->scopes_count; i++) {
        uint64_t bit = scopes_mask(c->scopes[i]);
        const char *index = arena_printf(&r->arena, "%zu", i);
        if (!bit)
            verr_add(&r->verr, "/scopes", index, "unknown_scope", "%s is not a scope of this API",
                     c->scopes[i]);
        else if (!(allowed & bit))
            verr_add(&r->verr, "/scopes", index, "scope_not_allowed",
                     "the account's role %s does not grant %s", sa->role, c->scopes[i]);
        mask |= bit;
    }
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The token asks for scopes its account may not have.");
        return 0;
    }
    char scopes[SCOPES_TEXT_MAX];
    scopes_text(mask, scopes, sizeof scopes);
    struct service_account_token_row *row = arena_alloc(&r->arena, sizeof *row);
    resource_new(r, &rows_service_account_token, row);
    struct service_account_token *k = &row->obj;
    k->service_account_id = sa->id;
    k->name = c->has_name ? c->name : NULL;
    k->has_name = c->has_name;
    k->scope = arena_strdup(&r->arena, scopes);
    k->status = SERVICE_ACCOUNT_TOKEN_STATUS_ACTIVE;
    row->created_by = r->principal.user_id; /* whose delegation it is (payments_makers.c) */
    if (resource_insert(r, &rows_service_account_token, row) != 0 ||
        audit_change(r, "service_account_token.issued", "service_account_token", k->id, NULL,
                     "active",
                     arena_printf(&r->arena, "for %s; scopes: [%s]", sa->id, k->scope)) != 0)
        return -1;
    /* The answer is the token as stored and, this once, its text. */
    struct service_account_token_issued *t = arena_alloc(&r->arena, sizeof *t);
    t->id = k->id;
    t->object = k->object;
    t->service_account_id = k->service_account_id;
    t->name = k->name;
    t->has_name = k->has_name;
    t->scope = k->scope;
    t->status = k->status;
    t->created_at = k->created_at;
    t->token_type = "Bearer";

    struct token_claims claims;
    memset(&claims, 0, sizeof claims);
    snprintf(claims.sub, sizeof claims.sub, "%s", sa->id);
    snprintf(claims.wid, sizeof claims.wid, "%s", r->principal.workspace_id);
    snprintf(claims.sid, sizeof claims.sid, "%s", t->id); /* a token is its own "session" */
    snprintf(claims.jti, sizeof claims.jti, "%s", t->id);
    snprintf(claims.scope, sizeof claims.scope, "%s", t->scope);
    claims.iat = claims.nbf = clock_now_s();
    claims.exp = 0; /* never expires: revocable instead */
    char *jwt = NULL;
    if (token_issue(auth_key(), &claims, &jwt) != 0)
        return -1;
    t->access_token = arena_strdup(&r->arena, jwt);
    free(jwt);
    out->status = 201;
    out->body_201 = t;
    return 0;
}

int admin_revoke_service_token(struct req *r, const char *workspace_id,
                               const char *service_account_id, const char *token_id)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "UPDATE service_account_tokens SET revoked_at = ? WHERE id = ? AND "
        "service_account_id = ? AND workspace_id = ? AND revoked_at IS NULL");
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, token_id);
    db_bind_text(st, 3, service_account_id);
    db_bind_text(st, 4, workspace_id);
    if (exec_bound(st, "revoking a token") != 0)
        return -1;
    if (storage_changes() == 0)
        return 0;
    if (audit_change(r, "service_account_token.revoked", "service_account_token", token_id,
                     "active", "revoked",
                     arena_printf(&r->arena, "of %s", service_account_id)) != 0)
        return -1;
    revocation_after_commit(r, token_id, INT64_MAX); /* its tokens never expire */
    return 1;
}

int admin_revoke_service_account_token(
    struct req *r, const struct admin_revoke_service_account_token_request *in,
    struct admin_revoke_service_account_token_response *out)
{
    struct service_account_token_row *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load(r, &rows_service_account_token, in->token_id, row);
    if (found < 0)
        return -1;
    if (!found || strcmp(row->obj.service_account_id, in->id) != 0) {
        req_problem(r, 404, "not_found", "Service account %s has no token %s.", in->id,
                    in->token_id);
        return 0;
    }
    if (admin_revoke_service_token(r, r->principal.workspace_id, in->id, in->token_id) < 0)
        return -1;
    out->status = 204; /* also when it was revoked already */
    return 0;
}

/* ---- users and invitations ---------------------------------------------------------------- */

static int user_row(struct req *r, struct db_stmt *st, void *item)
{
    struct user *u = item;
    u->id = db_column_dup(&r->arena, st, 0);
    u->object = "user";
    u->email = db_column_dup(&r->arena, st, 1);
    u->name = db_column_dup(&r->arena, st, 2);
    u->has_name = u->name != NULL;
    u->status = user_status_parse(db_column_dup(&r->arena, st, 3));
    u->role = db_column_dup(&r->arena, st, 4);
    u->joined_at = db_column_dup(&r->arena, st, 5);
    u->last_login_at = db_column_dup(&r->arena, st, 6);
    u->has_last_login_at = u->last_login_at != NULL;
    return u->status ? 0 : -1;
}

int admin_list_users(struct req *r, const struct admin_list_users_request *in,
                     struct admin_list_users_response *out)
{
    const char *args[] = {r->principal.workspace_id};
    const struct resource_sql_list users = {
        .digest = arena_printf(&r->arena, "users&w=%s", r->principal.workspace_id),
        .sql = "SELECT u.id, u.email, u.name, u.status, m.role, m.created_at, l.last_login_at "
               "FROM members m JOIN users u ON u.id = m.user_id LEFT JOIN member_logins l "
               "ON l.workspace_id = m.workspace_id AND l.user_id = m.user_id "
               "WHERE m.workspace_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR m.created_at < ?2 "
               "OR (m.created_at = ?2 AND u.id < ?3)) ORDER BY m.created_at DESC, u.id DESC "
               "LIMIT ?4",
        .args = args,
        .n_args = 1,
        .item_size = sizeof(struct user),
        .row = user_row,
        .key_offset = offsetof(struct user, joined_at),
        .id_offset = offsetof(struct user, id),
    };
    struct resource_page rp;
    int listed = resource_list_sql(r, &users, in->limit, in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    struct user_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

static void lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

int admin_invite_user(struct req *r, const struct admin_invite_user_request *in,
                      struct admin_invite_user_response *out)
{
    const struct invitation_create *c = in->body;
    const char *wid = r->principal.workspace_id;
    char *email_norm = arena_strdup(&r->arena, c->email);
    lower(email_norm);
    uint64_t mask = 0;
    int known = admin_role_mask(wid, c->role, &mask);
    if (known < 0)
        return -1;
    if (!known) {
        verr_add(&r->verr, "/role", NULL, "unknown_role",
                 "%s is neither a built-in role nor one of this workspace's", c->role);
        req_problem_validation(r, 422, "The invitation's role does not exist.");
        return 0;
    }
    struct db_stmt *st = storage_prepare(
        "SELECT 1 FROM members m JOIN users u ON u.id = m.user_id "
        "WHERE m.workspace_id = ? AND u.email_norm = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, wid);
    db_bind_text(st, 2, email_norm);
    int rc = db_step(st);
    db_reset(st);
    if (rc == DB_ROW) {
        req_problem(r, 409, "already_member", "%s is already a member of this workspace.",
                    c->email);
        return 0;
    }
    if (rc != DB_DONE)
        return -1;

    struct invitation_issued *inv = arena_alloc(&r->arena, sizeof *inv);
    if (invitations_issue(r, wid, c->email, c->role, auth_key()->issuer, inv) != 0)
        return -1;
    out->status = 201;
    out->body_201 = inv;
    return 0;
}

int admin_revoke_tokens_created_by(struct req *r, const char *user_id, const char *now)
{
    struct db_stmt *st = storage_prepare(
        "SELECT id FROM service_account_tokens WHERE created_by = ? AND workspace_id = ? AND "
        "revoked_at IS NULL");
    if (!st)
        return -1;
    db_bind_text(st, 1, user_id);
    db_bind_text(st, 2, r->principal.workspace_id);
    int rc, n = 0;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *id = db_column_text(st, 0);
        revocation_after_commit(r, arena_strdup(&r->arena, id), INT64_MAX); /* never expire */
        n++;
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("service accounts: listing the tokens of %s failed: %s", user_id,
                  storage_errmsg());
        return -1;
    }
    const char *v[] = {now, user_id, r->principal.workspace_id};
    return storage_exec_texts("UPDATE service_account_tokens SET revoked_at = ?1 WHERE "
                              "created_by = ?2 AND workspace_id = ?3 AND revoked_at IS NULL",
                              v, 3) == 0
               ? n
               : -1;
}
