/* What the conversions files share, and what other APIs read of a conversion (the payments
 * API's trade flows, the ledger's journal sources). Who writes what (handlers/sql/README.md):
 *
 *   conversions_quotes.c      quotes: pricing from the live rate, the forward curve and the
 *                             workspace's spread; expiry; getConversionQuote
 *   conversions.c             conversions: execute (consumes its quote once), get, list
 *                             (JSON and CSV), cancel; positions
 *   conversions_settlement.c  the background job that settles conversions at their value
 *                             date's cut-off (or marks them overdue) and posts their ledger
 *                             entry through handlers/ledger_posting.h
 *
 * Amounts are int64 minor units; rates exact decimals (runtime/decimal.h), never a double. */
#ifndef HANDLERS_CONVERSIONS_H
#define HANDLERS_CONVERSIONS_H

#include <stdint.h>

#include "runtime/config.h"
#include "runtime/job_runner.h"
#include "runtime/req.h"

/* ---- for other APIs ---------------------------------------------------------------------- */

/* A conversion as the payments API's trade flows see it. */
struct conversion_funding {
    const char *id;
    const char *status; /* scheduled, settled, overdue, cancelled */
    const char *buy_currency;
    int64_t buy_amount;
    const char *value_date;
};
/* The conversion id of r's workspace into *out (r's arena): 1 found, 0 none (another
 * workspace's is none), -1 failure. Nothing answered. */
int conversions_funding(struct req *r, const char *id, struct conversion_funding *out);

/* ---- conversions_settlement.c ------------------------------------------------------------ */

/* The settlement job, configured from c (handlers/jobs.c adds it). */
struct job conversions_settlement_job(const struct config *c);

#endif
