/* Runs the code generated from tests/codegen/small/ on real JSON: validators (every violation
 * kind, pointers and codes), decoders (defaults, nested types), encoders, the route matcher,
 * the scope table and the dispatchers (params, bodies, responses, response checks). The req
 * accessors are test doubles here, so no libmicrohttpd is needed. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "generated/dispatch.h"
#include "generated/exports_api.h"
#include "generated/misc_api.h"
#include "generated/patterns.h"
#include "generated/routes.h"
#include "generated/schemas.h"
#include "generated/scopes.h"
#include "generated/things_api.h"
#include "runtime/audit.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/outbox.h"
#include "runtime/pattern.h"
#include "runtime/req.h"
#include "tests/codegen/small/handlers.h"
#include "tests/unit/unit.h"

/* ---- test doubles for runtime/req.c and runtime/log.c ---------------------------------- */

#define MAX_FAKE 12

static struct {
    const char *query_names[MAX_FAKE], *query_values[MAX_FAKE];
    const char *header_names[MAX_FAKE], *header_values[MAX_FAKE];
    const char *cookie_names[MAX_FAKE], *cookie_values[MAX_FAKE];
    int n_query, n_header, n_cookie;
    int errors_logged;
} fake;

const char *req_header(const struct req *r, const char *name)
{
    (void)r;
    for (int i = 0; i < fake.n_header; i++)
        if (strcasecmp(fake.header_names[i], name) == 0)
            return fake.header_values[i];
    return NULL;
}

const char *req_query(const struct req *r, const char *name)
{
    (void)r;
    for (int i = 0; i < fake.n_query; i++)
        if (strcmp(fake.query_names[i], name) == 0)
            return fake.query_values[i];
    return NULL;
}

size_t req_query_values(const struct req *r, const char *name, const char **out, size_t max)
{
    size_t n = 0;
    (void)r;
    for (int i = 0; i < fake.n_query; i++)
        if (strcmp(fake.query_names[i], name) == 0) {
            if (n < max)
                out[n] = fake.query_values[i];
            n++;
        }
    return n;
}

const char *req_cookie(const struct req *r, const char *name)
{
    (void)r;
    for (int i = 0; i < fake.n_cookie; i++)
        if (strcmp(fake.cookie_names[i], name) == 0)
            return fake.cookie_values[i];
    return NULL;
}

const char *req_path_param(const struct req *r, const char *name)
{
    for (int i = 0; i < r->match.n_params; i++)
        if (strcmp(r->match.names[i], name) == 0)
            return r->match.values[i];
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
        abort();
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
    req_set_json(r, status, strdup(document), strlen(document));
    r->content_type = REQ_HTML;
    return 0;
}

int req_set_body(struct req *r, int status, const char *content_type, const char *body,
                 size_t len)
{
    char *copy = malloc(len + 1);
    memcpy(copy, body, len);
    copy[len] = '\0';
    req_set_json(r, status, copy, len);
    r->content_type = content_type;
    return 0;
}

void req_problem(struct req *r, int status, const char *code, const char *fmt, ...)
{
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
    r->content_type = "application/problem+json";
}

void req_problem_validation(struct req *r, int status, const char *detail)
{
    req_problem(r, status ? status : 422, "validation_failed", "%s", detail);
    r->with_errors = true;
}

/* ---- test doubles for runtime/audit.c and runtime/outbox.c: what the dispatcher declares */

static struct {
    int audits, events;
    const char *audit_id, *audit_fields, *event_type, *event_resource, *event_id, *event_json;
} declared;

int audit_declared_write(struct req *r, const char *resource_id, const char *after)
{
    (void)after;
    declared.audits++;
    declared.audit_id = resource_id;
    declared.audit_fields = r->audit.fields;
    r->audit.written = true;
    return 0;
}

int outbox_add(struct req *r, const char *type, const char *resource_type,
               const char *resource_id, int64_t resource_version, const char *object_json)
{
    (void)r;
    (void)resource_version;
    declared.events++;
    declared.event_type = type;
    declared.event_resource = resource_type;
    declared.event_id = resource_id;
    declared.event_json = object_json;
    return 0;
}

void log_error(const char *fmt, ...)
{
    (void)fmt;
    fake.errors_logged++;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static struct arena A;

static const struct json_value *parse(const char *text)
{
    struct json_value *v = NULL;
    struct json_error e;
    if (json_parse(&A, text, strlen(text), &v, &e) != 0) {
        fprintf(stderr, "test JSON does not parse: %s at %zu: %s\n", e.msg, e.offset, text);
        abort();
    }
    return v;
}

static bool has_error(const struct verr_list *l, const char *pointer, const char *code)
{
    for (int i = 0; i < l->count; i++)
        if (strcmp(l->items[i].pointer, pointer) == 0 && strcmp(l->items[i].code, code) == 0)
            return true;
    return false;
}

static void dump(const struct verr_list *l)
{
    for (int i = 0; i < l->count; i++)
        fprintf(stderr, "    %s %s: %s\n", l->items[i].pointer, l->items[i].code,
                l->items[i].detail);
}

#define CHECK_ERR(l, p, c)                                                                   \
    do {                                                                                     \
        if (!has_error((l), (p), (c))) {                                                     \
            fprintf(stderr, "  %s:%d: expected %s %s\n", __FILE__, __LINE__, (p), (c));      \
            dump(l);                                                                         \
            unit_failed_checks++;                                                            \
        }                                                                                    \
    } while (0)

static struct verr_list *check(void (*fn)(const struct json_value *, const char *, int,
                                          struct verr_list *),
                               const char *json, int mode)
{
    static struct verr_list l;
    verr_init(&l, &A);
    fn(parse(json), "", mode, &l);
    return &l;
}

#define VALID_THING                                                                            \
    "{\"id\":\"thg_0001\",\"name\":\"widget\",\"kind\":\"small\",\"size\":995,"              \
    "\"weight\":0.5,\"active\":false,\"level\":\"high\",\"tags\":[\"a\",\"b\"],"              \
    "\"labels\":{\"x\":\"y\"},\"dims\":{\"w\":3},\"note\":null,"                              \
    "\"created_at\":\"2025-03-14T09:26:53.589Z\",\"version\":\"v1\",\"extra\":[1,{}],"        \
    "\"blob\":{\"any\":1},\"parts\":[{\"n\":1},{\"n\":2}],\"code\":\"AB12x_y.-\","            \
    "\"formats\":{\"day\":\"2024-02-29\",\"at\":\"2025-03-14T09:26:53Z\","                    \
    "\"uuid\":\"123e4567-e89b-12d3-a456-426614174000\",\"email\":\"a@example.com\","          \
    "\"uri\":\"https://example.com/x\",\"currency\":\"EUR\",\"country\":\"DE\","              \
    "\"iban\":\"DE89370400440532013000\",\"bic\":\"COBADEFFXXX\","                            \
    "\"big\":-9223372036854775808,\"small\":-2147483648,\"ratio\":1,"                         \
    "\"rate\":\"1.0842500000\",\"delta\":\"-1.5\",\"any_decimal\":\"-0.000000000000000001\"}," \
    "\"index\":{\"a\":{\"n\":0}},\"tally\":{\"total\":3,\"extra\":9},\"default\":2"

static void setup(void)
{
    arena_release(&A);
    arena_init(&A);
}

/* ---- validators --------------------------------------------------------------------------- */

static void test_valid_thing_passes_in_both_modes(void)
{
    setup();
    struct verr_list *l = check(validate_thing, VALID_THING ",\"secret\":\"s\"}", VALIDATE_REQUEST);
    CHECK(has_error(l, "/id", "read_only"));
    CHECK(has_error(l, "/created_at", "read_only"));
    CHECK(l->count == 2);
    l = check(validate_thing, VALID_THING "}", VALIDATE_RESPONSE);
    dump(l);
    CHECK(l->count == 0);
}

static void test_request_mode_requires_write_only_but_not_read_only(void)
{
    setup();
    struct verr_list *l = check(validate_thing,
                                "{\"name\":\"a\",\"kind\":\"small\",\"size\":5,\"tags\":[\"a\"]}",
                                VALIDATE_REQUEST);
    CHECK_ERR(l, "/secret", "required");
    CHECK(!has_error(l, "/id", "required"));
    CHECK(!has_error(l, "/created_at", "required"));
    CHECK(l->count == 1);
}

static void test_response_mode_requires_read_only_and_rejects_write_only(void)
{
    setup();
    struct verr_list *l = check(validate_thing,
                                "{\"name\":\"a\",\"kind\":\"small\",\"size\":5,\"tags\":[\"a\"],"
                                "\"secret\":\"s\"}",
                                VALIDATE_RESPONSE);
    CHECK_ERR(l, "/id", "required");
    CHECK_ERR(l, "/created_at", "required");
    CHECK_ERR(l, "/secret", "write_only");
    CHECK(!has_error(l, "/secret", "required"));
}

static void test_every_violation_is_collected_with_its_pointer(void)
{
    setup();
    struct verr_list *l = check(
        validate_thing,
        "{\"name\":\"elevenchars\",\"kind\":\"huge\",\"size\":1000,\"weight\":0.25,"
        "\"active\":\"yes\",\"level\":\"mid\",\"tags\":[\"toolong\",\"b\",\"b\",\"c\"],"
        "\"labels\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"123456789\"},\"dims\":{\"x\":1},"
        "\"note\":5,\"version\":\"v2\",\"extra\":null,\"blob\":[],"
        "\"parts\":[{\"n\":1},{\"n\":1},{\"n\":10}],\"code\":\"ab12\","
        "\"formats\":{\"day\":\"2023-02-29\",\"at\":\"2025-03-14T09:26:53\",\"uuid\":\"x\","
        "\"email\":\"nope\",\"uri\":\"no spaces\",\"currency\":\"EUX\",\"country\":\"XX\","
        "\"iban\":\"DE00370400440532013000\",\"bic\":\"COBAXXFFXXX\",\"small\":2147483648,"
        "\"ratio\":0},"
        "\"index\":{\"a\":{\"n\":10}},\"tally\":{\"total\":3,\"x\":10},\"default\":4,"
        "\"unknown\":1}",
        VALIDATE_RESPONSE);
    CHECK_ERR(l, "/name", "max_length");
    CHECK_ERR(l, "/kind", "enum");
    CHECK_ERR(l, "/size", "maximum");
    CHECK_ERR(l, "/weight", "minimum");
    CHECK_ERR(l, "/active", "type");
    CHECK_ERR(l, "/level", "enum");
    CHECK_ERR(l, "/tags", "max_items");
    CHECK_ERR(l, "/tags", "unique_items");
    CHECK_ERR(l, "/tags/0", "max_length");
    CHECK_ERR(l, "/labels", "max_properties");
    CHECK_ERR(l, "/labels/c", "max_length");
    CHECK_ERR(l, "/dims/w", "required");
    CHECK_ERR(l, "/dims/x", "additional_property");
    CHECK_ERR(l, "/note", "type");
    CHECK_ERR(l, "/version", "const");
    CHECK_ERR(l, "/blob", "type");
    CHECK_ERR(l, "/parts", "unique_items");
    CHECK_ERR(l, "/parts/2/n", "maximum");
    CHECK_ERR(l, "/code", "pattern");
    CHECK_ERR(l, "/formats/day", "format");
    CHECK_ERR(l, "/formats/at", "format");
    CHECK_ERR(l, "/formats/uuid", "format");
    CHECK_ERR(l, "/formats/email", "format");
    CHECK_ERR(l, "/formats/uri", "format");
    CHECK_ERR(l, "/formats/currency", "format");
    CHECK_ERR(l, "/formats/country", "format");
    CHECK_ERR(l, "/formats/iban", "format");
    CHECK_ERR(l, "/formats/bic", "format");
    CHECK_ERR(l, "/formats/small", "format");
    CHECK_ERR(l, "/formats/ratio", "minimum");
    CHECK_ERR(l, "/index/a/n", "maximum");
    CHECK_ERR(l, "/tally/x", "maximum");
    CHECK_ERR(l, "/default", "enum");
    CHECK_ERR(l, "/unknown", "additional_property");
    CHECK_ERR(l, "/id", "required");
    CHECK_ERR(l, "/created_at", "required");
    CHECK(!l->truncated);
}

static void test_integers_are_exact(void)
{
    setup();
    struct verr_list *l = check(validate_part, "{\"n\":1.5}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/n", "type");
    l = check(validate_part, "{\"n\":2.0}", VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_part, "{\"n\":9e0}", VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_part, "{\"n\":99999999999999999999}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/n", "maximum");
    l = check(validate_part, "{\"n\":-99999999999999999999}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/n", "minimum");
    l = check(validate_part, "{\"n\":\"1\"}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/n", "type");
    l = check(validate_formats, "{\"big\":9223372036854775807,\"small\":2147483647}",
              VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_formats, "{\"big\":9223372036854775808}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/big", "maximum");
}

static void test_multiple_of_and_exclusive_bounds(void)
{
    setup();
    struct verr_list *l = check(validate_thing_size, "7", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "multiple_of");
    l = check(validate_thing_size, "-5", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "minimum");
    l = check(validate_thing_size, "995", VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_formats_ratio, "1.0000001", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "maximum");
    l = check(validate_formats_ratio, "1e400", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "type");
}

static void test_decimals_are_parsed_and_compared_exactly(void)
{
    setup();
    static const char *const ok_rate[] = {"\"0.0000000001\"", "\"1000\"", "\"999.9999999999\"",
                                          "\"1.5\""};
    for (size_t i = 0; i < sizeof ok_rate / sizeof ok_rate[0]; i++) {
        struct verr_list *l = check(validate_formats_rate, ok_rate[i], VALIDATE_REQUEST);
        if (l->count != 0)
            dump(l);
        CHECK(l->count == 0);
    }
    struct verr_list *l = check(validate_formats_rate, "\"0\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "minimum");
    CHECK(l->count == 1);
    l = check(validate_formats_rate, "\"0.0000000000\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "minimum");
    l = check(validate_formats_rate, "\"1000.0000000001\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "maximum");
    CHECK(l->count == 1);
    l = check(validate_formats_rate, "\"-1\"", VALIDATE_REQUEST); /* no sign: bound is 0 */
    CHECK_ERR(l, "", "format");
    CHECK_ERR(l, "", "pattern");
    l = check(validate_formats_rate, "\"1.00000000001\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "format");
    l = check(validate_formats_rate, "\"1e3\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "format");
    l = check(validate_formats_rate, "1.5", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "type");
    /* delta: -1.5 <= x < 10.25, 4 significant digits, 2 places */
    l = check(validate_formats_delta, "\"-1.5\"", VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_formats_delta, "\"10.24\"", VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_formats_delta, "\"-1.51\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "minimum");
    l = check(validate_formats_delta, "\"10.25\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "maximum");
    l = check(validate_formats_delta, "\"10.250\"", VALIDATE_REQUEST); /* 3 places */
    CHECK_ERR(l, "", "format");
    l = check(validate_formats_delta, "\"1.234\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "format");
    l = check(validate_formats_delta, "\"01.5\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "format");
    CHECK(!has_error(l, "", "minimum") && !has_error(l, "", "maximum"));
    /* no bounds: the sign is allowed, the scale goes to 18 */
    l = check(validate_formats_any_decimal, "\"-123456789.123456789\"", VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_formats_any_decimal, "\"0.1234567890123456789\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "format");
}

static void test_lengths_count_code_points(void)
{
    setup();
    /* ten two-byte characters: 20 bytes but 10 code points */
    struct verr_list *l = check(validate_thing_base_name,
                                "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                                "\xc3\xa9\xc3\xa9\xc3\xa9\"",
                                VALIDATE_REQUEST);
    CHECK(l->count == 0);
    l = check(validate_thing_base_name, "\"\"", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "min_length");
}

static void test_patterns_follow_ecma_semantics(void)
{
    setup();
    CHECK(check(validate_thing_code, "\"AB12\"", VALIDATE_REQUEST)->count == 0);
    CHECK(check(validate_thing_code, "\"AB12a_Z.-9\"", VALIDATE_REQUEST)->count == 0);
    CHECK(check(validate_thing_code, "\"AB1\"", VALIDATE_REQUEST)->count == 1);
    CHECK(check(validate_thing_code, "\"AB12!\"", VALIDATE_REQUEST)->count == 1);
    CHECK(check(validate_thing_code, "\"xAB12\"", VALIDATE_REQUEST)->count == 1);
    /* unanchored: ^/v1/things/ only constrains the prefix */
    CHECK(check(validate_things_create_thing_header_location, "\"/v1/things/thg_1\"",
                VALIDATE_RESPONSE)->count == 0);
    CHECK(check(validate_things_create_thing_header_location, "\"/v2/things/\"",
                VALIDATE_RESPONSE)->count == 1);
}

static void test_one_of_dispatches_on_the_discriminator(void)
{
    setup();
    CHECK(check(validate_shape, "{\"kind\":\"circle\",\"radius\":3}", VALIDATE_REQUEST)->count == 0);
    struct verr_list *l = check(validate_shape, "{\"kind\":\"circle\",\"radius\":0}",
                                VALIDATE_REQUEST);
    CHECK_ERR(l, "/radius", "minimum");
    l = check(validate_shape, "{\"kind\":\"triangle\"}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/kind", "one_of");
    CHECK(l->count == 1 && strstr(l->items[0].detail, "circle, square") != NULL);
    l = check(validate_shape, "{\"side\":1}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/kind", "required");
    l = check(validate_shape, "{\"kind\":\"square\",\"side\":1,\"x\":1}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/x", "additional_property");
    l = check(validate_shape, "[]", VALIDATE_REQUEST);
    CHECK_ERR(l, "", "type");
}

static void test_map_and_additional_properties_values_are_validated(void)
{
    setup();
    struct verr_list *l = check(validate_part_index,
                                "{\"a\":{\"n\":1},\"b\":{},\"c\":1,\"d\":{\"n\":2},\"e\":{\"n\":3}}",
                                VALIDATE_REQUEST);
    CHECK_ERR(l, "", "max_properties");
    CHECK_ERR(l, "/b/n", "required");
    CHECK_ERR(l, "/c", "type");
    l = check(validate_tally, "{\"a/b~c\":1}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/total", "required");
    l = check(validate_tally, "{\"total\":1,\"a/b~c\":11}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/a~1b~0c", "maximum");
}

static void test_error_list_is_capped(void)
{
    setup();
    char buf[4096] = "[";
    for (int i = 0; i < 60; i++)
        strcat(buf, i ? ",\"toolong\"" : "\"toolong\"");
    strcat(buf, "]");
    struct verr_list *l = check(validate_thing_tags, buf, VALIDATE_REQUEST);
    CHECK(l->count == VERR_MAX);
    CHECK(l->truncated);
}

/* ---- decoders and encoders ---------------------------------------------------------------- */

static void test_decode_fills_typed_fields_and_applies_defaults(void)
{
    setup();
    struct thing t;
    memset(&t, 0, sizeof t);
    CHECK(decode_thing(&A, parse("{\"name\":\"n\",\"kind\":\"x-large\",\"size\":5,"
                                 "\"tags\":[\"a\",\"b\"],\"dims\":{\"w\":2},"
                                 "\"labels\":{\"k\":\"v\"},\"parts\":[{\"n\":4}],"
                                 "\"index\":{\"p\":{\"n\":7}},\"tally\":{\"total\":1,\"z\":2},"
                                 "\"note\":null,\"weight\":1.5,\"default\":3,"
                                 "\"extra\":{\"q\":[1]}}"),
                      &t) == 0);
    CHECK_STR(t.name, "n");
    CHECK(t.kind == KIND_X_LARGE);
    CHECK(t.size == 5);
    CHECK(t.tags_count == 2);
    CHECK_STR(t.tags[1], "b");
    CHECK(t.has_active && t.active == true);       /* default */
    CHECK(t.has_level && t.level == THING_LEVEL_LOW); /* enum default */
    CHECK(t.has_dims && t.dims->w == 2 && t.dims->has_h && t.dims->h == 1);
    CHECK(t.has_labels && t.labels_count == 1);
    CHECK_STR(t.labels[0].key, "k");
    CHECK_STR(t.labels[0].value, "v");
    CHECK(t.parts_count == 1 && t.parts[0].n == 4);
    CHECK(t.index_count == 1 && t.index[0].value->n == 7);
    CHECK(t.tally->total == 1 && t.tally->additional_count == 1);
    CHECK_STR(t.tally->additional[0].key, "z");
    CHECK(t.tally->additional[0].value == 2);
    CHECK(t.has_note && t.note_is_null && t.note == NULL);
    CHECK(t.has_weight && t.weight == 1.5);
    CHECK(t.default_ == 3);
    CHECK(t.has_extra && t.extra && t.extra->type == JSON_OBJECT);
    CHECK(!t.has_code && t.code == NULL);

    struct thing_create c;
    memset(&c, 0, sizeof c);
    CHECK(decode_thing_create(&A, parse("{\"name\":\"a\",\"kind\":\"small\",\"size\":0,"
                                        "\"shape\":{\"kind\":\"square\",\"side\":2.5}}"),
                              &c) == 0);
    CHECK(c.has_shape && c.shape->kind == SHAPE_KIND_SQUARE);
    CHECK(c.shape->square && c.shape->square->side == 2.5 && !c.shape->circle);
    CHECK(c.shape->square->kind == SQUARE_KIND_SQUARE);
}

static char *encode(void (*fn)(struct jsonw *, const void *), const void *in)
{
    struct jsonw w;
    size_t len = 0;
    jsonw_init(&w);
    fn(&w, in);
    char *s = jsonw_take(&w, &len);
    jsonw_release(&w);
    char *copy = arena_strdup(&A, s);
    free(s);
    return copy;
}

static void enc_thing(struct jsonw *w, const void *p)
{
    encode_thing(w, p);
}

static void enc_shape(struct jsonw *w, const void *p)
{
    encode_shape(w, p);
}

static void test_encode_omits_absent_optional_and_write_only_fields(void)
{
    setup();
    struct thing t;
    const char *tags[] = { "a" };
    memset(&t, 0, sizeof t);
    t.id = "thg_0001";
    t.name = "w";
    t.kind = KIND_SMALL;
    t.size = 5;
    t.tags = tags;
    t.tags_count = 1;
    t.created_at = "2025-03-14T09:26:53.589Z";
    t.secret = "hunter2";
    t.note_is_null = true;   /* present as null even without has_note */
    t.code = "AB12";         /* a non-NULL pointer is present */
    t.weight = 2.5;          /* has_weight false: omitted */
    CHECK_STR(encode(enc_thing, &t),
              "{\"name\":\"w\",\"kind\":\"small\",\"id\":\"thg_0001\",\"size\":5,"
              "\"tags\":[\"a\"],\"note\":null,\"created_at\":\"2025-03-14T09:26:53.589Z\","
              "\"code\":\"AB12\"}");
}

static void test_decode_then_encode_round_trips(void)
{
    setup();
    const char *text =
        "{\"name\":\"widget\",\"kind\":\"small\",\"id\":\"thg_0001\",\"size\":995,\"weight\":0.5,"
        "\"active\":false,\"level\":\"high\",\"tags\":[\"a\",\"b\"],\"labels\":{\"x\":\"y\"},"
        "\"dims\":{\"w\":3,\"h\":1},\"note\":null,\"created_at\":\"2025-03-14T09:26:53.589Z\","
        "\"version\":\"v1\",\"extra\":[1,{}],\"blob\":{\"any\":1},\"parts\":[{\"n\":1}],"
        "\"code\":\"AB12x\",\"index\":{\"a\":{\"n\":0}},\"tally\":{\"total\":3,\"extra\":9},"
        "\"default\":2}";
    struct thing t;
    memset(&t, 0, sizeof t);
    CHECK(decode_thing(&A, parse(text), &t) == 0);
    CHECK_STR(encode(enc_thing, &t), text);

    struct shape s;
    memset(&s, 0, sizeof s);
    CHECK(decode_shape(&A, parse("{\"kind\":\"circle\",\"radius\":3}"), &s) == 0);
    CHECK(s.kind == SHAPE_KIND_CIRCLE);
    CHECK_STR(encode(enc_shape, &s), "{\"kind\":\"circle\",\"radius\":3}");
    s.kind = 0;
    CHECK_STR(encode(enc_shape, &s), "null");
}

static void test_arrays_of_arrays_and_maps_of_arrays(void)
{
    setup();
    const char *text =
        "{\"name\":\"grid\",\"kind\":\"small\",\"id\":\"thg_0001\",\"size\":5,\"tags\":[\"a\"],"
        "\"created_at\":\"2025-03-14T09:26:53.589Z\","
        "\"grid\":[[1,2],[3],[9,0]],\"cube\":[[[{\"n\":1}],[]],[[{\"n\":2},{\"n\":3}]]],"
        "\"groups\":{\"a\":[\"x\",\"y\"],\"b\":[]}}";
    struct verr_list *l = check(validate_thing, text, VALIDATE_RESPONSE);
    if (l->count)
        dump(l);
    CHECK(l->count == 0);
    struct thing t;
    memset(&t, 0, sizeof t);
    CHECK(decode_thing(&A, parse(text), &t) == 0);
    CHECK(t.has_grid && t.grid_count == 3);
    CHECK(t.grid[0].count == 2 && t.grid[0].items[0] == 1 && t.grid[0].items[1] == 2);
    CHECK(t.grid[1].count == 1 && t.grid[1].items[0] == 3);
    CHECK(t.grid[2].count == 2 && t.grid[2].items[0] == 9 && t.grid[2].items[1] == 0);
    CHECK(t.cube_count == 2 && t.cube[0].count == 2 && t.cube[0].items[0].count == 1);
    CHECK(t.cube[0].items[0].items[0].n == 1 && t.cube[0].items[1].count == 0);
    CHECK(t.cube[1].items[0].count == 2 && t.cube[1].items[0].items[1].n == 3);
    CHECK(t.groups_count == 2);
    CHECK_STR(t.groups[0].key, "a");
    CHECK(t.groups[0].value.count == 2);
    CHECK_STR(t.groups[0].value.items[1], "y");
    CHECK(t.groups[1].value.count == 0);
    const char *out = encode(enc_thing, &t);
    CHECK(strstr(out, "\"grid\":[[1,2],[3],[9,0]]") != NULL);
    CHECK(strstr(out, "\"cube\":[[[{\"n\":1}],[]],[[{\"n\":2},{\"n\":3}]]]") != NULL);
    CHECK(strstr(out, "\"groups\":{\"a\":[\"x\",\"y\"],\"b\":[]}") != NULL);

    /* a handler builds one by hand */
    static int64_t row[] = {4, 5};
    struct thing_grid_item rows[] = {{row, 2}, {row + 1, 1}};
    t.grid = rows;
    t.grid_count = 2;
    CHECK(strstr(encode(enc_thing, &t), "\"grid\":[[4,5],[5]]") != NULL);

    /* every level validated, with its indexes in the pointer */
    l = check(validate_thing,
              "{\"grid\":[[1,10],[],[1,2,3],[1]],"
              "\"cube\":[[[{\"n\":1}]],[[{\"n\":1}]],[[{\"n\":10}]]],"
              "\"groups\":{\"a\":[\"toolong\",\"x\",\"y\"],\"b\":\"x\",\"c\":[1]}}",
              VALIDATE_REQUEST);
    CHECK_ERR(l, "/grid", "max_items");
    CHECK_ERR(l, "/grid/0/1", "maximum");
    CHECK_ERR(l, "/grid/1", "min_items");
    CHECK_ERR(l, "/grid/2", "max_items");
    CHECK_ERR(l, "/cube", "max_items");
    CHECK_ERR(l, "/cube", "unique_items");
    CHECK_ERR(l, "/cube/2/0/0/n", "maximum");
    CHECK_ERR(l, "/groups/a", "max_items");
    CHECK_ERR(l, "/groups/a/0", "max_length");
    CHECK_ERR(l, "/groups/b", "type");
    CHECK_ERR(l, "/groups/c/0", "type");
    l = check(validate_thing, "{\"grid\":[1,[2]]}", VALIDATE_REQUEST);
    CHECK_ERR(l, "/grid/0", "type");
}

static void test_enum_str_and_parse(void)
{
    CHECK_STR(kind_str(KIND_X_LARGE), "x-large");
    CHECK(kind_parse("large") == KIND_LARGE);
    CHECK(kind_parse("LARGE") == 0);
    CHECK(kind_parse(NULL) == 0);
    CHECK(kind_str((enum kind)0) == NULL);
}

/* An enum that is a filter set (items of an array query parameter) gets <enum>_set(): the
 * values in the enum's order, each once, whatever the client's order. */
static void test_enum_filter_set_is_canonical(void)
{
    struct arena a;
    arena_init(&a);
    const enum kind picked[] = { KIND_X_LARGE, KIND_SMALL, KIND_X_LARGE };
    const enum kind every[] = { KIND_LARGE, KIND_X_LARGE, KIND_SMALL };
    CHECK_STR(kind_set(&a, picked, 3), ",small,x-large,");
    CHECK_STR(kind_set(&a, every, 3), ",small,large,x-large,");
    CHECK(kind_set(&a, picked, 0) == NULL);
    arena_release(&a);
}

/* ---- routes and scopes ------------------------------------------------------------------- */

static enum route_result route(const char *method, const char *path, struct route_match *m,
                               char *allow)
{
    return routes_match(&A, method, path, m, allow, 128);
}

static void test_routes_prefer_literal_segments_and_capture_params(void)
{
    setup();
    struct route_match m;
    char allow[128];
    CHECK(route("GET", "/v1/things/search", &m, allow) == ROUTE_FOUND);
    CHECK_STR(m.op->operation_id, "searchThings");
    CHECK(m.n_params == 0);
    CHECK(route("GET", "/v1/things/thg_0001", &m, allow) == ROUTE_FOUND);
    CHECK_STR(m.op->operation_id, "getThing");
    CHECK(m.n_params == 1);
    CHECK_STR(m.names[0], "id");
    CHECK_STR(m.values[0], "thg_0001");
    CHECK(route("POST", "/v1/things/thg_0001/shapes", &m, allow) == ROUTE_FOUND);
    CHECK_STR(m.op->operation_id, "addShape");
    CHECK_STR(req_path_param(&(struct req){ .match = m }, "id"), "thg_0001");
    CHECK(route("GET", "/healthz", &m, allow) == ROUTE_FOUND);
    CHECK_STR(m.op->base, "");
}

static void test_routes_answer_405_with_allow_and_404_otherwise(void)
{
    setup();
    struct route_match m;
    char allow[128];
    CHECK(route("PATCH", "/v1/things", &m, allow) == ROUTE_METHOD_NOT_ALLOWED);
    CHECK_STR(allow, "GET, POST");
    CHECK(route("HEAD", "/v1/things/thg_0001", &m, allow) == ROUTE_METHOD_NOT_ALLOWED);
    CHECK_STR(allow, "GET, PUT, DELETE");
    CHECK(route("GET", "/v1/things/", &m, allow) == ROUTE_NOT_FOUND);
    CHECK(route("GET", "/v1/things//shapes", &m, allow) == ROUTE_NOT_FOUND);
    CHECK(route("GET", "/v1/healthz", &m, allow) == ROUTE_NOT_FOUND);
    CHECK(route("GET", "/things", &m, allow) == ROUTE_NOT_FOUND);
    CHECK(route("GET", "", &m, allow) == ROUTE_NOT_FOUND);
    CHECK(route("GET", "/v1/a/b/c/d/e/f/g/h/i", &m, allow) == ROUTE_NOT_FOUND);
}

static const struct op *op_named(const char *id)
{
    for (size_t i = 0; i < routes_count; i++)
        if (strcmp(routes_ops[i].operation_id, id) == 0)
            return &routes_ops[i];
    return NULL;
}

static void test_operation_descriptors_carry_spec_and_defaults(void)
{
    const struct op *o = op_named("createThing");
    CHECK(o && o->scopes == (SCOPE_THINGS_WRITE | SCOPE_THINGS_READ));
    CHECK_STR(o->scopes_text, "things:write things:read");
    /* x-idempotent: false (its 409 is a typed body); a POST is idempotent by default */
    CHECK(!o->idempotent && o->has_body && o->body_required && o->max_body_bytes == 65536);
    CHECK(op_named("addShape") && op_named("addShape")->idempotent);
    CHECK_STR(o->rate_limit_class, "default");
    CHECK(o->statuses[0] == 201 && o->statuses[1] == 400 && o->statuses[2] == 403 &&
          o->statuses[3] == 409 && o->statuses[4] == 413 && o->statuses[5] == 422 &&
          o->statuses[6] == 500 && o->statuses[7] == 0);
    o = op_named("replaceThing");
    CHECK(o && !o->idempotent && o->max_body_bytes == 1024);
    CHECK_STR(o->rate_limit_class, "bulk");
    o = op_named("listThings");
    CHECK(o && !o->idempotent && !o->has_body && o->max_body_bytes == 0 && !o->is_public);
    o = op_named("getHealth");
    CHECK(o && o->is_public && o->scopes == 0);
    CHECK_STR(o->scopes_text, "");
    o = op_named("addShape");
    CHECK(o && o->has_body && !o->body_required);
    CHECK(op_named("searchThings")->planned);
    o = op_named("getReport");
    CHECK(o && o->negotiated && o->raw_body_media == 0 && !o->has_body);
    CHECK(!op_named("listThings")->negotiated);
    o = op_named("importStatement");
    CHECK(o && !o->negotiated && o->has_body && o->max_body_bytes == 4096);
    CHECK(o->raw_body_media == (MEDIA_BIT(MEDIA_XML) | MEDIA_BIT(MEDIA_TEXT)));
    CHECK(routes_count == 14);
}

static void test_scope_table(void)
{
    CHECK(scopes_count == 3);
    CHECK(scopes_mask("things:read") == SCOPE_THINGS_READ);
    CHECK(scopes_mask("workspace:admin") == SCOPE_WORKSPACE_ADMIN);
    CHECK(scopes_mask("things:delete") == 0);
    CHECK(scopes_mask(NULL) == 0);
    CHECK(scopes_all() == (SCOPE_THINGS_READ | SCOPE_THINGS_WRITE | SCOPE_WORKSPACE_ADMIN));
    CHECK_STR(scopes_names[0], "things:read");
}

static void test_role_table(void)
{
    char text[64];
    CHECK(scopes_roles_count == 2);
    CHECK_STR(scopes_roles[0].key, "editor"); /* source order */
    CHECK(scopes_role("editor")->mask == (SCOPE_THINGS_READ | SCOPE_THINGS_WRITE));
    CHECK_STR(scopes_role("editor")->scopes, "things:read things:write"); /* catalogue order */
    CHECK_STR(scopes_role("reader")->description, "");
    CHECK(scopes_role("writer") == NULL && scopes_role(NULL) == NULL);
    scopes_text(SCOPE_THINGS_WRITE | SCOPE_WORKSPACE_ADMIN, text, sizeof text);
    CHECK_STR(text, "things:write workspace:admin");
    scopes_text(0, text, sizeof text);
    CHECK_STR(text, "");
    scopes_text(scopes_all(), text, 20); /* what does not fit is left out, never cut */
    CHECK_STR(text, "things:read");
}

/* ---- dispatchers -------------------------------------------------------------------------- */

static struct req R;

static void request(const char *method, const char *path, const char *body)
{
    char allow[128];
    free(R.resp_body);
    arena_release(&R.arena);
    memset(&R, 0, sizeof R);
    memset(&fake, 0, sizeof fake);
    memset(&small_seen, 0, sizeof small_seen);
    memset(&small_exports, 0, sizeof small_exports);
    memset(&declared, 0, sizeof declared);
    arena_init(&R.arena);
    verr_init(&R.verr, &R.arena);
    R.method = method;
    R.path = path;
    R.body = body;
    R.body_len = body ? strlen(body) : 0;
    if (routes_match(&R.arena, method, path, &R.match, allow, sizeof allow) != ROUTE_FOUND) {
        fprintf(stderr, "no route for %s %s\n", method, path);
        abort();
    }
    R.op = R.match.op;
}

static void query(const char *name, const char *value)
{
    fake.query_names[fake.n_query] = name;
    fake.query_values[fake.n_query++] = value;
}

static void header(const char *name, const char *value)
{
    fake.header_names[fake.n_header] = name;
    fake.header_values[fake.n_header++] = value;
}

static void cookie(const char *name, const char *value)
{
    fake.cookie_names[fake.n_cookie] = name;
    fake.cookie_values[fake.n_cookie++] = value;
}

static int run(void)
{
    return R.op->dispatch(&R);
}

static const char *resp_header(const char *name)
{
    for (int i = 0; i < R.n_resp_headers; i++)
        if (strcasecmp(R.resp_headers[i].name, name) == 0)
            return R.resp_headers[i].value;
    return NULL;
}

static void test_dispatch_decodes_params_with_defaults(void)
{
    request("GET", "/v1/things", NULL);
    query("kind", "large");
    query("active", "false");
    header("x-trace", "ab12");
    CHECK(run() == 0);
    CHECK(R.status == 200 && !R.problem);
    CHECK(small_seen.list.has_limit && small_seen.list.limit == 20);
    CHECK(small_seen.list.has_kind && small_seen.list.kind == KIND_LARGE);
    CHECK(small_seen.list.has_active && !small_seen.list.active);
    CHECK(!small_seen.list.has_ratio);
    CHECK_STR(small_seen.list.x_trace, "ab12");
    CHECK_STR(resp_header("X-Count"), "1");
    CHECK(R.resp_body && strstr(R.resp_body, "\"next\":null") != NULL);
    CHECK(strstr(R.resp_body, "secret") == NULL);
}

static void test_dispatch_rejects_every_bad_param_with_400(void)
{
    request("GET", "/v1/things", NULL);
    query("limit", "0");
    query("kind", "huge");
    query("active", "yes");
    query("ratio", "1");
    header("X-Trace", "zz");
    CHECK(run() == 0);
    CHECK(R.status == 400 && R.problem && R.with_errors);
    CHECK_STR(R.problem_code, "invalid_request");
    CHECK_ERR(&R.verr, "/query/limit", "minimum");
    CHECK_ERR(&R.verr, "/query/kind", "enum");
    CHECK_ERR(&R.verr, "/query/active", "type");
    CHECK_ERR(&R.verr, "/query/ratio", "maximum");
    CHECK_ERR(&R.verr, "/header/X-Trace", "pattern");
    CHECK(R.verr.count == 5);
    CHECK(small_seen.called == 0);

    request("GET", "/v1/things", NULL);
    query("limit", "1.5");
    CHECK(run() == 0);
    CHECK_ERR(&R.verr, "/query/limit", "type");
    const char *not_plain_decimal[] = {"1e1", "10.0", "010", "+5", "0x10"};
    for (size_t i = 0; i < sizeof not_plain_decimal / sizeof *not_plain_decimal; i++) {
        request("GET", "/v1/things", NULL);
        query("limit", not_plain_decimal[i]);
        CHECK(run() == 0);
        CHECK_ERR(&R.verr, "/query/limit", "type");
    }
    request("GET", "/v1/things", NULL);
    query("limit", " 5");
    CHECK(run() == 0);
    CHECK_ERR(&R.verr, "/query/limit", "type");
    request("GET", "/v1/things/THG_0001", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 400);
    CHECK_ERR(&R.verr, "/path/id", "pattern");
}

static void test_dispatch_array_query_parameters(void)
{
    request("GET", "/v1/things", NULL);
    query("kinds", "large");
    query("kinds", "small");
    query("sizes", "0,9,3");
    query("names", "ab");
    query("names", "");
    CHECK(run() == 0);
    CHECK(R.status == 200 && !R.problem);
    CHECK(small_seen.list.has_kinds && small_seen.list.kinds_count == 2);
    CHECK(small_seen.list.kinds[0] == KIND_LARGE && small_seen.list.kinds[1] == KIND_SMALL);
    CHECK(small_seen.list.has_sizes && small_seen.list.sizes_count == 3);
    CHECK(small_seen.list.sizes[0] == 0 && small_seen.list.sizes[1] == 9 &&
          small_seen.list.sizes[2] == 3);
    CHECK(small_seen.list.has_names && small_seen.list.names_count == 2);
    CHECK_STR(small_seen.list.names[0], "ab");
    CHECK_STR(small_seen.list.names[1], "");

    request("GET", "/v1/things", NULL); /* absent: no has_, no items */
    CHECK(run() == 0);
    CHECK(R.status == 200 && !small_seen.list.has_kinds && small_seen.list.kinds_count == 0);
    CHECK(!small_seen.list.has_sizes && !small_seen.list.has_names);

    request("GET", "/v1/things", NULL); /* comma-separated "" is no item at all */
    query("sizes", "");
    CHECK(run() == 0);
    CHECK(R.status == 200 && small_seen.list.has_sizes && small_seen.list.sizes_count == 0);

    request("GET", "/v1/things", NULL); /* each item validated, at its index */
    query("kinds", "large");
    query("kinds", "huge");
    query("kinds", "large");
    query("sizes", "1,x,10,");
    query("names", "abcd");
    CHECK(run() == 0);
    CHECK(R.status == 400 && R.with_errors);
    CHECK_STR(R.problem_code, "invalid_request");
    CHECK_ERR(&R.verr, "/query/kinds/1", "enum");
    CHECK_ERR(&R.verr, "/query/kinds", "unique_items");
    CHECK_ERR(&R.verr, "/query/sizes/1", "type");
    CHECK_ERR(&R.verr, "/query/sizes/3", "type");
    CHECK_ERR(&R.verr, "/query/names/0", "max_length");
    CHECK(small_seen.called == 0);

    request("GET", "/v1/things", NULL); /* bounds: maxItems, minItems never for absent */
    for (int i = 0; i < 4; i++)
        query("kinds", i % 2 ? "small" : "large");
    query("sizes", "1,2,3,4,5,6,7,8");
    query("names", "a");
    query("names", "b");
    query("names", "c");
    CHECK(run() == 0);
    CHECK(R.status == 400);
    CHECK_ERR(&R.verr, "/query/kinds", "max_items");
    CHECK_ERR(&R.verr, "/query/sizes", "max_items");
    CHECK_ERR(&R.verr, "/query/names", "max_items");
    CHECK(!has_error(&R.verr, "/query/sizes/5", "type"));

    request("GET", "/v1/things", NULL); /* explode: false takes one value only */
    query("sizes", "1");
    query("sizes", "2");
    CHECK(run() == 0);
    CHECK(R.status == 400);
    CHECK_ERR(&R.verr, "/query/sizes", "type");
    request("GET", "/v1/things", NULL); /* a scalar query parameter is given once */
    query("limit", "5");
    query("limit", "6");
    CHECK(run() == 0);
    CHECK(R.status == 400);
    CHECK_ERR(&R.verr, "/query/limit", "type");
    CHECK(R.verr.count == 1);
    request("GET", "/v1/things", NULL); /* explode: true keeps a comma inside an item */
    query("kinds", "large,small");
    CHECK(run() == 0);
    CHECK(R.status == 400);
    CHECK_ERR(&R.verr, "/query/kinds/0", "enum");
}

static void test_dispatch_body_errors(void)
{
    request("POST", "/v1/things", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 422 && R.with_errors);
    CHECK_ERR(&R.verr, "", "required");

    request("POST", "/v1/things", "{\"name\":");
    CHECK(run() == 0);
    CHECK(R.status == 400);
    CHECK_STR(R.problem_code, "malformed_json");
    CHECK(strstr(R.problem_detail, "at byte") != NULL);

    request("POST", "/v1/things", "{\"name\":\"\",\"kind\":\"odd\",\"size\":-1,\"id\":\"x\","
                                  "\"shape\":{\"kind\":\"circle\"}}");
    CHECK(run() == 0);
    CHECK(R.status == 422);
    CHECK_STR(R.problem_code, "validation_failed");
    CHECK_ERR(&R.verr, "/name", "min_length");
    CHECK_ERR(&R.verr, "/kind", "enum");
    CHECK_ERR(&R.verr, "/size", "minimum");
    CHECK_ERR(&R.verr, "/id", "additional_property");
    CHECK_ERR(&R.verr, "/shape/radius", "required");
    CHECK(R.verr.count == 5);
    CHECK(small_seen.called == 0);
}

static void test_dispatch_serialises_typed_response_and_headers(void)
{
    request("POST", "/v1/things", "{\"name\":\"new\",\"kind\":\"small\",\"size\":10}");
    CHECK(run() == 0);
    CHECK(R.status == 201 && !R.problem);
    CHECK(small_seen.create_body && small_seen.create_body->size == 10);
    CHECK_STR(resp_header("ETag"), "\"v1\"");
    CHECK_STR(resp_header("Location"), "/v1/things/thg_0003");
    CHECK(R.resp_body && strncmp(R.resp_body, "{\"name\":\"new\",\"kind\":\"small\",\"id\":\"thg_0003\"", 42) == 0);

    request("POST", "/v1/things", "{\"name\":\"taken\",\"kind\":\"small\",\"size\":10}");
    CHECK(run() == 0);
    CHECK(R.status == 409 && !R.problem);
    CHECK_STR(R.resp_body, "{\"existing_id\":\"thg_0002\"}");

    request("DELETE", "/v1/things/thg_0001", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 204 && R.resp_len == 0);
    CHECK_STR(small_seen.id, "thg_0001");
}

/* x-audit, x-event, x-if-match: the dispatcher writes the record and the event after a
 * success only, with the declared request members, and refuses a change without If-Match. */
static void test_dispatch_declared_audit_event_and_if_match(void)
{
    request("POST", "/v1/things", "{\"name\":\"new\",\"kind\":\"small\",\"size\":10}");
    CHECK(run() == 0);
    CHECK(R.status == 201);
    CHECK(declared.audits == 1 && declared.events == 1);
    CHECK_STR(declared.audit_id, "thg_0003");
    CHECK_STR(declared.audit_fields, "{\"name\":\"new\",\"size\":10}");
    CHECK_STR(declared.event_type, "thing.created");
    CHECK_STR(declared.event_resource, "thing");
    CHECK_STR(declared.event_id, "thg_0003");
    CHECK(declared.event_json == R.resp_body);

    request("POST", "/v1/things", "{\"name\":\"taken\",\"kind\":\"small\",\"size\":10}");
    CHECK(run() == 0);
    CHECK(R.status == 409);
    CHECK(declared.audits == 0 && declared.events == 0);

    request("PUT", "/v1/things/thg_0001",
            "{\"name\":\"n\",\"kind\":\"small\",\"size\":5,\"tags\":[\"a\"],\"secret\":\"s\"}");
    CHECK(run() == 0);
    CHECK(R.status == 428);
    CHECK_STR(R.problem_code, "precondition_required");
    CHECK(small_seen.called == 0 && declared.audits == 0);

    request("PUT", "/v1/things/thg_0001",
            "{\"name\":\"n\",\"kind\":\"small\",\"size\":5,\"tags\":[\"a\"],\"secret\":\"s\"}");
    header("If-Match", "\"v3\"");
    CHECK(run() == 0);
    CHECK(R.status == 200);
    CHECK(declared.audits == 1 && declared.events == 0);
    CHECK_STR(declared.audit_id, "thg_0001");
    CHECK_STR(declared.audit_fields, "{\"name\":\"n\",\"secret\":\"[redacted]\"}");

    request("DELETE", "/v1/things/thg_0001", NULL); /* x-audit: none */
    CHECK(run() == 0);
    CHECK(R.status == 204 && declared.audits == 0);
}

static void test_dispatch_refuses_undocumented_statuses(void)
{
    request("POST", "/v1/things", "{\"name\":\"teapot\",\"kind\":\"small\",\"size\":10}");
    CHECK(run() == -1);
    CHECK(fake.errors_logged == 1);

    request("GET", "/v1/things/thg_0500", NULL);
    CHECK(run() == -1);
}

static void test_response_checks_catch_handler_drift(void)
{
    request("GET", "/v1/things/thg_0001", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 200);
    CHECK_STR(resp_header("ETag"), "\"v2\"");

#ifdef TREASURY_CHECK_RESPONSES
    request("GET", "/v1/things/thg_bad0", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 500);
    CHECK_STR(R.problem_code, "response_schema_violation");

    request("GET", "/v1/things/thg_etag", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 500);

    request("GET", "/v1/things/thg_0409", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 500);
    CHECK_STR(R.problem_code, "response_schema_violation");
#else
    /* release builds skip the response checks */
    request("GET", "/v1/things/thg_bad0", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 200);
    request("GET", "/v1/things/thg_0409", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 409);
#endif

    request("GET", "/v1/things/thg_0404", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 404);
    CHECK_STR(R.problem_code, "not_found");
}

static void test_dispatch_optional_free_form_and_planned(void)
{
    request("POST", "/v1/things/thg_0001/shapes", NULL);
    CHECK(run() == 0);
    CHECK(small_seen.called == 1 && small_seen.shape == NULL);
    CHECK(R.status == 200);
    CHECK_STR(R.resp_body, "{\"empty\":true}");

    request("POST", "/v1/things/thg_0001/shapes", "{\"kind\":\"circle\",\"radius\":2}");
    CHECK(run() == 0);
    CHECK(small_seen.shape && small_seen.shape->circle->radius == 2);
    CHECK_STR(R.resp_body, "{\"ok\":true}");

    request("GET", "/v1/things/search", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 501);
    CHECK_STR(R.problem_code, "not_implemented");
    CHECK(strstr(R.problem_detail, "searchThings") != NULL);

    request("PUT", "/v1/things/thg_0001",
            "{\"name\":\"n\",\"kind\":\"small\",\"size\":5,\"tags\":[\"a\"],\"secret\":\"s\"}");
    header("If-Match", "\"v3\"");
    CHECK(run() == 0);
    CHECK(R.status == 200);
    CHECK_STR(small_seen.if_match, "\"v3\"");
    CHECK(R.resp_body && strstr(R.resp_body, "secret") == NULL);

    request("GET", "/healthz", NULL);
    CHECK(run() == 0);
    CHECK_STR(R.resp_body, "{\"status\":\"ok\"}");
}

static void test_dispatch_pages_cookies_and_redirects(void)
{
    request("GET", "/v1/welcome", NULL);
    cookie("visitor", "ada");
    CHECK(run() == 0);
    CHECK(R.status == 200);
    CHECK_STR(R.content_type, REQ_HTML);
    CHECK_STR(R.resp_body, "<!DOCTYPE html><p>Hello ada</p>");

    request("GET", "/v1/welcome", NULL);
    query("name", "go");
    CHECK(run() == 0);
    CHECK(R.status == 303 && R.resp_len == 0);
    CHECK_STR(resp_header("Location"), "/v1/welcome");
    CHECK_STR(resp_header("Set-Cookie"), "visitor=go; Secure; HttpOnly; SameSite=Lax");

    request("GET", "/v1/welcome", NULL);
    query("name", "bad");
    CHECK(run() == 0);
    CHECK(R.status == 400 && R.problem && R.op->page);
    CHECK_STR(R.problem_code, "invalid_request");

    request("GET", "/v1/welcome", NULL);
    cookie("visitor", "NOT-OK");
    CHECK(run() == 0);
    CHECK(R.status == 400);
    CHECK(R.verr.count == 1 && strcmp(R.verr.items[0].pointer, "/cookie/visitor") == 0);

#ifdef TREASURY_CHECK_RESPONSES
    request("GET", "/v1/welcome", NULL);
    query("name", "plain");
    CHECK(run() == 0);
    CHECK(R.status == 500);
    CHECK_STR(R.problem_code, "response_schema_violation");
#endif
}

static void test_dispatch_oauth_errors_and_empty_bodies(void)
{
    const struct op *o = op_named("issueToken");
    CHECK(o && o->oauth_errors && o->form_body && !op_named("getWelcome")->oauth_errors);

    request("POST", "/v1/tokens", "{\"grant_type\":\"ok\"}");
    CHECK(run() == 0);
    CHECK(R.status == 200 && !R.problem);

    request("POST", "/v1/tokens", "{\"grant_type\":\"used\"}");
    CHECK(run() == 0);
    CHECK(R.status == 400 && R.problem); /* the runtime renders it; the check accepted it */
    CHECK_STR(R.problem_code, "invalid_grant");

    request("POST", "/v1/tokens", "{\"grant_type\":\"far too long a grant\"}");
    CHECK(run() == 0);
    CHECK(R.status == 422 && R.problem && R.with_errors);
    CHECK_STR(R.problem_code, "validation_failed");

    request("POST", "/v1/tokens", "{\"grant_type\":\"drift\"}");
    CHECK(run() == 0);
#ifdef TREASURY_CHECK_RESPONSES
    CHECK(R.status == 500); /* unsupported_token_type is not in the documented enum */
    CHECK_STR(R.problem_code, "response_schema_violation");
#else
    CHECK(R.status == 400);
#endif

    request("POST", "/v1/tokens/revoke", "{\"grant_type\":\"x\"}");
    CHECK(run() == 0);
    CHECK(R.status == 200 && !R.problem && R.resp_len == 0 && R.resp_body == NULL);

    request("POST", "/v1/tokens/revoke", "{\"grant_type\":\"body\"}");
    CHECK(run() == 0);
#ifdef TREASURY_CHECK_RESPONSES
    CHECK(R.status == 500); /* x-empty-body: a 200 with a body is a violation */
    CHECK_STR(R.problem_code, "response_schema_violation");
#else
    CHECK(R.status == 200 && R.resp_len == 2);
#endif
}

static void test_dispatch_negotiates_the_representation(void)
{
    request("GET", "/v1/exports/report", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 200 && small_exports.accept == MEDIA_JSON);
    CHECK_STR(R.content_type, "application/json");
    CHECK(R.resp_body && strcmp(R.resp_body, "{\"rows\":1}") == 0);

    request("GET", "/v1/exports/report", NULL);
    header("Accept", "text/csv");
    CHECK(run() == 0);
    CHECK(R.status == 200 && small_exports.accept == MEDIA_CSV && !R.problem);
    CHECK_STR(R.content_type, "text/csv; charset=utf-8");
    CHECK(R.resp_len == 9 && memcmp(R.resp_body, "rows\r\n1\r\n", 9) == 0);
    CHECK_STR(resp_header("X-Count"), "1"); /* headers as for JSON */

    request("GET", "/v1/exports/report", NULL);
    header("Accept", "application/*;q=0.5, application/pdf");
    CHECK(run() == 0);
    CHECK(R.status == 200 && small_exports.accept == MEDIA_PDF);
    CHECK_STR(R.content_type, "application/pdf");
    CHECK(R.resp_len == 16 && memcmp(R.resp_body, "%PDF-1.7\n\0binary", 16) == 0);

    request("GET", "/v1/exports/report", NULL);
    header("Accept", "text/*;q=0.5, application/json;q=0.5");
    CHECK(run() == 0);
    CHECK(small_exports.accept == MEDIA_JSON); /* a tie: the spec's order */

    request("GET", "/v1/exports/report", NULL);
    header("Accept", "image/png, application/json;q=0");
    CHECK(run() == 0);
    CHECK(R.status == 406 && R.problem && small_exports.called == 0);
    CHECK_STR(R.problem_code, "not_acceptable");
    CHECK(strstr(R.problem_detail, "(application/json, text/csv, application/pdf)") != NULL);

    request("GET", "/v1/exports/report", NULL); /* 406 comes before the parameters */
    query("limit", "0");
    header("Accept", "text/html");
    CHECK(run() == 0);
    CHECK(R.status == 406);

    request("GET", "/v1/exports/statement", NULL);
    CHECK(run() == 0);
    CHECK(R.status == 200 && small_exports.accept == MEDIA_TEXT);
    CHECK_STR(R.content_type, "text/plain; charset=utf-8");

    request("GET", "/v1/exports/statement", NULL);
    header("Accept", "application/json");
    CHECK(run() == 0);
    CHECK(R.status == 406 && small_exports.called == 0);
    CHECK(strstr(R.problem_detail, "(text/plain)") != NULL);
}

static void test_response_checks_catch_wrong_raw_answers(void)
{
    static const char *const bad[] = { "nope", "\xff\xfe", "0123456789012345678901234567890123" };
    request("GET", "/v1/exports/report", NULL);
    header("Accept", "text/csv");
    small_exports.answer = "nope"; /* breaks the CSV schema's pattern */
    CHECK(run() == 0);
#ifdef TREASURY_CHECK_RESPONSES
    CHECK(R.status == 500);
    CHECK_STR(R.problem_code, "response_schema_violation");
#else
    CHECK(R.status == 200);
#endif
    request("GET", "/v1/exports/report", NULL);
    header("Accept", "application/pdf");
    small_exports.answer = "<html>not a PDF</html>";
    CHECK(run() == 0);
#ifdef TREASURY_CHECK_RESPONSES
    CHECK(R.status == 500);
#else
    CHECK(R.status == 200);
#endif
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        request("GET", "/v1/exports/statement", NULL);
        small_exports.answer = bad[i]; /* too short a pattern, not UTF-8, too long */
        CHECK(run() == 0);
#ifdef TREASURY_CHECK_RESPONSES
        CHECK(i == 0 ? R.status == 200 : R.status == 500);
#else
        CHECK(R.status == 200);
#endif
    }
}

static void raw_request(const char *content_type, const char *body, size_t len)
{
    request("POST", "/v1/exports/imports", NULL);
    R.body = body;
    R.body_len = len;
    if (content_type)
        header("Content-Type", content_type);
}

static bool has_verr(const char *code)
{
    return R.with_errors && has_error(&R.verr, "", code);
}

static void test_dispatch_raw_bodies(void)
{
    raw_request("application/xml", "<Document/>", 11);
    CHECK(run() == 0);
    CHECK(R.status == 201 && small_exports.body_media == MEDIA_XML);
    CHECK(small_exports.body_len == 11 && memcmp(small_exports.body, "<Document/>", 11) == 0);
    CHECK(R.resp_body && strcmp(R.resp_body, "{\"rows\":11}") == 0);

    raw_request("Text/Plain; charset=\"UTF-8\"", ":20:X", 5);
    CHECK(run() == 0);
    CHECK(R.status == 201 && small_exports.body_media == MEDIA_TEXT);

    static const char *const refused[] = { "application/json", "text/plain; charset=latin1",
                                           NULL, "text/csv", "text/plain;" };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        raw_request(refused[i], ":20:X", 5);
        CHECK(run() == 0);
        CHECK(R.status == 415 && small_exports.called == 0);
        CHECK_STR(R.problem_code, "unsupported_media_type");
        CHECK(strstr(R.problem_detail, "application/xml or text/plain") != NULL);
    }

    raw_request("text/plain", "\xff\xfe", 2);
    CHECK(run() == 0);
    CHECK(R.status == 422 && has_verr("type") && small_exports.called == 0);
    raw_request("text/plain", "a\0b", 3);
    CHECK(run() == 0);
    CHECK(R.status == 422 && has_verr("type"));
    raw_request("text/plain", "x", 1);
    CHECK(run() == 0);
    CHECK(R.status == 422 && has_verr("min_length"));
    raw_request("application/xml", "Document", 8); /* each type its own schema */
    CHECK(run() == 0);
    CHECK(R.status == 422 && has_verr("pattern"));
    raw_request("text/plain", "Document", 8);
    CHECK(run() == 0);
    CHECK(R.status == 201);
    raw_request("application/xml", NULL, 0);
    CHECK(run() == 0);
    CHECK(R.status == 422 && has_verr("required"));
}

int main(void)
{
    char err[256];
    if (routes_init(err, sizeof err) != 0) {
        fprintf(stderr, "routes_init: %s\n", err);
        return 1;
    }
    static const struct unit_test tests[] = {
        UNIT_TEST(test_valid_thing_passes_in_both_modes),
        UNIT_TEST(test_request_mode_requires_write_only_but_not_read_only),
        UNIT_TEST(test_response_mode_requires_read_only_and_rejects_write_only),
        UNIT_TEST(test_every_violation_is_collected_with_its_pointer),
        UNIT_TEST(test_integers_are_exact),
        UNIT_TEST(test_multiple_of_and_exclusive_bounds),
        UNIT_TEST(test_decimals_are_parsed_and_compared_exactly),
        UNIT_TEST(test_lengths_count_code_points),
        UNIT_TEST(test_patterns_follow_ecma_semantics),
        UNIT_TEST(test_one_of_dispatches_on_the_discriminator),
        UNIT_TEST(test_map_and_additional_properties_values_are_validated),
        UNIT_TEST(test_error_list_is_capped),
        UNIT_TEST(test_decode_fills_typed_fields_and_applies_defaults),
        UNIT_TEST(test_encode_omits_absent_optional_and_write_only_fields),
        UNIT_TEST(test_decode_then_encode_round_trips),
        UNIT_TEST(test_arrays_of_arrays_and_maps_of_arrays),
        UNIT_TEST(test_enum_str_and_parse),
        UNIT_TEST(test_enum_filter_set_is_canonical),
        UNIT_TEST(test_routes_prefer_literal_segments_and_capture_params),
        UNIT_TEST(test_routes_answer_405_with_allow_and_404_otherwise),
        UNIT_TEST(test_operation_descriptors_carry_spec_and_defaults),
        UNIT_TEST(test_scope_table),
        UNIT_TEST(test_role_table),
        UNIT_TEST(test_dispatch_decodes_params_with_defaults),
        UNIT_TEST(test_dispatch_rejects_every_bad_param_with_400),
        UNIT_TEST(test_dispatch_array_query_parameters),
        UNIT_TEST(test_dispatch_body_errors),
        UNIT_TEST(test_dispatch_serialises_typed_response_and_headers),
        UNIT_TEST(test_dispatch_declared_audit_event_and_if_match),
        UNIT_TEST(test_dispatch_refuses_undocumented_statuses),
        UNIT_TEST(test_response_checks_catch_handler_drift),
        UNIT_TEST(test_dispatch_optional_free_form_and_planned),
        UNIT_TEST(test_dispatch_pages_cookies_and_redirects),
        UNIT_TEST(test_dispatch_oauth_errors_and_empty_bodies),
        UNIT_TEST(test_dispatch_negotiates_the_representation),
        UNIT_TEST(test_response_checks_catch_wrong_raw_answers),
        UNIT_TEST(test_dispatch_raw_bodies),
    };
    int rc = unit_run("codegen_small", tests, sizeof tests / sizeof tests[0]);
    free(R.resp_body);
    arena_release(&R.arena);
    arena_release(&A);
    pattern_release();
    return rc;
}
