/* X-Forwarded-For behind trusted proxies (forwarded.h). */
#include "runtime/forwarded.h"

#include <stdio.h>
#include <string.h>

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
        if (!ipaddr_parse(s, n, &out->addr[out->n])) {
            snprintf(err, errlen, "'%.*s' is not an IPv4 or IPv6 address", (int)(n > 64 ? 64 : n),
                     s);
            return -1;
        }
        ipaddr_text(&out->addr[out->n], out->text[out->n], sizeof out->text[0]);
        out->n++;
        s = comma ? comma + 1 : NULL;
    }
    return 0;
}

static bool trusted(const struct forwarded_proxies *p, const struct ipaddr *a)
{
    for (int i = 0; i < p->n; i++)
        if (ipaddr_equal(&p->addr[i], a))
            return true;
    return false;
}

bool forwarded_is_trusted(const struct forwarded_proxies *p, const char *addr)
{
    struct ipaddr a;
    return addr && ipaddr_parse(addr, strlen(addr), &a) && trusted(p, &a);
}

/* Whether [s, s+n) is a port: 1 to 5 digits, at most 65535. */
static bool is_port(const char *s, size_t n)
{
    if (n == 0 || n > 5)
        return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    return v <= 65535;
}

/* One X-Forwarded-For entry: an address, or an address with the client's port
 * ("198.51.100.9:51234", "[2001:db8::1]:443"), which some load balancers append. A bare IPv6
 * address holds two colons at least, so a single colon is an IPv4 address's port, and an IPv6
 * address's port follows its brackets ("2001:db8::1:443" is an address). */
static bool entry_address(const char *s, size_t n, struct ipaddr *out)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t at = n;
    while (at > 0 && s[at - 1] != ':')
        at--;
    if (at > 0) {
        at--; /* the last colon */
        bool bracketed = s[0] == '[' && at > 0 && s[at - 1] == ']';
        if ((bracketed || !memchr(s, ':', at)) && is_port(s + at + 1, n - at - 1))
            n = at;
    }
    return ipaddr_parse(s, n, out);
}

void forwarded_client(const struct forwarded_proxies *p, const char *peer,
                      const char *const *values, const size_t *lens, size_t n, char *out,
                      size_t outlen)
{
    struct ipaddr a, last;
    snprintf(out, outlen, "%s", peer);
    if (!ipaddr_parse(peer, strlen(peer), &last) || !trusted(p, &last))
        return;
    /* Right to left over the entries of every line, the last line first. */
    for (size_t i = n; i-- > 0;) {
        const char *v = values[i];
        size_t end = lens[i];
        for (;;) {
            size_t start = end;
            while (start > 0 && v[start - 1] != ',')
                start--;
            if (!entry_address(v + start, end - start, &a))
                goto done; /* not an address: keep the last trusted hop */
            last = a;
            if (!trusted(p, &a))
                goto done;
            if (start == 0)
                break;
            end = start - 1;
        }
    }
done:
    ipaddr_text(&last, out, outlen);
}
