/* Request accessors and response builders shared by the server, the generated dispatchers and
 * the handlers. The accessors that read libmicrohttpd's connection (headers, query, cookies)
 * are in runtime/req_mhd.c, so this file links without it (fuzz targets). */
#include "runtime/req.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/log.h"
#include "runtime/problem.h"

const struct op *req_routed_op(const struct req *r)
{
    return r->op ? r->op : r->route_result == ROUTE_FOUND ? r->match.op : NULL;
}

const char *req_path_param(const struct req *r, const char *name)
{
    for (int i = 0; i < r->match.n_params; i++)
        if (strcmp(r->match.names[i], name) == 0)
            return r->match.values[i];
    return NULL;
}

const char *req_response_header(const struct req *r, const char *name)
{
    for (int i = 0; i < r->n_resp_headers; i++)
        if (strcasecmp(r->resp_headers[i].name, name) == 0)
            return r->resp_headers[i].value;
    return NULL;
}

void req_set_header(struct req *r, const char *name, const char *value)
{
    for (int i = 0; i < r->n_resp_headers; i++) {
        if (strcasecmp(r->resp_headers[i].name, name) == 0) {
            r->resp_headers[i].value = arena_strdup(&r->arena, value);
            return;
        }
    }
    if (r->n_resp_headers == REQ_MAX_HEADERS)
        abort(); /* a programming error: the list of headers we send is fixed and short */
    r->resp_headers[r->n_resp_headers].name = arena_strdup(&r->arena, name);
    r->resp_headers[r->n_resp_headers].value = arena_strdup(&r->arena, value);
    r->n_resp_headers++;
}

void req_set_json(struct req *r, int status, char *body, size_t len)
{
    free(r->resp_body);
    r->status = status;
    r->resp_body = body;
    r->resp_len = len;
    r->content_type = "application/json";
    r->problem = false;
}

int req_set_html(struct req *r, int status, const char *document)
{
    char *copy = strdup(document);
    if (!copy)
        return -1;
    req_set_json(r, status, copy, strlen(copy));
    r->content_type = REQ_HTML;
    return 0;
}

int req_set_body(struct req *r, int status, const char *content_type, const char *body,
                 size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, body, len);
    copy[len] = '\0';
    req_set_json(r, status, copy, len);
    r->content_type = content_type;
    return 0;
}

static void drop_header(struct req *r, const char *name)
{
    for (int i = 0; i < r->n_resp_headers; i++)
        if (strcasecmp(r->resp_headers[i].name, name) == 0) {
            r->resp_headers[i] = r->resp_headers[--r->n_resp_headers];
            return;
        }
}

void req_problem(struct req *r, int status, const char *code, const char *fmt, ...)
{
    /* A handler's caching and page policy described its success (GET /docs sets both), not
     * this problem: the runtime's defaults (no-store, the problem's own policy) apply. */
    drop_header(r, "Cache-Control");
    drop_header(r, "Content-Security-Policy");
#ifdef TREASURY_CHECK_RESPONSES
    if (!problem_declared(code)) {
        /* The spec's x-problem-codes is the list clients read: a code outside it is a bug the
         * tests must see (the generator catches the literal ones before this). */
        log_error("problem code %s is not declared in the spec's x-problem-codes", code);
        abort();
    }
#endif
    va_list ap;
    va_start(ap, fmt);
    r->problem_detail = arena_vprintf(&r->arena, fmt, ap);
    va_end(ap);
    free(r->resp_body);
    r->resp_body = NULL;
    r->resp_len = 0;
    r->status = status;
    r->problem = true;
    r->problem_code = code;
    r->with_errors = false;
    r->problem_member = r->problem_member_json = NULL;
    r->content_type = "application/problem+json";
}

void req_problem_member(struct req *r, const char *name, const char *json)
{
    r->problem_member = arena_strdup(&r->arena, name);
    r->problem_member_json = arena_strdup(&r->arena, json);
}

void req_problem_clear(struct req *r)
{
    r->status = 0;
    r->problem = false;
    r->problem_code = NULL;
    r->problem_detail = NULL;
    r->problem_member = r->problem_member_json = NULL;
    r->with_errors = false;
    r->content_type = NULL;
    r->verr.count = 0;
    r->verr.truncated = false;
}

void req_problem_validation(struct req *r, int status, const char *detail)
{
    req_problem(r, status ? status : 422, "validation_failed", "%s", detail);
    r->with_errors = true;
}

char *req_etag(struct req *r, int64_t version)
{
    return arena_printf(&r->arena, "\"v%" PRId64 "\"", version);
}

bool req_if_match(const char *if_match, int64_t version)
{
    if (if_match && strcmp(if_match, "*") == 0)
        return true; /* RFC 9110 §13.1.1: any current representation */
    char want[32];
    snprintf(want, sizeof want, "\"v%" PRId64 "\"", version);
    return if_match && strcmp(if_match, want) == 0;
}

void req_precondition_failed(struct req *r, const char *if_match, int64_t version)
{
    req_problem(r, 412, "precondition_failed",
                "If-Match %s does not match the current version \"v%" PRId64 "\".", if_match,
                version);
}
