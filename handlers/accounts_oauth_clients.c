/* OAuth 2.0: the clients a workspace registers (/v1/accounts/oauth/clients: registration,
 * get/update/list), the checks of their redirect URIs and web origins, the redirect URI
 * matching the authorization endpoint uses and the CORS origin lookup. Disabling a client ends
 * its sessions and grants. What the OAuth files share: accounts_oauth.h.
 *
 * Client secrets are stored as SHA-256 digests of 256-bit random values only. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/rows_accounts.h"
#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "handlers/accounts_oauth.h"
#include "runtime/audit.h"
#include "runtime/id.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

static char *join_scopes(struct req *r, const char *const *v, size_t n)
{
    char *out = "";
    for (size_t i = 0; i < n; i++)
        out = arena_printf(&r->arena, "%s%s%s", out, i ? " " : "", v[i]);
    return out;
}


/* ==== clients ============================================================================= */

/* The web origins client c registered, in their order (oauth_client_origins), into its
 * allowed_origins (computed in the x-table mapping: a table of their own, which the CORS
 * check looks up by origin). 0 / -1. */
static int client_origins(struct req *r, struct oauth_client *c)
{
    struct db_stmt *st = storage_prepare(
        "SELECT origin FROM oauth_client_origins WHERE client_id = ? ORDER BY position");
    if (!st)
        return -1;
    db_bind_text(st, 1, c->id);
    size_t n = 0, cap = 4;
    const char **v = arena_alloc(&r->arena, cap * sizeof *v);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if (n == cap) {
            const char **grown = arena_alloc(&r->arena, 2 * cap * sizeof *grown);
            memcpy(grown, v, n * sizeof *v);
            v = grown;
            cap *= 2;
        }
        v[n++] = db_column_dup(&r->arena, st, 0);
    }
    db_reset(st);
    if (rc != DB_DONE)
        return oauth_db_failed("client origins");
    c->allowed_origins = v;
    c->allowed_origins_count = n;
    return 0;
}

/* Replaces the origins of client id with v[0..n). 0 / -1. */
static int client_origins_save(const char *id, const char *const *v, size_t n)
{
    const char *del[] = {id};
    if (storage_exec_texts("DELETE FROM oauth_client_origins WHERE client_id = ?", del, 1) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        struct db_stmt *st = storage_prepare(
            "INSERT INTO oauth_client_origins (client_id, origin, position) VALUES (?, ?, ?)");
        if (!st)
            return -1;
        db_bind_text(st, 1, id);
        db_bind_text(st, 2, v[i]);
        db_bind_int64(st, 3, (int64_t)i);
        int rc = db_step(st);
        db_reset(st);
        if (rc != DB_DONE)
            return oauth_db_failed("client origin save");
    }
    return 0;
}

/* Client id, of workspace wid (NULL: any workspace: the authorization and token endpoints
 * know a client by its id alone), with its secret's digest. 1 found, 0 not, -1 failure. */
int oauth_client_load(struct req *r, const char *id, const char *wid, struct oauth_stored_client *x)
{
    if (!id || !id_valid(id, "cli"))
        return 0;
    struct db_stmt *st = storage_prepare(
        "SELECT " ROWS_OAUTH_CLIENT_COLUMNS ", secret_hash FROM oauth_clients WHERE id = ?1 "
        "AND (CAST(?2 AS TEXT) IS NULL OR workspace_id = ?2)");
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, wid);
    memset(x, 0, sizeof *x);
    int rc = db_step(st), ret = 0;
    if (rc == DB_ROW && row_read_oauth_client(&r->arena, st, 0, &x->c) == 0) {
        x->secret_hash = db_column_dup(&r->arena, st, ROWS_OAUTH_CLIENT_COLUMN_COUNT);
        x->scopes_text = join_scopes(r, x->c.scopes, x->c.scopes_count);
        ret = 1;
    } else if (rc != DB_DONE) {
        ret = oauth_db_failed("client load");
    }
    db_reset(st);
    if (ret == 1 && client_origins(r, &x->c) != 0)
        return -1;
    return ret;
}

/* A loopback redirect URI (RFC 8252 §7.3): http on an IP literal of the loopback interface. */
static bool loopback(const char *uri)
{
    return strncmp(uri, "http://127.0.0.1", 16) == 0 || strncmp(uri, "http://[::1]", 12) == 0;
}

/* uri without the port of a loopback host (native apps pick a free port at run time). */
static void without_loopback_port(const char *uri, char *out, size_t n)
{
    size_t host = strncmp(uri, "http://127.0.0.1", 16) == 0 ? 16 : 12;
    const char *p = uri + host;
    if (*p == ':') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    snprintf(out, n, "%.*s%s", (int)host, uri, p);
}

/* Whether uri is acceptable as a registered redirect URI; the reason into why. */
static bool redirect_uri_ok(const char *uri, const char **why)
{
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++) {
        if (*p <= ' ' || *p == 0x7f || *p == '"' || *p == '<' || *p == '>' || *p == '\\') {
            *why = "must not contain spaces, quotes, angle brackets or control characters";
            return false;
        }
    }
    if (strchr(uri, '#')) {
        *why = "must not have a fragment";
        return false;
    }
    if (loopback(uri)) {
        const char *rest = uri + (strncmp(uri, "http://127.0.0.1", 16) == 0 ? 16 : 12);
        if (*rest == ':') {
            rest++;
            if (!(*rest >= '0' && *rest <= '9')) {
                *why = "has an empty port";
                return false;
            }
            while (*rest >= '0' && *rest <= '9')
                rest++;
        }
        if (*rest && *rest != '/' && *rest != '?') {
            *why = "is not a loopback URI";
            return false;
        }
        return true;
    }
    if (strncmp(uri, "https://", 8) != 0 || !uri[8] || uri[8] == '/' || uri[8] == ':' ||
        uri[8] == '?') {
        *why = "must be an https URI with a host, or an http loopback URI (127.0.0.1, [::1])";
        return false;
    }
    const char *at = strchr(uri + 8, '@'), *slash = strchr(uri + 8, '/');
    if (at && (!slash || at < slash)) {
        *why = "must not carry user information";
        return false;
    }
    return true;
}

/* The registered URI that uri matches: exactly, or a loopback URI differing only in its
 * port (RFC 9700 §2.1, RFC 8252 §7.3). NULL when none. */
const char *oauth_registered_redirect(const struct oauth_client *c, const char *uri)
{
    for (size_t i = 0; i < c->redirect_uris_count; i++) {
        const char *reg = c->redirect_uris[i];
        if (strcmp(reg, uri) == 0)
            return reg;
        if (loopback(reg) && loopback(uri)) {
            char a[OAUTH_URI_MAX + 8], b[OAUTH_URI_MAX + 8];
            without_loopback_port(reg, a, sizeof a);
            without_loopback_port(uri, b, sizeof b);
            if (strcmp(a, b) == 0)
                return reg;
        }
    }
    return NULL;
}

/* Whether o is a web origin as a browser sends it in Origin (RFC 6454 §6.2): https, a lower
 * case host and a port other than the default; http for the loopback hosts developers run
 * their apps on. The reason into why. */
static bool origin_ok(const char *o, const char **why)
{
    bool http = strncmp(o, "http://", 7) == 0;
    if (!http && strncmp(o, "https://", 8) != 0) {
        *why = "must start with https:// (or http:// for localhost, 127.0.0.1 or [::1])";
        return false;
    }
    const char *host = o + (http ? 7 : 8), *p = host;
    if (*p == '[') {
        while (*p && *p != ']' && strchr("0123456789abcdef:.[", *p))
            p++;
        if (*p++ != ']') {
            *why = "has a malformed IPv6 address";
            return false;
        }
    } else {
        while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.')
            p++;
    }
    size_t host_len = (size_t)(p - host);
    if (host_len == 0 || (host[0] != '[' && strchr("-.", host[0]))) {
        *why = *p >= 'A' && *p <= 'Z' ? "must be lower case, as browsers send it"
                                      : "has no host";
        return false;
    }
    if (*p == ':') {
        const char *port = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        long v = p - port >= 1 && p - port <= 5 && *port != '0' ? strtol(port, NULL, 10) : 0;
        if (v < 1 || v > 65535) {
            *why = "has an invalid port";
            return false;
        }
        if ((http && v == 80) || (!http && v == 443)) {
            *why = "must leave out the default port, as browsers do";
            return false;
        }
    }
    if (*p) {
        *why = *p >= 'A' && *p <= 'Z' ? "must be lower case, as browsers send it"
                                      : "must be an origin only (scheme, host, port): no path, "
                                        "query or user information";
        return false;
    }
    if (http && !(host_len == 9 && strncmp(host, "localhost", 9) == 0) &&
        !(host_len == 9 && strncmp(host, "127.0.0.1", 9) == 0) &&
        !(host_len == 5 && strncmp(host, "[::1]", 5) == 0)) {
        *why = "may use http only for localhost, 127.0.0.1 or [::1]";
        return false;
    }
    return true;
}

bool accounts_cors_origin_allowed(const char *origin, const char *client_id)
{
    struct db_stmt *st = storage_prepare(
        "SELECT 1 FROM oauth_client_origins o JOIN oauth_clients c ON c.id = o.client_id "
        "WHERE o.origin = ?1 AND (CAST(?2 AS TEXT) IS NULL OR o.client_id = ?2) "
        "AND c.status = 'active' LIMIT 1");
    if (!st)
        return false;
    db_bind_text(st, 1, origin);
    db_bind_text(st, 2, client_id);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        oauth_db_failed("origin check");
    return rc == DB_ROW;
}

/* The checks creating and changing share: redirect URIs, origins and scopes. */
static void check_client_fields(struct req *r, const char *const *uris, size_t nuris,
                                const char *const *origins, size_t norigins,
                                const char *const *scopes, size_t nscopes)
{
    for (size_t i = 0; i < norigins; i++) {
        const char *why = NULL;
        if (!origin_ok(origins[i], &why))
            verr_add(&r->verr, "/allowed_origins", arena_printf(&r->arena, "%zu", i),
                     "invalid_origin", "%s", why);
    }
    for (size_t i = 0; i < nuris; i++) {
        const char *why = NULL;
        if (!redirect_uri_ok(uris[i], &why))
            verr_add(&r->verr, "/redirect_uris", arena_printf(&r->arena, "%zu", i),
                     "invalid_redirect_uri", "%s", why);
    }
    for (size_t i = 0; i < nscopes; i++) {
        uint64_t bit = scopes_mask(scopes[i]);
        const char *at = arena_printf(&r->arena, "%zu", i);
        if (!bit)
            verr_add(&r->verr, "/scopes", at, "unknown_scope",
                     "%s is not a scope of this API (see x-scopes in /v1/openapi.json)",
                     scopes[i]);
        else if (bit & SCOPES_WITHHELD)
            verr_add(&r->verr, "/scopes", at, "scope_not_allowed",
                     "%s cannot be delegated to an application", scopes[i]);
    }
}

int accounts_create_oauth_client(struct req *r,
                                 const struct accounts_create_oauth_client_request *in,
                                 struct accounts_create_oauth_client_response *out)
{
    const struct oauth_client_create *b = in->body;
    check_client_fields(r, b->redirect_uris, b->redirect_uris_count,
                        b->has_allowed_origins ? b->allowed_origins : NULL,
                        b->has_allowed_origins ? b->allowed_origins_count : 0, b->scopes,
                        b->scopes_count);
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The client registration is not valid.");
        return 0;
    }
    struct oauth_client_created *created = arena_alloc(&r->arena, sizeof *created);
    struct oauth_client *c = arena_alloc(&r->arena, sizeof *c);
    resource_new(r, &rows_oauth_client, c);
    c->name = b->name;
    c->type = b->type == OAUTH_CLIENT_CREATE_TYPE_CONFIDENTIAL ? OAUTH_CLIENT_TYPE_CONFIDENTIAL
                                                                : OAUTH_CLIENT_TYPE_PUBLIC;
    c->redirect_uris = b->redirect_uris;
    c->redirect_uris_count = b->redirect_uris_count;
    c->allowed_origins = b->has_allowed_origins ? b->allowed_origins : NULL;
    c->allowed_origins_count = b->has_allowed_origins ? b->allowed_origins_count : 0;
    c->scopes = b->scopes;
    c->scopes_count = b->scopes_count;
    c->status = OAUTH_CLIENT_STATUS_ACTIVE;
    c->created_by = r->principal.user_id;
    if (resource_insert(r, &rows_oauth_client, c) != 0 ||
        client_origins_save(c->id, c->allowed_origins, c->allowed_origins_count) != 0)
        return -1;
    if (c->type == OAUTH_CLIENT_TYPE_CONFIDENTIAL) {
        /* Only the secret's digest is stored (x-table internal: the API never shows it). */
        char hash[DIGEST_HEX_LEN + 1];
        created->client_secret = arena_printf(&r->arena, "cs_%s",
                                              id_secret(&r->arena, OAUTH_SECRET_BYTES));
        created->has_client_secret = true;
        const char *v[] = {hash, c->id};
        if (oauth_sha256_hex(created->client_secret, hash) != 0 ||
            storage_exec_texts("UPDATE oauth_clients SET secret_hash = ? WHERE id = ?", v, 2) != 0)
            return -1;
    }
    if (audit_change(r, "oauth_client.created", "oauth_client", c->id, NULL, "active",
                     arena_printf(&r->arena, "%s; scopes: [%s]", oauth_client_type_str(c->type),
                                  join_scopes(r, c->scopes, c->scopes_count))) != 0)
        return -1;
    created->id = c->id;
    created->object = c->object;
    created->workspace_id = c->workspace_id;
    created->name = c->name;
    created->type = c->type;
    created->redirect_uris = c->redirect_uris;
    created->redirect_uris_count = c->redirect_uris_count;
    created->allowed_origins = c->allowed_origins;
    created->allowed_origins_count = c->allowed_origins_count;
    created->scopes = c->scopes;
    created->scopes_count = c->scopes_count;
    created->status = c->status;
    created->created_by = c->created_by;
    created->version = c->version;
    created->created_at = c->created_at;
    created->updated_at = c->updated_at;
    out->status = 201;
    out->body_201 = created;
    out->location = arena_printf(&r->arena, "/v1/accounts/oauth/clients/%s", c->id);
    return 0;
}

int accounts_get_oauth_client(struct req *r, const struct accounts_get_oauth_client_request *in,
                              struct accounts_get_oauth_client_response *out)
{
    struct oauth_client *c = arena_alloc(&r->arena, sizeof *c);
    int found = resource_load_current(r, &rows_oauth_client, in->id, NULL, c); /* 404 */
    if (found <= 0)
        return found;
    if (client_origins(r, c) != 0)
        return -1;
    out->status = 200;
    out->body_200 = c;
    return 0;
}

int accounts_update_oauth_client(struct req *r,
                                 const struct accounts_update_oauth_client_request *in,
                                 struct accounts_update_oauth_client_response *out)
{
    const struct oauth_client_update *u = in->body;
    struct oauth_client *c = arena_alloc(&r->arena, sizeof *c);
    int found = resource_load_current(r, &rows_oauth_client, in->id,
                                      in->has_if_match ? in->if_match : NULL, c); /* 404, 412 */
    if (found <= 0)
        return found;
    check_client_fields(r, u->has_redirect_uris ? u->redirect_uris : NULL,
                        u->has_redirect_uris ? u->redirect_uris_count : 0,
                        u->has_allowed_origins ? u->allowed_origins : NULL,
                        u->has_allowed_origins ? u->allowed_origins_count : 0,
                        u->has_scopes ? u->scopes : NULL, u->has_scopes ? u->scopes_count : 0);
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The change is not valid.");
        return 0;
    }
    bool disabling = u->has_status && u->status == OAUTH_CLIENT_UPDATE_STATUS_DISABLED &&
                     c->status == OAUTH_CLIENT_STATUS_ACTIVE;
    const char *status_before = oauth_client_status_str(c->status);
    const char *scopes_before = join_scopes(r, c->scopes, c->scopes_count);
    /* Not x-merge-into: the update's status is an enum of its own (no `type` either). */
    if (u->has_name)
        c->name = u->name;
    if (u->has_redirect_uris) {
        c->redirect_uris = u->redirect_uris;
        c->redirect_uris_count = u->redirect_uris_count;
    }
    if (u->has_scopes) {
        c->scopes = u->scopes;
        c->scopes_count = u->scopes_count;
    }
    if (u->has_status)
        c->status = u->status == OAUTH_CLIENT_UPDATE_STATUS_DISABLED ? OAUTH_CLIENT_STATUS_DISABLED
                                                                     : OAUTH_CLIENT_STATUS_ACTIVE;
    int saved = resource_save(r, &rows_oauth_client, c); /* version + 1, 412 */
    if (saved <= 0)
        return saved;
    if (u->has_allowed_origins) {
        c->allowed_origins = u->allowed_origins;
        c->allowed_origins_count = u->allowed_origins_count;
        if (client_origins_save(c->id, c->allowed_origins, c->allowed_origins_count) != 0)
            return -1;
    } else if (client_origins(r, c) != 0) {
        return -1;
    }
    if (audit_change(r, "oauth_client.updated", "oauth_client", c->id, status_before,
                     oauth_client_status_str(c->status),
                     arena_printf(&r->arena, "scopes: [%s] -> [%s]%s%s%s", scopes_before,
                                  join_scopes(r, c->scopes, c->scopes_count),
                                  u->has_name ? "; name" : "",
                                  u->has_redirect_uris ? "; redirect_uris" : "",
                                  u->has_allowed_origins ? "; allowed_origins" : "")) != 0)
        return -1;
    if (disabling) {
        if (acc_revoke_sessions_of(r, "client_id", c->id, "client_disabled") != 0 ||
            oauth_grants_revoke_of_client(c->id, c->updated_at) != 0)
            return -1;
    }
    out->status = 200;
    out->body_200 = c;
    return 0;
}

int accounts_list_oauth_clients(struct req *r,
                                const struct accounts_list_oauth_clients_request *in,
                                struct accounts_list_oauth_clients_response *out)
{
    struct resource_page rp;
    int listed = resource_list(r, &rows_oauth_client, NULL, 0, in->limit,
                               in->has_cursor ? in->cursor : NULL, &rp); /* 400 bad cursor */
    if (listed <= 0)
        return listed;
    struct oauth_client *c = rp.items;
    for (size_t i = 0; i < rp.count; i++)
        if (client_origins(r, &c[i]) != 0)
            return -1;
    struct oauth_client_page *p = arena_alloc(&r->arena, sizeof *p);
    RESOURCE_PAGE_SET(p, rp);
    out->status = 200;
    out->body_200 = p;
    return 0;
}
