/* Client addresses as 16 bytes, an IPv4 address as ::ffff:a.b.c.d, so that one comparison and
 * one table serve both families: read from text (a flag, an X-Forwarded-For entry, the peer's
 * text) or from a socket address, written back as inet_ntop writes them, and grouped by the
 * block one client holds (the quotas and the connection caps count an IPv6 client by /64). */
#ifndef RUNTIME_IPADDR_H
#define RUNTIME_IPADDR_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct ipaddr {
    unsigned char b[16];
};

/* s[0..n): an IPv4 or IPv6 address, optionally in brackets, blanks around ignored. */
bool ipaddr_parse(const char *s, size_t n, struct ipaddr *out);
/* An AF_INET or AF_INET6 socket address; false for any other. */
bool ipaddr_of_sockaddr(const struct sockaddr *sa, socklen_t len, struct ipaddr *out);
bool ipaddr_is_v4(const struct ipaddr *a);
/* a as inet_ntop writes it (an IPv4 address in dotted form). n >= INET6_ADDRSTRLEN. */
void ipaddr_text(const struct ipaddr *a, char *out, size_t n);
/* The block one client holds: an IPv6 address's /64, an IPv4 address itself. */
struct ipaddr ipaddr_block(const struct ipaddr *a);
bool ipaddr_equal(const struct ipaddr *a, const struct ipaddr *b);

#endif
