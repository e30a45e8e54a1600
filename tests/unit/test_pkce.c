/* Unit tests for runtime/pkce.c: the RFC 7636 Appendix B vector, verifier and challenge syntax
 * at their bounds. */
#include "runtime/pkce.h"
#include "tests/unit/unit.h"

static void test_the_rfc_7636_appendix_b_vector_matches(void)
{
    const char *verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const char *challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    CHECK(pkce_verifier_ok(verifier) && pkce_challenge_ok(challenge));
    CHECK(pkce_s256_matches(verifier, challenge));
    CHECK(!pkce_s256_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK", challenge));
    CHECK(!pkce_s256_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"));
    CHECK(!pkce_s256_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c"));
    CHECK(!pkce_s256_matches(verifier, verifier)); /* plain is not S256 */
}

static void test_verifiers_are_43_to_128_unreserved_characters(void)
{
    char v[130];
    memset(v, 'a', sizeof v);
    v[42] = '\0';
    CHECK(!pkce_verifier_ok(v));
    v[42] = 'a';
    v[43] = '\0';
    CHECK(pkce_verifier_ok(v));
    v[43] = 'a';
    v[128] = '\0';
    CHECK(pkce_verifier_ok(v));
    v[128] = 'a';
    v[129] = '\0';
    CHECK(!pkce_verifier_ok(v));
    CHECK(pkce_verifier_ok("-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"));
    const char *bad[] = {"+", "/", "=", " ", "%", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char w[64];
        snprintf(w, sizeof w, "%s%s", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", bad[i]);
        CHECK(!pkce_verifier_ok(w));
    }
}

static void test_challenges_are_43_base64url_characters(void)
{
    CHECK(!pkce_challenge_ok("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c"));
    CHECK(!pkce_challenge_ok("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cMM"));
    CHECK(!pkce_challenge_ok("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM"));
    CHECK(!pkce_challenge_ok("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw.cM"));
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_the_rfc_7636_appendix_b_vector_matches),
        UNIT_TEST(test_verifiers_are_43_to_128_unreserved_characters),
        UNIT_TEST(test_challenges_are_43_base64url_characters),
    };
    return unit_run("pkce", tests, sizeof tests / sizeof tests[0]);
}
