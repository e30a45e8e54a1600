/* What the payments handler files share (payments.c: the operations; payments_settlement.c:
 * the worker that moves approved payments through the settlement rail). Not a cross-API
 * header: other APIs do not reach into payments. */
#ifndef HANDLERS_PAYMENTS_H
#define HANDLERS_PAYMENTS_H

#include <stdbool.h>
#include <stdint.h>

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
};

/* Loads r's workspace's payment id into x (in r->arena): 1 found, 0 answered (404, or 412 for
 * an If-Match naming another version), -1 failure. */
int pay_load(struct req *r, const char *id, const char *if_match, struct pay *x);
/* Writes every column of x: INSERT when insert, else UPDATE at old_version (0 rows is a
 * failure). 0 / -1. */
int pay_save(const struct pay *x, bool insert, int64_t old_version);
/* Sets the status and its ISO 20022 code; an approved payment is due to the worker at once,
 * any other status is not due until the worker schedules it. */
void pay_set_status(struct pay *x, enum payment_status s);
/* A new version at the current time. */
void pay_touch(struct req *r, struct payment *p);
/* The domain event (outbox) and the audit record of a change from before (0: none), in r's
 * transaction; detail is the actor's reason or NULL. 0 / -1. */
int pay_record_change(struct req *r, const char *type, const struct payment *p,
                      enum payment_status before, const char *detail);
/* Today's business date in UTC, "YYYY-MM-DD" (the test clock moves it). */
void pay_today(char out[11]);

/* The settlement worker (payments_settlement.c) as a background job, configured from c. */
struct job payments_settlement_job(const struct config *c);

#endif
