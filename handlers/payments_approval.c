/* The payments API: approvals. The workspace's approval policy (GET/PUT
 * /v1/payments/approval-policy: amount tiers per currency and the velocity window) and how many
 * approvals a payment needs under it; approving and denying a payment (POST
 * /v1/payments/{id}/approve, /deny) and the rules every decision shares (pay_may_decide: not
 * one's own, one decision per person; pay_within_limit: the role's approval limit), which the
 * beneficiaries and batches use too. Who counts as a maker: payments_makers.c. */
#include "generated/payments_api.h"

#include <string.h>

#include "handlers/admin.h"
#include "handlers/payments.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

static int db_failed(const char *what)
{
    log_error("payments: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- approval policy ---- */

/* The workspace's approval policy (x-table singleton: one row per workspace), 412 for a stale
 * if_match (NULL: none); never set, it is the default: no tiers, a 24-hour velocity window,
 * version 1. *stored (may be NULL): whether it was ever set. 1 / 0 answered / -1. */
static int load_policy(struct req *r, const char *if_match, struct approval_policy *pol,
                       bool *stored)
{
    bool set = false;
    int rc = resource_load_singleton(r, &rows_approval_policy, if_match, pol, &set);
    if (rc == 1 && !set) {
        pol->velocity_window_hours = 24;
        pol->updated_at = "1970-01-01T00:00:00.000Z";
    }
    if (stored)
        *stored = set;
    return rc;
}

/* Approvals pol asks for amount in currency: the largest tier it reaches; *top (may be NULL)
 * is the largest min_amount of the currency's tiers (0: none). */
static int64_t tier_need(const struct approval_policy *pol, const char *currency, int64_t amount,
                         int64_t *top)
{
    int64_t need = 0, largest = 0;
    for (size_t i = 0; i < pol->tiers_count; i++) {
        const struct approval_tier *t = &pol->tiers[i];
        if (strcmp(t->currency, currency) != 0)
            continue;
        if (t->min_amount > largest)
            largest = t->min_amount;
        if (amount >= t->min_amount && t->approvals_required > need)
            need = t->approvals_required;
    }
    if (top)
        *top = largest;
    return need;
}

/* Approvals a payment of amount in currency needs: the largest tier it reaches. -1 failure. */
int64_t pay_approvals_needed(struct req *r, const char *currency, int64_t amount)
{
    struct approval_policy pol;
    if (load_policy(r, NULL, &pol, NULL) != 1)
        return -1;
    return tier_need(&pol, currency, amount, NULL);
}

/* The velocity rule (ApprovalPolicy.velocity_window_hours): splitting a payment into several
 * below a tier does not escape it, since the tiers apply to the total of one person's
 * payments to one beneficiary in one currency within the window (by created_at; the
 * statuses that count are in payments_makers.c). */
int64_t pay_approvals_needed_for(struct req *r, const struct payment_row *x,
                                 const char *const *persons, size_t n)
{
    struct approval_policy pol;
    if (load_policy(r, NULL, &pol, NULL) != 1)
        return -1;
    int64_t top = 0, need = tier_need(&pol, x->obj.currency, x->obj.amount, &top);
    if (pol.velocity_window_hours <= 0 || x->obj.amount >= top)
        return need; /* no window, or the largest tier is reached already */
    for (size_t i = 0; i < n; i++) {
        int64_t total = 0;
        if (i > 0 && strcmp(persons[i], persons[0]) == 0)
            continue;
        if (pay_velocity_total(r, x, persons[i], pol.velocity_window_hours, top, &total) != 0)
            return -1;
        int64_t k = tier_need(&pol, x->obj.currency, total, NULL);
        if (k > need)
            need = k;
    }
    return need;
}

/* The policy's tiers and window as JSON text (for the audit record), in r->arena. */
static const char *policy_json(struct req *r, const struct approval_policy *pol)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "tiers");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < pol->tiers_count; i++)
        encode_approval_tier(&w, &pol->tiers[i]);
    jsonw_array_end(&w);
    jsonw_key(&w, "velocity_window_hours");
    jsonw_int(&w, pol->velocity_window_hours);
    jsonw_object_end(&w);
    return resource_json_text(&r->arena, &w);
}

int payments_get_approval_policy(struct req *r,
                                 const struct payments_get_approval_policy_request *in,
                                 struct payments_get_approval_policy_response *out)
{
    (void)in;
    struct approval_policy *pol = arena_alloc(&r->arena, sizeof *pol);
    if (load_policy(r, NULL, pol, NULL) != 1)
        return -1;
    out->status = 200;
    out->body_200 = pol;
    return 0;
}

int payments_put_approval_policy(struct req *r,
                                 const struct payments_put_approval_policy_request *in,
                                 struct payments_put_approval_policy_response *out)
{
    const struct approval_policy_update *u = in->body;
    struct approval_policy *pol = arena_alloc(&r->arena, sizeof *pol);
    bool stored = false;
    int rc = load_policy(r, in->has_if_match ? in->if_match : NULL, pol, &stored);
    if (rc <= 0)
        return rc;
    const char *before = stored ? policy_json(r, pol) : NULL;
    for (size_t i = 0; i < u->tiers_count; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(u->tiers[i].currency, u->tiers[j].currency) == 0 &&
                u->tiers[i].min_amount == u->tiers[j].min_amount)
                verr_add(&r->verr, "/tiers", arena_printf(&r->arena, "%zu", i), "duplicate_tier",
                         "the same currency and min_amount as tier %zu", j);
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The policy has duplicate tiers.");
        return 0;
    }
    pol->tiers = u->tiers;
    pol->tiers_count = u->tiers_count;
    pol->velocity_window_hours = u->velocity_window_hours; /* the decoder's default: 24 */
    /* The policy never set is version 1 (If-Match has no "v0"), so the first setting makes
     * version 2: were it 1, an If-Match read before it would still match. */
    if ((rc = resource_save_singleton(r, &rows_approval_policy, pol)) <= 0)
        return rc;
    /* The control as it was and as it is now: tiers and velocity window, each as JSON. */
    if (audit_change(r, "payments.approval_policy.updated", "approval_policy",
                     r->principal.workspace_id, before, policy_json(r, pol), NULL) != 0)
        return -1;
    out->status = 200;
    out->body_200 = pol;
    return 0;
}

/* ---- decisions ---- */

/* Records one decision of the current round. 0 / -1. */
static int add_decision(struct req *r, const struct payment_row *x, const char *decision,
                        const char *reason)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO payment_approvals (payment_id, round, user_id, decision, reason, decided_at) "
        "VALUES (?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    db_bind_text(st, 1, x->obj.id);
    db_bind_int64(st, 2, x->approval_round);
    db_bind_text(st, 3, r->principal.user_id);
    db_bind_text(st, 4, decision);
    db_bind_text(st, 5, reason);
    db_bind_text(st, 6, now);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE || pay_note_decision(x->obj.id) != 0)
        return db_failed("decision");
    return 0;
}

int pay_add_batch_decisions(struct req *r, const char *batch_id, const char *decision,
                            const char *reason, const char *now)
{
    struct db_stmt *st = storage_prepare(
        "INSERT INTO payment_approvals (payment_id, round, user_id, decision, reason, decided_at) "
        "SELECT id, approval_round, ?, ?, ?, ? FROM payments WHERE batch_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.user_id);
    db_bind_text(st, 2, decision);
    db_bind_text(st, 3, reason); /* NULL binds NULL */
    db_bind_text(st, 4, now);
    db_bind_text(st, 5, batch_id);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE || pay_note_batch_decisions(batch_id, now) != 0)
        return db_failed("item decisions");
    return 0;
}

int pay_may_decide(struct req *r, const char *what, const char *created_by,
                   const char *created_for, const struct payment_approval *a)
{
    const char *me = pay_person(r);
    const char *maker = !me ? NULL : pay_person_of(r, created_for ? created_for : created_by);
    if (!maker)
        return pay_person_missing(r);
    if (strcmp(maker, me) == 0) {
        req_problem(r, 403, "self_approval",
                    "You created %s (yourself, or through a service-account token you minted); "
                    "someone else must approve or deny it.",
                    what);
        return 0;
    }
    for (size_t i = 0; i < a->approvers_count; i++) {
        const char *who = pay_person_of(r, a->approvers[i].user_id);
        if (!who)
            return pay_person_missing(r);
        if (strcmp(who, me) == 0) {
            req_problem(r, 409, "already_approved",
                        "You (or a service account acting for you) already decided on %s; one "
                        "person decides once.",
                        what);
            return 0;
        }
    }
    return 1;
}

int pay_within_limit(struct req *r, const char *what, const char *currency, int64_t amount)
{
    char role[64];
    int64_t limit = 0;
    bool limited = false;
    int has_role = admin_principal_role(r->principal.workspace_id, r->principal.user_id, role,
                                        sizeof role);
    if (has_role < 0 || (has_role && admin_role_approval_limit(r->principal.workspace_id, role,
                                                               currency, &limit, &limited) != 0))
        return -1;
    if (limited && amount > limit) {
        req_problem(r, 403, "approval_limit_exceeded",
                    "Your role %s may approve at most %lld (minor units) in %s; %s is %lld.", role,
                    (long long)limit, currency, what, (long long)amount);
        return 0;
    }
    return 1;
}

/* The checks every decision on a payment shares: not a batch item, pending, and the people
 * rules. 1 go on, 0 answered. */
static int may_decide(struct req *r, const struct payment_row *x, const char *action)
{
    const struct payment *p = &x->obj;
    const char *what = arena_printf(&r->arena, "payment %s", p->id);
    if (!pay_decider_is_person(r, what) || pay_part_of_batch(r, p))
        return 0;
    if (p->status != PAYMENT_STATUS_PENDING_APPROVAL) {
        pay_invalid_transition(r, p, action, "pending_approval");
        return 0;
    }
    int ok = pay_may_decide(r, what, p->created_by, x->created_for, p->approval);
    if (ok <= 0)
        return ok;
    /* Whoever changed what the approvals are for is a maker too (any round, any status). */
    unsigned fields = 0;
    const char *me = pay_person(r);
    if (!me)
        return pay_person_missing(r);
    if ((ok = pay_maker_fields(p->id, me, &fields)) < 0)
        return -1;
    if (ok) {
        req_problem(r, 403, "maker_cannot_approve",
                    "You changed %s of payment %s, which makes you one of its makers; someone "
                    "who did not make it must approve or deny it.",
                    pay_fields_text(r, fields), p->id);
        return 0;
    }
    return 1;
}

int payments_approve_payment(struct req *r, const struct payments_approve_payment_request *in,
                             struct payments_approve_payment_response *out)
{
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, NULL, x);
    if (found <= 0 || (found = may_decide(r, x, "approved")) <= 0)
        return found;
    struct payment *p = &x->obj;
    if ((found = pay_funding_allows_approval(r, p)) <= 0 ||
        (found = pay_within_limit(r, "this payment", p->currency, p->amount)) <= 0)
        return found;
    const char *why = NULL;
    bool failed = false;
    const char *refusal = pay_beneficiary_refusal(r, p, &why, &failed);
    if (failed)
        return -1;
    if (refusal) {
        req_problem(r, 422, refusal, "Payment %s cannot be approved: %s.", p->id, why);
        return 0;
    }
    if ((found = pay_approvals_still_hold(r, x)) <= 0)
        return found;
    if (add_decision(r, x, "approved", NULL) != 0 || pay_load_approvers(r, x) != 0)
        return -1;
    bool complete = p->approval->received >= p->approval->required;
    if (complete)
        pay_set_status(x, PAYMENT_STATUS_APPROVED);
    if (pay_save(r, x, PAY_UPDATE_STATE) != 0)
        return -1;
    if (complete ? pay_record_change(r, "payment.approved", p, PAYMENT_STATUS_PENDING_APPROVAL, NULL)
                 : audit_change(r, "payment.approval_recorded", "payment", p->id,
                                "pending_approval", "pending_approval", NULL))
        return -1;
    out->status = 200;
    out->body_200 = p;
    return 0;
}

int payments_deny_payment(struct req *r, const struct payments_deny_payment_request *in,
                          struct payments_deny_payment_response *out)
{
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, NULL, x);
    if (found <= 0 || (found = may_decide(r, x, "denied")) <= 0)
        return found;
    struct payment *p = &x->obj;
    if (add_decision(r, x, "denied", in->body->reason) != 0 || pay_load_approvers(r, x) != 0)
        return -1;
    pay_set_status(x, PAYMENT_STATUS_DENIED);
    if (pay_save(r, x, PAY_UPDATE_STATE) != 0 ||
        pay_record_change(r, "payment.denied", p, PAYMENT_STATUS_PENDING_APPROVAL,
                          in->body->reason) != 0)
        return -1;
    out->status = 200;
    out->body_200 = p;
    return 0;
}
