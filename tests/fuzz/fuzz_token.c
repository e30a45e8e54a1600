/* libFuzzer: bearer token verification (runtime/token.c), with the key fixed. Properties: never
 * crashes; a token it accepts has every required claim; and a token issued from the accepted
 * claims verifies again. The seed corpus holds real tokens signed with this key
 * (tests/fuzz/seeds.py). */
#include <stdlib.h>
#include <string.h>

#include "runtime/token.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define NOW INT64_C(1800000000)

static struct token_key key;

static void setup(void)
{
    if (key.issuer[0])
        return;
    for (int i = 0; i < TOKEN_KEY_BYTES; i++)
        key.secret[i] = (unsigned char)(i * 7 + 3);
    strcpy(key.kid, "k-fuzz");
    strcpy(key.issuer, "https://127.0.0.1:8443");
    strcpy(key.audience, "treasury-api");
    key.leeway_seconds = 30;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    setup();
    char *t = malloc(size + 1);
    if (!t)
        return 0;
    memcpy(t, data, size);
    t[size] = '\0';
    struct token_claims c;
    if (token_verify(&key, t, NOW, &c) == TOKEN_OK) {
        if (!c.sub[0] || !c.wid[0] || !c.sid[0] || !c.jti[0] || !c.client_id[0] || !c.iat)
            abort();
        char *again = NULL;
        struct token_claims c2;
        if (token_issue(&key, &c, &again) != 0 || token_verify(&key, again, NOW, &c2) != TOKEN_OK)
            abort();
        free(again);
    }
    free(t);
    return 0;
}
