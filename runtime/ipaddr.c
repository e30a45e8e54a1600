/* Client addresses (ipaddr.h). */
#include "runtime/ipaddr.h"

#include <netinet/in.h>
#include <string.h>

static const unsigned char v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static void from_v4(const void *in_addr, struct ipaddr *out)
{
    memcpy(out->b, v4_mapped, 12);
    memcpy(out->b + 12, in_addr, 4);
}

bool ipaddr_parse(const char *s, size_t n, struct ipaddr *out)
{
    char buf[INET6_ADDRSTRLEN + 2];
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    struct in_addr a4;
    if (inet_pton(AF_INET, buf, &a4) == 1) {
        from_v4(&a4, out);
        return true;
    }
    return inet_pton(AF_INET6, buf, out->b) == 1;
}

bool ipaddr_of_sockaddr(const struct sockaddr *sa, socklen_t len, struct ipaddr *out)
{
    if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        from_v4(&((const struct sockaddr_in *)(const void *)sa)->sin_addr, out);
        return true;
    }
    if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(out->b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        return true;
    }
    return false;
}

bool ipaddr_is_v4(const struct ipaddr *a)
{
    return memcmp(a->b, v4_mapped, 12) == 0;
}

void ipaddr_text(const struct ipaddr *a, char *out, size_t n)
{
    if (ipaddr_is_v4(a))
        inet_ntop(AF_INET, a->b + 12, out, (socklen_t)n);
    else
        inet_ntop(AF_INET6, a->b, out, (socklen_t)n);
}

struct ipaddr ipaddr_block(const struct ipaddr *a)
{
    struct ipaddr block = *a;
    if (!ipaddr_is_v4(a))
        memset(block.b + 8, 0, 8);
    return block;
}

bool ipaddr_equal(const struct ipaddr *a, const struct ipaddr *b)
{
    return memcmp(a->b, b->b, 16) == 0;
}
