/* HOTP/TOTP with OpenSSL's HMAC-SHA-1 (RFC 4226 §5.3 dynamic truncation). */
#include "runtime/totp.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

void totp_base32(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    unsigned buffer = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        buffer = (buffer << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = alphabet[(buffer >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits > 0)
        out[o++] = alphabet[(buffer << (5 - bits)) & 31];
    out[o] = '\0';
}

int totp_base32_decode(const char *in, unsigned char *out, size_t cap, size_t *len)
{
    unsigned buffer = 0;
    int bits = 0;
    size_t o = 0;
    for (const char *p = in; *p; p++) {
        char c = *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        const char *hit = strchr(alphabet, c);
        if (!hit || c == '\0')
            return -1;
        buffer = (buffer << 5) | (unsigned)(hit - alphabet);
        bits += 5;
        if (bits >= 8) {
            if (o == cap)
                return -1;
            out[o++] = (unsigned char)(buffer >> (bits - 8));
            bits -= 8;
        }
    }
    *len = o;
    return 0;
}

void totp_code(const unsigned char *key, size_t key_len, int64_t step, char out[TOTP_DIGITS + 1])
{
    unsigned char msg[8], mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    uint64_t counter = (uint64_t)step;
    for (int i = 7; i >= 0; i--) {
        msg[i] = (unsigned char)(counter & 0xff);
        counter >>= 8;
    }
    HMAC(EVP_sha1(), key, (int)key_len, msg, sizeof msg, mac, &mac_len);
    int off = mac[mac_len - 1] & 0x0f;
    uint32_t bin = ((uint32_t)(mac[off] & 0x7f) << 24) | ((uint32_t)mac[off + 1] << 16) |
                   ((uint32_t)mac[off + 2] << 8) | mac[off + 3];
    snprintf(out, TOTP_DIGITS + 1, "%06u", (unsigned)(bin % 1000000u));
}

int64_t totp_match(const unsigned char *key, size_t key_len, const char *code, int64_t now_s)
{
    int64_t step = now_s / TOTP_STEP_S, hit = -1;
    char want[TOTP_DIGITS + 1];
    if (!code || strlen(code) != TOTP_DIGITS)
        return -1;
    for (int64_t s = step - 1; s <= step + 1; s++) {
        totp_code(key, key_len, s, want);
        if (CRYPTO_memcmp(want, code, TOTP_DIGITS) == 0 && hit < 0)
            hit = s;
    }
    return hit;
}
