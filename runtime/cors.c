/* CORS (cors.h). */
#include "runtime/cors.h"

#include <string.h>
#include <strings.h>

#include "runtime/req.h"

#define ALLOWED_HEADERS "Authorization, Content-Type, X-Request-ID, Idempotency-Key, If-Match"
#define EXPOSED_HEADERS                                                                     \
    "ETag, Location, X-Request-ID, Idempotent-Replayed, Retry-After, X-RateLimit-Limit, "   \
    "X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit-Policy, RateLimit, Link, "         \
    "WWW-Authenticate"
#define MAX_AGE_S "600"

static cors_origin_fn *origin_allowed;

void cors_init(cors_origin_fn *allowed)
{
    origin_allowed = allowed;
}

/* A serialized origin (RFC 6454 §6.2): http or https, a host, an optional port, no path. */
static bool is_origin(const char *o)
{
    const char *host;
    if (strncmp(o, "https://", 8) == 0)
        host = o + 8;
    else if (strncmp(o, "http://", 7) == 0)
        host = o + 7;
    else
        return false;
    if (!*host || strlen(o) > 255)
        return false;
    for (const char *p = host; *p; p++)
        if (strchr("/?#@ \\", *p) || (unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return false;
    return true;
}

/* Whether an answer without a token may be read by the origins of any client: the OAuth
 * endpoints (x-oauth-errors: token, refresh, revoke), public reads that are no pages (the
 * metadata, the OpenAPI document, health), and a refused token (401), which the app must
 * see to sign in again. Not the other public operations: a login's first-party tokens are
 * not for a third-party page. */
static bool open_to_any_client(const struct req *r)
{
    const struct op *op = req_routed_op(r);
    if (r->status == 401)
        return true;
    if (!op)
        return false;
    bool read = strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0;
    return op->oauth_errors || (read && op->is_public && !op->page);
}

/* Whether the request's origin may read answers to it. */
static bool allowed_for(const struct req *r)
{
    if (!r->origin || !origin_allowed || !is_origin(r->origin))
        return false;
    if (r->principal.authenticated) {
        if (!r->principal.client_id)
            return false; /* a first-party token */
        return origin_allowed(r->origin, r->principal.client_id);
    }
    return open_to_any_client(r) && origin_allowed(r->origin, NULL);
}

/* A preflight: no token, and nothing is answered but the methods and headers allowed. */
static bool preflight_allowed(const struct req *r)
{
    return r->origin && origin_allowed && is_origin(r->origin) &&
           origin_allowed(r->origin, NULL);
}

bool cors_is_preflight(const struct req *r)
{
    return r->origin && strcmp(r->method, "OPTIONS") == 0 &&
           req_header(r, "Access-Control-Request-Method") != NULL;
}

/* Whether name (length n) is one of list's comma-separated items, case-insensitively. */
static bool listed(const char *list, const char *name, size_t n)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        while (len && p[len - 1] == ' ')
            len--;
        if (len == n && strncasecmp(p, name, n) == 0)
            return true;
        p += strcspn(p, ",");
    }
    return false;
}

void cors_preflight(struct req *r, const char *methods)
{
    const char *method = req_header(r, "Access-Control-Request-Method");
    const char *headers = req_header(r, "Access-Control-Request-Headers");
    req_set_header(r, "Vary", "Origin, Access-Control-Request-Method, "
                              "Access-Control-Request-Headers");
    if (!preflight_allowed(r)) {
        req_problem(r, 403, "origin_not_allowed",
                    "The origin %.200s is not registered with any OAuth client "
                    "(allowed_origins).", r->origin);
        return;
    }
    if (!listed(methods, method, strlen(method))) {
        req_problem(r, 403, "origin_not_allowed", "%.20s is not allowed on %.200s; allowed: %s.",
                    method, r->path, methods);
        return;
    }
    for (const char *p = headers ? headers : ""; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (n && !listed(ALLOWED_HEADERS, p, n)) {
            req_problem(r, 403, "origin_not_allowed",
                        "The request header %.*s is not allowed; allowed: " ALLOWED_HEADERS ".",
                        (int)(n > 64 ? 64 : n), p);
            return;
        }
        p += n;
    }
    r->status = 204;
    r->problem = false;
    req_set_header(r, "Access-Control-Allow-Origin", r->origin);
    req_set_header(r, "Access-Control-Allow-Methods", methods);
    req_set_header(r, "Access-Control-Allow-Headers", ALLOWED_HEADERS);
    req_set_header(r, "Access-Control-Max-Age", MAX_AGE_S);
}

void cors_answer(struct req *r)
{
    if (!origin_allowed || cors_is_preflight(r))
        return;
    /* Whether the answer names an origin depends on Origin, also when there is none. */
    req_set_header(r, "Vary", "Origin");
    if (!allowed_for(r))
        return;
    req_set_header(r, "Access-Control-Allow-Origin", r->origin);
    req_set_header(r, "Access-Control-Expose-Headers", EXPOSED_HEADERS);
}
