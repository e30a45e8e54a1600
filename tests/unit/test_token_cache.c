/* The verified-token cache: a hit only for the very same token text, the time rules re-applied
 * on every hit, replacement within a slot, clearing. */
#include "runtime/token_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"

#define NOW INT64_C(1800000000)

static struct token_key key;

static void setup(void)
{
    memset(&key, 0, sizeof key);
    for (int i = 0; i < TOKEN_KEY_BYTES; i++)
        key.secret[i] = (unsigned char)(i * 5 + 1);
    snprintf(key.issuer, sizeof key.issuer, "https://127.0.0.1:8443");
    snprintf(key.audience, sizeof key.audience, "treasury-api");
    key.leeway_seconds = 30;
    token_cache_clear();
}

static char *issue(const char *jti, int64_t iat, int64_t exp, const char *sub)
{
    struct token_claims c;
    memset(&c, 0, sizeof c);
    snprintf(c.sub, sizeof c.sub, "%s", sub);
    snprintf(c.wid, sizeof c.wid, "wsp_1");
    snprintf(c.sid, sizeof c.sid, "ses_1");
    snprintf(c.jti, sizeof c.jti, "%s", jti);
    snprintf(c.client_id, sizeof c.client_id, TOKEN_FIRST_PARTY);
    snprintf(c.scope, sizeof c.scope, "payments:read");
    c.iat = iat;
    c.exp = exp;
    char *out = NULL;
    CHECK(token_issue(&key, &c, &out) == 0);
    return out;
}

static void remember(const char *tok, int64_t now)
{
    struct token_claims c;
    CHECK(token_verify(&key, tok, now, &c) == TOKEN_OK);
    token_cache_put(tok, &c);
}

static void test_hit_returns_the_verified_claims(void)
{
    setup();
    char *tok = issue("tok_a", NOW, NOW + 900, "usr_a");
    struct token_claims c;
    CHECK(!token_cache_get(&key, tok, NOW, &c));
    remember(tok, NOW);
    memset(&c, 0, sizeof c);
    CHECK(token_cache_get(&key, tok, NOW + 1, &c));
    CHECK(strcmp(c.jti, "tok_a") == 0);
    CHECK(strcmp(c.sub, "usr_a") == 0);
    CHECK(strcmp(c.scope, "payments:read") == 0);
    CHECK(c.exp == NOW + 900);
    free(tok);
}

/* Any other text misses: one character changed anywhere, a prefix, a longer string. */
static void test_only_the_same_text_hits(void)
{
    setup();
    char *tok = issue("tok_b", NOW, NOW + 900, "usr_b");
    remember(tok, NOW);
    size_t n = strlen(tok);
    struct token_claims c;
    for (size_t i = 0; i < n; i += 7) {
        char *t = strdup(tok);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        CHECK(!token_cache_get(&key, t, NOW, &c));
        free(t);
    }
    char *prefix = strndup(tok, n - 1);
    CHECK(!token_cache_get(&key, prefix, NOW, &c));
    char *longer = malloc(n + 2);
    snprintf(longer, n + 2, "%sA", tok);
    CHECK(!token_cache_get(&key, longer, NOW, &c));
    free(prefix);
    free(longer);
    free(tok);
}

/* A cached token expires on time (exp + leeway), exactly as token_verify says. */
static void test_a_cached_token_still_expires(void)
{
    setup();
    char *tok = issue("tok_c", NOW, NOW + 60, "usr_c");
    remember(tok, NOW);
    struct token_claims c;
    CHECK(token_cache_get(&key, tok, NOW + 60 + 29, &c));
    CHECK(!token_cache_get(&key, tok, NOW + 60 + 30, &c));
    CHECK(token_verify(&key, tok, NOW + 60 + 30, &c) == TOKEN_EXPIRED);
    /* A clock set back before iat (beyond leeway) refuses it too, as verify would. */
    CHECK(!token_cache_get(&key, tok, NOW - 31, &c));
    free(tok);
}

/* Service-account tokens have no exp and stay cached; revocation is the caller's check. */
static void test_tokens_without_exp_stay_valid(void)
{
    setup();
    char *tok = issue("tok_d", NOW, 0, "sa_1");
    remember(tok, NOW);
    struct token_claims c;
    CHECK(token_cache_get(&key, tok, NOW + 10 * 365 * 86400, &c));
    CHECK(c.exp == 0);
    free(tok);
}

/* Many tokens: every one either hits with its own claims or misses, never another's. */
static void test_many_tokens_never_mix(void)
{
    setup();
    enum { N = 3000 };
    static char *toks[N];
    for (int i = 0; i < N; i++) {
        char jti[32];
        snprintf(jti, sizeof jti, "tok_%d", i);
        toks[i] = issue(jti, NOW, NOW + 900, "usr_many");
        remember(toks[i], NOW);
    }
    int hits = 0;
    for (int i = 0; i < N; i++) {
        struct token_claims c;
        char jti[32];
        snprintf(jti, sizeof jti, "tok_%d", i);
        if (token_cache_get(&key, toks[i], NOW, &c)) {
            hits++;
            CHECK(strcmp(c.jti, jti) == 0);
        }
    }
    CHECK(hits > 0 && hits < N); /* bounded: 1024 slots */
    token_cache_clear();
    struct token_claims c;
    CHECK(!token_cache_get(&key, toks[N - 1], NOW, &c));
    for (int i = 0; i < N; i++)
        free(toks[i]);
}

/* A token carrying the longest scope claim the server can issue is cached like any other
 * (an owner's token carries every scope of the catalogue). */
static void test_the_longest_token_is_cached(void)
{
    setup();
    struct token_claims c;
    memset(&c, 0, sizeof c);
    snprintf(c.sub, sizeof c.sub, "usr_01j25s85hbqr5w9c7j3m2q9ky3");
    snprintf(c.wid, sizeof c.wid, "wsp_01jbycr4w7jz2q8mj4c2nwgevs");
    snprintf(c.sid, sizeof c.sid, "ses_01jbycr4w7jz2q8mj4c2nwgevs");
    snprintf(c.jti, sizeof c.jti, "tok_01jbycr4w7jz2q8mj4c2nwgevs");
    snprintf(c.client_id, sizeof c.client_id, TOKEN_FIRST_PARTY);
    memset(c.scope, 'a', sizeof c.scope - 1);
    c.scope[sizeof c.scope - 1] = '\0';
    c.iat = NOW;
    c.exp = NOW + 900;
    char *tok = NULL;
    CHECK(token_issue(&key, &c, &tok) == 0);
    remember(tok, NOW);
    struct token_claims got;
    CHECK(token_cache_get(&key, tok, NOW + 1, &got));
    CHECK(strlen(got.scope) == sizeof c.scope - 1);
    free(tok);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_hit_returns_the_verified_claims),
        UNIT_TEST(test_only_the_same_text_hits),
        UNIT_TEST(test_a_cached_token_still_expires),
        UNIT_TEST(test_tokens_without_exp_stay_valid),
        UNIT_TEST(test_many_tokens_never_mix),
        UNIT_TEST(test_the_longest_token_is_cached),
    };
    return unit_run("token_cache", tests, sizeof tests / sizeof tests[0]);
}
