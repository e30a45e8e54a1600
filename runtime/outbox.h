/* The transactional outbox: domain events (payment.created, payment.approved, ...) written in
 * the same transaction as the change they report, so an event exists exactly when its change
 * does. Webhook delivery reads them later; a resource's history is read from them. Envelope
 * after Standard Webhooks and Stripe's events. */
#ifndef RUNTIME_OUTBOX_H
#define RUNTIME_OUTBOX_H

#include <stdint.h>

#include "runtime/req.h"

#define OUTBOX_API_VERSION "2025-11-01"

/* Adds event `type` about resource_type/resource_id at resource_version; object_json is the
 * resource as its own GET answers it. Uses r's workspace, request id and idempotency key.
 * Must run inside r's write transaction. 0 / -1. */
int outbox_add(struct req *r, const char *type, const char *resource_type,
               const char *resource_id, int64_t resource_version, const char *object_json);

#endif
