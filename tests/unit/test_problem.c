/* Problem documents: RFC 9457 members, status echo, validation errors. */
#include "runtime/problem.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/json.h"
#include "runtime/req.h"
#include "tests/unit/unit.h"

/* The server registers the spec's x-problem-codes (generated/problems.c); these tests their
 * own few. */
static const struct problem_code codes[] = {
    {"not_found", "Resource not found"},
    {"self_approval", "Self-approval not allowed"},
};

static void test_problem_has_every_member_and_status_matches(void)
{
    struct arena a;
    arena_init(&a);
    problem_register(codes, sizeof codes / sizeof codes[0]);
    size_t len = 0;
    char *body = problem_render(404, "not_found", "No beneficiary ben_x.", "/v1/beneficiaries/ben_x",
                                "req_1", NULL, &len);
    struct json_value *v = NULL;
    struct json_error e;
    CHECK(json_parse(&a, body, len, &v, &e) == 0);
    CHECK_STR(json_get(v, "type")->s, "urn:treasury:problem:not_found");
    CHECK_STR(json_get(v, "title")->s, "Resource not found");
    CHECK_STR(json_get(v, "status")->s, "404");
    CHECK_STR(json_get(v, "detail")->s, "No beneficiary ben_x.");
    CHECK_STR(json_get(v, "instance")->s, "/v1/beneficiaries/ben_x");
    CHECK_STR(json_get(v, "code")->s, "not_found");
    CHECK_STR(json_get(v, "request_id")->s, "req_1");
    CHECK(json_get(v, "errors") == NULL);
    CHECK(json_get(v, "error") == NULL && json_get(v, "error_description") == NULL);
    free(body);
    arena_release(&a);
    problem_register(NULL, 0);
}

static void test_validation_problem_lists_every_error(void)
{
    struct arena a;
    arena_init(&a);
    struct verr_list l;
    verr_init(&l, &a);
    verr_add(&l, "", "name", "required", "name is required");
    verr_add(&l, "/bank", "bic", "format", "not a BIC");
    size_t len = 0;
    char *body = problem_render(422, "validation_failed", "2 errors", "/v1/x", "req_2", &l, &len);
    struct json_value *v = NULL;
    struct json_error e;
    CHECK(json_parse(&a, body, len, &v, &e) == 0);
    const struct json_value *errs = json_get(v, "errors");
    CHECK(errs && errs->count == 2);
    if (errs && errs->count == 2) {
        CHECK_STR(json_get(errs->items[0], "pointer")->s, "/name");
        CHECK_STR(json_get(errs->items[1], "pointer")->s, "/bank/bic");
        CHECK_STR(json_get(errs->items[1], "code")->s, "format");
    }
    free(body);
    arena_release(&a);
}

static void test_a_page_problem_is_an_escaped_html_page(void)
{
    struct arena a;
    arena_init(&a);
    struct verr_list l;
    verr_init(&l, &a);
    verr_add(&l, "", "csrf", "required", "<b>missing</b>");
    size_t len = 0;
    char *page = problem_render_html(&a, 400, "invalid_request", "Bad <client> & co", "req_4", &l,
                                     &len);
    CHECK(page && len == strlen(page) && strncmp(page, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(page, "id=\"error\"") && strstr(page, "data-code=\"invalid_request\""));
    CHECK(strstr(page, "Bad &lt;client&gt; &amp; co") && !strstr(page, "<client>"));
    CHECK(strstr(page, "&lt;b&gt;missing&lt;/b&gt;") && strstr(page, "req_4"));
    free(page);
    arena_release(&a);
}

static void test_unknown_code_gets_the_reason_phrase_as_title(void)
{
    problem_register(codes, sizeof codes / sizeof codes[0]);
    CHECK_STR(problem_title("no_such_code", 409), "Conflict");
    CHECK_STR(problem_title("rate_limited", 429), "Too Many Requests"); /* not registered here */
    problem_register(NULL, 0);
}

/* A problem replaces what a handler had set for its success: its caching and page policy go
 * (the runtime's no-store and the problem's own policy apply), other headers stay. */
static void test_a_problem_drops_the_success_caching_and_page_policy(void)
{
    struct req r;
    memset(&r, 0, sizeof r);
    arena_init(&r.arena);
    req_set_header(&r, "Cache-Control", "private, max-age=3600");
    req_set_header(&r, "ETag", "\"abc\"");
    req_set_header(&r, "Content-Security-Policy", "default-src 'none'");
    req_set_header(&r, "Location", "/v1/x");
    req_problem(&r, 500, "internal_error", "boom");
    CHECK(req_response_header(&r, "Cache-Control") == NULL);
    CHECK(req_response_header(&r, "Content-Security-Policy") == NULL);
    CHECK_STR(req_response_header(&r, "ETag"), "\"abc\"");
    CHECK_STR(req_response_header(&r, "Location"), "/v1/x");
    CHECK(r.status == 500 && r.problem);
    arena_release(&r.arena);
}

/* Titles come from the registered table only; what it lacks is undeclared (test builds of the
 * server abort on it in req_problem), except while nothing is registered. */
static void test_registered_codes_get_their_titles(void)
{
    CHECK_STR(problem_title("self_approval", 403), "Forbidden");
    CHECK(problem_declared("self_approval") && problem_declared("anything"));
    problem_register(codes, sizeof codes / sizeof codes[0]);
    CHECK_STR(problem_title("self_approval", 403), "Self-approval not allowed");
    CHECK_STR(problem_title("not_found", 404), "Resource not found");
    CHECK_STR(problem_title("never_heard_of", 409), "Conflict");
    CHECK(problem_declared("self_approval") && !problem_declared("never_heard_of"));
    problem_register(NULL, 0);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_registered_codes_get_their_titles),
        UNIT_TEST(test_a_problem_drops_the_success_caching_and_page_policy),
        UNIT_TEST(test_problem_has_every_member_and_status_matches),
        UNIT_TEST(test_validation_problem_lists_every_error),
        UNIT_TEST(test_a_page_problem_is_an_escaped_html_page),
        UNIT_TEST(test_unknown_code_gets_the_reason_phrase_as_title),
    };
    return unit_run("problem", tests, sizeof tests / sizeof tests[0]);
}
