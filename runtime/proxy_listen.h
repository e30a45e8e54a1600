/* The HTTPS port's own accept with --proxy-protocol on: libmicrohttpd reads its sockets itself
 * (TLS), so the PROXY protocol header a trusted proxy sends before the TLS handshake must be
 * read, and only it, before a socket is handed over. One thread polls the listening sockets
 * and the sockets still owing their header:
 *   - a connection whose peer is not a trusted proxy is handed over at once, nothing read
 *     (a PROXY header from it is then the start of a failed TLS handshake);
 *   - a trusted proxy's connection must begin with a header (proxy_protocol.h, v1 or v2); it
 *     is handed over with the header's client address as soon as the header is read, so
 *     that the connection caps and the head deadline then count it as that client's (the
 *     deadline starts again at the hand-over: a proxy sends its header at once); a LOCAL
 *     header (v1 UNKNOWN: the proxy's own connection, a health check) keeps its own peer's
 *     and is handed over only once a first byte follows it. It is closed on another first
 *     byte, a malformed header, the end of the stream, or no complete header (LOCAL: and
 *     first byte) within head_timeout_ms of its accept (a connection that sends nothing). One
 *     closed right after a LOCAL header (HAProxy's health checks: a LOCAL header, then a
 *     reset) is closed quietly. At most PROXY_LISTEN_PENDING_MAX wait at once; past that one
 *     is closed.
 * Closures are counted and logged once a second. The hand-over (runtime/server.c: libmicrohttpd's
 * MHD_add_connection) then applies the connection caps to the client's address. */
#ifndef RUNTIME_PROXY_LISTEN_H
#define RUNTIME_PROXY_LISTEN_H

#include <sys/socket.h>

#include "runtime/ipaddr.h"

#define PROXY_LISTEN_MAX_SOCKETS 4
#define PROXY_LISTEN_MAX_TRUSTED 8
#define PROXY_LISTEN_PENDING_MAX 1024

/* Takes fd (an accepted, non-blocking socket) and closes it when it cannot keep it. client is
 * the address the connection counts as. */
typedef void proxy_listen_hand_fn(void *ctx, int fd, const struct sockaddr *client,
                                  socklen_t len);

struct proxy_listen_config {
    int fds[PROXY_LISTEN_MAX_SOCKETS]; /* listening sockets, non-blocking */
    void *ctx[PROXY_LISTEN_MAX_SOCKETS]; /* hand's first argument for each */
    int n;
    struct ipaddr trusted[PROXY_LISTEN_MAX_TRUSTED];
    int n_trusted;
    int head_timeout_ms;
    proxy_listen_hand_fn *hand;
};

/* Starts the thread; the listening sockets are its own from here on, also on failure (closed
 * at stop, or at once). 0 / -1. */
int proxy_listen_start(const struct proxy_listen_config *c);
/* Stops the thread, closes the listening sockets and the connections still owing a header.
 * Nothing is handed over after it returns. */
void proxy_listen_stop(void);

#endif
