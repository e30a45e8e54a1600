/* RFC 6749 §5.2 error bodies. Which code a refusal gets:
 *
 * - A code RFC 6749 §5.2 (or RFC 7009 §2.2.1, token revocation) defines for these endpoints
 *   is kept: the handlers raise invalid_request, invalid_client, invalid_grant,
 *   unsupported_grant_type and invalid_scope themselves.
 * - Any other 4xx is invalid_request, which §5.2 defines as a request that "is missing a
 *   required parameter, includes an unsupported parameter value (other than grant type),
 *   repeats a parameter, ... or is otherwise malformed": plain HTTP, a body that is not JSON or
 *   not a well-formed form, a body too large (413), a media type other than JSON or a form
 *   (415), a parameter breaking the schema (422) are all malformed requests.
 * - 5xx and 429: §5.2 has no code for a server that cannot answer, because at the token
 *   endpoint the HTTP status says so; but a client library still reads `error`. §4.1.2.1 names
 *   both conditions for the authorization endpoint, where no status reaches the client:
 *   temporarily_unavailable, "currently unable to handle the request due to a temporary
 *   overloading or maintenance of the server", for 503 (shutting down, database busy) and
 *   429 (the quota is spent: the request itself is fine and works again after Retry-After;
 *   invalid_request would tell the client to change it), and server_error, "encountered an
 *   unexpected condition that prevented it from fulfilling the request", for every other 5xx.
 *
 * The status and the headers (Retry-After, the rate-limit headers, WWW-Authenticate) are the
 * problem's own; only the body and its media type change. */
#include "runtime/oauth_error.h"

#include <stdbool.h>
#include <string.h>

#include "runtime/jsonw.h"

static const char *const oauth_codes[] = {
    "invalid_request",       "invalid_client", "invalid_grant", "unauthorized_client",
    "unsupported_grant_type", "invalid_scope",  "unsupported_token_type",
};

const char *oauth_error_code(const char *problem_code, int status)
{
    for (size_t i = 0; problem_code && i < sizeof oauth_codes / sizeof oauth_codes[0]; i++)
        if (strcmp(problem_code, oauth_codes[i]) == 0)
            return oauth_codes[i];
    if (status == 429 || status == 503)
        return "temporarily_unavailable";
    if (status >= 500)
        return "server_error";
    return "invalid_request";
}

/* Appends s to out (n bytes used of OAUTH_ERROR_DESCRIPTION_MAX) with the characters §5.2
 * forbids replaced: '"' by '\'', '\\' by '/', control characters by a space, and each
 * non-ASCII (UTF-8) character by one '?'. False once out is full. */
static bool append_clean(char *out, size_t *n, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c >= 0x80 && (c & 0xC0) == 0x80)
            continue; /* a continuation byte: its character was written as '?' */
        if (*n >= OAUTH_ERROR_DESCRIPTION_MAX)
            return false;
        out[(*n)++] = c == '"'               ? '\''
                      : c == '\\'            ? '/'
                      : c < 0x20 || c == 0x7F ? ' '
                      : c >= 0x80            ? '?'
                                             : (char)c;
    }
    return true;
}

char *oauth_error_render(int status, const char *problem_code, const char *detail,
                         const struct verr_list *errors, size_t *len)
{
    const char *error = oauth_error_code(problem_code, status);
    char desc[OAUTH_ERROR_DESCRIPTION_MAX + 1];
    size_t n = 0;
    bool room = append_clean(desc, &n, detail && *detail ? detail : error);
    for (int i = 0; room && errors && i < errors->count; i++) {
        const struct verr *e = &errors->items[i];
        room = append_clean(desc, &n, i == 0 ? " " : "; ") &&
               append_clean(desc, &n, e->pointer[0] ? e->pointer : "(the body)") &&
               append_clean(desc, &n, ": ") && append_clean(desc, &n, e->detail) &&
               append_clean(desc, &n, " (") && append_clean(desc, &n, e->code) &&
               append_clean(desc, &n, ")");
    }
    if (!room)
        memcpy(desc + OAUTH_ERROR_DESCRIPTION_MAX - 3, "...", 3);
    desc[n] = '\0';
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "error");
    jsonw_string(&w, error);
    jsonw_key(&w, "error_description");
    jsonw_string(&w, desc);
    jsonw_object_end(&w);
    return jsonw_take(&w, len);
}
