/* Signed cursors: base64url("v1\n" filters-digest "\n" sort_key "\n" id) "." base64url(mac). */
#include "runtime/cursor.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#define MAC_BYTES 16
#define MAX_CURSOR 512

static unsigned char key[32];

void cursor_init(const unsigned char *secret, size_t len)
{
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)"treasury cursor key v1", 22, key,
         &n);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64url(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = b64[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = b64[v & 63];
    }
    out[o] = '\0';
}

static int unb64url(const char *in, size_t n, unsigned char *out, size_t *outlen)
{
    unsigned v = 0;
    int bits = 0;
    size_t o = 0;
    if (n % 4 == 1)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *p = memchr(b64, in[i], 64);
        if (!p || in[i] == '\0')
            return -1;
        v = (v << 6) | (unsigned)(p - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    if (bits && (v & ((1u << bits) - 1)) != 0)
        return -1; /* non-canonical trailing bits */
    *outlen = o;
    return 0;
}

static void digest(const char *filters, char out[23])
{
    unsigned char d[32];
    unsigned int n = 0;
    HMAC(EVP_sha256(), key, sizeof key, (const unsigned char *)filters, strlen(filters), d, &n);
    b64url(d, 16, out);
}

static void mac(const char *payload, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    HMAC(EVP_sha256(), key, sizeof key, (const unsigned char *)payload, n, out, &len);
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
    b64url((const unsigned char *)payload, n, out);
    size_t o = strlen(out);
    out[o++] = '.';
    b64url(m, MAC_BYTES, out + o);
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
    if (unb64url(cursor, (size_t)(dot - cursor), payload, &plen) != 0 ||
        unb64url(dot + 1, len - (size_t)(dot - cursor) - 1, given, &glen) != 0 ||
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
