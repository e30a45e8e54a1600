/* OAuth 2.0, authorization code with PKCE (RFC 6749, 7636, 8414, 9207, 9700): the clients a
 * workspace registers, the authorization pages (sign-in, one-time code, consent), the token
 * endpoint, token revocation (RFC 7009), the users' grants and the server metadata.
 *
 * The pages keep their state server-side: a browser session (the __Host- cookie holds a random
 * token, stored as its SHA-256 with a CSRF token and, once signed in, the user) and pending
 * authorization requests bound to it. Codes, client secrets and cookies are stored as SHA-256
 * digests of 256-bit random values only. A code is single use and lives 60 s; using it twice
 * revokes the session issued from it. Tokens are the login's: a session (refresh-token family)
 * bound to the client and the grant, so revoking either ends them at once. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "runtime/audit.h"
#include "runtime/auth.h"
#include "runtime/clock.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/html.h"
#include "runtime/id.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/page.h"
#include "runtime/pkce.h"
#include "runtime/ratelimit.h"
#include "runtime/revocation.h"
#include "runtime/seal.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define AUTHORIZE_PATH "/v1/accounts/auth/oauth/authorize"
#define COOKIE_NAME "__Host-oauth_session"
#define DEVICE_COOKIE "__Host-device"
#define SECRET_BYTES 32
#define CODE_TTL_MS INT64_C(60000)
#define REQUEST_TTL_MS INT64_C(600000)
#define BROWSER_TTL_MS INT64_C(43200000)
#define PENDING_MFA_MS INT64_C(300000)
#define URI_MAX 600
#define AUTHZ_ID_MAX 4096 /* an "oar_" id, or a sealed anonymous request (about 3 KB at most) */

#define CLIENT_COLUMNS                                                                        \
    "id, workspace_id, name, type, redirect_uris, scopes, secret_hash, status, created_by, "  \
    "version, created_at, updated_at"

/* ==== small helpers ======================================================================= */

static int db_failed(const char *what)
{
    log_error("oauth: %s failed: %s", what, sqlite3_errmsg(storage_db()));
    return -1;
}

static const char *column(struct req *r, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? arena_strdup(&r->arena, (const char *)t) : NULL;
}

static int sha256_hex(const char *s, char out[DIGEST_HEX_LEN + 1])
{
    return digest_sha256_hex(s, strlen(s), out);
}

/* Constant-time equality of two NUL-terminated strings of public length. */
static bool secure_equal(const char *a, const char *b)
{
    size_t n = strlen(a);
    return n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

/* "a b c" -> {"a","b","c"} in r->arena. */
static const char **split_scopes(struct req *r, const char *text, size_t *count)
{
    size_t n = 0, cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ' ';
    const char **out = arena_alloc(&r->arena, cap * sizeof *out);
    for (const char *p = text; *p;) {
        size_t k = strcspn(p, " ");
        if (k > 0)
            out[n++] = arena_strndup(&r->arena, p, k);
        p += k;
        while (*p == ' ')
            p++;
    }
    *count = n;
    return out;
}

static char *join_scopes(struct req *r, const char *const *v, size_t n)
{
    char *out = "";
    for (size_t i = 0; i < n; i++)
        out = arena_printf(&r->arena, "%s%s%s", out, i ? " " : "", v[i]);
    return out;
}

static const char *issuer(void)
{
    return auth_key()->issuer;
}

/* The text of a scope for people (x-scopes), or the name itself. */
static const char *scope_words(const char *name)
{
    for (int i = 0; i < scopes_count; i++)
        if (strcmp(scopes_names[i], name) == 0)
            return scopes_descriptions[i];
    return name;
}

/* ==== clients ============================================================================= */

struct client {
    struct oauth_client c;
    const char *secret_hash; /* NULL for public clients */
    const char *scopes_text; /* space-separated */
};

/* The web origins client id registered, in their order (oauth_client_origins). 0 / -1. */
static int client_origins(struct req *r, const char *id, const char ***out, size_t *count)
{
    sqlite3_stmt *st = storage_prepare(
        "SELECT origin FROM oauth_client_origins WHERE client_id = ? ORDER BY position");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    size_t n = 0, cap = 4;
    const char **v = arena_alloc(&r->arena, cap * sizeof *v);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            const char **grown = arena_alloc(&r->arena, 2 * cap * sizeof *grown);
            memcpy(grown, v, n * sizeof *v);
            v = grown;
            cap *= 2;
        }
        v[n++] = column(r, st, 0);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_failed("client origins");
    *out = v;
    *count = n;
    return 0;
}

/* Replaces the origins of client id with v[0..n). 0 / -1. */
static int client_origins_save(const char *id, const char *const *v, size_t n)
{
    const char *del[] = {id};
    if (acc_exec_texts("DELETE FROM oauth_client_origins WHERE client_id = ?", del, 1) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = storage_prepare(
            "INSERT INTO oauth_client_origins (client_id, origin, position) VALUES (?, ?, ?)");
        if (!st)
            return -1;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, v[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t)i);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return db_failed("client origin save");
    }
    return 0;
}

static int client_row(struct req *r, sqlite3_stmt *st, void *item)
{
    struct client *x = item;
    struct oauth_client *c = &x->c;
    memset(x, 0, sizeof *x);
    c->id = column(r, st, 0);
    c->object = "oauth_client";
    c->workspace_id = column(r, st, 1);
    c->name = column(r, st, 2);
    c->type = oauth_client_type_parse(column(r, st, 3));
    const char *uris = column(r, st, 4);
    struct json_value *v = NULL;
    struct json_error err;
    if (!uris || json_parse(&r->arena, uris, strlen(uris), &v, &err) != 0 ||
        v->type != JSON_ARRAY)
        return -1;
    c->redirect_uris = arena_alloc(&r->arena, (v->count ? v->count : 1) * sizeof *c->redirect_uris);
    for (size_t i = 0; i < v->count; i++) {
        if (v->items[i]->type != JSON_STRING)
            return -1;
        c->redirect_uris[c->redirect_uris_count++] = v->items[i]->s;
    }
    x->scopes_text = column(r, st, 5);
    c->scopes = split_scopes(r, x->scopes_text ? x->scopes_text : "", &c->scopes_count);
    x->secret_hash = column(r, st, 6);
    c->status = oauth_client_status_parse(column(r, st, 7));
    c->created_by = column(r, st, 8);
    c->version = sqlite3_column_int64(st, 9);
    c->created_at = column(r, st, 10);
    c->updated_at = column(r, st, 11);
    if (!c->type || !c->status)
        return -1;
    return client_origins(r, c->id, &c->allowed_origins, &c->allowed_origins_count);
}

/* Client id, of workspace wid (NULL: any workspace). 1 found, 0 not, -1 failure. */
static int client_load(struct req *r, const char *id, const char *wid, struct client *x)
{
    if (!id || !id_valid(id, "cli"))
        return 0;
    sqlite3_stmt *st = storage_prepare("SELECT " CLIENT_COLUMNS " FROM oauth_clients WHERE id = ? "
                                       "AND (?2 IS NULL OR workspace_id = ?2)");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, wid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), ret;
    if (rc == SQLITE_ROW)
        ret = client_row(r, st, x) == 0 ? 1 : -1;
    else
        ret = rc == SQLITE_DONE ? 0 : db_failed("client load");
    sqlite3_reset(st);
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
static const char *registered_redirect(const struct oauth_client *c, const char *uri)
{
    for (size_t i = 0; i < c->redirect_uris_count; i++) {
        const char *reg = c->redirect_uris[i];
        if (strcmp(reg, uri) == 0)
            return reg;
        if (loopback(reg) && loopback(uri)) {
            char a[URI_MAX + 8], b[URI_MAX + 8];
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
    sqlite3_stmt *st = storage_prepare(
        "SELECT 1 FROM oauth_client_origins o JOIN oauth_clients c ON c.id = o.client_id "
        "WHERE o.origin = ?1 AND (?2 IS NULL OR o.client_id = ?2) AND c.status = 'active' "
        "LIMIT 1");
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, origin, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, client_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        db_failed("origin check");
    return rc == SQLITE_ROW;
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
        else if (bit == SCOPE_WORKSPACE_ADMIN)
            verr_add(&r->verr, "/scopes", at, "scope_not_allowed",
                     "workspace:admin cannot be delegated to an application");
    }
}

static char *uris_json(const char *const *uris, size_t n)
{
    struct jsonw w;
    size_t len = 0;
    jsonw_init(&w);
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++)
        jsonw_string(&w, uris[i]);
    jsonw_array_end(&w);
    char *out = jsonw_take(&w, &len);
    jsonw_release(&w);
    return out;
}

static int client_save(const struct client *x, bool insert, int64_t old_version)
{
    const struct oauth_client *c = &x->c;
    char *uris = uris_json(c->redirect_uris, c->redirect_uris_count);
    sqlite3_stmt *st = storage_prepare(
        insert ? "INSERT INTO oauth_clients (" CLIENT_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                 "?7, ?8, ?9, ?10, ?11, ?12)"
               : "UPDATE oauth_clients SET name = ?3, redirect_uris = ?5, scopes = ?6, "
                 "status = ?8, version = ?10, updated_at = ?12 WHERE id = ?1 AND "
                 "workspace_id = ?2 AND version = ?13");
    int ret = -1;
    if (st && uris) {
        sqlite3_bind_text(st, 1, c->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, c->workspace_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, c->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, oauth_client_type_str(c->type), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, uris, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, x->scopes_text, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, x->secret_hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 8, oauth_client_status_str(c->status), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, c->created_by, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 10, c->version);
        sqlite3_bind_text(st, 11, c->created_at, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 12, c->updated_at, -1, SQLITE_STATIC);
        if (!insert)
            sqlite3_bind_int64(st, 13, old_version);
        ret = sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(storage_db()) == 1
                  ? 0
                  : db_failed("client save");
        sqlite3_reset(st);
    }
    free(uris);
    return ret;
}

/* Revokes the sessions of grant or client (one of them) and publishes them after the commit.
 * 0 / -1. */
static int revoke_sessions_of(struct req *r, const char *column_name, const char *id,
                              const char *reason)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    const char *sql = strcmp(column_name, "grant_id") == 0
                          ? "SELECT id FROM sessions WHERE grant_id = ? AND revoked_at IS NULL"
                          : "SELECT id FROM sessions WHERE client_id = ? AND revoked_at IS NULL";
    sqlite3_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        acc_publish_revocation(r, column(r, st, 0));
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_failed("sessions of");
    const char *upd = strcmp(column_name, "grant_id") == 0
                          ? "UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE "
                            "grant_id = ? AND revoked_at IS NULL"
                          : "UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE "
                            "client_id = ? AND revoked_at IS NULL";
    const char *v[] = {now, reason, id};
    return acc_exec_texts(upd, v, 3);
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
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct client x;
    memset(&x, 0, sizeof x);
    struct oauth_client *c = &x.c;
    c->id = id_new(&r->arena, "cli");
    c->object = "oauth_client";
    c->workspace_id = r->principal.workspace_id;
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
    c->version = 1;
    c->created_at = c->updated_at = arena_strdup(&r->arena, now);
    x.scopes_text = join_scopes(r, b->scopes, b->scopes_count);
    struct oauth_client_created *created = arena_alloc(&r->arena, sizeof *created);
    if (c->type == OAUTH_CLIENT_TYPE_CONFIDENTIAL) {
        char hash[DIGEST_HEX_LEN + 1];
        created->client_secret = arena_printf(&r->arena, "cs_%s",
                                              id_secret(&r->arena, SECRET_BYTES));
        created->has_client_secret = true;
        if (sha256_hex(created->client_secret, hash) != 0)
            return -1;
        x.secret_hash = arena_strdup(&r->arena, hash);
    }
    if (client_save(&x, true, 0) != 0 ||
        client_origins_save(c->id, c->allowed_origins, c->allowed_origins_count) != 0 ||
        audit_record(r, "oauth_client.created", "oauth_client", c->id, NULL, "active",
                     arena_printf(&r->arena, "%s; scopes: [%s]", oauth_client_type_str(c->type),
                                  x.scopes_text)) != 0)
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
    out->etag = req_etag(r, c->version);
    return 0;
}

int accounts_get_oauth_client(struct req *r, const struct accounts_get_oauth_client_request *in,
                              struct accounts_get_oauth_client_response *out)
{
    struct client *x = arena_alloc(&r->arena, sizeof *x);
    int found = client_load(r, in->id, r->principal.workspace_id, x);
    if (found < 0)
        return -1;
    if (!found) {
        req_problem(r, 404, "not_found", "No OAuth client %s in this workspace.", in->id);
        return 0;
    }
    out->status = 200;
    out->body_200 = &x->c;
    out->etag = req_etag(r, x->c.version);
    return 0;
}

int accounts_update_oauth_client(struct req *r,
                                 const struct accounts_update_oauth_client_request *in,
                                 struct accounts_update_oauth_client_response *out)
{
    const struct oauth_client_update *u = in->body;
    struct client *x = arena_alloc(&r->arena, sizeof *x);
    int found = client_load(r, in->id, r->principal.workspace_id, x);
    if (found < 0)
        return -1;
    if (!found) {
        req_problem(r, 404, "not_found", "No OAuth client %s in this workspace.", in->id);
        return 0;
    }
    struct oauth_client *c = &x->c;
    if (in->has_if_match && !req_if_match(in->if_match, c->version)) {
        req_precondition_failed(r, in->if_match, c->version);
        return 0;
    }
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
    const char *scopes_before = x->scopes_text ? x->scopes_text : "";
    if (u->has_name)
        c->name = u->name;
    if (u->has_redirect_uris) {
        c->redirect_uris = u->redirect_uris;
        c->redirect_uris_count = u->redirect_uris_count;
    }
    if (u->has_allowed_origins) {
        c->allowed_origins = u->allowed_origins;
        c->allowed_origins_count = u->allowed_origins_count;
    }
    if (u->has_scopes) {
        c->scopes = u->scopes;
        c->scopes_count = u->scopes_count;
        x->scopes_text = join_scopes(r, u->scopes, u->scopes_count);
    }
    if (u->has_status)
        c->status = u->status == OAUTH_CLIENT_UPDATE_STATUS_DISABLED ? OAUTH_CLIENT_STATUS_DISABLED
                                                                     : OAUTH_CLIENT_STATUS_ACTIVE;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    int64_t old_version = c->version;
    c->version++;
    c->updated_at = arena_strdup(&r->arena, now);
    if (client_save(x, false, old_version) != 0 ||
        (u->has_allowed_origins &&
         client_origins_save(c->id, c->allowed_origins, c->allowed_origins_count) != 0) ||
        audit_record(r, "oauth_client.updated", "oauth_client", c->id, status_before,
                     oauth_client_status_str(c->status),
                     arena_printf(&r->arena, "scopes: [%s] -> [%s]%s%s%s", scopes_before,
                                  x->scopes_text ? x->scopes_text : "",
                                  u->has_name ? "; name" : "",
                                  u->has_redirect_uris ? "; redirect_uris" : "",
                                  u->has_allowed_origins ? "; allowed_origins" : "")) != 0)
        return -1;
    if (disabling) {
        const char *v[] = {now, c->id};
        if (revoke_sessions_of(r, "client_id", c->id, "client_disabled") != 0 ||
            acc_exec_texts("UPDATE oauth_grants SET revoked_at = ? WHERE client_id = ? AND "
                           "revoked_at IS NULL",
                           v, 2) != 0)
            return -1;
    }
    out->status = 200;
    out->body_200 = c;
    out->etag = req_etag(r, c->version);
    return 0;
}

static int client_list_row(struct req *r, sqlite3_stmt *st, void *item)
{
    struct client x;
    if (client_row(r, st, &x) != 0)
        return -1;
    *(struct oauth_client *)item = x.c;
    return 0;
}

int accounts_list_oauth_clients(struct req *r,
                                const struct accounts_list_oauth_clients_request *in,
                                struct accounts_list_oauth_clients_response *out)
{
    struct page pg;
    if (page_begin(r, &pg, arena_printf(&r->arena, "oauth_clients&w=%s", r->principal.workspace_id),
                   in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    sqlite3_stmt *st = storage_prepare(
        "SELECT " CLIENT_COLUMNS " FROM oauth_clients WHERE workspace_id = ?1 AND (?2 IS NULL OR "
        "created_at < ?2 OR (created_at = ?2 AND id < ?3)) ORDER BY created_at DESC, id DESC "
        "LIMIT ?4");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.workspace_id, -1, SQLITE_STATIC);
    page_bind(&pg, st, 2, 3, 4);
    struct oauth_client_page *p = arena_alloc(&r->arena, sizeof *p);
    p->data = arena_alloc(&r->arena, (size_t)in->limit * sizeof *p->data);
    if (page_fill(r, &pg, st, p->data, sizeof *p->data, client_list_row) != 0)
        return -1;
    p->data_count = pg.count;
    p->has_more = pg.has_more;
    const struct oauth_client *last = pg.count ? &p->data[pg.count - 1] : NULL;
    p->next_cursor = last ? page_next(r, &pg, last->created_at, last->id) : NULL;
    p->next_cursor_is_null = !p->next_cursor;
    out->status = 200;
    out->body_200 = p;
    return 0;
}

/* ==== client authentication (token and refresh endpoints) ================================= */

static void invalid_client(struct req *r, bool basic, const char *detail)
{
    req_problem(r, 401, "invalid_client", "%s", detail);
    if (basic)
        req_set_header(r, "WWW-Authenticate", "Basic realm=\"treasury\"");
}

/* Decodes one application/x-www-form-urlencoded component of HTTP Basic (RFC 6749 §2.3.1)
 * in place. false on a bad escape. */
static bool form_decode(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == '+') {
            *o++ = ' ';
        } else if (*p == '%') {
            int hi, lo;
            if (sscanf(p + 1, "%1x%1x", (unsigned *)&hi, (unsigned *)&lo) != 2)
                return false;
            *o++ = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return true;
}

/* HTTP Basic credentials: 1 parsed, 0 no Basic header, -1 malformed. */
static int basic_credentials(struct req *r, char **id, char **secret)
{
    const char *h = req_header(r, "Authorization");
    if (!h || strncasecmp(h, "Basic ", 6) != 0)
        return 0;
    const char *b64 = h + 6;
    while (*b64 == ' ')
        b64++;
    size_t n = strlen(b64);
    if (n == 0 || n > 1024 || n % 4 != 0)
        return -1;
    unsigned char *raw = arena_alloc(&r->arena, n / 4 * 3 + 1);
    int len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    if (len < 0)
        return -1;
    len -= (b64[n - 1] == '=') + (b64[n - 2] == '=');
    raw[len] = '\0';
    if (memchr(raw, '\0', (size_t)len))
        return -1;
    char *colon = strchr((char *)raw, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    *id = (char *)raw;
    *secret = colon + 1;
    return form_decode(*id) && form_decode(*secret) ? 1 : -1;
}

int acc_client_authenticate(struct req *r, const char *body_client_id, const char *body_secret,
                            char *client, size_t client_len)
{
    char *basic_id = NULL, *basic_secret = NULL;
    int basic = basic_credentials(r, &basic_id, &basic_secret);
    client[0] = '\0';
    if (basic < 0) {
        invalid_client(r, true, "The HTTP Basic client credentials are malformed.");
        return 0;
    }
    if (basic && body_secret) {
        req_problem(r, 400, "invalid_request",
                    "Authenticate the client one way only: HTTP Basic or client_secret.");
        return 0;
    }
    if (basic && body_client_id && strcmp(basic_id, body_client_id) != 0) {
        req_problem(r, 400, "invalid_request",
                    "client_id in the body differs from the HTTP Basic client.");
        return 0;
    }
    const char *id = basic ? basic_id : body_client_id;
    const char *secret = basic ? basic_secret : body_secret;
    if (!id)
        return 1; /* no client: a login's refresh token */
    struct client *x = arena_alloc(&r->arena, sizeof *x);
    int found = client_load(r, id, NULL, x);
    if (found < 0)
        return -1;
    if (!found || x->c.status != OAUTH_CLIENT_STATUS_ACTIVE) {
        invalid_client(r, basic, "Client authentication failed: unknown or disabled client.");
        return 0;
    }
    if (x->c.type == OAUTH_CLIENT_TYPE_CONFIDENTIAL) {
        char hash[DIGEST_HEX_LEN + 1];
        if (!secret || !*secret || sha256_hex(secret, hash) != 0 || !x->secret_hash ||
            !secure_equal(hash, x->secret_hash)) {
            invalid_client(r, basic, "Client authentication failed: the client secret is missing "
                                     "or wrong.");
            return 0;
        }
    } else if (secret && *secret) {
        invalid_client(r, basic, "A public client has no secret; send only client_id.");
        return 0;
    }
    snprintf(client, client_len, "%s", x->c.id);
    return 1;
}

/* ==== metadata ============================================================================ */

int accounts_get_authorization_server_metadata(
    struct req *r, const struct accounts_get_authorization_server_metadata_request *in,
    struct accounts_get_authorization_server_metadata_response *out)
{
    (void)in;
    static const char *code[] = {"code"}, *query[] = {"query"};
    static const char *grants[] = {"authorization_code", "refresh_token"};
    static const char *s256[] = {"S256"};
    static const char *auth_methods[] = {"none", "client_secret_basic", "client_secret_post"};
    struct authorization_server_metadata *m = arena_alloc(&r->arena, sizeof *m);
    m->issuer = issuer();
    m->authorization_endpoint = arena_printf(&r->arena, "%s" AUTHORIZE_PATH, issuer());
    m->token_endpoint = arena_printf(&r->arena, "%s/v1/accounts/auth/oauth/token", issuer());
    m->response_types_supported = code;
    m->response_types_supported_count = 1;
    m->response_modes_supported = query;
    m->response_modes_supported_count = 1;
    m->has_response_modes_supported = true;
    m->grant_types_supported = grants;
    m->grant_types_supported_count = 2;
    m->code_challenge_methods_supported = s256;
    m->code_challenge_methods_supported_count = 1;
    m->token_endpoint_auth_methods_supported = auth_methods;
    m->token_endpoint_auth_methods_supported_count = 3;
    m->revocation_endpoint = arena_printf(&r->arena, "%s/v1/accounts/auth/oauth/revoke", issuer());
    m->revocation_endpoint_auth_methods_supported = auth_methods; /* the token endpoint's */
    m->revocation_endpoint_auth_methods_supported_count = 3;
    m->scopes_supported = arena_alloc(&r->arena, (size_t)scopes_count * sizeof(const char *));
    for (int i = 0; i < scopes_count; i++)
        if (scopes_mask(scopes_names[i]) != SCOPE_WORKSPACE_ADMIN)
            m->scopes_supported[m->scopes_supported_count++] = scopes_names[i];
    m->authorization_response_iss_parameter_supported = true;
    m->has_authorization_response_iss_parameter_supported = true;
    m->service_documentation = arena_printf(&r->arena, "%s/v1/openapi.json", issuer());
    m->has_service_documentation = true;
    out->status = 200;
    out->body_200 = m;
    return 0;
}

/* ==== browser sessions and pending requests =============================================== */

struct browser {
    char hash[DIGEST_HEX_LEN + 1];
    char csrf[64];
    char user_id[ID_MAX]; /* "" until signed in */
    char pending_email[EMAIL_MAX];
    int64_t pending_until;
    char device_token[200]; /* sealed: the device cookie the next page hands out; "" none */
    bool anonymous; /* no row: a browser that has not signed in (only its cookie) */
};

/* The browser session of cookie: 1 valid, 0 none or expired, -1 failure. */
static int browser_load(const char *cookie, struct browser *b)
{
    memset(b, 0, sizeof *b);
    if (!cookie || sha256_hex(cookie, b->hash) != 0)
        return 0;
    sqlite3_stmt *st = storage_prepare(
        "SELECT csrf, user_id, pending_email, pending_until, device_token FROM "
        "oauth_browser_sessions WHERE token_hash = ? AND expires_at > ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, b->hash, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, clock_now_ms());
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        acc_copy_column(st, 0, b->csrf, sizeof b->csrf);
        acc_copy_column(st, 1, b->user_id, sizeof b->user_id);
        acc_copy_column(st, 2, b->pending_email, sizeof b->pending_email);
        b->pending_until = sqlite3_column_int64(st, 3);
        acc_copy_column(st, 4, b->device_token, sizeof b->device_token);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_failed("browser session");
    return rc == SQLITE_ROW;
}

static const char *cookie_header(struct req *r, const char *value)
{
    return arena_printf(&r->arena,
                        COOKIE_NAME "=%s; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=%lld",
                        value, (long long)(BROWSER_TTL_MS / 1000));
}

/* A new browser session (signed in as user_id when given), replacing old_hash (whose pending
 * requests move to it: a new cookie value at sign-in stops session fixation). Fills b; the
 * Set-Cookie value into *set_cookie. 0 / -1. */
static int browser_new(struct req *r, const char *user_id, const char *old_hash,
                       struct browser *b, const char **set_cookie)
{
    char *token = id_secret(&r->arena, SECRET_BYTES);
    char now[40];
    format_now_rfc3339(now, sizeof now);
    memset(b, 0, sizeof *b);
    if (sha256_hex(token, b->hash) != 0)
        return -1;
    snprintf(b->csrf, sizeof b->csrf, "%s", id_secret(&r->arena, SECRET_BYTES));
    snprintf(b->user_id, sizeof b->user_id, "%s", user_id ? user_id : "");
    sqlite3_stmt *st = storage_prepare(
        "INSERT INTO oauth_browser_sessions (token_hash, csrf, user_id, created_at, expires_at) "
        "VALUES (?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, b->hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b->csrf, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, user_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, now, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, clock_now_ms() + BROWSER_TTL_MS);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_failed("browser insert");
    if (old_hash) {
        const char *v[] = {b->hash, old_hash};
        if (acc_exec_texts("UPDATE oauth_requests SET browser_hash = ? WHERE browser_hash = ?", v,
                           2) != 0 ||
            acc_exec_texts("DELETE FROM oauth_browser_sessions WHERE token_hash = ?", v + 1, 1) !=
                0)
            return -1;
    }
    *set_cookie = cookie_header(r, token);
    return 0;
}

static int browser_set_pending(const struct browser *b, const char *email_norm, int64_t until)
{
    sqlite3_stmt *st = storage_prepare("UPDATE oauth_browser_sessions SET pending_email = ?, "
                                       "pending_until = ? WHERE token_hash = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, email_norm, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, until);
    sqlite3_bind_text(st, 3, b->hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_failed("browser pending");
}

/* A browser that has not signed in keeps nothing in the database: its cookie (given now when
 * it has none) binds its pages' CSRF token and requests, both derived from it. */
static int browser_anonymous(struct req *r, const char *cookie, struct browser *b,
                             const char **set_cookie)
{
    char csrf[DIGEST_HEX_LEN + 1];
    memset(b, 0, sizeof *b);
    if (!cookie) {
        cookie = id_secret(&r->arena, SECRET_BYTES);
        *set_cookie = cookie_header(r, cookie);
    }
    const char *label = arena_printf(&r->arena, "csrf:%s", cookie);
    if (sha256_hex(cookie, b->hash) != 0 || sha256_hex(label, csrf) != 0)
        return -1;
    snprintf(b->csrf, sizeof b->csrf, "%.43s", csrf);
    b->anonymous = true;
    return 0;
}

/* The first row of a browser that has not signed in: once its password was right, for the
 * one-time code step (it lives as long as that step may take). 0 / -1. */
static int browser_pending_insert(const struct browser *b, const char *email_norm, int64_t until)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    sqlite3_stmt *st = storage_prepare(
        "INSERT OR REPLACE INTO oauth_browser_sessions (token_hash, csrf, pending_email, "
        "pending_until, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, b->hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b->csrf, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, email_norm, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, until);
    sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, until);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_failed("browser pending insert");
}

/* The device cookie of a browser (Strict: only ever sent to this site's own pages). */
static const char *device_cookie_header(struct req *r, const char *token)
{
    return arena_printf(&r->arena,
                        DEVICE_COOKIE "=%s; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=%lld",
                        token, (long long)acc_device_lifetime_s());
}

/* Signs browser b in as user_id (a new cookie value into *set_cookie) after a login the guard
 * g let through; the device token for the browser is kept sealed in the new browser session
 * until the next page hands it out (a response sets one cookie). 0 / -1. */
static int finish_sign_in(struct req *r, const char *user_id, const struct browser *b,
                          const struct acc_guard *g, const char *device, const char **set_cookie)
{
    struct browser signed_in;
    if (acc_guard_success(r, g) != 0 || browser_new(r, user_id, b->hash, &signed_in, set_cookie) != 0)
        return -1;
    const char *token = acc_device_issue(r, user_id, g, device);
    char *sealed = token ? seal(&r->arena, (const unsigned char *)token, strlen(token)) : NULL;
    if (!sealed)
        return -1;
    const char *v[] = {sealed, signed_in.hash};
    return acc_exec_texts("UPDATE oauth_browser_sessions SET device_token = ? WHERE token_hash = ?",
                          v, 2);
}

/* The device cookie waiting in signed-in browser b, handed out now (NULL when none). */
static const char *take_device_cookie(struct req *r, const struct browser *b)
{
    char token[128];
    size_t n = 0;
    if (!b->device_token[0] ||
        seal_open(b->device_token, (unsigned char *)token, sizeof token - 1, &n) != 0)
        return NULL;
    token[n] = '\0';
    const char *v[] = {b->hash};
    if (acc_exec_texts("UPDATE oauth_browser_sessions SET device_token = NULL WHERE "
                       "token_hash = ?",
                       v, 1) != 0)
        return NULL;
    return device_cookie_header(r, token);
}

struct authz {
    char id[AUTHZ_ID_MAX]; /* "oar_..." (a row), or the sealed request itself (stateless) */
    bool stateless;
    char browser_hash[DIGEST_HEX_LEN + 1];
    char client_id[ID_MAX];
    char redirect_uri[URI_MAX + 1];
    char scope[1024];
    char state[URI_MAX + 1];
    bool has_state;
    char challenge[130];
    int64_t expires_at;
    bool decided;
};

/* An anonymous request travels sealed (AES-256-GCM under the server's key) in the page's form
 * instead of a row: "<expires_at>" then each field as "<length>:<bytes>" ("-:" for no state). */
static void put_field(struct req *r, char **out, const char *v)
{
    *out = v ? arena_printf(&r->arena, "%s%zu:%s", *out, strlen(v), v)
             : arena_printf(&r->arena, "%s-:", *out);
}

static int authz_seal(struct req *r, struct authz *a)
{
    char *plain = arena_printf(&r->arena, "%lld|", (long long)a->expires_at);
    put_field(r, &plain, a->browser_hash);
    put_field(r, &plain, a->client_id);
    put_field(r, &plain, a->redirect_uri);
    put_field(r, &plain, a->scope);
    put_field(r, &plain, a->has_state ? a->state : NULL);
    put_field(r, &plain, a->challenge);
    char *sealed = seal(&r->arena, (const unsigned char *)plain, strlen(plain));
    if (!sealed || strlen(sealed) >= sizeof a->id)
        return -1;
    snprintf(a->id, sizeof a->id, "%s", sealed);
    a->stateless = true;
    return 0;
}

/* One field of a sealed request into out (n bytes); *absent for "-:". false when malformed. */
static bool get_field(const char **p, const char *end, char *out, size_t n, bool *absent)
{
    *absent = false;
    if (*p < end && **p == '-') {
        if (*p + 1 >= end || (*p)[1] != ':')
            return false;
        *p += 2;
        *absent = true;
        out[0] = '\0';
        return true;
    }
    size_t len = 0;
    while (*p < end && **p >= '0' && **p <= '9' && len < 100000)
        len = len * 10 + (size_t)(*(*p)++ - '0');
    if (*p >= end || **p != ':' || len >= n || (size_t)(end - *p - 1) < len)
        return false;
    memcpy(out, *p + 1, len);
    out[len] = '\0';
    *p += len + 1;
    return true;
}

/* The sealed request id of browser b: 1 valid and not expired, 0 not. */
static int authz_open(const char *id, const struct browser *b, struct authz *a)
{
    char plain[AUTHZ_ID_MAX];
    size_t n = 0;
    if (seal_open(id, (unsigned char *)plain, sizeof plain - 1, &n) != 0)
        return 0;
    const char *p = plain, *end = plain + n;
    char *bar = memchr(plain, '|', n);
    if (!bar)
        return 0;
    a->expires_at = strtoll(plain, NULL, 10);
    p = bar + 1;
    bool absent = false, no_state = false;
    if (!get_field(&p, end, a->browser_hash, sizeof a->browser_hash, &absent) ||
        !get_field(&p, end, a->client_id, sizeof a->client_id, &absent) ||
        !get_field(&p, end, a->redirect_uri, sizeof a->redirect_uri, &absent) ||
        !get_field(&p, end, a->scope, sizeof a->scope, &absent) ||
        !get_field(&p, end, a->state, sizeof a->state, &no_state) ||
        !get_field(&p, end, a->challenge, sizeof a->challenge, &absent) || p != end)
        return 0;
    a->has_state = !no_state;
    snprintf(a->id, sizeof a->id, "%s", id);
    a->stateless = true;
    return secure_equal(a->browser_hash, b->hash) && a->expires_at > clock_now_ms();
}

static int authz_insert(const struct authz *a)
{
    sqlite3_stmt *st = storage_prepare(
        "INSERT INTO oauth_requests (id, browser_hash, client_id, redirect_uri, scope, state, "
        "code_challenge, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, a->browser_hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, a->client_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, a->redirect_uri, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, a->scope, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, a->has_state ? a->state : NULL, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, a->challenge, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, a->expires_at);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_failed("request insert");
}

/* Request id of browser b, pending and not expired: 1, else 0, -1 failure. */
static int authz_load(const char *id, const struct browser *b, struct authz *a)
{
    memset(a, 0, sizeof *a);
    if (strncmp(id, "v1.", 3) == 0)
        return authz_open(id, b, a);
    sqlite3_stmt *st = storage_prepare(
        "SELECT client_id, redirect_uri, scope, state, code_challenge, expires_at, decided_at "
        "FROM oauth_requests WHERE id = ? AND browser_hash = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b->hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(a->id, sizeof a->id, "%s", id);
        snprintf(a->browser_hash, sizeof a->browser_hash, "%s", b->hash);
        acc_copy_column(st, 0, a->client_id, sizeof a->client_id);
        acc_copy_column(st, 1, a->redirect_uri, sizeof a->redirect_uri);
        acc_copy_column(st, 2, a->scope, sizeof a->scope);
        a->has_state = sqlite3_column_type(st, 3) != SQLITE_NULL;
        acc_copy_column(st, 3, a->state, sizeof a->state);
        acc_copy_column(st, 4, a->challenge, sizeof a->challenge);
        a->expires_at = sqlite3_column_int64(st, 5);
        a->decided = sqlite3_column_type(st, 6) != SQLITE_NULL;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_failed("request load");
    return rc == SQLITE_ROW && !a->decided && a->expires_at > clock_now_ms();
}

/* The authorization URL of a pending request: where the pages go after each step. */
static const char *authz_url(struct req *r, const struct authz *a)
{
    return arena_printf(
        &r->arena,
        AUTHORIZE_PATH "?response_type=code&client_id=%s&redirect_uri=%s&scope=%s%s%s"
                       "&code_challenge=%s&code_challenge_method=S256",
        acc_uri_escape(&r->arena, a->client_id), acc_uri_escape(&r->arena, a->redirect_uri),
        acc_uri_escape(&r->arena, a->scope), a->has_state ? "&state=" : "",
        a->has_state ? acc_uri_escape(&r->arena, a->state) : "",
        acc_uri_escape(&r->arena, a->challenge));
}

/* redirect_uri plus the response parameters (state and iss always follow). */
static const char *redirect_with(struct req *r, const char *uri, const char *params,
                                 const char *state)
{
    return arena_printf(&r->arena, "%s%s%s%s%s&iss=%s", uri, strchr(uri, '?') ? "&" : "?",
                        params, state ? "&state=" : "", state ? acc_uri_escape(&r->arena, state) : "",
                        acc_uri_escape(&r->arena, issuer()));
}

static const char *error_params(struct req *r, const char *error, const char *description)
{
    return arena_printf(&r->arena, "error=%s&error_description=%s", error,
                        acc_uri_escape(&r->arena, description));
}

/* The origin of an absolute URI ("https://app.example:8443"), for the consent page's CSP. */
static const char *origin_of(struct req *r, const char *uri)
{
    const char *host = strstr(uri, "://");
    if (!host)
        return NULL;
    host += 3;
    size_t n = strcspn(host, "/?#");
    return arena_strndup(&r->arena, uri, (size_t)(host - uri) + n);
}

/* ==== pages =============================================================================== */

static const char *hidden(struct req *r, const char *request_id, const char *csrf)
{
    return arena_printf(&r->arena,
                        "<input type=\"hidden\" name=\"request_id\" value=\"%s\">"
                        "<input type=\"hidden\" name=\"csrf\" value=\"%s\">",
                        html_escape(&r->arena, request_id), html_escape(&r->arena, csrf));
}

static const char *error_box(struct req *r, const char *error)
{
    return error ? arena_printf(&r->arena, "<p class=\"error\" id=\"error\" role=\"alert\">%s</p>",
                                html_escape(&r->arena, error))
                 : "";
}

static const char *sign_in_page(struct req *r, const struct client *c, const char *request_id,
                                const char *csrf, const char *email, const char *notice,
                                const char *error)
{
    const char *body = arena_printf(
        &r->arena,
        "<div class=\"card\"><h1>Sign in to continue to %s</h1>"
        "<p class=\"muted\">%s wants to use your Treasury account. Sign in first; you will see "
        "exactly what it asks for before anything is shared.</p>%s%s"
        "<form id=\"sign-in-form\" method=\"post\" action=\"" AUTHORIZE_PATH "/sign-in\">%s"
        "<label for=\"email\">Email</label>"
        "<input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required "
        "maxlength=\"254\" value=\"%s\">"
        "<label for=\"password\">Password</label>"
        "<input id=\"password\" name=\"password\" type=\"password\" "
        "autocomplete=\"current-password\" required maxlength=\"1024\">"
        "<label for=\"otp\">One-time code (only if asked for it)</label>"
        "<input id=\"otp\" name=\"otp\" type=\"text\" inputmode=\"numeric\" "
        "autocomplete=\"one-time-code\" maxlength=\"16\">"
        "<div class=\"actions\"><button id=\"sign-in\" class=\"primary\" type=\"submit\">Sign in"
        "</button></div></form></div>"
        "<footer class=\"muted\">Your password is never shared with %s.</footer>",
        html_escape(&r->arena, c->c.name), html_escape(&r->arena, c->c.name),
        notice ? arena_printf(&r->arena, "<p class=\"muted\">%s</p>",
                              html_escape(&r->arena, notice))
               : "",
        error_box(r, error), hidden(r, request_id, csrf), html_escape(&r->arena, email ? email : ""),
        html_escape(&r->arena, c->c.name));
    return html_page(&r->arena, "Sign in - Treasury", body);
}

static const char *otp_page(struct req *r, const struct client *c, const char *request_id,
                            const char *csrf, const char *error)
{
    const char *body = arena_printf(
        &r->arena,
        "<div class=\"card\"><h1>Enter your one-time code</h1>"
        "<p class=\"muted\">Your account uses two-step verification. Enter the 6-digit code from "
        "your authenticator app to continue to %s.</p>%s"
        "<form id=\"verify-form\" method=\"post\" action=\"" AUTHORIZE_PATH "/verify\">%s"
        "<label for=\"otp\">Code</label>"
        "<input id=\"otp\" name=\"otp\" type=\"text\" inputmode=\"numeric\" "
        "autocomplete=\"one-time-code\" maxlength=\"16\" autofocus>"
        "<label for=\"recovery_code\">Or a recovery code</label>"
        "<input id=\"recovery_code\" name=\"recovery_code\" type=\"text\" autocomplete=\"off\" "
        "maxlength=\"32\">"
        "<div class=\"actions\"><button id=\"verify\" class=\"primary\" type=\"submit\">Verify"
        "</button></div></form></div>",
        html_escape(&r->arena, c->c.name), error_box(r, error), hidden(r, request_id, csrf));
    return html_page(&r->arena, "Two-step verification - Treasury", body);
}

static const char *consent_page(struct req *r, const struct client *c, const struct authz *a,
                                const char *csrf, const char *scope, const char *email,
                                const char *workspace)
{
    size_t n = 0;
    const char **names = split_scopes(r, scope, &n);
    char *items = "";
    for (size_t i = 0; i < n; i++)
        items = arena_printf(&r->arena, "%s<li><b>%s</b><span>%s</span></li>", items,
                             html_escape(&r->arena, scope_words(names[i])),
                             html_escape(&r->arena, names[i]));
    const char *dest = origin_of(r, a->redirect_uri);
    const char *body = arena_printf(
        &r->arena,
        "<div class=\"card\"><h1>%s wants access to your Treasury workspace</h1>"
        "<div class=\"who\"><span>Signed in as <b>%s</b></span><span>Workspace <b>%s</b>"
        "</span></div>"
        "<p>If you approve, %s will be able to:</p><ul class=\"scopes\">%s</ul>"
        "<p class=\"muted\">It acts with your permissions and never sees your password. You can "
        "disconnect it at any time under Connected applications. After you choose, you will be "
        "sent to <code>%s</code>.</p>"
        "<form id=\"consent-form\" method=\"post\" action=\"" AUTHORIZE_PATH "/decision\">%s"
        "<div class=\"actions\"><button id=\"deny\" class=\"secondary\" type=\"submit\" "
        "name=\"decision\" value=\"deny\">Deny</button><button id=\"approve\" class=\"primary\" "
        "type=\"submit\" name=\"decision\" value=\"approve\">Approve</button></div></form></div>",
        html_escape(&r->arena, c->c.name), html_escape(&r->arena, email),
        html_escape(&r->arena, workspace), html_escape(&r->arena, c->c.name), items,
        html_escape(&r->arena, dest ? dest : a->redirect_uri), hidden(r, a->id, csrf));
    /* Chromium applies form-action to the redirect after the form's POST too. */
    r->form_action = dest;
    return html_page(&r->arena, arena_printf(&r->arena, "Authorize %s - Treasury", c->c.name),
                     body);
}

static int user_label(struct req *r, const char *user_id, const char *wid, const char **email,
                      const char **workspace)
{
    sqlite3_stmt *st = storage_prepare("SELECT u.email, w.name FROM users u, workspaces w WHERE "
                                       "u.id = ? AND w.id = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, user_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, wid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *email = column(r, st, 0);
        *workspace = column(r, st, 1);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : db_failed("user label");
}

/* ==== the authorization endpoint ========================================================== */

int accounts_authorize(struct req *r, const struct accounts_authorize_request *in,
                       struct accounts_authorize_response *out)
{
    /* A GET that writes (the browser session, the pending request): take the write lock
     * before reading, so the transaction never has to upgrade a stale snapshot. */
    storage_rollback();
    if (storage_begin(true) != 0) {
        req_problem(r, 503, "unavailable", "The service is busy; try again shortly.");
        return 0;
    }
    struct client *c = arena_alloc(&r->arena, sizeof *c);
    int found = in->has_client_id ? client_load(r, in->client_id, NULL, c) : 0;
    if (found < 0)
        return -1;
    if (!found || c->c.status != OAUTH_CLIENT_STATUS_ACTIVE) {
        req_problem(r, 400, "unknown_client",
                    "This link names an application that is not registered or was disabled. "
                    "Nothing was shared.");
        return 0;
    }
    const char *uri = in->has_redirect_uri ? in->redirect_uri : NULL;
    if (!uri || !registered_redirect(&c->c, uri) || strlen(uri) > URI_MAX) {
        req_problem(r, 400, "invalid_redirect_uri",
                    "The application asked to send you to an address it has not registered. "
                    "For your safety you are not redirected there.");
        return 0;
    }
    /* The client and the redirect URI are trusted from here: errors go back to the client. */
    const char *state = in->has_state ? in->state : NULL;
    const char *error = NULL, *why = NULL;
    if (!in->has_response_type || strcmp(in->response_type, "code") != 0) {
        error = "unsupported_response_type";
        why = "response_type must be code";
    } else if (!in->has_code_challenge) {
        error = "invalid_request";
        why = "code_challenge is required (PKCE, S256)";
    } else if (!in->has_code_challenge_method || strcmp(in->code_challenge_method, "S256") != 0) {
        error = "invalid_request";
        why = "code_challenge_method must be S256";
    } else if (!pkce_challenge_ok(in->code_challenge)) {
        error = "invalid_request";
        why = "code_challenge must be 43 base64url characters";
    }
    char scope[1024], beyond[128];
    const char *want = in->has_scope && *in->scope ? in->scope : c->scopes_text;
    if (!error && acc_scope_beyond(want, c->scopes_text, beyond, sizeof beyond)) {
        error = "invalid_scope";
        why = arena_printf(&r->arena, "the client may not ask for %s", beyond);
    }
    if (error) {
        out->status = 302;
        out->location = redirect_with(r, uri, error_params(r, error, why), state);
        return 0;
    }
    acc_scope_intersection(want, c->scopes_text, scope, sizeof scope);

    struct browser b;
    const char *cookie = in->has_host_oauth_session ? in->host_oauth_session : NULL;
    found = browser_load(cookie, &b);
    if (found < 0)
        return -1;
    if (!found && browser_anonymous(r, cookie, &b, &out->set_cookie) != 0)
        return -1;
    struct authz a;
    memset(&a, 0, sizeof a);
    snprintf(a.browser_hash, sizeof a.browser_hash, "%s", b.hash);
    snprintf(a.client_id, sizeof a.client_id, "%s", c->c.id);
    snprintf(a.redirect_uri, sizeof a.redirect_uri, "%s", uri);
    snprintf(a.scope, sizeof a.scope, "%s", scope);
    a.has_state = state != NULL;
    snprintf(a.state, sizeof a.state, "%s", state ? state : "");
    snprintf(a.challenge, sizeof a.challenge, "%s", in->code_challenge);
    a.expires_at = clock_now_ms() + REQUEST_TTL_MS;
    /* Only a signed-in browser's request is stored (a row living 10 minutes); anybody else's
     * travels sealed in the page, so anonymous traffic stores nothing. */
    if (b.user_id[0]) {
        snprintf(a.id, sizeof a.id, "%s", id_new(&r->arena, "oar"));
        if (authz_insert(&a) != 0)
            return -1;
    } else if (authz_seal(r, &a) != 0) {
        return -1;
    }

    out->status = 200;
    const char *notice = NULL;
    if (b.user_id[0]) {
        char role[48], granted[1024], give[1024];
        int64_t lifetime = 0;
        bool member = false;
        if (acc_find_standing(b.user_id, c->c.workspace_id, role, sizeof role, &lifetime,
                              &member) != 0)
            return -1;
        if (member) {
            if (acc_role_scopes(c->c.workspace_id, role, granted, sizeof granted) != 0)
                return -1;
            acc_scope_intersection(scope, granted, give, sizeof give);
            if (!give[0]) {
                out->status = 302;
                out->location = redirect_with(
                    r, uri,
                    error_params(r, "access_denied",
                                 "the user's role grants none of the requested scopes"),
                    state);
                return 0;
            }
            const char *email = NULL, *workspace = NULL;
            if (user_label(r, b.user_id, c->c.workspace_id, &email, &workspace) != 0)
                return -1;
            out->body_200 = consent_page(r, c, &a, b.csrf, give, email, workspace);
            out->set_cookie = take_device_cookie(r, &b);
            return 0;
        }
        notice = "You are signed in with an account that is not a member of this application's "
                 "workspace. Sign in with another account.";
    }
    out->body_200 = sign_in_page(r, c, a.id, b.csrf, NULL, notice, NULL);
    return 0;
}

/* The checks every page form shares: the browser session, its CSRF token, the pending request
 * and its client. 1 go on, 0 answered (an error page), -1 failure. */
static int form_context(struct req *r, const char *cookie, const char *csrf,
                        const char *request_id, struct browser *b, struct authz *a,
                        struct client *c)
{
    int found = browser_load(cookie, b);
    if (found < 0)
        return -1;
    if (!found && cookie) {
        if (browser_anonymous(r, cookie, b, NULL) != 0)
            return -1;
        found = 1;
    }
    if (!found) {
        req_problem(r, 400, "expired_request",
                    "Your sign-in page expired, or this browser blocks cookies. Go back to the "
                    "application and start again.");
        return 0;
    }
    if (!secure_equal(csrf, b->csrf)) {
        req_problem(r, 400, "invalid_request",
                    "This form did not come from this sign-in page (CSRF check failed).");
        return 0;
    }
    found = authz_load(request_id, b, a);
    if (found < 0)
        return -1;
    if (!found) {
        req_problem(r, 400, "expired_request",
                    "This authorization request expired or was already answered. Go back to "
                    "the application and start again.");
        return 0;
    }
    found = client_load(r, a->client_id, NULL, c);
    if (found < 0)
        return -1;
    if (!found || c->c.status != OAUTH_CLIENT_STATUS_ACTIVE) {
        req_problem(r, 400, "unknown_client", "The application was disabled meanwhile.");
        return 0;
    }
    return 1;
}

/* A run whose answer is a page refusal (400: its writes are rolled back) keeps what the
 * failed-login guard counted: committed now. 1 / 0 answered 503. */
static int keep_counted(struct req *r)
{
    if (storage_commit() != 0 || storage_begin(true) != 0) {
        storage_rollback();
        req_problem(r, 503, "unavailable", "The service is busy; try again shortly.");
        return 0;
    }
    return 1;
}

int accounts_sign_in(struct req *r, const struct accounts_sign_in_request *in,
                     struct accounts_sign_in_response *out)
{
    const struct sign_in_form *f = in->body;
    struct browser b;
    struct authz a;
    struct client *c = arena_alloc(&r->arena, sizeof *c);
    int ok = form_context(r, in->has_host_oauth_session ? in->host_oauth_session : NULL, f->csrf,
                          f->request_id, &b, &a, c);
    if (ok <= 0)
        return ok;
    char email_norm[EMAIL_MAX];
    acc_lower_ascii(f->email, email_norm, sizeof email_norm);
    struct login_user u;
    bool found = false;
    memset(&u, 0, sizeof u);
    if (acc_find_user(email_norm, &u, &found) != 0)
        return -1;
    bool has_otp = f->has_otp && *f->otp, has_recovery = f->has_recovery_code && *f->recovery_code;
    const char *device = in->has_host_device ? in->host_device : NULL;
    struct acc_guard g; /* the failed-login guard of POST /api/login, same counts */
    ok = acc_guard_begin(r, email_norm, found ? u.id : "", device, has_otp || has_recovery, &g);
    if (ok <= 0)
        return ok;
    /* scrypt without holding the write lock (as POST /api/login does); the attempt stays
     * counted as a failure unless it proves itself. */
    if (storage_commit() != 0) {
        storage_rollback();
        req_problem(r, 503, "unavailable", "The service is busy; try again shortly.");
        return 0;
    }
    bool right = found ? password_verify(f->password, u.password_hash)
                       : password_verify_dummy(f->password);
    if (storage_begin(true) != 0) {
        req_problem(r, 503, "unavailable", "The service is busy; try again shortly.");
        return 0;
    }
    struct login_user again;
    memset(&again, 0, sizeof again);
    if (right && acc_find_user(email_norm, &again, &found) != 0)
        return -1;
    if (!right || !found || !again.active || strcmp(again.id, u.id) != 0 ||
        strcmp(again.password_hash, u.password_hash) != 0) {
        if (g.in_backoff) {
            acc_guard_refuse(r, &g);
            return 0;
        }
        out->status = 400;
        out->body_400 = sign_in_page(r, c, a.id, b.csrf, f->email, NULL,
                                     "The email or password is incorrect.");
        return 0;
    }
    if (again.mfa_enabled && !has_otp && !has_recovery) { /* the code page next */
        int64_t until = clock_now_ms() + PENDING_MFA_MS;
        if (acc_guard_undo(r, &g) != 0 ||
            (b.anonymous ? browser_pending_insert(&b, email_norm, until)
                         : browser_set_pending(&b, email_norm, until)) != 0)
            return -1;
        out->status = 200;
        out->body_200 = otp_page(r, c, a.id, b.csrf, NULL);
        return 0;
    }
    if (again.mfa_enabled || g.in_backoff) {
        int64_t wait = 0;
        int code = again.mfa_enabled
                       ? acc_guard_second_factor(r, &g, &again, has_otp ? f->otp : NULL,
                                                 has_otp ? NULL : f->recovery_code, &wait)
                       : 0;
        if (code < 0)
            return -1;
        if (!code) {
            if (g.in_backoff)
                acc_guard_refuse(r, &g);
            else if (wait > 0)
                acc_guard_codes_refused(r, wait);
            else {
                out->status = 400;
                out->body_400 = sign_in_page(r, c, a.id, b.csrf, f->email, NULL,
                                             "The one-time code is wrong, expired, or was "
                                             "already used.");
            }
            return 0;
        }
    }
    if (finish_sign_in(r, again.id, &b, &g, device, &out->set_cookie) != 0)
        return -1;
    out->status = 303;
    out->location = authz_url(r, &a);
    return 0;
}

int accounts_verify_sign_in(struct req *r, const struct accounts_verify_sign_in_request *in,
                            struct accounts_verify_sign_in_response *out)
{
    const struct verify_form *f = in->body;
    struct browser b;
    struct authz a;
    struct client *c = arena_alloc(&r->arena, sizeof *c);
    int ok = form_context(r, in->has_host_oauth_session ? in->host_oauth_session : NULL, f->csrf,
                          f->request_id, &b, &a, c);
    if (ok <= 0)
        return ok;
    if (!b.pending_email[0] || b.pending_until <= clock_now_ms()) {
        out->status = 303; /* the password step again */
        out->location = authz_url(r, &a);
        return 0;
    }
    bool has_otp = f->has_otp && *f->otp, has_recovery = f->has_recovery_code && *f->recovery_code;
    if (!has_otp && !has_recovery) {
        out->status = 400;
        out->body_400 = otp_page(r, c, a.id, b.csrf, "Enter the code from your authenticator app.");
        return 0;
    }
    struct login_user u;
    bool found = false;
    memset(&u, 0, sizeof u);
    if (acc_find_user(b.pending_email, &u, &found) != 0)
        return -1;
    const char *device = in->has_host_device ? in->host_device : NULL;
    struct acc_guard g;
    ok = acc_guard_begin(r, b.pending_email, found ? u.id : "", device, true, &g);
    if (ok <= 0)
        return ok;
    int64_t wait = 0;
    int right = 0;
    if (found && u.active && u.mfa_enabled)
        right = acc_guard_second_factor(r, &g, &u, has_otp ? f->otp : NULL,
                                        has_otp ? NULL : f->recovery_code, &wait);
    if (right < 0)
        return -1;
    if (!right) {
        if (keep_counted(r) <= 0)
            return 0;
        if (g.in_backoff)
            acc_guard_refuse(r, &g);
        else if (wait > 0)
            acc_guard_codes_refused(r, wait);
        else {
            out->status = 400;
            out->body_400 = otp_page(r, c, a.id, b.csrf,
                                     "The code is wrong, expired, or was already used.");
        }
        return 0;
    }
    if (finish_sign_in(r, u.id, &b, &g, device, &out->set_cookie) != 0)
        return -1;
    out->status = 303;
    out->location = authz_url(r, &a);
    return 0;
}

/* The user's active grant to the client, widened to scope (created when there is none). Its
 * id into grant. 0 / -1. */
static int grant_upsert(struct req *r, const char *user_id, const struct client *c,
                        const char *scope, char *grant, size_t n)
{
    char now[40], wider[1024];
    format_now_rfc3339(now, sizeof now);
    sqlite3_stmt *st = storage_prepare("SELECT id, scope FROM oauth_grants WHERE user_id = ? AND "
                                       "client_id = ? AND revoked_at IS NULL");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, user_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, c->c.id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    char old[1024] = "";
    if (rc == SQLITE_ROW) {
        acc_copy_column(st, 0, grant, n);
        acc_copy_column(st, 1, old, sizeof old);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_failed("grant lookup");
    if (rc == SQLITE_ROW) {
        /* old + what is new, in catalogue order */
        char both[2100];
        snprintf(both, sizeof both, "%s %s", old, scope);
        uint64_t mask = 0;
        size_t count = 0;
        const char **names = split_scopes(r, both, &count);
        for (size_t i = 0; i < count; i++)
            mask |= scopes_mask(names[i]);
        scopes_text(mask, wider, sizeof wider);
        const char *v[] = {wider, now, grant};
        return acc_exec_texts("UPDATE oauth_grants SET scope = ?, updated_at = ? WHERE id = ?", v,
                              3);
    }
    snprintf(grant, n, "%s", id_new(&r->arena, "grt"));
    const char *v[] = {grant, c->c.workspace_id, user_id, c->c.id, scope, now, now};
    return acc_exec_texts("INSERT INTO oauth_grants (id, workspace_id, user_id, client_id, scope, "
                          "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                          v, 7);
}

int accounts_decide_authorization(struct req *r,
                                  const struct accounts_decide_authorization_request *in,
                                  struct accounts_decide_authorization_response *out)
{
    const struct decision_form *f = in->body;
    struct browser b;
    struct authz a;
    struct client *c = arena_alloc(&r->arena, sizeof *c);
    int ok = form_context(r, in->has_host_oauth_session ? in->host_oauth_session : NULL, f->csrf,
                          f->request_id, &b, &a, c);
    if (ok <= 0)
        return ok;
    char role[48], granted[1024], scope[1024], now[40];
    int64_t lifetime = 0;
    bool member = false;
    if (!a.stateless && b.user_id[0] && acc_find_standing(b.user_id, c->c.workspace_id, role, sizeof role,
                                          &lifetime, &member) != 0)
        return -1;
    if (!member) {
        req_problem(r, 400, "expired_request",
                    "You are not signed in here any more. Go back to the application and start "
                    "again.");
        return 0;
    }
    format_now_rfc3339(now, sizeof now);
    const char *done[] = {now, a.id};
    if (acc_exec_texts("UPDATE oauth_requests SET decided_at = ? WHERE id = ?", done, 2) != 0)
        return -1;
    const char *state = a.has_state ? a.state : NULL;
    out->status = 302;
    if (f->decision == DECISION_FORM_DECISION_DENY) {
        out->location = redirect_with(
            r, a.redirect_uri, error_params(r, "access_denied", "the user denied the request"),
            state);
        return 0;
    }
    if (acc_role_scopes(c->c.workspace_id, role, granted, sizeof granted) != 0)
        return -1;
    acc_scope_intersection(a.scope, granted, scope, sizeof scope);
    if (!scope[0]) {
        out->location = redirect_with(
            r, a.redirect_uri,
            error_params(r, "access_denied", "the user's role grants none of the requested scopes"),
            state);
        return 0;
    }
    char grant[ID_MAX], hash[DIGEST_HEX_LEN + 1];
    if (grant_upsert(r, b.user_id, c, scope, grant, sizeof grant) != 0)
        return -1;
    char *code = id_secret(&r->arena, SECRET_BYTES);
    if (sha256_hex(code, hash) != 0)
        return -1;
    sqlite3_stmt *st = storage_prepare(
        "INSERT INTO oauth_codes (code_hash, client_id, grant_id, workspace_id, user_id, "
        "redirect_uri, scope, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    const char *v[] = {hash, c->c.id, grant, c->c.workspace_id, b.user_id, a.redirect_uri, scope,
                       a.challenge};
    for (int i = 0; i < 8; i++)
        sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 9, clock_now_ms() + CODE_TTL_MS);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_failed("code insert");
    out->location = redirect_with(r, a.redirect_uri, arena_printf(&r->arena, "code=%s", code),
                                  state);
    return 0;
}

/* ==== the token endpoint ================================================================== */

struct code_row {
    char client_id[ID_MAX], grant_id[ID_MAX], workspace_id[ID_MAX], user_id[ID_MAX];
    char redirect_uri[URI_MAX + 1], scope[1024], challenge[130], session_id[ID_MAX];
    int64_t expires_at;
    bool used, grant_revoked;
};

static int code_load(const char *hash, struct code_row *k, bool *found)
{
    sqlite3_stmt *st = storage_prepare(
        "SELECT k.client_id, k.grant_id, k.workspace_id, k.user_id, k.redirect_uri, k.scope, "
        "k.code_challenge, k.expires_at, k.used_at, k.session_id, g.revoked_at FROM oauth_codes "
        "k JOIN oauth_grants g ON g.id = k.grant_id WHERE k.code_hash = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found) {
        acc_copy_column(st, 0, k->client_id, sizeof k->client_id);
        acc_copy_column(st, 1, k->grant_id, sizeof k->grant_id);
        acc_copy_column(st, 2, k->workspace_id, sizeof k->workspace_id);
        acc_copy_column(st, 3, k->user_id, sizeof k->user_id);
        acc_copy_column(st, 4, k->redirect_uri, sizeof k->redirect_uri);
        acc_copy_column(st, 5, k->scope, sizeof k->scope);
        acc_copy_column(st, 6, k->challenge, sizeof k->challenge);
        k->expires_at = sqlite3_column_int64(st, 7);
        k->used = sqlite3_column_type(st, 8) != SQLITE_NULL;
        acc_copy_column(st, 9, k->session_id, sizeof k->session_id);
        k->grant_revoked = sqlite3_column_type(st, 10) != SQLITE_NULL;
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_failed("code load");
}

static int code_mark_used(const char *hash, const char *session_id)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    const char *v[] = {now, session_id, hash};
    return acc_exec_texts("UPDATE oauth_codes SET used_at = ?, session_id = COALESCE(?, "
                          "session_id) WHERE code_hash = ?",
                          v, 3);
}

static void invalid_grant(struct req *r, const char *detail)
{
    req_problem(r, 400, "invalid_grant", "%s", detail);
}

static int exchange_code(struct req *r, const struct token_request *t, const char *client,
                         struct login_response **resp)
{
    const char *missing = !client[0]                  ? "client_id"
                          : !t->has_code              ? "code"
                          : !t->has_redirect_uri      ? "redirect_uri"
                          : !t->has_code_verifier     ? "code_verifier"
                                                      : NULL;
    if (missing) {
        req_problem(r, 400, "invalid_request", "%s is required for grant_type=authorization_code.",
                    missing);
        return 0;
    }
    if (!pkce_verifier_ok(t->code_verifier)) {
        req_problem(r, 400, "invalid_request",
                    "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.");
        return 0;
    }
    char hash[DIGEST_HEX_LEN + 1];
    struct code_row k;
    bool found = false;
    memset(&k, 0, sizeof k);
    if (sha256_hex(t->code, hash) != 0 || code_load(hash, &k, &found) != 0)
        return -1;
    if (!found || k.expires_at <= clock_now_ms() || strcmp(k.client_id, client) != 0) {
        invalid_grant(r, "The authorization code is unknown, expired, or was issued to another "
                         "client.");
        return 0;
    }
    if (k.used) {
        /* RFC 6749 §4.1.2: a code used twice is stolen or replayed; what it issued ends. */
        if (k.session_id[0] &&
            acc_revoke_session(r, k.session_id, k.user_id, k.workspace_id, "code_reuse") < 0)
            return -1;
        r->keep_writes = true;
        log_warn("oauth: authorization code of client %s used twice; its tokens are revoked",
                 client);
        invalid_grant(r, "The authorization code was already used; the tokens issued from it "
                         "are revoked.");
        return 0;
    }
    if (strcmp(k.redirect_uri, t->redirect_uri) != 0) {
        invalid_grant(r, "redirect_uri is not identical to the one of the authorization "
                         "request.");
        return 0;
    }
    if (code_mark_used(hash, NULL) != 0)
        return -1;
    if (!pkce_s256_matches(t->code_verifier, k.challenge)) {
        r->keep_writes = true; /* the code is spent either way */
        invalid_grant(r, "code_verifier does not match the code_challenge.");
        return 0;
    }
    char role[48], granted[1024], scope[1024];
    int64_t lifetime = 0;
    bool member = false;
    if (k.grant_revoked) {
        r->keep_writes = true;
        invalid_grant(r, "The user disconnected the application meanwhile.");
        return 0;
    }
    if (acc_find_standing(k.user_id, k.workspace_id, role, sizeof role, &lifetime, &member) != 0)
        return -1;
    if (!member) {
        r->keep_writes = true;
        invalid_grant(r, "The user can no longer use this workspace.");
        return 0;
    }
    if (acc_role_scopes(k.workspace_id, role, granted, sizeof granted) != 0)
        return -1;
    acc_scope_intersection(k.scope, granted, scope, sizeof scope);
    const char *sid = NULL;
    *resp = acc_open_session(r, k.user_id, k.workspace_id, scope, lifetime, client, k.grant_id,
                             &sid);
    if (!*resp)
        return -1;
    return code_mark_used(hash, sid); /* a replay of the code revokes this session */
}

int accounts_issue_token(struct req *r, const struct accounts_issue_token_request *in,
                         struct accounts_issue_token_response *out)
{
    const struct token_request *t = in->body;
    char client[ID_MAX];
    int ok = acc_client_authenticate(r, t->has_client_id ? t->client_id : NULL,
                                     t->has_client_secret ? t->client_secret : NULL, client,
                                     sizeof client);
    if (ok <= 0)
        return ok;
    struct login_response *resp = NULL;
    if (!t->has_grant_type) {
        req_problem(r, 400, "invalid_request", "grant_type is required.");
        return 0;
    }
    if (strcmp(t->grant_type, "authorization_code") == 0) {
        if (exchange_code(r, t, client, &resp) != 0)
            return -1;
    } else if (strcmp(t->grant_type, "refresh_token") == 0) {
        if (!client[0]) {
            req_problem(r, 400, "invalid_request",
                        "client_id is required; a login's refresh token goes to "
                        "/v1/accounts/auth/oauth/refresh.");
            return 0;
        }
        if (!t->has_refresh_token) {
            req_problem(r, 400, "invalid_request", "refresh_token is required.");
            return 0;
        }
        if (acc_refresh(r, t->refresh_token, t->has_scope ? t->scope : NULL, client, &resp) != 0)
            return -1;
    } else {
        req_problem(r, 400, "unsupported_grant_type",
                    "grant_type must be authorization_code or refresh_token.");
        return 0;
    }
    if (resp) {
        out->status = 200;
        out->body_200 = resp;
    }
    return 0;
}

/* ==== token revocation (RFC 7009) ========================================================= */

/* A presented token that is current: its session, user, workspace and the OAuth client it was
 * issued to ("" for a first-party token: a login's or a service account's). */
struct revocable {
    bool found;
    char session_id[64], user_id[64], workspace_id[64], client_id[64]; /* as token_claims */
};

/* An access token: one of our JWTs, unexpired and not revoked (what the API accepts). */
static void find_access_token(const char *token, struct revocable *t)
{
    struct token_claims c;
    if (token_verify(auth_key(), token, clock_now_s(), &c) != TOKEN_OK ||
        revocation_contains(c.sid) || revocation_contains(c.jti) || revocation_contains(c.sub))
        return;
    t->found = true;
    snprintf(t->session_id, sizeof t->session_id, "%s", c.sid);
    snprintf(t->user_id, sizeof t->user_id, "%s", c.sub);
    snprintf(t->workspace_id, sizeof t->workspace_id, "%s", c.wid);
    snprintf(t->client_id, sizeof t->client_id, "%s",
             strcmp(c.client_id, TOKEN_FIRST_PARTY) == 0 ? "" : c.client_id);
}

/* A refresh token of a session that is neither revoked nor expired (the token itself may be
 * one the session already rotated past: it is still that session's). 0 / -1. */
static int find_refresh_token(const char *token, struct revocable *t)
{
    struct acc_token_session s;
    bool found = false;
    if (acc_refresh_token_session(token, &s, &found) != 0)
        return -1;
    if (!found || !s.active)
        return 0;
    t->found = true;
    snprintf(t->session_id, sizeof t->session_id, "%s", s.session_id);
    snprintf(t->user_id, sizeof t->user_id, "%s", s.user_id);
    snprintf(t->workspace_id, sizeof t->workspace_id, "%s", s.workspace_id);
    snprintf(t->client_id, sizeof t->client_id, "%s", s.client_id);
    return 0;
}

int accounts_revoke_token(struct req *r, const struct accounts_revoke_token_request *in,
                          struct accounts_revoke_token_response *out)
{
    const struct revocation_request *b = in->body;
    char client[ID_MAX];
    int ok = acc_client_authenticate(r, b->has_client_id ? b->client_id : NULL,
                                     b->has_client_secret ? b->client_secret : NULL, client,
                                     sizeof client);
    if (ok <= 0)
        return ok;
    if (!client[0]) {
        req_problem(r, 400, "invalid_request",
                    "Name the client: HTTP Basic, or client_id in the body (RFC 7009 §2.1).");
        return 0;
    }
    if (!b->has_token || !b->token[0]) { /* a parameter without a value is absent (RFC 6749 §3.2) */
        req_problem(r, 400, "invalid_request", "token is required.");
        return 0;
    }
    /* The hint only says where to look first; an unknown hint is no hint (RFC 7009 §2.1). */
    bool access_first = b->has_token_type_hint && strcmp(b->token_type_hint, "access_token") == 0;
    struct revocable t;
    memset(&t, 0, sizeof t);
    for (int pass = 0; pass < 2 && !t.found; pass++) {
        if ((pass == 0) == access_first)
            find_access_token(b->token, &t);
        else if (find_refresh_token(b->token, &t) != 0)
            return -1;
    }
    if (t.found && strcmp(t.client_id, client) != 0) {
        /* RFC 7009 §2.1: refused; someone holds another client's (or a login's) token. */
        log_warn("oauth: client %s asked to revoke a token of %s; refused", client,
                 t.client_id[0] ? t.client_id : "a first-party session");
        req_problem(r, 400, "invalid_grant",
                    "This token was not issued to this client; nothing was revoked.");
        return 0;
    }
    /* Either token ends its session: the refresh token and every access token of it. An
     * unknown, expired or already revoked token is answered 200 all the same (RFC 7009 §2.2). */
    if (t.found && acc_revoke_session(r, t.session_id, t.user_id, t.workspace_id,
                                      "token_revocation") < 0)
        return -1;
    out->status = 200;
    return 0;
}

/* ==== grants ============================================================================== */

static int grant_row(struct req *r, sqlite3_stmt *st, void *item)
{
    struct oauth_grant *g = item;
    g->id = column(r, st, 0);
    g->object = "oauth_grant";
    g->client_id = column(r, st, 1);
    g->client_name = column(r, st, 2);
    const char *scope = column(r, st, 3);
    g->scopes = split_scopes(r, scope ? scope : "", &g->scopes_count);
    g->created_at = column(r, st, 4);
    g->updated_at = column(r, st, 5);
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
    sqlite3_stmt *st = storage_prepare(
        "SELECT g.id, g.client_id, c.name, g.scope, g.created_at, g.updated_at FROM oauth_grants "
        "g JOIN oauth_clients c ON c.id = g.client_id WHERE g.user_id = ?1 AND g.workspace_id = "
        "?2 AND g.revoked_at IS NULL AND (?3 IS NULL OR g.created_at < ?3 OR (g.created_at = ?3 "
        "AND g.id < ?4)) ORDER BY g.created_at DESC, g.id DESC LIMIT ?5");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.user_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->principal.workspace_id, -1, SQLITE_STATIC);
    page_bind(&pg, st, 3, 4, 5);
    struct oauth_grant_page *p = arena_alloc(&r->arena, sizeof *p);
    p->data = arena_alloc(&r->arena, (size_t)in->limit * sizeof *p->data);
    if (page_fill(r, &pg, st, p->data, sizeof *p->data, grant_row) != 0)
        return -1;
    p->data_count = pg.count;
    p->has_more = pg.has_more;
    const struct oauth_grant *last = pg.count ? &p->data[pg.count - 1] : NULL;
    p->next_cursor = last ? page_next(r, &pg, last->created_at, last->id) : NULL;
    p->next_cursor_is_null = !p->next_cursor;
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
        sqlite3_stmt *st = storage_prepare(
            "UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND user_id = ? AND "
            "workspace_id = ? AND revoked_at IS NULL");
        if (!st)
            return -1;
        const char *v[] = {now, in->id, r->principal.user_id, r->principal.workspace_id};
        for (int i = 0; i < 4; i++)
            sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        changed = sqlite3_changes(storage_db());
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return db_failed("grant revoke");
    }
    if (!changed) {
        req_problem(r, 404, "not_found", "You have no connected application %s.", in->id);
        return 0;
    }
    if (revoke_sessions_of(r, "grant_id", in->id, "grant_revoked") != 0 ||
        audit_record(r, "oauth_grant.revoked", "oauth_grant", in->id, "active", "revoked",
                     NULL) != 0)
        return -1;
    out->status = 204;
    return 0;
}

/* ==== the built-in callback page ========================================================== */

int accounts_oauth_callback(struct req *r, const struct accounts_oauth_callback_request *in,
                            struct accounts_oauth_callback_response *out)
{
    const char *body;
    if (in->has_code)
        body = arena_printf(
            &r->arena,
            "<div class=\"card\"><h1>Authorization complete</h1><p>Copy this code into the "
            "application that sent you here. It works once, within a minute.</p>"
            "<p><code id=\"code\">%s</code></p>%s</div>",
            html_escape(&r->arena, in->code),
            in->has_state ? arena_printf(&r->arena,
                                         "<p class=\"muted\">State: <code id=\"state\">%s</code>"
                                         "</p>",
                                         html_escape(&r->arena, in->state))
                          : "");
    else
        body = arena_printf(
            &r->arena,
            "<div class=\"card\" id=\"error\"><h1>No access was given</h1><p>The authorization "
            "ended with <code>%s</code>. You can close this page.</p></div>",
            html_escape(&r->arena, in->has_error ? in->error : "no code"));
    out->status = 200;
    out->body_200 = html_page(&r->arena, "Authorization - Treasury", body);
    return 0;
}

/* ==== housekeeping ======================================================================== */

/* Deletes expired codes, requests, browser sessions, devices and back-off counts. How many rows went (a full batch
 * reruns at once). */
static int purge_expired(void)
{
    int64_t now = clock_now_ms();
    static const char *const sql[] = {
        "DELETE FROM oauth_codes WHERE rowid IN (SELECT rowid FROM oauth_codes WHERE "
        "expires_at < ? LIMIT 500)",
        "DELETE FROM oauth_requests WHERE rowid IN (SELECT rowid FROM oauth_requests WHERE "
        "expires_at < ? LIMIT 500)",
        "DELETE FROM oauth_browser_sessions WHERE rowid IN (SELECT rowid FROM "
        "oauth_browser_sessions WHERE expires_at < ? LIMIT 500)",
        /* the failed-login guard's (accounts_lockout.c): devices past their life, back-off
         * counts a day quiet */
        "DELETE FROM login_devices WHERE rowid IN (SELECT rowid FROM login_devices WHERE "
        "expires_at < ? LIMIT 500)",
        "DELETE FROM login_backoff WHERE key IN (SELECT key FROM login_backoff WHERE "
        "last_failure_at < ? LIMIT 500)",
    };
    int total = 0;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (storage_begin(true) != 0)
            return -1;
        sqlite3_stmt *st = storage_prepare(sql[i]);
        if (!st) {
            storage_rollback();
            return -1;
        }
        /* A used code stays a day past its expiry, so a late replay still revokes. */
        sqlite3_bind_int64(st, 1, i == 0 || i == 4 ? now - INT64_C(86400000) : now);
        int rc = sqlite3_step(st);
        int n = sqlite3_changes(storage_db());
        sqlite3_reset(st);
        if (rc != SQLITE_DONE || storage_commit() != 0) {
            storage_rollback();
            return db_failed("purge");
        }
        total = n > total ? n : total;
    }
    return total;
}

struct job accounts_oauth_purge_job(void)
{
    struct job j = {"oauth_purge", purge_expired, 500, 60000};
    return j;
}
