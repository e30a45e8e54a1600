/* Unit tests for runtime/media.c: Accept negotiation (RFC 9110 §12.5.1) and the Content-Type
 * of raw request bodies. */
#include "runtime/arena.h"
#include "runtime/media.h"
#include "tests/unit/unit.h"

static const enum media json_csv[] = { MEDIA_JSON, MEDIA_CSV };
static const enum media csv_json[] = { MEDIA_CSV, MEDIA_JSON };
static const enum media pdf_only[] = { MEDIA_PDF };

static enum media pick(const char *accept)
{
    return media_negotiate(accept, json_csv, 2);
}

static void test_an_absent_or_blank_accept_takes_the_first_type(void)
{
    CHECK(pick(NULL) == MEDIA_JSON);
    CHECK(pick("") == MEDIA_JSON);
    CHECK(pick("  , ") == MEDIA_JSON);
    CHECK(media_negotiate(NULL, csv_json, 2) == MEDIA_CSV);
    CHECK(media_negotiate(NULL, pdf_only, 1) == MEDIA_PDF);
}

static void test_exact_types_and_ranges_match(void)
{
    CHECK(pick("text/csv") == MEDIA_CSV);
    CHECK(pick("TEXT/CSV") == MEDIA_CSV);
    CHECK(pick("application/json") == MEDIA_JSON);
    CHECK(pick("text/*") == MEDIA_CSV);
    CHECK(pick("application/*") == MEDIA_JSON);
    CHECK(pick("*/*") == MEDIA_JSON);
    CHECK(media_negotiate("*/*", csv_json, 2) == MEDIA_CSV);
    CHECK(pick("text/csv;charset=utf-8") == MEDIA_CSV);
    CHECK(pick("text/csv; charset=\"UTF-8\"") == MEDIA_CSV);
    CHECK(pick("text/csv;header=present") == MEDIA_CSV);
    /* a parameter we never produce: that range asks for something else */
    CHECK(pick("text/csv;header=absent, application/json;q=0.1") == MEDIA_JSON);
    CHECK(pick("application/json;profile=\"urn:x\", text/csv;q=0.2") == MEDIA_CSV);
}

static void test_q_values_decide_and_ties_go_to_the_spec_order(void)
{
    CHECK(pick("application/json;q=0.5, text/csv") == MEDIA_CSV);
    CHECK(pick("application/json;q=0.5, text/csv;q=0.4") == MEDIA_JSON);
    CHECK(pick("application/json;q=0.5, text/csv;q=0.5") == MEDIA_JSON);
    CHECK(media_negotiate("application/json;q=0.5, text/csv;q=0.5", csv_json, 2) == MEDIA_CSV);
    CHECK(pick("text/csv;q=0.001, application/json;q=0") == MEDIA_CSV);
    CHECK(pick("text/csv ; q=1.000") == MEDIA_CSV);
    CHECK(pick("*/*;q=0.1, text/csv") == MEDIA_CSV);
}

static void test_the_most_specific_range_wins_and_q0_excludes(void)
{
    CHECK(pick("*/*, application/json;q=0") == MEDIA_CSV);
    CHECK(pick("text/*;q=0.2, text/csv;q=0, */*;q=0.1") == MEDIA_JSON);
    CHECK(pick("text/csv;q=0.9, text/*;q=0.1, */*;q=0.5") == MEDIA_CSV);
    CHECK(pick("text/csv;charset=utf-8;q=0, */*") == MEDIA_JSON);
    CHECK(pick("application/json;q=0, text/csv;q=0") == MEDIA_NONE);
    CHECK(pick("*/*;q=0") == MEDIA_NONE);
}

static void test_nothing_acceptable_is_none(void)
{
    CHECK(pick("application/xml") == MEDIA_NONE);
    CHECK(pick("image/*") == MEDIA_NONE);
    CHECK(pick("text/html, application/xhtml+xml") == MEDIA_NONE);
    CHECK(media_negotiate("text/csv", pdf_only, 1) == MEDIA_NONE);
    CHECK(media_negotiate("application/*", pdf_only, 1) == MEDIA_PDF);
    CHECK(media_negotiate("text/csv", NULL, 0) == MEDIA_NONE);
}

static void test_malformed_elements_are_ignored(void)
{
    CHECK(pick("garbage") == MEDIA_NONE);
    CHECK(pick("garbage, text/csv") == MEDIA_CSV);
    CHECK(pick("*/csv") == MEDIA_NONE);
    CHECK(pick("text/csv;q=1.5") == MEDIA_NONE);
    CHECK(pick("text/csv;q=0.0001") == MEDIA_NONE);
    CHECK(pick("text/csv;q=, application/json") == MEDIA_JSON);
    CHECK(pick("text/csv;q=2") == MEDIA_NONE);
    CHECK(pick("text/csv;q=0.5;q=1") == MEDIA_NONE);
    CHECK(pick("text/csv;charset=latin1") == MEDIA_NONE);
    CHECK(pick("text/csv;charset=\"utf-8, x\", application/json;q=0.1") == MEDIA_JSON);
    CHECK(pick("text/csv;charset=\"unterminated") == MEDIA_NONE);
    CHECK(pick("text/csv x") == MEDIA_NONE);
    CHECK(pick("/") == MEDIA_NONE);
    CHECK(pick("text/csv;q=0.5;ext=1") == MEDIA_CSV);
}

static void test_content_types_and_names(void)
{
    CHECK_STR(media_content_type(MEDIA_CSV), "text/csv; charset=utf-8");
    CHECK_STR(media_content_type(MEDIA_TEXT), "text/plain; charset=utf-8");
    CHECK_STR(media_content_type(MEDIA_XML), "application/xml; charset=utf-8");
    CHECK_STR(media_content_type(MEDIA_PDF), "application/pdf");
    CHECK_STR(media_content_type(MEDIA_JSON), "application/json");
    CHECK_STR(media_name(MEDIA_NONE), "");
    CHECK(media_of("text/csv; charset=utf-8") == MEDIA_CSV);
    CHECK(media_of("Application/PDF") == MEDIA_PDF);
    CHECK(media_of("application/problem+json") == MEDIA_NONE);
    CHECK(media_of(NULL) == MEDIA_NONE);
    CHECK(media_is_text(MEDIA_CSV) && media_is_text(MEDIA_TEXT) && !media_is_text(MEDIA_XML));
    struct arena a;
    arena_init(&a);
    CHECK_STR(media_list(&a, json_csv, 2), "application/json, text/csv");
    CHECK_STR(media_list(&a, pdf_only, 1), "application/pdf");
    arena_release(&a);
}

static void test_raw_body_content_types(void)
{
    unsigned allowed = MEDIA_BIT(MEDIA_XML) | MEDIA_BIT(MEDIA_TEXT);
    const char *why = NULL;
    CHECK(media_request_type("application/xml", allowed, &why) == MEDIA_XML && !why);
    CHECK(media_request_type("text/plain; charset=utf-8", allowed, &why) == MEDIA_TEXT);
    CHECK(media_request_type("text/plain;charset=\"UTF-8\"", allowed, &why) == MEDIA_TEXT);
    CHECK(media_request_type("text/plain; format=flowed", allowed, &why) == MEDIA_TEXT);
    CHECK(media_request_type("text/plain; charset=iso-8859-1", allowed, &why) == MEDIA_NONE);
    CHECK_STR(why, "only charset=utf-8 is accepted");
    CHECK(media_request_type("text/csv", allowed, &why) == MEDIA_NONE);
    CHECK_STR(why, "not an accepted media type");
    CHECK(media_request_type("application/json", allowed, &why) == MEDIA_NONE);
    CHECK(media_request_type(NULL, allowed, &why) == MEDIA_NONE);
    CHECK_STR(why, "no Content-Type");
    CHECK(media_request_type("text/plain; charset", allowed, &why) == MEDIA_NONE);
    CHECK_STR(why, "malformed Content-Type parameters");
    CHECK(media_request_type("text/plain x", allowed, &why) == MEDIA_NONE);
}

int main(void)
{
    static const struct unit_test tests[] = {
        { "an_absent_or_blank_accept_takes_the_first_type",
          test_an_absent_or_blank_accept_takes_the_first_type },
        { "exact_types_and_ranges_match", test_exact_types_and_ranges_match },
        { "q_values_decide_and_ties_go_to_the_spec_order",
          test_q_values_decide_and_ties_go_to_the_spec_order },
        { "the_most_specific_range_wins_and_q0_excludes",
          test_the_most_specific_range_wins_and_q0_excludes },
        { "nothing_acceptable_is_none", test_nothing_acceptable_is_none },
        { "malformed_elements_are_ignored", test_malformed_elements_are_ignored },
        { "content_types_and_names", test_content_types_and_names },
        { "raw_body_content_types", test_raw_body_content_types },
    };
    return unit_run("media", tests, sizeof tests / sizeof tests[0]);
}
