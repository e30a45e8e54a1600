/* The PROXY protocol header (HAProxy's "PROXY protocol", versions 1 and 2) a TCP proxy sends
 * before the client's own bytes, naming the client it accepted the connection from. Pure and
 * strict: bytes in, the header's length and the client's address out, nothing read beyond the
 * header (the TLS handshake follows it).
 *
 * Version 2 (binary, HAProxy's send-proxy-v2): the 12-byte signature, version 2, the command
 * LOCAL (the proxy's own connection, a health check: the socket's peer is the client) or PROXY,
 * then for PROXY the family AF_INET or AF_INET6 over STREAM with its address block (12 or 36
 * bytes), and TLVs after it, each well-formed and skipped. Version 1 (text, send-proxy):
 * "PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n" with single spaces, addresses as
 * inet_pton reads them, ports of at most 5 digits without leading zeros, 107 bytes at most;
 * "PROXY UNKNOWN...\r\n" counts as LOCAL. Anything else is refused, also as soon as its first
 * bytes can start neither version (a TLS ClientHello's first byte, 0x16, does). */
#ifndef RUNTIME_PROXY_PROTOCOL_H
#define RUNTIME_PROXY_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* The longest header accepted: v2's 16 bytes and at most 512 of addresses and TLVs (HAProxy
 * sends 12 or 36 and, unless told to add some, no TLVs); v1's limit is 107. */
#define PROXY_PROTOCOL_MAX (16 + 512)
#define PROXY_PROTOCOL_V1_MAX 107

enum proxy_protocol_result {
    PROXY_PROTOCOL_MORE, /* a valid beginning: read more (need says how much) */
    PROXY_PROTOCOL_DONE, /* a complete header of need bytes; h is filled */
    PROXY_PROTOCOL_BAD,  /* not a header we accept; h->why says why */
};

struct proxy_protocol_header {
    int version;   /* 1 or 2 */
    bool local;    /* LOCAL (v2) or UNKNOWN (v1): the connection's own peer is the client */
    struct sockaddr_storage src, dst; /* PROXY: the client and the address it connected to */
    socklen_t src_len, dst_len;
    const char *why; /* BAD: a short reason for the log */
};

/* Reads the header at the start of buf[0..len). DONE: *need is the header's length (what
 * follows it is not looked at). MORE: *need is the total length needed when it is known (a v2
 * header once its first 16 bytes are in), 0 when the header ends at a line end still to come
 * (v1, or nothing read yet). */
enum proxy_protocol_result proxy_protocol_parse(const unsigned char *buf, size_t len,
                                                struct proxy_protocol_header *h, size_t *need);

#endif
