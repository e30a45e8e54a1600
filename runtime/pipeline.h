/* The request pipeline: what becomes of a request once runtime/server.c has its head and body.
 * In order: HTTPS (or a trusted proxy's word for it), shutting down (503), the target
 * (runtime/http_strict.h), routing (404, 405; OPTIONS and CORS preflights answered here),
 * authentication, the rate limit, the body (413, media type, a form turned into JSON),
 * idempotency, and the run: a write goes to the group commit (runtime/group_commit.h), an
 * x-own-transaction operation to the offload pool (runtime/offload.h), a read runs here in one
 * transaction. The answer is left in the struct req for server.c to send. */
#ifndef RUNTIME_PIPELINE_H
#define RUNTIME_PIPELINE_H

#include <stdbool.h>

#include "runtime/req.h"

/* A body the server will not keep (an unmatched route's, a bodyless operation's) announced
 * with a Content-Length above this is answered at once instead of read and dropped. */
#define PIPELINE_DROP_BODY_MAX (64 * 1024)

/* auth_rate_limit: login attempts per minute per client address (--auth-rate-limit). */
void pipeline_init(int auth_rate_limit);
/* While on, every request is answered 503 (the server is shutting down). */
void pipeline_set_draining(bool on);
/* r->request_id: a valid X-Request-ID (a UUID), or a new id. */
void pipeline_request_id(struct req *r);
/* Decides the answer, or hands the operation over (a write to the group commit, an
 * x-own-transaction operation to the offload pool): true when it did; the connection is then
 * suspended and resumed with the answer in r (after which r is not the caller's).
 * plain_listener: it came in on the plain-HTTP port. With r->answered_early (a body refused
 * before it was read) it never hands over. */
bool pipeline_process(struct req *r, bool plain_listener);
/* An answer from this thread's reads waits until the latest commit they could have seen is
 * durable (group_commit.h), suspended meanwhile: no client is shown a write that a crash could
 * still take back. True when it waits (the connection is resumed once it is durable). */
bool pipeline_wait_until_durable(struct req *r);

#endif
