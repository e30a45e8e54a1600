/* Trade flows: a payment funded by a conversion (its funding_conversion_id). What the
 * conversions API calls when a conversion it cancels funds payments; handlers/payments*.c
 * check the funding themselves when a payment is created, changed and approved. */
#ifndef HANDLERS_PAYMENTS_FUNDING_H
#define HANDLERS_PAYMENTS_FUNDING_H

#include "runtime/req.h"

/* Holds every payment of r's workspace funded by conversion_id that is not final yet and has
 * not left for the rail (pending_approval, approved, scheduled): it stays where it is,
 * cannot be approved or sent, and says why (the reason the spec gives for a cancelled
 * funding conversion), each change audited as the system's. In the caller's transaction.
 * How many were held, or -1. */
int payments_hold_funded_by(struct req *r, const char *conversion_id);

#endif
