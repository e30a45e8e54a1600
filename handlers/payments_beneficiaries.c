/* The payments API's beneficiaries (after Modern Treasury's external accounts and Open
 * Banking's beneficiaries): payee bank details owned by one
 * workspace, changed under optimistic concurrency (version / ETag / If-Match), approved by
 * someone who made none of the details (maker-checker, payments_makers.c), archived rather
 * than deleted because payments refer to them. Rows, loads, saves and the list come from the
 * schema's x-table mapping (generated/rows_payments.h, runtime/resource.h): what is here is
 * the beneficiary's own rules. */
#include "generated/payments_api.h"
#include "generated/rows_payments.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/payments.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

#define BEN_PATH "/v1/beneficiaries"

static int db_failed(const char *what)
{
    log_error("beneficiaries: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- account identification: one scheme + identification pair in the row ---------------- */

static const char *scheme_of(const struct account_identification *a)
{
    switch (a->kind) {
    case ACCOUNT_IDENTIFICATION_KIND_IBAN:
        return "IBAN";
    case ACCOUNT_IDENTIFICATION_KIND_SORT_CODE_ACCOUNT_NUMBER:
        return "SortCodeAccountNumber";
    case ACCOUNT_IDENTIFICATION_KIND_ABA:
        return "ABA";
    case ACCOUNT_IDENTIFICATION_KIND_BBAN:
        return "BBAN";
    }
    return NULL;
}

static const char *identification_of(const struct account_identification *a)
{
    switch (a->kind) {
    case ACCOUNT_IDENTIFICATION_KIND_IBAN:
        return a->iban->identification;
    case ACCOUNT_IDENTIFICATION_KIND_SORT_CODE_ACCOUNT_NUMBER:
        return a->sort_code_account_number->identification;
    case ACCOUNT_IDENTIFICATION_KIND_ABA:
        return a->aba->identification;
    case ACCOUNT_IDENTIFICATION_KIND_BBAN:
        return a->bban->identification;
    }
    return NULL;
}

/* ---- rules beyond the schema -------------------------------------------------------------- */

/* Adds a violation for every business rule b breaks (schema rules were checked already). */
static void check_rules(struct req *r, const struct beneficiary *b)
{
    if (b->account_identification->kind == ACCOUNT_IDENTIFICATION_KIND_ABA &&
        !(b->has_bank && b->bank->has_routing_number))
        verr_add(&r->verr, "/bank/routing_number", NULL, "routing_number_required", "%s",
                 "is required when account_identification.scheme is ABA");
    if (b->has_counterparty_id)
        verr_add(&r->verr, "/counterparty_id", NULL, "counterparty_not_found",
                 "no counterparty %s exists in this workspace", b->counterparty_id);
}

/* 0 with *taken, -1 on failure. except_id: the beneficiary being updated (may keep its own). */
static int external_id_taken(struct req *r, const char *external_id, const char *except_id,
                             bool *taken)
{
    struct db_stmt *st = storage_prepare("SELECT id FROM beneficiaries WHERE workspace_id = ? AND "
                                       "external_id = ? AND id <> ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, external_id);
    db_bind_text(st, 3, except_id ? except_id : "");
    int rc = db_step(st);
    *taken = rc == DB_ROW;
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("external_id lookup");
    return 0;
}

static void duplicate_external_id(struct req *r, const char *external_id)
{
    req_problem(r, 409, "duplicate_external_id",
                "Another beneficiary of this workspace already has external_id %s.", external_id);
}

/* Stops with 422 when rules were broken, then 409 on a taken external_id.
 * Returns 1 when the request was answered with a problem, 0 to go on, -1 on failure. */
static int refuse_invalid(struct req *r, const struct beneficiary *b)
{
    check_rules(r, b);
    if (r->verr.count > 0) {
        req_problem_validation(r, 422,
                               arena_printf(&r->arena, "The beneficiary breaks %d rule%s.",
                                            r->verr.count, r->verr.count == 1 ? "" : "s"));
        return 1;
    }
    if (b->has_external_id) {
        bool taken = false;
        if (external_id_taken(r, b->external_id, b->id, &taken) != 0)
            return -1;
        if (taken) {
            duplicate_external_id(r, b->external_id);
            return 1;
        }
    }
    return 0;
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_bank(const struct beneficiary *x, const struct beneficiary *y)
{
    const struct bank_details *a = x->has_bank ? x->bank : NULL, *b = y->has_bank ? y->bank : NULL;
    if (!a || !b)
        return !a && !b;
    return same(a->has_bic ? a->bic : NULL, b->has_bic ? b->bic : NULL) &&
           same(a->has_routing_number ? a->routing_number : NULL,
                b->has_routing_number ? b->routing_number : NULL) &&
           same(a->has_name ? a->name : NULL, b->has_name ? b->name : NULL) &&
           same(a->has_country ? a->country : NULL, b->has_country ? b->country : NULL);
}

/* The payee's identity, as beneficiary_makers.fields records it (bit 0: created it). */
enum {
    BEN_CREATED = 1 << 0,
    BEN_NAME = 1 << 1,
    BEN_ACCOUNT_HOLDER_NAME = 1 << 2,
    BEN_ACCOUNT_IDENTIFICATION = 1 << 3,
    BEN_BANK = 1 << 4,
    BEN_CURRENCY = 1 << 5,
    BEN_COUNTRY = 1 << 6,
};

/* Which parts of who or where the payee is differ (names, account, bank, currency, country):
 * a change to any needs approving again. */
static unsigned identity_changed(const struct beneficiary *before, const struct beneficiary *after)
{
    unsigned m = 0;
    if (strcmp(before->name, after->name) != 0)
        m |= BEN_NAME;
    if (strcmp(before->account_holder_name, after->account_holder_name) != 0)
        m |= BEN_ACCOUNT_HOLDER_NAME;
    if (strcmp(scheme_of(before->account_identification),
               scheme_of(after->account_identification)) != 0 ||
        strcmp(identification_of(before->account_identification),
               identification_of(after->account_identification)) != 0)
        m |= BEN_ACCOUNT_IDENTIFICATION;
    if (!same_bank(before, after))
        m |= BEN_BANK;
    if (strcmp(before->currency, after->currency) != 0)
        m |= BEN_CURRENCY;
    if (strcmp(before->country, after->country) != 0)
        m |= BEN_COUNTRY;
    return m;
}

/* The audit detail of an identity change: the maker and each field changed (the plain ones
 * with their values before and after), JSON in r->arena. */
static const char *identity_detail(struct req *r, const struct beneficiary *before,
                                   const struct beneficiary *after, unsigned m,
                                   const char *person)
{
    struct jsonw w;
    pay_maker_detail_begin(r, &w, person);
    jsonw_key(&w, "changed");
    jsonw_object_begin(&w);
    const struct {
        unsigned bit;
        const char *name, *was, *is;
    } f[] = {
        {BEN_NAME, "name", before->name, after->name},
        {BEN_ACCOUNT_HOLDER_NAME, "account_holder_name", before->account_holder_name,
         after->account_holder_name},
        {BEN_ACCOUNT_IDENTIFICATION, "account_identification",
         identification_of(before->account_identification),
         identification_of(after->account_identification)},
        {BEN_BANK, "bank", NULL, NULL},
        {BEN_CURRENCY, "currency", before->currency, after->currency},
        {BEN_COUNTRY, "country", before->country, after->country},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (!(m & f[i].bit))
            continue;
        jsonw_key(&w, f[i].name);
        jsonw_object_begin(&w);
        if (f[i].was) {
            jsonw_key(&w, "before");
            jsonw_string(&w, f[i].was);
            jsonw_key(&w, "after");
            jsonw_string(&w, f[i].is);
        }
        jsonw_object_end(&w);
    }
    jsonw_object_end(&w);
    jsonw_object_end(&w);
    return resource_json_text(&r->arena, &w);
}

static int set_requested_by(struct req *r, const char *id, const char *person);

/* ---- operations --------------------------------------------------------------------------- */

int payments_list_beneficiaries(struct req *r, const struct payments_list_beneficiaries_request *in,
                                struct payments_list_beneficiaries_response *out)
{
    const struct resource_filter f[] = {
        RESOURCE_TEXT("status", RESOURCE_IN,
                      beneficiary_status_set(&r->arena, in->status, in->status_count)),
        RESOURCE_TEXT("currency", RESOURCE_EQ, in->has_currency ? in->currency : NULL),
    };
    struct resource_page rp;
    int listed = resource_list(r, &rows_beneficiary, f, 2, in->limit,
                               in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    struct beneficiary_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

int payments_create_beneficiary(struct req *r, const struct payments_create_beneficiary_request *in,
                                struct payments_create_beneficiary_response *out)
{
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    resource_new(r, &rows_beneficiary, b);
    merge_beneficiary_create_into_beneficiary(&r->arena, in->body, b);
    b->status = BENEFICIARY_STATUS_ACTIVE;
    b->verification_status = VERIFICATION_STATUS_UNVERIFIED;
    b->approval_status = APPROVAL_STATUS_PENDING_APPROVAL;

    int refused = refuse_invalid(r, b);
    if (refused != 0)
        return refused < 0 ? -1 : 0;
    const char *me = pay_person(r);
    if (!me)
        return pay_person_missing(r);
    if (resource_insert(r, &rows_beneficiary, b) != 0 || set_requested_by(r, b->id, me) != 0 ||
        ben_add_maker(r, b->id, me, BEN_CREATED, false) != 0 ||
        audit_change(r, "beneficiary.created", "beneficiary", b->id, NULL,
                     approval_status_str(b->approval_status), NULL) != 0)
        return -1;
    out->status = 201;
    out->body_201 = b;
    out->location = arena_printf(&r->arena, BEN_PATH "/%s", b->id);
    return 0;
}

int payments_get_beneficiary(struct req *r, const struct payments_get_beneficiary_request *in,
                             struct payments_get_beneficiary_response *out)
{
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    int found = resource_load_current(r, &rows_beneficiary, in->id, NULL, b);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = b;
    return 0;
}

int payments_update_beneficiary(struct req *r, const struct payments_update_beneficiary_request *in,
                                struct payments_update_beneficiary_response *out)
{
    const struct beneficiary_update *u = in->body;
    struct beneficiary before, *b = arena_alloc(&r->arena, sizeof *b);
    int found = resource_load_current(r, &rows_beneficiary, in->id,
                                      in->has_if_match ? in->if_match : NULL, b);
    if (found <= 0)
        return found;
    if (b->status == BENEFICIARY_STATUS_ARCHIVED) {
        req_problem(r, 409, "beneficiary_archived",
                    "Beneficiary %s is archived and can no longer be changed.", b->id);
        return 0;
    }
    before = *b;

    merge_beneficiary_update_into_beneficiary(&r->arena, u, b);
    int refused = refuse_invalid(r, b);
    if (refused != 0)
        return refused < 0 ? -1 : 0;
    unsigned changed = identity_changed(&before, b);
    const char *me = NULL, *detail = NULL;
    if (changed) {
        /* Money would go somewhere or to someone else: the new details need verifying and
         * approving again (a new approval round once the last one was decided), by someone
         * who made none of them. Payments to it are not approved or sent meanwhile. */
        b->verification_status = VERIFICATION_STATUS_UNVERIFIED;
        b->approval_status = APPROVAL_STATUS_PENDING_APPROVAL;
        if (!(me = pay_person(r)))
            return pay_person_missing(r);
        if (!(detail = identity_detail(r, &before, b, changed, me)))
            return -1;
    }
    int saved = resource_save(r, &rows_beneficiary, b);
    if (saved <= 0)
        return saved;
    if ((changed && (set_requested_by(r, b->id, me) != 0 ||
                     ben_add_maker(r, b->id, me, changed,
                                   before.approval_status != APPROVAL_STATUS_PENDING_APPROVAL) !=
                         0)) ||
        audit_change(r, "beneficiary.updated", "beneficiary", b->id,
                     approval_status_str(before.approval_status),
                     approval_status_str(b->approval_status), detail) != 0)
        return -1;
    out->status = 200;
    out->body_200 = b;
    return 0;
}

int payments_delete_beneficiary(struct req *r, const struct payments_delete_beneficiary_request *in,
                                struct payments_delete_beneficiary_response *out)
{
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    int found = resource_load_current(r, &rows_beneficiary, in->id,
                                      in->has_if_match ? in->if_match : NULL, b);
    if (found <= 0)
        return found;
    out->status = 204;
    if (b->status == BENEFICIARY_STATUS_ARCHIVED)
        return 0; /* archiving is idempotent: nothing changes, no new version */
    b->status = BENEFICIARY_STATUS_ARCHIVED;
    int saved = resource_save(r, &rows_beneficiary, b);
    if (saved <= 0)
        return saved;
    return audit_change(r, "beneficiary.archived", "beneficiary", b->id, "active", "archived",
                        NULL);
}

/* ---- beneficiary approval ----------------------------------------------------------------- */

/* Records person (the acting person of r's principal) as who asked for the approval. */
static int set_requested_by(struct req *r, const char *id, const char *person)
{
    struct db_stmt *st =
        storage_prepare("UPDATE beneficiaries SET requested_by = ? WHERE id = ? AND workspace_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, person);
    db_bind_text(st, 2, id);
    db_bind_text(st, 3, r->principal.workspace_id);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : db_failed("recording who asked for approval");
}

/* Who asked for the current approval (created it, or last changed where money goes); NULL
 * for beneficiaries from before this was recorded. */
static const char *requested_by(struct req *r, const char *id)
{
    struct db_stmt *st = storage_prepare("SELECT requested_by FROM beneficiaries WHERE id = ?");
    const char *who = NULL;
    if (!st)
        return NULL;
    db_bind_text(st, 1, id);
    if (db_step(st) == DB_ROW)
        who = db_column_dup(&r->arena, st, 0);
    db_reset(st);
    return who;
}

/* Moves a pending beneficiary to decision (approved / denied). 1 done, 0 answered, -1 failure. */
static int decide_beneficiary(struct req *r, const char *id, enum approval_status decision,
                              const char *reason, struct beneficiary **out)
{
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    int found = resource_load_current(r, &rows_beneficiary, id, NULL, b);
    if (found <= 0)
        return found;
    if (!pay_decider_is_person(r, arena_printf(&r->arena, "beneficiary %s", b->id)))
        return 0;
    if (b->status == BENEFICIARY_STATUS_ARCHIVED) {
        req_problem(r, 409, "beneficiary_archived", "Beneficiary %s is archived.", b->id);
        return 0;
    }
    if (b->approval_status != APPROVAL_STATUS_PENDING_APPROVAL) {
        req_problem(r, 409, "invalid_transition",
                    "Beneficiary %s is %s; only a pending_approval beneficiary can be approved "
                    "or denied.",
                    b->id, approval_status_str(b->approval_status));
        return 0;
    }
    /* Maker-checker by acting person (a service-account token is whoever minted it): who
     * asked for this approval, and whoever else made the details of this round. */
    const char *verb = decision == APPROVAL_STATUS_APPROVED ? "approve" : "deny";
    const char *asker = requested_by(r, b->id), *me = pay_person(r);
    if (!me || (asker && !(asker = pay_person_of(r, asker))))
        return pay_person_missing(r);
    if (asker && strcmp(asker, me) == 0) {
        req_problem(r, 403, "self_approval",
                    "You created or last changed these bank details; someone else must %s them.",
                    verb);
        return 0;
    }
    bool maker = false;
    if (ben_is_maker(r, b->id, me, &maker) != 0)
        return -1;
    if (maker) {
        req_problem(r, 403, "maker_cannot_approve",
                    "You entered or changed some of these bank details since they were last "
                    "decided; someone who did not must %s them.",
                    verb);
        return 0;
    }
    b->approval_status = decision;
    int saved = resource_save(r, &rows_beneficiary, b);
    if (saved <= 0)
        return saved;
    if (audit_change(r, decision == APPROVAL_STATUS_APPROVED ? "beneficiary.approved"
                                                              : "beneficiary.denied",
                     "beneficiary", b->id, "pending_approval", approval_status_str(decision),
                     reason) != 0)
        return -1;
    *out = b;
    return 1;
}

int payments_approve_beneficiary(struct req *r,
                                 const struct payments_approve_beneficiary_request *in,
                                 struct payments_approve_beneficiary_response *out)
{
    struct beneficiary *b = NULL;
    int done = decide_beneficiary(r, in->id, APPROVAL_STATUS_APPROVED, NULL, &b);
    if (done <= 0)
        return done;
    out->status = 200;
    out->body_200 = b;
    return 0;
}

int payments_deny_beneficiary(struct req *r, const struct payments_deny_beneficiary_request *in,
                              struct payments_deny_beneficiary_response *out)
{
    struct beneficiary *b = NULL;
    int done = decide_beneficiary(r, in->id, APPROVAL_STATUS_DENIED, in->body->reason, &b);
    if (done <= 0)
        return done;
    out->status = 200;
    out->body_200 = b;
    return 0;
}

/* ---- what payments ask of their beneficiary ----------------------------------------------- */

int pay_beneficiary_new_round(struct req *r, const char *id)
{
    struct db_stmt *up = storage_prepare("UPDATE beneficiaries SET approval_round = "
                                       "approval_round + 1 WHERE id = ? AND workspace_id = ?");
    if (!up)
        return -1;
    db_bind_text(up, 1, id);
    db_bind_text(up, 2, r->principal.workspace_id);
    int rc = db_step(up);
    db_reset(up);
    return rc == DB_DONE ? 0 : db_failed("a new approval round");
}

int pay_beneficiary_load(struct req *r, const char *id, struct beneficiary *b)
{
    return resource_load(r, &rows_beneficiary, id, b);
}

/* Re-checked when a payment is approved and again when it is sent (payments_settlement.c):
 * the beneficiary may have changed since the payment was entered. There is no list of
 * allowed countries: a change of the payee's country (like any change of who or where the
 * payee is) sends the beneficiary back to pending_approval, so an approved beneficiary's
 * country is one a checker approved. */
const char *pay_beneficiary_refusal(struct req *r, const struct payment *p, const char **why,
                                    bool *failed)
{
    struct beneficiary b;
    *failed = false;
    switch (resource_load(r, &rows_beneficiary, p->beneficiary_id, &b)) {
    case RESOURCE_FAILED:
        *failed = true;
        return NULL;
    case RESOURCE_MISSING: /* payments refer to it: it cannot go away */
        *why = arena_printf(&r->arena, "beneficiary %s no longer exists", p->beneficiary_id);
        return "beneficiary_archived";
    }
    if (b.status == BENEFICIARY_STATUS_ARCHIVED) {
        *why = arena_printf(&r->arena, "beneficiary %s is archived", b.id);
        return "beneficiary_archived";
    }
    if (b.approval_status != APPROVAL_STATUS_APPROVED) {
        *why = arena_printf(&r->arena,
                            "beneficiary %s is %s (its details changed since, or were denied)",
                            b.id, approval_status_str(b.approval_status));
        return "beneficiary_not_approved";
    }
    if (strcmp(b.currency, p->currency) != 0) {
        *why = arena_printf(&r->arena, "beneficiary %s is paid in %s, the payment is in %s",
                            b.id, b.currency, p->currency);
        return "beneficiary_mismatch";
    }
    return NULL;
}
