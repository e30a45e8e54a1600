/* SHA-256 through OpenSSL's one-shot EVP_Digest, and the hex spelling every caller stores. */
#include "runtime/digest.h"

#include <openssl/evp.h>
#include <pthread.h>

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
