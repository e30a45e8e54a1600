/* X-Forwarded-For behind trusted proxies (forwarded.h). */
#include "runtime/forwarded.h"

#include <stdio.h>
#include <string.h>

/* An address in text (IPv6 optionally in brackets) as 16 bytes. */
static bool parse_addr(const char *s, size_t n, unsigned char out[16])
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
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &a4, 4);
        return true;
    }
    return inet_pton(AF_INET6, buf, out) == 1;
}

static void addr_text(const unsigned char a[16], char *out, size_t n)
{
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    if (memcmp(a, mapped, 12) == 0)
        inet_ntop(AF_INET, a + 12, out, (socklen_t)n);
    else
        inet_ntop(AF_INET6, a, out, (socklen_t)n);
}

int forwarded_parse_list(const char *list, struct forwarded_proxies *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *s = list;
    while (s && *s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (out->n == FORWARDED_MAX_PROXIES) {
            snprintf(err, errlen, "at most %d trusted proxies", FORWARDED_MAX_PROXIES);
            return -1;
        }
        if (!parse_addr(s, n, out->addr[out->n])) {
            snprintf(err, errlen, "'%.*s' is not an IPv4 or IPv6 address", (int)(n > 64 ? 64 : n),
                     s);
            return -1;
        }
        addr_text(out->addr[out->n], out->text[out->n], sizeof out->text[0]);
        out->n++;
        s = comma ? comma + 1 : NULL;
    }
    return 0;
}

static bool trusted(const struct forwarded_proxies *p, const unsigned char a[16])
{
    for (int i = 0; i < p->n; i++)
        if (memcmp(p->addr[i], a, 16) == 0)
            return true;
    return false;
}

bool forwarded_is_trusted(const struct forwarded_proxies *p, const char *addr)
{
    unsigned char a[16];
    return addr && parse_addr(addr, strlen(addr), a) && trusted(p, a);
}

void forwarded_client(const struct forwarded_proxies *p, const char *peer,
                      const char *const *values, const size_t *lens, size_t n, char *out,
                      size_t outlen)
{
    unsigned char a[16], last[16];
    snprintf(out, outlen, "%s", peer);
    if (!parse_addr(peer, strlen(peer), last) || !trusted(p, last))
        return;
    /* Right to left over the entries of every line, the last line first. */
    for (size_t i = n; i-- > 0;) {
        const char *v = values[i];
        size_t end = lens[i];
        for (;;) {
            size_t start = end;
            while (start > 0 && v[start - 1] != ',')
                start--;
            if (!parse_addr(v + start, end - start, a))
                goto done; /* not an address: keep the last trusted hop */
            memcpy(last, a, 16);
            if (!trusted(p, a))
                goto done;
            if (start == 0)
                break;
            end = start - 1;
        }
    }
done:
    addr_text(last, out, outlen);
}
