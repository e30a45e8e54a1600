/* Handlers of the small spec's exports API (non-JSON media types), for test_small.c: they
 * record the negotiated type and the raw body they were given, and answer what the test asks
 * for in small_exports. */
#include "generated/exports_api.h"

#include <string.h>

#include "tests/codegen/small/handlers.h"

struct small_exports small_exports;

int exports_get_report(struct req *r, const struct exports_get_report_request *in,
                       struct exports_get_report_response *out)
{
    small_exports.accept = in->accept;
    small_exports.called++;
    out->status = 200;
    out->x_count = 1;
    out->has_x_count = true;
    if (in->accept == MEDIA_JSON) {
        out->body_200 = arena_alloc(&r->arena, sizeof *out->body_200);
        out->body_200->rows = 1;
    } else if (small_exports.answer) { /* the test's own bytes (a wrong answer) */
        out->raw_200 = small_exports.answer;
        out->raw_200_len = strlen(small_exports.answer);
    } else if (in->accept == MEDIA_CSV) {
        out->raw_200 = "rows\r\n1\r\n";
        out->raw_200_len = 9;
    } else if (in->accept == MEDIA_PDF) {
        out->raw_200 = "%PDF-1.7\n\0binary"; /* a NUL inside: the length counts */
        out->raw_200_len = 16;
    }
    return 0;
}

int exports_get_statement(struct req *r, const struct exports_get_statement_request *in,
                          struct exports_get_statement_response *out)
{
    (void)r;
    small_exports.accept = in->accept;
    small_exports.called++;
    out->status = 200;
    out->raw_200 = small_exports.answer ? small_exports.answer : ":20:STMT\r\n";
    out->raw_200_len = strlen(out->raw_200);
    return 0;
}

int exports_import_statement(struct req *r, const struct exports_import_statement_request *in,
                             struct exports_import_statement_response *out)
{
    small_exports.body = in->body;
    small_exports.body_len = in->body_len;
    small_exports.body_media = in->body_media;
    small_exports.called++;
    out->status = 201;
    out->body_201 = arena_alloc(&r->arena, sizeof *out->body_201);
    out->body_201->rows = (int64_t)in->body_len;
    return 0;
}
