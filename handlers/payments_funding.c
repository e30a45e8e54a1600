/* The payments API's trade flows: a payment funded by an FX conversion (its
 * funding_conversion_id). The rules a funding must keep when a payment is created or changed,
 * what an approval waits for (the conversion settled, no hold), and the hold the conversions
 * API puts on the payments of a conversion it cancels (payments_funding.h). The conversion is
 * read through conversions_funding (handlers/conversions.h); the payments are written by their
 * owner, payments.c (pay_save). */
#include "handlers/payments_funding.h"

#include <string.h>

#include "generated/rows_payments.h"
#include "handlers/conversions.h"
#include "handlers/payments.h"
#include "runtime/storage.h"

/* The statuses of a payment whose money is still to be paid: what a conversion funds. */
#define NOT_FINAL "('pending_approval', 'approved', 'scheduled', 'processing', 'sent')"

/* What the other payments funded by conversion_id still to be paid add up to (every payment
 * of the workspace but except, which may be ""). 0 / -1. */
static int funded_elsewhere(struct req *r, const char *conversion_id, const char *except,
                            int64_t *total)
{
    struct db_stmt *st = storage_prepare(
        "SELECT COALESCE(SUM(amount), 0) FROM payments WHERE workspace_id = ? AND "
        "funding_conversion_id = ? AND id <> ? AND status IN " NOT_FINAL);
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, conversion_id);
    db_bind_text(st, 3, except ? except : "");
    int rc = db_step(st);
    *total = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    db_reset(st);
    return rc == DB_ROW ? 0 : -1;
}

int pay_check_funding(struct req *r, const struct payment *p, const char *base)
{
    if (!p->has_funding_conversion_id)
        return 0;
    const char *id = p->funding_conversion_id;
    struct conversion_funding c;
    int found = conversions_funding(r, id, &c);
    if (found < 0)
        return -1;
    if (!found) {
        verr_add(&r->verr, base, "funding_conversion_id", "conversion_not_found",
                 "no conversion %s in this workspace", id);
        return 0;
    }
    if (strcmp(c.status, "cancelled") == 0) {
        verr_add(&r->verr, base, "funding_conversion_id", "funding_conversion_cancelled",
                 "conversion %s was cancelled", id);
        return 0;
    }
    if (strcmp(c.buy_currency, p->currency) != 0) {
        verr_add(&r->verr, base, "funding_conversion_id", "funding_currency_mismatch",
                 "conversion %s buys %s, not the payment's %s", id, c.buy_currency,
                 p->currency);
        return 0;
    }
    int64_t others = 0;
    if (funded_elsewhere(r, id, p->id, &others) != 0)
        return -1;
    /* both are at most the schema's Amount maximum: the sum cannot overflow */
    if (others + p->amount > c.buy_amount)
        verr_add(&r->verr, base, "funding_conversion_id", "funding_insufficient",
                 "conversion %s buys %lld (minor units); the payments it funds would need "
                 "%lld with this one",
                 id, (long long)c.buy_amount, (long long)(others + p->amount));
    return 0;
}

int pay_funding_allows_approval(struct req *r, const struct payment *p)
{
    if (p->has_hold_reason) {
        req_problem(r, 409, "payment_on_hold", "Payment %s is on hold (%s); it cannot be approved.",
                    p->id, p->hold_reason);
        return 0;
    }
    if (!p->has_funding_conversion_id)
        return 1;
    struct conversion_funding c;
    int found = conversions_funding(r, p->funding_conversion_id, &c);
    if (found < 0)
        return -1;
    if (!found || strcmp(c.status, "settled") != 0) {
        req_problem(r, 409, "funding_conversion_not_settled",
                    "Payment %s is funded by conversion %s, which is %s; it can be approved once "
                    "the conversion is settled.",
                    p->id, p->funding_conversion_id, found ? c.status : "gone");
        return 0;
    }
    return 1;
}

/* ---- the hold (payments_funding.h) --------------------------------------------------------- */

#define HELD_PER_ROUND 500 /* payments read at a time; every round holds what it read */

/* Holds up to HELD_PER_ROUND of conversion_id's open payments not held yet, adding how many
 * to *held: 1 when it read a full round (more may wait), 0 when none are left, -1 failure. */
static int hold_round(struct req *r, const char *conversion_id, const char *reason, int *held)
{
    struct db_stmt *st = storage_prepare(
        "SELECT id FROM payments WHERE workspace_id = ? AND funding_conversion_id = ? AND "
        "status IN ('pending_approval', 'approved', 'scheduled') AND hold_reason IS NULL "
        "ORDER BY id LIMIT ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, conversion_id);
    db_bind_int64(st, 3, HELD_PER_ROUND);
    const char **ids = arena_alloc(&r->arena, HELD_PER_ROUND * sizeof *ids);
    int n = 0, rc;
    while ((rc = db_step(st)) == DB_ROW && n < HELD_PER_ROUND)
        ids[n++] = db_column_dup(&r->arena, st, 0);
    db_reset(st);
    if (rc != DB_DONE && rc != DB_ROW)
        return -1;
    /* The hold is the system's doing (the conversion's cancellation is the caller's, and
     * audited as such by the conversions API): each payment's record names the system. */
    const char *caller = r->principal.user_id;
    for (int i = 0; i < n; i++) {
        struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
        int found = pay_load(r, ids[i], NULL, x);
        if (found <= 0)
            return -1; /* read a moment ago in this transaction */
        struct payment *p = &x->obj;
        p->hold_reason = reason;
        p->has_hold_reason = true;
        x->has_next_step_at = false; /* the settlement worker never picks it up */
        x->next_step_at = 0;
        r->principal.user_id = "system";
        int failed = pay_save(r, x, PAY_UPDATE_STATE) != 0 ||
                     pay_record_change(r, "payment.updated", p, p->status, reason) != 0;
        r->principal.user_id = caller;
        if (failed)
            return -1;
        (*held)++;
    }
    return n == HELD_PER_ROUND ? 1 : 0;
}

int payments_hold_funded_by(struct req *r, const char *conversion_id)
{
    const char *reason =
        arena_printf(&r->arena, "funding_conversion_cancelled: conversion %s was cancelled",
                     conversion_id);
    int held = 0, more;
    /* each round holds every payment it read (hold_reason set), so the next reads the rest */
    while ((more = hold_round(r, conversion_id, reason, &held)) == 1)
        ;
    return more < 0 ? -1 : held;
}
