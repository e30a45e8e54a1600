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

/* ---- between the conversions files ------------------------------------------------------- */

struct fx_quote;
struct fx_conversion_execute;
struct fx_conversion;

/* conversions_quotes.c: the quote x->quote_id of r's workspace that executing x may use, into
 * *q: 1 go on; 0 answered - 422 quote_not_found at /quote_id, 422 quote_mismatch at each
 * member of x that differs from the quote, 409 quote_already_used, 409 quote_expired (an
 * active quote past expires_at is stored as expired, r->keep_writes); -1 failure. */
int conversions_quote_usable(struct req *r, const struct fx_conversion_execute *x,
                             struct fx_quote *q);
/* conversions_quotes.c: q (loaded by conversions_quote_usable in this transaction) consumed
 * by conversion_id: 1 done; 0 answered 409 quote_already_used (another conversion came
 * first); -1 failure. */
int conversions_quote_consume(struct req *r, struct fx_quote *q, const char *conversion_id);

/* conversions.c: saves c's new state (status, settled_at, ledger_transaction_id), changed from
 * `before` by the settlement job, with its event (type, e.g. "fx_conversion.settled") and
 * audit record as r's principal (the system). 1 saved, 0 another writer came first (nothing
 * answered), -1 failure. */
int conversions_save_settlement(struct req *r, struct fx_conversion *c, const char *type,
                                const char *before, const char *detail);

/* ---- conversions_settlement.c ------------------------------------------------------------ */

/* The settlement job, configured from c (handlers/jobs.c adds it). */
struct job conversions_settlement_job(const struct config *c);

#endif
