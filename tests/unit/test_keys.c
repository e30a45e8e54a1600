/* Key material: signing key file creation, permissions and reload; self-signed TLS pair that
 * OpenSSL loads back with the names a local client checks; fingerprint format. */
#include "runtime/keys.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/unit.h"

static char dir[64];
static char path_buf[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_keys.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
}

static const char *in_dir(const char *name)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
    return path_buf;
}

static void teardown(void)
{
    const char *names[] = {"jwt-signing.key", "tls.crt", "tls.key"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(in_dir(names[i]));
    rmdir(dir);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    fchmod(fd, mode);
    close(fd);
}

static void test_signing_key_is_created_0600_and_reloads_identical(void)
{
    struct token_key a, b;
    bool created = false;
    char err[256] = "";
    struct stat st;

    setup();
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CHECK(keys_signing_key(dir, &a, &created, err, sizeof err) == 0);
    CHECK(created);
    CHECK(stat(in_dir("jwt-signing.key"), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_size == 65);

    size_t len = 0;
    char *text = keys_read_file(in_dir("jwt-signing.key"), &len, err, sizeof err);
    CHECK(text && len == 65 && text[64] == '\n');
    for (size_t i = 0; text && i < 64; i++)
        CHECK(strchr("0123456789abcdef", text[i]) != NULL);
    free(text);

    CHECK(strncmp(a.kid, "k-", 2) == 0 && strlen(a.kid) == 10);
    CHECK(keys_signing_key(dir, &b, &created, err, sizeof err) == 0);
    CHECK(!created);
    CHECK(memcmp(a.secret, b.secret, sizeof a.secret) == 0);
    CHECK_STR(a.kid, b.kid);
    teardown();
}

static void test_signing_key_kid_is_sha256_prefix(void)
{
    struct token_key k;
    bool created = false;
    char err[256] = "";
    const char *hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    unsigned char secret[32], d[32];
    unsigned int n = 0;
    char want[16];

    setup();
    write_file(in_dir("jwt-signing.key"), hex, 0600);
    CHECK(keys_signing_key(dir, &k, &created, err, sizeof err) == 0);
    CHECK(!created);
    for (int i = 0; i < 32; i++)
        secret[i] = (unsigned char)i;
    CHECK(memcmp(k.secret, secret, 32) == 0);
    EVP_Digest(secret, 32, d, &n, EVP_sha256(), NULL);
    snprintf(want, sizeof want, "k-%02x%02x%02x%02x", d[0], d[1], d[2], d[3]);
    CHECK_STR(k.kid, want);
    teardown();
}

static void test_group_readable_signing_key_is_refused(void)
{
    struct token_key k;
    bool created = true;
    char err[512] = "";

    setup();
    write_file(in_dir("jwt-signing.key"),
               "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", 0640);
    CHECK(keys_signing_key(dir, &k, &created, err, sizeof err) == -1);
    CHECK(!created);
    CHECK(strstr(err, "chmod 600") != NULL);
    CHECK(strstr(err, "0640") != NULL);
    chmod(in_dir("jwt-signing.key"), 0604);
    CHECK(keys_signing_key(dir, &k, &created, err, sizeof err) == -1);
    teardown();
}

static void test_malformed_signing_key_is_refused(void)
{
    const char *bad[] = {
        "",
        "00010203\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n\n",
    };
    struct token_key k;
    bool created;
    char err[256];

    setup();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(in_dir("jwt-signing.key"), bad[i], 0600);
        err[0] = '\0';
        CHECK(keys_signing_key(dir, &k, &created, err, sizeof err) == -1);
        CHECK(err[0] != '\0');
    }
    teardown();
}

static void test_signing_key_in_missing_dir_fails_with_message(void)
{
    struct token_key k;
    bool created;
    char err[256] = "";
    CHECK(keys_signing_key("/nonexistent/treasury-test", &k, &created, err, sizeof err) == -1);
    CHECK(strstr(err, "/nonexistent/treasury-test/jwt-signing.key") != NULL);
}

static bool san_has_ip(X509 *x, const unsigned char *ip, int iplen)
{
    bool found = false;
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        if (g->type == GEN_IPADD && g->d.iPAddress->length == iplen &&
            memcmp(g->d.iPAddress->data, ip, (size_t)iplen) == 0)
            found = true;
    }
    GENERAL_NAMES_free(names);
    return found;
}

static void test_tls_pair_is_created_and_loads_back(void)
{
    bool created = false;
    char err[256] = "";
    struct stat st;

    setup();
    CHECK(keys_ensure_tls(dir, &created, err, sizeof err) == 0);
    CHECK(created);
    CHECK(stat(in_dir("tls.key"), &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(stat(in_dir("tls.crt"), &st) == 0);

    char *key_pem = keys_read_file(in_dir("tls.key"), NULL, err, sizeof err);
    CHECK(key_pem && strstr(key_pem, "-----BEGIN PRIVATE KEY-----") == key_pem);
    free(key_pem);

    FILE *f = fopen(in_dir("tls.key"), "r");
    EVP_PKEY *pkey = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    CHECK(pkey != NULL);
    CHECK(pkey && EVP_PKEY_is_a(pkey, "EC"));

    f = fopen(in_dir("tls.crt"), "r");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    CHECK(x != NULL);
    if (x && pkey) {
        static const unsigned char v4[] = {127, 0, 0, 1};
        static const unsigned char v6[16] = {[15] = 1};
        CHECK(X509_get_version(x) == X509_VERSION_3);
        CHECK(X509_check_private_key(x, pkey) == 1);
        CHECK(X509_verify(x, pkey) == 1); /* self-signed */
        CHECK(X509_check_host(x, "localhost", 0, 0, NULL) == 1);
        CHECK(X509_check_ip_asc(x, "127.0.0.1", 0) == 1);
        CHECK(X509_check_ip_asc(x, "::1", 0) == 1);
        CHECK(san_has_ip(x, v4, 4));
        CHECK(san_has_ip(x, v6, 16));
        CHECK(X509_get_signature_nid(x) == NID_ecdsa_with_SHA256);
        CHECK((X509_get_extension_flags(x) & EXFLAG_CA) == 0);
        CHECK(X509_get_key_usage(x) == KU_DIGITAL_SIGNATURE);
        CHECK(X509_get_extended_key_usage(x) == XKU_SSL_SERVER);
        /* validity: already valid now, still valid in 824 days, expired after 826 */
        CHECK(X509_cmp_current_time(X509_get0_notBefore(x)) < 0);
        time_t t824 = time(NULL) + 824 * 86400L, t826 = time(NULL) + 826 * 86400L;
        CHECK(X509_cmp_time(X509_get0_notAfter(x), &t824) > 0);
        CHECK(X509_cmp_time(X509_get0_notAfter(x), &t826) < 0);
        const ASN1_INTEGER *serial = X509_get0_serialNumber(x);
        CHECK(serial->length == 16 && !(serial->type & V_ASN1_NEG));
    }
    X509_free(x);
    EVP_PKEY_free(pkey);

    /* second call keeps the pair */
    char *before = keys_read_file(in_dir("tls.crt"), NULL, err, sizeof err);
    CHECK(keys_ensure_tls(dir, &created, err, sizeof err) == 0);
    CHECK(!created);
    char *after = keys_read_file(in_dir("tls.crt"), NULL, err, sizeof err);
    CHECK(before && after && strcmp(before, after) == 0);
    free(before);
    free(after);
    teardown();
}

static void test_tls_with_one_of_two_files_is_refused(void)
{
    bool created = true;
    char err[512] = "";

    setup();
    CHECK(keys_ensure_tls(dir, &created, err, sizeof err) == 0);
    unlink(in_dir("tls.key"));
    CHECK(keys_ensure_tls(dir, &created, err, sizeof err) == -1);
    CHECK(!created);
    CHECK(strstr(err, "tls.key") != NULL);

    CHECK(keys_ensure_tls(dir, &created, err, sizeof err) == -1); /* nothing was regenerated */
    unlink(in_dir("tls.crt"));
    write_file(in_dir("tls.key"), "x", 0600);
    CHECK(keys_ensure_tls(dir, &created, err, sizeof err) == -1);
    CHECK(strstr(err, "tls.crt") != NULL);
    teardown();
}

static void test_fingerprint_is_uppercase_colon_hex_of_der(void)
{
    bool created;
    char err[256] = "", fp[128];
    unsigned char md[32], *der = NULL;
    unsigned int n = 0;
    char want[128];

    setup();
    CHECK(keys_ensure_tls(dir, &created, err, sizeof err) == 0);
    CHECK(keys_cert_fingerprint(in_dir("tls.crt"), fp, sizeof fp, err, sizeof err) == 0);
    CHECK(strlen(fp) == 95);
    for (size_t i = 0; i < 95; i++)
        CHECK(i % 3 == 2 ? fp[i] == ':' : strchr("0123456789ABCDEF", fp[i]) != NULL);

    FILE *f = fopen(in_dir("tls.crt"), "r");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    int len = x ? i2d_X509(x, &der) : -1;
    CHECK(len > 0);
    if (len > 0) {
        EVP_Digest(der, (size_t)len, md, &n, EVP_sha256(), NULL);
        for (unsigned int i = 0; i < n; i++)
            snprintf(want + 3 * i, sizeof want - 3 * i, i + 1 < n ? "%02X:" : "%02X", md[i]);
        CHECK_STR(fp, want);
    }
    OPENSSL_free(der);
    X509_free(x);

    CHECK(keys_cert_fingerprint(in_dir("tls.crt"), fp, 50, err, sizeof err) == -1);
    CHECK(keys_cert_fingerprint(in_dir("tls.key"), fp, sizeof fp, err, sizeof err) == -1);
    CHECK(keys_cert_fingerprint(in_dir("nope"), fp, sizeof fp, err, sizeof err) == -1);
    teardown();
}

static void test_read_file_returns_whole_file_nul_terminated(void)
{
    char err[256] = "";
    size_t len = 0;
    static char big[10000];

    setup();
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = (char)('a' + i % 26);
    write_file(in_dir("tls.crt"), big, 0600);
    char *s = keys_read_file(in_dir("tls.crt"), &len, err, sizeof err);
    CHECK(s && len == sizeof big - 1 && s[len] == '\0' && memcmp(s, big, len) == 0);
    free(s);
    write_file(in_dir("tls.crt"), "", 0600);
    s = keys_read_file(in_dir("tls.crt"), &len, err, sizeof err);
    CHECK(s && len == 0 && s[0] == '\0');
    free(s);
    CHECK(keys_read_file(in_dir("missing"), &len, err, sizeof err) == NULL);
    CHECK(strstr(err, "missing") != NULL);
    teardown();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_signing_key_is_created_0600_and_reloads_identical),
        UNIT_TEST(test_signing_key_kid_is_sha256_prefix),
        UNIT_TEST(test_group_readable_signing_key_is_refused),
        UNIT_TEST(test_malformed_signing_key_is_refused),
        UNIT_TEST(test_signing_key_in_missing_dir_fails_with_message),
        UNIT_TEST(test_tls_pair_is_created_and_loads_back),
        UNIT_TEST(test_tls_with_one_of_two_files_is_refused),
        UNIT_TEST(test_fingerprint_is_uppercase_colon_hex_of_der),
        UNIT_TEST(test_read_file_returns_whole_file_nul_terminated),
    };
    return unit_run("keys", tests, sizeof tests / sizeof tests[0]);
}
