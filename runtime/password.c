/* scrypt password hashes in PHC string form: "$scrypt$ln=14,r=8,p=5$<salt>$<hash>", salt (16
 * bytes) and hash (32 bytes) in standard base64 without padding, as the PHC format specifies.
 *
 * Parameters: N = 2^14, r = 8, p = 5, one of OWASP's equivalent scrypt settings (Password
 * Storage Cheat Sheet: 2^17/8/1, 2^16/8/2, 2^15/8/3, 2^14/8/5, 2^13/8/10 "are equivalent in the
 * defense they provide"). It needs 16 MiB per hash where 2^17/8/1 needs 128 MiB: two logins at
 * once no longer take a quarter of a gigabyte, and at most HASHES_AT_ONCE run together.
 * Verification accepts what we produce and what earlier builds produced (ln 10..20, r = 8,
 * p = 1..16, canonical base64), so existing hashes keep working. */
#include "runtime/password.h"

#include <malloc.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SALT_BYTES 16
#define KEY_BYTES 32
#define LN_MIN 10
#define LN_MAX 20
#define LN_DEFAULT 14
#define R 8
#define P 5
#define P_MAX 16
/* Bounds the memory of concurrent hashing: 128 * r * N bytes each (16 MiB at the default). */
#define HASHES_AT_ONCE 2

static int cost_ln = LN_DEFAULT;

/* Blocks at least this large get a mapping of their own (a fixed glibc threshold: its default
 * one rises to the size of the largest block freed, after which scrypt's buffers stay resident
 * in the offload threads' heaps, fragmenting them: peak RSS under logins went from 53 to 85
 * MiB). A fresh mapping costs a page fault per 4 KiB page - on this kind of VM a third more
 * CPU per login - unless it is backed by huge pages, hence the madvise. */
#define OWN_MAPPING_BYTES ((size_t)1 << 20)
#define TRIM_BYTES ((size_t)32 << 20)

static void *crypto_malloc(size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    void *p = malloc(n);
    if (p && n >= OWN_MAPPING_BYTES) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1);
        uintptr_t to = ((uintptr_t)p + n) & ~(page - 1);
        if (to > from)
            madvise((void *)from, to - from, MADV_HUGEPAGE); /* advice: failure is harmless */
    }
    return p;
}

static void *crypto_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    return realloc(p, n);
}

static void crypto_free(void *p, const char *file, int line)
{
    (void)file;
    (void)line;
    free(p);
}

void password_memory_init(void)
{
    mallopt(M_MMAP_THRESHOLD, (int)OWN_MAPPING_BYTES);
    /* Fixing one threshold fixes the other at its default, 128 KiB: heaps would then be
     * trimmed and grown again all the time, page faults included (POST -c64 about 15 % slower).
     * This is the trim threshold glibc itself sets once it has seen a 16 MiB block freed. */
    mallopt(M_TRIM_THRESHOLD, (int)TRIM_BYTES);
    CRYPTO_set_mem_functions(crypto_malloc, crypto_realloc, crypto_free);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* No characters that read alike (0/O/o, 1/l/I), so a printed admin password can be typed. */
static const char alphabet[] = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789";

void password_set_cost(int log2n)
{
    if (log2n >= LN_MIN && log2n <= LN_MAX)
        cost_ln = log2n;
}

static void b64enc(const unsigned char *in, size_t n, char *out)
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

/* Decodes exactly want bytes from in[0..n) (unpadded, canonical), or -1. */
static int b64dec(const char *in, size_t n, unsigned char *out, size_t want)
{
    unsigned v = 0;
    int bits = 0;
    size_t o = 0;
    if (n != want / 3 * 4 + (want % 3 ? want % 3 + 1 : 0))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *p = in[i] ? strchr(b64, in[i]) : NULL;
        if (!p)
            return -1;
        v = (v << 6) | (unsigned)(p - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    if (bits && (v & ((1u << bits) - 1)) != 0)
        return -1;
    return o == want ? 0 : -1;
}

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_cv = PTHREAD_COND_INITIALIZER;
static int hashing;

static int derive(const char *password, const unsigned char *salt, int ln, int p,
                  unsigned char key[KEY_BYTES])
{
    uint64_t n = (uint64_t)1 << ln;
    /* OpenSSL needs 128*r*(N+2) bytes for V plus 128*r*p for B; 1 MiB slack on top. */
    uint64_t maxmem = 128u * R * (n + 2) + 128u * R * (uint64_t)p + (1u << 20);
    pthread_mutex_lock(&slots_mu);
    while (hashing >= HASHES_AT_ONCE)
        pthread_cond_wait(&slots_cv, &slots_mu);
    hashing++;
    pthread_mutex_unlock(&slots_mu);
    int ok = EVP_PBE_scrypt(password, strlen(password), salt, SALT_BYTES, n, R, (uint64_t)p,
                            maxmem, key, KEY_BYTES);
    pthread_mutex_lock(&slots_mu);
    hashing--;
    pthread_cond_signal(&slots_cv);
    pthread_mutex_unlock(&slots_mu);
    return ok == 1 ? 0 : -1;
}

static int encode(const char *password, const unsigned char *salt, int ln, char *out, size_t outlen)
{
    unsigned char key[KEY_BYTES];
    char s64[SALT_BYTES * 4 / 3 + 4], k64[KEY_BYTES * 4 / 3 + 4];
    int rc = -1;

    if (derive(password, salt, ln, P, key) != 0)
        goto out;
    b64enc(salt, SALT_BYTES, s64);
    b64enc(key, KEY_BYTES, k64);
    int w = snprintf(out, outlen, "$scrypt$ln=%d,r=%d,p=%d$%s$%s", ln, R, P, s64, k64);
    if (w < 0 || (size_t)w >= outlen)
        goto out;
    rc = 0;
out:
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(k64, sizeof k64);
    if (rc != 0 && outlen)
        out[0] = '\0';
    return rc;
}

int password_hash(const char *password, char *out, size_t outlen)
{
    unsigned char salt[SALT_BYTES];

    if (!password || !out || outlen == 0)
        return -1;
    if (RAND_bytes(salt, sizeof salt) != 1)
        return -1;
    return encode(password, salt, cost_ln, out, outlen);
}

/* Small decimal without sign or leading zeros; advances *p. */
static int parse_uint(const char **p, int max)
{
    const char *s = *p;
    int v = 0;
    if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
        return -1;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > max)
            return -1;
        s++;
    }
    *p = s;
    return v;
}

static bool expect(const char **p, const char *lit)
{
    size_t n = strlen(lit);
    if (strncmp(*p, lit, n) != 0)
        return false;
    *p += n;
    return true;
}

bool password_verify(const char *password, const char *encoded)
{
    unsigned char salt[SALT_BYTES], want[KEY_BYTES], got[KEY_BYTES];
    bool ok = false;
    int ln, r, p;

    if (!password || !encoded || strnlen(encoded, PASSWORD_HASH_MAX) >= PASSWORD_HASH_MAX)
        goto out;
    const char *s = encoded;
    if (!expect(&s, "$scrypt$ln=") || (ln = parse_uint(&s, 99)) < 0 || !expect(&s, ",r=") ||
        (r = parse_uint(&s, 99)) < 0 || !expect(&s, ",p=") || (p = parse_uint(&s, 99)) < 0 ||
        !expect(&s, "$"))
        goto out;
    if (ln < LN_MIN || ln > LN_MAX || r != R || p < 1 || p > P_MAX)
        goto out;
    const char *dollar = strchr(s, '$');
    if (!dollar || b64dec(s, (size_t)(dollar - s), salt, SALT_BYTES) != 0)
        goto out;
    s = dollar + 1;
    if (b64dec(s, strlen(s), want, KEY_BYTES) != 0)
        goto out;
    if (derive(password, salt, ln, p, got) != 0)
        goto out;
    ok = CRYPTO_memcmp(got, want, KEY_BYTES) == 0;
out:
    OPENSSL_cleanse(got, sizeof got);
    OPENSSL_cleanse(want, sizeof want);
    return ok;
}

static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;
static char dummy_hash[PASSWORD_HASH_MAX];

static void dummy_init(void)
{
    unsigned char salt[SALT_BYTES] = {0};
    /* A random salt when we can get one; the fixed one still costs the same to check. */
    if (RAND_bytes(salt, sizeof salt) != 1)
        memset(salt, 0x5a, sizeof salt);
    if (encode("treasury dummy password", salt, cost_ln, dummy_hash, sizeof dummy_hash) != 0)
        dummy_hash[0] = '\0';
}

bool password_verify_dummy(const char *password)
{
    pthread_once(&dummy_once, dummy_init);
    if (dummy_hash[0])
        (void)password_verify(password ? password : "", dummy_hash);
    return false;
}

int password_generate(char *out, size_t outlen, size_t len)
{
    const size_t n = sizeof alphabet - 1;
    const unsigned limit = 256 - 256 % n; /* bytes >= limit would bias the low letters */
    unsigned char buf[64];
    size_t have = 0, pos = sizeof buf;
    int rc = -1;

    if (!out || len == 0 || len >= outlen)
        goto out;
    while (have < len) {
        if (pos == sizeof buf) {
            if (RAND_bytes(buf, sizeof buf) != 1)
                goto out;
            pos = 0;
        }
        unsigned b = buf[pos++];
        if (b < limit)
            out[have++] = alphabet[b % n];
    }
    out[len] = '\0';
    rc = 0;
out:
    OPENSSL_cleanse(buf, sizeof buf);
    if (rc != 0 && out && outlen)
        out[0] = '\0';
    return rc;
}

/* ---- policy ------------------------------------------------------------------------------- */

/* The most common passwords of 12 characters or more in public breach corpora (the shorter
 * ones fail the length rule anyway), lower case. */
static const char *const common[] = {
    "123456789012", "1234567890123", "12345678910", "123456789101", "1234567891011",
    "111111111111", "000000000000", "123123123123", "qwertyuiopas", "qwertyuiop12",
    "qwerty123456", "1q2w3e4r5t6y", "1qaz2wsx3edc", "1qaz2wsx3edc4rfv", "zaq12wsxcde3",
    "password1234", "password12345", "password123!", "passwordpassword", "password1234!",
    "p@ssw0rd1234", "p@ssword1234", "passw0rd1234", "iloveyou1234", "letmein12345",
    "welcome12345", "welcome123456", "administrator", "administrator1", "admin1234567",
    "admin123456789", "changeme1234", "changeme123!", "trustno1trustno1", "qwertyqwerty",
    "asdfghjkl123", "asdfasdfasdf", "abcdefghijkl", "abc123abc123", "abcd1234abcd",
    "football1234", "baseball1234", "monkey123456", "dragon123456", "sunshine1234",
    "princess1234", "superman1234", "starwars1234", "whatever1234", "mustang12345",
    "michael12345", "shadow123456", "master123456", "jennifer1234", "computer1234",
    "treasury1234", "treasurer123", "correct horse battery staple", "correcthorsebatterystaple",
    "thequickbrownfox", "summer2024!!", "winter2024!!", "spring2025!!", "autumn2024!!",
    "january2025!", "password2024", "password2025", "password2026", "company12345",
    "letmeinplease", "iloveyou12345", "qwerty1234567", "1234qwerasdf", "q1w2e3r4t5y6",
};

static bool same_ignoring_case(const char *a, const char *b, size_t blen)
{
    if (strlen(a) != blen)
        return false;
    for (size_t i = 0; i < blen; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z')
            x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (char)(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return true;
}

/* Code points of valid UTF-8, or -1. */
static long codepoints(const char *s)
{
    long n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int len = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3
                : (*p & 0xf8) == 0xf0 ? 4 : 0;
        if (!len)
            return -1;
        for (int i = 1; i < len; i++)
            if ((p[i] & 0xc0) != 0x80)
                return -1;
        p += len;
        n++;
    }
    return n;
}

const char *password_policy_violation(const char *password, const char *email)
{
    long n = codepoints(password);
    if (n < 0)
        return "must be valid UTF-8";
    if (n < PASSWORD_MIN_LEN)
        return "must be at least 12 characters long";
    if (n > PASSWORD_MAX_LEN)
        return "must be at most 256 characters long";
    bool repeated = true;
    for (const char *p = password + 1; *p; p++)
        repeated = repeated && *p == password[0];
    if (repeated)
        return "must not be one character repeated";
    if (email && *email) {
        const char *at = strchr(email, '@');
        if (same_ignoring_case(password, email, strlen(email)) ||
            (at && same_ignoring_case(password, email, (size_t)(at - email))))
            return "must not be the email address or its local part";
    }
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        if (same_ignoring_case(password, common[i], strlen(common[i])))
            return "is one of the most common passwords; choose another";
    return NULL;
}
