/* The client behind trusted reverse proxies. A proxy named by --trusted-proxy appends the
 * address it accepted the connection from to X-Forwarded-For; everything left of that may be
 * forged by the client. So the client is the rightmost entry that is not itself a trusted
 * proxy (a chain of them each appends one). Used for the per-address quotas (login) and the
 * access log; a peer that is not a trusted proxy is the client, whatever it sends. */
#ifndef RUNTIME_FORWARDED_H
#define RUNTIME_FORWARDED_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/ipaddr.h"

#define FORWARDED_MAX_PROXIES 8

struct forwarded_proxies {
    int n;
    struct ipaddr addr[FORWARDED_MAX_PROXIES];
    char text[FORWARDED_MAX_PROXIES][INET6_ADDRSTRLEN];
};

/* Parses a comma-separated list of IPv4/IPv6 addresses ("" is the empty list). 0, or -1
 * with the reason in err. */
int forwarded_parse_list(const char *list, struct forwarded_proxies *out, char *err,
                         size_t errlen);
/* Whether addr (text, as inet_ntop writes it) is one of the proxies. */
bool forwarded_is_trusted(const struct forwarded_proxies *p, const char *addr);
/* The client address, canonical text in out: peer itself unless it is a trusted proxy; then
 * the rightmost entry of the X-Forwarded-For values (every field line, in the order received)
 * that is not a trusted proxy, or the leftmost when all are. An entry is an IPv4 or IPv6
 * address, the latter optionally in brackets, and may carry a port, which is dropped
 * ("198.51.100.9:51234", "[2001:db8::1]:443"). An entry that is not an address ends the
 * walk: the last address trusted so far (at worst the peer) is taken. */
void forwarded_client(const struct forwarded_proxies *p, const char *peer,
                      const char *const *values, const size_t *lens, size_t n, char *out,
                      size_t outlen);

#endif
