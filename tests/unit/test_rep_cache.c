/* The representation cache: a representation is found only by its whole key (table, workspace,
 * id, version), a newer one replaces what its slot held, oversized ones are not kept. */
#include "runtime/rep_cache.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/unit.h"

static struct arena a;

static const char *get(const char *table, const char *ws, const char *id, int64_t v)
{
    size_t len = 0;
    const char *j = rep_cache_get(&a, table, ws, id, v, &len);
    if (j && len != strlen(j))
        return "length differs";
    return j;
}

static void test_found_only_by_its_whole_key(void)
{
    arena_init(&a);
    rep_cache_clear();
    rep_cache_put("payments", "wsp_a", "pay_1", 3, "{\"v\":3}", 7);
    CHECK_STR(get("payments", "wsp_a", "pay_1", 3), "{\"v\":3}");
    CHECK(get("payments", "wsp_a", "pay_1", 4) == NULL);        /* another version */
    CHECK(get("payments", "wsp_b", "pay_1", 3) == NULL);        /* another workspace */
    CHECK(get("beneficiaries", "wsp_a", "pay_1", 3) == NULL);   /* another table */
    CHECK(get("payments", "wsp_a", "pay_2", 3) == NULL);        /* another id */
    /* the separators are part of the key: no other split of the same letters matches */
    rep_cache_put("pay", "ments\nwsp", "x", 1, "{}", 2);
    CHECK(get("payments", "wsp", "x", 1) == NULL);
    arena_release(&a);
}

static void test_a_newer_version_and_the_copy_it_hands_out(void)
{
    arena_init(&a);
    rep_cache_clear();
    rep_cache_put("payments", "wsp_a", "pay_1", 3, "{\"v\":3}", 7);
    rep_cache_put("payments", "wsp_a", "pay_1", 4, "{\"v\":4}", 7);
    CHECK_STR(get("payments", "wsp_a", "pay_1", 4), "{\"v\":4}");
    size_t len = 0;
    char *copy = rep_cache_get(&a, "payments", "wsp_a", "pay_1", 4, &len);
    CHECK(copy != NULL && len == 7);
    if (copy)
        copy[0] = 'X'; /* the caller's copy: the kept one is untouched */
    CHECK_STR(get("payments", "wsp_a", "pay_1", 4), "{\"v\":4}");
    arena_release(&a);
}

static void test_oversized_and_many_entries(void)
{
    arena_init(&a);
    rep_cache_clear();
    static char big[REP_CACHE_MAX_BYTES + 2];
    memset(big, 'x', sizeof big - 1);
    rep_cache_put("payments", "wsp_a", "pay_big", 1, big, sizeof big - 1);
    CHECK(get("payments", "wsp_a", "pay_big", 1) == NULL);
    /* more entries than slots: whatever is found is still the right one */
    char id[32], json[32];
    for (int i = 0; i < 2 * REP_CACHE_SLOTS; i++) {
        snprintf(id, sizeof id, "pay_%d", i);
        snprintf(json, sizeof json, "{\"i\":%d}", i);
        rep_cache_put("payments", "wsp_a", id, 1, json, strlen(json));
    }
    int found = 0, wrong = 0;
    for (int i = 0; i < 2 * REP_CACHE_SLOTS; i++) {
        snprintf(id, sizeof id, "pay_%d", i);
        snprintf(json, sizeof json, "{\"i\":%d}", i);
        const char *j = get("payments", "wsp_a", id, 1);
        found += j != NULL;
        wrong += j != NULL && strcmp(j, json) != 0;
    }
    CHECK(wrong == 0);
    CHECK(found > 0 && found <= REP_CACHE_SLOTS);
    rep_cache_clear();
    CHECK(get("payments", "wsp_a", "pay_1", 1) == NULL);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_found_only_by_its_whole_key),
        UNIT_TEST(test_a_newer_version_and_the_copy_it_hands_out),
        UNIT_TEST(test_oversized_and_many_entries),
    };
    return unit_run("rep_cache", tests, sizeof tests / sizeof tests[0]);
}
