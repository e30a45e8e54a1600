/* What the ledger handler files share. Not a cross-API header: other APIs post through
 * handlers/ledger_posting.h only.
 *
 *   ledger_accounts.c  the chart of accounts (create, get, list, update, archive) and the only
 *                      writes of ledger_accounts: balances moved by postings and drafts
 *   ledger_journals.c  journal entries (create, get, list, update, post, reverse, discard,
 *                      versions) and ledger_posting.h's functions; writes journal_entries
 *                      and journal_entry_versions
 *   ledger_post.c      the posting engine: the posting rules in their order, the balances
 *                      moved under guards, the immutable postings and the balance checkpoints
 *   ledger_periods.c   accounting periods, their close and its checklist
 *   ledger_reports.c   the trial balance (JSON and CSV) and the journal listing as CSV
 *   ledger_settings.c  the posting settings, and the payment postings they drive
 *   ledger_fx.c        the FX accounts conversions post through (ledger_fx_accounts, created
 *                      at first use through ledger_account_insert) and their available balance
 *
 * Amounts are int64 minor units. A balance's `amount` is signed in the account's normal
 * direction: debits - credits for a debit-normal account, credits - debits otherwise. */
#ifndef HANDLERS_LEDGER_H
#define HANDLERS_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "generated/ledger_api.h"
#include "generated/rows_ledger.h"
#include "runtime/req.h"

/* ---- ledger_accounts.c ---------------------------------------------------------------- */

/* The most accounts a workspace's chart holds, archived ones included: the trial balance lists
 * every account on one page (its rows' maxItems in the spec). */
#define LEDGER_ACCOUNTS_MAX 10000

/* A ledger account is struct ledger_account_row (generated/rows_ledger.h): the API's account
 * in obj, and the sums the API shows as balances: posted_debits/credits (posted lines) and
 * draft_debits/credits (lines of drafts on it in its currency). */

/* Fills row->obj.balances from the sums (posted, pending = posted + drafts, available =
 * posted less the draft lines that would lower it), in r's arena. */
void ledger_account_balances(struct req *r, struct ledger_account_row *row);
/* The signed balance of debits and credits for an account of normal balance nb. */
int64_t ledger_signed(enum ledger_direction nb, int64_t debits, int64_t credits);

/* One account's share of an entry being posted: what its lines add, and the guards the
 * UPDATE that adds it must find true on the row as it will be (checked by the database in
 * the same statement, so two postings can never both pass a guard only one satisfies). */
struct ledger_move {
    const char *account_id;
    const char *currency;
    int64_t debits, credits; /* added to posted_debits / posted_credits (>= 0) */
    bool has_lock_version;   /* the row's lock_version must still be lock_version */
    int64_t lock_version;
    /* on the signed balances after the move (available: posted less the drafts that lower
     * it, as ledger_account_balances says); has_* false: no guard */
    bool has_posted_gte, has_posted_lte, has_available_gte, has_available_lte;
    int64_t posted_gte, posted_lte, available_gte, available_lte;
};
/* Adds m to its account (active, of m's currency, in r's workspace), lock_version + 1, only
 * if every guard and the account's constraints hold on the result: 1 moved; 0 a guard, the
 * status or the currency refused it, or a sum (posted, or posted + drafts) would pass 2^53 - 1,
 * the largest amount the API shows (nothing changed: the caller re-reads the row to say
 * which); -1 failure (logged; debits or credits negative). */
int ledger_account_move(struct req *r, const struct ledger_move *m);
/* Adds debits and credits (negative: takes them away) to the draft sums of account_id in r's
 * workspace when it is in currency (a draft line on another account or currency counts
 * nowhere). 0 / -1 (also when a sum would go below 0 or posted + drafts pass 2^53 - 1). */
int ledger_account_drafts(struct req *r, const char *account_id, const char *currency,
                          int64_t debits, int64_t credits);
/* Inserts a new account (resource_new'd by the caller, fields set): 1 inserted; 0 its code is
 * taken or the chart is full (LEDGER_ACCOUNTS_MAX; nothing answered); -1 failure. For the
 * defaults ledger_settings.c creates. */
int ledger_account_insert(struct req *r, struct ledger_account_row *row);

/* ---- ledger_periods.c ----------------------------------------------------------------- */

/* The period covering date (YYYY-MM-DD) in r's workspace into out: 1 found, 0 none, -1
 * failure. */
int ledger_period_covering(struct req *r, const char *date, struct ledger_period *out);
/* Whether an entry dated date may post now, by r's principal: 1 yes (*period_id the covering
 * period's id, NULL when the workspace has no periods yet); 0 answered - 409 period_closed at
 * pointer (no period covers the date while the workspace has periods, or it is future,
 * closed or locked), 403 insufficient_scope (closing, and r lacks ledger:close); -1 failure. */
int ledger_period_admits(struct req *r, const char *date, const char *pointer,
                         const char **period_id);
/* The SQL expression of the id of the period covering <table>.effective_date (NULL when
 * none), for a list's extra column (runtime/resource.h struct resource_extra). */
#define LEDGER_PERIOD_OF(table)                                                                    \
    "(SELECT p.id FROM ledger_periods p WHERE p.workspace_id = " table ".workspace_id AND "       \
    table ".effective_date BETWEEN p.start_date AND p.end_date)"

/* ---- ledger_post.c -------------------------------------------------------------------- */

/* Posts e (a draft being posted, or a new entry: lines, effective_date, external_id set),
 * checking the posting rules in the spec's order: per-currency balance (422
 * unbalanced_entry with imbalances), accounts found and active (422 validation_failed
 * ledger_account_not_found, 422 account_archived), currencies (422 currency_mismatch), the
 * period (409 period_closed, 403), the external_id (409 duplicate_external_id), then the
 * balance assertions, constraints and account_lock_version (422 balance_assertion_failed,
 * 409 lock_version_mismatch), every refusal naming its lines. On success the balances and
 * the checkpoints moved and e says posted (status, posted_at, posted_by = r's principal,
 * period_id); the caller saves e, then writes its lines with ledger_post_record. 1 posted; 0
 * answered (every refusal comes before any write); -1 failure. */
int ledger_post_entry(struct req *r, struct journal_entry *e);
/* The posted lines of e (saved) as rows of ledger_postings, which nothing changes after. 0 /
 * -1. */
int ledger_post_record(struct req *r, const struct journal_entry *e);
/* The per-currency totals of e's lines into e->totals (in r's arena). */
void ledger_entry_totals(struct req *r, struct journal_entry *e);

/* How many currencies of r's workspace's posted balances as of the end of as_of (from the
 * checkpoints) do not balance (0 in a healthy ledger) into *unbalanced: the close checklist's
 * trial_balance_balanced. 0 / -1. */
int ledger_unbalanced_currencies(struct req *r, const char *as_of, int *unbalanced);

/* ---- ledger_reports.c ----------------------------------------------------------------- */

/* A page of journal entries as CSV, one journal line per row (GET /ledger/journals with
 * Accept: text/csv; the columns the spec lists), in r's arena. 0 / -1. */
int ledger_journals_csv(struct req *r, const struct journal_entry_page *page, const char **text,
                        size_t *len);

#endif
