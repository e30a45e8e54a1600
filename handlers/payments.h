/* What the payments handler files share (payments.c: the operations; payments_settlement.c:
 * the worker that moves approved payments through the settlement rail). Not a cross-API
 * header: other APIs do not reach into payments. */
#ifndef HANDLERS_PAYMENTS_H
#define HANDLERS_PAYMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "generated/payments_api.h"
#include "runtime/config.h"
#include "runtime/jobs.h"
#include "runtime/req.h"

/* A payment with what the API does not show: its approval round and when the settlement
 * worker next acts on it (Unix ms; none while it waits for people or has ended). */
struct pay {
    struct payment p;
    int64_t round;
    bool has_next_step;
    int64_t next_step_at;
    int64_t batch_position; /* its place in its batch (p.batch_id), from 0 */
};

/* Small storage helpers: a text column copied into r->arena (NULL for SQL NULL); bind text or
 * NULL; metadata as the JSON object text it is stored as (malloc'd) and back (into r->arena,
 * 0 / -1). */
const char *pay_column(struct req *r, sqlite3_stmt *st, int col);
void pay_bind_opt(sqlite3_stmt *st, int i, const char *v);
char *pay_metadata_json(const struct metadata_entry *m, size_t n);
int pay_metadata_parse(struct req *r, const char *text, struct metadata_entry **m, size_t *n);

/* Loads r's workspace's payment id into x (in r->arena): 1 found, 0 answered (404, or 412 for
 * an If-Match naming another version), -1 failure. */
int pay_load(struct req *r, const char *id, const char *if_match, struct pay *x);
/* How pay_save writes x. */
enum pay_write {
    PAY_INSERT,       /* a new row */
    PAY_UPDATE,       /* every column a client may edit, and the state */
    PAY_UPDATE_STATE, /* the state only: status, approval, rail, failure, schedule, version and
                         updated_at - a transition, which leaves the indexed external_id and
                         the beneficiary's foreign key untouched */
};
/* Writes x; an update applies at old_version (0 rows is a failure). 0 / -1. */
int pay_save(const struct pay *x, enum pay_write how, int64_t old_version);
/* Sets the status and its ISO 20022 code; an approved payment is due to the worker at once,
 * any other status is not due until the worker schedules it. */
void pay_set_status(struct pay *x, enum payment_status s);
/* A new version at the current time. */
void pay_touch(struct req *r, struct payment *p);
/* The domain event (outbox) and the audit record of a change from before (0: none), in r's
 * transaction; detail is the actor's reason or NULL. 0 / -1. */
int pay_record_change(struct req *r, const char *type, const struct payment *p,
                      enum payment_status before, const char *detail);
/* Fills x as a new payment of r's principal from c (id, defaults, times, version 1, round 1;
 * status and approvals are the caller's) and adds a violation at base's members ("" or
 * "/items/3") for every payment rule c breaks. 0 / -1. */
int pay_from_create(struct req *r, const struct payment_create *c, const char *base,
                    struct pay *x);
/* Whether another payment of r's workspace than except (may be NULL) has external_id. 0 / -1. */
int pay_external_id_taken(struct req *r, const char *external_id, const char *except,
                          bool *taken);
/* Approvals the workspace's policy asks for amount in currency (the largest tier reached).
 * -1 failure. */
int64_t pay_approvals_needed(struct req *r, const char *currency, int64_t amount);
/* Reads the decisions of x's current round into x->p.approval. 0 / -1. */
int pay_load_approvers(struct req *r, struct pay *x);
/* Reads the decisions a prepared "SELECT user_id, decision, reason, decided_at ..." yields
 * into a (approvers, received; at most 20). 0 / -1. */
int pay_read_decisions(struct req *r, sqlite3_stmt *st, struct payment_approval *a);
/* The people rules of a decision (maker-checker, domain.md §3): whoever created what (e.g.
 * "payment pay_...") cannot approve or deny it (403 self_approval), and nobody decides twice
 * (409 already_approved). 1 go on, 0 answered. */
int pay_may_decide(struct req *r, const char *what, const char *created_by,
                   const struct payment_approval *a);
/* The caller's role approval limit in currency against amount (403 approval_limit_exceeded
 * naming what). 1 within it (or no limit), 0 answered, -1 failure. */
int pay_within_limit(struct req *r, const char *what, const char *currency, int64_t amount);
/* Today's business date in UTC, "YYYY-MM-DD" (the test clock moves it). */
void pay_today(char out[11]);

/* The settlement worker (payments_settlement.c) as a background job, configured from c. */
struct job payments_settlement_job(const struct config *c);

#endif
