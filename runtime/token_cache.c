/* Verified-token cache (see token_cache.h): 1024 slots, each under one of 64 striped locks;
 * the slot is chosen by a hash of the token's signature segment (an HMAC output: uniform, and
 * not something a client can aim at another token's slot without knowing that token); a new
 * token simply replaces what its slot held. */
#include "runtime/token_cache.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <string.h>

#define SLOTS 1024 /* power of two */
#define STRIPES 64
/* Longer tokens are verified every time. A token's longest claim is its scope (up to 1023
 * characters, token.h), so the largest token the server issues (every scope of the
 * catalogue, all other claims at their longest) stays under this: an owner's token outgrew
 * the earlier 1,024 when the catalogue reached 28 scopes, and every request then paid a full
 * verification (about 13 us). */
#define TOKEN_CACHED_MAX 2560

struct slot {
    size_t len; /* 0: empty */
    char token[TOKEN_CACHED_MAX];
    struct token_claims claims;
};

static struct slot slots[SLOTS];
static pthread_mutex_t stripes[STRIPES];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_stripes(void)
{
    for (size_t i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i], NULL);
}

static pthread_mutex_t *stripe(size_t slot)
{
    pthread_once(&once, init_stripes);
    return &stripes[slot % STRIPES];
}

static size_t slot_of(const char *token, size_t len)
{
    const char *p = token + len;
    while (p > token && p[-1] != '.')
        p--; /* the signature segment */
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (; p < token + len; p++) {
        h ^= (unsigned char)*p;
        h *= 0x100000001b3u;
    }
    return (size_t)(h ^ (h >> 32)) & (SLOTS - 1);
}

bool token_cache_get(const struct token_key *k, const char *token, int64_t now,
                     struct token_claims *c)
{
    size_t len = strnlen(token, TOKEN_CACHED_MAX + 1);
    if (len == 0 || len > TOKEN_CACHED_MAX)
        return false;
    size_t i = slot_of(token, len);
    pthread_mutex_t *m = stripe(i);
    bool hit = false;
    pthread_mutex_lock(m);
    const struct slot *s = &slots[i];
    if (s->len == len && CRYPTO_memcmp(s->token, token, len) == 0) {
        *c = s->claims;
        hit = true;
    }
    pthread_mutex_unlock(m);
    /* The same time rules as token_verify: a cached token expires on time. */
    return hit && token_check_times(k, c, now) == TOKEN_OK;
}

void token_cache_put(const char *token, const struct token_claims *c)
{
    size_t len = strnlen(token, TOKEN_CACHED_MAX + 1);
    if (len == 0 || len > TOKEN_CACHED_MAX)
        return;
    size_t i = slot_of(token, len);
    pthread_mutex_t *m = stripe(i);
    pthread_mutex_lock(m);
    struct slot *s = &slots[i];
    memcpy(s->token, token, len);
    s->len = len;
    s->claims = *c;
    pthread_mutex_unlock(m);
}

void token_cache_clear(void)
{
    for (size_t i = 0; i < SLOTS; i++) {
        pthread_mutex_t *m = stripe(i);
        pthread_mutex_lock(m);
        OPENSSL_cleanse(&slots[i], sizeof slots[i]);
        pthread_mutex_unlock(m);
    }
}
