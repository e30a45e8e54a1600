/* Password hashing: scrypt round trip, strict parsing of stored hashes, salts, dummy checks,
 * generated passwords. Runs at ln=10 so the suite stays fast. */
#include "runtime/password.h"

#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "tests/unit/unit.h"

static const char pw[] = "correct horse battery staple";

static void test_hash_then_verify_accepts_same_password(void)
{
    char h[PASSWORD_HASH_MAX];
    CHECK(password_hash(pw, h, sizeof h) == 0);
    CHECK(strncmp(h, "$scrypt$ln=10,r=8,p=5$", 22) == 0);
    CHECK(password_verify(pw, h));
}

static void test_verify_rejects_wrong_password(void)
{
    char h[PASSWORD_HASH_MAX];
    CHECK(password_hash(pw, h, sizeof h) == 0);
    CHECK(!password_verify("correct horse battery stapl", h));
    CHECK(!password_verify("", h));
    CHECK(!password_verify("Correct horse battery staple", h));
}

static void test_encoding_has_phc_shape(void)
{
    char h[PASSWORD_HASH_MAX];
    CHECK(password_hash(pw, h, sizeof h) == 0);
    /* prefix, 22 chars of salt, '$', 43 chars of hash, no padding */
    const char *salt = h + 22;
    const char *d = strchr(salt, '$');
    CHECK(d && d - salt == 22);
    CHECK(d && strlen(d + 1) == 43);
    CHECK(h[strlen(h) - 1] != '=');
}

static void test_same_password_hashes_differently(void)
{
    char a[PASSWORD_HASH_MAX], b[PASSWORD_HASH_MAX];
    CHECK(password_hash(pw, a, sizeof a) == 0);
    CHECK(password_hash(pw, b, sizeof b) == 0);
    CHECK(strcmp(a, b) != 0);
    CHECK(password_verify(pw, a));
    CHECK(password_verify(pw, b));
}

static void test_hash_refuses_small_buffer(void)
{
    char h[40];
    CHECK(password_hash(pw, h, sizeof h) == -1);
}

static void test_verify_rejects_malformed_encodings(void)
{
    char h[PASSWORD_HASH_MAX], t[PASSWORD_HASH_MAX + 8];
    CHECK(password_hash(pw, h, sizeof h) == 0);
    const char *salt = h + 22;
    const char *d = strchr(salt, '$');
    const char *hash = d + 1;
    int sl = (int)(d - salt);
    const char *bad[] = {
        "",
        "$scrypt$",
        "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA",
        "plaintext",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!password_verify(pw, bad[i]));

    /* parameters outside what we produce */
    const char *params[] = {
        "ln=9,r=8,p=1", "ln=21,r=8,p=1",  "ln=010,r=8,p=1", "ln=10,r=16,p=1",    "ln=10,r=8,p=17",
        "ln=10,r=8",    "ln=-10,r=8,p=1", "ln=10,p=1,r=8",  "ln=10,r=8,p=1,x=1", "ln=10 ,r=8,p=1", "ln=10,r=8,p=0"};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        snprintf(t, sizeof t, "$scrypt$%s$%.*s$%s", params[i], sl, salt, hash);
        CHECK(!password_verify(pw, t));
    }
    /* the untouched pieces reassembled still verify, so the cases above fail for their reason */
    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$%.*s$%s", sl, salt, hash);
    CHECK(password_verify(pw, t));

    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$%.*s$%s==", sl, salt, hash); /* padding */
    CHECK(!password_verify(pw, t));
    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$%.*s$%.42s", sl, salt, hash); /* short hash */
    CHECK(!password_verify(pw, t));
    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$%.*s$%sA", sl, salt, hash); /* long hash */
    CHECK(!password_verify(pw, t));
    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$%.*s$%s$", sl, salt, hash); /* extra field */
    CHECK(!password_verify(pw, t));
    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$%.*s!$%s", sl - 1, salt, hash); /* bad char */
    CHECK(!password_verify(pw, t));
    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$$%s", hash); /* no salt */
    CHECK(!password_verify(pw, t));
    snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=5$%.*s$", sl, salt); /* no hash */
    CHECK(!password_verify(pw, t));

    /* flipping the last hash character to a non-canonical one (unused low bits set) */
    snprintf(t, sizeof t, "%s", h);
    char *last = t + strlen(t) - 1;
    *last = *last == 'B' ? 'C' : 'B';
    CHECK(!password_verify(pw, t));
    CHECK(!password_verify(NULL, h));
    CHECK(!password_verify(pw, NULL));
}

/* Hashes of earlier builds (p = 1, the OWASP 2^17/8/1 family) still verify. */
static void test_hashes_with_other_parallelism_still_verify(void)
{
    unsigned char salt[16], key[32];
    for (int i = 0; i < 16; i++)
        salt[i] = (unsigned char)(i * 11 + 1);
    for (int p = 1; p <= 3; p++) {
        CHECK(EVP_PBE_scrypt(pw, strlen(pw), salt, sizeof salt, 1024, 8, (uint64_t)p,
                             64u << 20, key, sizeof key) == 1);
        unsigned char s64[32], k64[48];
        EVP_EncodeBlock(s64, salt, sizeof salt);
        EVP_EncodeBlock(k64, key, sizeof key);
        *strchr((char *)s64, '=') = '\0';
        *strchr((char *)k64, '=') = '\0';
        char t[PASSWORD_HASH_MAX];
        snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=%d$%s$%s", p, s64, k64);
        CHECK(password_verify(pw, t));
        CHECK(!password_verify("correct horse battery stapl", t));
        /* the same hash claimed with another p is another hash */
        snprintf(t, sizeof t, "$scrypt$ln=10,r=8,p=%d$%s$%s", p + 1, s64, k64);
        CHECK(!password_verify(pw, t));
    }
}

static void test_dummy_verification_is_always_false(void)
{
    CHECK(!password_verify_dummy(pw));
    CHECK(!password_verify_dummy("treasury dummy password"));
    CHECK(!password_verify_dummy(""));
}

static void test_set_cost_ignores_out_of_range(void)
{
    char h[PASSWORD_HASH_MAX];
    password_set_cost(9);
    password_set_cost(21);
    password_set_cost(-1);
    CHECK(password_hash(pw, h, sizeof h) == 0);
    CHECK(strncmp(h, "$scrypt$ln=10,", 14) == 0);
    password_set_cost(11);
    CHECK(password_hash(pw, h, sizeof h) == 0);
    CHECK(strncmp(h, "$scrypt$ln=11,", 14) == 0);
    CHECK(password_verify(pw, h));
    password_set_cost(10);
}

static void test_generate_gives_length_and_unambiguous_charset(void)
{
    char a[64], b[64];
    CHECK(password_generate(a, sizeof a, 24) == 0);
    CHECK(strlen(a) == 24);
    for (size_t i = 0; a[i]; i++) {
        char c = a[i];
        bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        CHECK(alnum);
        CHECK(!strchr("0O1lIo", c));
    }
    CHECK(password_generate(b, sizeof b, 24) == 0);
    CHECK(strcmp(a, b) != 0);
    CHECK(password_generate(a, sizeof a, 63) == 0);
    CHECK(strlen(a) == 63);
}

static void test_generate_refuses_len_not_below_buffer(void)
{
    char a[16];
    CHECK(password_generate(a, sizeof a, 16) == -1);
    CHECK(password_generate(a, sizeof a, 0) == -1);
}

static void test_generate_uses_whole_alphabet(void)
{
    /* 20000 draws from 56 letters: every letter shows up (a biased or truncated table would not) */
    char seen[256] = {0};
    char buf[1001];
    for (int i = 0; i < 20; i++) {
        CHECK(password_generate(buf, sizeof buf, 1000) == 0);
        for (size_t j = 0; buf[j]; j++)
            seen[(unsigned char)buf[j]] = 1;
    }
    int distinct = 0;
    for (int i = 0; i < 256; i++)
        distinct += seen[i];
    CHECK(distinct == 56);
}

static void test_policy_accepts_long_unusual_passwords(void)
{
    CHECK(password_policy_violation("correct horse battery", "a@example.com") == NULL);
    CHECK(password_policy_violation("\xc3\xa9t\xc3\xa9 \xc3\xa0 la plage!", NULL) == NULL);
    CHECK(password_policy_violation("x1y2z3w4v5u6", "") == NULL);
}

static void test_policy_refuses_short_common_repeated_or_email_passwords(void)
{
    CHECK(password_policy_violation("short pw", "a@example.com") != NULL);
    CHECK(password_policy_violation("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", NULL) != NULL); /* 12 bytes, 6 chars */
    CHECK(password_policy_violation("Password1234", "a@example.com") != NULL);
    CHECK(password_policy_violation("QWERTYUIOPAS", NULL) != NULL);
    CHECK(password_policy_violation("aaaaaaaaaaaaaaaa", NULL) != NULL);
    CHECK(password_policy_violation("long.name.here@example.com", "Long.Name.Here@Example.com") != NULL);
    CHECK(password_policy_violation("long.name.here", "long.name.here@example.com") != NULL);
    CHECK(password_policy_violation("bad\xff utf-8 string", NULL) != NULL);
    char big[PASSWORD_MAX_LEN + 2];
    memset(big, 'a', sizeof big - 1);
    big[1] = 'b';
    big[sizeof big - 1] = '\0';
    CHECK(password_policy_violation(big, NULL) != NULL);
}

/* At the default cost a hash works in 16 MiB; once it is done they are given back. With
 * glibc's moving threshold the second hash's buffer comes from the heap and stays resident. */
static void test_a_hash_gives_its_work_buffer_back(void)
{
#ifndef __SANITIZE_ADDRESS__ /* ASan's allocator keeps freed blocks in quarantine */
    char out[PASSWORD_HASH_MAX];
    password_set_cost(14);
    CHECK(password_hash(pw, out, sizeof out) == 0);
    long before = unit_proc_number("/proc/self/status", "VmRSS:"); /* KiB */
    CHECK(password_hash(pw, out, sizeof out) == 0);
    CHECK(password_verify(pw, out));
    long after = unit_proc_number("/proc/self/status", "VmRSS:");
    CHECK(before > 0 && after - before < 8 * 1024);
    password_set_cost(10);
#endif
}

int main(void)
{
    password_memory_init();
    password_set_cost(10);
    static const struct unit_test tests[] = {
        UNIT_TEST(test_policy_accepts_long_unusual_passwords),
        UNIT_TEST(test_policy_refuses_short_common_repeated_or_email_passwords),
        UNIT_TEST(test_hash_then_verify_accepts_same_password),
        UNIT_TEST(test_a_hash_gives_its_work_buffer_back),
        UNIT_TEST(test_verify_rejects_wrong_password),
        UNIT_TEST(test_encoding_has_phc_shape),
        UNIT_TEST(test_same_password_hashes_differently),
        UNIT_TEST(test_hash_refuses_small_buffer),
        UNIT_TEST(test_verify_rejects_malformed_encodings),
        UNIT_TEST(test_hashes_with_other_parallelism_still_verify),
        UNIT_TEST(test_dummy_verification_is_always_false),
        UNIT_TEST(test_set_cost_ignores_out_of_range),
        UNIT_TEST(test_generate_gives_length_and_unambiguous_charset),
        UNIT_TEST(test_generate_refuses_len_not_below_buffer),
        UNIT_TEST(test_generate_uses_whole_alphabet),
    };
    return unit_run("password", tests, sizeof tests / sizeof tests[0]);
}
