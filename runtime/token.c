/* JWT access tokens (RFC 7519 / RFC 9068), HS256 only. Issued with jsonw; verified by hand
 * (split, base64url, HMAC-SHA256, constant-time compare, claim checks) so no library default
 * can skip the signature or accept another algorithm (RFC 8725 §3.1). */
#include "runtime/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/base64url.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"

#define SIG_BYTES 32

static void sign(const struct token_key *k, const char *msg, size_t n, unsigned char out[SIG_BYTES])
{
    unsigned int len = 0;
    HMAC(EVP_sha256(), k->secret, TOKEN_KEY_BYTES, (const unsigned char *)msg, n, out, &len);
}

static char *encode_json(char *json, size_t n)
{
    char *s = malloc(BASE64URL_LEN(n) + 1);
    if (s)
        base64url_encode((const unsigned char *)json, n, s);
    return s;
}

int token_issue(const struct token_key *k, const struct token_claims *c, char **out)
{
    struct jsonw w;
    char *hjson = NULL, *pjson = NULL, *h = NULL, *p = NULL, *tok = NULL;
    size_t hn = 0, pn = 0;
    unsigned char sig[SIG_BYTES];
    int rc = -1;

    *out = NULL;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "alg");
    jsonw_string(&w, "HS256");
    jsonw_key(&w, "typ");
    jsonw_string(&w, "at+jwt");
    jsonw_key(&w, "kid");
    jsonw_string(&w, k->kid);
    jsonw_object_end(&w);
    hjson = jsonw_take(&w, &hn);

    jsonw_object_begin(&w);
    jsonw_key(&w, "iss");
    jsonw_string(&w, k->issuer);
    jsonw_key(&w, "aud");
    jsonw_string(&w, k->audience);
    jsonw_key(&w, "sub");
    jsonw_string(&w, c->sub);
    jsonw_key(&w, "wid");
    jsonw_string(&w, c->wid);
    jsonw_key(&w, "sid");
    jsonw_string(&w, c->sid);
    jsonw_key(&w, "jti");
    jsonw_string(&w, c->jti);
    jsonw_key(&w, "client_id");
    jsonw_string(&w, c->client_id[0] ? c->client_id : TOKEN_FIRST_PARTY);
    jsonw_key(&w, "scope");
    jsonw_string(&w, c->scope);
    jsonw_key(&w, "iat");
    jsonw_int(&w, c->iat);
    jsonw_key(&w, "nbf");
    jsonw_int(&w, c->nbf);
    if (c->exp != 0) {
        jsonw_key(&w, "exp");
        jsonw_int(&w, c->exp);
    }
    jsonw_object_end(&w);
    pjson = jsonw_take(&w, &pn);
    if (!hjson || !pjson)
        goto out;

    h = encode_json(hjson, hn);
    p = encode_json(pjson, pn);
    if (!h || !p)
        goto out;
    size_t hl = strlen(h), pl = strlen(p), sl = BASE64URL_LEN(SIG_BYTES);
    size_t total = hl + 1 + pl + 1 + sl;
    if (total > TOKEN_MAX_BYTES)
        goto out; /* would be refused by token_verify anyway */
    tok = malloc(total + 1);
    if (!tok)
        goto out;
    memcpy(tok, h, hl);
    tok[hl] = '.';
    memcpy(tok + hl + 1, p, pl);
    sign(k, tok, hl + 1 + pl, sig);
    tok[hl + 1 + pl] = '.';
    base64url_encode(sig, SIG_BYTES, tok + hl + 1 + pl + 1);
    *out = tok;
    tok = NULL;
    rc = 0;
out:
    OPENSSL_cleanse(sig, sizeof sig);
    jsonw_release(&w);
    free(hjson);
    free(pjson);
    free(h);
    free(p);
    free(tok);
    return rc;
}

static bool str_is(const struct json_value *v, const char *s)
{
    return v && v->type == JSON_STRING && v->len == strlen(s) && memcmp(v->s, s, v->len) == 0;
}

static bool aud_ok(const struct json_value *aud, const char *ours)
{
    if (str_is(aud, ours))
        return true;
    if (!aud || aud->type != JSON_ARRAY)
        return false;
    for (size_t i = 0; i < aud->count; i++)
        if (str_is(aud->items[i], ours))
            return true;
    return false;
}

/* 1 present and integral, 0 absent, -1 present but not an int64. */
static int get_int(const struct json_value *obj, const char *name, int64_t *out)
{
    const struct json_value *v = json_get(obj, name);
    if (!v)
        return 0;
    if (v->type != JSON_NUMBER || json_number_to_int64(v, out) != JSON_INT_OK)
        return -1;
    return 1;
}

/* a + b clamped to the int64 range, so huge exp/nbf values cannot wrap around. */
static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

static int64_t leeway_of(const struct token_key *k)
{
    return k->leeway_seconds > 0 ? k->leeway_seconds : 0;
}

/* The time rules, with the key's leeway for clock skew. */
static bool expired_at(const struct token_key *k, int64_t exp, int64_t now)
{
    return now >= sat_add(exp, leeway_of(k));
}

static bool in_the_future(const struct token_key *k, int64_t t, int64_t now)
{
    return t > sat_add(now, leeway_of(k));
}

enum token_result token_check_times(const struct token_key *k, const struct token_claims *c,
                                    int64_t now)
{
    if (c->exp != 0 && expired_at(k, c->exp, now))
        return TOKEN_EXPIRED;
    if ((c->nbf != 0 && in_the_future(k, c->nbf, now)) || in_the_future(k, c->iat, now))
        return TOKEN_NOT_YET_VALID;
    return TOKEN_OK;
}

static enum token_result copy_claim(const struct json_value *obj, const char *name, char *dst,
                                    size_t cap, bool allow_empty)
{
    const struct json_value *v = json_get(obj, name);
    if (!v || v->type != JSON_STRING || (!allow_empty && v->len == 0))
        return TOKEN_MISSING_CLAIM;
    if (v->len >= cap)
        return TOKEN_MALFORMED;
    memcpy(dst, v->s, v->len);
    dst[v->len] = '\0';
    return TOKEN_OK;
}

static enum token_result check_claims(const struct token_key *k, const struct json_value *pl,
                                      int64_t now, struct token_claims *c)
{
    enum token_result r;
    int64_t exp = 0, nbf = 0, iat = 0;
    int has;

    if (!str_is(json_get(pl, "iss"), k->issuer))
        return TOKEN_BAD_ISSUER;
    if (!aud_ok(json_get(pl, "aud"), k->audience))
        return TOKEN_BAD_AUDIENCE;

    /* Mutually exclusive rules per kind of token (RFC 8725 §3.12): a user's token must
     * expire; a service account's ("sa_" subject, issued by an admin and revocable) may not. */
    const struct json_value *sub = json_get(pl, "sub");
    bool service = sub && sub->type == JSON_STRING && sub->len > 3 &&
                   memcmp(sub->s, TOKEN_SERVICE_PREFIX, 3) == 0;
    has = get_int(pl, "exp", &exp);
    if (has < 0 || (has == 0 && !service))
        return TOKEN_MISSING_CLAIM;
    if (has && expired_at(k, exp, now))
        return TOKEN_EXPIRED;
    has = get_int(pl, "nbf", &nbf);
    if (has < 0)
        return TOKEN_MALFORMED;
    if (has && in_the_future(k, nbf, now))
        return TOKEN_NOT_YET_VALID;
    if (get_int(pl, "iat", &iat) != 1)
        return TOKEN_MISSING_CLAIM;
    if (in_the_future(k, iat, now))
        return TOKEN_NOT_YET_VALID;

    memset(c, 0, sizeof *c);
    if ((r = copy_claim(pl, "sub", c->sub, sizeof c->sub, false)) != TOKEN_OK ||
        (r = copy_claim(pl, "wid", c->wid, sizeof c->wid, false)) != TOKEN_OK ||
        (r = copy_claim(pl, "sid", c->sid, sizeof c->sid, false)) != TOKEN_OK ||
        (r = copy_claim(pl, "jti", c->jti, sizeof c->jti, false)) != TOKEN_OK ||
        (r = copy_claim(pl, "client_id", c->client_id, sizeof c->client_id, false)) != TOKEN_OK ||
        (r = copy_claim(pl, "scope", c->scope, sizeof c->scope, true)) != TOKEN_OK)
        return r;
    c->iat = iat;
    c->nbf = has ? nbf : 0;
    c->exp = exp;
    return TOKEN_OK;
}

enum token_result token_verify(const struct token_key *k, const char *token, int64_t now,
                               struct token_claims *c)
{
    struct arena a;
    struct token_claims tmp;
    struct json_value *hdr = NULL, *pl = NULL;
    struct json_error jerr;
    unsigned char *hbuf, *pbuf, *sbuf;
    unsigned char expect[SIG_BYTES];
    size_t hn, pn, sn;
    enum token_result r = TOKEN_MALFORMED;

    arena_init(&a);
    if (!token)
        goto out;
    size_t n = strnlen(token, TOKEN_MAX_BYTES + 1);
    if (n > TOKEN_MAX_BYTES)
        goto out;
    const char *d1 = memchr(token, '.', n);
    const char *d2 = d1 ? memchr(d1 + 1, '.', n - (size_t)(d1 + 1 - token)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', n - (size_t)(d2 + 1 - token)))
        goto out;
    size_t hl = (size_t)(d1 - token), pll = (size_t)(d2 - d1 - 1);
    size_t sl = n - (size_t)(d2 + 1 - token);
    if (hl == 0 || pll == 0)
        goto out;

    hbuf = arena_alloc(&a, hl * 3 / 4 + 1);
    pbuf = arena_alloc(&a, pll * 3 / 4 + 1);
    sbuf = arena_alloc(&a, sl * 3 / 4 + 1);
    if (base64url_decode(token, hl, hbuf, hl * 3 / 4 + 1, &hn) != 0 ||
        base64url_decode(d1 + 1, pll, pbuf, pll * 3 / 4 + 1, &pn) != 0 ||
        base64url_decode(d2 + 1, sl, sbuf, sl * 3 / 4 + 1, &sn) != 0)
        goto out;

    if (json_parse(&a, (const char *)hbuf, hn, &hdr, &jerr) != 0 || hdr->type != JSON_OBJECT)
        goto out;
    /* The one algorithm we issue; never the header's choice (RFC 8725 §3.1). */
    if (!str_is(json_get(hdr, "alg"), "HS256")) {
        r = TOKEN_BAD_ALG;
        goto out;
    }
    /* Explicit typing keeps other JWT kinds out (RFC 9068 §4, RFC 8725 §3.11). */
    const struct json_value *typ = json_get(hdr, "typ");
    if (!str_is(typ, "at+jwt") && !str_is(typ, "application/at+jwt")) {
        r = TOKEN_BAD_TYP;
        goto out;
    }
    /* We implement no extensions, so any "crit" must be refused (RFC 7515 §4.1.11). kid, jku,
     * x5u and jwk are ignored: the key is always ours (RFC 8725 §3.10). */
    if (json_get(hdr, "crit"))
        goto out;

    if (sn != SIG_BYTES) {
        r = TOKEN_BAD_SIGNATURE;
        goto out;
    }
    sign(k, token, (size_t)(d2 - token), expect);
    if (CRYPTO_memcmp(expect, sbuf, SIG_BYTES) != 0) {
        r = TOKEN_BAD_SIGNATURE;
        goto out;
    }

    if (json_parse(&a, (const char *)pbuf, pn, &pl, &jerr) != 0 || pl->type != JSON_OBJECT)
        goto out;
    r = check_claims(k, pl, now, &tmp);
    if (r == TOKEN_OK)
        *c = tmp;
out:
    OPENSSL_cleanse(expect, sizeof expect);
    arena_release(&a);
    return r;
}

const char *token_result_str(enum token_result r)
{
    /* Shown to clients in WWW-Authenticate error_description: short, no quotes. */
    switch (r) {
    case TOKEN_OK:
        return "ok";
    case TOKEN_MALFORMED:
        return "malformed token";
    case TOKEN_BAD_ALG:
        return "unsupported algorithm";
    case TOKEN_BAD_TYP:
        return "wrong token type";
    case TOKEN_BAD_SIGNATURE:
        return "bad signature";
    case TOKEN_EXPIRED:
        return "token expired";
    case TOKEN_NOT_YET_VALID:
        return "token not yet valid";
    case TOKEN_BAD_ISSUER:
        return "wrong issuer";
    case TOKEN_BAD_AUDIENCE:
        return "wrong audience";
    case TOKEN_MISSING_CLAIM:
        return "missing or invalid claim";
    }
    return "invalid token";
}

bool token_is_service_subject(const char *sub)
{
    return sub && strncmp(sub, TOKEN_SERVICE_PREFIX, strlen(TOKEN_SERVICE_PREFIX)) == 0;
}
