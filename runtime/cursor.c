/* Signed cursors: base64url("v1\n" filters-digest "\n" sort_key "\n" id) "." base64url(mac). */
#include "runtime/cursor.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base64url.h"
#include "runtime/digest.h"

#define MAC_BYTES 16
#define MAX_CURSOR 512

/* Keyed once: a page's cursor is then two short MACs (filters, position), not two key setups. */
static struct digest_hmac key;

void cursor_init(const unsigned char *secret, size_t len)
{
    unsigned char k[32];
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)"treasury cursor key v1", 22, k,
         &n);
    if (digest_hmac_key(&key, k, sizeof k) != 0)
        abort(); /* at start, out of memory: nothing could be served */
    OPENSSL_cleanse(k, sizeof k);
}

static void mac(const char *payload, size_t n, unsigned char out[32])
{
    if (digest_hmac(&key, payload, n, out) != 0) {
        fprintf(stderr, "cursor: HMAC failed (out of memory)\n");
        abort(); /* as an arena out of memory does: no cursor is better than a wrong one */
    }
}

static void digest(const char *filters, char out[23])
{
    unsigned char d[32];
    mac(filters, strlen(filters), d);
    base64url_encode(d, 16, out);
}

char *cursor_encode(struct arena *a, const char *filters, const char *sort_key, const char *id)
{
    char fd[23];
    unsigned char m[32];
    digest(filters, fd);
    char *payload = arena_printf(a, "v1\n%s\n%s\n%s", fd, sort_key, id);
    size_t n = strlen(payload);
    mac(payload, n, m);
    char *out = arena_alloc(a, (n + 2) / 3 * 4 + 1 + (MAC_BYTES + 2) / 3 * 4 + 1);
    base64url_encode((const unsigned char *)payload, n, out);
    size_t o = strlen(out);
    out[o++] = '.';
    base64url_encode(m, MAC_BYTES, out + o);
    return out;
}

int cursor_decode(struct arena *a, const char *cursor, const char *filters, char **sort_key,
                  char **id)
{
    size_t len = strlen(cursor);
    const char *dot = strchr(cursor, '.');
    if (len > MAX_CURSOR || !dot)
        return -1;
    unsigned char payload[MAX_CURSOR], given[MAX_CURSOR], m[32];
    size_t plen = 0, glen = 0;
    if (base64url_decode(cursor, (size_t)(dot - cursor), payload, sizeof payload, &plen) != 0 ||
        base64url_decode(dot + 1, len - (size_t)(dot - cursor) - 1, given, sizeof given,
                         &glen) != 0 ||
        glen != MAC_BYTES)
        return -1;
    mac((const char *)payload, plen, m);
    if (CRYPTO_memcmp(m, given, MAC_BYTES) != 0)
        return -1;
    char *text = arena_strndup(a, (const char *)payload, plen);
    char fd[23];
    digest(filters, fd);
    char *f1 = strchr(text, '\n');
    if (!f1 || strncmp(text, "v1", 2) != 0 || f1 != text + 2)
        return -1;
    char *f2 = strchr(f1 + 1, '\n');
    if (!f2)
        return -1;
    char *f3 = strchr(f2 + 1, '\n');
    if (!f3)
        return -1;
    *f2 = *f3 = '\0';
    if (strcmp(f1 + 1, fd) != 0)
        return -1;
    *sort_key = f2 + 1;
    *id = f3 + 1;
    return 0;
}
