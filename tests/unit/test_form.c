/* Unit tests for runtime/form.c: form bodies into JSON objects of strings. */
#include "runtime/form.h"
#include "tests/unit/unit.h"

static const char *convert(struct arena *a, const char *body, const char **why)
{
    char *json = NULL;
    size_t len = 0;
    *why = NULL;
    return form_to_json(a, body, strlen(body), &json, &len, why) == 0 ? json : NULL;
}

static void test_pairs_become_a_json_object_of_strings(void)
{
    struct arena a;
    const char *why;
    arena_init(&a);
    CHECK_STR(convert(&a, "grant_type=refresh_token&refresh_token=abc-_9", &why),
              "{\"grant_type\":\"refresh_token\",\"refresh_token\":\"abc-_9\"}");
    CHECK_STR(convert(&a, "", &why), "{}");
    CHECK_STR(convert(&a, "scope=a%3Aread+b%3Awrite", &why), "{\"scope\":\"a:read b:write\"}");
    CHECK_STR(convert(&a, "a=1&&b=", &why), "{\"a\":\"1\",\"b\":\"\"}");
    CHECK_STR(convert(&a, "flag", &why), "{\"flag\":\"\"}");
    CHECK_STR(convert(&a, "q=%22%5C%0A", &why), "{\"q\":\"\\\"\\\\\\n\"}");
    CHECK_STR(convert(&a, "n=%C3%A9", &why), "{\"n\":\"\xc3\xa9\"}");
    CHECK_STR(convert(&a, "x=a=b", &why), "{\"x\":\"a=b\"}");
    arena_release(&a);
}

static void test_malformed_forms_are_refused_with_a_reason(void)
{
    struct arena a;
    const char *why;
    static const char *const bad[] = {"a=%", "a=%4", "a=%zz", "a=%C3", "a=%00", "%ZZ=1",
                                      "=1", "a=1&a=2", "a=%ff%fe"};
    arena_init(&a);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(convert(&a, bad[i], &why) == NULL);
        CHECK(why != NULL && *why);
    }
    char many[FORM_MAX_PAIRS * 8 + 16];
    size_t o = 0;
    for (int i = 0; i <= FORM_MAX_PAIRS; i++)
        o += (size_t)snprintf(many + o, sizeof many - o, "k%d=v&", i);
    CHECK(convert(&a, many, &why) == NULL);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_pairs_become_a_json_object_of_strings),
        UNIT_TEST(test_malformed_forms_are_refused_with_a_reason),
    };
    return unit_run("form", tests, sizeof tests / sizeof tests[0]);
}
