/* Key material in the data directory: the HS256 signing key (hex, 0600, refused when readable by
 * others) and a self-signed EC P-256 TLS certificate, both created on first start and written
 * so that a crash never leaves a half-written file under the final name. */
#include "runtime/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/file.h"
#include "runtime/format.h"

#define SIGNING_KEY_FILE "jwt-signing.key"
#define KEY_HEX (TOKEN_KEY_BYTES * 2)
#define CERT_DAYS 825
#define READ_MAX (16u << 20) /* no key or certificate file is anywhere near this */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *ossl_reason(void)
{
    static _Thread_local char buf[256];
    unsigned long e = ERR_get_error();
    if (!e)
        return "unknown OpenSSL error";
    ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return buf;
}

static void set_kid(struct token_key *k)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(k->secret, TOKEN_KEY_BYTES, d, &n, EVP_sha256(), NULL);
    char *o = k->kid;
    *o++ = 'k';
    *o++ = '-';
    for (int i = 0; i < 4; i++) {
        *o++ = hex[d[i] >> 4];
        *o++ = hex[d[i] & 15];
    }
    *o = '\0';
}

static int create_signing_key(const char *dir, const char *path, char *err, size_t errlen)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char secret[TOKEN_KEY_BYTES];
    char text[KEY_HEX + 1];
    int fd = -1, rc = -1;

    if (RAND_bytes(secret, sizeof secret) != 1) {
        seterr(err, errlen, "cannot generate signing key: %s", ossl_reason());
        goto out;
    }
    for (size_t i = 0; i < sizeof secret; i++) {
        text[2 * i] = hex[secret[i] >> 4];
        text[2 * i + 1] = hex[secret[i] & 15];
    }
    text[KEY_HEX] = '\n';
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        /* Another process created it first: the caller reads theirs. */
        rc = errno == EEXIST ? 1 : -1;
        if (rc < 0)
            seterr(err, errlen, "cannot create %s: %s", path, strerror(errno));
        goto out;
    }
    if (file_write_all(fd, text, sizeof text) != 0 || fsync(fd) != 0) {
        seterr(err, errlen, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        fd = -1;
        unlink(path);
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        seterr(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(path);
        goto out;
    }
    fd = -1;
    if (file_sync_dir(dir) != 0) {
        seterr(err, errlen, "cannot sync directory %s: %s", dir, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    OPENSSL_cleanse(secret, sizeof secret);
    OPENSSL_cleanse(text, sizeof text);
    return rc;
}

static int load_signing_key(const char *path, struct token_key *k, char *err, size_t errlen)
{
    char text[KEY_HEX + 2];
    struct stat st;
    size_t n = 0;
    int fd, rc = -1;

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        seterr(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        seterr(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        seterr(err, errlen, "%s is not a regular file", path);
        goto out;
    }
    if (st.st_mode & 077) {
        seterr(err, errlen,
               "%s is accessible by group or others (mode %04o); refusing to use it as the token "
               "signing key. Fix with: chmod 600 %s",
               path, (unsigned)(st.st_mode & 07777), path);
        goto out;
    }
    while (n < sizeof text) {
        ssize_t r = read(fd, text + n, sizeof text - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            seterr(err, errlen, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    /* Exactly 64 hex digits, optionally followed by one newline. */
    if (n < KEY_HEX || n > KEY_HEX + 1 || (n == KEY_HEX + 1 && text[KEY_HEX] != '\n')) {
        seterr(err, errlen, "%s must hold exactly %d hex digits and a newline", path, KEY_HEX);
        goto out;
    }
    for (size_t i = 0; i < TOKEN_KEY_BYTES; i++) {
        int hi = format_hex_digit(text[2 * i]), lo = format_hex_digit(text[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            seterr(err, errlen, "%s must hold exactly %d hex digits and a newline", path, KEY_HEX);
            goto out;
        }
        k->secret[i] = (unsigned char)(hi << 4 | lo);
    }
    set_kid(k);
    rc = 0;
out:
    OPENSSL_cleanse(text, sizeof text);
    close(fd);
    return rc;
}

int keys_signing_key(const char *dir, struct token_key *k, bool *created, char *err, size_t errlen)
{
    char path[4096];
    struct stat st;
    int w = snprintf(path, sizeof path, "%s/%s", dir, SIGNING_KEY_FILE);

    *created = false;
    if (w < 0 || (size_t)w >= sizeof path) {
        seterr(err, errlen, "data directory path too long");
        return -1;
    }
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT) {
            seterr(err, errlen, "cannot stat %s: %s", path, strerror(errno));
            return -1;
        }
        int rc = create_signing_key(dir, path, err, errlen);
        if (rc < 0)
            return -1;
        *created = rc == 0;
    }
    if (load_signing_key(path, k, err, errlen) != 0) {
        OPENSSL_cleanse(k->secret, sizeof k->secret);
        return -1;
    }
    return 0;
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static X509 *make_cert(EVP_PKEY *pkey)
{
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    X509 *x = X509_new();
    X509_NAME *name = NULL;
    int ok = 0;

    if (!x || !X509_set_version(x, X509_VERSION_3))
        goto out;
    /* RFC 5280 §4.1.2.2: positive, at most 20 octets; random so re-created certs never clash. */
    if (RAND_bytes(serial, sizeof serial) != 1)
        goto out;
    serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40);
    bn = BN_bin2bn(serial, sizeof serial, NULL);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
        goto out;
    if (!X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_time_adj_ex(X509_getm_notAfter(x), CERT_DAYS, 0, NULL))
        goto out;
    name = X509_NAME_new();
    if (!name ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost",
                                    -1, -1, 0) ||
        !X509_set_subject_name(x, name) || !X509_set_issuer_name(x, name))
        goto out;
    if (!X509_set_pubkey(x, pkey))
        goto out;
    if (add_ext(x, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1") != 0 ||
        add_ext(x, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature") != 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth") != 0 ||
        add_ext(x, NID_subject_key_identifier, "hash") != 0)
        goto out;
    if (X509_sign(x, pkey, EVP_sha256()) <= 0)
        goto out;
    ok = 1;
out:
    BN_free(bn);
    X509_NAME_free(name);
    if (!ok) {
        X509_free(x);
        x = NULL;
    }
    return x;
}

/* PEM text of the key (PKCS#8) or certificate, malloc'd. */
static char *bio_text(BIO *b, size_t *len)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    if (n <= 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    *len = (size_t)n;
    return s;
}

static bool exists(const char *path, int *e)
{
    struct stat st;
    if (lstat(path, &st) == 0) {
        *e = 0;
        return true;
    }
    *e = errno == ENOENT ? 0 : errno;
    return false;
}

int keys_ensure_tls(const char *dir, bool *created, char *err, size_t errlen)
{
    char crt[4096], key[4096], tmp_crt[4096] = "", tmp_key[4096] = "";
    char *crt_pem = NULL, *key_pem = NULL;
    size_t crt_len = 0, key_len = 0;
    EVP_PKEY *pkey = NULL;
    X509 *x = NULL;
    BIO *bc = NULL, *bk = NULL;
    int ec = 0, ek = 0, rc = -1;

    *created = false;
    if (snprintf(crt, sizeof crt, "%s/tls.crt", dir) >= (int)sizeof crt ||
        snprintf(key, sizeof key, "%s/tls.key", dir) >= (int)sizeof key) {
        seterr(err, errlen, "data directory path too long");
        goto out;
    }
    bool have_crt = exists(crt, &ec), have_key = exists(key, &ek);
    if (ec || ek) {
        seterr(err, errlen, "cannot stat %s: %s", ec ? crt : key, strerror(ec ? ec : ek));
        goto out;
    }
    if (have_crt && have_key) {
        rc = 0;
        goto out;
    }
    if (have_crt || have_key) {
        seterr(err, errlen,
               "%s exists but %s does not; restore the missing file or remove both to have a new "
               "self-signed pair created",
               have_crt ? crt : key, have_crt ? key : crt);
        goto out;
    }

    ERR_clear_error();
    pkey = EVP_EC_gen("P-256");
    if (!pkey) {
        seterr(err, errlen, "cannot generate TLS key: %s", ossl_reason());
        goto out;
    }
    x = make_cert(pkey);
    if (!x) {
        seterr(err, errlen, "cannot create TLS certificate: %s", ossl_reason());
        goto out;
    }
    bc = BIO_new(BIO_s_mem());
    bk = BIO_new(BIO_s_secmem()); /* cleansed when freed */
    if (!bc || !bk || !PEM_write_bio_X509(bc, x) ||
        !PEM_write_bio_PrivateKey(bk, pkey, NULL, NULL, 0, NULL, NULL) ||
        !(crt_pem = bio_text(bc, &crt_len)) || !(key_pem = bio_text(bk, &key_len))) {
        seterr(err, errlen, "cannot encode TLS key pair: %s", ossl_reason());
        goto out;
    }
    if (file_write_temp(dir, "tls.key", key_pem, key_len, 0600, tmp_key, sizeof tmp_key, err,
                        errlen))
        goto out;
    if (file_write_temp(dir, "tls.crt", crt_pem, crt_len, 0644, tmp_crt, sizeof tmp_crt, err,
                        errlen))
        goto out;
    /* Key first: a crash between the renames leaves a key without a certificate, which the next
     * start reports instead of silently serving a certificate without its key. */
    if (rename(tmp_key, key) != 0) {
        seterr(err, errlen, "cannot rename %s to %s: %s", tmp_key, key, strerror(errno));
        goto out;
    }
    tmp_key[0] = '\0';
    if (rename(tmp_crt, crt) != 0) {
        seterr(err, errlen, "cannot rename %s to %s: %s", tmp_crt, crt, strerror(errno));
        unlink(key);
        goto out;
    }
    tmp_crt[0] = '\0';
    if (file_sync_dir(dir) != 0) {
        seterr(err, errlen, "cannot sync directory %s: %s", dir, strerror(errno));
        goto out;
    }
    *created = true;
    rc = 0;
out:
    if (tmp_key[0])
        unlink(tmp_key);
    if (tmp_crt[0])
        unlink(tmp_crt);
    if (key_pem) {
        OPENSSL_cleanse(key_pem, key_len);
        free(key_pem);
    }
    free(crt_pem);
    BIO_free(bc);
    BIO_free(bk);
    X509_free(x);
    EVP_PKEY_free(pkey);
    return rc;
}

int keys_cert_fingerprint(const char *cert_path, char *out, size_t outlen, char *err, size_t errlen)
{
    static const char hex[] = "0123456789ABCDEF";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    X509 *x = NULL;
    BIO *b = NULL;
    int rc = -1;

    ERR_clear_error();
    b = BIO_new_file(cert_path, "r");
    if (!b) {
        seterr(err, errlen, "cannot open %s: %s", cert_path, strerror(errno));
        goto out;
    }
    x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    if (!x) {
        seterr(err, errlen, "%s is not a PEM certificate: %s", cert_path, ossl_reason());
        goto out;
    }
    if (!X509_digest(x, EVP_sha256(), md, &n)) {
        seterr(err, errlen, "cannot hash %s: %s", cert_path, ossl_reason());
        goto out;
    }
    if (outlen < (size_t)n * 3) {
        seterr(err, errlen, "fingerprint buffer too small");
        goto out;
    }
    for (unsigned int i = 0; i < n; i++) {
        out[3 * i] = hex[md[i] >> 4];
        out[3 * i + 1] = hex[md[i] & 15];
        out[3 * i + 2] = i + 1 < n ? ':' : '\0';
    }
    rc = 0;
out:
    X509_free(x);
    BIO_free(b);
    return rc;
}

char *keys_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    bool ok = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        seterr(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    for (;;) {
        if (n + 1 >= cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            if (ncap > READ_MAX + 1) {
                seterr(err, errlen, "%s is larger than %u bytes", path, READ_MAX);
                goto out;
            }
            char *nb = realloc(buf, ncap);
            if (!nb) {
                seterr(err, errlen, "out of memory reading %s", path);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            seterr(err, errlen, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    ok = true;
out:
    if (fd >= 0)
        close(fd);
    if (!ok) {
        free(buf);
        buf = NULL;
    }
    return buf;
}
