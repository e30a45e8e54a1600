/* What other APIs read of the workspace API: the workspace's treasury settings (PATCH
 * /v1/workspace changes them; handlers/workspace.c). */
#ifndef HANDLERS_WORKSPACE_H
#define HANDLERS_WORKSPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/req.h"

/* WorkspaceTreasurySettings, each member its default when the workspace never set it. */
struct workspace_treasury {
    int fx_quote_ttl_seconds;         /* 30 */
    int fx_spread_bps;                /* 0 */
    int transfer_signatures_required; /* 2 */
    int transfer_authorisation_hours; /* 72 */
    bool require_mfa;                 /* false */
    int idempotency_retention_hours;  /* 24 */
};
/* r's workspace's treasury settings into *out. 0 / -1 (failure, or no such workspace). */
int workspace_treasury_of(struct req *r, struct workspace_treasury *out);
/* How long r's idempotency record is kept, in seconds: its workspace's
 * idempotency_retention_hours (0, the runtime's default, when r has no workspace or the
 * settings cannot be read). The runtime's retention source (runtime/idempotency.h). */
int64_t workspace_idempotency_retention_s(struct req *r);

#endif
