/* The HTTPS server (libmicrohttpd + GnuTLS) and the plain-HTTP listener that only says "use
 * HTTPS"; owns the request lifecycle from first byte to access-log line. */
#ifndef RUNTIME_SERVER_H
#define RUNTIME_SERVER_H

#include <stddef.h>

#include "runtime/config.h"
#include "runtime/op.h"

/* Binds both ports and starts the worker pool. cert_pem/key_pem must outlive the server.
 * 0, or -1 with a message naming the cause (e.g. the port in use) in err. */
int server_start(const struct config *c, const char *cert_pem, const char *key_pem,
                 route_match_fn *match, char *err, size_t errlen);
/* Stops accepting, lets in-flight requests finish (bounded wait), then stops the workers. */
void server_stop(void);

#endif
