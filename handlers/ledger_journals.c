/* The ledger API's journal entries (after Modern Treasury's ledger transactions and Xero's
 * manual journals): drafts that change, each change a numbered version; posting through the
 * rules of ledger_post.c; a posted entry corrected only by a reversing entry; drafts
 * discarded, never deleted. Rows, loads, saves and the list come from the schema's x-table
 * mapping (generated/rows_ledger.h); the SQL triggers of journal_entries refuse any change to
 * a posted or discarded entry, so what is here cannot alter one either. Also the functions
 * other APIs post through (handlers/ledger_posting.h).
 *
 *   draft --post--> posted --reverse--> posted, reversed_by_entry_id (+ a new posted entry)
 *     `--discard--> discarded */
#include "generated/ledger_api.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/conversions.h"
#include "handlers/ledger.h"
#include "handlers/ledger_posting.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

#define JOURNALS_PATH "/v1/ledger/journals"

static int db_failed(const char *what)
{
    log_error("journal entries: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* What the API shows beside the row: the totals of the lines and the covering period. */
static int fill_computed(struct req *r, struct journal_entry *e)
{
    ledger_entry_totals(r, e);
    struct ledger_period p;
    int found = ledger_period_covering(r, e->effective_date, &p);
    if (found < 0)
        return -1;
    e->period_id = found ? p.id : NULL;
    e->has_period_id = found == 1;
    return 0;
}

/* Adds (sign 1) or takes away (sign -1) the lines of a draft from its accounts' draft sums,
 * one statement per account and currency. 0 / -1. */
static int count_draft(struct req *r, const struct journal_line *lines, size_t n, int sign)
{
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(lines[j].ledger_account_id, lines[i].ledger_account_id) == 0 &&
                   strcmp(lines[j].currency, lines[i].currency) == 0;
        if (seen)
            continue;
        int64_t d = 0, c = 0;
        for (size_t j = i; j < n; j++)
            if (strcmp(lines[j].ledger_account_id, lines[i].ledger_account_id) == 0 &&
                strcmp(lines[j].currency, lines[i].currency) == 0) {
                if (lines[j].direction == LEDGER_DIRECTION_DEBIT)
                    d += lines[j].amount;
                else
                    c += lines[j].amount;
            }
        if (ledger_account_drafts(r, lines[i].ledger_account_id, lines[i].currency, sign * d,
                                  sign * c) != 0)
            return -1;
    }
    return 0;
}

/* The entry's current content as version number e->draft_version (journal_entry_versions),
 * made by r's principal now. The row's columns are bound by the generated binder of the
 * entry, so the version keeps exactly what the entry holds. 0 / -1. */
static int record_version(struct req *r, const struct journal_entry *e)
{
    struct db_stmt *st = storage_prepare(
        "INSERT INTO journal_entry_versions (journal_entry_id, number, workspace_id, "
        "description, effective_date, effective_at, lines, external_id, metadata, created_by, "
        "created_at) VALUES (?1, ?17, ?2, ?3, ?4, ?5, ?7, ?8, ?18, ?22, ?23)");
    if (!st)
        return -1;
    char now[40];
    format_time_rfc3339(clock_now_ms(), now, sizeof now);
    int rc = row_bind_journal_entry(&r->arena, st, 1, e);
    db_bind_text(st, 22, r->principal.user_id);
    db_bind_text(st, 23, now);
    if (rc == 0)
        rc = db_step(st) == DB_DONE ? 0 : -1;
    db_reset(st);
    return rc == 0 ? 0 : db_failed("recording a version");
}

/* ---- sources ------------------------------------------------------------------------------ */

/* Adds a violation when the entry's source and source_id break a rule: `system` is the
 * server's; payment, conversion and bank_feed entries name an object of this workspace. 0 /
 * -1. */
static int check_source(struct req *r, const struct journal_entry *e)
{
    if (e->source == JOURNAL_SOURCE_SYSTEM) {
        verr_add(&r->verr, "/source", NULL, "source_reserved", "%s",
                 "system entries are the server's own (reversals, settled payments)");
        return 0;
    }
    if (e->source == JOURNAL_SOURCE_MANUAL)
        return 0;
    if (!e->has_source_id) {
        verr_add(&r->verr, "/source_id", NULL, "required", "is required for a %s entry",
                 journal_source_str(e->source));
        return 0;
    }
    bool found = false;
    if (e->source == JOURNAL_SOURCE_PAYMENT) {
        struct db_stmt *st =
            storage_prepare("SELECT 1 FROM payments WHERE id = ?1 AND workspace_id = ?2");
        if (!st)
            return -1;
        db_bind_text(st, 1, e->source_id);
        db_bind_text(st, 2, r->principal.workspace_id);
        int rc = db_step(st);
        db_reset(st);
        if (rc != DB_ROW && rc != DB_DONE)
            return db_failed("payment lookup");
        found = rc == DB_ROW;
    }
    if (e->source == JOURNAL_SOURCE_CONVERSION) {
        struct conversion_funding c;
        int rc = conversions_funding(r, e->source_id, &c); /* this workspace's only */
        if (rc < 0)
            return -1;
        found = rc == 1;
    }
    /* bank transactions do not exist yet (their API is planned): none is found */
    if (!found)
        verr_add(&r->verr, "/source_id", NULL, "source_not_found", "no %s %s in this workspace",
                 journal_source_str(e->source), e->source_id);
    return 0;
}

/* ---- one entry ---------------------------------------------------------------------------- */

/* Which accounts draft e has a line on (journal_entry_accounts), rewritten with its lines
 * (fresh: a new entry, nothing to take out first). The journal list's ledger_account_id
 * filter reads it beside the posted lines (ledger_postings), so an entry posted as it is made
 * writes nothing here: a posting's cost stays the ledger's own. 0 / -1. */
static int index_accounts(struct req *r, const struct journal_entry *e, bool fresh)
{
    struct db_stmt *st;
    int rc = DB_DONE;
    if (!fresh) {
        st = storage_prepare("DELETE FROM journal_entry_accounts WHERE journal_entry_id = ?");
        if (!st)
            return -1;
        db_bind_text(st, 1, e->id);
        rc = db_step(st);
        db_reset(st);
        if (rc != DB_DONE)
            return -1;
    }
    st = storage_prepare("INSERT INTO journal_entry_accounts (ledger_account_id, "
                         "journal_entry_id, workspace_id) VALUES (?, ?, ?) "
                         "ON CONFLICT DO NOTHING");
    if (!st)
        return -1;
    for (size_t i = 0; i < e->lines_count && rc == DB_DONE; i++) {
        db_bind_text(st, 1, e->lines[i].ledger_account_id);
        db_bind_text(st, 2, e->id);
        db_bind_text(st, 3, r->principal.workspace_id);
        rc = db_step(st);
        db_reset(st);
    }
    return rc == DB_DONE ? 0 : -1;
}

/* Inserts e (new; a draft, or posted by ledger_post_entry) with its version 0 and, posted,
 * its postings; a draft counts in its accounts' draft sums. 0 / -1. */
static int insert_entry(struct req *r, struct journal_entry *e)
{
    int rc = resource_insert(r, &rows_journal_entry, e);
    if (rc == DB_ERR_UNIQUE) { /* a posted entry with the external_id came first */
        req_problem(r, 409, "duplicate_external_id",
                    "A posted journal entry already has external_id %s.", e->external_id);
        return 1;
    }
    if (rc != 0 || record_version(r, e) != 0)
        return -1;
    if (e->status == JOURNAL_ENTRY_STATUS_POSTED)
        return ledger_post_record(r, e);
    if (index_accounts(r, e, true) != 0)
        return -1;
    return count_draft(r, e->lines, e->lines_count, 1);
}

/* A new entry of r's principal from the create body's fields. */
static void entry_from(struct req *r, struct journal_entry *e, const struct journal_entry_create *c)
{
    resource_new(r, &rows_journal_entry, e);
    e->description = c->description;
    e->effective_date = c->effective_date;
    e->effective_at = c->effective_at;
    e->has_effective_at = c->has_effective_at;
    e->lines = c->lines;
    e->lines_count = c->lines_count;
    e->external_id = c->external_id;
    e->has_external_id = c->has_external_id;
    e->source = c->has_source ? c->source : JOURNAL_SOURCE_MANUAL;
    e->source_id = c->source_id;
    e->has_source_id = c->has_source_id;
    e->metadata = c->has_metadata ? c->metadata : NULL;
    e->metadata_count = c->has_metadata ? c->metadata_count : 0;
    e->status = JOURNAL_ENTRY_STATUS_DRAFT;
    e->created_by = r->principal.user_id;
    e->draft_version = 0;
}

int ledger_create_journal_entry(struct req *r, const struct ledger_create_journal_entry_request *in,
                                struct ledger_create_journal_entry_response *out)
{
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    entry_from(r, e, in->body);
    if (check_source(r, e) != 0)
        return -1;
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The entry's source breaks a rule.");
        return 0;
    }
    if (in->body->has_post && in->body->post) {
        int posted = ledger_post_entry(r, e);
        if (posted <= 0)
            return posted;
    }
    int rc = insert_entry(r, e);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    if (fill_computed(r, e) != 0)
        return -1;
    out->status = 201;
    out->body_201 = e;
    out->location = arena_printf(&r->arena, JOURNALS_PATH "/%s", e->id);
    out->etag = req_etag(r, e->version);
    return 0;
}

/* Loads the entry an operation acts on (404, 412); 1 go on, 0 answered, -1 failure. */
static int load_entry(struct req *r, const char *id, const char *if_match, struct journal_entry *e)
{
    return resource_load_current(r, &rows_journal_entry, id, if_match, e);
}

int ledger_get_journal_entry(struct req *r, const struct ledger_get_journal_entry_request *in,
                             struct ledger_get_journal_entry_response *out)
{
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    int found = load_entry(r, in->id, NULL, e);
    if (found <= 0)
        return found;
    if (fill_computed(r, e) != 0)
        return -1;
    out->status = 200;
    out->body_200 = e;
    out->etag = req_etag(r, e->version);
    return 0;
}

/* 1 answered 409 journal_not_editable unless e is a draft. */
static int refuse_not_draft(struct req *r, const struct journal_entry *e, const char *what)
{
    if (e->status == JOURNAL_ENTRY_STATUS_DRAFT)
        return 0;
    req_problem(r, 409, "journal_not_editable",
                "Journal entry %s is %s: only a draft can be %s%s.", e->id,
                journal_entry_status_str(e->status), what,
                e->status == JOURNAL_ENTRY_STATUS_POSTED ? " (reverse it to correct it)" : "");
    return 1;
}

/* Saves e as its next version, with its state: 0 done, 1 answered, -1 failure. */
static int save_entry(struct req *r, struct journal_entry *e, bool state_only)
{
    int rc = state_only ? resource_save_state(r, &rows_journal_entry, e)
                        : resource_save(r, &rows_journal_entry, e);
    if (rc == DB_ERR_UNIQUE) {
        req_problem(r, 409, "duplicate_external_id",
                    "A posted journal entry already has external_id %s.", e->external_id);
        return 1;
    }
    if (rc == 1 && !state_only && index_accounts(r, e, false) != 0) /* lines may have changed */
        return -1;
    return rc == 1 ? 0 : rc == 0 ? 1 : -1;
}

int ledger_update_journal_entry(struct req *r, const struct ledger_update_journal_entry_request *in,
                                struct ledger_update_journal_entry_response *out)
{
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    int found = load_entry(r, in->id, in->if_match, e);
    if (found <= 0)
        return found;
    if (refuse_not_draft(r, e, "changed"))
        return 0;
    const struct journal_entry_update *u = in->body;
    if (u->has_lines && count_draft(r, e->lines, e->lines_count, -1) != 0)
        return -1;
    if (u->has_description)
        e->description = u->description;
    if (u->has_effective_date)
        e->effective_date = u->effective_date;
    if (u->has_effective_at) {
        e->has_effective_at = !u->effective_at_is_null;
        e->effective_at = u->effective_at_is_null ? NULL : u->effective_at;
    }
    if (u->has_lines) {
        e->lines = u->lines;
        e->lines_count = u->lines_count;
    }
    if (u->has_external_id) {
        e->has_external_id = !u->external_id_is_null;
        e->external_id = u->external_id_is_null ? NULL : u->external_id;
    }
    if (u->has_metadata) {
        e->metadata = u->metadata;
        e->metadata_count = u->metadata_count;
    }
    e->draft_version++;
    if (u->has_lines && count_draft(r, e->lines, e->lines_count, 1) != 0)
        return -1;
    int saved = save_entry(r, e, false);
    if (saved != 0)
        return saved > 0 ? 0 : -1;
    if (record_version(r, e) != 0 || fill_computed(r, e) != 0)
        return -1;
    out->status = 200;
    out->body_200 = e;
    out->etag = req_etag(r, e->version);
    return 0;
}

/* Posts the loaded draft e: 1 posted and saved, 0 answered, -1 failure. */
static int post_draft(struct req *r, struct journal_entry *e)
{
    if (count_draft(r, e->lines, e->lines_count, -1) != 0)
        return -1;
    int posted = ledger_post_entry(r, e);
    if (posted <= 0)
        return posted;
    int saved = save_entry(r, e, true);
    if (saved != 0)
        return saved > 0 ? 0 : -1;
    return ledger_post_record(r, e) == 0 ? 1 : -1;
}

int ledger_post_journal_entry(struct req *r, const struct ledger_post_journal_entry_request *in,
                              struct ledger_post_journal_entry_response *out)
{
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    int found = load_entry(r, in->id, in->has_if_match ? in->if_match : NULL, e);
    if (found <= 0)
        return found;
    if (refuse_not_draft(r, e, "posted"))
        return 0;
    int posted = post_draft(r, e);
    if (posted <= 0)
        return posted;
    if (fill_computed(r, e) != 0)
        return -1;
    out->status = 200;
    out->body_200 = e;
    out->etag = req_etag(r, e->version);
    return 0;
}

int ledger_discard_journal_entry(struct req *r,
                                 const struct ledger_discard_journal_entry_request *in,
                                 struct ledger_discard_journal_entry_response *out)
{
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    int found = load_entry(r, in->id, in->has_if_match ? in->if_match : NULL, e);
    if (found <= 0)
        return found;
    if (strcmp(e->created_by, r->principal.user_id) != 0 &&
        !(r->principal.scopes & SCOPE_WORKSPACE_ADMIN)) {
        req_problem(r, 403, "not_creator",
                    "Only the creator of journal entry %s or a workspace administrator may "
                    "discard it.", e->id);
        return 0;
    }
    if (refuse_not_draft(r, e, "discarded"))
        return 0;
    if (count_draft(r, e->lines, e->lines_count, -1) != 0)
        return -1;
    char now[40];
    format_time_rfc3339(clock_now_ms(), now, sizeof now);
    e->status = JOURNAL_ENTRY_STATUS_DISCARDED;
    e->discarded_at = arena_strdup(&r->arena, now);
    e->has_discarded_at = true;
    int saved = save_entry(r, e, true);
    if (saved != 0)
        return saved > 0 ? 0 : -1;
    if (fill_computed(r, e) != 0)
        return -1;
    out->status = 200;
    out->body_200 = e;
    out->etag = req_etag(r, e->version);
    return 0;
}

/* ---- reversal ----------------------------------------------------------------------------- */

/* Posts the reversal of the loaded entry orig into *rev: 1 posted, 0 answered, -1 failure. */
static int reverse(struct req *r, struct journal_entry *orig, const char *date,
                   const char *description, const char *external_id, struct journal_entry **rev)
{
    if (orig->status != JOURNAL_ENTRY_STATUS_POSTED) {
        req_problem(r, 409, "invalid_transition",
                    "Journal entry %s is %s: only a posted entry is reversed.", orig->id,
                    journal_entry_status_str(orig->status));
        return 0;
    }
    if (orig->has_reversed_by_entry_id) {
        req_problem(r, 409, "already_reversed", "Journal entry %s was reversed already by %s.",
                    orig->id, orig->reversed_by_entry_id);
        return 0;
    }
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    resource_new(r, &rows_journal_entry, e);
    e->description = description ? description
                                 : arena_printf(&r->arena, "Reversal of %s", orig->id);
    e->effective_date = date ? date : orig->effective_date;
    e->lines_count = orig->lines_count;
    e->lines = arena_alloc(&r->arena, orig->lines_count * sizeof *e->lines);
    for (size_t i = 0; i < orig->lines_count; i++) {
        const struct journal_line *l = &orig->lines[i];
        e->lines[i] = (struct journal_line){
            .ledger_account_id = l->ledger_account_id,
            .direction = l->direction == LEDGER_DIRECTION_DEBIT ? LEDGER_DIRECTION_CREDIT
                                                                : LEDGER_DIRECTION_DEBIT,
            .amount = l->amount,
            .currency = l->currency,
            .description = l->description,
            .has_description = l->has_description,
        };
    }
    e->external_id = external_id;
    e->has_external_id = external_id != NULL;
    e->source = JOURNAL_SOURCE_SYSTEM;
    e->reverses_entry_id = orig->id;
    e->has_reverses_entry_id = true;
    e->status = JOURNAL_ENTRY_STATUS_DRAFT;
    e->created_by = r->principal.user_id;
    int posted = ledger_post_entry(r, e);
    if (posted <= 0)
        return posted;
    int rc = insert_entry(r, e);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    orig->reversed_by_entry_id = e->id;
    orig->has_reversed_by_entry_id = true;
    int saved = save_entry(r, orig, true);
    if (saved != 0)
        return saved > 0 ? 0 : -1;
    *rev = e;
    return 1;
}

int ledger_reverse_journal_entry(struct req *r,
                                 const struct ledger_reverse_journal_entry_request *in,
                                 struct ledger_reverse_journal_entry_response *out)
{
    struct journal_entry *orig = arena_alloc(&r->arena, sizeof *orig), *e = NULL;
    int found = load_entry(r, in->id, NULL, orig);
    if (found <= 0)
        return found;
    const struct journal_reversal *b = in->body;
    int rc = reverse(r, orig, b && b->has_effective_date ? b->effective_date : NULL,
                     b && b->has_description ? b->description : NULL,
                     b && b->has_external_id ? b->external_id : NULL, &e);
    if (rc <= 0)
        return rc;
    if (fill_computed(r, e) != 0)
        return -1;
    out->status = 201;
    out->body_201 = e;
    out->location = arena_printf(&r->arena, JOURNALS_PATH "/%s", e->id);
    out->etag = req_etag(r, e->version);
    return 0;
}

/* ---- what other APIs post through (handlers/ledger_posting.h) ---------------------------- */

int ledger_post_new(struct req *r, const struct ledger_entry_in *in, const char **entry_id)
{
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    resource_new(r, &rows_journal_entry, e);
    e->description = in->description;
    e->effective_date = in->effective_date;
    e->lines_count = in->n_lines;
    e->lines = arena_alloc(&r->arena, (in->n_lines ? in->n_lines : 1) * sizeof *e->lines);
    for (size_t i = 0; i < in->n_lines; i++) {
        const struct ledger_line_in *l = &in->lines[i];
        e->lines[i] = (struct journal_line){
            .ledger_account_id = l->ledger_account_id,
            .direction = l->debit ? LEDGER_DIRECTION_DEBIT : LEDGER_DIRECTION_CREDIT,
            .amount = l->amount,
            .currency = l->currency,
            .description = l->description,
            .has_description = l->description != NULL,
        };
    }
    e->external_id = in->external_id;
    e->has_external_id = in->external_id != NULL;
    e->source = journal_source_parse(in->source);
    e->source_id = in->source_id;
    e->has_source_id = in->source_id != NULL;
    e->status = JOURNAL_ENTRY_STATUS_DRAFT;
    e->created_by = r->principal.user_id;
    if (!e->source) {
        log_error("ledger_post_new: unknown source %s", in->source ? in->source : "(null)");
        return -1;
    }
    int posted = ledger_post_entry(r, e);
    if (posted <= 0)
        return posted;
    int rc = insert_entry(r, e);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    *entry_id = e->id;
    return 1;
}

int ledger_reverse_entry(struct req *r, const char *entry_id, const char *effective_date,
                         const char *description, const char **reversal_id)
{
    struct journal_entry *orig = arena_alloc(&r->arena, sizeof *orig), *e = NULL;
    int found = resource_load(r, &rows_journal_entry, entry_id, orig);
    if (found != RESOURCE_FOUND)
        return found == RESOURCE_MISSING ? 0 : -1;
    int rc = reverse(r, orig, effective_date, description, NULL, &e);
    if (rc == 1)
        *reversal_id = e->id;
    return rc;
}

int ledger_entry_of(struct req *r, const char *source, const char *source_id,
                    const char **entry_id)
{
    struct db_stmt *st = storage_prepare(
        "SELECT id FROM journal_entries WHERE workspace_id = ?1 AND source = ?2 AND "
        "source_id = ?3 AND status = 'posted' AND reversed_by_entry_id IS NULL ORDER BY "
        "posted_at DESC, id DESC LIMIT 1");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, source);
    db_bind_text(st, 3, source_id);
    int rc = db_step(st);
    *entry_id = rc == DB_ROW ? db_column_dup(&r->arena, st, 0) : NULL;
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("entry of a source");
    return rc == DB_ROW;
}

/* ---- lists -------------------------------------------------------------------------------- */

/* A listed entry, with the id of the period covering its date read in the same statement. */
static int listed_row(struct req *r, struct db_stmt *st, void *item)
{
    struct journal_entry *e = item;
    if (rows_journal_entry.page_row(r, st, e) != 0)
        return -1;
    e->period_id = db_column_dup(&r->arena, st, rows_journal_entry.column_count);
    e->has_period_id = e->period_id != NULL;
    ledger_entry_totals(r, e);
    return 0;
}

static const struct resource_extra listed_extra = {
    .columns = ", " LEDGER_PERIOD_OF("journal_entries") " AS covering_period_id",
    .item_size = sizeof(struct journal_entry),
    .row = listed_row,
};

int ledger_list_journal_entries(struct req *r, const struct ledger_list_journal_entries_request *in,
                                struct ledger_list_journal_entries_response *out)
{
    /* a period filter is the period's days; an unknown period matches nothing */
    const char *from = NULL, *until = NULL;
    if (in->has_period_id) {
        struct ledger_period *p = arena_alloc(&r->arena, sizeof *p);
        int found = resource_load(r, &rows_ledger_period, in->period_id, p);
        if (found < 0)
            return -1;
        from = found ? p->start_date : "9999-12-31";
        until = found ? p->end_date : "0000-01-01";
    }
    struct resource_filter f[] = {
        RESOURCE_TEXT("status", RESOURCE_EQ,
                      in->has_status ? journal_entry_status_str(in->status) : NULL),
        RESOURCE_TEXT("source", RESOURCE_EQ,
                      in->has_source ? journal_source_str(in->source) : NULL),
        RESOURCE_TEXT("source_id", RESOURCE_EQ, in->has_source_id ? in->source_id : NULL),
        RESOURCE_TEXT("external_id", RESOURCE_EQ, in->has_external_id ? in->external_id : NULL),
        /* posted lines, and the lines of drafts (as last written: a draft posted or
         * discarded keeps its rows); ?1 is the list's workspace */
        RESOURCE_TEXT("id IN (SELECT a.journal_entry_id FROM (SELECT journal_entry_id, "
                      "workspace_id, ledger_account_id FROM ledger_postings UNION ALL "
                      "SELECT journal_entry_id, workspace_id, ledger_account_id FROM "
                      "journal_entry_accounts) a WHERE a.workspace_id = ?1 AND "
                      "a.ledger_account_id =",
                      RESOURCE_IN_SELECT, in->has_ledger_account_id ? in->ledger_account_id : NULL),
        RESOURCE_TEXT("effective_date", RESOURCE_GE,
                      in->has_effective_date_gte ? in->effective_date_gte : NULL),
        RESOURCE_TEXT("effective_date", RESOURCE_LT,
                      in->has_effective_date_lt ? in->effective_date_lt : NULL),
        /* the period's days (the cursor binds its id: same period, same days) */
        RESOURCE_TEXT("effective_date", RESOURCE_GE, from),
        RESOURCE_TEXT("effective_date", RESOURCE_LE, until),
    };
    struct resource_page rp;
    int listed = resource_list_extra(r, &rows_journal_entry, f, sizeof f / sizeof f[0],
                                     in->limit, in->has_cursor ? in->cursor : NULL,
                                     &listed_extra, &rp);
    if (listed <= 0)
        return listed;
    struct journal_entry_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    if (page->has_more && page->next_cursor)
        out->link = req_next_link(r, page->next_cursor);
    if (in->accept == MEDIA_CSV)
        return ledger_journals_csv(r, page, &out->raw_200, &out->raw_200_len) == 0 ? 0 : -1;
    out->body_200 = page;
    return 0;
}

/* A draft version as read: the entry's columns in the order of its row, so the generated
 * reader of the entry decodes (and validates) the version's lines and metadata. */
#define VERSION_AS_ENTRY                                                                           \
    "SELECT journal_entry_id, workspace_id, description, effective_date, effective_at, "          \
    "'draft', lines, external_id, 'manual', NULL, NULL, NULL, created_by, NULL, NULL, NULL, "     \
    "number, metadata, 1, created_at, created_at, "                                                 \
    "substr('0000000000' || CAST(number AS TEXT), length(CAST(number AS TEXT)) + 1) "            \
    "FROM journal_entry_versions WHERE journal_entry_id = ?1 AND workspace_id = ?2 AND "          \
    "(CAST(?3 AS TEXT) IS NULL OR number > CAST(?3 AS BIGINT)) ORDER BY number LIMIT ?5"

struct listed_version {
    struct journal_entry_version v;
    const char *key; /* the number, zero-padded: the cursor's position */
};

static int version_row(struct req *r, struct db_stmt *st, void *item)
{
    struct listed_version *x = item;
    struct journal_entry e;
    if (row_read_journal_entry(&r->arena, st, 0, &e) != 0)
        return -1;
    x->v = (struct journal_entry_version){
        .object = "journal_entry_version",
        .journal_entry_id = e.id,
        .number = e.draft_version,
        .description = e.description,
        .effective_date = e.effective_date,
        .effective_at = e.effective_at,
        .has_effective_at = e.has_effective_at,
        .lines = e.lines,
        .lines_count = e.lines_count,
        .external_id = e.external_id,
        .has_external_id = e.has_external_id,
        .metadata = e.metadata,
        .metadata_count = e.metadata_count,
        .created_by = e.created_by,
        .created_at = e.created_at,
    };
    x->key = db_column_dup(&r->arena, st, ROWS_JOURNAL_ENTRY_COLUMN_COUNT);
    return 0;
}

int ledger_list_journal_entry_versions(struct req *r,
                                       const struct ledger_list_journal_entry_versions_request *in,
                                       struct ledger_list_journal_entry_versions_response *out)
{
    struct journal_entry *e = arena_alloc(&r->arena, sizeof *e);
    int found = load_entry(r, in->id, NULL, e);
    if (found <= 0)
        return found;
    struct page pg;
    if (page_begin(r, &pg, arena_printf(&r->arena, "journal_entry_versions %s %s",
                                        r->principal.workspace_id, e->id),
                   in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0; /* 400 invalid_cursor */
    struct db_stmt *st = storage_prepare(VERSION_AS_ENTRY);
    if (!st)
        return -1;
    db_bind_text(st, 1, e->id);
    db_bind_text(st, 2, r->principal.workspace_id);
    page_bind(&pg, st, 3, 4, 5);
    struct resource_page rp;
    if (resource_page_fill(r, &pg, st, sizeof(struct listed_version), version_row,
                           offsetof(struct listed_version, key),
                           offsetof(struct listed_version, v.journal_entry_id), &rp) != 0)
        return -1;
    struct listed_version *items = rp.items;
    struct journal_entry_version *v = arena_alloc(&r->arena, (rp.count ? rp.count : 1) * sizeof *v);
    for (size_t i = 0; i < rp.count; i++)
        v[i] = items[i].v;
    rp.items = v;
    struct journal_entry_version_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}
