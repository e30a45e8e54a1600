/* The settlement worker: approved payments move on without a client. Each
 * payment due for a step (payments.next_step_at reached) is advanced in its own part of a
 * write transaction that re-reads it, asks the rail, and writes the new status with its event
 * and audit record, so a cancel racing the worker either happens first (the worker then finds
 * nothing due) or finds the payment already processing (409). After a crash nothing is lost or
 * repeated: what committed is done, and what did not is still due and runs again
 * (payments_rail.h says why asking the rail again is safe).
 *
 * The steps of a round are handed to the group-commit writer (runtime/job_steps.h) like
 * write requests, so they share its transactions and fsyncs instead of taking the write lock
 * once each, and its connection's page cache is not thrown away after every step (SQLite
 * drops a connection's cache whenever another connection has committed). A step that fails
 * has only its own writes undone there and stays due; the others of its batch commit.
 *
 *   approved   -> scheduled   when the effective date is still ahead (due again that day, UTC)
 *   approved | scheduled -> failed   when the beneficiary can no longer be paid, or changed
 *                                    since the payment was approved (payee_refused)
 *   approved | scheduled -> processing   submitted to the rail
 *   processing -> sent | failed,  sent -> completed,  completed -> returned   as the rail says
 *
 * The ledger records the money that moved (handlers/ledger_posting.h): a payment that completes
 * posts its settlement, one returned after completing posts the reversal (post_to_ledger).
 */
#include <stdio.h>
#include <string.h>

#include "handlers/ledger_posting.h"
#include "handlers/payments.h"
#include "handlers/payments_rail.h"
#include "runtime/arena.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/job_steps.h"
#include "runtime/log.h"
#include "runtime/storage.h"

#define BATCH 50
/* How long a step the rail could not take waits before it is tried again. */
#define RETRY_MS 30000

static const struct rail *rail;

static enum payment_status status_of(enum rail_state s)
{
    switch (s) {
    case RAIL_PROCESSING:
        return PAYMENT_STATUS_PROCESSING;
    case RAIL_SENT:
        return PAYMENT_STATUS_SENT;
    case RAIL_COMPLETED:
        return PAYMENT_STATUS_COMPLETED;
    case RAIL_FAILED:
        return PAYMENT_STATUS_FAILED;
    case RAIL_RETURNED:
        return PAYMENT_STATUS_RETURNED;
    }
    return 0;
}

static enum rail_state rail_state_of(enum payment_status s)
{
    return s == PAYMENT_STATUS_SENT        ? RAIL_SENT
           : s == PAYMENT_STATUS_COMPLETED ? RAIL_COMPLETED
                                           : RAIL_PROCESSING;
}

/* Records the new status s with its event; the next step at next_at (0: none). */
static int move(struct job_step *st, struct payment_row *x, enum payment_status s, int64_t next_at,
                const char *detail)
{
    struct req *r = &st->r;
    struct payment *p = &x->obj;
    enum payment_status before = p->status;
    pay_set_status(x, s);
    x->has_next_step_at = next_at != 0;
    x->next_step_at = next_at;
    const char *type = arena_printf(&r->arena, "payment.%s", payment_status_str(s));
    if (pay_save(r, x, PAY_UPDATE_STATE) != 0 || pay_record_change(r, type, p, before, detail) != 0)
        return -1;
    st->moved = arena_printf(&r->arena, "%s -> %s%s%s", payment_status_str(before),
                             payment_status_str(s), detail ? ": " : "", detail ? detail : "");
    return 0;
}

/* The beneficiary is checked again just before the payment is sent: it may have been archived,
 * or changed and not approved again, or moved to another currency since the payment was
 * approved, or changed and approved again (beneficiary_changed: the payment's approvals were
 * given for the details as they were, pay_approvals_still_hold). Such a payment is not sent
 * but failed (final: it was approved for a payee that is no longer the one it would reach;
 * the client re-enters it once the beneficiary is approved again), with failure_reason
 * starting with the problem code approval would answer, and its payment.failed event and
 * audit record. *refused when it was failed. 0 / -1. */
static int payee_refused(struct job_step *st, struct payment_row *x, bool *refused)
{
    struct req *r = &st->r;
    struct payment *p = &x->obj;
    const char *why = NULL;
    bool failed = false;
    const char *code = pay_beneficiary_refusal(r, p, &why, &failed);
    *refused = false;
    if (failed)
        return -1;
    int64_t round = 0;
    if (!code && pay_beneficiary_round(r, p->beneficiary_id, &round) != 0)
        return -1;
    if (!code && x->beneficiary_round != 0 && round != x->beneficiary_round) {
        /* approved again, but the approvals of this payment were given for other details */
        code = "beneficiary_changed";
        why = arena_printf(&r->arena,
                           "the bank details of beneficiary %s changed after this payment was "
                           "approved (they were approved again, the payment was not)",
                           p->beneficiary_id);
    }
    if (!code)
        return 0;
    p->failure_reason = arena_printf(&r->arena, "%s: %s; the payment was not sent", code, why);
    p->has_failure_reason = true;
    *refused = true;
    return move(st, x, PAYMENT_STATUS_FAILED, 0, p->failure_reason);
}

/* The ledger's record of x's move from `from` (handlers/ledger_posting.h), in the step's
 * transaction, dated the day of the step (UTC): completed posts the settlement; completed ->
 * returned posts its reversal; a failed payment never completed, so it posted nothing and
 * posts nothing. A posting rule's refusal (a closed period, an archived account, posting
 * disabled or no account mapped) does not stop the payment: ledger_payment_settled/returned
 * log it, undo their own writes (a savepoint of their own inside the step's) and answer 0;
 * the payment stays unposted, for the close checklist. A failure (-1) fails the step, which
 * is undone and stays due, like any other. The step's principal is "system" with no scopes:
 * the period rules admit its postings in open periods (a closing period wants ledger:close,
 * so a payment settling into one stays unposted). 0 / -1. */
static int post_to_ledger(struct job_step *st, struct payment_row *x, enum payment_status from)
{
    struct req *r = &st->r;
    const struct payment *p = &x->obj;
    char now[40];
    format_time_rfc3339(st->now, now, sizeof now);
    const char *day = arena_printf(&r->arena, "%.10s", now);
    if (p->status == PAYMENT_STATUS_COMPLETED) {
        struct ledger_payment lp = {
            .id = p->id,
            .amount = p->amount,
            .currency = p->currency,
            .originating_account = p->originating_account,
            .effective_date = day,
            .description = arena_printf(&r->arena, "Payment %s to beneficiary %s settled", p->id,
                                        p->beneficiary_id),
        };
        return ledger_payment_settled(r, &lp) < 0 ? -1 : 0;
    }
    if (p->status == PAYMENT_STATUS_RETURNED && from == PAYMENT_STATUS_COMPLETED)
        return ledger_payment_returned(r, p->id, day) < 0 ? -1 : 0;
    return 0;
}

/* One step of x, due at st->now, inside the writer's transaction. 0 / -1. */
static int advance(struct job_step *st, struct payment_row *x)
{
    struct req *r = &st->r;
    int64_t now = st->now;
    struct payment *p = &x->obj;
    struct rail_order o = {
        .payment_id = p->id,
        .workspace_id = p->workspace_id,
        .amount = p->amount,
        .currency = p->currency,
        .type = payment_type_str(p->type),
        .remittance = p->has_remittance_information ? p->remittance_information : NULL,
        .reference = p->has_rail_reference ? p->rail_reference : NULL,
    };
    struct rail_report rep;
    char day[11];
    bool refused = false;
    switch (p->status) {
    case PAYMENT_STATUS_APPROVED:
    case PAYMENT_STATUS_SCHEDULED:
        pay_today(day);
        if (strcmp(p->effective_date, day) > 0) {
            int64_t at = 0;
            char midnight[32];
            snprintf(midnight, sizeof midnight, "%sT00:00:00Z", p->effective_date);
            if (!format_time_parse_any(midnight, &at))
                return -1;
            if (p->status == PAYMENT_STATUS_SCHEDULED) /* woken early (the clock moved back) */
                return pay_reschedule(x, true, at);
            return move(st, x, PAYMENT_STATUS_SCHEDULED, at, NULL);
        }
        int checked = payee_refused(st, x, &refused);
        if (checked != 0 || refused)
            return checked;
        if (rail->submit(&o, now, &rep) != 0)
            return pay_reschedule(x, true, now + RETRY_MS);
        p->rail_reference = arena_strdup(&r->arena, rep.reference);
        p->has_rail_reference = true;
        return move(st, x, PAYMENT_STATUS_PROCESSING, rep.ask_again_at_ms,
                    arena_printf(&r->arena, "submitted to the %s rail as %s", rail->name,
                                 rep.reference));
    case PAYMENT_STATUS_PROCESSING:
    case PAYMENT_STATUS_SENT:
    case PAYMENT_STATUS_COMPLETED: {
        enum rail_state known = rail_state_of(p->status);
        if (rail->progress(&o, known, now, &rep) != 0)
            return pay_reschedule(x, true, now + RETRY_MS);
        if (rep.state == known)
            return pay_reschedule(x, rep.ask_again_at_ms != 0, rep.ask_again_at_ms);
        if (rep.state == RAIL_FAILED || rep.state == RAIL_RETURNED) {
            p->failure_code = arena_strdup(&r->arena, rep.reason_code);
            p->has_failure_code = true;
            p->failure_reason = arena_strdup(&r->arena, rep.reason);
            p->has_failure_reason = true;
        }
        enum payment_status from = p->status;
        if (move(st, x, status_of(rep.state), rep.ask_again_at_ms,
                 p->has_failure_reason && (rep.state == RAIL_FAILED ||
                                           rep.state == RAIL_RETURNED)
                     ? p->failure_reason
                     : NULL) != 0)
            return -1;
        return post_to_ledger(st, x, from);
    }
    default: /* waiting for people, or ended: nothing for the worker */
        return pay_reschedule(x, false, 0);
    }
}

/* On the writer, in its transaction, the payment claimed: advances it if it is still due. */
static int step_work(struct job_step *st)
{
    struct req *r = &st->r;
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, st->id, NULL, x);
    if (found < 0)
        return -1;
    if (found == 0 || !x->has_next_step_at || x->next_step_at > st->now)
        return 0; /* gone or moved on meanwhile */
    if (x->obj.version != st->version)
        return 0; /* changed since the round picked it (an edit to its amount or payee): that
                   * change may be visible before it is durable, and a rail is told only what a
                   * crash cannot take back, so the next round takes it, once durable */
    return advance(st, x);
}

static struct job_step steps[BATCH];
static struct job_steps due = JOB_STEPS_INIT("settlement", "payments", step_work, steps, BATCH);

/* One round's database part (the job's run): every payment due now, at most BATCH, picked
 * into steps. How many, or -1. The job runner then waits until what this read is durable
 * before the act (job_steps_run): a rail is told only of durable payments, since an approval
 * a crash could still take back must not become money sent (runtime/job_runner.h). */
static int settle_pick(void)
{
    int64_t now = clock_now_ms();
    job_steps_reset(&due);
    struct db_stmt *st = storage_prepare(
        "SELECT id, workspace_id, version FROM payments WHERE next_step_at IS NOT NULL AND "
        "next_step_at <= ? ORDER BY next_step_at, id LIMIT ?");
    if (!st)
        return -1;
    db_bind_int64(st, 1, now);
    db_bind_int64(st, 2, BATCH);
    int rc;
    struct job_step *s;
    while ((rc = db_step(st)) == DB_ROW &&
           (s = job_steps_add(&due, db_column_text(st, 0), db_column_text(st, 1), now)))
        s->version = db_column_int64(st, 2);
    db_reset(st);
    if (rc != DB_DONE && rc != DB_ROW) {
        log_error("settlement: cannot read the due payments: %s", storage_errmsg());
        return -1;
    }
    return due.n;
}

/* The round's acting part (the job's act, on durable payments only): the picked steps handed
 * to the writer, each asking the rail; waits until each step has ended. */
static int settle_act(void)
{
    return job_steps_run(&due);
}

struct job payments_settlement_job(const struct config *c)
{
    rail = rail_sandbox(c->sandbox_rail_delay_ms);
    struct job j = {.name = "settlement", .run = settle_pick, .act = settle_act, .batch = BATCH,
                    .period_ms = c->settlement_interval_ms};
    return j;
}
