/* Pagination cursors: round trip, tamper detection, filter binding. */
#include "runtime/cursor.h"

#include <string.h>

#include "tests/unit/unit.h"

static struct arena a;

static void setup(void)
{
    static const unsigned char secret[32] = { 1, 2, 3 };
    arena_init(&a);
    cursor_init(secret, sizeof secret);
}

static void test_cursor_round_trips_position(void)
{
    setup();
    char *c = cursor_encode(&a, "status=active", "2026-11-22T07:39:11.123Z", "ben_abc");
    char *k = NULL, *id = NULL;
    CHECK(cursor_decode(&a, c, "status=active", &k, &id) == 0);
    CHECK_STR(k, "2026-11-22T07:39:11.123Z");
    CHECK_STR(id, "ben_abc");
    arena_release(&a);
}

static void test_cursor_is_refused_with_other_filters(void)
{
    setup();
    char *c = cursor_encode(&a, "status=active", "k", "id");
    char *k = NULL, *id = NULL;
    CHECK(cursor_decode(&a, c, "status=archived", &k, &id) == -1);
    arena_release(&a);
}

static void test_tampered_cursor_is_refused(void)
{
    setup();
    char *c = cursor_encode(&a, "", "k", "id");
    char *k = NULL, *id = NULL;
    for (size_t i = 0; c[i]; i++) {
        char *t = arena_strdup(&a, c);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        CHECK(cursor_decode(&a, t, "", &k, &id) == -1);
    }
    arena_release(&a);
}

static void test_garbage_cursors_are_refused(void)
{
    setup();
    const char *bad[] = { "", ".", "abc", "abc.def", "!!!.???", "a.b.c" };
    char *k = NULL, *id = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(cursor_decode(&a, bad[i], "", &k, &id) == -1);
    char big[700];
    memset(big, 'A', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[10] = '.';
    CHECK(cursor_decode(&a, big, "", &k, &id) == -1);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_cursor_round_trips_position),
        UNIT_TEST(test_cursor_is_refused_with_other_filters),
        UNIT_TEST(test_tampered_cursor_is_refused),
        UNIT_TEST(test_garbage_cursors_are_refused),
    };
    return unit_run("cursor", tests, sizeof tests / sizeof tests[0]);
}
