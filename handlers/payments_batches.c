/* Batches of payments: 1 to 1000 payments ordered together, all or nothing,
 * then approved, denied or cancelled as a whole, the approval policy applied to each
 * currency's total. The items are ordinary payments (batch_id set) that the settlement worker
 * moves one by one; once approved, the batch's group status follows them. Every change writes
 * the batch's event and each item's, with their audit records, in one transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/payments.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/outbox.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

#define BATCH_PATH "/v1/payments/batches"
#define MAX_SAFE_AMOUNT INT64_C(9007199254740991)

/* A batch is struct payment_batch_row (generated/rows_payments.h, the x-table of
 * PaymentBatch): the API's batch in obj, and status: the one decided on it (pending_approval,
 * approved, denied, cancelled), from which the group status is derived; approvals_required
 * (obj.approval's required), its approval_round (the decisions that count are this round's)
 * and created_for (the acting person of obj.created_by, payments_makers.c). */
static enum payment_batch_status decided(const struct payment_batch_row *x)
{
    return payment_batch_status_parse(x->status);
}

static int db_failed(const char *what)
{
    log_error("payment batches: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- reading ----------------------------------------------------------------------------- */

static int by_currency(const void *a, const void *b)
{
    return strcmp(((const struct payment_batch_total *)a)->currency,
                  ((const struct payment_batch_total *)b)->currency);
}

/* Totals per currency (sorted by code) and counts per status, from the items. 0, or 1 when a
 * currency's total passes the largest safe amount (the caller refuses the batch). */
static int summarize(struct req *r, struct payment_batch *b)
{
    b->totals = arena_alloc(&r->arena, b->items_count * sizeof *b->totals);
    b->totals_count = 0;
    int64_t counts[PAYMENT_STATUS_CANCELLED + 1] = {0};
    int over = 0;
    for (size_t i = 0; i < b->items_count; i++) {
        const struct payment_batch_item *it = &b->items[i];
        struct payment_batch_total *t = NULL;
        for (size_t k = 0; k < b->totals_count && !t; k++)
            if (strcmp(b->totals[k].currency, it->currency) == 0)
                t = &b->totals[k];
        if (!t) {
            t = &b->totals[b->totals_count++];
            t->currency = it->currency;
            t->amount = 0;
            t->count = 0;
        }
        t->count++;
        if (it->amount > MAX_SAFE_AMOUNT - t->amount) /* both are at most 2^53 - 1 */
            over = 1;
        else
            t->amount += it->amount;
        if (it->status >= PAYMENT_STATUS_PENDING_APPROVAL && it->status <= PAYMENT_STATUS_CANCELLED)
            counts[it->status]++;
    }
    qsort(b->totals, b->totals_count, sizeof *b->totals, by_currency);
    b->counts_by_status = arena_alloc(&r->arena, PAYMENT_STATUS_CANCELLED * sizeof
                                                     *b->counts_by_status);
    b->counts_by_status_count = 0;
    for (int s = PAYMENT_STATUS_PENDING_APPROVAL; s <= PAYMENT_STATUS_CANCELLED; s++) {
        if (counts[s] == 0)
            continue;
        b->counts_by_status[b->counts_by_status_count].key = payment_status_str(s);
        b->counts_by_status[b->counts_by_status_count++].value = counts[s];
    }
    return over;
}

/* The group status of an approved batch, from its items (PaymentBatchStatus in the spec). */
static enum payment_batch_status group_status(const struct payment_batch *b)
{
    size_t waiting = 0, on_rail = 0, completed = 0, ended = 0;
    for (size_t i = 0; i < b->items_count; i++) {
        switch (b->items[i].status) {
        case PAYMENT_STATUS_PROCESSING:
        case PAYMENT_STATUS_SENT:
            on_rail++;
            break;
        case PAYMENT_STATUS_COMPLETED:
            completed++;
            break;
        case PAYMENT_STATUS_FAILED:
        case PAYMENT_STATUS_RETURNED:
            ended++;
            break;
        default: /* approved, scheduled */
            waiting++;
        }
    }
    if (on_rail > 0 || (waiting > 0 && completed + ended > 0))
        return PAYMENT_BATCH_STATUS_PROCESSING;
    if (waiting > 0)
        return PAYMENT_BATCH_STATUS_APPROVED;
    return completed == b->items_count ? PAYMENT_BATCH_STATUS_COMPLETED
           : completed == 0            ? PAYMENT_BATCH_STATUS_FAILED
                                       : PAYMENT_BATCH_STATUS_PARTIALLY_COMPLETED;
}

static int load_items(struct req *r, struct payment_batch *b)
{
    struct db_stmt *st = storage_prepare(
        "SELECT id, status, amount, currency, beneficiary_id, external_id, failure_code "
        "FROM payments WHERE batch_id = ? ORDER BY batch_position");
    if (!st)
        return -1;
    db_bind_text(st, 1, b->id);
    b->items = arena_alloc(&r->arena, (size_t)b->item_count * sizeof *b->items);
    b->items_count = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW && b->items_count < (size_t)b->item_count) {
        struct payment_batch_item *it = &b->items[b->items_count++];
        it->payment_id = db_column_dup(&r->arena, st, 0);
        it->status = payment_status_parse(db_column_dup(&r->arena, st, 1));
        it->amount = db_column_int64(st, 2);
        it->currency = db_column_dup(&r->arena, st, 3);
        it->beneficiary_id = db_column_dup(&r->arena, st, 4);
        it->external_id = db_column_dup(&r->arena, st, 5);
        it->has_external_id = it->external_id != NULL;
        it->failure_code = db_column_dup(&r->arena, st, 6);
        it->has_failure_code = it->failure_code != NULL;
    }
    db_reset(st);
    if (rc != DB_DONE && rc != DB_ROW)
        return db_failed("items");
    if (b->items_count != (size_t)b->item_count) {
        log_error("payment batches: %s has %zu items, not %lld", b->id, b->items_count,
                  (long long)b->item_count);
        return -1;
    }
    return 0;
}

static int load_decisions(struct req *r, struct payment_batch *b, int64_t round)
{
    struct payment_approval *a = b->approval;
    struct db_stmt *st = storage_prepare(
        "SELECT user_id, decision, reason, decided_at FROM batch_approvals WHERE batch_id = ? "
        "AND round = ? ORDER BY decided_at, user_id");
    if (!st)
        return -1;
    db_bind_text(st, 1, b->id);
    db_bind_int64(st, 2, round);
    return pay_read_decisions(r, st, a);
}

/* Fills the API's view from what is stored (items, decisions, totals, group status). */
static int complete(struct req *r, struct payment_batch_row *x)
{
    struct payment_batch *b = &x->obj;
    b->approval = arena_alloc(&r->arena, sizeof *b->approval);
    b->approval->required = x->approvals_required;
    if (load_items(r, b) != 0 || load_decisions(r, b, x->approval_round) != 0)
        return -1;
    summarize(r, b);
    b->status = decided(x) == PAYMENT_BATCH_STATUS_APPROVED ? group_status(b) : decided(x);
    return 0;
}

/* r's workspace's batch id: 1 found, 0 answered 404, -1 failure. */
static int batch_load(struct req *r, const char *id, struct payment_batch_row *x)
{
    int found = resource_load_current(r, &rows_payment_batch, id, NULL, x);
    if (found <= 0)
        return found;
    if (!decided(x)) {
        log_error("payment batches: %s has status %s", id, x->status);
        return -1;
    }
    return complete(r, x) == 0 ? 1 : -1;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* A new version of the batch with decided status s (and its approval round). 0 / -1. */
static int batch_set(struct req *r, struct payment_batch_row *x, enum payment_batch_status s)
{
    x->status = payment_batch_status_str(s);
    return resource_save_state(r, &rows_payment_batch, x) == 1 ? 0 : -1;
}

/* The batch's event and audit record (the batch as it is now; its status before). */
static int batch_record(struct req *r, const char *type, struct payment_batch_row *x,
                        const char *before, const char *detail)
{
    struct jsonw w;
    size_t len = 0;
    jsonw_init(&w);
    encode_payment_batch(&w, &x->obj);
    char *json = jsonw_take(&w, &len);
    jsonw_release(&w);
    int rc = json ? outbox_add(r, type, "payment_batch", x->obj.id, x->obj.version, json) : -1;
    free(json);
    if (rc != 0)
        return -1;
    return audit_change(r, type, "payment_batch", x->obj.id, before,
                        payment_batch_status_str(x->obj.status), detail);
}

/* Moves every item to s with its event (type) and audit record. 0 / -1. */
static int items_to(struct req *r, struct payment_batch_row *x, enum payment_status s,
                    const char *type, const char *detail)
{
    for (size_t i = 0; i < x->obj.items_count; i++) {
        struct payment_row *it = arena_alloc(&r->arena, sizeof *it);
        if (pay_load(r, x->obj.items[i].payment_id, NULL, it) != 1)
            return -1;
        enum payment_status before = it->obj.status;
        pay_set_status(it, s);
        if (pay_save(r, it, PAY_UPDATE_STATE) != 0 ||
            pay_record_change(r, type, &it->obj, before, detail) != 0)
            return -1;
        x->obj.items[i].status = s;
    }
    summarize(r, &x->obj);
    x->obj.status =
        decided(x) == PAYMENT_BATCH_STATUS_APPROVED ? group_status(&x->obj) : decided(x);
    return 0;
}

/* The caller's decision on the batch, copied to every item's current approval round so each
 * payment shows who decided it. 0 / -1. */
static int add_decision(struct req *r, const struct payment_batch_row *x, const char *decision,
                        const char *reason)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO batch_approvals (batch_id, round, user_id, decision, reason, decided_at) "
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
    if (rc != DB_DONE)
        return db_failed("decision");
    return pay_add_batch_decisions(r, x->obj.id, decision, reason, now);
}

/* ---- create ------------------------------------------------------------------------------ */

/* Refuses item external_ids used twice in the batch or already in the workspace. 0 / -1. */
static int check_external_ids(struct req *r, const struct payment_batch_create *c)
{
    for (size_t i = 0; i < c->items_count; i++) {
        const struct payment_create *it = &c->items[i];
        if (!it->has_external_id)
            continue;
        const char *base = verr_index(&r->arena, "/items", i);
        bool taken = false;
        for (size_t j = 0; j < i && !taken; j++)
            if (c->items[j].has_external_id &&
                strcmp(c->items[j].external_id, it->external_id) == 0) {
                verr_add(&r->verr, base, "external_id", "duplicate_external_id",
                         "item %zu already has external_id %s", j, it->external_id);
                taken = true;
            }
        if (taken)
            continue;
        if (pay_external_id_taken(r, it->external_id, NULL, &taken) != 0)
            return -1;
        if (taken)
            verr_add(&r->verr, base, "external_id", "duplicate_external_id",
                     "another payment of this workspace has external_id %s", it->external_id);
    }
    return 0;
}

static int batch_external_id_taken(struct req *r, const char *external_id, bool *taken)
{
    struct db_stmt *st = storage_prepare(
        "SELECT 1 FROM payment_batches WHERE workspace_id = ? AND external_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, external_id);
    int rc = db_step(st);
    *taken = rc == DB_ROW;
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : db_failed("external id");
}

/* The approvals the velocity rule asks of a new batch's n items (all of one maker): for each
 * beneficiary and currency, the items' total with the maker's recent payments to it (the
 * policy's window; payments_makers.c). -1 failure. */
static int64_t velocity_need(struct req *r, const struct payment_row *items, size_t n)
{
    int64_t need = 0;
    for (size_t i = 0; i < n; i++) {
        const struct payment *p = &items[i].obj;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(items[j].obj.beneficiary_id, p->beneficiary_id) == 0 &&
                   strcmp(items[j].obj.currency, p->currency) == 0;
        if (seen)
            continue; /* counted with the first item of its beneficiary and currency */
        struct payment_row group = items[i];
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(items[j].obj.beneficiary_id, p->beneficiary_id) == 0 &&
                strcmp(items[j].obj.currency, p->currency) == 0 &&
                group.obj.amount <= MAX_SAFE_AMOUNT - items[j].obj.amount)
                group.obj.amount += items[j].obj.amount;
        int64_t k = pay_approvals_needed_for(r, &group, &group.created_for, 1);
        if (k < 0)
            return -1;
        if (k > need)
            need = k;
    }
    return need;
}

int payments_create_payment_batch(struct req *r,
                                  const struct payments_create_payment_batch_request *in,
                                  struct payments_create_payment_batch_response *out)
{
    const struct payment_batch_create *c = in->body;
    struct payment_batch_row *x = arena_alloc(&r->arena, sizeof *x);
    struct payment_batch *b = &x->obj;
    struct payment_row *items = arena_alloc(&r->arena, c->items_count * sizeof *items);
    resource_new(r, &rows_payment_batch, x); /* id, workspace, version 1, times */
    b->item_count = (int64_t)c->items_count;
    b->created_by = r->principal.user_id;
    b->external_id = c->external_id;
    b->has_external_id = c->has_external_id;
    b->metadata = c->has_metadata ? c->metadata : NULL;
    b->metadata_count = c->has_metadata ? c->metadata_count : 0;
    b->approval = arena_alloc(&r->arena, sizeof *b->approval);
    b->items = arena_alloc(&r->arena, c->items_count * sizeof *b->items);
    b->items_count = c->items_count;

    x->approval_round = 1;
    for (size_t i = 0; i < c->items_count; i++) {
        struct payment_row *it = &items[i];
        int made = pay_from_create(r, &c->items[i], verr_index(&r->arena, "/items", i), it);
        if (made != 0)
            return made > 0 ? 0 : -1;
        x->created_for = it->created_for; /* the same person for every item */
        it->obj.batch_id = b->id;
        it->obj.has_batch_id = true;
        it->has_batch_position = true;
        it->batch_position = (int64_t)i;
        b->items[i] = (struct payment_batch_item){
            .payment_id = it->obj.id,
            .amount = it->obj.amount,
            .currency = it->obj.currency,
            .beneficiary_id = it->obj.beneficiary_id,
            .external_id = it->obj.external_id,
            .has_external_id = it->obj.has_external_id,
        };
    }
    if (check_external_ids(r, c) != 0)
        return -1;
    if (summarize(r, b))
        verr_add(&r->verr, "/items", NULL, "total_too_large",
                 "a currency's total passes 9007199254740991 minor units; split the batch");
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "An item of the batch breaks a payment rule.");
        return 0;
    }
    bool taken = false;
    if (b->has_external_id && batch_external_id_taken(r, b->external_id, &taken) != 0)
        return -1;
    if (taken) {
        req_problem(r, 409, "duplicate_external_id",
                    "Another payment batch of this workspace already has external_id %s.",
                    b->external_id);
        return 0;
    }
    /* The policy on each currency's total; the batch needs what its largest demand is. */
    int64_t need = 0;
    for (size_t k = 0; k < b->totals_count; k++) {
        int64_t n = pay_approvals_needed(r, b->totals[k].currency, b->totals[k].amount);
        if (n < 0)
            return -1;
        if (n > need)
            need = n;
    }
    /* The velocity rule, as for single payments: each beneficiary's total in the batch with
     * the creator's recent payments to it in that currency. */
    int64_t v = velocity_need(r, items, c->items_count);
    if (v < 0)
        return -1;
    if (v > need)
        need = v;
    b->approval->required = x->approvals_required = need;
    x->status = payment_batch_status_str(need > 0 ? PAYMENT_BATCH_STATUS_PENDING_APPROVAL
                                                  : PAYMENT_BATCH_STATUS_APPROVED);
    enum payment_status s = need > 0 ? PAYMENT_STATUS_PENDING_APPROVAL : PAYMENT_STATUS_APPROVED;
    if (resource_insert(r, &rows_payment_batch, x) != 0)
        return -1;
    for (size_t i = 0; i < c->items_count; i++) {
        struct payment_row *it = &items[i];
        it->obj.approval->required = need;
        pay_set_status(it, s);
        b->items[i].status = s;
        if (pay_save(r, it, PAY_INSERT) != 0 ||
            pay_record_change(r, "payment.created", &it->obj, 0, b->id) != 0 ||
            (need == 0 && pay_record_change(r, "payment.approved", &it->obj, s,
                                            "no approval required by the policy") != 0))
            return -1;
    }
    summarize(r, b);
    b->status = decided(x) == PAYMENT_BATCH_STATUS_APPROVED ? group_status(b) : decided(x);
    b->approval->approvers = arena_alloc(&r->arena, sizeof *b->approval->approvers);
    if (batch_record(r, "payment_batch.created", x, NULL, NULL) != 0 ||
        (need == 0 && batch_record(r, "payment_batch.approved", x, "approved",
                                   "no approval required by the policy") != 0))
        return -1;
    out->status = 201;
    out->body_201 = b;
    out->location = arena_printf(&r->arena, BATCH_PATH "/%s", b->id);
    return 0;
}

/* ---- read -------------------------------------------------------------------------------- */

int payments_get_payment_batch(struct req *r, const struct payments_get_payment_batch_request *in,
                               struct payments_get_payment_batch_response *out)
{
    struct payment_batch_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = batch_load(r, in->id, x);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = &x->obj;
    return 0;
}

/* ---- decisions --------------------------------------------------------------------------- */

static void invalid_transition(struct req *r, const struct payment_batch_row *x, const char *action,
                               const char *allowed)
{
    req_problem(r, 409, "invalid_transition", "Payment batch %s is %s; it can be %s only when %s.",
                x->obj.id, payment_batch_status_str(x->obj.status), action, allowed);
}

/* The checks every decision on a batch shares: pending, and the people rules. 1 go on, 0
 * answered. */
static int may_decide(struct req *r, const struct payment_batch_row *x, const char *action)
{
    const char *what = arena_printf(&r->arena, "payment batch %s", x->obj.id);
    if (!pay_decider_is_person(r, what))
        return 0;
    if (decided(x) != PAYMENT_BATCH_STATUS_PENDING_APPROVAL) {
        invalid_transition(r, x, action, "pending_approval");
        return 0;
    }
    return pay_may_decide(r, what, x->obj.created_by, x->created_for, x->obj.approval);
}

/* The caller's role limits against each currency's total: 1 go on, 0 answered 403, -1. */
static int within_limits(struct req *r, const struct payment_batch_row *x)
{
    int ok = 1;
    for (size_t k = 0; k < x->obj.totals_count && ok == 1; k++)
        ok = pay_within_limit(r, "this batch's total", x->obj.totals[k].currency,
                              x->obj.totals[k].amount);
    return ok;
}

/* Every item's beneficiary checked again, as for a single payment: 1 go on, 0 answered 422
 * naming the first item that cannot be paid, -1 failure. */
static int payees_payable(struct req *r, const struct payment_batch_row *x)
{
    for (size_t i = 0; i < x->obj.items_count; i++) {
        const struct payment_batch_item *it = &x->obj.items[i];
        struct payment p = {.id = it->payment_id, .beneficiary_id = it->beneficiary_id,
                            .currency = it->currency};
        const char *why = NULL;
        bool failed = false;
        const char *code = pay_beneficiary_refusal(r, &p, &why, &failed);
        if (failed)
            return -1;
        if (code) {
            req_problem(r, 422, code, "Payment batch %s cannot be approved: item %zu (%s): %s.",
                        x->obj.id, i, it->payment_id, why);
            return 0;
        }
    }
    return 1;
}

/* Approvals are given for the items' beneficiaries as they were (as for a single payment,
 * pay_approvals_still_hold): when one's approval round moved on since the batch's approval
 * round started, the approvals collected are voided - a new round for the batch and every
 * item, recording the beneficiaries as they are now, with the batch's and the items' events
 * and audit records, kept although the answer is 409 beneficiary_changed. 1 they still hold,
 * 0 answered, -1 failure. */
static int approvals_still_hold(struct req *r, struct payment_batch_row *x)
{
    struct db_stmt *st = storage_prepare(
        "SELECT p.id, p.beneficiary_id FROM payments p JOIN beneficiaries b "
        "ON b.id = p.beneficiary_id WHERE p.batch_id = ? AND p.beneficiary_round IS NOT NULL "
        "AND p.beneficiary_round <> b.approval_round ORDER BY p.batch_position LIMIT 1");
    if (!st)
        return -1;
    db_bind_text(st, 1, x->obj.id);
    int rc = db_step(st);
    const char *item = rc == DB_ROW ? db_column_dup(&r->arena, st, 0) : NULL;
    const char *ben = rc == DB_ROW ? db_column_dup(&r->arena, st, 1) : NULL;
    db_reset(st);
    if (rc == DB_DONE)
        return 1;
    if (rc != DB_ROW)
        return db_failed("the items' beneficiaries");
    struct payment_batch *b = &x->obj;
    int64_t received = b->approval->received;
    const char *detail = arena_printf(&r->arena,
                                      "approvals voided (beneficiary_changed): beneficiary %s "
                                      "of item %s changed and was approved again",
                                      ben, item);
    x->approval_round++; /* written by batch_set below */
    for (size_t i = 0; i < b->items_count; i++) {
        struct payment_row *it = arena_alloc(&r->arena, sizeof *it);
        if (pay_load(r, b->items[i].payment_id, NULL, it) != 1)
            return -1;
        it->approval_round++;
        it->obj.approval->received = 0;
        it->obj.approval->approvers_count = 0;
        if (pay_beneficiary_round(r, it->obj.beneficiary_id, &it->beneficiary_round) != 0 ||
            pay_save(r, it, PAY_UPDATE_STATE) != 0 ||
            pay_record_change(r, "payment.updated", &it->obj, it->obj.status, detail) != 0)
            return -1;
    }
    if (batch_set(r, x, PAYMENT_BATCH_STATUS_PENDING_APPROVAL) != 0 ||
        load_decisions(r, b, x->approval_round) != 0 ||
        batch_record(r, "payment_batch.updated", x, "pending_approval", detail) != 0)
        return -1;
    r->keep_writes = true; /* the refusal itself changed the batch */
    req_problem(r, 409, "beneficiary_changed",
                "The bank details of beneficiary %s (item %s) changed and were approved again "
                "after approvals of payment batch %s were given; those %lld approval(s) no "
                "longer count. Review the batch with its beneficiaries as they are now and "
                "approve it again.",
                ben, item, b->id, (long long)received);
    return 0;
}

int payments_approve_payment_batch(struct req *r,
                                   const struct payments_approve_payment_batch_request *in,
                                   struct payments_approve_payment_batch_response *out)
{
    struct payment_batch_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = batch_load(r, in->id, x);
    if (found <= 0 || (found = may_decide(r, x, "approved")) <= 0 ||
        (found = within_limits(r, x)) <= 0 || (found = payees_payable(r, x)) <= 0 ||
        (found = approvals_still_hold(r, x)) <= 0)
        return found;
    if (add_decision(r, x, "approved", NULL) != 0 ||
        load_decisions(r, &x->obj, x->approval_round) != 0)
        return -1;
    struct payment_batch *b = &x->obj;
    if (b->approval->received >= b->approval->required) {
        if (batch_set(r, x, PAYMENT_BATCH_STATUS_APPROVED) != 0 ||
            items_to(r, x, PAYMENT_STATUS_APPROVED, "payment.approved",
                     arena_printf(&r->arena, "batch %s approved", b->id)) != 0 ||
            batch_record(r, "payment_batch.approved", x, "pending_approval", NULL) != 0)
            return -1;
    } else if (batch_set(r, x, PAYMENT_BATCH_STATUS_PENDING_APPROVAL) != 0 ||
               audit_change(r, "payment_batch.approval_recorded", "payment_batch", b->id,
                            "pending_approval", "pending_approval", NULL) != 0) {
        return -1;
    }
    out->status = 200;
    out->body_200 = b;
    return 0;
}

int payments_deny_payment_batch(struct req *r,
                                const struct payments_deny_payment_batch_request *in,
                                struct payments_deny_payment_batch_response *out)
{
    struct payment_batch_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = batch_load(r, in->id, x);
    if (found <= 0 || (found = may_decide(r, x, "denied")) <= 0)
        return found;
    const char *reason = in->body->reason;
    if (add_decision(r, x, "denied", reason) != 0 ||
        load_decisions(r, &x->obj, x->approval_round) != 0 ||
        batch_set(r, x, PAYMENT_BATCH_STATUS_DENIED) != 0 ||
        items_to(r, x, PAYMENT_STATUS_DENIED, "payment.denied", reason) != 0 ||
        batch_record(r, "payment_batch.denied", x, "pending_approval", reason) != 0)
        return -1;
    out->status = 200;
    out->body_200 = &x->obj;
    return 0;
}

int payments_cancel_payment_batch(struct req *r,
                                  const struct payments_cancel_payment_batch_request *in,
                                  struct payments_cancel_payment_batch_response *out)
{
    struct payment_batch_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = batch_load(r, in->id, x);
    if (found <= 0)
        return found;
    struct payment_batch *b = &x->obj;
    /* Cancellable while no item has reached the rail: the group is still pending or approved. */
    if (b->status != PAYMENT_BATCH_STATUS_PENDING_APPROVAL &&
        b->status != PAYMENT_BATCH_STATUS_APPROVED) {
        invalid_transition(r, x, "cancelled",
                           "pending_approval, or approved with no item processing yet");
        return 0;
    }
    if (strcmp(b->created_by, r->principal.user_id) != 0 &&
        !(r->principal.scopes & SCOPE_WORKSPACE_ADMIN)) {
        req_problem(r, 403, "not_creator",
                    "Only the creator of payment batch %s or a workspace administrator may "
                    "cancel it.",
                    b->id);
        return 0;
    }
    const char *before = payment_batch_status_str(b->status);
    if (batch_set(r, x, PAYMENT_BATCH_STATUS_CANCELLED) != 0 ||
        items_to(r, x, PAYMENT_STATUS_CANCELLED, "payment.cancelled",
                 arena_printf(&r->arena, "batch %s cancelled", b->id)) != 0 ||
        batch_record(r, "payment_batch.cancelled", x, before, NULL) != 0)
        return -1;
    out->status = 200;
    out->body_200 = b;
    return 0;
}
