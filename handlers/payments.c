/* The payments API. For now its beneficiaries (domain.md §1.3): payee bank details owned by
 * one workspace, listed newest first with signed cursors, changed under optimistic concurrency
 * (version / ETag / If-Match) and archived rather than deleted, because payments refer to them. */
#include "generated/payments_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/json.h"
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
    log_error("beneficiaries: %s failed: %s", what, sqlite3_errmsg(storage_db()));
    return -1;
}

/* Text column copied into the arena; NULL for SQL NULL. */
static const char *column(struct req *r, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? arena_strdup(&r->arena, (const char *)t) : NULL;
}

static void bind_opt(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
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

/* ---- metadata: stored as a JSON object text ---------------------------------------------- */

static char *metadata_json(const struct metadata_entry *m, size_t n)
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

static int metadata_from(struct req *r, const char *text, struct beneficiary *b)
{
    struct json_value *v = NULL;
    struct json_error err;
    if (json_parse(&r->arena, text, strlen(text), &v, &err) != 0 || v->type != JSON_OBJECT)
        return -1;
    b->metadata = arena_alloc(&r->arena, (v->count ? v->count : 1) * sizeof *b->metadata);
    for (size_t i = 0; i < v->count; i++) {
        if (v->members[i].value->type != JSON_STRING)
            return -1;
        b->metadata[i].key = v->members[i].key;
        b->metadata[i].value = v->members[i].value->s;
    }
    b->metadata_count = v->count;
    return 0;
}

/* ---- rows --------------------------------------------------------------------------------- */

static int row_to_beneficiary(struct req *r, sqlite3_stmt *st, struct beneficiary *b)
{
    memset(b, 0, sizeof *b);
    b->id = column(r, st, 0);
    b->object = "beneficiary";
    b->workspace_id = column(r, st, 1);
    b->name = column(r, st, 2);
    b->account_holder_name = column(r, st, 3);
    b->account_identification = arena_alloc(&r->arena, sizeof *b->account_identification);
    if (account_identification_from(r, column(r, st, 4), column(r, st, 5),
                                    b->account_identification) != 0) {
        log_error("beneficiaries: %s has an unknown account scheme", b->id);
        return -1;
    }
    const char *bic = column(r, st, 6), *routing = column(r, st, 7), *bank_name = column(r, st, 8),
               *bank_country = column(r, st, 9);
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
    b->currency = column(r, st, 10);
    b->country = column(r, st, 11);
    b->beneficiary_type = beneficiary_type_parse(column(r, st, 12));
    b->counterparty_id = column(r, st, 13);
    b->has_counterparty_id = b->counterparty_id != NULL;
    b->external_id = column(r, st, 14);
    b->has_external_id = b->external_id != NULL;
    b->email = column(r, st, 15);
    b->has_email = b->email != NULL;
    b->status = beneficiary_status_parse(column(r, st, 16));
    b->verification_status = verification_status_parse(column(r, st, 17));
    b->approval_status = approval_status_parse(column(r, st, 18));
    if (metadata_from(r, column(r, st, 19), b) != 0) {
        log_error("beneficiaries: %s has unreadable metadata", b->id);
        return -1;
    }
    b->version = sqlite3_column_int64(st, 20);
    b->created_at = column(r, st, 21);
    b->updated_at = column(r, st, 22);
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
    sqlite3_stmt *st = storage_prepare("SELECT " BEN_COLUMNS
                                       " FROM beneficiaries WHERE id = ? AND workspace_id = ?");
    if (!st)
        return LOAD_FAILED;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->principal.workspace_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), ret;
    if (rc == SQLITE_ROW)
        ret = row_to_beneficiary(r, st, b) == 0 ? LOAD_FOUND : LOAD_FAILED;
    else if (rc == SQLITE_DONE)
        ret = LOAD_MISSING;
    else
        ret = db_failed("load");
    sqlite3_reset(st);
    return ret;
}

static void not_found(struct req *r, const char *id)
{
    req_problem(r, 404, "not_found", "No beneficiary %s in this workspace.", id);
}

/* Binds every stored column of b in BEN_COLUMNS order (metadata as given text). */
static void bind_all(sqlite3_stmt *st, const struct beneficiary *b, const char *metadata)
{
    const struct bank_details *k = b->has_bank ? b->bank : NULL;
    sqlite3_bind_text(st, 1, b->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b->workspace_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, b->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, b->account_holder_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, scheme_of(b->account_identification), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, identification_of(b->account_identification), -1, SQLITE_STATIC);
    bind_opt(st, 7, k && k->has_bic ? k->bic : NULL);
    bind_opt(st, 8, k && k->has_routing_number ? k->routing_number : NULL);
    bind_opt(st, 9, k && k->has_name ? k->name : NULL);
    bind_opt(st, 10, k && k->has_country ? k->country : NULL);
    sqlite3_bind_text(st, 11, b->currency, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, b->country, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 13, beneficiary_type_str(b->beneficiary_type), -1, SQLITE_STATIC);
    bind_opt(st, 14, b->has_counterparty_id ? b->counterparty_id : NULL);
    bind_opt(st, 15, b->has_external_id ? b->external_id : NULL);
    bind_opt(st, 16, b->has_email ? b->email : NULL);
    sqlite3_bind_text(st, 17, beneficiary_status_str(b->status), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 18, verification_status_str(b->verification_status), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 19, approval_status_str(b->approval_status), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 20, metadata, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 21, b->version);
    sqlite3_bind_text(st, 22, b->created_at, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 23, b->updated_at, -1, SQLITE_STATIC);
}

static int insert(const struct beneficiary *b)
{
    char *metadata = metadata_json(b->metadata, b->metadata_count);
    sqlite3_stmt *st = storage_prepare(
        "INSERT INTO beneficiaries (" BEN_COLUMNS ") VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    int ret = -1;
    if (!st)
        goto out;
    bind_all(st, b, metadata);
    if (sqlite3_step(st) == SQLITE_DONE)
        ret = 0;
    else
        db_failed("insert");
    sqlite3_reset(st);
out:
    free(metadata);
    return ret;
}

/* Writes b over the stored row, which must still be at version old_version (the request's
 * transaction holds the write lock, so this is a guard, not a race). */
static int store(const struct beneficiary *b, int64_t old_version)
{
    char *metadata = metadata_json(b->metadata, b->metadata_count);
    sqlite3_stmt *st = storage_prepare(
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
    sqlite3_bind_int64(st, 24, old_version);
    if (sqlite3_step(st) != SQLITE_DONE)
        db_failed("update");
    else if (sqlite3_changes(storage_db()) != 1)
        log_error("beneficiaries: %s changed under a held write lock", b->id);
    else
        ret = 0;
    sqlite3_reset(st);
out:
    free(metadata);
    return ret;
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
    sqlite3_stmt *st = storage_prepare("SELECT id FROM beneficiaries WHERE workspace_id = ? AND "
                                       "external_id = ? AND id <> ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.workspace_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, external_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, except_id ? except_id : "", -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *taken = rc == SQLITE_ROW;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
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

/* Whether the change redirects money: account, bank, currency or country differ. */
static bool routing_changed(const struct beneficiary *before, const struct beneficiary *after)
{
    return strcmp(scheme_of(before->account_identification),
                  scheme_of(after->account_identification)) != 0 ||
           strcmp(identification_of(before->account_identification),
                  identification_of(after->account_identification)) != 0 ||
           !same_bank(before, after) || strcmp(before->currency, after->currency) != 0 ||
           strcmp(before->country, after->country) != 0;
}

/* ---- operations --------------------------------------------------------------------------- */

static int beneficiary_row(struct req *r, sqlite3_stmt *st, void *item)
{
    return row_to_beneficiary(r, st, item);
}

int payments_list_beneficiaries(struct req *r, const struct payments_list_beneficiaries_request *in,
                                struct payments_list_beneficiaries_response *out)
{
    const char *status = in->has_status ? beneficiary_status_str(in->status) : NULL;
    const char *currency = in->has_currency ? in->currency : NULL;
    /* The cursor is bound to the workspace and the filters it was issued for. */
    const char *filters = arena_printf(&r->arena, "w=%s&status=%s&currency=%s",
                                       r->principal.workspace_id, status ? status : "",
                                       currency ? currency : "");
    struct page pg;
    if (page_begin(r, &pg, filters, in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    sqlite3_stmt *st = storage_prepare(
        "SELECT " BEN_COLUMNS " FROM beneficiaries WHERE workspace_id = ?1 "
        "AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR currency = ?3) "
        "AND (?4 IS NULL OR created_at < ?4 OR (created_at = ?4 AND id < ?5)) "
        "ORDER BY created_at DESC, id DESC LIMIT ?6");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->principal.workspace_id, -1, SQLITE_STATIC);
    bind_opt(st, 2, status);
    bind_opt(st, 3, currency);
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
    if (insert(b) != 0)
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
    if (routing_changed(&before, b)) {
        /* Money would go somewhere else: the new details need verifying and approving again. */
        b->verification_status = VERIFICATION_STATUS_UNVERIFIED;
        b->approval_status = APPROVAL_STATUS_PENDING_APPROVAL;
    }
    char now[40];
    format_now_rfc3339(now, sizeof now);
    b->updated_at = arena_strdup(&r->arena, now);
    b->version = before.version + 1;
    if (store(b, before.version) != 0)
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
    int64_t old_version = b->version;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    b->status = BENEFICIARY_STATUS_ARCHIVED;
    b->updated_at = arena_strdup(&r->arena, now);
    b->version = old_version + 1;
    return store(b, old_version);
}
