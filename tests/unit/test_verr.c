/* Validation error list: RFC 6901 pointers, the VERR_MAX cap, strings owned by the arena. */
#include "runtime/verr.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/unit.h"

static void test_pointer_joins_base_and_token(void)
{
    struct arena a;
    struct verr_list l;
    arena_init(&a);
    verr_init(&l, &a);
    verr_add(&l, "", "name", "required", "name is required");
    verr_add(&l, "/bank", "bic", "format", "not a BIC: %s", "XX");
    verr_add(&l, "/items/3", NULL, "type", "expected object");
    verr_add(&l, "", NULL, "type", "expected object");
    verr_add(&l, NULL, "q", "required", "x");
    CHECK(l.count == 5 && !l.truncated);
    CHECK_STR(l.items[0].pointer, "/name");
    CHECK_STR(l.items[0].code, "required");
    CHECK_STR(l.items[0].detail, "name is required");
    CHECK_STR(l.items[1].pointer, "/bank/bic");
    CHECK_STR(l.items[1].detail, "not a BIC: XX");
    CHECK_STR(l.items[2].pointer, "/items/3");
    CHECK_STR(l.items[3].pointer, "");
    CHECK_STR(l.items[4].pointer, "/q");
    arena_release(&a);
}

static void test_tokens_are_escaped_per_rfc_6901(void)
{
    struct arena a;
    arena_init(&a);
    CHECK_STR(verr_child(&a, "", "a/b"), "/a~1b");
    CHECK_STR(verr_child(&a, "", "m~n"), "/m~0n");
    CHECK_STR(verr_child(&a, "/x", "~/~1"), "/x/~0~1~01");
    CHECK_STR(verr_child(&a, "", ""), "/");
    CHECK_STR(verr_child(&a, "/a", "\xc3\xa9 b"), "/a/\xc3\xa9 b");
    CHECK_STR(verr_index(&a, "/items", 0), "/items/0");
    CHECK_STR(verr_index(&a, "", 42), "/42");
    struct verr_list l;
    verr_init(&l, &a);
    verr_add(&l, "/p", "a/b~c", "additional_property", "unknown property");
    CHECK_STR(l.items[0].pointer, "/p/a~1b~0c");
    arena_release(&a);
}

static void test_list_is_capped_and_marked_truncated(void)
{
    struct arena a;
    struct verr_list l;
    arena_init(&a);
    verr_init(&l, &a);
    for (int i = 0; i < VERR_MAX; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "f%d", i);
        verr_add(&l, "", tok, "required", "missing %d", i);
    }
    CHECK(l.count == VERR_MAX && !l.truncated);
    for (int i = 0; i < 1000; i++)
        verr_add(&l, "", "more", "required", "missing");
    CHECK(l.count == VERR_MAX && l.truncated);
    CHECK_STR(l.items[VERR_MAX - 1].pointer, "/f49");
    CHECK_STR(l.items[VERR_MAX - 1].detail, "missing 49");
    arena_release(&a);
}

static void test_strings_are_copied_not_borrowed(void)
{
    struct arena a;
    struct verr_list l;
    arena_init(&a);
    verr_init(&l, &a);
    char base[8] = "/x", tok[8] = "y", code[16] = "pattern";
    verr_add(&l, base, tok, code, "%s", "detail");
    strcpy(base, "/zz");
    strcpy(tok, "zz");
    strcpy(code, "zz");
    CHECK_STR(l.items[0].pointer, "/x/y");
    CHECK_STR(l.items[0].code, "pattern");
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_pointer_joins_base_and_token),
        UNIT_TEST(test_tokens_are_escaped_per_rfc_6901),
        UNIT_TEST(test_list_is_capped_and_marked_truncated),
        UNIT_TEST(test_strings_are_copied_not_borrowed),
    };
    return unit_run("verr", tests, sizeof tests / sizeof tests[0]);
}
