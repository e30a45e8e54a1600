/* Signed cursors: base64url("v2\n" sort_key "\n" id) "." base64url(mac), the MAC over the list's
 * filters and that payload (a cursor of the earlier "v1" form, with a digest of the filters in
 * its payload and a MAC apiece, is refused as any other: the client starts the list again). */
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

/* Keyed once: a page's cursor is then one short MAC, not a key setup. */
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

/* The MAC of a cursor: over the list's filters (length-prefixed, so that no filters and
 * payload spell another pair's text) and the payload, with one HMAC: a cursor made for other
 * filters fails as a tampered one does. */
static void mac(struct arena *a, const char *filters, const char *payload, size_t n,
                unsigned char out[32])
{
    size_t fl = strlen(filters);
    char *text = arena_alloc(a, 24 + fl + n);
    int head = snprintf(text, 24, "%zu:", fl);
    memcpy(text + head, filters, fl);
    memcpy(text + head + fl, payload, n);
    if (digest_hmac(&key, text, (size_t)head + fl + n, out) != 0) {
        fprintf(stderr, "cursor: HMAC failed (out of memory)\n");
        abort(); /* as an arena out of memory does: no cursor is better than a wrong one */
    }
}

char *cursor_encode(struct arena *a, const char *filters, const char *sort_key, const char *id)
{
    unsigned char m[32];
    char *payload = arena_printf(a, "v2\n%s\n%s", sort_key, id);
    size_t n = strlen(payload);
    mac(a, filters, payload, n, m);
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
    mac(a, filters, (const char *)payload, plen, m);
    if (CRYPTO_memcmp(m, given, MAC_BYTES) != 0)
        return -1;
    char *text = arena_strndup(a, (const char *)payload, plen);
    if (strlen(text) != plen || strncmp(text, "v2\n", 3) != 0)
        return -1;
    char *f = strchr(text + 3, '\n');
    if (!f || strchr(f + 1, '\n'))
        return -1;
    *f = '\0';
    *sort_key = text + 3;
    *id = f + 1;
    return 0;
}
