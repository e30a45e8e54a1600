/* Unit tests for runtime/seal.c: round trip, fresh nonces, tampering and another key refused. */
#include "runtime/seal.h"
#include "tests/unit/unit.h"

static const unsigned char k1[32] = {1}, k2[32] = {2};

static void test_sealed_secrets_open_again_and_differ_each_time(void)
{
    struct arena a;
    unsigned char out[64];
    size_t n = 0;
    arena_init(&a);
    seal_init(k1, sizeof k1);
    char *x = seal(&a, (const unsigned char *)"totp seed 1234567890", 20);
    char *y = seal(&a, (const unsigned char *)"totp seed 1234567890", 20);
    CHECK(x && y && strncmp(x, "v1.", 3) == 0 && strcmp(x, y) != 0);
    CHECK(strstr(x, "seed") == NULL);
    CHECK(seal_open(x, out, sizeof out, &n) == 0 && n == 20 && memcmp(out, "totp seed", 9) == 0);
    CHECK(seal_open(x, out, 10, &n) == -1); /* does not fit */
    arena_release(&a);
}

static void test_altered_or_foreign_sealed_text_is_refused(void)
{
    struct arena a;
    unsigned char out[64];
    size_t n = 0;
    arena_init(&a);
    seal_init(k1, sizeof k1);
    char *x = seal(&a, (const unsigned char *)"secret", 6);
    char *bad = arena_strdup(&a, x);
    bad[10] = bad[10] == 'A' ? 'B' : 'A';
    CHECK(seal_open(bad, out, sizeof out, &n) == -1);
    CHECK(seal_open("v2.AAAA", out, sizeof out, &n) == -1);
    CHECK(seal_open("v1.!!", out, sizeof out, &n) == -1);
    CHECK(seal_open("v1.AAAA", out, sizeof out, &n) == -1);
    seal_init(k2, sizeof k2);
    CHECK(seal_open(x, out, sizeof out, &n) == -1);
    arena_release(&a);
}

/* An authorization request of an application asking for every scope, sealed into the
 * sign-in page of a browser that has not signed in: a 2.5 KB plaintext fits, a larger one not. */
static void test_a_whole_authorization_request_fits(void)
{
    struct arena a;
    static unsigned char plain[2561], out[2561];
    size_t n = 0;
    arena_init(&a);
    seal_init(k1, sizeof k1);
    memset(plain, 's', sizeof plain);
    char *x = seal(&a, plain, 2560);
    CHECK(x && strlen(x) < 4096);
    CHECK(seal_open(x, out, sizeof out, &n) == 0 && n == 2560 && memcmp(out, plain, n) == 0);
    CHECK(seal(&a, plain, 2561) == NULL);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_sealed_secrets_open_again_and_differ_each_time),
        UNIT_TEST(test_altered_or_foreign_sealed_text_is_refused),
        UNIT_TEST(test_a_whole_authorization_request_fits),
    };
    return unit_run("seal", tests, sizeof tests / sizeof tests[0]);
}
