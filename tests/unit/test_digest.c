/* digest.c: SHA-256 and the keyed HMAC-SHA-256 against OpenSSL's one-shot HMAC(). */
#include "runtime/digest.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "tests/unit/unit.h"

/* RFC 4231 test case 2: a key shorter than the block. */
static void test_hmac_matches_rfc_4231(void)
{
    static const unsigned char want[DIGEST_BYTES] = {
        0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
        0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
    struct digest_hmac h = {0};
    unsigned char out[DIGEST_BYTES];
    CHECK(digest_hmac_key(&h, "Jefe", 4) == 0);
    CHECK(digest_hmac(&h, "what do ya want for nothing?", 28, out) == 0);
    CHECK(memcmp(out, want, sizeof want) == 0);
    digest_hmac_forget(&h);
}

/* Keys of every length around the block (64 bytes: longer ones are hashed first) and messages
 * of every length up to two blocks give what HMAC() gives; one key serves many messages, and a
 * key set again replaces the old one. */
static void test_hmac_matches_openssl_for_keys_and_messages_of_every_length(void)
{
    unsigned char key[130], msg[140], want[EVP_MAX_MD_SIZE], out[DIGEST_BYTES];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (unsigned char)(i * 7 + 1);
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)(i * 13 + 5);
    struct digest_hmac h = {0};
    for (size_t kn = 0; kn <= sizeof key; kn += kn < 70 ? 1 : 20) {
        CHECK(digest_hmac_key(&h, key, kn) == 0);
        for (size_t mn = 0; mn <= sizeof msg; mn++) {
            unsigned int wn = 0;
            HMAC(EVP_sha256(), key, (int)kn, msg, mn, want, &wn);
            CHECK(digest_hmac(&h, msg, mn, out) == 0);
            CHECK(wn == DIGEST_BYTES && memcmp(out, want, DIGEST_BYTES) == 0);
        }
    }
    digest_hmac_forget(&h);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_hmac_matches_rfc_4231),
        UNIT_TEST(test_hmac_matches_openssl_for_keys_and_messages_of_every_length),
    };
    return unit_run("digest", tests, sizeof tests / sizeof tests[0]);
}
