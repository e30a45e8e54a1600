/* The admin control API: roles. Built-in roles come from the spec (x-roles, generated into
 * generated/scopes.c) and cannot change; a workspace adds its own with PUT /admin/roles/{key},
 * stored with their scopes in catalogue order. */
#include "generated/admin_api.h"

#include "handlers/admin.h"

#include <stdio.h>
#include <string.h>

#include "generated/scopes.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/storage.h"

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
    sqlite3_stmt *st =
        storage_prepare("SELECT scopes FROM roles WHERE workspace_id = ? AND key = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, workspace_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, role, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), found = rc == SQLITE_ROW;
    if (found)
        *mask = expand(mask_of_text((const char *)sqlite3_column_text(st, 0)));
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        log_error("roles: lookup failed: %s", sqlite3_errmsg(storage_db()));
        return -1;
    }
    return found;
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

static const char *text(struct req *r, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? arena_strdup(&r->arena, (const char *)t) : NULL;
}

#define ROLE_COLUMNS "key, name, description, scopes, version, created_at, updated_at"

static void row_to_role(struct req *r, sqlite3_stmt *st, struct role *role)
{
    memset(role, 0, sizeof *role);
    role->key = text(r, st, 0);
    role->object = "role";
    role->name = text(r, st, 1);
    role->description = text(r, st, 2);
    role->has_description = role->description != NULL;
    split_scopes(r, text(r, st, 3), role);
    role->system = false;
    role->version = sqlite3_column_int64(st, 4);
    role->has_version = true;
    role->created_at = text(r, st, 5);
    role->has_created_at = true;
    role->updated_at = text(r, st, 6);
    role->has_updated_at = true;
}

int admin_list_roles(struct req *r, const struct admin_list_roles_request *in,
                     struct admin_list_roles_response *out)
{
    (void)in;
    struct role_list *list = arena_alloc(&r->arena, sizeof *list);
    list->data = arena_alloc(&r->arena, (size_t)(scopes_roles_count + CUSTOM_ROLES_MAX) *
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
    sqlite3_stmt *st = storage_prepare("SELECT " ROLE_COLUMNS
                                       " FROM roles WHERE workspace_id = ? ORDER BY key");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.workspace_id, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW &&
           list->data_count < (size_t)(scopes_roles_count + CUSTOM_ROLES_MAX))
        row_to_role(r, st, &list->data[list->data_count++]);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        log_error("roles: listing failed: %s", sqlite3_errmsg(storage_db()));
        return -1;
    }
    out->status = 200;
    out->body_200 = list;
    return 0;
}

/* The workspace's own role with this key: 1 found (into *role), 0 none, -1 failure. */
static int load_custom(struct req *r, const char *key, struct role *role)
{
    sqlite3_stmt *st = storage_prepare("SELECT " ROLE_COLUMNS
                                       " FROM roles WHERE workspace_id = ? AND key = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.workspace_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        row_to_role(r, st, role);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        log_error("roles: load failed: %s", sqlite3_errmsg(storage_db()));
        return -1;
    }
    return rc == SQLITE_ROW;
}

static int64_t custom_role_count(struct req *r)
{
    sqlite3_stmt *st = storage_prepare("SELECT count(*) FROM roles WHERE workspace_id = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.workspace_id, -1, SQLITE_STATIC);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_reset(st);
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
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The role names scopes that do not exist.");
        return 0;
    }
    struct role *role = arena_alloc(&r->arena, sizeof *role);
    int found = load_custom(r, in->id, role);
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
    }
    char scopes[SCOPES_TEXT_MAX], now[40];
    scopes_text(mask, scopes, sizeof scopes);
    format_now_rfc3339(now, sizeof now);
    int64_t version = found ? role->version + 1 : 1;
    sqlite3_stmt *st = storage_prepare(
        found ? "UPDATE roles SET name = ?3, description = ?4, scopes = ?5, version = ?6, "
                "updated_at = ?7 WHERE workspace_id = ?1 AND key = ?2"
              : "INSERT INTO roles (workspace_id, key, name, description, scopes, version, "
                "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.workspace_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, in->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, d->name, -1, SQLITE_STATIC);
    if (d->has_description)
        sqlite3_bind_text(st, 4, d->description, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 4);
    sqlite3_bind_text(st, 5, scopes, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, version);
    sqlite3_bind_text(st, 7, now, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        log_error("roles: write failed: %s", sqlite3_errmsg(storage_db()));
        return -1;
    }
    if (load_custom(r, in->id, role) != 1)
        return -1;
    out->status = found ? 200 : 201;
    if (found)
        out->body_200 = role;
    else
        out->body_201 = role;
    out->etag = req_etag(r, role->version);
    return 0;
}
