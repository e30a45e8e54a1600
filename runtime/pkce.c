#include "runtime/pkce.h"

#include <openssl/crypto.h>
#include <string.h>

#include "runtime/base64url.h"
#include "runtime/digest.h"

static bool alnum(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool pkce_verifier_ok(const char *v)
{
    size_t n = strlen(v);
    if (n < 43 || n > 128)
        return false;
    for (const char *p = v; *p; p++)
        if (!alnum(*p) && *p != '-' && *p != '.' && *p != '_' && *p != '~')
            return false;
    return true;
}

bool pkce_challenge_ok(const char *c)
{
    if (strlen(c) != 43)
        return false;
    for (const char *p = c; *p; p++)
        if (!alnum(*p) && *p != '-' && *p != '_')
            return false;
    return true;
}

bool pkce_s256_matches(const char *verifier, const char *challenge)
{
    unsigned char d[DIGEST_BYTES];
    char enc[64];
    if (strlen(challenge) != 43 || digest_sha256(verifier, strlen(verifier), d) != 0)
        return false;
    base64url_encode(d, sizeof d, enc);
    return CRYPTO_memcmp(enc, challenge, 43) == 0;
}
