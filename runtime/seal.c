/* AES-256-GCM with a random 96-bit nonce per sealing (OpenSSL EVP). */
#include "runtime/seal.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <string.h>

#define NONCE 12
#define TAG 16
#define MAX_PLAIN 256

static unsigned char key[32];

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void seal_init(const unsigned char *secret, size_t len)
{
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)"treasury seal key v1", 20, key,
         &n);
}

static void enc64(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = b64[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = b64[v & 63];
    }
    out[o] = '\0';
}

static int dec64(const char *in, unsigned char *out, size_t cap, size_t *n)
{
    unsigned v = 0;
    int bits = 0;
    size_t o = 0;
    for (const char *p = in; *p; p++) {
        const char *hit = memchr(b64, *p, 64);
        if (!hit)
            return -1;
        v = (v << 6) | (unsigned)(hit - b64);
        bits += 6;
        if (bits >= 8) {
            if (o == cap)
                return -1;
            out[o++] = (unsigned char)(v >> (bits - 8));
            bits -= 8;
        }
    }
    *n = o;
    return 0;
}

char *seal(struct arena *a, const unsigned char *plain, size_t n)
{
    unsigned char buf[NONCE + MAX_PLAIN + TAG];
    int len = 0, fin = 0;
    char *out = NULL;
    if (n > MAX_PLAIN || RAND_bytes(buf, NONCE) != 1)
        return NULL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx || EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf) != 1 ||
        EVP_EncryptUpdate(ctx, buf + NONCE, &len, plain, (int)n) != 1 ||
        EVP_EncryptFinal_ex(ctx, buf + NONCE + len, &fin) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, buf + NONCE + n) != 1)
        goto done;
    size_t total = NONCE + n + TAG;
    out = arena_alloc(a, 3 + (total + 2) / 3 * 4 + 1);
    memcpy(out, "v1.", 3);
    enc64(buf, total, out + 3);
done:
    EVP_CIPHER_CTX_free(ctx);
    OPENSSL_cleanse(buf, sizeof buf);
    return out;
}

int seal_open(const char *sealed, unsigned char *out, size_t cap, size_t *n)
{
    unsigned char buf[NONCE + MAX_PLAIN + TAG];
    size_t total = 0;
    int len = 0, fin = 0, rc = -1;
    if (!sealed || strncmp(sealed, "v1.", 3) != 0 ||
        dec64(sealed + 3, buf, sizeof buf, &total) != 0 || total < NONCE + TAG ||
        total - NONCE - TAG > cap)
        return -1;
    size_t plain = total - NONCE - TAG;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf) == 1 &&
        EVP_DecryptUpdate(ctx, out, &len, buf + NONCE, (int)plain) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, buf + NONCE + plain) == 1 &&
        EVP_DecryptFinal_ex(ctx, out + len, &fin) == 1) {
        *n = plain;
        rc = 0;
    }
    EVP_CIPHER_CTX_free(ctx);
    OPENSSL_cleanse(buf, sizeof buf);
    if (rc != 0)
        OPENSSL_cleanse(out, cap);
    return rc;
}
