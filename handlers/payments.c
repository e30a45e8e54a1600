/* The payments API: payment orders (after Modern Treasury's PaymentOrder): the payment row
 * (load, save, the rules a payment must keep) and the operations on /v1/payments and
 * /v1/payments/{id} (create, get, list, update, cancel), every change written with its domain
 * event (runtime/outbox.c) and audit record (runtime/audit.c) in the same transaction.
 * Approving, denying and the approval policy are in payments_approval.c, a page as CSV in
 * payments_csv.c, a payment's timeline in payments_events.c, beneficiaries in
 * payments_beneficiaries.c, batches in payments_batches.c, who may decide in
 * payments_makers.c. */
#include "generated/payments_api.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/payments.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/outbox.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

static int db_failed(const char *what)
{
    log_error("payments: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* pay_page_rows' rows: each into the payment it names. */
struct page_rows {
    struct req *r;
    struct payment **items;
    void (*row)(struct req *r, struct db_stmt *st, struct payment *item);
};

static int page_rows_row(void *ctx, struct db_stmt *st, size_t i)
{
    const struct page_rows *p = ctx;
    p->row(p->r, st, p->items[i]);
    return 0;
}

int pay_page_rows(struct req *r, struct payment **items, size_t n, const char *sql,
                  void (*row)(struct req *r, struct db_stmt *st, struct payment *item),
                  const char *what)
{
    const char **ids = arena_alloc(&r->arena, (n ? n : 1) * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = items[i]->id;
    struct page_rows p = {r, items, row};
    return storage_rows_by_id(sql, ids, n, 0, page_rows_row, &p, what) < 0 ? -1 : 0;
}

/* ==== payments ============================================================================ */

#define PAY_PATH "/v1/payments"
/* The ISO 20022 status code of a status, where one applies: approved ACTC, processing and sent
 * ACSP, completed ACSC, failed RJCT, cancelled CANC. */
static enum payment_iso20022_status iso_status(enum payment_status s)
{
    switch (s) {
    case PAYMENT_STATUS_APPROVED:
    case PAYMENT_STATUS_SCHEDULED:
        return PAYMENT_ISO20022_STATUS_ACTC;
    case PAYMENT_STATUS_PROCESSING:
    case PAYMENT_STATUS_SENT:
        return PAYMENT_ISO20022_STATUS_ACSP;
    case PAYMENT_STATUS_COMPLETED:
        return PAYMENT_ISO20022_STATUS_ACSC;
    case PAYMENT_STATUS_FAILED:
        return PAYMENT_ISO20022_STATUS_RJCT;
    case PAYMENT_STATUS_CANCELLED:
        return PAYMENT_ISO20022_STATUS_CANC;
    default:
        return 0;
    }
}

void pay_set_status(struct payment_row *x, enum payment_status s)
{
    struct payment *p = &x->obj;
    p->status = s;
    p->iso20022_status = iso_status(s);
    p->has_iso20022_status = p->iso20022_status != 0;
    x->has_next_step_at = s == PAYMENT_STATUS_APPROVED;
    x->next_step_at = 0;
}

/* The decisions of the payment's current round, in order. 0 / -1. */
int pay_load_approvers(struct req *r, struct payment_row *x)
{
    struct payment_approval *a = arena_alloc(&r->arena, sizeof *a);
    struct db_stmt *st = storage_prepare(
        "SELECT user_id, decision, reason, decided_at FROM payment_approvals "
        "WHERE payment_id = ? AND round = ? ORDER BY decided_at, user_id");
    if (!st)
        return -1;
    db_bind_text(st, 1, x->obj.id);
    db_bind_int64(st, 2, x->approval_round);
    a->required = x->obj.approval ? x->obj.approval->required : 0;
    x->obj.approval = a;
    return pay_read_decisions(r, st, a);
}

#define MAX_DECISIONS 20

/* One decision from the row's columns col.. (user_id, decision, reason, decided_at), appended
 * to a (at most MAX_DECISIONS; the array grows as they come: most payments have none). */
static void read_decision(struct req *r, struct db_stmt *st, int col, struct payment_approval *a)
{
    if (a->approvers_count >= MAX_DECISIONS)
        return;
    a->approvers = arena_grow(&r->arena, a->approvers, a->approvers_count, sizeof *a->approvers);
    struct payment_approver *d = &a->approvers[a->approvers_count++];
    d->user_id = db_column_dup(&r->arena, st, col);
    d->decision = payment_approver_decision_parse(db_column_dup(&r->arena, st, col + 1));
    d->reason = db_column_dup(&r->arena, st, col + 2);
    d->has_reason = d->reason != NULL;
    d->decided_at = db_column_dup(&r->arena, st, col + 3);
    if (d->decision == PAYMENT_APPROVER_DECISION_APPROVED)
        a->received++;
}

int pay_read_decisions(struct req *r, struct db_stmt *st, struct payment_approval *a)
{
    a->approvers = NULL;
    a->approvers_count = 0;
    a->received = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW && a->approvers_count < MAX_DECISIONS)
        read_decision(r, st, 0, a);
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : db_failed("approvals");
}

/* What the row leaves to the handler (x-table computed): the status's ISO code, the approval
 * (its decisions come after) and the creator as the first maker. */
static void pay_complete(struct req *r, struct payment_row *x)
{
    struct payment *p = &x->obj;
    p->iso20022_status = iso_status(p->status);
    p->has_iso20022_status = p->iso20022_status != 0;
    p->approval = arena_alloc(&r->arena, sizeof *p->approval);
    p->approval->required = x->approvals_required;
    pay_set_creator(r, x);
}

/* A decision of the page's payment p (row columns 1..), one of its current round's. */
static void page_decision(struct req *r, struct db_stmt *st, struct payment *p)
{
    read_decision(r, st, 1, p->approval);
}

/* The current round's decisions of a page of payments, in one query (not one per row). The
 * round is looked up for each decision found, not for each payment of the page: most have
 * none (a join from payments looked every payment of the page up a second time). */
static int load_page_approvers(struct req *r, struct payment **items, size_t n)
{
    return pay_page_rows(r, items, n,
                         "SELECT a.payment_id, a.user_id, a.decision, a.reason, a.decided_at "
                         "FROM payment_approvals a WHERE a.payment_id IN " DB_IN_LIST " "
                         "AND a.round = (SELECT p.approval_round FROM payments p "
                         "WHERE p.id = a.payment_id) "
                         "ORDER BY a.payment_id, a.decided_at, a.user_id",
                         page_decision, "payments: page approvals");
}

int pay_load(struct req *r, const char *id, const char *if_match, struct payment_row *x)
{
    int found = resource_load_current(r, &rows_payment, id, if_match, x); /* 404, 412 */
    if (found <= 0)
        return found;
    pay_complete(r, x);
    return pay_load_approvers(r, x) != 0 || pay_load_makers(r, &x->obj) != 0 ? -1 : 1;
}

/* The payment as JSON text, as GET answers it (for events). Lives in r->arena. */
static const char *payment_json(struct req *r, const struct payment *p)
{
    struct jsonw w;
    jsonw_init(&w);
    encode_payment(&w, p);
    return resource_json_text(&r->arena, &w);
}

/* pay_record_change with the payment's JSON already rendered (json: payment_json(r, p)). */
static int record_change_json(struct req *r, const char *type, const struct payment *p,
                              enum payment_status before, const char *detail, const char *json)
{
    if (!json || outbox_add(r, type, "payment", p->id, p->version, json) != 0)
        return -1;
    return audit_change(r, type, "payment", p->id, before ? payment_status_str(before) : NULL,
                        payment_status_str(p->status), detail);
}

/* The event and the audit record of a state change, in the request's transaction. */
int pay_record_change(struct req *r, const char *type, const struct payment *p,
                         enum payment_status before, const char *detail)
{
    return record_change_json(r, type, p, before, detail, payment_json(r, p));
}

/* ---- rules ---- */

void pay_today(char out[11])
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    memcpy(out, now, 10);
    out[10] = '\0';
}

/* Adds a violation, at base's members, for every payment rule p breaks: a currency with minor
 * units, an effective date not in the past, a beneficiary of the workspace that is approved,
 * not archived and paid in the payment's currency. 0 / -1. */
static int check_payment(struct req *r, const struct payment *p, bool date_given, const char *base)
{
    char day[11];
    pay_today(day);
    if (format_currency_exponent(p->currency) < 0)
        verr_add(&r->verr, base, "currency", "currency_not_payable",
                 "%s has no minor units and cannot be paid", p->currency);
    if (date_given && strcmp(p->effective_date, day) < 0)
        verr_add(&r->verr, base, "effective_date", "effective_date_in_past",
                 "must be today (%s, UTC) or later", day);
    struct beneficiary b;
    switch (pay_beneficiary_load(r, p->beneficiary_id, &b)) {
    case -1:
        return -1;
    case 0:
        verr_add(&r->verr, base, "beneficiary_id", "beneficiary_not_found",
                 "no beneficiary %s in this workspace", p->beneficiary_id);
        return 0;
    }
    if (b.status == BENEFICIARY_STATUS_ARCHIVED)
        verr_add(&r->verr, base, "beneficiary_id", "beneficiary_archived", "%s is archived",
                 b.id);
    else if (b.approval_status != APPROVAL_STATUS_APPROVED)
        verr_add(&r->verr, base, "beneficiary_id", "beneficiary_not_approved",
                 "%s is %s; payments need an approved beneficiary", b.id,
                 approval_status_str(b.approval_status));
    if (strcmp(b.currency, p->currency) != 0)
        verr_add(&r->verr, base, "currency", "currency_mismatch",
                 "the beneficiary is paid in %s", b.currency);
    return 0;
}

int pay_external_id_taken(struct req *r, const char *external_id, const char *except,
                                     bool *taken)
{
    struct db_stmt *st = storage_prepare(
        "SELECT 1 FROM payments WHERE workspace_id = ? AND external_id = ? AND id <> ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, external_id);
    db_bind_text(st, 3, except ? except : "");
    int rc = db_step(st);
    *taken = rc == DB_ROW;
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : -1;
}

int pay_save(struct req *r, struct payment_row *x, enum pay_write how)
{
    x->approvals_required = x->obj.approval->required;
    x->has_beneficiary_round = x->beneficiary_round > 0; /* 0: not known */
    if (how == PAY_INSERT)
        return resource_insert(r, &rows_payment, x) == 0 ? 0 : -1;
    /* loaded in this transaction: another writer cannot have come first */
    return (how == PAY_UPDATE ? resource_save(r, &rows_payment, x)
                              : resource_save_state(r, &rows_payment, x)) == 1
               ? 0
               : -1;
}

int pay_reschedule(const struct payment_row *x, bool has_next, int64_t at)
{
    struct db_stmt *st = storage_prepare(
        "UPDATE payments SET next_step_at = ? WHERE id = ? AND version = ?");
    if (!st)
        return -1;
    if (has_next)
        db_bind_int64(st, 1, at);
    else
        db_bind_null(st, 1);
    db_bind_text(st, 2, x->obj.id);
    db_bind_int64(st, 3, x->obj.version);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : -1;
}

int pay_note_decision(const char *payment_id)
{
    const char *v[] = {payment_id};
    return storage_exec_texts("UPDATE payments SET decided_round = approval_round WHERE id = ?",
                              v, 1);
}

int pay_note_batch_decisions(const char *batch_id, const char *now)
{
    /* The items' approval (who decided) is part of each payment: a new version of each, so
     * that its ETag moves with what it shows (the caller saves none of them when the batch
     * still waits for more approvals). */
    const char *v[] = {now, batch_id};
    return storage_exec_texts("UPDATE payments SET decided_round = approval_round, "
                              "version = version + 1, updated_at = ? WHERE batch_id = ?",
                              v, 2);
}

int pay_note_maker(const char *payment_id)
{
    const char *v[] = {payment_id};
    return storage_exec_texts("UPDATE payments SET has_makers = 1 WHERE id = ? AND has_makers = 0",
                              v, 1);
}

/* ---- operations ---- */

int pay_from_create(struct req *r, const struct payment_create *c, const char *base,
                    struct payment_row *x)
{
    struct payment *p = &x->obj;
    char day[11];
    pay_today(day);
    resource_new(r, &rows_payment, x); /* id, workspace, version 1, times */
    merge_payment_create_into_payment(&r->arena, c, p);
    if (!c->has_priority)
        p->priority = PAYMENT_PRIORITY_NORMAL;
    if (!c->has_effective_date)
        p->effective_date = arena_strdup(&r->arena, day);
    p->created_by = r->principal.user_id;
    p->approval = arena_alloc(&r->arena, sizeof *p->approval);
    x->approval_round = 1;
    /* The maker: a service-account token's payment is made by the person who minted it. */
    if (!(x->created_for = pay_person(r)))
        return pay_person_missing(r) == 0 ? 1 : -1;
    pay_set_creator(r, x);

    /* The approvals will be given for the beneficiary as it is now. */
    if (check_payment(r, p, c->has_effective_date, base) != 0 ||
        pay_beneficiary_round(r, p->beneficiary_id, &x->beneficiary_round) != 0)
        return -1;
    /* a batch is approved as a whole: no item can wait for its own conversion */
    if (base[0] && c->has_funding_conversion_id)
        verr_add(&r->verr, base, "funding_conversion_id", "funding_not_in_batch",
                 "a batch item cannot name a funding conversion");
    else if (pay_check_funding(r, p, base) != 0)
        return -1;
    return 0;
}

int payments_create_payment(struct req *r, const struct payments_create_payment_request *in,
                            struct payments_create_payment_response *out)
{
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    struct payment *p = &x->obj;
    int made = pay_from_create(r, in->body, "", x);
    if (made != 0)
        return made > 0 ? 0 : -1;
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The payment breaks a payment rule.");
        return 0;
    }
    bool taken = false;
    if (p->has_external_id && pay_external_id_taken(r, p->external_id, NULL, &taken) != 0)
        return -1;
    if (taken) {
        req_problem(r, 409, "duplicate_external_id",
                    "Another payment of this workspace already has external_id %s.",
                    p->external_id);
        return 0;
    }
    int64_t need = pay_approvals_needed_for(r, x, &x->created_for, 1);
    if (need < 0)
        return -1;
    if (need == 0 && p->has_funding_conversion_id)
        need = 1; /* trade flows: approved once its conversion settled, never straight away */
    p->approval->required = need;
    pay_set_status(x, need > 0 ? PAYMENT_STATUS_PENDING_APPROVAL : PAYMENT_STATUS_APPROVED);
    /* Both events carry the payment as stored: render it once. */
    const char *json = payment_json(r, p);
    if (pay_save(r, x, PAY_INSERT) != 0 ||
        record_change_json(r, "payment.created", p, 0, NULL, json) != 0 ||
        (need == 0 && record_change_json(r, "payment.approved", p, PAYMENT_STATUS_APPROVED,
                                         "no approval required by the policy", json) != 0))
        return -1;
    out->status = 201;
    out->body_201 = p;
    out->location = arena_printf(&r->arena, PAY_PATH "/%s", p->id);
    return 0;
}

int payments_get_payment(struct req *r, const struct payments_get_payment_request *in,
                         struct payments_get_payment_response *out)
{
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, NULL, x);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = &x->obj;
    return 0;
}

/* A page's payment row, and whether it has what the two follow-up queries look for. */
struct page_item {
    struct payment_row row; /* first: resource_list reads the row into it */
    bool decided;           /* decisions in its current round */
    bool changed;           /* makers after its creator */
};

static int page_item_row(struct req *r, struct db_stmt *st, void *item)
{
    struct page_item *it = item;
    if (rows_payment.page_row(r, st, &it->row) != 0)
        return -1;
    it->decided = db_column_int64(st, rows_payment.column_count) != 0;
    it->changed = db_column_int64(st, rows_payment.column_count + 1) != 0;
    return 0;
}

/* Most payments have neither decisions nor makers beyond their creator, and a page without any
 * needs neither follow-up query: the row says which have some (0002_list_flags.sql; an EXISTS
 * per row cost 7% of a page, an IN list of the page's ids more: SQLite builds a temporary index
 * of it each time). */
#define PAGE_FLAGS ", CASE WHEN decided_round = approval_round THEN 1 ELSE 0 END, has_makers"
static const struct resource_extra page_flags = {
    .columns = PAGE_FLAGS,
    .item_size = sizeof(struct page_item),
    .row = page_item_row,
};
/* The CSV page is written from the structs: every row read whole. */
static const struct resource_extra page_flags_csv = {
    .columns = PAGE_FLAGS,
    .item_size = sizeof(struct page_item),
    .row = page_item_row,
    .uncached = true,
};

/* A created_* filter as the stored form (UTC, milliseconds), so any offset compares right. */
static const char *utc(struct req *r, bool has, const char *ts)
{
    int64_t ms = 0;
    if (!has || !format_time_parse_any(ts, &ms))
        return NULL;
    char buf[40];
    format_time_rfc3339(ms, buf, sizeof buf);
    return arena_strdup(&r->arena, buf);
}

int payments_list_payments(struct req *r, const struct payments_list_payments_request *in,
                           struct payments_list_payments_response *out)
{
    const struct resource_filter f[] = {
        RESOURCE_TEXT("status", RESOURCE_IN,
                      payment_status_set(&r->arena, in->status, in->status_count)),
        RESOURCE_TEXT("currency", RESOURCE_EQ, in->has_currency ? in->currency : NULL),
        RESOURCE_TEXT("beneficiary_id", RESOURCE_EQ,
                      in->has_beneficiary_id ? in->beneficiary_id : NULL),
        RESOURCE_INT("amount", RESOURCE_GE, in->has_amount_gte, in->amount_gte),
        RESOURCE_INT("amount", RESOURCE_LT, in->has_amount_lt, in->amount_lt),
        RESOURCE_TEXT("created_at", RESOURCE_GE, utc(r, in->has_created_gte, in->created_gte)),
        RESOURCE_TEXT("created_at", RESOURCE_LT, utc(r, in->has_created_lt, in->created_lt)),
        RESOURCE_TEXT("effective_date", RESOURCE_GE,
                      in->has_effective_date_gte ? in->effective_date_gte : NULL),
        RESOURCE_TEXT("effective_date", RESOURCE_LT,
                      in->has_effective_date_lt ? in->effective_date_lt : NULL),
        RESOURCE_TEXT("batch_id", RESOURCE_EQ, in->has_batch_id ? in->batch_id : NULL),
    };
    struct resource_page rp;
    int listed = resource_list_extra(r, &rows_payment, f, sizeof f / sizeof f[0], in->limit,
                                     in->has_cursor ? in->cursor : NULL,
                                     in->accept == MEDIA_CSV ? &page_flags_csv : &page_flags,
                                     &rp); /* 400 bad cursor */
    if (listed <= 0)
        return listed;
    /* the page's rows as the API's payments (those whose JSON is kept for their version are
     * complete: x-table cache), then the decisions and makers of those flagged as having
     * some: one query each, none for a page without */
    struct page_item *rows = rp.items;
    size_t cap = rp.count ? rp.count : 1, nd = 0, nc = 0;
    struct payment *items = arena_alloc(&r->arena, cap * sizeof *items);
    struct payment **decided = arena_alloc(&r->arena, cap * sizeof *decided);
    struct payment **changed = arena_alloc(&r->arena, cap * sizeof *changed);
    for (size_t i = 0; i < rp.count; i++) {
        bool kept = resource_item_kept(&rows_payment, &rows[i].row);
        if (!kept)
            pay_complete(r, &rows[i].row);
        items[i] = rows[i].row.obj;
        if (rows[i].decided && !kept)
            decided[nd++] = &items[i];
        if (rows[i].changed && !kept)
            changed[nc++] = &items[i];
    }
    rp.items = items;
    if (load_page_approvers(r, decided, nd) != 0 || pay_load_page_makers(r, changed, nc) != 0)
        return -1;
    if (in->accept != MEDIA_CSV)
        resource_page_remember(r, &rows_payment, items, rp.count, sizeof *items);
    struct payment_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    if (page->has_more && page->next_cursor)
        out->link = req_next_link(r, page->next_cursor);
    if (in->accept == MEDIA_CSV)
        pay_csv(r, page, &out->raw_200, &out->raw_200_len);
    else
        out->body_200 = page;
    return 0;
}

/* 1 (answered 409 part_of_batch) when p belongs to a batch: the batch decides for it. */
int pay_part_of_batch(struct req *r, const struct payment *p)
{
    if (!p->has_batch_id)
        return 0;
    req_problem(r, 409, "part_of_batch",
                "Payment %s belongs to batch %s, which is approved, denied or cancelled as a "
                "whole (/v1/payments/batches/%s); its items cannot be changed one by one.",
                p->id, p->batch_id, p->batch_id);
    return 1;
}

static bool same_funding(const struct payment *a, const struct payment *b)
{
    if (a->has_funding_conversion_id != b->has_funding_conversion_id)
        return false;
    return !a->has_funding_conversion_id ||
           strcmp(a->funding_conversion_id, b->funding_conversion_id) == 0;
}

static bool editable(enum payment_status s)
{
    return s == PAYMENT_STATUS_PENDING_APPROVAL || s == PAYMENT_STATUS_APPROVED ||
           s == PAYMENT_STATUS_SCHEDULED;
}

int payments_update_payment(struct req *r, const struct payments_update_payment_request *in,
                            struct payments_update_payment_response *out)
{
    const struct payment_update *u = in->body; /* If-Match is there: x-if-match: required */
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, in->if_match, x);
    if (found <= 0)
        return found;
    struct payment *p = &x->obj;
    enum payment_status before = p->status;
    if (pay_part_of_batch(r, p))
        return 0;
    if (!editable(p->status)) {
        req_problem(r, 409, "payment_not_editable",
                    "Payment %s is %s; only pending_approval, approved or scheduled payments "
                    "can be changed.",
                    p->id, payment_status_str(p->status));
        return 0;
    }
    const struct payment old = *p;
    merge_payment_update_into_payment(&r->arena, u, p);
    unsigned changed = pay_changed_fields(&old, p);
    if (check_payment(r, p, u->has_effective_date, "") != 0 ||
        (changed & pay_funding_fields() && pay_check_funding(r, p, "") != 0))
        return -1;
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The changed payment breaks a payment rule.");
        return 0;
    }
    bool taken = false;
    if (p->has_external_id && pay_external_id_taken(r, p->external_id, p->id, &taken) != 0)
        return -1;
    if (taken) {
        req_problem(r, 409, "duplicate_external_id",
                    "Another payment of this workspace already has external_id %s.",
                    p->external_id);
        return 0;
    }
    /* Maker-checker, one rule for every editable status (pending_approval, approved,
     * scheduled): a change to a field the approvals were given for makes the caller's acting
     * person a maker of the payment (never its approver) and voids the approvals collected.
     * A new round starts from none and the policy runs again (the velocity rule for the
     * creator and for the changer), so the payment goes back to pending_approval whenever the
     * policy asks for approvals. external_id and metadata changes keep the approvals. */
    bool reevaluate = changed != 0;
    if (!same_funding(&old, p)) { /* another conversion, or none: the hold was the old one's */
        p->has_hold_reason = false;
        p->hold_reason = NULL;
    }
    const char *detail = NULL, *me = NULL;
    if (reevaluate) {
        if (!(me = pay_person(r)))
            return pay_person_missing(r);
        const char *persons[2] = {x->created_for ? x->created_for : p->created_by, me};
        int64_t need = pay_approvals_needed_for(r, x, persons, 2);
        if (need < 0 ||
            pay_beneficiary_round(r, p->beneficiary_id, &x->beneficiary_round) != 0)
            return -1;
        if (need == 0 && p->has_funding_conversion_id)
            need = 1; /* trade flows: as on create */
        x->approval_round++;
        p->approval->required = need;
        p->approval->received = 0;
        p->approval->approvers_count = 0;
        pay_set_status(x, need > 0 ? PAYMENT_STATUS_PENDING_APPROVAL : PAYMENT_STATUS_APPROVED);
    }
    if (pay_save(r, x, PAY_UPDATE) != 0) /* the new version and updated_at */
        return -1;
    if (reevaluate && (pay_add_maker(r, p, me, changed) != 0 || pay_load_makers(r, p) != 0 ||
                       !(detail = pay_change_detail(r, &old, p, changed, me, x))))
        return -1;
    if (pay_record_change(r, "payment.updated", p, before, detail) != 0)
        return -1;
    if (reevaluate && before == PAYMENT_STATUS_PENDING_APPROVAL &&
        p->status == PAYMENT_STATUS_APPROVED &&
        pay_record_change(r, "payment.approved", p, before, "no approval required by the policy") != 0)
        return -1;
    out->status = 200;
    out->body_200 = p;
    return 0;
}

void pay_invalid_transition(struct req *r, const struct payment *p, const char *action,
                            const char *allowed)
{
    req_problem(r, 409, "invalid_transition", "Payment %s is %s; it can be %s only when %s.",
                p->id, payment_status_str(p->status), action, allowed);
}

int payments_cancel_payment(struct req *r, const struct payments_cancel_payment_request *in,
                            struct payments_cancel_payment_response *out)
{
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, NULL, x);
    if (found <= 0)
        return found;
    struct payment *p = &x->obj;
    enum payment_status before = p->status;
    if (pay_part_of_batch(r, p))
        return 0;
    if (!editable(p->status)) {
        pay_invalid_transition(r, p, "cancelled", "pending_approval, approved or scheduled");
        return 0;
    }
    if (strcmp(p->created_by, r->principal.user_id) != 0 &&
        !(r->principal.scopes & SCOPE_WORKSPACE_ADMIN)) {
        req_problem(r, 403, "not_creator",
                    "Only the creator of payment %s or a workspace administrator may cancel it.",
                    p->id);
        return 0;
    }
    pay_set_status(x, PAYMENT_STATUS_CANCELLED);
    if (pay_save(r, x, PAY_UPDATE_STATE) != 0 ||
        pay_record_change(r, "payment.cancelled", p, before, NULL) != 0)
        return -1;
    out->status = 200;
    out->body_200 = p;
    return 0;
}
