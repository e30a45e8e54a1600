/* The meta API: the bundled OpenAPI document and the liveness/readiness probe. Both are public
 * and cheap; neither reveals anything about a workspace's data. */
#include "generated/meta_api.h"

#include <stdlib.h>
#include <string.h>

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
    sqlite3_stmt *st = storage_prepare("SELECT 1");
    int rc = st ? sqlite3_step(st) : SQLITE_ERROR;
    if (st)
        sqlite3_reset(st);
    if (rc != SQLITE_ROW) {
        log_error("health: the database did not answer SELECT 1 (code %d)", rc);
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return 0;
    }
    static struct health ok = {.status = "ok", .database = "ok"};
    out->status = 200;
    out->body_200 = &ok;
    return 0;
}
