/* base64url without padding. */
#include "runtime/base64url.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void base64url_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = alphabet[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = alphabet[v & 63];
    }
    out[o] = '\0';
}

static int value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

int base64url_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *len)
{
    unsigned v = 0;
    int bits = 0;
    size_t o = 0;
    if (n % 4 == 1)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int d = value(in[i]);
        if (d < 0)
            return -1;
        v = (v << 6) | (unsigned)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == cap)
                return -1;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    if (bits && (v & ((1u << bits) - 1)) != 0)
        return -1;
    if (o < cap)
        out[o] = '\0';
    *len = o;
    return 0;
}
