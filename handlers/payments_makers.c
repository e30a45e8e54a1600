/* Maker-checker for payments and beneficiaries (four eyes: whoever makes a payment or a payee
 * cannot approve it): who made what the approvals are given for, so that none of them can
 * approve or deny it.
 *
 * - The acting person. A service-account token acts for the person who minted it
 *   (service_account_tokens.created_by, read through handlers/admin.h): they hold its text.
 *   A stored service-account id (a row from before) stands for the account's creator (the
 *   service_accounts.created_by chain); a chain that ends at no user fails closed (403
 *   acting_person_unknown). A service account never approves or denies: decisions are a
 *   person's (403 approver_must_be_a_person).
 * - Payment makers. The creator (payments.created_by, and its acting person in created_for) and
 *   everyone who changed an approval-relevant field afterwards (payment_makers: one row per
 *   payment and person, with the fields as a bit mask of enum payment_approval_field, bit
 *   f - 1 for value f).
 * - Beneficiary makers. Per approval round (beneficiaries.approval_round, which a change of the
 *   payee's identity after a decision moves on): who created the details or changed them.
 * - The velocity rule: the approval tiers apply to the total of one person's payments to one
 *   beneficiary in one currency within the policy's window (payments_velocity_idx). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/admin.h"
#include "handlers/payments.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/jsonw.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define MAX_MAKERS 100
/* A service account created by a service account created by ...: followed this far. */
#define MAX_HOPS 8

static int db_failed(const char *what)
{
    log_error("maker-checker: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- the acting person ------------------------------------------------------------------- */

/* Answers 403 acting_person_unknown for a principal whose chain ends at no person. */
static const char *unknown_person(struct req *r, const char *principal_id, const char *why)
{
    req_problem(r, 403, "acting_person_unknown",
                "No person stands behind %s (%s); maker-checker cannot tell who acts, so "
                "nothing is done. An administrator re-creates the service account and its "
                "token.",
                principal_id, why);
    return NULL;
}

const char *pay_person_of(struct req *r, const char *principal_id)
{
    const char *who = principal_id;
    for (int hop = 0; hop < MAX_HOPS && token_is_service_subject(who); hop++) {
        char creator[64];
        int found = admin_service_account_creator(r->principal.workspace_id, who, creator,
                                                  sizeof creator);
        if (found < 0)
            return NULL;
        if (!found)
            return unknown_person(r, principal_id, "not a service account of this workspace");
        who = arena_strdup(&r->arena, creator);
    }
    /* Fail closed: a chain that does not end at a user is no person of its own. */
    if (!who || strncmp(who, "usr_", 4) != 0)
        return unknown_person(r, principal_id, "its chain of creators ends at no user");
    return who;
}

const char *pay_person(struct req *r)
{
    const char *me = r->principal.user_id;
    if (!token_is_service_subject(me))
        return me;
    /* A service-account token acts for the person who minted it (its jti is the token id):
     * the one holding its text, whoever created the account. */
    char minter[64];
    int found = r->principal.token_id
                    ? admin_service_token_minter(r->principal.workspace_id, me,
                                                 r->principal.token_id, minter, sizeof minter)
                    : 0;
    if (found < 0)
        return NULL;
    if (!found)
        return unknown_person(r, me, "its token is not on record");
    /* Tokens minted by a service account (rows from before only people could): its chain. */
    return pay_person_of(r, arena_strdup(&r->arena, minter));
}

int pay_person_missing(const struct req *r)
{
    return r->problem ? 0 : -1;
}

/* The principal person acts through, when it is not person themself (a service account);
 * else NULL. */
static const char *via(const struct req *r, const char *person)
{
    return strcmp(person, r->principal.user_id) != 0 ? r->principal.user_id : NULL;
}

void pay_maker_detail_begin(const struct req *r, struct jsonw *w, const char *person)
{
    const char *through = via(r, person);
    jsonw_init(w);
    jsonw_object_begin(w);
    jsonw_key(w, "maker");
    jsonw_string(w, person);
    if (through) {
        jsonw_key(w, "via");
        jsonw_string(w, through);
    }
}

int pay_decider_is_person(struct req *r, const char *what)
{
    if (!token_is_service_subject(r->principal.user_id))
        return 1;
    req_problem(r, 403, "approver_must_be_a_person",
                "You are service account %s; approving or denying %s is a person's decision, "
                "made with their own sign-in.",
                r->principal.user_id, what);
    return 0;
}

/* ---- approvals are given for the beneficiary as it was ------------------------------------ */

int pay_beneficiary_round(struct req *r, const char *id, int64_t *round)
{
    struct db_stmt *st = storage_prepare(
        "SELECT approval_round FROM beneficiaries WHERE id = ? AND workspace_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, r->principal.workspace_id);
    int rc = db_step(st);
    *round = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : db_failed("a beneficiary's round");
}

/* Ends a payment's audit detail with its approval round and the approvals that round needs,
 * and gives its text (in r->arena; NULL on failure). */
static const char *detail_end(struct req *r, struct jsonw *w, const struct payment_row *x)
{
    jsonw_key(w, "approval_round");
    jsonw_int(w, x->approval_round);
    jsonw_key(w, "approvals_required");
    jsonw_int(w, x->obj.approval->required);
    jsonw_object_end(w);
    return resource_json_text(&r->arena, w);
}

/* The audit detail of approvals voided by a beneficiary change (JSON), in r->arena. */
static const char *voided_detail(struct req *r, const struct payment_row *x, int64_t before)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "approvals_voided");
    jsonw_string(&w, "beneficiary_changed");
    jsonw_key(&w, "beneficiary_id");
    jsonw_string(&w, x->obj.beneficiary_id);
    jsonw_key(&w, "beneficiary_round");
    jsonw_object_begin(&w);
    jsonw_key(&w, "before");
    jsonw_int(&w, before);
    jsonw_key(&w, "after");
    jsonw_int(&w, x->beneficiary_round);
    jsonw_object_end(&w);
    return detail_end(r, &w, x);
}

int pay_approvals_still_hold(struct req *r, struct payment_row *x)
{
    struct payment *p = &x->obj;
    int64_t now = 0;
    if (pay_beneficiary_round(r, p->beneficiary_id, &now) != 0)
        return -1;
    if (x->beneficiary_round == 0 || now == x->beneficiary_round)
        return 1;
    /* The approvals collected were given for other bank details: a new round for the
     * beneficiary as it is, under the policy as it is. */
    const char *creator = x->created_for ? x->created_for : p->created_by;
    int64_t need = pay_approvals_needed_for(r, x, &creator, 1), before = x->beneficiary_round;
    if (need < 0)
        return -1;
    enum payment_status status = p->status;
    int64_t received = p->approval->received;
    x->approval_round++;
    x->beneficiary_round = now;
    p->approval->required = need;
    p->approval->received = 0;
    p->approval->approvers_count = 0;
    pay_set_status(x, need > 0 ? PAYMENT_STATUS_PENDING_APPROVAL : PAYMENT_STATUS_APPROVED);
    const char *detail = voided_detail(r, x, before);
    if (!detail || pay_save(r, x, PAY_UPDATE_STATE) != 0 ||
        pay_record_change(r, "payment.updated", p, status, detail) != 0 ||
        (p->status == PAYMENT_STATUS_APPROVED &&
         pay_record_change(r, "payment.approved", p, status,
                           "no approval required by the policy") != 0))
        return -1;
    r->keep_writes = true; /* the refusal itself changed the payment */
    req_problem(r, 409, "beneficiary_changed",
                "The bank details of beneficiary %s changed and were approved again after "
                "approvals of payment %s were given; those %lld approval(s) no longer count. "
                "Review the payment with the beneficiary as it is now and approve it again.",
                p->beneficiary_id, p->id, (long long)received);
    return 0;
}

/* ---- payment makers ---------------------------------------------------------------------- */

static unsigned field_bit(enum payment_approval_field f)
{
    return 1u << (f - 1);
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

unsigned pay_changed_fields(const struct payment *a, const struct payment *b)
{
    unsigned m = 0;
    if (a->amount != b->amount)
        m |= field_bit(PAYMENT_APPROVAL_FIELD_AMOUNT);
    if (strcmp(a->currency, b->currency) != 0)
        m |= field_bit(PAYMENT_APPROVAL_FIELD_CURRENCY);
    if (strcmp(a->beneficiary_id, b->beneficiary_id) != 0)
        m |= field_bit(PAYMENT_APPROVAL_FIELD_BENEFICIARY_ID);
    if (strcmp(a->originating_account, b->originating_account) != 0)
        m |= field_bit(PAYMENT_APPROVAL_FIELD_ORIGINATING_ACCOUNT);
    if (a->type != b->type)
        m |= field_bit(PAYMENT_APPROVAL_FIELD_TYPE);
    if (a->priority != b->priority)
        m |= field_bit(PAYMENT_APPROVAL_FIELD_PRIORITY);
    if (strcmp(a->effective_date, b->effective_date) != 0)
        m |= field_bit(PAYMENT_APPROVAL_FIELD_EFFECTIVE_DATE);
    if (!same(a->has_remittance_information ? a->remittance_information : NULL,
              b->has_remittance_information ? b->remittance_information : NULL))
        m |= field_bit(PAYMENT_APPROVAL_FIELD_REMITTANCE_INFORMATION);
    if (!same(a->has_funding_conversion_id ? a->funding_conversion_id : NULL,
              b->has_funding_conversion_id ? b->funding_conversion_id : NULL))
        m |= field_bit(PAYMENT_APPROVAL_FIELD_FUNDING_CONVERSION_ID);
    return m;
}

unsigned pay_funding_fields(void)
{
    return field_bit(PAYMENT_APPROVAL_FIELD_AMOUNT) | field_bit(PAYMENT_APPROVAL_FIELD_CURRENCY) |
           field_bit(PAYMENT_APPROVAL_FIELD_FUNDING_CONVERSION_ID);
}

/* One field's value as JSON (NULL remittance as null). */
static void field_value(struct jsonw *w, const struct payment *p, enum payment_approval_field f)
{
    switch (f) {
    case PAYMENT_APPROVAL_FIELD_AMOUNT:
        jsonw_int(w, p->amount);
        return;
    case PAYMENT_APPROVAL_FIELD_CURRENCY:
        jsonw_string(w, p->currency);
        return;
    case PAYMENT_APPROVAL_FIELD_BENEFICIARY_ID:
        jsonw_string(w, p->beneficiary_id);
        return;
    case PAYMENT_APPROVAL_FIELD_ORIGINATING_ACCOUNT:
        jsonw_string(w, p->originating_account);
        return;
    case PAYMENT_APPROVAL_FIELD_TYPE:
        jsonw_string(w, payment_type_str(p->type));
        return;
    case PAYMENT_APPROVAL_FIELD_PRIORITY:
        jsonw_string(w, payment_priority_str(p->priority));
        return;
    case PAYMENT_APPROVAL_FIELD_EFFECTIVE_DATE:
        jsonw_string(w, p->effective_date);
        return;
    case PAYMENT_APPROVAL_FIELD_REMITTANCE_INFORMATION:
        if (p->has_remittance_information)
            jsonw_string(w, p->remittance_information);
        else
            jsonw_null(w);
        return;
    case PAYMENT_APPROVAL_FIELD_FUNDING_CONVERSION_ID:
        if (p->has_funding_conversion_id)
            jsonw_string(w, p->funding_conversion_id);
        else
            jsonw_null(w);
        return;
    }
}

const char *pay_change_detail(struct req *r, const struct payment *before,
                              const struct payment *after, unsigned fields, const char *person,
                              const struct payment_row *x)
{
    struct jsonw w;
    pay_maker_detail_begin(r, &w, person);
    jsonw_key(&w, "changed");
    jsonw_object_begin(&w);
    for (int f = PAYMENT_APPROVAL_FIELD_AMOUNT; f <= PAYMENT_APPROVAL_FIELD_FUNDING_CONVERSION_ID;
         f++) {
        if (!(fields & field_bit(f)))
            continue;
        jsonw_key(&w, payment_approval_field_str(f));
        jsonw_object_begin(&w);
        jsonw_key(&w, "before");
        field_value(&w, before, f);
        jsonw_key(&w, "after");
        field_value(&w, after, f);
        jsonw_object_end(&w);
    }
    jsonw_object_end(&w);
    return detail_end(r, &w, x);
}

int pay_add_maker(struct req *r, const struct payment *p, const char *person, unsigned fields)
{
    struct db_stmt *st = storage_prepare(
        "INSERT INTO payment_makers (payment_id, person_id, via, fields, first_at, last_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (payment_id, person_id) DO UPDATE SET "
        "via = ?3, fields = payment_makers.fields | ?4, last_at = ?5");
    if (!st)
        return -1;
    db_bind_text(st, 1, p->id);
    db_bind_text(st, 2, person);
    db_bind_text(st, 3, via(r, person));
    db_bind_int64(st, 4, fields);
    db_bind_text(st, 5, p->updated_at); /* the change's time */
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE || pay_note_maker(p->id) != 0)
        return db_failed("recording a maker");
    return 0;
}

int pay_maker_fields(const char *payment_id, const char *person, unsigned *fields)
{
    struct db_stmt *st = storage_prepare(
        "SELECT fields FROM payment_makers WHERE payment_id = ? AND person_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, payment_id);
    db_bind_text(st, 2, person);
    int rc = db_step(st);
    *fields = rc == DB_ROW ? (unsigned)db_column_int64(st, 0) : 0;
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("reading a maker");
    return rc == DB_ROW;
}

const char *pay_fields_text(struct req *r, unsigned fields)
{
    const char *out = "";
    for (int f = PAYMENT_APPROVAL_FIELD_AMOUNT; f <= PAYMENT_APPROVAL_FIELD_FUNDING_CONVERSION_ID;
         f++)
        if (fields & field_bit(f))
            out = arena_printf(&r->arena, "%s%s%s", out, *out ? ", " : "",
                               payment_approval_field_str(f));
    return out;
}

void pay_set_creator(struct req *r, struct payment_row *x)
{
    struct payment *p = &x->obj;
    p->makers = arena_grow(&r->arena, NULL, 0, sizeof *p->makers); /* grows in read_maker */
    struct payment_maker *m = &p->makers[0];
    m->user_id = x->created_for ? x->created_for : p->created_by;
    m->has_via = strcmp(m->user_id, p->created_by) != 0;
    m->via = m->has_via ? p->created_by : NULL;
    m->action = PAYMENT_MAKER_ACTION_CREATED;
    m->at = p->created_at;
    p->makers_count = 1;
}

/* A changed-entry from the row's columns col.. (person_id, via, fields, last_at). */
static void read_maker(struct req *r, struct db_stmt *st, int col, struct payment *p)
{
    if (p->makers_count >= MAX_MAKERS)
        return;
    p->makers = arena_grow(&r->arena, p->makers, p->makers_count, sizeof *p->makers);
    struct payment_maker *m = &p->makers[p->makers_count++];
    unsigned fields = (unsigned)db_column_int64(st, col + 2);
    m->user_id = db_column_dup(&r->arena, st, col);
    m->via = db_column_dup(&r->arena, st, col + 1);
    m->has_via = m->via != NULL;
    m->action = PAYMENT_MAKER_ACTION_CHANGED;
    m->fields = arena_alloc(&r->arena, 8 * sizeof *m->fields);
    m->fields_count = 0;
    for (int f = PAYMENT_APPROVAL_FIELD_AMOUNT; f <= PAYMENT_APPROVAL_FIELD_FUNDING_CONVERSION_ID;
         f++)
        if (fields & field_bit(f))
            m->fields[m->fields_count++] = f;
    m->has_fields = true;
    m->at = db_column_dup(&r->arena, st, col + 3);
}

int pay_load_makers(struct req *r, struct payment *p)
{
    struct db_stmt *st = storage_prepare(
        "SELECT person_id, via, fields, last_at FROM payment_makers WHERE payment_id = ? "
        "ORDER BY first_at, person_id");
    if (!st)
        return -1;
    db_bind_text(st, 1, p->id);
    p->makers_count = p->makers_count ? 1 : 0; /* the creator stays; the others are read again */
    int rc;
    while ((rc = db_step(st)) == DB_ROW)
        read_maker(r, st, 0, p);
    db_reset(st);
    return rc == DB_DONE ? 0 : db_failed("reading makers");
}

/* A changed-entry of the page's payment p (row columns 1..). */
static void page_maker(struct req *r, struct db_stmt *st, struct payment *p)
{
    read_maker(r, st, 1, p);
}

int pay_load_page_makers(struct req *r, struct payment **items, size_t n)
{
    return pay_page_rows(r, items, n,
                         "SELECT payment_id, person_id, via, fields, last_at FROM payment_makers "
                         "WHERE payment_id IN " DB_IN_LIST " "
                         "ORDER BY payment_id, first_at, person_id",
                         page_maker, "maker-checker: reading a page's makers");
}

/* ---- the velocity rule ------------------------------------------------------------------- */

/* The statuses whose payments count towards a person's total (the others ended without money
 * leaving, or came back). */
#define VELOCITY_STATUSES                                                                      \
    "('pending_approval', 'approved', 'scheduled', 'processing', 'sent', 'completed')"

int pay_velocity_total(struct req *r, const struct payment_row *x, const char *person,
                       int64_t window_hours, int64_t enough, int64_t *total)
{
    (void)r;
    const struct payment *p = &x->obj;
    char since[40];
    format_time_rfc3339(clock_now_ms() - window_hours * INT64_C(3600000), since, sizeof since);
    /* payments_velocity_idx (beneficiary_id, created_for, created_at) finds them, newest
     * first, in pages (keyset: each after the last row of the one before); the sum stops once
     * it reaches enough (the largest tier), so a busy pair costs a few rows. Pages, because
     * PostgreSQL hands a statement's rows over all at once: without a LIMIT, a pair with
     * thousands of payments in the window cost thousands of rows per payment created. */
    struct db_stmt *st = storage_prepare(
        "SELECT amount, created_at, id FROM payments WHERE beneficiary_id = ?1 "
        "AND created_for = ?2 AND created_at >= ?3 AND workspace_id = ?4 AND currency = ?5 "
        "AND id <> ?6 AND status IN " VELOCITY_STATUSES " AND (CAST(?7 AS TEXT) IS NULL OR "
        "created_at < ?7 OR (created_at = ?7 AND id < ?8)) "
        "ORDER BY created_at DESC, id DESC LIMIT ?9");
    if (!st)
        return -1;
    int64_t sum = p->amount;
    int64_t page = 16; /* then 256 */
    char last_at[40] = "", last_id[ID_MAX] = "";
    for (;;) {
        db_bind_text(st, 1, p->beneficiary_id);
        db_bind_text(st, 2, person);
        db_bind_text(st, 3, since);
        db_bind_text(st, 4, p->workspace_id);
        db_bind_text(st, 5, p->currency);
        db_bind_text(st, 6, p->id);
        db_bind_text(st, 7, last_at[0] ? last_at : NULL);
        db_bind_text(st, 8, last_id);
        db_bind_int64(st, 9, page);
        int rc = DB_DONE, rows = 0;
        while (sum < enough && (rc = db_step(st)) == DB_ROW) {
            sum += db_column_int64(st, 0); /* each at most 2^53 - 1, and sum < enough */
            snprintf(last_at, sizeof last_at, "%s", db_column_text(st, 1));
            snprintf(last_id, sizeof last_id, "%s", db_column_text(st, 2));
            rows++;
        }
        db_reset(st);
        if (sum >= enough)
            break;
        if (rc != DB_DONE)
            return db_failed("the velocity total");
        if (rows < page) /* the window's last page */
            break;
        page = 256; /* the same statement, bound again */
    }
    *total = sum;
    return 0;
}

/* ---- beneficiary makers ------------------------------------------------------------------ */

int ben_add_maker(struct req *r, const char *beneficiary_id, const char *person, unsigned fields,
                  bool new_round)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    if (new_round && pay_beneficiary_new_round(r, beneficiary_id) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "INSERT INTO beneficiary_makers (beneficiary_id, round, person_id, via, fields, made_at) "
        "SELECT id, approval_round, ?2, ?3, CAST(?4 AS BIGINT), ?5 FROM beneficiaries WHERE "
        "id = ?1 AND workspace_id = ?6 ON CONFLICT (beneficiary_id, round, person_id) DO UPDATE "
        "SET via = ?3, fields = beneficiary_makers.fields | ?4, made_at = ?5");
    if (!st)
        return -1;
    db_bind_text(st, 1, beneficiary_id);
    db_bind_text(st, 2, person);
    db_bind_text(st, 3, via(r, person));
    db_bind_int64(st, 4, fields);
    db_bind_text(st, 5, now);
    db_bind_text(st, 6, r->principal.workspace_id);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : db_failed("recording a beneficiary maker");
}

int ben_is_maker(struct req *r, const char *beneficiary_id, const char *person, bool *is)
{
    struct db_stmt *st = storage_prepare(
        "SELECT 1 FROM beneficiary_makers m JOIN beneficiaries b ON b.id = m.beneficiary_id "
        "AND m.round = b.approval_round WHERE b.id = ? AND b.workspace_id = ? AND "
        "m.person_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, beneficiary_id);
    db_bind_text(st, 2, r->principal.workspace_id);
    db_bind_text(st, 3, person);
    int rc = db_step(st);
    *is = rc == DB_ROW;
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : db_failed("reading beneficiary makers");
}
