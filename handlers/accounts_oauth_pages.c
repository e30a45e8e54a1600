/* OAuth 2.0, authorization code with PKCE, in three files. This one: the browser side. The
 * authorization endpoint (accounts_authorize), the sign-in, one-time code and consent pages and
 * their forms (accounts_sign_in, accounts_verify_sign_in, accounts_decide_authorization, which
 * records the user's grant and has the code issued), the built-in callback page and the job
 * that purges expired codes, requests and browser sessions.
 * Neighbours: accounts_oauth.c, the clients, client authentication, metadata, grants and the
 * helpers the three files share (accounts_oauth.h); accounts_oauth_token.c, authorization
 * codes, the token endpoint and revocation (RFC 7009).
 *
 * The pages keep their state server-side: a browser session (the __Host- cookie holds a random
 * token, stored as its SHA-256 with a CSRF token and, once signed in, the user) and pending
 * authorization requests bound to it (a browser that has not signed in stores nothing: its
 * request travels sealed in the page's form). Cookies are stored as SHA-256 digests of 256-bit
 * random values only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/accounts.h"
#include "handlers/accounts_oauth.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/html.h"
#include "runtime/id.h"
#include "runtime/pkce.h"
#include "runtime/resource.h"
#include "runtime/seal.h"
#include "runtime/storage.h"

#define COOKIE_NAME "__Host-oauth_session"
#define DEVICE_COOKIE "__Host-device"
#define REQUEST_TTL_MS INT64_C(600000)
#define BROWSER_TTL_MS INT64_C(43200000)
#define PENDING_MFA_MS INT64_C(300000)
#define AUTHZ_ID_MAX 4096 /* an "oar_" id, or a sealed anonymous request (about 3 KB at most) */

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
    if (!cookie || oauth_sha256_hex(cookie, b->hash) != 0)
        return 0;
    struct db_stmt *st = storage_prepare(
        "SELECT csrf, user_id, pending_email, pending_until, device_token FROM "
        "oauth_browser_sessions WHERE token_hash = ? AND expires_at > ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, b->hash);
    db_bind_int64(st, 2, clock_now_ms());
    int rc = db_step(st);
    if (rc == DB_ROW) {
        acc_copy_column(st, 0, b->csrf, sizeof b->csrf);
        acc_copy_column(st, 1, b->user_id, sizeof b->user_id);
        acc_copy_column(st, 2, b->pending_email, sizeof b->pending_email);
        b->pending_until = db_column_int64(st, 3);
        acc_copy_column(st, 4, b->device_token, sizeof b->device_token);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return oauth_db_failed("browser session");
    return rc == DB_ROW;
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
    char *token = id_secret(&r->arena, OAUTH_SECRET_BYTES);
    char now[40];
    format_now_rfc3339(now, sizeof now);
    memset(b, 0, sizeof *b);
    if (oauth_sha256_hex(token, b->hash) != 0)
        return -1;
    snprintf(b->csrf, sizeof b->csrf, "%s", id_secret(&r->arena, OAUTH_SECRET_BYTES));
    snprintf(b->user_id, sizeof b->user_id, "%s", user_id ? user_id : "");
    struct db_stmt *st = storage_prepare(
        "INSERT INTO oauth_browser_sessions (token_hash, csrf, user_id, created_at, expires_at) "
        "VALUES (?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    db_bind_text(st, 1, b->hash);
    db_bind_text(st, 2, b->csrf);
    db_bind_text(st, 3, user_id);
    db_bind_text(st, 4, now);
    db_bind_int64(st, 5, clock_now_ms() + BROWSER_TTL_MS);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return oauth_db_failed("browser insert");
    if (old_hash) {
        const char *v[] = {b->hash, old_hash};
        if (storage_exec_texts("UPDATE oauth_requests SET browser_hash = ? WHERE browser_hash = ?",
                               v, 2) != 0 ||
            storage_exec_texts("DELETE FROM oauth_browser_sessions WHERE token_hash = ?", v + 1,
                               1) != 0)
            return -1;
    }
    *set_cookie = cookie_header(r, token);
    return 0;
}

static int browser_set_pending(const struct browser *b, const char *email_norm, int64_t until)
{
    struct db_stmt *st = storage_prepare("UPDATE oauth_browser_sessions SET pending_email = ?, "
                                       "pending_until = ? WHERE token_hash = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, email_norm);
    db_bind_int64(st, 2, until);
    db_bind_text(st, 3, b->hash);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : oauth_db_failed("browser pending");
}

/* A browser that has not signed in keeps nothing in the database: its cookie (given now when
 * it has none) binds its pages' CSRF token and requests, both derived from it. */
static int browser_anonymous(struct req *r, const char *cookie, struct browser *b,
                             const char **set_cookie)
{
    char csrf[DIGEST_HEX_LEN + 1];
    memset(b, 0, sizeof *b);
    if (!cookie) {
        cookie = id_secret(&r->arena, OAUTH_SECRET_BYTES);
        *set_cookie = cookie_header(r, cookie);
    }
    const char *label = arena_printf(&r->arena, "csrf:%s", cookie);
    if (oauth_sha256_hex(cookie, b->hash) != 0 || oauth_sha256_hex(label, csrf) != 0)
        return -1;
    snprintf(b->csrf, sizeof b->csrf, "%.43s", csrf);
    b->anonymous = true;
    return 0;
}

/* The first row of a browser that has not signed in: once its password was right, for the
 * one-time code step (it lives as long as that step may take); a row the browser already had is
 * replaced whole (signed out: no user). 0 / -1. */
static int browser_pending_insert(const struct browser *b, const char *email_norm, int64_t until)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO oauth_browser_sessions (token_hash, csrf, pending_email, pending_until, "
        "created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (token_hash) DO UPDATE "
        "SET csrf = excluded.csrf, user_id = NULL, pending_email = excluded.pending_email, "
        "pending_until = excluded.pending_until, created_at = excluded.created_at, "
        "expires_at = excluded.expires_at");
    if (!st)
        return -1;
    db_bind_text(st, 1, b->hash);
    db_bind_text(st, 2, b->csrf);
    db_bind_text(st, 3, email_norm);
    db_bind_int64(st, 4, until);
    db_bind_text(st, 5, now);
    db_bind_int64(st, 6, until);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : oauth_db_failed("browser pending insert");
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
    return storage_exec_texts(
        "UPDATE oauth_browser_sessions SET device_token = ? WHERE token_hash = ?", v, 2);
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
    if (storage_exec_texts("UPDATE oauth_browser_sessions SET device_token = NULL WHERE "
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
    char redirect_uri[OAUTH_URI_MAX + 1];
    char scope[1024];
    char state[OAUTH_URI_MAX + 1];
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
    return oauth_secure_equal(a->browser_hash, b->hash) && a->expires_at > clock_now_ms();
}

static int authz_insert(const struct authz *a)
{
    struct db_stmt *st = storage_prepare(
        "INSERT INTO oauth_requests (id, browser_hash, client_id, redirect_uri, scope, state, "
        "code_challenge, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    db_bind_text(st, 1, a->id);
    db_bind_text(st, 2, a->browser_hash);
    db_bind_text(st, 3, a->client_id);
    db_bind_text(st, 4, a->redirect_uri);
    db_bind_text(st, 5, a->scope);
    db_bind_text(st, 6, a->has_state ? a->state : NULL);
    db_bind_text(st, 7, a->challenge);
    db_bind_int64(st, 8, a->expires_at);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : oauth_db_failed("request insert");
}

/* Request id of browser b, pending and not expired: 1, else 0, -1 failure. */
static int authz_load(const char *id, const struct browser *b, struct authz *a)
{
    memset(a, 0, sizeof *a);
    if (strncmp(id, "v1.", 3) == 0)
        return authz_open(id, b, a);
    struct db_stmt *st = storage_prepare(
        "SELECT client_id, redirect_uri, scope, state, code_challenge, expires_at, decided_at "
        "FROM oauth_requests WHERE id = ? AND browser_hash = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, b->hash);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        snprintf(a->id, sizeof a->id, "%s", id);
        snprintf(a->browser_hash, sizeof a->browser_hash, "%s", b->hash);
        acc_copy_column(st, 0, a->client_id, sizeof a->client_id);
        acc_copy_column(st, 1, a->redirect_uri, sizeof a->redirect_uri);
        acc_copy_column(st, 2, a->scope, sizeof a->scope);
        a->has_state = !db_column_is_null(st, 3);
        acc_copy_column(st, 3, a->state, sizeof a->state);
        acc_copy_column(st, 4, a->challenge, sizeof a->challenge);
        a->expires_at = db_column_int64(st, 5);
        a->decided = !db_column_is_null(st, 6);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return oauth_db_failed("request load");
    return rc == DB_ROW && !a->decided && a->expires_at > clock_now_ms();
}

/* The authorization URL of a pending request: where the pages go after each step. */
static const char *authz_url(struct req *r, const struct authz *a)
{
    return arena_printf(
        &r->arena,
        OAUTH_AUTHORIZE_PATH "?response_type=code&client_id=%s&redirect_uri=%s&scope=%s%s%s"
                       "&code_challenge=%s&code_challenge_method=S256",
        format_uri_component(&r->arena, a->client_id), format_uri_component(&r->arena, a->redirect_uri),
        format_uri_component(&r->arena, a->scope), a->has_state ? "&state=" : "",
        a->has_state ? format_uri_component(&r->arena, a->state) : "",
        format_uri_component(&r->arena, a->challenge));
}

/* redirect_uri plus the response parameters (state and iss always follow). */
static const char *redirect_with(struct req *r, const char *uri, const char *params,
                                 const char *state)
{
    return arena_printf(&r->arena, "%s%s%s%s%s&iss=%s", uri, strchr(uri, '?') ? "&" : "?",
                        params, state ? "&state=" : "", state ? format_uri_component(&r->arena, state) : "",
                        format_uri_component(&r->arena, oauth_issuer()));
}

static const char *error_params(struct req *r, const char *error, const char *description)
{
    return arena_printf(&r->arena, "error=%s&error_description=%s", error,
                        format_uri_component(&r->arena, description));
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

/* The text of a scope for people (x-scopes), or the name itself. */
static const char *scope_words(const char *name)
{
    for (int i = 0; i < scopes_count; i++)
        if (strcmp(scopes_names[i], name) == 0)
            return scopes_descriptions[i];
    return name;
}

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

static const char *sign_in_page(struct req *r, const struct oauth_stored_client *c,
                                const char *request_id, const char *csrf, const char *email,
                                const char *notice, const char *error)
{
    const char *body = arena_printf(
        &r->arena,
        "<div class=\"card\"><h1>Sign in to continue to %s</h1>"
        "<p class=\"muted\">%s wants to use your Treasury account. Sign in first; you will see "
        "exactly what it asks for before anything is shared.</p>%s%s"
        "<form id=\"sign-in-form\" method=\"post\" action=\"" OAUTH_AUTHORIZE_PATH "/sign-in\">%s"
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

static const char *otp_page(struct req *r, const struct oauth_stored_client *c,
                            const char *request_id, const char *csrf, const char *error)
{
    const char *body = arena_printf(
        &r->arena,
        "<div class=\"card\"><h1>Enter your one-time code</h1>"
        "<p class=\"muted\">Your account uses two-step verification. Enter the 6-digit code from "
        "your authenticator app to continue to %s.</p>%s"
        "<form id=\"verify-form\" method=\"post\" action=\"" OAUTH_AUTHORIZE_PATH "/verify\">%s"
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

static const char *consent_page(struct req *r, const struct oauth_stored_client *c,
                                const struct authz *a, const char *csrf, const char *scope,
                                const char *email, const char *workspace)
{
    size_t n = 0;
    const char **names;
    resource_words_split(&r->arena, scope, &names, &n);
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
        "<form id=\"consent-form\" method=\"post\" action=\"" OAUTH_AUTHORIZE_PATH "/decision\">%s"
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
    struct db_stmt *st = storage_prepare("SELECT u.email, w.name FROM users u, workspaces w WHERE "
                                       "u.id = ? AND w.id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, user_id);
    db_bind_text(st, 2, wid);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        *email = db_column_dup(&r->arena, st, 0);
        *workspace = db_column_dup(&r->arena, st, 1);
    }
    db_reset(st);
    return rc == DB_ROW ? 0 : oauth_db_failed("user label");
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
    struct oauth_stored_client *c = arena_alloc(&r->arena, sizeof *c);
    int found = in->has_client_id ? oauth_client_load(r, in->client_id, NULL, c) : 0;
    if (found < 0)
        return -1;
    if (!found || c->c.status != OAUTH_CLIENT_STATUS_ACTIVE) {
        req_problem(r, 400, "unknown_client",
                    "This link names an application that is not registered or was disabled. "
                    "Nothing was shared.");
        return 0;
    }
    const char *uri = in->has_redirect_uri ? in->redirect_uri : NULL;
    if (!uri || !oauth_registered_redirect(&c->c, uri) || strlen(uri) > OAUTH_URI_MAX) {
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
                        struct oauth_stored_client *c)
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
    if (!oauth_secure_equal(csrf, b->csrf)) {
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
    found = oauth_client_load(r, a->client_id, NULL, c);
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

/* After a second factor that did not prove itself: the failed-login guard's answer when it
 * has one (the back-off's while the client is held back, else the quota of wrong codes once
 * it is spent, *wait); false when it has none and the page is shown again. */
static bool guard_answered(struct req *r, const struct acc_guard *g, int64_t wait)
{
    if (g->in_backoff)
        acc_guard_refuse(r, g);
    else if (wait > 0)
        acc_guard_codes_refused(r, wait);
    else
        return false;
    return true;
}

int accounts_sign_in(struct req *r, const struct accounts_sign_in_request *in,
                     struct accounts_sign_in_response *out)
{
    const struct sign_in_form *f = in->body;
    struct browser b;
    struct authz a;
    struct oauth_stored_client *c = arena_alloc(&r->arena, sizeof *c);
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
    storage_serialize_writes(acc_turn_key(r, email_norm)); /* as acc_prove_account */
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
            if (!guard_answered(r, &g, wait)) {
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
    struct oauth_stored_client *c = arena_alloc(&r->arena, sizeof *c);
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
        if (!guard_answered(r, &g, wait)) {
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

int accounts_decide_authorization(struct req *r,
                                  const struct accounts_decide_authorization_request *in,
                                  struct accounts_decide_authorization_response *out)
{
    const struct decision_form *f = in->body;
    struct browser b;
    struct authz a;
    struct oauth_stored_client *c = arena_alloc(&r->arena, sizeof *c);
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
    if (storage_exec_texts("UPDATE oauth_requests SET decided_at = ? WHERE id = ?", done, 2) != 0)
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
    char grant[ID_MAX];
    const char *code = NULL, *held = NULL;
    if (oauth_grant_upsert(r, b.user_id, c, scope, grant, sizeof grant, &held) != 0 ||
        oauth_code_issue(r, c, grant, b.user_id, a.redirect_uri, scope, a.challenge, &code) != 0)
        return -1;
    /* The consent is recorded in the application's workspace as the user's act: the page's
     * request carries no token, so the principal is the signed-in browser's for this record. */
    struct principal page = r->principal;
    r->principal.workspace_id = c->c.workspace_id;
    r->principal.user_id = b.user_id;
    int audited = audit_change(r, "oauth_grant.granted", "oauth_grant", grant, NULL, "active",
                               arena_printf(&r->arena, "to %s; consented to [%s]; the grant "
                                                         "holds [%s]",
                                            c->c.id, scope, held));
    r->principal = page;
    if (audited != 0)
        return -1;
    out->location = redirect_with(r, a.redirect_uri, arena_printf(&r->arena, "code=%s", code),
                                  state);
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

/* Expired requests (this file's oauth_requests). How many rows went, or -1. */
static int purge_requests(int64_t before_ms)
{
    return acc_purge("DELETE FROM oauth_requests WHERE id IN (SELECT id FROM oauth_requests "
                     "WHERE expires_at < ? LIMIT 500)",
                     before_ms);
}

/* Expired browser sessions. How many rows went, or -1. */
static int purge_browser_sessions(int64_t before_ms)
{
    return acc_purge("DELETE FROM oauth_browser_sessions WHERE token_hash IN (SELECT token_hash "
                     "FROM oauth_browser_sessions WHERE expires_at < ? LIMIT 500)",
                     before_ms);
}

/* Deletes expired codes, requests, browser sessions, devices and back-off counts, each table
 * through the file that owns it (handlers/sql/README.md), in a transaction of its own. How
 * many rows went (a full batch reruns at once). */
static int purge_expired(void)
{
    int64_t now = clock_now_ms(), day_ago = now - INT64_C(86400000);
    static const struct {
        int (*purge)(int64_t before_ms);
        bool day_late;
    } steps[] = {
        /* A used code stays a day past its expiry, so a late replay still revokes. */
        {oauth_code_purge_expired, true},
        {purge_requests, false},
        {purge_browser_sessions, false},
        /* the failed-login guard's (accounts_lockout.c): devices past their life, back-off
         * counts a day quiet */
        {acc_device_purge_expired, false},
        {acc_backoff_purge_quiet, true},
    };
    int total = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (storage_begin(true) != 0)
            return -1;
        int n = steps[i].purge(steps[i].day_late ? day_ago : now);
        if (n < 0 || storage_commit() != 0) {
            storage_rollback();
            return oauth_db_failed("purge");
        }
        total = n > total ? n : total;
    }
    return total;
}

int oauth_browser_end_user(const char *user_id)
{
    const char *v[] = {user_id};
    return storage_exec_texts("DELETE FROM oauth_browser_sessions WHERE user_id = ?", v, 1);
}

struct job accounts_oauth_purge_job(void)
{
    struct job j = {.name = "oauth_purge", .run = purge_expired, .batch = 500, .period_ms = 60000};
    return j;
}
