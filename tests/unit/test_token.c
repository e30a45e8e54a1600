/* Access tokens: issue/verify round trip and the hostile tokens the README's Dependencies
 * section names (the libjwt 1.10.2 traps, RFC 8725, RFC 9068), each built here with base64url + HMAC so the suite stands alone. */
#include "runtime/token.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
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
        key.secret[i] = (unsigned char)(i * 7 + 3);
    snprintf(key.kid, sizeof key.kid, "k-test");
    snprintf(key.issuer, sizeof key.issuer, "https://127.0.0.1:8443");
    snprintf(key.audience, sizeof key.audience, "treasury-api");
    key.leeway_seconds = 30;
}

/* ---- token building by hand ---- */

static char *b64url(const unsigned char *in, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = malloc(n / 3 * 4 + 5), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        *o++ = t[(v >> 18) & 63];
        *o++ = t[(v >> 12) & 63];
        if (i + 1 < n)
            *o++ = t[(v >> 6) & 63];
        if (i + 2 < n)
            *o++ = t[v & 63];
    }
    *o = '\0';
    return out;
}

enum sig_kind { SIG_HS256, SIG_HS512, SIG_NONE, SIG_JUNK };

/* header.payload.signature with the signature made as asked; caller frees. */
static char *make_raw(const char *header, size_t hn, const char *payload, size_t pn,
                      enum sig_kind kind, const void *secret, size_t secret_len)
{
    char *h = b64url((const unsigned char *)header, hn);
    char *p = b64url((const unsigned char *)payload, pn);
    size_t in_len = strlen(h) + 1 + strlen(p);
    char *input = malloc(in_len + 1);
    snprintf(input, in_len + 1, "%s.%s", h, p);
    unsigned char mac[256];
    unsigned int mac_len = 0;
    switch (kind) {
    case SIG_HS256:
        HMAC(EVP_sha256(), secret, (int)secret_len, (unsigned char *)input, in_len, mac, &mac_len);
        break;
    case SIG_HS512:
        HMAC(EVP_sha512(), secret, (int)secret_len, (unsigned char *)input, in_len, mac, &mac_len);
        break;
    case SIG_NONE:
        mac_len = 0;
        break;
    case SIG_JUNK:
        memset(mac, 0xab, sizeof mac);
        mac_len = sizeof mac; /* as long as an RS256 signature */
        break;
    }
    char *s = b64url(mac, mac_len);
    size_t total = in_len + 1 + strlen(s);
    char *tok = malloc(total + 1);
    snprintf(tok, total + 1, "%s.%s", input, s);
    free(h);
    free(p);
    free(input);
    free(s);
    return tok;
}

static char *make(const char *header, const char *payload, enum sig_kind kind)
{
    return make_raw(header, strlen(header), payload, strlen(payload), kind, key.secret,
                    TOKEN_KEY_BYTES);
}

static const char *good_header = "{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"kid\":\"k-test\"}";

/* The standard claims, one of them left out (skip) and/or one replaced (name=value JSON). */
static const char *claims(const char *skip, const char *name, const char *value)
{
    static char buf[20000];
    static const char *std[][2] = {
        {"iss", "\"https://127.0.0.1:8443\""},
        {"aud", "\"treasury-api\""},
        {"sub", "\"usr_1\""},
        {"wid", "\"wsp_1\""},
        {"sid", "\"ses_1\""},
        {"jti", "\"tok_1\""},
        {"client_id", "\"first-party\""},
        {"scope", "\"payments:read rates:read\""},
        {"iat", "1800000000"},
        {"nbf", "1800000000"},
        {"exp", "1800000900"},
    };
    size_t o = 0;
    bool replaced = false;
    buf[o++] = '{';
    for (size_t i = 0; i < sizeof std / sizeof std[0]; i++) {
        const char *v = std[i][1];
        if (skip && strcmp(skip, std[i][0]) == 0)
            continue;
        if (name && strcmp(name, std[i][0]) == 0) {
            v = value;
            replaced = true;
        }
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s\"%s\":%s", o > 1 ? "," : "", std[i][0],
                              v);
    }
    if (name && !replaced)
        o += (size_t)snprintf(buf + o, sizeof buf - o, ",\"%s\":%s", name, value);
    snprintf(buf + o, sizeof buf - o, "}");
    return buf;
}

/* Verifies a hand-made token with the good header and the given claims. */
static enum token_result verify_claims(const char *payload)
{
    struct token_claims c;
    char *t = make(good_header, payload, SIG_HS256);
    enum token_result r = token_verify(&key, t, NOW, &c);
    free(t);
    return r;
}

static enum token_result verify_header(const char *header, enum sig_kind kind)
{
    struct token_claims c;
    char *t = make(header, claims(NULL, NULL, NULL), kind);
    enum token_result r = token_verify(&key, t, NOW, &c);
    free(t);
    return r;
}

static enum token_result verify_str(const char *t)
{
    struct token_claims c;
    return token_verify(&key, t, NOW, &c);
}

/* ---- round trip ---- */

static void test_issued_token_verifies_with_same_claims(void)
{
    struct token_claims in = {0}, out;
    char *t = NULL;
    setup();
    snprintf(in.sub, sizeof in.sub, "usr_abc");
    snprintf(in.wid, sizeof in.wid, "wsp_def");
    snprintf(in.sid, sizeof in.sid, "ses_ghi");
    snprintf(in.jti, sizeof in.jti, "tok_jkl");
    snprintf(in.scope, sizeof in.scope, "payments:read payments:write");
    in.iat = NOW;
    in.nbf = NOW;
    in.exp = NOW + 900;
    CHECK(token_issue(&key, &in, &t) == 0);
    CHECK(t != NULL && strlen(t) <= TOKEN_MAX_BYTES);
    memset(&out, 0x55, sizeof out);
    CHECK(token_verify(&key, t, NOW, &out) == TOKEN_OK);
    CHECK_STR(out.sub, in.sub);
    CHECK_STR(out.wid, in.wid);
    CHECK_STR(out.sid, in.sid);
    CHECK_STR(out.jti, in.jti);
    CHECK_STR(out.scope, in.scope);
    CHECK(out.iat == in.iat && out.nbf == in.nbf && out.exp == in.exp);

    /* the same token is refused once expired, and by another key */
    CHECK(token_verify(&key, t, NOW + 900 + 30, &out) == TOKEN_EXPIRED);
    struct token_key other = key;
    other.secret[0] ^= 1;
    CHECK(token_verify(&other, t, NOW, &out) == TOKEN_BAD_SIGNATURE);
    free(t);
}

static void test_issued_header_names_alg_typ_and_kid(void)
{
    struct token_claims in = {.iat = NOW, .nbf = NOW, .exp = NOW + 60};
    char *t = NULL;
    setup();
    snprintf(in.sub, sizeof in.sub, "u");
    snprintf(in.wid, sizeof in.wid, "w");
    snprintf(in.sid, sizeof in.sid, "s");
    snprintf(in.jti, sizeof in.jti, "j");
    CHECK(token_issue(&key, &in, &t) == 0);
    if (!t)
        return;
    /* decode the header with OpenSSL's base64 after mapping to the standard alphabet */
    char *dot = strchr(t, '.');
    size_t n = (size_t)(dot - t);
    char b64[256] = "";
    unsigned char raw[256] = "";
    memcpy(b64, t, n);
    for (size_t i = 0; i < n; i++)
        b64[i] = b64[i] == '-' ? '+' : b64[i] == '_' ? '/' : b64[i];
    while (n % 4)
        b64[n++] = '=';
    int len = EVP_DecodeBlock(raw, (unsigned char *)b64, (int)n);
    CHECK(len > 0);
    CHECK(strstr((char *)raw, "\"alg\":\"HS256\"") != NULL);
    CHECK(strstr((char *)raw, "\"typ\":\"at+jwt\"") != NULL);
    CHECK(strstr((char *)raw, "\"kid\":\"k-test\"") != NULL);
    free(t);
}

static void test_issued_token_without_exp_is_refused(void)
{
    struct token_claims in = {.iat = NOW, .nbf = NOW, .exp = 0}, out;
    char *t = NULL;
    setup();
    snprintf(in.sub, sizeof in.sub, "u");
    snprintf(in.wid, sizeof in.wid, "w");
    snprintf(in.sid, sizeof in.sid, "s");
    snprintf(in.jti, sizeof in.jti, "j");
    CHECK(token_issue(&key, &in, &t) == 0);
    CHECK(token_verify(&key, t, NOW, &out) == TOKEN_MISSING_CLAIM);
    free(t);
}

static void test_service_account_token_without_exp_verifies_and_user_token_never(void)
{
    struct token_claims in = {.iat = NOW, .nbf = NOW, .exp = 0}, out;
    char *t = NULL;
    setup();
    snprintf(in.sub, sizeof in.sub, TOKEN_SERVICE_PREFIX "01abc");
    snprintf(in.wid, sizeof in.wid, "w");
    snprintf(in.sid, sizeof in.sid, "sat_1");
    snprintf(in.jti, sizeof in.jti, "sat_1");
    CHECK(token_issue(&key, &in, &t) == 0);
    CHECK(token_verify(&key, t, NOW + 10 * 365 * 86400, &out) == TOKEN_OK);
    CHECK(out.exp == 0);
    free(t);
    /* the exemption is the subject's kind, not a claim anyone could add */
    CHECK(verify_claims(claims("exp", NULL, NULL)) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims("exp", "sub", "\"usr_sa_1\"")) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims("exp", "sub", "\"sa_1\"")) == TOKEN_OK);
    CHECK(verify_claims(claims(NULL, "sub", "\"sa_1\"")) == TOKEN_OK);
    /* a service token that does carry exp is held to it */
    in.exp = NOW - 100;
    CHECK(token_issue(&key, &in, &t) == 0);
    CHECK(token_verify(&key, t, NOW, &out) == TOKEN_EXPIRED);
    free(t);
}

static void test_hand_made_token_with_standard_claims_verifies(void)
{
    struct token_claims c;
    setup();
    char *t = make(good_header, claims(NULL, NULL, NULL), SIG_HS256);
    CHECK(token_verify(&key, t, NOW, &c) == TOKEN_OK);
    CHECK_STR(c.sub, "usr_1");
    CHECK_STR(c.scope, "payments:read rates:read");
    CHECK(c.exp == 1800000900);
    free(t);
}

/* ---- algorithm ---- */

static void test_alg_none_is_refused(void)
{
    setup();
    CHECK(verify_header("{\"alg\":\"none\",\"typ\":\"at+jwt\"}", SIG_NONE) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"none\"}", SIG_NONE) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"None\",\"typ\":\"at+jwt\"}", SIG_NONE) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"NONE\",\"typ\":\"at+jwt\"}", SIG_NONE) == TOKEN_BAD_ALG);
    /* unsigned but with a valid HS256 signature appended: still none */
    CHECK(verify_header("{\"alg\":\"none\",\"typ\":\"at+jwt\"}", SIG_HS256) == TOKEN_BAD_ALG);
    /* alg HS256 but no signature */
    CHECK(verify_header(good_header, SIG_NONE) == TOKEN_BAD_SIGNATURE);
}

static void test_other_algorithms_are_refused(void)
{
    setup();
    CHECK(verify_header("{\"alg\":\"HS512\",\"typ\":\"at+jwt\"}", SIG_HS512) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"HS384\",\"typ\":\"at+jwt\"}", SIG_HS256) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"RS256\",\"typ\":\"at+jwt\"}", SIG_JUNK) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"ES256\",\"typ\":\"at+jwt\"}", SIG_JUNK) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"hs256\",\"typ\":\"at+jwt\"}", SIG_HS256) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":\"HS256 \",\"typ\":\"at+jwt\"}", SIG_HS256) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"alg\":[\"HS256\"],\"typ\":\"at+jwt\"}", SIG_HS256) == TOKEN_BAD_ALG);
    CHECK(verify_header("{\"typ\":\"at+jwt\"}", SIG_HS256) == TOKEN_BAD_ALG);
}

static void test_hs256_signed_with_other_secret_is_refused(void)
{
    /* HS256 keyed with a public-key PEM, as in the alg-confusion attack (RFC 8725 §2.1) */
    static const char pem[] = "-----BEGIN PUBLIC KEY-----\n"
                              "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEexample\n"
                              "-----END PUBLIC KEY-----\n";
    setup();
    const char *p = claims(NULL, "sub", "\"admin\"");
    char *t =
        make_raw(good_header, strlen(good_header), p, strlen(p), SIG_HS256, pem, sizeof pem - 1);
    CHECK(verify_str(t) == TOKEN_BAD_SIGNATURE);
    free(t);

    unsigned char other[TOKEN_KEY_BYTES];
    memcpy(other, key.secret, sizeof other);
    other[31] ^= 0x80;
    p = claims(NULL, NULL, NULL);
    t = make_raw(good_header, strlen(good_header), p, strlen(p), SIG_HS256, other, sizeof other);
    CHECK(verify_str(t) == TOKEN_BAD_SIGNATURE);
    free(t);
}

static void test_tampered_token_is_refused(void)
{
    setup();
    char *t = make(good_header, claims(NULL, NULL, NULL), SIG_HS256);
    char *good = make(good_header, claims(NULL, NULL, NULL), SIG_HS256);
    /* change one character anywhere: never accepted */
    for (size_t i = 0; t[i]; i++) {
        char saved = t[i];
        if (saved == '.')
            continue;
        t[i] = saved == 'A' ? 'B' : 'A';
        CHECK(verify_str(t) != TOKEN_OK);
        t[i] = saved;
    }
    CHECK(verify_str(t) == TOKEN_OK);

    /* swap in another payload under the original signature */
    char *evil = make(good_header, claims(NULL, "scope", "\"workspace:admin\""), SIG_HS256);
    char *sig = strrchr(good, '.');
    char *evil_sig = strrchr(evil, '.');
    CHECK(strlen(sig) == strlen(evil_sig));
    memcpy(evil_sig, sig, strlen(sig));
    CHECK(verify_str(evil) == TOKEN_BAD_SIGNATURE);
    free(t);
    free(good);
    free(evil);
}

static void test_signature_of_wrong_length_is_refused(void)
{
    setup();
    char *t = make(good_header, claims(NULL, NULL, NULL), SIG_HS512);
    CHECK(verify_str(t) == TOKEN_BAD_SIGNATURE); /* 64-byte MAC under an HS256 header */
    free(t);
    t = make(good_header, claims(NULL, NULL, NULL), SIG_HS256);
    size_t n = strlen(t);
    t[n - 3] = '\0'; /* 40 chars: a 30-byte signature */
    CHECK(verify_str(t) == TOKEN_BAD_SIGNATURE);
    free(t);
}

/* ---- type ---- */

static void test_wrong_or_missing_typ_is_refused(void)
{
    setup();
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", SIG_HS256) == TOKEN_BAD_TYP);
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"refresh+jwt\"}", SIG_HS256) == TOKEN_BAD_TYP);
    CHECK(verify_header("{\"alg\":\"HS256\"}", SIG_HS256) == TOKEN_BAD_TYP);
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":null}", SIG_HS256) == TOKEN_BAD_TYP);
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":1}", SIG_HS256) == TOKEN_BAD_TYP);
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"at+jwt \"}", SIG_HS256) == TOKEN_BAD_TYP);
}

static void test_media_type_form_of_typ_is_accepted(void)
{
    setup();
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"application/at+jwt\"}", SIG_HS256) ==
          TOKEN_OK);
    CHECK(verify_header("{\"typ\":\"at+jwt\",\"alg\":\"HS256\"}", SIG_HS256) == TOKEN_OK);
}

static void test_crit_header_is_refused(void)
{
    setup();
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"crit\":[\"exp\"]}", SIG_HS256) ==
          TOKEN_MALFORMED);
}

/* ---- kid and friends are never used ---- */

static void test_kid_injection_is_verified_by_signature_only(void)
{
    setup();
    static const char *kids[] = {"../../etc/passwd", "' OR 1=1 --", "/dev/zero", ""};
    char h[128];
    for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++) {
        snprintf(h, sizeof h, "{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"kid\":\"%s\"}", kids[i]);
        CHECK(verify_header(h, SIG_HS256) == TOKEN_OK);
        /* signed with the empty key a /dev/null or empty-file lookup would give */
        const char *p = claims(NULL, NULL, NULL);
        char *t = make_raw(h, strlen(h), p, strlen(p), SIG_HS256, "", 0);
        CHECK(verify_str(t) == TOKEN_BAD_SIGNATURE);
        free(t);
    }
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"kid\":42}", SIG_HS256) ==
          TOKEN_OK);
}

static void test_jku_and_jwk_headers_are_ignored(void)
{
    setup();
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"at+jwt\","
                        "\"jku\":\"http://127.0.0.1:9/keys\",\"x5u\":\"http://127.0.0.1:9/x\"}",
                        SIG_HS256) == TOKEN_OK);
    const char *h =
        "{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"jwk\":{\"kty\":\"oct\",\"k\":\"AAAA\"}}";
    const char *p = claims(NULL, NULL, NULL);
    unsigned char zero[3] = {0};
    char *t = make_raw(h, strlen(h), p, strlen(p), SIG_HS256, zero, sizeof zero);
    CHECK(verify_str(t) == TOKEN_BAD_SIGNATURE);
    free(t);
}

/* ---- time ---- */

static void test_expired_token_is_refused(void)
{
    setup();
    CHECK(verify_claims(claims(NULL, "exp", "1799999969")) == TOKEN_EXPIRED); /* now-31 */
    CHECK(verify_claims(claims(NULL, "exp", "1799999970")) == TOKEN_EXPIRED); /* now-30 */
    CHECK(verify_claims(claims(NULL, "exp", "1799999971")) == TOKEN_OK);      /* leeway */
    CHECK(verify_claims(claims(NULL, "exp", "0")) == TOKEN_EXPIRED);
    CHECK(verify_claims(claims(NULL, "exp", "-9223372036854775808")) == TOKEN_EXPIRED);
    CHECK(verify_claims(claims(NULL, "exp", "9223372036854775807")) == TOKEN_OK);
}

static void test_not_yet_valid_token_is_refused(void)
{
    setup();
    CHECK(verify_claims(claims(NULL, "nbf", "1800000031")) == TOKEN_NOT_YET_VALID);
    CHECK(verify_claims(claims(NULL, "nbf", "1800000030")) == TOKEN_OK);
    CHECK(verify_claims(claims(NULL, "nbf", "9223372036854775807")) == TOKEN_NOT_YET_VALID);
    CHECK(verify_claims(claims("nbf", NULL, NULL)) == TOKEN_OK); /* nbf is optional */
    CHECK(verify_claims(claims(NULL, "nbf", "\"1800000000\"")) == TOKEN_MALFORMED);
}

static void test_iat_in_future_is_refused(void)
{
    setup();
    CHECK(verify_claims(claims(NULL, "iat", "1800000031")) == TOKEN_NOT_YET_VALID);
    CHECK(verify_claims(claims(NULL, "iat", "1800000030")) == TOKEN_OK);
}

static void test_time_claims_must_be_integers(void)
{
    setup();
    CHECK(verify_claims(claims(NULL, "exp", "\"1800000900\"")) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims(NULL, "exp", "1800000900.5")) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims(NULL, "exp", "1e40")) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims(NULL, "exp", "null")) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims(NULL, "exp", "1.8000009e9")) == TOKEN_OK); /* exact integer */
    CHECK(verify_claims(claims(NULL, "iat", "true")) == TOKEN_MISSING_CLAIM);
}

/* ---- issuer and audience ---- */

static void test_wrong_or_missing_issuer_is_refused(void)
{
    setup();
    CHECK(verify_claims(claims(NULL, "iss", "\"https://evil.example\"")) == TOKEN_BAD_ISSUER);
    CHECK(verify_claims(claims(NULL, "iss", "\"https://127.0.0.1:8443/\"")) == TOKEN_BAD_ISSUER);
    CHECK(verify_claims(claims(NULL, "iss", "\"HTTPS://127.0.0.1:8443\"")) == TOKEN_BAD_ISSUER);
    CHECK(verify_claims(claims(NULL, "iss", "[\"https://127.0.0.1:8443\"]")) == TOKEN_BAD_ISSUER);
    CHECK(verify_claims(claims("iss", NULL, NULL)) == TOKEN_BAD_ISSUER);
}

static void test_wrong_or_missing_audience_is_refused(void)
{
    setup();
    CHECK(verify_claims(claims(NULL, "aud", "\"other-api\"")) == TOKEN_BAD_AUDIENCE);
    CHECK(verify_claims(claims(NULL, "aud", "\"treasury-api2\"")) == TOKEN_BAD_AUDIENCE);
    CHECK(verify_claims(claims(NULL, "aud", "[\"other-api\"]")) == TOKEN_BAD_AUDIENCE);
    CHECK(verify_claims(claims(NULL, "aud", "[]")) == TOKEN_BAD_AUDIENCE);
    CHECK(verify_claims(claims(NULL, "aud", "[[\"treasury-api\"]]")) == TOKEN_BAD_AUDIENCE);
    CHECK(verify_claims(claims(NULL, "aud", "{\"treasury-api\":1}")) == TOKEN_BAD_AUDIENCE);
    CHECK(verify_claims(claims("aud", NULL, NULL)) == TOKEN_BAD_AUDIENCE);
}

static void test_audience_array_containing_ours_is_accepted(void)
{
    setup();
    CHECK(verify_claims(claims(NULL, "aud", "[\"other-api\",\"treasury-api\"]")) == TOKEN_OK);
    CHECK(verify_claims(claims(NULL, "aud", "[\"treasury-api\"]")) == TOKEN_OK);
}

/* ---- required claims ---- */

static void test_missing_required_claims_are_refused(void)
{
    static const char *required[] = {"sub", "wid", "sid", "jti", "client_id", "scope", "exp",
                                     "iat"};
    setup();
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        CHECK(verify_claims(claims(required[i], NULL, NULL)) == TOKEN_MISSING_CLAIM);
        if (strcmp(required[i], "exp") && strcmp(required[i], "iat"))
            CHECK(verify_claims(claims(NULL, required[i], "42")) == TOKEN_MISSING_CLAIM);
    }
    CHECK(verify_claims(claims(NULL, "sub", "\"\"")) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims(NULL, "jti", "null")) == TOKEN_MISSING_CLAIM);
    CHECK(verify_claims(claims(NULL, "scope", "\"\"")) == TOKEN_OK); /* a role with no scopes */
}

static void test_claim_longer_than_its_field_is_refused(void)
{
    char v[2000];
    setup();
    memset(v, 0, sizeof v);
    v[0] = '"';
    memset(v + 1, 'a', 63);
    v[64] = '"';
    CHECK(verify_claims(claims(NULL, "sub", v)) == TOKEN_OK); /* 63 + NUL fits */
    memset(v + 1, 'a', 64);
    v[65] = '"';
    CHECK(verify_claims(claims(NULL, "sub", v)) == TOKEN_MALFORMED);
    CHECK(verify_claims(claims(NULL, "jti", v)) == TOKEN_MALFORMED);
    memset(v + 1, 'a', 1024);
    v[1025] = '"';
    CHECK(verify_claims(claims(NULL, "scope", v)) == TOKEN_MALFORMED);
}

static void test_duplicate_claims_are_refused(void)
{
    setup();
    /* a second "scope" must not win over the first in some parser and not in another */
    CHECK(verify_claims(claims(NULL, "x", "1,\"scope\":\"workspace:admin\"")) == TOKEN_MALFORMED);
}

/* ---- shape ---- */

static void test_wrong_number_of_parts_is_refused(void)
{
    setup();
    char *t = make(good_header, claims(NULL, NULL, NULL), SIG_HS256);
    char *last = strrchr(t, '.');
    char buf[4096];

    *last = '\0'; /* two parts */
    CHECK(verify_str(t) == TOKEN_MALFORMED);
    *last = '.';
    snprintf(buf, sizeof buf, "%s.", t); /* four parts, last empty */
    CHECK(verify_str(buf) == TOKEN_MALFORMED);
    snprintf(buf, sizeof buf, "%s.AAAA", t); /* four parts */
    CHECK(verify_str(buf) == TOKEN_MALFORMED);
    snprintf(buf, sizeof buf, "eyJ9.%s", t); /* five parts */
    CHECK(verify_str(buf) == TOKEN_MALFORMED);
    CHECK(verify_str(strchr(t, '.')) == TOKEN_MALFORMED); /* empty header */
    free(t);
}

static void test_truncated_token_is_refused(void)
{
    setup();
    char *t = make(good_header, claims(NULL, NULL, NULL), SIG_HS256);
    size_t n = strlen(t);
    for (size_t i = 0; i < n; i++) {
        char saved = t[i];
        t[i] = '\0';
        CHECK(verify_str(t) != TOKEN_OK);
        t[i] = saved;
    }
    free(t);
}

static void test_garbage_is_refused(void)
{
    static const char *bad[] = {
        "",
        ".",
        "..",
        "...",
        "a.b.c",
        "abc",
        "Bearer x.y.z",
        "eyJhbGciOiJIUzI1NiJ9",
        "!!!.???.***",
        " . . ",
        "\xff\xfe.\xff.\xff",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6ImF0K2p3dCJ9.e30.",
    };
    setup();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(verify_str(bad[i]) != TOKEN_OK);
    CHECK(verify_str("a.b.c") == TOKEN_MALFORMED);
    CHECK(verify_str(NULL) == TOKEN_MALFORMED);
}

static void test_non_base64url_characters_are_refused(void)
{
    setup();
    char *t = make(good_header, claims(NULL, NULL, NULL), SIG_HS256);
    char buf[4096];
    static const char inject[] = {'+', '/', '=', ' ', '\n', '%', '*'};
    for (size_t i = 0; i < sizeof inject; i++) {
        snprintf(buf, sizeof buf, "%s", t);
        buf[5] = inject[i];
        CHECK(verify_str(buf) == TOKEN_MALFORMED);
    }
    snprintf(buf, sizeof buf, "%s=", t); /* padded signature */
    CHECK(verify_str(buf) == TOKEN_MALFORMED);
    snprintf(buf, sizeof buf, "%s ", t);
    CHECK(verify_str(buf) == TOKEN_MALFORMED);
    free(t);
}

static void test_header_and_payload_must_be_json_objects(void)
{
    setup();
    CHECK(verify_header("[\"HS256\"]", SIG_HS256) == TOKEN_MALFORMED);
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"at+jwt\"", SIG_HS256) == TOKEN_MALFORMED);
    CHECK(verify_header("{\"alg\":\"HS256\",\"alg\":\"none\",\"typ\":\"at+jwt\"}", SIG_HS256) ==
          TOKEN_MALFORMED);
    CHECK(verify_claims("[]") == TOKEN_MALFORMED);
    CHECK(verify_claims("\"x\"") == TOKEN_MALFORMED);
    CHECK(verify_claims("{") == TOKEN_MALFORMED);
    char p[4096];
    snprintf(p, sizeof p, "%s trailing", claims(NULL, NULL, NULL));
    CHECK(verify_claims(p) == TOKEN_MALFORMED);
}

static void test_non_utf8_payload_is_refused(void)
{
    setup();
    /* correctly signed, but the sub claim holds a lone 0xff / an overlong '/' / a surrogate */
    static const char *subs[] = {"\"usr_\xff\"", "\"usr_\xc0\xaf\"", "\"usr_\xed\xa0\x80\"",
                                 "\"usr_\\ud800\""};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        CHECK(verify_claims(claims(NULL, "sub", subs[i])) == TOKEN_MALFORMED);
    CHECK(verify_header("{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"kid\":\"\xff\"}", SIG_HS256) ==
          TOKEN_MALFORMED);
    /* NUL inside the decoded payload */
    const char *c = claims(NULL, NULL, NULL);
    char with_nul[4096];
    size_t n = strlen(c);
    memcpy(with_nul, c, n);
    with_nul[n] = '\0';
    with_nul[n + 1] = ' ';
    char *t = make_raw(good_header, strlen(good_header), with_nul, n + 2, SIG_HS256, key.secret,
                       TOKEN_KEY_BYTES);
    CHECK(verify_str(t) == TOKEN_MALFORMED);
    free(t);
}

static void test_token_over_size_limit_is_refused(void)
{
    char pad[TOKEN_MAX_BYTES + 16];
    char *under = NULL, *over = NULL;
    setup();
    /* grow a padding claim until the signed token crosses TOKEN_MAX_BYTES */
    for (size_t len = 4000; len < 8000 && !over; len++) {
        pad[0] = '"';
        memset(pad + 1, 'x', len);
        pad[len + 1] = '"';
        pad[len + 2] = '\0';
        char *t = make(good_header, claims(NULL, "pad", pad), SIG_HS256);
        if (strlen(t) <= TOKEN_MAX_BYTES) {
            free(under);
            under = t;
        } else {
            over = t;
        }
    }
    CHECK(under && over);
    if (under && over) {
        CHECK(strlen(under) > TOKEN_MAX_BYTES - 4);
        CHECK(verify_str(under) == TOKEN_OK);
        CHECK(verify_str(over) == TOKEN_MALFORMED);
    }
    free(under);
    free(over);

    /* a huge run of garbage is refused without being read to its end */
    size_t huge = 1u << 20;
    char *g = malloc(huge + 1);
    memset(g, 'A', huge);
    g[huge] = '\0';
    g[100] = '.';
    g[200] = '.';
    CHECK(verify_str(g) == TOKEN_MALFORMED);
    free(g);
}

static void test_issue_refuses_token_over_size_limit(void)
{
    struct token_claims in = {.iat = NOW, .nbf = NOW, .exp = NOW + 60};
    char *t = NULL;
    setup();
    memset(key.issuer, 'i', sizeof key.issuer - 1);
    snprintf(in.sub, sizeof in.sub, "u");
    snprintf(in.wid, sizeof in.wid, "w");
    snprintf(in.sid, sizeof in.sid, "s");
    snprintf(in.jti, sizeof in.jti, "j");
    memset(in.scope, 's', sizeof in.scope - 1);
    CHECK(token_issue(&key, &in, &t) == 0); /* longest printable claims still fit */
    CHECK(t && strlen(t) <= TOKEN_MAX_BYTES);
    free(t);
    /* control characters escape to six bytes each: too long to be verified, so not issued */
    memset(in.scope, 1, sizeof in.scope - 1);
    t = (char *)&in;
    CHECK(token_issue(&key, &in, &t) == -1);
    CHECK(t == NULL);
}

static void test_result_strings_are_safe_in_www_authenticate(void)
{
    for (int r = TOKEN_OK; r <= TOKEN_MISSING_CLAIM; r++) {
        const char *s = token_result_str((enum token_result)r);
        CHECK(s && *s && !strchr(s, '"') && !strchr(s, '\\'));
    }
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_issued_token_verifies_with_same_claims),
        UNIT_TEST(test_issued_header_names_alg_typ_and_kid),
        UNIT_TEST(test_issued_token_without_exp_is_refused),
        UNIT_TEST(test_service_account_token_without_exp_verifies_and_user_token_never),
        UNIT_TEST(test_hand_made_token_with_standard_claims_verifies),
        UNIT_TEST(test_alg_none_is_refused),
        UNIT_TEST(test_other_algorithms_are_refused),
        UNIT_TEST(test_hs256_signed_with_other_secret_is_refused),
        UNIT_TEST(test_tampered_token_is_refused),
        UNIT_TEST(test_signature_of_wrong_length_is_refused),
        UNIT_TEST(test_wrong_or_missing_typ_is_refused),
        UNIT_TEST(test_media_type_form_of_typ_is_accepted),
        UNIT_TEST(test_crit_header_is_refused),
        UNIT_TEST(test_kid_injection_is_verified_by_signature_only),
        UNIT_TEST(test_jku_and_jwk_headers_are_ignored),
        UNIT_TEST(test_expired_token_is_refused),
        UNIT_TEST(test_not_yet_valid_token_is_refused),
        UNIT_TEST(test_iat_in_future_is_refused),
        UNIT_TEST(test_time_claims_must_be_integers),
        UNIT_TEST(test_wrong_or_missing_issuer_is_refused),
        UNIT_TEST(test_wrong_or_missing_audience_is_refused),
        UNIT_TEST(test_audience_array_containing_ours_is_accepted),
        UNIT_TEST(test_missing_required_claims_are_refused),
        UNIT_TEST(test_claim_longer_than_its_field_is_refused),
        UNIT_TEST(test_duplicate_claims_are_refused),
        UNIT_TEST(test_wrong_number_of_parts_is_refused),
        UNIT_TEST(test_truncated_token_is_refused),
        UNIT_TEST(test_garbage_is_refused),
        UNIT_TEST(test_non_base64url_characters_are_refused),
        UNIT_TEST(test_header_and_payload_must_be_json_objects),
        UNIT_TEST(test_non_utf8_payload_is_refused),
        UNIT_TEST(test_token_over_size_limit_is_refused),
        UNIT_TEST(test_issue_refuses_token_over_size_limit),
        UNIT_TEST(test_result_strings_are_safe_in_www_authenticate),
    };
    return unit_run("token", tests, sizeof tests / sizeof tests[0]);
}
