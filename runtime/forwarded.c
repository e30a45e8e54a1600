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
            if (!ipaddr_parse(v + start, end - start, &a))
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
