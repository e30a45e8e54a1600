/* The payments API's beneficiaries (after Modern Treasury's external accounts and Open
 * Banking's beneficiaries): payee bank details owned by one
 * workspace, changed under optimistic concurrency (version / ETag / If-Match), approved by
 * someone who made none of the details (maker-checker, payments_makers.c), archived rather
 * than deleted because payments refer to them. */
#include "generated/payments_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/payments.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/page.h"
#include "runtime/storage.h"

#define BEN_PATH "/v1/beneficiaries"

/* Column order shared by every SELECT below and by row_to_beneficiary(). */
#define BEN_COLUMNS                                                                          \
    "id, workspace_id, name, account_holder_name, scheme, identification, bank_bic, "        \
    "bank_routing_number, bank_name, bank_country, currency, country, beneficiary_type, "    \
    "counterparty_id, external_id, email, status, verification_status, approval_status, "    \
    "metadata, version, created_at, updated_at"

enum { LOAD_FOUND = 0, LOAD_MISSING = 1, LOAD_FAILED = -1 };

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

/* -1 for a scheme the spec does not know (a row written by a newer server). */
static int account_identification_from(struct req *r, const char *scheme, const char *ident,
                                       struct account_identification *a)
{
    memset(a, 0, sizeof *a);
    if (strcmp(scheme, "IBAN") == 0) {
        a->kind = ACCOUNT_IDENTIFICATION_KIND_IBAN;
        a->iban = arena_alloc(&r->arena, sizeof *a->iban);
        a->iban->scheme = "IBAN";
        a->iban->identification = ident;
    } else if (strcmp(scheme, "SortCodeAccountNumber") == 0) {
        a->kind = ACCOUNT_IDENTIFICATION_KIND_SORT_CODE_ACCOUNT_NUMBER;
        a->sort_code_account_number = arena_alloc(&r->arena, sizeof *a->sort_code_account_number);
        a->sort_code_account_number->scheme = "SortCodeAccountNumber";
        a->sort_code_account_number->identification = ident;
    } else if (strcmp(scheme, "ABA") == 0) {
        a->kind = ACCOUNT_IDENTIFICATION_KIND_ABA;
        a->aba = arena_alloc(&r->arena, sizeof *a->aba);
        a->aba->scheme = "ABA";
        a->aba->identification = ident;
    } else if (strcmp(scheme, "BBAN") == 0) {
        a->kind = ACCOUNT_IDENTIFICATION_KIND_BBAN;
        a->bban = arena_alloc(&r->arena, sizeof *a->bban);
        a->bban->scheme = "BBAN";
        a->bban->identification = ident;
    } else {
        return -1;
    }
    return 0;
}

/* ---- rows --------------------------------------------------------------------------------- */

static int row_to_beneficiary(struct req *r, struct db_stmt *st, struct beneficiary *b)
{
    memset(b, 0, sizeof *b);
    b->id = pay_column(r, st, 0);
    b->object = "beneficiary";
    b->workspace_id = pay_column(r, st, 1);
    b->name = pay_column(r, st, 2);
    b->account_holder_name = pay_column(r, st, 3);
    b->account_identification = arena_alloc(&r->arena, sizeof *b->account_identification);
    if (account_identification_from(r, pay_column(r, st, 4), pay_column(r, st, 5),
                                    b->account_identification) != 0) {
        log_error("beneficiaries: %s has an unknown account scheme", b->id);
        return -1;
    }
    const char *bic = pay_column(r, st, 6), *routing = pay_column(r, st, 7), *bank_name = pay_column(r, st, 8),
               *bank_country = pay_column(r, st, 9);
    if (bic || routing || bank_name || bank_country) {
        struct bank_details *k = arena_alloc(&r->arena, sizeof *k);
        k->bic = bic;
        k->has_bic = bic != NULL;
        k->routing_number = routing;
        k->has_routing_number = routing != NULL;
        k->name = bank_name;
        k->has_name = bank_name != NULL;
        k->country = bank_country;
        k->has_country = bank_country != NULL;
        b->bank = k;
        b->has_bank = true;
    }
    b->currency = pay_column(r, st, 10);
    b->country = pay_column(r, st, 11);
    b->beneficiary_type = beneficiary_type_parse(pay_column(r, st, 12));
    b->counterparty_id = pay_column(r, st, 13);
    b->has_counterparty_id = b->counterparty_id != NULL;
    b->external_id = pay_column(r, st, 14);
    b->has_external_id = b->external_id != NULL;
    b->email = pay_column(r, st, 15);
    b->has_email = b->email != NULL;
    b->status = beneficiary_status_parse(pay_column(r, st, 16));
    b->verification_status = verification_status_parse(pay_column(r, st, 17));
    b->approval_status = approval_status_parse(pay_column(r, st, 18));
    if (pay_metadata_parse(r, pay_column(r, st, 19), &b->metadata, &b->metadata_count) != 0) {
        log_error("beneficiaries: %s has unreadable metadata", b->id);
        return -1;
    }
    b->version = db_column_int64(st, 20);
    b->created_at = pay_column(r, st, 21);
    b->updated_at = pay_column(r, st, 22);
    if (!b->beneficiary_type || !b->status || !b->verification_status || !b->approval_status) {
        log_error("beneficiaries: %s has a status the spec does not know", b->id);
        return -1;
    }
    return 0;
}

/* The caller's beneficiary with this id: LOAD_FOUND, LOAD_MISSING (unknown, another
 * workspace's, or not a beneficiary id at all: all the same 404) or LOAD_FAILED. */
static int load(struct req *r, const char *id, struct beneficiary *b)
{
    if (!id_valid(id, "ben"))
        return LOAD_MISSING;
    struct db_stmt *st = storage_prepare("SELECT " BEN_COLUMNS
                                       " FROM beneficiaries WHERE id = ? AND workspace_id = ?");
    if (!st)
        return LOAD_FAILED;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, r->principal.workspace_id);
    int rc = db_step(st), ret;
    if (rc == DB_ROW)
        ret = row_to_beneficiary(r, st, b) == 0 ? LOAD_FOUND : LOAD_FAILED;
    else if (rc == DB_DONE)
        ret = LOAD_MISSING;
    else
        ret = db_failed("load");
    db_reset(st);
    return ret;
}

static void not_found(struct req *r, const char *id)
{
    req_problem(r, 404, "not_found", "No beneficiary %s in this workspace.", id);
}

/* Binds every stored column of b in BEN_COLUMNS order (metadata as given text). */
static void bind_all(struct db_stmt *st, const struct beneficiary *b, const char *metadata)
{
    const struct bank_details *k = b->has_bank ? b->bank : NULL;
    db_bind_text(st, 1, b->id);
    db_bind_text(st, 2, b->workspace_id);
    db_bind_text(st, 3, b->name);
    db_bind_text(st, 4, b->account_holder_name);
    db_bind_text(st, 5, scheme_of(b->account_identification));
    db_bind_text(st, 6, identification_of(b->account_identification));
    pay_bind_opt(st, 7, k && k->has_bic ? k->bic : NULL);
    pay_bind_opt(st, 8, k && k->has_routing_number ? k->routing_number : NULL);
    pay_bind_opt(st, 9, k && k->has_name ? k->name : NULL);
    pay_bind_opt(st, 10, k && k->has_country ? k->country : NULL);
    db_bind_text(st, 11, b->currency);
    db_bind_text(st, 12, b->country);
    db_bind_text(st, 13, beneficiary_type_str(b->beneficiary_type));
    pay_bind_opt(st, 14, b->has_counterparty_id ? b->counterparty_id : NULL);
    pay_bind_opt(st, 15, b->has_external_id ? b->external_id : NULL);
    pay_bind_opt(st, 16, b->has_email ? b->email : NULL);
    db_bind_text(st, 17, beneficiary_status_str(b->status));
    db_bind_text(st, 18, verification_status_str(b->verification_status));
    db_bind_text(st, 19, approval_status_str(b->approval_status));
    db_bind_text(st, 20, metadata);
    db_bind_int64(st, 21, b->version);
    db_bind_text(st, 22, b->created_at);
    db_bind_text(st, 23, b->updated_at);
}

static int insert(const struct beneficiary *b)
{
    char *metadata = pay_metadata_json(b->metadata, b->metadata_count);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO beneficiaries (" BEN_COLUMNS ") VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    int ret = -1;
    if (!st)
        goto out;
    bind_all(st, b, metadata);
    if (db_step(st) == DB_DONE)
        ret = 0;
    else
        db_failed("insert");
    db_reset(st);
out:
    free(metadata);
    return ret;
}

/* Writes b over the stored row, which must still be at version old_version (the request's
 * transaction holds the write lock, so this is a guard, not a race). */
static int store(const struct beneficiary *b, int64_t old_version)
{
    char *metadata = pay_metadata_json(b->metadata, b->metadata_count);
    struct db_stmt *st = storage_prepare(
        "UPDATE beneficiaries SET id = ?1, workspace_id = ?2, name = ?3, account_holder_name = ?4, "
        "scheme = ?5, identification = ?6, bank_bic = ?7, bank_routing_number = ?8, "
        "bank_name = ?9, bank_country = ?10, currency = ?11, country = ?12, "
        "beneficiary_type = ?13, counterparty_id = ?14, external_id = ?15, email = ?16, "
        "status = ?17, verification_status = ?18, approval_status = ?19, metadata = ?20, "
        "version = ?21, created_at = ?22, updated_at = ?23 "
        "WHERE id = ?1 AND workspace_id = ?2 AND version = ?24");
    int ret = -1;
    if (!st)
        goto out;
    bind_all(st, b, metadata);
    db_bind_int64(st, 24, old_version);
    if (db_step(st) != DB_DONE)
        db_failed("update");
    else if (storage_changes() != 1)
        log_error("beneficiaries: %s changed under a held write lock", b->id);
    else
        ret = 0;
    db_reset(st);
out:
    free(metadata);
    return ret;
}

/* Stores b, changed from the stored row at b->version, as its next version at the current
 * time. 0 / -1. */
static int store_next_version(struct req *r, struct beneficiary *b)
{
    int64_t old_version = b->version;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    b->updated_at = arena_strdup(&r->arena, now);
    b->version = old_version + 1;
    return store(b, old_version);
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

/* The caller's beneficiary for an operation on it: answers 404 when there is none and 412
 * when if_match (NULL: unconditional) names another version. 1 = go on with *b, 0 = answered,
 * -1 = failure. */
static int load_current(struct req *r, const char *id, const char *if_match,
                        struct beneficiary *b)
{
    switch (load(r, id, b)) {
    case LOAD_MISSING:
        not_found(r, id);
        return 0;
    case LOAD_FAILED:
        return -1;
    }
    if (if_match && !req_if_match(if_match, b->version)) {
        req_precondition_failed(r, if_match, b->version);
        return 0;
    }
    return 1;
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
    return pay_json_text(r, &w);
}

static int set_requested_by(struct req *r, const char *id, const char *person);

/* ---- operations --------------------------------------------------------------------------- */

static int beneficiary_row(struct req *r, struct db_stmt *st, void *item)
{
    return row_to_beneficiary(r, st, item);
}

int payments_list_beneficiaries(struct req *r, const struct payments_list_beneficiaries_request *in,
                                struct payments_list_beneficiaries_response *out)
{
    const char *status = beneficiary_status_set(&r->arena, in->status, in->status_count);
    const char *currency = in->has_currency ? in->currency : NULL;
    /* The cursor is bound to the workspace and the filters it was issued for. */
    const char *filters = arena_printf(&r->arena, "w=%s&status=%s&currency=%s",
                                       r->principal.workspace_id, status ? status : "",
                                       currency ? currency : "");
    struct page pg;
    if (page_begin(r, &pg, filters, in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    /* ?2, the status set ",a,b,", holds the row's ",status," when taking it out shortens
     * it: an exact substring test both engines have (no instr() in PostgreSQL). */
    struct db_stmt *st = storage_prepare(
        "SELECT " BEN_COLUMNS " FROM beneficiaries WHERE workspace_id = ?1 "
        "AND (CAST(?2 AS TEXT) IS NULL "
        "     OR length(replace(?2, ',' || status || ',', '')) < length(?2)) "
        "AND (CAST(?3 AS TEXT) IS NULL OR currency = ?3) "
        "AND (CAST(?4 AS TEXT) IS NULL OR created_at < ?4 OR (created_at = ?4 AND id < ?5)) "
        "ORDER BY created_at DESC, id DESC LIMIT ?6");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    pay_bind_opt(st, 2, status);
    pay_bind_opt(st, 3, currency);
    page_bind(&pg, st, 4, 5, 6);
    struct beneficiary_page *page = arena_alloc(&r->arena, sizeof *page);
    page->data = arena_alloc(&r->arena, (size_t)in->limit * sizeof *page->data);
    if (page_fill(r, &pg, st, page->data, sizeof *page->data, beneficiary_row) != 0)
        return -1;
    page->data_count = pg.count;
    page->has_more = pg.has_more;
    const struct beneficiary *last = pg.count ? &page->data[pg.count - 1] : NULL;
    page->next_cursor = last ? page_next(r, &pg, last->created_at, last->id) : NULL;
    page->next_cursor_is_null = !page->next_cursor;
    out->status = 200;
    out->body_200 = page;
    return 0;
}

int payments_create_beneficiary(struct req *r, const struct payments_create_beneficiary_request *in,
                                struct payments_create_beneficiary_response *out)
{
    const struct beneficiary_create *c = in->body;
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    char now[40];

    format_now_rfc3339(now, sizeof now);
    b->id = id_new(&r->arena, "ben");
    b->object = "beneficiary";
    b->workspace_id = r->principal.workspace_id;
    b->name = c->name;
    b->account_holder_name = c->account_holder_name;
    b->account_identification = c->account_identification;
    b->bank = c->bank;
    b->has_bank = c->has_bank;
    b->currency = c->currency;
    b->country = c->country;
    b->beneficiary_type = c->has_beneficiary_type ? c->beneficiary_type : BENEFICIARY_TYPE_ORDINARY;
    b->counterparty_id = c->counterparty_id;
    b->has_counterparty_id = c->has_counterparty_id;
    b->external_id = c->external_id;
    b->has_external_id = c->has_external_id;
    b->email = c->email;
    b->has_email = c->has_email;
    b->status = BENEFICIARY_STATUS_ACTIVE;
    b->verification_status = VERIFICATION_STATUS_UNVERIFIED;
    b->approval_status = APPROVAL_STATUS_PENDING_APPROVAL;
    b->metadata = c->has_metadata ? c->metadata : NULL;
    b->metadata_count = c->has_metadata ? c->metadata_count : 0;
    b->version = 1;
    b->created_at = b->updated_at = arena_strdup(&r->arena, now);

    int refused = refuse_invalid(r, b);
    if (refused != 0)
        return refused < 0 ? -1 : 0;
    const char *me = pay_person(r);
    if (!me)
        return pay_person_missing(r);
    if (insert(b) != 0 || set_requested_by(r, b->id, me) != 0 ||
        ben_add_maker(r, b->id, me, BEN_CREATED, false) != 0 ||
        audit_change(r, "beneficiary.created", "beneficiary", b->id, NULL,
                     approval_status_str(b->approval_status), NULL) != 0)
        return -1;
    out->status = 201;
    out->body_201 = b;
    out->location = arena_printf(&r->arena, BEN_PATH "/%s", b->id);
    out->etag = req_etag(r, b->version);
    return 0;
}

int payments_get_beneficiary(struct req *r, const struct payments_get_beneficiary_request *in,
                             struct payments_get_beneficiary_response *out)
{
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    int found = load_current(r, in->id, NULL, b);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = b;
    out->etag = req_etag(r, b->version);
    return 0;
}

int payments_update_beneficiary(struct req *r, const struct payments_update_beneficiary_request *in,
                                struct payments_update_beneficiary_response *out)
{
    const struct beneficiary_update *u = in->body;
    struct beneficiary before, *b = arena_alloc(&r->arena, sizeof *b);
    int found = load_current(r, in->id, in->has_if_match ? in->if_match : NULL, b);
    if (found <= 0)
        return found;
    if (b->status == BENEFICIARY_STATUS_ARCHIVED) {
        req_problem(r, 409, "beneficiary_archived",
                    "Beneficiary %s is archived and can no longer be changed.", b->id);
        return 0;
    }
    before = *b;

    if (u->has_name)
        b->name = u->name;
    if (u->has_account_holder_name)
        b->account_holder_name = u->account_holder_name;
    if (u->has_account_identification)
        b->account_identification = u->account_identification;
    if (u->has_bank) {
        b->bank = u->bank;
        b->has_bank = true;
    }
    if (u->has_currency)
        b->currency = u->currency;
    if (u->has_country)
        b->country = u->country;
    if (u->has_beneficiary_type)
        b->beneficiary_type = u->beneficiary_type;
    if (u->has_counterparty_id) {
        b->counterparty_id = u->counterparty_id_is_null ? NULL : u->counterparty_id;
        b->has_counterparty_id = !u->counterparty_id_is_null;
    }
    if (u->has_external_id) {
        b->external_id = u->external_id_is_null ? NULL : u->external_id;
        b->has_external_id = !u->external_id_is_null;
    }
    if (u->has_email) {
        b->email = u->email_is_null ? NULL : u->email;
        b->has_email = !u->email_is_null;
    }
    if (u->has_metadata) {
        b->metadata = u->metadata;
        b->metadata_count = u->metadata_count;
    }
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
    if (store_next_version(r, b) != 0 ||
        (changed && (set_requested_by(r, b->id, me) != 0 ||
                     ben_add_maker(r, b->id, me, changed,
                                   before.approval_status != APPROVAL_STATUS_PENDING_APPROVAL) !=
                         0)) ||
        audit_change(r, "beneficiary.updated", "beneficiary", b->id,
                     approval_status_str(before.approval_status),
                     approval_status_str(b->approval_status), detail) != 0)
        return -1;
    out->status = 200;
    out->body_200 = b;
    out->etag = req_etag(r, b->version);
    return 0;
}

int payments_delete_beneficiary(struct req *r, const struct payments_delete_beneficiary_request *in,
                                struct payments_delete_beneficiary_response *out)
{
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    int found = load_current(r, in->id, in->has_if_match ? in->if_match : NULL, b);
    if (found <= 0)
        return found;
    out->status = 204;
    if (b->status == BENEFICIARY_STATUS_ARCHIVED)
        return 0; /* archiving is idempotent: nothing changes, no new version */
    b->status = BENEFICIARY_STATUS_ARCHIVED;
    if (store_next_version(r, b) != 0)
        return -1;
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
        who = pay_column(r, st, 0);
    db_reset(st);
    return who;
}

/* Moves a pending beneficiary to decision (approved / denied). 1 done, 0 answered, -1 failure. */
static int decide_beneficiary(struct req *r, const char *id, enum approval_status decision,
                              const char *reason, struct beneficiary **out)
{
    struct beneficiary *b = arena_alloc(&r->arena, sizeof *b);
    int found = load_current(r, id, NULL, b);
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
    if (store_next_version(r, b) != 0 ||
        audit_change(r, decision == APPROVAL_STATUS_APPROVED ? "beneficiary.approved"
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
    out->etag = req_etag(r, b->version);
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
    out->etag = req_etag(r, b->version);
    return 0;
}

/* ---- what payments ask of their beneficiary ----------------------------------------------- */

int pay_beneficiary_load(struct req *r, const char *id, struct beneficiary *b)
{
    switch (load(r, id, b)) {
    case LOAD_FOUND:
        return 1;
    case LOAD_MISSING:
        return 0;
    }
    return -1;
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
    switch (load(r, p->beneficiary_id, &b)) {
    case LOAD_FAILED:
        *failed = true;
        return NULL;
    case LOAD_MISSING: /* payments refer to it: it cannot go away */
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
