/* SHA-256 through OpenSSL's one-shot EVP_Digest, and the hex spelling every caller stores. */
#include "runtime/digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

void digest_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Fetched once: EVP_sha256() makes OpenSSL 3 look the algorithm up in its provider store on
 * every digest (about a third of hashing an audit record). */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

int digest_sha256(const void *data, size_t n, unsigned char out[DIGEST_BYTES])
{
    unsigned int len = 0;
    pthread_once(&sha256_once, fetch_sha256);
    const EVP_MD *md = sha256_md ? sha256_md : EVP_sha256();
    return EVP_Digest(data, n, out, &len, md, NULL) == 1 && len == DIGEST_BYTES ? 0 : -1;
}

int digest_sha256_hex(const void *data, size_t n, char out[DIGEST_HEX_LEN + 1])
{
    unsigned char d[DIGEST_BYTES];
    if (digest_sha256(data, n, d) != 0)
        return -1;
    digest_hex(d, sizeof d, out);
    return 0;
}

#define BLOCK 64 /* SHA-256's block: the padded key's length */

static EVP_MD_CTX *keyed(const unsigned char key[BLOCK], unsigned char pad)
{
    unsigned char b[BLOCK];
    for (size_t i = 0; i < BLOCK; i++)
        b[i] = key[i] ^ pad;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && EVP_DigestInit_ex(c, sha256_md ? sha256_md : EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(c, b, BLOCK) == 1;
    OPENSSL_cleanse(b, sizeof b);
    if (!ok) {
        EVP_MD_CTX_free(c);
        return NULL;
    }
    return c;
}

int digest_hmac_key(struct digest_hmac *h, const void *key, size_t n)
{
    unsigned char k[BLOCK] = {0};
    pthread_once(&sha256_once, fetch_sha256);
    if (n > BLOCK) { /* a longer key is its digest (RFC 2104 section 2) */
        if (digest_sha256(key, n, k) != 0)
            return -1;
    } else if (n) {
        memcpy(k, key, n);
    }
    EVP_MD_CTX *inner = keyed(k, 0x36), *outer = keyed(k, 0x5c);
    OPENSSL_cleanse(k, sizeof k);
    if (!inner || !outer) {
        EVP_MD_CTX_free(inner);
        EVP_MD_CTX_free(outer);
        return -1;
    }
    digest_hmac_forget(h);
    h->inner = inner;
    h->outer = outer;
    return 0;
}

void digest_hmac_forget(struct digest_hmac *h)
{
    EVP_MD_CTX_free(h->inner);
    EVP_MD_CTX_free(h->outer);
    h->inner = h->outer = NULL;
}

int digest_hmac(const struct digest_hmac *h, const void *data, size_t n,
                unsigned char out[DIGEST_BYTES])
{
    unsigned char d[DIGEST_BYTES];
    unsigned int len = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && h->inner && EVP_MD_CTX_copy_ex(c, h->inner) == 1 &&
             EVP_DigestUpdate(c, data, n) == 1 && EVP_DigestFinal_ex(c, d, &len) == 1 &&
             EVP_MD_CTX_copy_ex(c, h->outer) == 1 && EVP_DigestUpdate(c, d, sizeof d) == 1 &&
             EVP_DigestFinal_ex(c, out, &len) == 1 && len == DIGEST_BYTES;
    EVP_MD_CTX_free(c);
    return ok ? 0 : -1;
}
