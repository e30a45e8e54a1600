/* Resource ids ("ben_" + a ULID: 26 Crockford base32 characters of a 48-bit millisecond
 * timestamp and 80 random bits) and opaque base64url secrets, from the OpenSSL CSPRNG. */
#include "runtime/id.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base64url.h"

#define ID_CHARS 26
#define SECRET_MAX 64

/* Crockford's alphabet without I, L, O, U, in lower case. */
static const char b32[] = "0123456789abcdefghjkmnpqrstvwxyz";

static void random_bytes(unsigned char *buf, size_t n)
{
    /* Ids and secrets must never be guessable; without entropy there is no safe fallback. */
    if (RAND_bytes(buf, (int)n) != 1) {
        fprintf(stderr, "id: RAND_bytes failed\n");
        abort();
    }
}

/* 128 bits as 26 base32 digits (130 bits, the top two zero), most significant first. */
static void encode128(const unsigned char in[16], char out[ID_CHARS])
{
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) {
        hi = hi << 8 | in[i];
        lo = lo << 8 | in[8 + i];
    }
    for (int i = ID_CHARS - 1; i >= 0; i--) {
        out[i] = b32[lo & 31];
        lo = lo >> 5 | hi << 59;
        hi >>= 5;
    }
}

/* Ids draw their random bits from a per-thread buffer filled by RAND_bytes 512 bytes at a time:
 * each RAND_bytes call costs a getpid() system call (OpenSSL's fork check) and a lock, which a
 * payment's several ids per request would otherwise pay every time. Each byte is handed out
 * once and wiped. Secrets (id_secret) still come straight from RAND_bytes. */
#define POOL_BYTES 512
static _Thread_local unsigned char pool[POOL_BYTES];
static _Thread_local size_t pool_left;

static void pooled_random_bytes(unsigned char *buf, size_t n)
{
    if (n > pool_left) {
        random_bytes(pool, sizeof pool);
        pool_left = sizeof pool;
    }
    unsigned char *from = pool + (sizeof pool - pool_left);
    memcpy(buf, from, n);
    OPENSSL_cleanse(from, n);
    pool_left -= n;
}

int id_new_buf(char *buf, size_t n, const char *prefix)
{
    size_t plen = strlen(prefix);
    if (n < plen + 1 + ID_CHARS + 1) {
        if (n)
            buf[0] = '\0';
        return -1;
    }
    /* Time first (ULID layout): ids made later sort later, so every index on an id (and the
     * events of a payment, keyed by its id) grows at its end instead of at a random page - a
     * group-committed batch then writes a handful of pages, not one per row and index. The 80
     * random bits keep ids unguessable; the creation time they reveal is public anyway. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    unsigned char raw[16];
    for (int i = 0; i < 6; i++)
        raw[i] = (unsigned char)(ms >> (8 * (5 - i)));
    pooled_random_bytes(raw + 6, sizeof raw - 6);
    memcpy(buf, prefix, plen);
    buf[plen] = '_';
    encode128(raw, buf + plen + 1);
    buf[plen + 1 + ID_CHARS] = '\0';
    return 0;
}

char *id_new(struct arena *a, const char *prefix)
{
    size_t n = strlen(prefix) + 1 + ID_CHARS + 1;
    char *buf = arena_alloc(a, n);
    if (id_new_buf(buf, n, prefix) != 0)
        abort(); /* unreachable: the buffer is sized for it */
    return buf;
}

static bool is_b32(char c)
{
    return c && strchr(b32, c) != NULL;
}

/* Any id drawn from our alphabet passes, even one above 2^128 (a first digit past '7'): a
 * well-formed id we never issued should answer 404, not a validation error. */
bool id_valid(const char *s, const char *prefix)
{
    if (!s)
        return false;
    size_t plen;
    if (prefix) {
        plen = strlen(prefix);
        if (strncmp(s, prefix, plen) != 0)
            return false;
    } else {
        /* No prefix given: any lower-case letter run. */
        plen = 0;
        while (s[plen] >= 'a' && s[plen] <= 'z')
            plen++;
        if (plen == 0)
            return false;
    }
    if (s[plen] != '_')
        return false;
    const char *body = s + plen + 1;
    for (int i = 0; i < ID_CHARS; i++)
        if (!is_b32(body[i]))
            return false;
    return body[ID_CHARS] == '\0';
}

char *id_secret(struct arena *a, size_t bytes)
{
    unsigned char raw[SECRET_MAX];
    if (bytes > SECRET_MAX) {
        fprintf(stderr, "id: secret of %zu bytes requested, at most %d\n", bytes, SECRET_MAX);
        abort();
    }
    if (bytes)
        random_bytes(raw, bytes);
    char *out = arena_alloc(a, BASE64URL_LEN(bytes) + 1);
    base64url_encode(raw, bytes, out);
    OPENSSL_cleanse(raw, sizeof raw);
    return out;
}
