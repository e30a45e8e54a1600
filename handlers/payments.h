/* What the payments handler files share (payments.c: the payment row and the payment
 * operations: create, get, list, update, cancel; payments_approval.c: the approval policy,
 * approving and denying; payments_csv.c: a page as CSV; payments_events.c: a payment's
 * timeline; payments_beneficiaries.c: beneficiaries; payments_batches.c: batches;
 * payments_makers.c: maker-checker; payments_settlement.c: the worker that moves approved payments through the
 * settlement rail). Not a cross-API header: other APIs do not reach into payments. */
#ifndef HANDLERS_PAYMENTS_H
#define HANDLERS_PAYMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "generated/payments_api.h"
#include "generated/rows_payments.h"
#include "runtime/config.h"
#include "runtime/job_runner.h"
#include "runtime/jsonw.h"
#include "runtime/req.h"
#include "runtime/storage.h"

/* A payment is struct payment_row (generated/rows_payments.h, the x-table of Payment): the
 * API's payment in obj and what the API does not show: approvals_required (obj.approval's
 * required), its approval_round, when the settlement worker next acts on it (next_step_at,
 * Unix ms; none while it waits for people or has ended), its batch_position (from 0),
 * created_for (the acting person of obj.created_by, payments_makers.c) and
 * beneficiary_round (the beneficiary's approval round the approvals of this round are given
 * for; 0 or absent: not known, a row from before). */

/* What sql finds for n payments of a page in one query (not one per row): its DB_IN_LIST is
 * bound to their ids, the first column names the payment, and row(r, st, item) reads each row
 * into the payment it names. A failure is logged as what. 0 / -1. */
int pay_page_rows(struct req *r, struct payment **items, size_t n, const char *sql,
                  void (*row)(struct req *r, struct db_stmt *st, struct payment *item),
                  const char *what);

/* Loads r's workspace's payment id into x (in r->arena): 1 found, 0 answered (404, or 412 for
 * an If-Match naming another version), -1 failure. */
int pay_load(struct req *r, const char *id, const char *if_match, struct payment_row *x);
/* (payments_funding.c) Trade flows. A violation at base's funding_conversion_id for a funding
 * p breaks (a conversion of the workspace, not cancelled, buying p's currency, covering p
 * with the other payments still to be paid it funds); nothing without one. 0 / -1. */
int pay_check_funding(struct req *r, const struct payment *p, const char *base);
/* Whether p may be approved as far as its funding goes: not on hold (409 payment_on_hold),
 * its conversion settled (409 funding_conversion_not_settled). 1 / 0 answered / -1. */
int pay_funding_allows_approval(struct req *r, const struct payment *p);
/* How pay_save writes x. */
enum pay_write {
    PAY_INSERT,       /* a new row */
    PAY_UPDATE,       /* every column a client may edit, and the state */
    PAY_UPDATE_STATE, /* the state only: status, approval, rail, failure, schedule, version and
                         updated_at - a transition, which leaves the indexed external_id and
                         the beneficiary's foreign key untouched */
};
/* Writes x (runtime/resource.h: an update as the next version, updated_at now). 0 / -1. */
int pay_save(struct req *r, struct payment_row *x, enum pay_write how);
/* Sets when the settlement worker next acts on x (has_next false: never), at x's version:
 * only the time changes (no status change: no new version, no event). 0 / -1. */
int pay_reschedule(const struct payment_row *x, bool has_next, int64_t at);
/* Notes that payment_id's current approval round has a decision, for the list
 * (0002_list_flags.sql): beside every decision recorded, in its transaction. 0 / -1. */
int pay_note_decision(const char *payment_id);
/* The same for every payment of the batch, each then at its next version (updated_at now):
 * the decision shows in each payment. 0 / -1. */
int pay_note_batch_decisions(const char *batch_id, const char *now);
/* Notes that payment_id has a maker beyond its creator, for the list; beside every maker
 * recorded, in its transaction. 0 / -1. */
int pay_note_maker(const char *payment_id);
/* Sets the status and its ISO 20022 code; an approved payment is due to the worker at once,
 * any other status is not due until the worker schedules it. */
void pay_set_status(struct payment_row *x, enum payment_status s);
/* The domain event (outbox) and the audit record of a change from before (0: none), in r's
 * transaction; detail is the actor's reason or NULL. 0 / -1. */
int pay_record_change(struct req *r, const char *type, const struct payment *p,
                      enum payment_status before, const char *detail);
/* Fills x as a new payment of r's principal from c (id, defaults, times, version 1, round 1,
 * the beneficiary's round; status and approvals are the caller's) and adds a violation at
 * base's members ("" or "/items/3") for every payment rule c breaks. 0, 1 answered (no person
 * acts: pay_person), -1 failure. */
int pay_from_create(struct req *r, const struct payment_create *c, const char *base,
                    struct payment_row *x);
/* Whether another payment of r's workspace than except (may be NULL) has external_id. 0 / -1. */
int pay_external_id_taken(struct req *r, const char *external_id, const char *except,
                          bool *taken);
/* 1 (answered 409 part_of_batch) when p belongs to a batch, which decides for it; else 0. */
int pay_part_of_batch(struct req *r, const struct payment *p);
/* Answers 409 invalid_transition: p cannot be `action` ("approved") in its status, only when
 * `allowed` ("pending_approval"). */
void pay_invalid_transition(struct req *r, const struct payment *p, const char *action,
                            const char *allowed);
/* The page as CSV (Accept: text/csv; payments_csv.c), in r->arena. */
void pay_csv(struct req *r, const struct payment_page *page, const char **text, size_t *len);

/* ---- approvals (payments_approval.c) ---- */

/* Approvals the workspace's policy asks for amount in currency (the largest tier reached).
 * -1 failure. */
int64_t pay_approvals_needed(struct req *r, const char *currency, int64_t amount);
/* Approvals the policy asks for x: the largest tier reached by its amount or, under the
 * velocity rule, by the total of each of persons' (n) payments to its beneficiary in its
 * currency within the window (pay_velocity_total). -1 failure. */
int64_t pay_approvals_needed_for(struct req *r, const struct payment_row *x,
                                 const char *const *persons, size_t n);
/* Records r's principal's decision ("approved", "denied"; reason or NULL) on every item of
 * batch_id, in each item's current round, at now: the batch decides for its items. 0 / -1. */
int pay_add_batch_decisions(struct req *r, const char *batch_id, const char *decision,
                            const char *reason, const char *now);
/* The people rules of a decision (maker-checker, payments_makers.c), by acting person: whoever
 * created what (e.g. "payment pay_..."; created_for, the acting person stored when it was
 * created, else that of created_by) cannot approve or deny it (403 self_approval), and nobody
 * decides twice (409 already_approved). 1 go on, 0 answered, -1 failure. */
int pay_may_decide(struct req *r, const char *what, const char *created_by,
                   const char *created_for, const struct payment_approval *a);
/* The caller's role approval limit in currency against amount (403 approval_limit_exceeded
 * naming what). 1 within it (or no limit), 0 answered, -1 failure. */
int pay_within_limit(struct req *r, const char *what, const char *currency, int64_t amount);

/* r's workspace's beneficiary id into b (in r->arena; payments_beneficiaries.c): 1 found,
 * 0 none (unknown, another workspace's, or not a beneficiary id), -1 failure. */
int pay_beneficiary_load(struct req *r, const char *id, struct beneficiary *b);
/* Starts a new approval round of r's workspace's beneficiary id (its approval_round + 1).
 * 0 / -1. */
int pay_beneficiary_new_round(struct req *r, const char *id);
/* Why x's beneficiary can no longer be paid: NULL when it can (approved, active, in the
 * payment's currency), else a problem code (beneficiary_archived, beneficiary_not_approved,
 * beneficiary_mismatch) with *why in words; *failed on a database failure (then NULL). */
const char *pay_beneficiary_refusal(struct req *r, const struct payment *p, const char **why,
                                    bool *failed);
/* Reads the decisions of x's current round into x->obj.approval. 0 / -1. */
int pay_load_approvers(struct req *r, struct payment_row *x);
/* Reads the decisions a prepared "SELECT user_id, decision, reason, decided_at ..." yields
 * into a (approvers, received; at most 20). 0 / -1. */
int pay_read_decisions(struct req *r, struct db_stmt *st, struct payment_approval *a);

/* ---- maker-checker (payments_makers.c) ---- */

/* The acting person of a stored principal id of r's workspace: a user is themself, a service
 * account the user who created it (followed through service accounts created by service
 * accounts, rows from before only people could). pay_person: r's principal's - a user, or for
 * a service-account token the person who minted that token. In r->arena; NULL when the chain
 * ends at no user (answered 403 acting_person_unknown) or on a failure: the caller returns
 * pay_person_missing(r) (0 answered, -1 failure). */
const char *pay_person_of(struct req *r, const char *principal_id);
const char *pay_person(struct req *r);
int pay_person_missing(const struct req *r);
/* Approving and denying (payments, batches, beneficiaries) is a person's decision: 1 when r's
 * principal is a user, else 0 answered 403 approver_must_be_a_person naming what. */
int pay_decider_is_person(struct req *r, const char *what);
/* Starts the audit detail of a change made by person through r's principal: opens w's object
 * with "maker" (person) and, when person acts through a service account, "via" (it). */
void pay_maker_detail_begin(const struct req *r, struct jsonw *w, const char *person);
/* The approval round of r's workspace's beneficiary id into *round (0: none). 0 / -1. */
int pay_beneficiary_round(struct req *r, const char *id, int64_t *round);
/* Approvals are given for a beneficiary as it was: when x's beneficiary's approval round has
 * moved on since x's approval round started (its details changed and were approved again),
 * voids x's approvals - a new round for the beneficiary as it is now, the policy run again,
 * the payment.updated event and audit record, kept although the answer is 409
 * beneficiary_changed - and answers 0. 1 when the round is the same (or not known), -1
 * failure. */
int pay_approvals_still_hold(struct req *r, struct payment_row *x);
/* The approval-relevant fields that differ between a and b, as a mask (bit f - 1 for the
 * enum payment_approval_field value f). */
unsigned pay_changed_fields(const struct payment *a, const struct payment *b);
/* The mask as "amount, beneficiary_id" (in r->arena). */
const char *pay_fields_text(struct req *r, unsigned fields);
/* The fields whose change checks a payment's funding again (amount, currency, the conversion). */
unsigned pay_funding_fields(void);
/* The audit detail of a change (JSON: maker, via, each field before and after, the new
 * round and the approvals it needs), in r->arena; NULL on failure. */
const char *pay_change_detail(struct req *r, const struct payment *before,
                              const struct payment *after, unsigned fields, const char *person,
                              const struct payment_row *x);
/* Records person (acting through r's principal) as a maker of p's fields, at p's updated_at.
 * 0 / -1. */
int pay_add_maker(struct req *r, const struct payment *p, const char *person, unsigned fields);
/* Whether person changed fields of the payment (1, with *fields) or not (0); -1 failure. */
int pay_maker_fields(const char *payment_id, const char *person, unsigned *fields);
/* x's creator as its first maker (allocates room for the others). */
void pay_set_creator(struct req *r, struct payment_row *x);
/* Appends the makers who changed p (one payment), or those of a page's items. 0 / -1. */
int pay_load_makers(struct req *r, struct payment *p);
int pay_load_page_makers(struct req *r, struct payment **items, size_t n);
/* The total of x and person's other payments to x's beneficiary in x's currency created in
 * the last window_hours and not denied, cancelled, failed or returned; the sum stops once it
 * reaches enough. 0 / -1. */
int pay_velocity_total(struct req *r, const struct payment_row *x, const char *person,
                       int64_t window_hours, int64_t enough, int64_t *total);
/* Records person as a maker of a beneficiary's current approval round (fields: bit 0 created,
 * then name, account_holder_name, account_identification, bank, currency, country), first
 * starting a new round when new_round. 0 / -1. */
int ben_add_maker(struct req *r, const char *beneficiary_id, const char *person, unsigned fields,
                  bool new_round);
/* Whether person made the beneficiary's current approval round. 0 / -1. */
int ben_is_maker(struct req *r, const char *beneficiary_id, const char *person, bool *is);

/* Today's business date in UTC, "YYYY-MM-DD" (the test clock moves it). */
void pay_today(char out[11]);

/* The settlement worker (payments_settlement.c) as a background job, configured from c. */
struct job payments_settlement_job(const struct config *c);

#endif
