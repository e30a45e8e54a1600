/* CORS (the Fetch standard's CORS protocol) for browser apps, the public OAuth clients among
 * them: a browser lets a page of another origin read an answer only when the answer names that
 * origin in Access-Control-Allow-Origin, and asks first (a preflight OPTIONS) before any
 * request that is not "simple" (a bearer token, a JSON body).
 *
 * Which origins: the web origins each OAuth client registered (allowed_origins). A preflight
 * from any of them is answered (it reveals nothing but the methods and headers allowed). An
 * answer to a request made with an OAuth client's token is readable by that client's origins
 * only; without a token, only the OAuth endpoints' answers (token, refresh, revoke), public
 * reads that are no pages (the metadata) and a 401 are readable, by the origins of any client;
 * a login's is not. First-party tokens (a login's) get none: first-party apps are served from
 * the API's own origin or from a server. The origin itself is echoed, never "*",
 * and no Access-Control-Allow-Credentials: the API authenticates with the Authorization
 * header, never with cookies. Which origins are registered is the accounts API's business: it
 * hands its check to cors_init (the runtime knows no API). */
#ifndef RUNTIME_CORS_H
#define RUNTIME_CORS_H

#include <stdbool.h>

struct req;

/* Whether origin (a serialized origin: scheme://host[:port]) is registered with the OAuth
 * client client_id, or with any client when client_id is NULL. */
typedef bool cors_origin_fn(const char *origin, const char *client_id);

void cors_init(cors_origin_fn *allowed);

/* Whether the request is a preflight: OPTIONS with Origin and Access-Control-Request-Method. */
bool cors_is_preflight(const struct req *r);
/* Answers a preflight on r: 204 with the allowed methods (methods: the path's, as in Allow)
 * and headers, or 403 origin_not_allowed naming what is not allowed. */
void cors_preflight(struct req *r, const char *methods);
/* Adds the CORS response headers to r's answer when its Origin may read it (call once the
 * answer and the principal are settled; nothing without an Origin). */
void cors_answer(struct req *r);

#endif
