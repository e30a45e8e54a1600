/* The HTTPS server (libmicrohttpd + GnuTLS) and the plain-HTTP listener that only says "use
 * HTTPS"; owns the request lifecycle from first byte to access-log line. */
#ifndef RUNTIME_SERVER_H
#define RUNTIME_SERVER_H

#include <stddef.h>

#include "runtime/config.h"
#include "runtime/op.h"

/* The daemon's settings (also those of the bench's floor, tests/bench/bare_mhd.c). */
/* TLS 1.2+ with AEAD ciphers and forward secrecy only (GnuTLS priority syntax). */
#define SERVER_TLS_PRIORITIES                                                           \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:" \
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA"
/* libmicrohttpd's per-connection pool (request head and read buffer; bodies are copied out
 * into their own buffer as they arrive). 16 KiB keeps an idle TLS connection at ~17.5 KiB of
 * RSS (64 KiB: ~47 KiB; make bench-idle) and still takes any sane request head. */
#define SERVER_CONNECTION_MEMORY (16 * 1024)
/* libmicrohttpd's event loop: poll(2) in its own pool of threads (why not epoll, why not
 * MHD_USE_TURBO: start_daemon in runtime/server.c). Needs <microhttpd.h>. */
#define SERVER_MHD_FLAGS (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC)
/* --listen names at most this many addresses. */
#define SERVER_MAX_LISTEN 4

/* Binds both ports and starts the worker pool. cert_pem/key_pem must outlive the server.
 * 0, or -1 with a message naming the cause (e.g. the port in use) in err. */
int server_start(const struct config *c, const char *cert_pem, const char *key_pem,
                 route_match_fn *match, char *err, size_t errlen);
/* Stops accepting, lets in-flight requests finish (bounded wait), then stops the workers. */
void server_stop(void);

#endif
