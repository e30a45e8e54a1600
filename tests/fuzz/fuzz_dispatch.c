/* libFuzzer: every generated dispatcher up to its handler (generated/<api>_dispatch.c): parameter
 * parsing and validation, JSON body parsing, schema validation with JSON Pointers, decoding
 * into the typed request. Input: bytes 0 and 1 pick the operation (big-endian, modulo the
 * number of routes: one byte would reach only the first 256), then text up to the first '\n'
 * is the value of every path/query/header/cookie parameter (absent when empty), the rest is
 * the body. The handlers are stubs that fail (tests/fuzz/stubs.py), so nothing reaches a
 * database. Properties: never crashes; a refusal is a 4xx problem with its errors capped. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "generated/routes.h"
#include "runtime/req.h"
#include "tests/fuzz/fuzz_req.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int ready;
    if (!ready) {
        char err[256];
        if (routes_init(err, sizeof err) != 0)
            abort();
        ready = 1;
    }
    if (size < 2 || routes_count == 0)
        return 0;
    const struct op *op = &routes_ops[((size_t)data[0] << 8 | data[1]) % routes_count];
    const unsigned char *rest = data + 2, *nl = memchr(rest, '\n', size - 2);
    size_t plen = nl ? (size_t)(nl - rest) : 0;
    const unsigned char *body = nl ? nl + 1 : rest;
    size_t blen = size - 2 - (nl ? plen + 1 : 0);

    struct req *r = calloc(1, sizeof *r);
    if (!r)
        return 0;
    arena_init(&r->arena);
    verr_init(&r->verr, &r->arena);
    r->op = op;
    r->method = op->method;
    r->path = op->path;
    r->request_id = "req_fuzz";
    char *p = arena_strndup(&r->arena, (const char *)rest, plen);
    fuzz_req_set_param(plen ? p : NULL);
    /* every path parameter of the template gets the value too */
    for (const char *t = op->path; (t = strchr(t, '{')) && r->match.n_params < ROUTE_MAX_PARAMS;
         t++) {
        const char *end = strchr(t, '}');
        if (!end)
            break;
        r->match.names[r->match.n_params] = arena_strndup(&r->arena, t + 1, (size_t)(end - t - 1));
        r->match.values[r->match.n_params++] = p;
    }
    r->match.op = op;
    if (op->has_body && blen > 0) {
        r->body = arena_strndup(&r->arena, (const char *)body, blen);
        r->body_len = blen;
    }
    int rc = op->dispatch(r);
    if (rc == 0 && !r->handler_ran) {
        /* answered without the handler: a refusal (or 501 for a planned operation), as a
         * problem document with its error list capped (the stubs always fail; the small
         * spec's handlers of fuzz_small.c may answer) */
        bool refused = r->problem && r->status >= 400 && r->status < 500;
        bool planned = op->planned && r->problem && r->status == 501;
        if (!(refused || planned) || r->verr.count > VERR_MAX)
            abort();
    }
    free(r->resp_body);
    arena_release(&r->arena);
    free(r);
    return 0;
}
