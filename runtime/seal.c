/* AES-256-GCM with a random 96-bit nonce per sealing (OpenSSL EVP). */
#include "runtime/seal.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <string.h>

#include "runtime/base64url.h"

#define NONCE 12
#define TAG 16
/* The largest plaintext: a stateless authorization request of the OAuth sign-in pages
 * (handlers/accounts_oauth_pages.c authz_seal: a 600-byte redirect URI and state, up to 1 KB of
 * scopes, hashes and ids), about 2.5 KB; sealed it stays below that page's 4 KB request id. */
#define MAX_PLAIN 2560

static unsigned char key[32];

void seal_init(const unsigned char *secret, size_t len)
{
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)"treasury seal key v1", 20, key,
         &n);
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
    base64url_encode(buf, total, out + 3);
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
        base64url_decode(sealed + 3, strlen(sealed + 3), buf, sizeof buf, &total) != 0 ||
        total < NONCE + TAG ||
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
