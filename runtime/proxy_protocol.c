/* PROXY protocol headers, v1 and v2 (proxy_protocol.h). */
#include "runtime/proxy_protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static const unsigned char V2_SIGNATURE[12] = { 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A };
static const char V1_PREFIX[] = "PROXY ";

static enum proxy_protocol_result bad(struct proxy_protocol_header *h, const char *why)
{
    h->why = why;
    return PROXY_PROTOCOL_BAD;
}

static void set_v4(struct sockaddr_storage *ss, socklen_t *len, const unsigned char *addr,
                   unsigned port)
{
    struct sockaddr_in *s = (struct sockaddr_in *)(void *)ss;
    memset(ss, 0, sizeof *ss);
    s->sin_family = AF_INET;
    memcpy(&s->sin_addr, addr, 4);
    s->sin_port = htons((unsigned short)port);
    *len = sizeof *s;
}

static void set_v6(struct sockaddr_storage *ss, socklen_t *len, const unsigned char *addr,
                   unsigned port)
{
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)(void *)ss;
    memset(ss, 0, sizeof *ss);
    s->sin6_family = AF_INET6;
    memcpy(&s->sin6_addr, addr, 16);
    s->sin6_port = htons((unsigned short)port);
    *len = sizeof *s;
}

static unsigned be16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static enum proxy_protocol_result parse_v2(const unsigned char *buf, size_t len,
                                           struct proxy_protocol_header *h, size_t *need)
{
    size_t known = len < sizeof V2_SIGNATURE ? len : sizeof V2_SIGNATURE;
    if (memcmp(buf, V2_SIGNATURE, known) != 0)
        return bad(h, "not a PROXY protocol header");
    if (len >= 13 && buf[12] >> 4 != 2)
        return bad(h, "PROXY protocol v2: version is not 2");
    if (len >= 13 && (buf[12] & 0x0F) > 1)
        return bad(h, "PROXY protocol v2: command is neither LOCAL nor PROXY");
    if (len < 16) {
        *need = 16;
        return PROXY_PROTOCOL_MORE;
    }
    size_t body = be16(buf + 14), total = 16 + body;
    if (total > PROXY_PROTOCOL_MAX)
        return bad(h, "PROXY protocol v2: header too long");
    *need = total;
    if (len < total)
        return PROXY_PROTOCOL_MORE;
    h->version = 2;
    if ((buf[12] & 0x0F) == 0) { /* LOCAL: the protocol block is ignored, whatever it holds */
        h->local = true;
        return PROXY_PROTOCOL_DONE;
    }
    const unsigned char *b = buf + 16;
    size_t addr_len;
    if (buf[13] == 0x11) { /* AF_INET, STREAM */
        addr_len = 12;
        if (body < addr_len)
            return bad(h, "PROXY protocol v2: IPv4 address block too short");
        set_v4(&h->src, &h->src_len, b, be16(b + 8));
        set_v4(&h->dst, &h->dst_len, b + 4, be16(b + 10));
    } else if (buf[13] == 0x21) { /* AF_INET6, STREAM */
        addr_len = 36;
        if (body < addr_len)
            return bad(h, "PROXY protocol v2: IPv6 address block too short");
        set_v6(&h->src, &h->src_len, b, be16(b + 32));
        set_v6(&h->dst, &h->dst_len, b + 16, be16(b + 34));
    } else {
        return bad(h, "PROXY protocol v2: not TCP over IPv4 or IPv6");
    }
    /* TLVs: type, 2-byte length, value; they must fill the rest exactly. */
    for (size_t i = addr_len; i < body;) {
        if (body - i < 3 || body - i - 3 < be16(b + i + 1))
            return bad(h, "PROXY protocol v2: malformed TLV");
        i += 3 + be16(b + i + 1);
    }
    return PROXY_PROTOCOL_DONE;
}

/* A v1 port: 1 to 5 digits, no leading zero but "0" itself, at most 65535. */
static bool v1_port(const char *s, size_t n, unsigned *out)
{
    if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return v <= 65535;
}

/* The fields of a v1 line after "PROXY " (without its CRLF), split on single spaces. */
static enum proxy_protocol_result parse_v1_line(const char *line, size_t n,
                                                struct proxy_protocol_header *h)
{
    h->version = 1;
    if (n >= 7 && memcmp(line, "UNKNOWN", 7) == 0 && (n == 7 || line[7] == ' ')) {
        h->local = true; /* the rest of the line is ignored (the spec) */
        return PROXY_PROTOCOL_DONE;
    }
    const char *f[5];
    size_t fl[5], k = 0;
    const char *p = line, *end = line + n;
    while (k < 5) {
        const char *e = memchr(p, ' ', (size_t)(end - p));
        if (!e)
            e = end;
        f[k] = p;
        fl[k++] = (size_t)(e - p);
        if (e == end)
            break;
        p = e + 1;
    }
    if (k != 5 || f[4] + fl[4] != end)
        return bad(h, "PROXY protocol v1: expected 5 fields");
    int family;
    if (fl[0] == 4 && memcmp(f[0], "TCP4", 4) == 0)
        family = AF_INET;
    else if (fl[0] == 4 && memcmp(f[0], "TCP6", 4) == 0)
        family = AF_INET6;
    else
        return bad(h, "PROXY protocol v1: protocol is not TCP4, TCP6 or UNKNOWN");
    unsigned char a[2][16];
    for (int i = 0; i < 2; i++) {
        char text[INET6_ADDRSTRLEN];
        if (fl[1 + i] == 0 || fl[1 + i] >= sizeof text)
            return bad(h, "PROXY protocol v1: bad address");
        memcpy(text, f[1 + i], fl[1 + i]);
        text[fl[1 + i]] = '\0';
        if (inet_pton(family, text, a[i]) != 1)
            return bad(h, "PROXY protocol v1: bad address");
    }
    unsigned sport, dport;
    if (!v1_port(f[3], fl[3], &sport) || !v1_port(f[4], fl[4], &dport))
        return bad(h, "PROXY protocol v1: bad port");
    if (family == AF_INET) {
        set_v4(&h->src, &h->src_len, a[0], sport);
        set_v4(&h->dst, &h->dst_len, a[1], dport);
    } else {
        set_v6(&h->src, &h->src_len, a[0], sport);
        set_v6(&h->dst, &h->dst_len, a[1], dport);
    }
    return PROXY_PROTOCOL_DONE;
}

static enum proxy_protocol_result parse_v1(const unsigned char *buf, size_t len,
                                           struct proxy_protocol_header *h, size_t *need)
{
    size_t prefix = sizeof V1_PREFIX - 1;
    size_t known = len < prefix ? len : prefix;
    if (memcmp(buf, V1_PREFIX, known) != 0)
        return bad(h, "not a PROXY protocol header");
    size_t limit = len < PROXY_PROTOCOL_V1_MAX ? len : PROXY_PROTOCOL_V1_MAX;
    const unsigned char *lf = memchr(buf, '\n', limit);
    if (!lf) {
        if (len >= PROXY_PROTOCOL_V1_MAX)
            return bad(h, "PROXY protocol v1: line too long");
        for (size_t i = prefix; i < len; i++) /* printable ASCII, a CR only last */
            if ((buf[i] < 0x20 || buf[i] > 0x7E) && (buf[i] != '\r' || i + 1 < len))
                return bad(h, "PROXY protocol v1: bad character");
        *need = 0;
        return PROXY_PROTOCOL_MORE;
    }
    size_t end = (size_t)(lf - buf); /* the LF's index */
    if (end < prefix + 1 || buf[end - 1] != '\r')
        return bad(h, "PROXY protocol v1: line does not end in CRLF");
    for (size_t i = prefix; i < end - 1; i++)
        if (buf[i] < 0x20 || buf[i] > 0x7E)
            return bad(h, "PROXY protocol v1: bad character");
    *need = end + 1;
    return parse_v1_line((const char *)buf + prefix, end - 1 - prefix, h);
}

enum proxy_protocol_result proxy_protocol_parse(const unsigned char *buf, size_t len,
                                                struct proxy_protocol_header *h, size_t *need)
{
    memset(h, 0, sizeof *h);
    *need = 0;
    if (len == 0)
        return PROXY_PROTOCOL_MORE;
    if (buf[0] == V2_SIGNATURE[0])
        return parse_v2(buf, len, h, need);
    if (buf[0] == (unsigned char)V1_PREFIX[0])
        return parse_v1(buf, len, h, need);
    return bad(h, "not a PROXY protocol header");
}
