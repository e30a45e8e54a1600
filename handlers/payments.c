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
#include "runtime/pagination.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

static int db_failed(const char *what)
{
    log_error("payments: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- metadata: stored as a JSON object text ---------------------------------------------- */

char *pay_metadata_json(const struct metadata_entry *m, size_t n)
{
    struct jsonw w;
    size_t len = 0;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jsonw_key(&w, m[i].key);
        jsonw_string(&w, m[i].value);
    }
    jsonw_object_end(&w);
    char *out = jsonw_take(&w, &len);
    jsonw_release(&w);
    return out;
}

const char *pay_json_text(struct req *r, struct jsonw *w)
{
    size_t len = 0;
    char *text = jsonw_take(w, &len);
    jsonw_release(w);
    const char *out = text ? arena_strdup(&r->arena, text) : NULL;
    free(text);
    return out;
}

int pay_page_rows(struct req *r, struct payment **items, size_t n, const char *sql,
                  void (*row)(struct req *r, struct db_stmt *st, struct payment *item),
                  const char *what)
{
    if (n == 0)
        return 0;
    if (n > DB_IN_LIST_MAX) {
        log_error("%s: a page of %zu items is longer than DB_IN_LIST_MAX", what, n);
        return -1;
    }
    int places = 0;
    struct db_stmt *st = storage_prepare_in(sql, n, &places);
    if (!st)
        return -1;
    for (size_t i = 0; i < (size_t)places; i++) {
        if (i < n)
            db_bind_text(st, (int)i + 1, items[i]->id);
        else
            db_bind_null(st, (int)i + 1);
    }
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *pid = db_column_text(st, 0);
        for (size_t i = 0; pid && i < n; i++)
            if (strcmp(items[i]->id, pid) == 0) {
                row(r, st, items[i]);
                break;
            }
    }
    db_reset(st);
    if (rc == DB_DONE)
        return 0;
    log_error("%s failed: %s", what, storage_errmsg());
    return -1;
}

int pay_metadata_parse(struct req *r, const char *text, struct metadata_entry **m, size_t *n)
{
    struct json_value *v = NULL;
    struct json_error err;
    if (!text || json_parse(&r->arena, text, strlen(text), &v, &err) != 0 ||
        v->type != JSON_OBJECT)
        return -1;
    *m = arena_alloc(&r->arena, (v->count ? v->count : 1) * sizeof **m);
    for (size_t i = 0; i < v->count; i++) {
        if (v->members[i].value->type != JSON_STRING)
            return -1;
        (*m)[i].key = v->members[i].key;
        (*m)[i].value = v->members[i].value->s;
    }
    *n = v->count;
    return 0;
}

/* ==== payments ============================================================================ */

#define PAY_PATH "/v1/payments"
#define PAY_COLUMNS                                                                           \
    "id, workspace_id, amount, currency, type, priority, originating_account, "              \
    "beneficiary_id, effective_date, remittance_information, external_id, status, "          \
    "approvals_required, approval_round, failure_reason, created_by, metadata, version, "    \
    "created_at, updated_at, next_step_at, rail_reference, failure_code, batch_id, "          \
    "batch_position, created_for, beneficiary_round"

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

void pay_set_status(struct pay *x, enum payment_status s)
{
    struct payment *p = &x->p;
    p->status = s;
    p->iso20022_status = iso_status(s);
    p->has_iso20022_status = p->iso20022_status != 0;
    x->has_next_step = s == PAYMENT_STATUS_APPROVED;
    x->next_step_at = 0;
}

/* The decisions of the payment's current round, in order. 0 / -1. */
int pay_load_approvers(struct req *r, struct pay *x)
{
    struct payment_approval *a = arena_alloc(&r->arena, sizeof *a);
    struct db_stmt *st = storage_prepare(
        "SELECT user_id, decision, reason, decided_at FROM payment_approvals "
        "WHERE payment_id = ? AND round = ? ORDER BY decided_at, user_id");
    if (!st)
        return -1;
    db_bind_text(st, 1, x->p.id);
    db_bind_int64(st, 2, x->round);
    a->required = x->p.approval ? x->p.approval->required : 0;
    x->p.approval = a;
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

/* The columns of PAY_COLUMNS into x, the approval without its decisions. */
static int row_to_pay_fields(struct req *r, struct db_stmt *st, struct pay *x)
{
    struct payment *p = &x->p;
    memset(x, 0, sizeof *x);
    p->id = db_column_dup(&r->arena, st, 0);
    p->object = "payment";
    p->workspace_id = db_column_dup(&r->arena, st, 1);
    p->amount = db_column_int64(st, 2);
    p->currency = db_column_dup(&r->arena, st, 3);
    p->type = payment_type_parse(db_column_dup(&r->arena, st, 4));
    p->priority = payment_priority_parse(db_column_dup(&r->arena, st, 5));
    p->originating_account = db_column_dup(&r->arena, st, 6);
    p->beneficiary_id = db_column_dup(&r->arena, st, 7);
    p->effective_date = db_column_dup(&r->arena, st, 8);
    p->remittance_information = db_column_dup(&r->arena, st, 9);
    p->has_remittance_information = p->remittance_information != NULL;
    p->external_id = db_column_dup(&r->arena, st, 10);
    p->has_external_id = p->external_id != NULL;
    pay_set_status(x, payment_status_parse(db_column_dup(&r->arena, st, 11)));
    p->approval = arena_alloc(&r->arena, sizeof *p->approval);
    p->approval->required = db_column_int64(st, 12);
    x->round = db_column_int64(st, 13);
    p->failure_reason = db_column_dup(&r->arena, st, 14);
    p->has_failure_reason = p->failure_reason != NULL;
    p->created_by = db_column_dup(&r->arena, st, 15);
    if (pay_metadata_parse(r, db_column_dup(&r->arena, st, 16), &p->metadata,
                           &p->metadata_count) != 0)
        return -1;
    p->version = db_column_int64(st, 17);
    p->created_at = db_column_dup(&r->arena, st, 18);
    p->updated_at = db_column_dup(&r->arena, st, 19);
    x->has_next_step = !db_column_is_null(st, 20);
    x->next_step_at = db_column_int64(st, 20);
    p->rail_reference = db_column_dup(&r->arena, st, 21);
    p->has_rail_reference = p->rail_reference != NULL;
    p->failure_code = db_column_dup(&r->arena, st, 22);
    p->has_failure_code = p->failure_code != NULL;
    p->batch_id = db_column_dup(&r->arena, st, 23);
    p->has_batch_id = p->batch_id != NULL;
    x->created_for = db_column_dup(&r->arena, st, 25);
    x->beneficiary_round = db_column_int64(st, 26); /* NULL reads as 0: not known */
    pay_set_creator(r, x);
    if (!p->type || !p->priority || !p->status) {
        log_error("payments: %s has a value the spec does not know", p->id);
        return -1;
    }
    return 0;
}

static int row_to_pay(struct req *r, struct db_stmt *st, struct pay *x)
{
    if (row_to_pay_fields(r, st, x) != 0)
        return -1;
    return pay_load_approvers(r, x) != 0 ? -1 : pay_load_makers(r, &x->p);
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

/* The caller's payment: 1 found, 0 answered (404, or 412 for an If-Match naming another
 * version), -1 failure. */
int pay_load(struct req *r, const char *id, const char *if_match, struct pay *x)
{
    if (!id_valid(id, "pay")) {
        req_problem(r, 404, "not_found", "No payment %s in this workspace.", id);
        return 0;
    }
    struct db_stmt *st = storage_prepare("SELECT " PAY_COLUMNS
                                       " FROM payments WHERE id = ? AND workspace_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, r->principal.workspace_id);
    int rc = db_step(st), ret;
    if (rc == DB_ROW) {
        ret = row_to_pay(r, st, x) == 0 ? 1 : -1; /* reads the approvals with another statement */
    } else {
        ret = rc == DB_DONE ? 0 : db_failed("payment load");
    }
    db_reset(st);
    if (ret == 0)
        req_problem(r, 404, "not_found", "No payment %s in this workspace.", id);
    if (ret == 1 && if_match && !req_if_match(if_match, x->p.version)) {
        req_precondition_failed(r, if_match, x->p.version);
        return 0;
    }
    return ret;
}

/* The payment as JSON text, as GET answers it (for events). Lives in r->arena. */
static const char *payment_json(struct req *r, const struct payment *p)
{
    struct jsonw w;
    jsonw_init(&w);
    encode_payment(&w, p);
    return pay_json_text(r, &w);
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

/* Writes every column of x: INSERT when insert, else UPDATE at old_version. 0 / -1. */
int pay_save(const struct pay *x, enum pay_write how, int64_t old_version)
{
    /* One numbering of the parameters for all three; a statement leaves out what it does not
     * write (binding a number it does not use is harmless). */
    static const char *const sql[] = {
        [PAY_INSERT] = "INSERT INTO payments (" PAY_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                       "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
                       "?22, ?23, ?24, ?26, ?27, ?28)",
        [PAY_UPDATE] = "UPDATE payments SET amount = ?3, currency = ?4, type = ?5, priority = ?6, "
                       "originating_account = ?7, beneficiary_id = ?8, effective_date = ?9, "
                       "remittance_information = ?10, external_id = ?11, status = ?12, "
                       "approvals_required = ?13, approval_round = ?14, failure_reason = ?15, "
                       "metadata = ?17, version = ?18, updated_at = ?20, next_step_at = ?21, "
                       "rail_reference = ?22, failure_code = ?23, beneficiary_round = ?28 "
                       "WHERE id = ?1 AND workspace_id = ?2 AND version = ?25",
        [PAY_UPDATE_STATE] = "UPDATE payments SET status = ?12, approvals_required = ?13, "
                             "approval_round = ?14, failure_reason = ?15, version = ?18, "
                             "updated_at = ?20, next_step_at = ?21, rail_reference = ?22, "
                             "failure_code = ?23, beneficiary_round = ?28 "
                             "WHERE id = ?1 AND workspace_id = ?2 AND version = ?25",
    };
    const struct payment *p = &x->p;
    bool insert = how == PAY_INSERT;
    char *metadata = how == PAY_UPDATE_STATE ? NULL
                                              : pay_metadata_json(p->metadata, p->metadata_count);
    struct db_stmt *st = storage_prepare(sql[how]);
    int ret = -1;
    if (!st)
        goto out;
    db_bind_text(st, 1, p->id);
    db_bind_text(st, 2, p->workspace_id);
    db_bind_int64(st, 3, p->amount);
    db_bind_text(st, 4, p->currency);
    db_bind_text(st, 5, payment_type_str(p->type));
    db_bind_text(st, 6, payment_priority_str(p->priority));
    db_bind_text(st, 7, p->originating_account);
    db_bind_text(st, 8, p->beneficiary_id);
    db_bind_text(st, 9, p->effective_date);
    db_bind_text(st, 10, p->has_remittance_information ? p->remittance_information : NULL);
    db_bind_text(st, 11, p->has_external_id ? p->external_id : NULL);
    db_bind_text(st, 12, payment_status_str(p->status));
    db_bind_int64(st, 13, p->approval->required);
    db_bind_int64(st, 14, x->round);
    db_bind_text(st, 15, p->has_failure_reason ? p->failure_reason : NULL);
    db_bind_text(st, 16, p->created_by);
    db_bind_text(st, 17, metadata);
    db_bind_int64(st, 18, p->version);
    db_bind_text(st, 19, p->created_at);
    db_bind_text(st, 20, p->updated_at);
    if (x->has_next_step)
        db_bind_int64(st, 21, x->next_step_at);
    else
        db_bind_null(st, 21);
    db_bind_text(st, 22, p->has_rail_reference ? p->rail_reference : NULL);
    db_bind_text(st, 23, p->has_failure_code ? p->failure_code : NULL);
    db_bind_text(st, 24, p->has_batch_id ? p->batch_id : NULL); /* set once, by the INSERT */
    if (insert && p->has_batch_id)
        db_bind_int64(st, 26, x->batch_position);
    db_bind_text(st, 27, x->created_for); /* set once, by the INSERT */
    if (x->beneficiary_round > 0)
        db_bind_int64(st, 28, x->beneficiary_round);
    else
        db_bind_null(st, 28);
    if (!insert)
        db_bind_int64(st, 25, old_version);
    if (db_step(st) == DB_DONE && storage_changes() == 1)
        ret = 0;
    else
        db_failed(insert ? "payment insert" : "payment update");
    db_reset(st);
out:
    free(metadata);
    return ret;
}

void pay_touch(struct req *r, struct payment *p)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    p->updated_at = arena_strdup(&r->arena, now);
    p->version++;
}

int pay_reschedule(const struct pay *x, bool has_next, int64_t at)
{
    struct db_stmt *st = storage_prepare(
        "UPDATE payments SET next_step_at = ? WHERE id = ? AND version = ?");
    if (!st)
        return -1;
    if (has_next)
        db_bind_int64(st, 1, at);
    else
        db_bind_null(st, 1);
    db_bind_text(st, 2, x->p.id);
    db_bind_int64(st, 3, x->p.version);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : -1;
}

/* ---- operations ---- */

int pay_from_create(struct req *r, const struct payment_create *c, const char *base,
                    struct pay *x)
{
    struct payment *p = &x->p;
    char now[40], day[11];
    format_now_rfc3339(now, sizeof now);
    pay_today(day);
    p->id = id_new(&r->arena, "pay");
    p->object = "payment";
    p->workspace_id = r->principal.workspace_id;
    p->amount = c->amount;
    p->currency = c->currency;
    p->type = c->type;
    p->priority = c->has_priority ? c->priority : PAYMENT_PRIORITY_NORMAL;
    p->originating_account = c->originating_account;
    p->beneficiary_id = c->beneficiary_id;
    p->effective_date = c->has_effective_date ? c->effective_date : arena_strdup(&r->arena, day);
    p->remittance_information = c->remittance_information;
    p->has_remittance_information = c->has_remittance_information;
    p->external_id = c->external_id;
    p->has_external_id = c->has_external_id;
    p->created_by = r->principal.user_id;
    p->metadata = c->has_metadata ? c->metadata : NULL;
    p->metadata_count = c->has_metadata ? c->metadata_count : 0;
    p->version = 1;
    p->created_at = p->updated_at = arena_strdup(&r->arena, now);
    p->approval = arena_alloc(&r->arena, sizeof *p->approval);
    x->round = 1;
    /* The maker: a service-account token's payment is made by the person who minted it. */
    if (!(x->created_for = pay_person(r)))
        return pay_person_missing(r) == 0 ? 1 : -1;
    pay_set_creator(r, x);

    if (c->has_funding_conversion_id)
        verr_add(&r->verr, base, "funding_conversion_id", "conversion_not_found",
                 "no conversion %s exists (conversions are not served yet)",
                 c->funding_conversion_id);
    /* The approvals will be given for the beneficiary as it is now. */
    if (check_payment(r, p, c->has_effective_date, base) != 0 ||
        pay_beneficiary_round(r, p->beneficiary_id, &x->beneficiary_round) != 0)
        return -1;
    return 0;
}

int payments_create_payment(struct req *r, const struct payments_create_payment_request *in,
                            struct payments_create_payment_response *out)
{
    struct pay *x = arena_alloc(&r->arena, sizeof *x);
    struct payment *p = &x->p;
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
    p->approval->required = need;
    pay_set_status(x, need > 0 ? PAYMENT_STATUS_PENDING_APPROVAL : PAYMENT_STATUS_APPROVED);
    /* Both events carry the payment as stored: render it once. */
    const char *json = payment_json(r, p);
    if (pay_save(x, PAY_INSERT, 0) != 0 ||
        record_change_json(r, "payment.created", p, 0, NULL, json) != 0 ||
        (need == 0 && record_change_json(r, "payment.approved", p, PAYMENT_STATUS_APPROVED,
                                         "no approval required by the policy", json) != 0))
        return -1;
    out->status = 201;
    out->body_201 = p;
    out->location = arena_printf(&r->arena, PAY_PATH "/%s", p->id);
    out->etag = req_etag(r, p->version);
    return 0;
}

int payments_get_payment(struct req *r, const struct payments_get_payment_request *in,
                         struct payments_get_payment_response *out)
{
    struct pay *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, NULL, x);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = &x->p;
    out->etag = req_etag(r, x->p.version);
    return 0;
}

/* A page's payment, and whether it has what two more queries would look for. */
struct page_item {
    struct payment p;
    bool decided; /* decisions in its current round */
    bool changed; /* makers after its creator */
};

/* The page's columns: PAY_COLUMNS, then page_item's two flags. Most payments have neither, and
 * a page without any needs neither query; an EXISTS per row costs a fraction of one (SQLite
 * builds a temporary index of an IN list's ids each time). */
#define PAGE_COLUMNS                                                                          \
    PAY_COLUMNS ", CASE WHEN EXISTS (SELECT 1 FROM payment_approvals a "                    \
                "WHERE a.payment_id = payments.id AND a.round = payments.approval_round) "   \
                "THEN 1 ELSE 0 END, "                                                         \
                "CASE WHEN EXISTS (SELECT 1 FROM payment_makers m "                          \
                "WHERE m.payment_id = payments.id) THEN 1 ELSE 0 END"

static int payment_row(struct req *r, struct db_stmt *st, void *item)
{
    struct pay x;
    struct page_item *it = item;
    if (row_to_pay_fields(r, st, &x) != 0)
        return -1; /* decisions and makers: payments_list_payments, once the page is read */
    it->p = x.p;
    it->decided = db_column_int64(st, 27) != 0;
    it->changed = db_column_int64(st, 28) != 0;
    return 0;
}

/* The page's decisions and makers, for the items whose flags say they have some; the page
 * becomes its payments, moved down in place (item i's payment goes where nothing not yet
 * read lies: before item i's flags and item i + 1). 0 / -1. */
static int page_related(struct req *r, struct resource_page *rp)
{
    struct page_item *items = rp->items;
    struct payment *pays = rp->items;
    struct payment **decided = arena_alloc(&r->arena, (rp->count + 1) * sizeof *decided);
    struct payment **changed = arena_alloc(&r->arena, (rp->count + 1) * sizeof *changed);
    size_t nd = 0, nc = 0;
    for (size_t i = 0; i < rp->count; i++) {
        bool d = items[i].decided, c = items[i].changed;
        memmove(&pays[i], &items[i].p, sizeof *pays);
        if (d)
            decided[nd++] = &pays[i];
        if (c)
            changed[nc++] = &pays[i];
    }
    return load_page_approvers(r, decided, nd) != 0 || pay_load_page_makers(r, changed, nc) != 0
               ? -1
               : 0;
}

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
    const char *status = payment_status_set(&r->arena, in->status, in->status_count);
    const char *created_gte = utc(r, in->has_created_gte, in->created_gte);
    const char *created_lt = utc(r, in->has_created_lt, in->created_lt);
    const char *filters = arena_printf(
        &r->arena, "payments&w=%s&s=%s&c=%s&b=%s&a=%lld-%lld&ct=%s-%s&ed=%s-%s&pb=%s",
        r->principal.workspace_id, status ? status : "", in->has_currency ? in->currency : "",
        in->has_beneficiary_id ? in->beneficiary_id : "",
        (long long)(in->has_amount_gte ? in->amount_gte : 0),
        (long long)(in->has_amount_lt ? in->amount_lt : 0), created_gte ? created_gte : "",
        created_lt ? created_lt : "", in->has_effective_date_gte ? in->effective_date_gte : "",
        in->has_effective_date_lt ? in->effective_date_lt : "",
        in->has_batch_id ? in->batch_id : "");
    struct page pg;
    if (page_begin(r, &pg, filters, in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    /* ?2, the status set ",a,b,", holds the row's ",status," when taking it out shortens
     * it: an exact substring test both engines have (no instr() in PostgreSQL). A parameter
     * that may be NULL is CAST where it is tested, since PostgreSQL cannot infer its type from
     * `? IS NULL` alone. */
    struct db_stmt *st = storage_prepare(
        "SELECT " PAGE_COLUMNS " FROM payments WHERE workspace_id = ?1 "
        "AND (CAST(?2 AS TEXT) IS NULL "
        "     OR length(replace(?2, ',' || status || ',', '')) < length(?2)) "
        "AND (CAST(?3 AS TEXT) IS NULL OR currency = ?3) "
        "AND (CAST(?4 AS TEXT) IS NULL OR beneficiary_id = ?4) "
        "AND (CAST(?5 AS BIGINT) IS NULL OR amount >= ?5) "
        "AND (CAST(?6 AS BIGINT) IS NULL OR amount < ?6) "
        "AND (CAST(?7 AS TEXT) IS NULL OR created_at >= ?7) "
        "AND (CAST(?8 AS TEXT) IS NULL OR created_at < ?8) "
        "AND (CAST(?9 AS TEXT) IS NULL OR effective_date >= ?9) "
        "AND (CAST(?10 AS TEXT) IS NULL OR effective_date < ?10) "
        "AND (CAST(?14 AS TEXT) IS NULL OR batch_id = ?14) "
        "AND (CAST(?11 AS TEXT) IS NULL OR created_at < ?11 OR (created_at = ?11 AND id < ?12)) "
        "ORDER BY created_at DESC, id DESC LIMIT ?13");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, status);
    db_bind_text(st, 3, in->has_currency ? in->currency : NULL);
    db_bind_text(st, 4, in->has_beneficiary_id ? in->beneficiary_id : NULL);
    if (in->has_amount_gte)
        db_bind_int64(st, 5, in->amount_gte);
    else
        db_bind_null(st, 5);
    if (in->has_amount_lt)
        db_bind_int64(st, 6, in->amount_lt);
    else
        db_bind_null(st, 6);
    db_bind_text(st, 7, created_gte);
    db_bind_text(st, 8, created_lt);
    db_bind_text(st, 9, in->has_effective_date_gte ? in->effective_date_gte : NULL);
    db_bind_text(st, 10, in->has_effective_date_lt ? in->effective_date_lt : NULL);
    db_bind_text(st, 14, in->has_batch_id ? in->batch_id : NULL);
    page_bind(&pg, st, 11, 12, 13);
    struct resource_page rp;
    if (resource_page_fill(r, &pg, st, sizeof(struct page_item), payment_row,
                           offsetof(struct page_item, p.created_at),
                           offsetof(struct page_item, p.id), &rp) != 0 ||
        page_related(r, &rp) != 0)
        return -1;
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

static bool editable(enum payment_status s)
{
    return s == PAYMENT_STATUS_PENDING_APPROVAL || s == PAYMENT_STATUS_APPROVED ||
           s == PAYMENT_STATUS_SCHEDULED;
}

int payments_update_payment(struct req *r, const struct payments_update_payment_request *in,
                            struct payments_update_payment_response *out)
{
    const struct payment_update *u = in->body; /* If-Match is there: x-if-match: required */
    struct pay *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, in->if_match, x);
    if (found <= 0)
        return found;
    struct payment *p = &x->p;
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
    if (u->has_amount)
        p->amount = u->amount;
    if (u->has_currency)
        p->currency = u->currency;
    if (u->has_type)
        p->type = u->type;
    if (u->has_priority)
        p->priority = u->priority;
    if (u->has_originating_account)
        p->originating_account = u->originating_account;
    if (u->has_beneficiary_id)
        p->beneficiary_id = u->beneficiary_id;
    if (u->has_effective_date)
        p->effective_date = u->effective_date;
    if (u->has_remittance_information) {
        p->remittance_information = u->remittance_information_is_null ? NULL : u->remittance_information;
        p->has_remittance_information = !u->remittance_information_is_null;
    }
    if (u->has_external_id) {
        p->external_id = u->external_id_is_null ? NULL : u->external_id;
        p->has_external_id = !u->external_id_is_null;
    }
    if (u->has_metadata) {
        p->metadata = u->metadata;
        p->metadata_count = u->metadata_count;
    }
    if (check_payment(r, p, u->has_effective_date, "") != 0)
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
    unsigned changed = pay_changed_fields(&old, p);
    bool reevaluate = changed != 0;
    const char *detail = NULL;
    int64_t old_version = p->version;
    pay_touch(r, p);
    if (reevaluate) {
        const char *me = pay_person(r);
        if (!me)
            return pay_person_missing(r);
        const char *persons[2] = {x->created_for ? x->created_for : p->created_by, me};
        int64_t need = pay_approvals_needed_for(r, x, persons, 2);
        if (need < 0 ||
            pay_beneficiary_round(r, p->beneficiary_id, &x->beneficiary_round) != 0)
            return -1;
        x->round++;
        p->approval->required = need;
        p->approval->received = 0;
        p->approval->approvers_count = 0;
        pay_set_status(x, need > 0 ? PAYMENT_STATUS_PENDING_APPROVAL : PAYMENT_STATUS_APPROVED);
        if (pay_add_maker(r, p, me, changed) != 0 || pay_load_makers(r, p) != 0 ||
            !(detail = pay_change_detail(r, &old, p, changed, me, x)))
            return -1;
    }
    if (pay_save(x, PAY_UPDATE, old_version) != 0 ||
        pay_record_change(r, "payment.updated", p, before, detail) != 0)
        return -1;
    if (reevaluate && before == PAYMENT_STATUS_PENDING_APPROVAL &&
        p->status == PAYMENT_STATUS_APPROVED &&
        pay_record_change(r, "payment.approved", p, before, "no approval required by the policy") != 0)
        return -1;
    out->status = 200;
    out->body_200 = p;
    out->etag = req_etag(r, p->version);
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
    struct pay *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, NULL, x);
    if (found <= 0)
        return found;
    struct payment *p = &x->p;
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
    int64_t old_version = p->version;
    pay_touch(r, p);
    if (pay_save(x, PAY_UPDATE_STATE, old_version) != 0 ||
        pay_record_change(r, "payment.cancelled", p, before, NULL) != 0)
        return -1;
    out->status = 200;
    out->body_200 = p;
    out->etag = req_etag(r, p->version);
    return 0;
}
