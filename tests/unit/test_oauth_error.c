/* RFC 6749 §5.2 error bodies: the code each refusal gets, exactly two members, and an
 * error_description within the characters §5.2 allows. */
#include "runtime/oauth_error.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/json.h"
#include "tests/unit/unit.h"

/* Parses body (freed) into a; NULL when it is not exactly {"error": s, "error_description": s}. */
static struct json_value *two_members(struct arena *a, char *body, const size_t *lenp)
{
    size_t len = *lenp; /* set by the render call in the argument list: read it here */
    struct json_value *v = NULL;
    struct json_error e;
    int rc = body ? json_parse(a, body, len, &v, &e) : -1;
    free(body);
    if (rc != 0 || v->type != JSON_OBJECT || v->count != 2)
        return NULL;
    const struct json_value *err = json_get(v, "error"), *desc = json_get(v, "error_description");
    return err && err->type == JSON_STRING && desc && desc->type == JSON_STRING ? v : NULL;
}

/* Every byte is in %x20-21 / %x23-5B / %x5D-7E (RFC 6749 §5.2, error_description). */
static bool allowed_text(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p > 0x7E || *p == '"' || *p == '\\')
            return false;
    return true;
}

static void test_oauth_codes_are_kept(void)
{
    static const char *const codes[] = {"invalid_request", "invalid_client", "invalid_grant",
                                        "unauthorized_client", "unsupported_grant_type",
                                        "invalid_scope", "unsupported_token_type"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CHECK_STR(oauth_error_code(codes[i], codes[i][8] == 'c' ? 401 : 400), codes[i]);
}

static void test_other_refusals_map_by_status(void)
{
    CHECK_STR(oauth_error_code("use_https", 400), "invalid_request");
    CHECK_STR(oauth_error_code("malformed_json", 400), "invalid_request");
    CHECK_STR(oauth_error_code("payload_too_large", 413), "invalid_request");
    CHECK_STR(oauth_error_code("unsupported_media_type", 415), "invalid_request");
    CHECK_STR(oauth_error_code("validation_failed", 422), "invalid_request");
    CHECK_STR(oauth_error_code("rate_limited", 429), "temporarily_unavailable");
    CHECK_STR(oauth_error_code("unavailable", 503), "temporarily_unavailable");
    CHECK_STR(oauth_error_code("internal_error", 500), "server_error");
    CHECK_STR(oauth_error_code("response_schema_violation", 500), "server_error");
    CHECK_STR(oauth_error_code("not_implemented", 501), "server_error");
    /* codes of other endpoints are not passed through */
    CHECK_STR(oauth_error_code("access_denied", 400), "invalid_request");
    CHECK_STR(oauth_error_code("invalid_token", 401), "invalid_request");
    CHECK_STR(oauth_error_code(NULL, 500), "server_error");
}

static void test_the_body_has_error_and_description_only(void)
{
    struct arena a;
    arena_init(&a);
    size_t len = 0;
    struct json_value *v = two_members(
        &a, oauth_error_render(400, "invalid_grant", "The code was used.", NULL, &len), &len);
    CHECK(v != NULL);
    if (v) {
        CHECK_STR(json_get(v, "error")->s, "invalid_grant");
        CHECK_STR(json_get(v, "error_description")->s, "The code was used.");
    }
    v = two_members(&a, oauth_error_render(503, "unavailable", NULL, NULL, &len), &len);
    CHECK(v != NULL);
    if (v) {
        CHECK_STR(json_get(v, "error")->s, "temporarily_unavailable");
        CHECK_STR(json_get(v, "error_description")->s, "temporarily_unavailable");
    }
    arena_release(&a);
}

static void test_validation_errors_are_in_the_description(void)
{
    struct arena a;
    arena_init(&a);
    struct verr_list l;
    verr_init(&l, &a);
    verr_add(&l, "", "token", "max_length", "must be at most 8192 characters");
    verr_add(&l, "", NULL, "type", "must be an object");
    size_t len = 0;
    struct json_value *v = two_members(
        &a, oauth_error_render(422, "validation_failed", "The request body has 2 invalid fields.",
                               &l, &len),
        &len);
    CHECK(v != NULL);
    if (v) {
        CHECK_STR(json_get(v, "error")->s, "invalid_request");
        CHECK_STR(json_get(v, "error_description")->s,
                  "The request body has 2 invalid fields. /token: must be at most 8192 "
                  "characters (max_length); (the body): must be an object (type)");
    }
    arena_release(&a);
}

static void test_forbidden_characters_are_replaced(void)
{
    struct arena a;
    arena_init(&a);
    struct verr_list l;
    verr_init(&l, &a);
    verr_add(&l, "", "na\"me\\", "additional_property", "is not a property: \xc3\xa9t\xc3\xa9");
    size_t len = 0;
    struct json_value *v = two_members(
        &a,
        oauth_error_render(400, "malformed_json", "unexpected \"\\\" at\nbyte 3 \xf0\x9f\x94\x91\x7f",
                           &l, &len),
        &len);
    CHECK(v != NULL);
    if (v) {
        const char *d = json_get(v, "error_description")->s;
        CHECK(allowed_text(d));
        CHECK_STR(d, "unexpected '/' at byte 3 ?  /na'me/: is not a property: ?t? "
                     "(additional_property)");
    }
    arena_release(&a);
}

static void test_a_long_description_is_cut_with_an_ellipsis(void)
{
    struct arena a;
    arena_init(&a);
    struct verr_list l;
    verr_init(&l, &a);
    for (int i = 0; i < VERR_MAX; i++)
        verr_add(&l, "/items", "x", "max_length", "must be at most 64 characters long, always");
    size_t len = 0;
    struct json_value *v = two_members(
        &a, oauth_error_render(422, "validation_failed", "Many.", &l, &len), &len);
    CHECK(v != NULL);
    if (v) {
        const struct json_value *d = json_get(v, "error_description");
        CHECK(d->len == OAUTH_ERROR_DESCRIPTION_MAX);
        CHECK(strcmp(d->s + d->len - 3, "...") == 0 && allowed_text(d->s));
    }
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_oauth_codes_are_kept),
        UNIT_TEST(test_other_refusals_map_by_status),
        UNIT_TEST(test_the_body_has_error_and_description_only),
        UNIT_TEST(test_validation_errors_are_in_the_description),
        UNIT_TEST(test_forbidden_characters_are_replaced),
        UNIT_TEST(test_a_long_description_is_cut_with_an_ellipsis),
    };
    return unit_run("oauth_error", tests, sizeof tests / sizeof tests[0]);
}
