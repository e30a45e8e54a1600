/* Unit tests for runtime/totp.c against the RFC 6238 Appendix B vectors (SHA-1) and base32. */
#include "runtime/totp.h"
#include "tests/unit/unit.h"

static const unsigned char rfc_key[] = "12345678901234567890";

static void test_rfc_6238_sha1_vectors(void)
{
    /* Appendix B lists 8 digits; the 6-digit code is its last six. */
    static const struct {
        int64_t t;
        const char *code;
    } v[] = {{59, "287082"},         {1111111109, "081804"}, {1111111111, "050471"},
             {1234567890, "005924"}, {2000000000, "279037"}, {20000000000, "353130"}};
    char out[TOTP_DIGITS + 1];
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        totp_code(rfc_key, 20, v[i].t / TOTP_STEP_S, out);
        CHECK_STR(out, v[i].code);
    }
}

static void test_match_allows_one_step_of_drift_and_no_more(void)
{
    char code[TOTP_DIGITS + 1];
    int64_t now = 1234567890, step = now / TOTP_STEP_S;
    totp_code(rfc_key, 20, step, code);
    CHECK(totp_match(rfc_key, 20, code, now) == step);
    CHECK(totp_match(rfc_key, 20, code, now + TOTP_STEP_S) == step);
    CHECK(totp_match(rfc_key, 20, code, now - TOTP_STEP_S) == step);
    CHECK(totp_match(rfc_key, 20, code, now + 2 * TOTP_STEP_S) == -1);
    CHECK(totp_match(rfc_key, 20, "12345", now) == -1);
    CHECK(totp_match(rfc_key, 20, NULL, now) == -1);
}

static void test_base32_round_trips(void)
{
    char text[64];
    unsigned char back[40];
    size_t n = 0;
    totp_base32(rfc_key, 20, text);
    CHECK_STR(text, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
    CHECK(totp_base32_decode("gezdgnbvgy3tqojqgezdgnbvgy3tqojq", back, sizeof back, &n) == 0);
    CHECK(n == 20 && memcmp(back, rfc_key, 20) == 0);
    CHECK(totp_base32_decode("GEZ1", back, sizeof back, &n) == -1);
    CHECK(totp_base32_decode("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", back, 4, &n) == -1);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_rfc_6238_sha1_vectors),
        UNIT_TEST(test_match_allows_one_step_of_drift_and_no_more),
        UNIT_TEST(test_base32_round_trips),
    };
    return unit_run("totp", tests, sizeof tests / sizeof tests[0]);
}
