/* The meta API: the bundled OpenAPI document, the HTML reference rendered from it and the
 * liveness/readiness probe. All public and cheap; none reveals anything about a workspace's
 * data. */
#include "generated/meta_api.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "generated/docs_html.h"
#include "generated/openapi_json.h"
#include "runtime/log.h"
#include "runtime/storage.h"

int meta_get_openapi(struct req *r, const struct meta_get_openapi_request *in,
                     struct meta_get_openapi_response *out)
{
    (void)in;
    (void)out;
    /* The document is already JSON: send its bytes as they are rather than parse and
     * re-encode 100 KiB per request. libmicrohttpd frees what it is given, hence the copy. */
    char *copy = malloc(openapi_json_len + 1);
    if (!copy)
        return -1;
    memcpy(copy, openapi_json, openapi_json_len + 1);
    req_set_json(r, 200, copy, openapi_json_len);
    return 0;
}

int meta_get_health(struct req *r, const struct meta_get_health_request *in,
                    struct meta_get_health_response *out)
{
    (void)in;
    struct db_stmt *st = storage_prepare("SELECT 1");
    int rc = st ? db_step(st) : DB_ERR;
    if (st)
        db_reset(st);
    if (rc != DB_ROW) {
        log_error("health: the database did not answer SELECT 1 (code %d)", rc);
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return 0;
    }
    static struct health ok = {.status = "ok", .database = "ok"};
    out->status = 200;
    out->body_200 = &ok;
    return 0;
}

/* RFC 9110 §13.1.2: If-None-Match is "*" or a comma-separated list of entity tags, compared
 * weakly (a W/ prefix does not matter). True when it names the page's tag. */
static bool none_match_hits(const char *list, const char *etag)
{
    size_t tag_len = strlen(etag);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end - start >= 2 && start[0] == 'W' && start[1] == '/')
            start += 2;
        size_t n = (size_t)(end - start);
        if ((n == 1 && *start == '*') || (n == tag_len && memcmp(start, etag, n) == 0))
            return true;
    }
    return false;
}

int meta_get_docs(struct req *r, const struct meta_get_docs_request *in,
                  struct meta_get_docs_response *out)
{
    (void)r;
    out->etag = docs_html_etag;
    out->cache_control = "private, max-age=3600";
    if (in->has_if_none_match && none_match_hits(in->if_none_match, docs_html_etag)) {
        out->status = 304;
        return 0;
    }
    out->status = 200;
    out->body_200 = docs_html;
    out->content_security_policy = docs_html_csp;
    return 0;
}
