/* How other APIs post to the ledger: the small declared surface they use instead of writing
 * its tables (handlers/sql/README.md: the ledger's files own them). Every function runs in the
 * caller's transaction, in r's workspace, as r's principal; the posting rules of
 * POST /ledger/journals apply (handlers/ledger.h, ledger_post_entry). */
#ifndef HANDLERS_LEDGER_POSTING_H
#define HANDLERS_LEDGER_POSTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/req.h"

/* One line of an entry another API posts. */
struct ledger_line_in {
    const char *ledger_account_id;
    bool debit; /* else credit */
    int64_t amount; /* > 0, minor units of currency */
    const char *currency;
    const char *description; /* may be NULL */
};

/* A new entry, posted at once. source: "payment", "conversion" or "bank_feed" (the object in
 * source_id), or "system". */
struct ledger_entry_in {
    const char *description;
    const char *effective_date; /* YYYY-MM-DD */
    const char *source;
    const char *source_id;
    const char *external_id; /* may be NULL */
    const struct ledger_line_in *lines;
    size_t n_lines;
};

/* Posts in as a new entry: 1 posted (*entry_id its id, in r's arena); 0 refused by a posting
 * rule (r answered with the problem; the caller decides what that means for it and, outside
 * a request, undoes the transaction part it ran in); -1 failure. */
int ledger_post_new(struct req *r, const struct ledger_entry_in *in, const char **entry_id);
/* Posts the reversal of the posted entry entry_id (source system, dated effective_date, or
 * the original's date when NULL): 1 posted (*reversal_id), 0 refused (answered), -1 failure. */
int ledger_reverse_entry(struct req *r, const char *entry_id, const char *effective_date,
                         const char *description, const char **reversal_id);
/* The posted, not reversed entry recording source_id from source: 1 found (*entry_id), 0
 * none, -1 failure. */
int ledger_entry_of(struct req *r, const char *source, const char *source_id,
                    const char **entry_id);

/* A settled payment, as the ledger needs it (handlers/payments_settlement.c). */
struct ledger_payment {
    const char *id;
    int64_t amount;
    const char *currency;
    const char *originating_account;
    const char *effective_date; /* the entry's date: the day it settled (UTC) */
    const char *description;
};
/* Posts the settlement of p per the workspace's posting settings (ledger_settings.c): debit
 * the payee clearing account of p's currency, credit the cash account of p's originating
 * account. 1 posted; 0 nothing posted (posting disabled, no account mapped, or a posting rule
 * refused it: logged, and left for the close checklist); -1 failure. */
int ledger_payment_settled(struct req *r, const struct ledger_payment *p);
/* Posts the reversal of payment_id's settlement entry, if one was posted and not reversed
 * (a returned payment), dated effective_date. 1 posted, 0 none, -1 failure. */
int ledger_payment_returned(struct req *r, const char *payment_id, const char *effective_date);

/* The FX accounts of one currency, through which conversions post (handlers/conversions.h):
 * cash (asset, debit normal: what the workspace holds in the currency for conversions; its
 * available balance is what funds a conversion's sell side), liquidity (liability, credit
 * normal: the liquidity provider's side of each leg, at the mid rate) and spread (expense,
 * debit normal: the spread paid, the difference between the mid and the client rate). Found
 * by their codes FXC-<CCY>, FXL-<CCY> and FXS-<CCY> (a client may create them first with its
 * own names), created at first use otherwise, each audited as the system's. */
struct ledger_fx_accounts {
    const char *cash, *liquidity, *spread;
};
/* The FX accounts of currency in r's workspace into *out (r's arena): 1 found or created, 0
 * not usable (a code taken by an account in another currency, or archived: logged, nothing
 * answered), -1 failure. */
int ledger_fx_accounts(struct req *r, const char *currency, struct ledger_fx_accounts *out);
/* The available balance of account_id (r's workspace; posted less the draft lines that
 * would lower it, signed in its normal direction) into *available: 1 found, 0 none, -1. */
int ledger_account_available(struct req *r, const char *account_id, int64_t *available);

#endif
