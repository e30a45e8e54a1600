/* PROXY protocol headers, v2 and v1: what is accepted, how much is consumed, what is refused
 * and how early. */
#include "runtime/proxy_protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "tests/unit/unit.h"

static const unsigned char SIG[12] = { 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                       0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A };

/* A v2 header: command, family byte, body; returns its length. */
static size_t v2(unsigned char *out, unsigned cmd, unsigned char fam, const unsigned char *body,
                 size_t n)
{
    memcpy(out, SIG, 12);
    out[12] = (unsigned char)(0x20 | cmd);
    out[13] = fam;
    out[14] = (unsigned char)(n >> 8);
    out[15] = (unsigned char)n;
    if (n)
        memcpy(out + 16, body, n);
    return 16 + n;
}

static const unsigned char V4_BODY[12] = { 198, 51, 100, 7, 10, 0, 0, 5, 0xC3, 0x50, 0x20, 0xFB };

static const char *src_text(const struct proxy_protocol_header *h, unsigned *port)
{
    static char buf[INET6_ADDRSTRLEN];
    if (h->src.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const void *)&h->src;
        inet_ntop(AF_INET, &s->sin_addr, buf, sizeof buf);
        *port = ntohs(s->sin_port);
    } else {
        const struct sockaddr_in6 *s = (const void *)&h->src;
        inet_ntop(AF_INET6, &s->sin6_addr, buf, sizeof buf);
        *port = ntohs(s->sin6_port);
    }
    return buf;
}

static enum proxy_protocol_result parse(const void *buf, size_t len,
                                        struct proxy_protocol_header *h, size_t *need)
{
    return proxy_protocol_parse(buf, len, h, need);
}

static void test_a_v2_proxy_header_over_ipv4_names_the_client_and_its_length(void)
{
    unsigned char b[64];
    size_t n = v2(b, 1, 0x11, V4_BODY, sizeof V4_BODY);
    memcpy(b + n, "\x16\x03\x01", 3); /* the ClientHello that follows is not looked at */
    struct proxy_protocol_header h;
    size_t need;
    CHECK(parse(b, n + 3, &h, &need) == PROXY_PROTOCOL_DONE);
    CHECK(need == 28);
    CHECK(h.version == 2 && !h.local);
    unsigned port;
    CHECK_STR(src_text(&h, &port), "198.51.100.7");
    CHECK(port == 50000);
    CHECK(h.src_len == sizeof(struct sockaddr_in));
    const struct sockaddr_in *d = (const void *)&h.dst;
    CHECK(ntohs(d->sin_port) == 8443);
}

static void test_a_v2_proxy_header_over_ipv6_with_tlvs_is_read_whole(void)
{
    unsigned char body[36 + 7] = { 0x20, 0x01, 0x0d, 0xb8 };
    body[15] = 9;
    body[32] = 0x01; /* source port 256 */
    body[36] = 0x04; /* PP2_TYPE_NOOP, 4 bytes */
    body[38] = 4;
    unsigned char b[128];
    size_t n = v2(b, 1, 0x21, body, sizeof body);
    struct proxy_protocol_header h;
    size_t need;
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_DONE);
    CHECK(need == 16 + 43);
    unsigned port;
    CHECK_STR(src_text(&h, &port), "2001:db8::9");
    CHECK(port == 256);
    CHECK(h.src_len == sizeof(struct sockaddr_in6));
}

static void test_a_v2_local_header_leaves_the_peer_as_the_client(void)
{
    unsigned char b[32];
    size_t n = v2(b, 0, 0x00, NULL, 0);
    struct proxy_protocol_header h;
    size_t need;
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_DONE);
    CHECK(need == 16 && h.local);
}

static void test_a_v2_header_asks_for_exactly_what_it_lacks(void)
{
    unsigned char b[64];
    size_t n = v2(b, 1, 0x11, V4_BODY, sizeof V4_BODY);
    struct proxy_protocol_header h;
    size_t need = 99;
    CHECK(parse(b, 0, &h, &need) == PROXY_PROTOCOL_MORE && need == 0);
    for (size_t k = 1; k < 16; k++) {
        CHECK(parse(b, k, &h, &need) == PROXY_PROTOCOL_MORE);
        CHECK(need == 16);
    }
    for (size_t k = 16; k < n; k++) {
        CHECK(parse(b, k, &h, &need) == PROXY_PROTOCOL_MORE);
        CHECK(need == n);
    }
}

static void test_a_bad_v2_header_is_refused_as_soon_as_it_shows(void)
{
    unsigned char b[600];
    struct proxy_protocol_header h;
    size_t need;
    size_t n = v2(b, 1, 0x11, V4_BODY, sizeof V4_BODY);
    b[5] = 'X'; /* signature */
    CHECK(parse(b, 6, &h, &need) == PROXY_PROTOCOL_BAD && h.why);
    n = v2(b, 1, 0x11, V4_BODY, sizeof V4_BODY);
    b[12] = 0x11; /* version 1 in the binary form */
    CHECK(parse(b, 13, &h, &need) == PROXY_PROTOCOL_BAD);
    b[12] = 0x22; /* command 2 */
    CHECK(parse(b, 13, &h, &need) == PROXY_PROTOCOL_BAD);
    v2(b, 1, 0x12, V4_BODY, sizeof V4_BODY); /* UDP */
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_BAD);
    v2(b, 1, 0x31, V4_BODY, sizeof V4_BODY); /* AF_UNIX */
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_BAD);
    v2(b, 1, 0x00, V4_BODY, sizeof V4_BODY); /* PROXY with no address */
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_BAD);
    n = v2(b, 1, 0x11, V4_BODY, 11); /* address block short */
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_BAD);
    n = v2(b, 1, 0x21, V4_BODY, 12); /* IPv6 with an IPv4 block */
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_BAD);
    unsigned char tlv[12 + 4];
    memcpy(tlv, V4_BODY, 12);
    memcpy(tlv + 12, "\x04\x00\x05\x00", 4); /* a TLV longer than what is left */
    n = v2(b, 1, 0x11, tlv, sizeof tlv);
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_BAD);
    n = v2(b, 1, 0x11, tlv, 14); /* half a TLV head */
    CHECK(parse(b, n, &h, &need) == PROXY_PROTOCOL_BAD);
    /* longer than PROXY_PROTOCOL_MAX: refused from its first 16 bytes */
    memcpy(b, SIG, 12);
    b[12] = 0x21, b[13] = 0x11, b[14] = 0x02, b[15] = 0x01; /* 513 */
    CHECK(parse(b, 16, &h, &need) == PROXY_PROTOCOL_BAD);
    b[14] = 0x02, b[15] = 0x00; /* 512: the most there may be */
    CHECK(parse(b, 16, &h, &need) == PROXY_PROTOCOL_MORE && need == PROXY_PROTOCOL_MAX);
}

static void test_a_tls_client_hello_or_http_is_refused_from_its_first_byte(void)
{
    struct proxy_protocol_header h;
    size_t need;
    CHECK(parse("\x16\x03\x01\x02\x00", 1, &h, &need) == PROXY_PROTOCOL_BAD);
    CHECK(parse("GET / HTTP/1.1\r\n", 1, &h, &need) == PROXY_PROTOCOL_BAD);
    CHECK(parse("POST / HTTP/1.1\r\n", 2, &h, &need) == PROXY_PROTOCOL_BAD);
    CHECK(parse("\r\n\r\n\r\n", 5, &h, &need) == PROXY_PROTOCOL_BAD);
}

static void test_a_v1_header_names_the_client(void)
{
    const char *line = "PROXY TCP4 198.51.100.22 10.0.0.5 40000 8443\r\n";
    char b[128];
    snprintf(b, sizeof b, "%s\x16\x03", line);
    struct proxy_protocol_header h;
    size_t need;
    CHECK(parse(b, strlen(b), &h, &need) == PROXY_PROTOCOL_DONE);
    CHECK(need == strlen(line));
    CHECK(h.version == 1 && !h.local);
    unsigned port;
    CHECK_STR(src_text(&h, &port), "198.51.100.22");
    CHECK(port == 40000);
    line = "PROXY TCP6 2001:db8::1 ::1 65535 0\r\n";
    CHECK(parse(line, strlen(line), &h, &need) == PROXY_PROTOCOL_DONE);
    CHECK_STR(src_text(&h, &port), "2001:db8::1");
    CHECK(port == 65535);
    line = "PROXY UNKNOWN\r\n";
    CHECK(parse(line, strlen(line), &h, &need) == PROXY_PROTOCOL_DONE && h.local);
    line = "PROXY UNKNOWN ffff::1 ::1 1 2\r\n";
    CHECK(parse(line, strlen(line), &h, &need) == PROXY_PROTOCOL_DONE && h.local);
    line = "PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n";
    CHECK(parse(line, strlen(line), &h, &need) == PROXY_PROTOCOL_DONE);
}

static void test_a_v1_header_waits_for_its_line_end(void)
{
    const char *line = "PROXY TCP4 198.51.100.22 10.0.0.5 40000 8443\r\n";
    struct proxy_protocol_header h;
    size_t need = 9;
    for (size_t k = 1; k < strlen(line); k++) {
        CHECK(parse(line, k, &h, &need) == PROXY_PROTOCOL_MORE);
        CHECK(need == 0);
    }
}

static void test_a_bad_v1_header_is_refused(void)
{
    static const char *const bad[] = {
        "PROXY TCP4 198.51.100.22 10.0.0.5 40000 8443\n",      /* bare LF */
        "PROXY TCP4 198.51.100.22  10.0.0.5 40000 8443\r\n",   /* two spaces */
        "PROXY TCP4 198.51.100.22 10.0.0.5 40000\r\n",         /* a field short */
        "PROXY TCP4 198.51.100.22 10.0.0.5 40000 8443 1\r\n",  /* a field more */
        "PROXY TCP4 198.51.100.022 10.0.0.5 40000 8443\r\n",   /* leading zero */
        "PROXY TCP4 2001:db8::1 10.0.0.5 40000 8443\r\n",      /* family mismatch */
        "PROXY TCP6 198.51.100.22 ::1 40000 8443\r\n",
        "PROXY TCP4 198.51.100.22 10.0.0.5 040000 8443\r\n",   /* port: leading zero */
        "PROXY TCP4 198.51.100.22 10.0.0.5 65536 8443\r\n",    /* port: too large */
        "PROXY TCP4 198.51.100.22 10.0.0.5 -1 8443\r\n",
        "PROXY TCP4 198.51.100.22 10.0.0.5 40000 8443 \r\n",   /* trailing space */
        "PROXY UDP4 198.51.100.22 10.0.0.5 40000 8443\r\n",
        "PROXY tcp4 198.51.100.22 10.0.0.5 40000 8443\r\n",
        "PROXY UNKNOWNX\r\n",
        "PROXY \r\n",
        "PROXY TCP4 198.51.100.22\r10.0.0.5 40000 8443\r\n",  /* CR inside */
        "PROXY\tTCP4 198.51.100.22 10.0.0.5 40000 8443\r\n",
        "proxy TCP4 198.51.100.22 10.0.0.5 40000 8443\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct proxy_protocol_header h;
        size_t need;
        enum proxy_protocol_result r = parse(bad[i], strlen(bad[i]), &h, &need);
        if (r != PROXY_PROTOCOL_BAD)
            fprintf(stderr, "  accepted: %s", bad[i]);
        CHECK(r == PROXY_PROTOCOL_BAD && h.why);
    }
    /* a line of 107 bytes without its end is refused; so is a NUL before it */
    char longline[PROXY_PROTOCOL_V1_MAX + 1];
    memset(longline, '1', sizeof longline);
    memcpy(longline, "PROXY TCP4 ", 11);
    struct proxy_protocol_header h;
    size_t need;
    CHECK(parse(longline, PROXY_PROTOCOL_V1_MAX - 1, &h, &need) == PROXY_PROTOCOL_MORE);
    CHECK(parse(longline, PROXY_PROTOCOL_V1_MAX, &h, &need) == PROXY_PROTOCOL_BAD);
    CHECK(parse("PROXY TCP4 1\0", 13, &h, &need) == PROXY_PROTOCOL_BAD);
    CHECK(parse("PROXY TCP4 1\r", 13, &h, &need) == PROXY_PROTOCOL_MORE);
    CHECK(parse("PROXY TCP4 1\r2", 14, &h, &need) == PROXY_PROTOCOL_BAD);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_v2_proxy_header_over_ipv4_names_the_client_and_its_length),
        UNIT_TEST(test_a_v2_proxy_header_over_ipv6_with_tlvs_is_read_whole),
        UNIT_TEST(test_a_v2_local_header_leaves_the_peer_as_the_client),
        UNIT_TEST(test_a_v2_header_asks_for_exactly_what_it_lacks),
        UNIT_TEST(test_a_bad_v2_header_is_refused_as_soon_as_it_shows),
        UNIT_TEST(test_a_tls_client_hello_or_http_is_refused_from_its_first_byte),
        UNIT_TEST(test_a_v1_header_names_the_client),
        UNIT_TEST(test_a_v1_header_waits_for_its_line_end),
        UNIT_TEST(test_a_bad_v1_header_is_refused),
    };
    return unit_run("proxy_protocol", tests, sizeof tests / sizeof tests[0]);
}
