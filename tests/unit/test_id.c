/* Ids and secrets: shape, alphabet, uniqueness, buffer limits. */
#include "runtime/id.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/unit.h"

static bool only(const char *s, const char *alphabet)
{
    for (; *s; s++)
        if (!strchr(alphabet, *s))
            return false;
    return true;
}

static void test_new_id_is_prefix_and_26_crockford_characters(void)
{
    struct arena a;
    arena_init(&a);
    char *id = id_new(&a, "ben");
    CHECK(strlen(id) == 4 + 26);
    CHECK(strncmp(id, "ben_", 4) == 0);
    CHECK(only(id + 4, "0123456789abcdefghjkmnpqrstvwxyz"));
    /* 128 bits in 130: the first character (of the timestamp) carries three bits. */
    CHECK(id[4] >= '0' && id[4] <= '7');
    CHECK(id_valid(id, "ben"));
    CHECK(!id_valid(id, "pay"));
    CHECK(!id_valid(id, "be"));
    arena_release(&a);
}

static int cmp(const void *x, const void *y)
{
    return strcmp(x, y);
}

static void test_ids_do_not_repeat(void)
{
    enum { COUNT = 20000 };
    static char ids[COUNT][ID_MAX];
    for (int i = 0; i < COUNT; i++)
        CHECK(id_new_buf(ids[i], ID_MAX, "pay") == 0);
    qsort(ids, COUNT, ID_MAX, cmp);
    int dups = 0;
    for (int i = 1; i < COUNT; i++)
        dups += strcmp(ids[i], ids[i - 1]) == 0;
    CHECK(dups == 0);
    /* Every character of the random part (after the 10 of the timestamp) varies, so nothing
     * there is a counter or a constant. */
    for (int pos = 4 + 10; pos < 30; pos++) {
        bool varies = false;
        for (int i = 1; i < COUNT && !varies; i++)
            varies = ids[i][pos] != ids[0][pos];
        CHECK(varies);
    }
}

static uint64_t decode_ms(const char *body)
{
    static const char b32[] = "0123456789abcdefghjkmnpqrstvwxyz";
    uint64_t v = 0;
    for (int i = 0; i < 10; i++)
        v = v << 5 | (uint64_t)(strchr(b32, body[i]) - b32);
    return v;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ULID layout: the first 10 characters are the creation time in ms, so later ids sort later
 * (what keeps inserts at the end of every id index). */
static void test_ids_start_with_their_creation_time_and_sort_by_it(void)
{
    char a[ID_MAX], b[ID_MAX];
    uint64_t before = now_ms();
    CHECK(id_new_buf(a, ID_MAX, "pay") == 0);
    uint64_t after = now_ms();
    CHECK(decode_ms(a + 4) >= before && decode_ms(a + 4) <= after);
    struct timespec pause = { 0, 3 * 1000 * 1000 };
    for (int i = 0; i < 20; i++) {
        nanosleep(&pause, NULL);
        CHECK(id_new_buf(b, ID_MAX, "pay") == 0);
        CHECK(strcmp(a, b) < 0);
        memcpy(a, b, sizeof a);
    }
}

static void test_id_new_buf_refuses_small_buffers(void)
{
    char buf[ID_MAX];
    CHECK(id_new_buf(buf, 4 + 26 + 1, "wsp") == 0);
    CHECK(id_valid(buf, "wsp"));
    CHECK(id_new_buf(buf, 4 + 26, "wsp") == -1);
    CHECK(buf[0] == '\0');
    CHECK(id_new_buf(buf, 0, "wsp") == -1);
}

static void test_id_valid_checks_the_whole_shape(void)
{
    CHECK(id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3a", "ben"));
    CHECK(id_valid("ben_zzzzzzzzzzzzzzzzzzzzzzzzzz", "ben"));
    CHECK(id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3a", NULL));
    CHECK(!id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3", "ben"));   /* 25 */
    CHECK(!id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3ab", "ben")); /* 27 */
    CHECK(!id_valid("ben_01HV3K5M7Q9S1T3V5W7X9Y1Z3A", "ben"));  /* upper case */
    CHECK(!id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3i", "ben"));  /* i is not Crockford */
    CHECK(!id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3l", "ben"));
    CHECK(!id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3o", "ben"));
    CHECK(!id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3u", "ben"));
    CHECK(!id_valid("ben-01hv3k5m7q9s1t3v5w7x9y1z3a", "ben"));
    CHECK(!id_valid("ben01hv3k5m7q9s1t3v5w7x9y1z3ab", "ben"));
    CHECK(!id_valid("bene_1hv3k5m7q9s1t3v5w7x9y1z3a", "ben"));
    CHECK(!id_valid("_01hv3k5m7q9s1t3v5w7x9y1z3a000", NULL));
    CHECK(!id_valid("ben_", "ben"));
    CHECK(!id_valid("", "ben"));
    CHECK(!id_valid(NULL, "ben"));
    CHECK(!id_valid("ben_01hv3k5m7q9s1t3v5w7x9y1z3a/x", "ben"));
}

static void test_secret_is_unpadded_base64url_of_the_requested_bytes(void)
{
    struct arena a;
    arena_init(&a);
    static const size_t sizes[] = { 0, 1, 2, 3, 16, 31, 32, 64 };
    static const size_t lens[] = { 0, 2, 3, 4, 22, 42, 43, 86 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *s = id_secret(&a, sizes[i]);
        CHECK(strlen(s) == lens[i]);
        CHECK(only(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"));
    }
    char *x = id_secret(&a, 32), *y = id_secret(&a, 32);
    CHECK(strcmp(x, y) != 0);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_new_id_is_prefix_and_26_crockford_characters),
        UNIT_TEST(test_ids_do_not_repeat),
        UNIT_TEST(test_ids_start_with_their_creation_time_and_sort_by_it),
        UNIT_TEST(test_id_new_buf_refuses_small_buffers),
        UNIT_TEST(test_id_valid_checks_the_whole_shape),
        UNIT_TEST(test_secret_is_unpadded_base64url_of_the_requested_bytes),
    };
    return unit_run("id", tests, sizeof tests / sizeof tests[0]);
}
