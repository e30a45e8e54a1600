/* The ledger API's chart of accounts: create, get, list, change and archive ledger accounts,
 * and the only writes of ledger_accounts, among them the balances postings and drafts move
 * (ledger_account_move, ledger_account_drafts: handlers/ledger.h). Rows, loads, saves and the
 * list come from the schema's x-table mapping (generated/rows_ledger.h, runtime/resource.h);
 * what is here is the account's own rules: codes unique per workspace (the UNIQUE index says
 * it), a parent of the same classification and currency that is not archived and not a
 * descendant, constraints the posted balance keeps, archiving only what is empty and unused.
 *
 * Every amount the API shows is at most 2^53 - 1 (NonNegativeAmount, SignedAmount), so the
 * sums here never pass it: a move or a draft that would is refused, never wrapped, and with
 * every stored sum and every added amount within it, no SQL expression below can overflow
 * int64 on either engine (PostgreSQL would fail the statement, SQLite turn it into a float). */
#include "handlers/ledger.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

#define LAC_PATH "/v1/ledger/accounts"
#define LEDGER_AMOUNT_MAX INT64_C(9007199254740991) /* 2^53 - 1, the API's largest amount */
#define LEDGER_AMOUNT_MAX_SQL "9007199254740991"
/* A walk up the parents longer than this is a cycle already stored (none can be: update
 * refuses one), so it stops rather than loop. */
#define PARENT_DEPTH_MAX 1000

static int db_failed(const char *what)
{
    log_error("ledger accounts: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- balances ------------------------------------------------------------------------------ */

/* a + b for sums that are each at most 2^53 - 1 (so never overflowing); saturated all the same
 * should a stored value ever be out of range, so that the answer is a schema violation the
 * tests see rather than undefined behaviour. */
static int64_t sum(int64_t a, int64_t b)
{
    int64_t s;
    return __builtin_add_overflow(a, b, &s) ? (b > 0 ? INT64_MAX : INT64_MIN) : s;
}

int64_t ledger_signed(enum ledger_direction nb, int64_t debits, int64_t credits)
{
    int64_t s;
    bool over = nb == LEDGER_DIRECTION_DEBIT ? __builtin_sub_overflow(debits, credits, &s)
                                             : __builtin_sub_overflow(credits, debits, &s);
    return over ? (nb == LEDGER_DIRECTION_DEBIT ? (debits > credits ? INT64_MAX : INT64_MIN)
                                                : (credits > debits ? INT64_MAX : INT64_MIN))
                : s;
}

static void figures(struct ledger_balance_figures *f, enum ledger_direction nb, int64_t debits,
                    int64_t credits)
{
    f->debits = debits;
    f->credits = credits;
    f->amount = ledger_signed(nb, debits, credits);
}

void ledger_account_balances(struct req *r, struct ledger_account_row *row)
{
    struct ledger_account_balances *b = arena_alloc(&r->arena, sizeof *b);
    struct ledger_balance_figures *f = arena_alloc(&r->arena, 3 * sizeof *f);
    enum ledger_direction nb = row->obj.normal_balance;
    int64_t pd = row->posted_debits, pc = row->posted_credits;
    figures(&f[0], nb, pd, pc);
    figures(&f[1], nb, sum(pd, row->draft_debits), sum(pc, row->draft_credits));
    /* available: posted, plus only the draft lines that lower the balance */
    if (nb == LEDGER_DIRECTION_DEBIT)
        figures(&f[2], nb, pd, sum(pc, row->draft_credits));
    else
        figures(&f[2], nb, sum(pd, row->draft_debits), pc);
    b->posted = &f[0];
    b->pending = &f[1];
    b->available = &f[2];
    row->obj.balances = b;
}

/* ---- the balances postings and drafts move ------------------------------------------------- */

/* The signed balances after the move, in the account's normal direction, for the guards: ?1
 * the debits added, ?2 the credits. */
#define POSTED_AFTER                                                                               \
    "(CASE normal_balance WHEN 'debit' THEN (posted_debits + ?1) - (posted_credits + ?2) "        \
    "ELSE (posted_credits + ?2) - (posted_debits + ?1) END)"
#define AVAILABLE_AFTER                                                                            \
    "(CASE normal_balance WHEN 'debit' "                                                           \
    "THEN (posted_debits + ?1) - (posted_credits + ?2 + draft_credits) "                          \
    "ELSE (posted_credits + ?2) - (posted_debits + ?1 + draft_debits) END)"

/* One statement, so that the guards are checked by the database on the row it changes: two
 * postings can never both pass a guard only one of them satisfies. A guard not given is bound
 * NULL and holds. The sums stay within 2^53 - 1 (pending ones included: posted + drafts), and
 * the account's own constraints are restated on the new sums (the table's CHECKs would fail
 * the statement instead of refusing the move). */
static const char MOVE_SQL[] =
    "UPDATE ledger_accounts SET posted_debits = posted_debits + ?1, "
    "posted_credits = posted_credits + ?2, lock_version = lock_version + 1 "
    "WHERE id = ?3 AND workspace_id = ?4 AND status = 'active' AND currency = ?5"
    " AND (CAST(?6 AS BIGINT) IS NULL OR lock_version = CAST(?6 AS BIGINT))"
    " AND posted_debits + ?1 + draft_debits <= " LEDGER_AMOUNT_MAX_SQL
    " AND posted_credits + ?2 + draft_credits <= " LEDGER_AMOUNT_MAX_SQL
    " AND (COALESCE(constraints_debits_must_not_exceed_credits, 0) = 0"
    " OR posted_debits + ?1 <= posted_credits + ?2)"
    " AND (COALESCE(constraints_credits_must_not_exceed_debits, 0) = 0"
    " OR posted_credits + ?2 <= posted_debits + ?1)"
    " AND (CAST(?7 AS BIGINT) IS NULL OR " POSTED_AFTER " >= CAST(?7 AS BIGINT))"
    " AND (CAST(?8 AS BIGINT) IS NULL OR " POSTED_AFTER " <= CAST(?8 AS BIGINT))"
    " AND (CAST(?9 AS BIGINT) IS NULL OR " AVAILABLE_AFTER " >= CAST(?9 AS BIGINT))"
    " AND (CAST(?10 AS BIGINT) IS NULL OR " AVAILABLE_AFTER " <= CAST(?10 AS BIGINT))";

static void bind_guard(struct db_stmt *st, int i, bool has, int64_t v)
{
    if (has)
        db_bind_int64(st, i, v);
    else
        db_bind_null(st, i);
}

int ledger_account_move(struct req *r, const struct ledger_move *m)
{
    if (m->debits < 0 || m->credits < 0) {
        log_error("ledger accounts: a move of %s by debits %" PRId64 ", credits %" PRId64
                  " (negative)",
                  m->account_id, m->debits, m->credits);
        return -1;
    }
    /* More than the API's largest amount at once: the sums would pass it whatever they are
     * now (and the binds below stay small enough for the guards' arithmetic). */
    if (m->debits > LEDGER_AMOUNT_MAX || m->credits > LEDGER_AMOUNT_MAX)
        return 0;
    struct db_stmt *st = storage_prepare(MOVE_SQL);
    if (!st)
        return -1;
    db_bind_int64(st, 1, m->debits);
    db_bind_int64(st, 2, m->credits);
    db_bind_text(st, 3, m->account_id);
    db_bind_text(st, 4, r->principal.workspace_id);
    db_bind_text(st, 5, m->currency);
    bind_guard(st, 6, m->has_lock_version, m->lock_version);
    bind_guard(st, 7, m->has_posted_gte, m->posted_gte);
    bind_guard(st, 8, m->has_posted_lte, m->posted_lte);
    bind_guard(st, 9, m->has_available_gte, m->available_gte);
    bind_guard(st, 10, m->has_available_lte, m->available_lte);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("moving an account's balance");
    int64_t n = storage_changes();
    return n == 1 ? 1 : n == 0 ? 0 : db_failed("moving an account's balance (rows)");
}

int ledger_account_drafts(struct req *r, const char *account_id, const char *currency,
                          int64_t debits, int64_t credits)
{
    if (debits < -LEDGER_AMOUNT_MAX || debits > LEDGER_AMOUNT_MAX ||
        credits < -LEDGER_AMOUNT_MAX || credits > LEDGER_AMOUNT_MAX) {
        log_error("ledger accounts: drafts of %s by debits %" PRId64 ", credits %" PRId64
                  " (past 2^53 - 1)",
                  account_id, debits, credits);
        return -1;
    }
    /* Taking away more than is there fails the table's CHECK (draft sums >= 0): a failure,
     * since a draft only takes away what it added. */
    struct db_stmt *st = storage_prepare(
        "UPDATE ledger_accounts SET draft_debits = draft_debits + ?1, "
        "draft_credits = draft_credits + ?2 "
        "WHERE id = ?3 AND workspace_id = ?4 AND currency = ?5"
        " AND posted_debits + draft_debits + ?1 <= " LEDGER_AMOUNT_MAX_SQL
        " AND posted_credits + draft_credits + ?2 <= " LEDGER_AMOUNT_MAX_SQL);
    if (!st)
        return -1;
    db_bind_int64(st, 1, debits);
    db_bind_int64(st, 2, credits);
    db_bind_text(st, 3, account_id);
    db_bind_text(st, 4, r->principal.workspace_id);
    db_bind_text(st, 5, currency);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("moving an account's draft sums");
    if (storage_changes() == 1)
        return 0;
    /* No row changed: a line on no account of the workspace in that currency counts nowhere,
     * which is fine; but an account that is there would have passed 2^53 - 1. */
    const char *v[] = {account_id, r->principal.workspace_id, currency};
    int found = storage_query_text(
        "SELECT id FROM ledger_accounts WHERE id = ? AND workspace_id = ? AND currency = ?", v, 3,
        NULL, 0);
    if (found < 0)
        return -1;
    if (found > 0) {
        log_error("ledger accounts: the pending sums of %s would pass 2^53 - 1", account_id);
        return -1;
    }
    return 0;
}

/* ---- rules beyond the schema ---------------------------------------------------------------- */

/* Whether code is held by an account of r's workspace. For ledger_account_insert, whose caller goes on in its transaction: on PostgreSQL a UNIQUE
 * failure would end that transaction, so the code is looked at first. 1 / 0 / -1. */
static int code_taken(struct req *r, const char *code)
{
    const char *v[] = {r->principal.workspace_id, code};
    return storage_query_text("SELECT id FROM ledger_accounts WHERE workspace_id = ? AND code = ?",
                              v, 2, NULL, 0);
}

/* How many accounts r's workspace has, archived ones included (archived accounts keep their
 * history and stay in the trial balance): -1 on failure. */
static int64_t account_count(struct req *r)
{
    struct db_stmt *st =
        storage_prepare("SELECT count(*) FROM ledger_accounts WHERE workspace_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    int64_t n = db_step(st) == DB_ROW ? db_column_int64(st, 0) : -1;
    db_reset(st);
    return n;
}

static void duplicate_code(struct req *r, const char *code)
{
    req_problem(r, 409, "duplicate_code",
                "Another ledger account of this workspace (archived ones included) has code %s.",
                code);
}

/* Whether parent_id is account id itself or one of its descendants (id would become its own
 * ancestor), walking up the parents from parent_id: 1 yes, 0 no, -1 failure. */
static int would_cycle(struct req *r, const char *id, const char *parent_id)
{
    char at[64];
    snprintf(at, sizeof at, "%s", parent_id);
    for (int depth = 0; depth < PARENT_DEPTH_MAX; depth++) {
        if (strcmp(at, id) == 0)
            return 1;
        const char *v[] = {at, r->principal.workspace_id};
        char up[64];
        int found = storage_query_text(
            "SELECT parent_id FROM ledger_accounts WHERE id = ? AND workspace_id = ?", v, 2, up,
            sizeof up);
        if (found < 0)
            return -1;
        if (found == 0 || up[0] == '\0')
            return 0;
        memcpy(at, up, sizeof at);
    }
    log_error("ledger accounts: the parents above %s go deeper than %d", parent_id,
              PARENT_DEPTH_MAX);
    return 1;
}

/* Adds a violation at /parent_id for every parent rule a (its parent_id set) breaks: the
 * parent exists in the workspace, is active, of a's classification and currency, and (for an
 * existing account, checking_cycle) is not a itself nor below it. 0 / -1. */
static int check_parent(struct req *r, const struct ledger_account *a, bool checking_cycle)
{
    struct ledger_account_row p;
    switch (resource_load(r, &rows_ledger_account, a->parent_id, &p)) {
    case RESOURCE_FAILED:
        return -1;
    case RESOURCE_MISSING:
        verr_add(&r->verr, "/parent_id", NULL, "parent_not_found",
                 "no ledger account %s exists in this workspace", a->parent_id);
        return 0;
    }
    if (p.obj.status == LEDGER_ACCOUNT_STATUS_ARCHIVED)
        verr_add(&r->verr, "/parent_id", NULL, "account_archived",
                 "the parent %s (%s) is archived", p.obj.id, p.obj.code);
    if (p.obj.classification != a->classification)
        verr_add(&r->verr, "/parent_id", NULL, "classification_mismatch",
                 "the parent %s is a %s account, this one a %s account", p.obj.code,
                 ledger_classification_str(p.obj.classification),
                 ledger_classification_str(a->classification));
    if (strcmp(p.obj.currency, a->currency) != 0)
        verr_add(&r->verr, "/parent_id", NULL, "currency_mismatch",
                 "the parent %s is in %s, this account in %s", p.obj.code, p.obj.currency,
                 a->currency);
    if (checking_cycle) {
        int cycle = would_cycle(r, a->id, a->parent_id);
        if (cycle < 0)
            return -1;
        if (cycle)
            verr_add(&r->verr, "/parent_id", NULL, "parent_cycle",
                     "%s is this account or one of its descendants", a->parent_id);
    }
    return 0;
}

/* Answers 422 with the violations collected: 1 answered, 0 none. */
static int refuse_violations(struct req *r)
{
    if (r->verr.count == 0)
        return 0;
    req_problem_validation(r, 422,
                           arena_printf(&r->arena, "The ledger account breaks %d rule%s.",
                                        r->verr.count, r->verr.count == 1 ? "" : "s"));
    return 1;
}

/* Both constraints, each as given or false (the schema's default), so that the row and the
 * answer say them explicitly. */
static struct ledger_account_constraints *constraints_of(struct req *r,
                                                         const struct ledger_account_constraints *in)
{
    struct ledger_account_constraints *k = arena_alloc(&r->arena, sizeof *k);
    k->debits_must_not_exceed_credits = in && in->has_debits_must_not_exceed_credits &&
                                        in->debits_must_not_exceed_credits;
    k->credits_must_not_exceed_debits = in && in->has_credits_must_not_exceed_debits &&
                                        in->credits_must_not_exceed_debits;
    k->has_debits_must_not_exceed_credits = k->has_credits_must_not_exceed_debits = true;
    return k;
}

static bool constraint_on(bool has, bool value)
{
    return has && value;
}

/* ---- operations ------------------------------------------------------------------------------ */

int ledger_list_ledger_accounts(struct req *r, const struct ledger_list_ledger_accounts_request *in,
                                struct ledger_list_ledger_accounts_response *out)
{
    const struct resource_filter f[] = {
        RESOURCE_TEXT("classification", RESOURCE_IN,
                      ledger_classification_set(&r->arena, in->classification,
                                                in->classification_count)),
        RESOURCE_TEXT("status", RESOURCE_EQ,
                      in->has_status ? ledger_account_status_str(in->status) : NULL),
        RESOURCE_TEXT("currency", RESOURCE_EQ, in->has_currency ? in->currency : NULL),
        RESOURCE_TEXT("parent_id", RESOURCE_EQ, in->has_parent_id ? in->parent_id : NULL),
    };
    struct resource_page rp;
    int listed = resource_list(r, &rows_ledger_account, f, sizeof f / sizeof f[0], in->limit,
                               in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    struct ledger_account_row *rows = rp.items;
    for (size_t i = 0; i < rp.count; i++)
        ledger_account_balances(r, &rows[i]);
    resource_page_objects(r, &rows_ledger_account, sizeof(struct ledger_account), &rp);
    struct ledger_account_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

int ledger_create_ledger_account(struct req *r,
                                 const struct ledger_create_ledger_account_request *in,
                                 struct ledger_create_ledger_account_response *out)
{
    const struct ledger_account_create *c = in->body;
    struct ledger_account_row *row = arena_alloc(&r->arena, sizeof *row);
    resource_new(r, &rows_ledger_account, row);
    struct ledger_account *a = &row->obj;
    a->code = c->code;
    a->name = c->name;
    a->description = c->has_description ? c->description : NULL;
    a->has_description = c->has_description;
    a->classification = c->classification;
    if (c->has_normal_balance)
        a->normal_balance = c->normal_balance;
    else
        a->normal_balance = c->classification == LEDGER_CLASSIFICATION_ASSET ||
                                    c->classification == LEDGER_CLASSIFICATION_EXPENSE
                                ? LEDGER_DIRECTION_DEBIT
                                : LEDGER_DIRECTION_CREDIT;
    a->currency = c->currency;
    /* The schema's format already refused a currency outside the ISO 4217 table
     * (runtime/format.c), which holds only codes with a minor unit: every one has one. */
    int exponent = format_currency_exponent(c->currency);
    if (exponent < 0)
        verr_add(&r->verr, "/currency", NULL, "format", "%s has no ISO 4217 minor unit",
                 c->currency);
    a->currency_exponent = exponent < 0 ? 0 : exponent;
    if (exponent >= 0 && c->has_currency_exponent && c->currency_exponent != exponent)
        verr_add(&r->verr, "/currency_exponent", NULL, "currency_exponent_mismatch",
                 "%s has ISO 4217 minor-unit exponent %d, not %" PRId64, c->currency, exponent,
                 c->currency_exponent);
    a->parent_id = c->has_parent_id ? c->parent_id : NULL;
    a->has_parent_id = c->has_parent_id;
    a->status = LEDGER_ACCOUNT_STATUS_ACTIVE;
    a->lock_version = 0;
    a->constraints = constraints_of(r, c->has_constraints ? c->constraints : NULL);
    if (c->has_metadata) {
        a->metadata = c->metadata;
        a->metadata_count = c->metadata_count;
    }
    if (a->has_parent_id && check_parent(r, a, false) != 0)
        return -1;
    if (refuse_violations(r))
        return 0;
    int64_t n = account_count(r);
    if (n < 0)
        return -1;
    if (n >= LEDGER_ACCOUNTS_MAX) {
        req_problem(r, 422, "ledger_account_limit_reached",
                    "This workspace already has %d ledger accounts (archived ones included), "
                    "the most a chart of accounts may hold.",
                    LEDGER_ACCOUNTS_MAX);
        return 0;
    }

    int rc = resource_insert(r, &rows_ledger_account, row);
    if (rc == DB_ERR_UNIQUE) {
        duplicate_code(r, a->code);
        return 0;
    }
    if (rc != 0)
        return -1;
    ledger_account_balances(r, row);
    out->status = 201;
    out->body_201 = a;
    out->location = arena_printf(&r->arena, LAC_PATH "/%s", a->id);
    return 0;
}

int ledger_get_ledger_account(struct req *r, const struct ledger_get_ledger_account_request *in,
                              struct ledger_get_ledger_account_response *out)
{
    struct ledger_account_row *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load_current(r, &rows_ledger_account, in->id, NULL, row);
    if (found <= 0)
        return found;
    ledger_account_balances(r, row);
    out->status = 200;
    out->body_200 = &row->obj;
    return 0;
}

/* The constraint of k that the posted sums break, or NULL. */
static const char *broken_constraint(const struct ledger_account_constraints *k, int64_t debits,
                                     int64_t credits)
{
    if (constraint_on(k->has_debits_must_not_exceed_credits, k->debits_must_not_exceed_credits) &&
        debits > credits)
        return "debits_must_not_exceed_credits";
    if (constraint_on(k->has_credits_must_not_exceed_debits, k->credits_must_not_exceed_debits) &&
        credits > debits)
        return "credits_must_not_exceed_debits";
    return NULL;
}

int ledger_update_ledger_account(struct req *r,
                                 const struct ledger_update_ledger_account_request *in,
                                 struct ledger_update_ledger_account_response *out)
{
    const struct ledger_account_update *u = in->body;
    struct ledger_account_row *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load_current(r, &rows_ledger_account, in->id,
                                      in->has_if_match ? in->if_match : NULL, row);
    if (found <= 0)
        return found;
    struct ledger_account *a = &row->obj;
    if (a->status == LEDGER_ACCOUNT_STATUS_ARCHIVED) {
        req_problem(r, 409, "account_archived",
                    "Ledger account %s (%s) is archived and can no longer be changed.", a->id,
                    a->code);
        return 0;
    }
    if (u->has_code)
        a->code = u->code;
    if (u->has_name)
        a->name = u->name;
    if (u->has_description) {
        a->description = u->description_is_null ? NULL : u->description;
        a->has_description = !u->description_is_null;
    }
    if (u->has_parent_id) {
        a->parent_id = u->parent_id_is_null ? NULL : u->parent_id;
        a->has_parent_id = !u->parent_id_is_null;
        if (a->has_parent_id && check_parent(r, a, true) != 0)
            return -1;
    }
    if (u->has_constraints)
        a->constraints = constraints_of(r, u->constraints);
    if (u->has_metadata) {
        a->metadata = u->metadata;
        a->metadata_count = u->metadata_count;
    }
    if (refuse_violations(r))
        return 0;
    /* The table's CHECKs hold every constraint on the posted sums: one they already break
     * cannot be switched on (the save would fail), and is refused for what it is. */
    const char *broken = broken_constraint(a->constraints, row->posted_debits, row->posted_credits);
    if (broken) {
        verr_add(&r->verr, "/constraints", NULL, "balance_assertion_failed",
                 "the posted debits %" PRId64 " and credits %" PRId64 " already break %s",
                 row->posted_debits, row->posted_credits, broken);
        req_problem(r, 422, "balance_assertion_failed",
                    "Ledger account %s's posted balance already breaks %s.", a->code, broken);
        r->with_errors = true;
        return 0;
    }
    int saved = resource_save(r, &rows_ledger_account, row);
    if (saved == DB_ERR_UNIQUE) {
        duplicate_code(r, a->code);
        return 0;
    }
    if (saved <= 0)
        return saved;
    ledger_account_balances(r, row);
    out->status = 200;
    out->body_200 = a;
    return 0;
}

/* Whether the posting settings name id as a cash or clearing account: 1 / 0 / -1. */
static int used_by_settings(struct req *r, const char *id)
{
    struct ledger_settings_row s; /* the table's row struct (x-table hidden), never obj alone */
    bool stored = false;
    if (resource_load_singleton(r, &rows_ledger_settings, NULL, &s, &stored) != 1)
        return -1;
    const struct ledger_payment_posting *p = s.obj.payment_posting;
    if (!stored || !p)
        return 0;
    for (size_t i = 0; i < p->cash_accounts_count; i++)
        if (strcmp(p->cash_accounts[i].ledger_account_id, id) == 0)
            return 1;
    for (size_t i = 0; i < p->payee_clearing_accounts_count; i++)
        if (strcmp(p->payee_clearing_accounts[i].ledger_account_id, id) == 0)
            return 1;
    return 0;
}

int ledger_archive_ledger_account(struct req *r,
                                  const struct ledger_archive_ledger_account_request *in,
                                  struct ledger_archive_ledger_account_response *out)
{
    struct ledger_account_row *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load_current(r, &rows_ledger_account, in->id,
                                      in->has_if_match ? in->if_match : NULL, row);
    if (found <= 0)
        return found;
    struct ledger_account *a = &row->obj;
    if (a->status == LEDGER_ACCOUNT_STATUS_ARCHIVED) {
        req_problem(r, 409, "invalid_transition", "Ledger account %s (%s) is archived already.",
                    a->id, a->code);
        return 0;
    }
    ledger_account_balances(r, row);
    const struct ledger_account_balances *b = a->balances;
    if (b->posted->amount != 0 || b->pending->amount != 0) {
        req_problem(r, 409, "account_not_empty",
                    "Ledger account %s has a posted balance of %" PRId64
                    " and a pending one of %" PRId64 "; only an empty account can be archived.",
                    a->code, b->posted->amount, b->pending->amount);
        return 0;
    }
    const char *v[] = {r->principal.workspace_id, a->id};
    char child[64];
    int children = storage_query_text("SELECT code FROM ledger_accounts WHERE workspace_id = ? AND "
                                      "parent_id = ? AND status = 'active'",
                                      v, 2, child, sizeof child);
    if (children < 0)
        return -1;
    if (children > 0) {
        req_problem(r, 409, "account_has_active_children",
                    "Ledger account %s has active child accounts (%s among them): archive or "
                    "move them first.",
                    a->code, child);
        return 0;
    }
    int used = used_by_settings(r, a->id);
    if (used < 0)
        return -1;
    if (used) {
        req_problem(r, 409, "account_in_use",
                    "Ledger account %s is a cash or clearing account of the ledger settings' "
                    "payment posting; change the settings first.",
                    a->code);
        return 0;
    }
    char now[40];
    format_now_rfc3339(now, sizeof now);
    a->status = LEDGER_ACCOUNT_STATUS_ARCHIVED;
    a->archived_at = arena_strdup(&r->arena, now);
    a->has_archived_at = true;
    int saved = resource_save(r, &rows_ledger_account, row);
    if (saved <= 0)
        return saved == DB_ERR_UNIQUE ? -1 : saved;
    out->status = 200;
    out->body_200 = a;
    return 0;
}

/* ---- for the other ledger files -------------------------------------------------------------- */

int ledger_account_insert(struct req *r, struct ledger_account_row *row)
{
    int taken = code_taken(r, row->obj.code);
    if (taken != 0)
        return taken < 0 ? -1 : 0;
    int64_t n = account_count(r);
    if (n < 0)
        return -1;
    if (n >= LEDGER_ACCOUNTS_MAX) {
        log_warn("ledger: no account %s created: the workspace has %d accounts already",
                 row->obj.code, LEDGER_ACCOUNTS_MAX);
        return 0;
    }
    if (!row->obj.constraints)
        row->obj.constraints = constraints_of(r, NULL);
    int rc = resource_insert(r, &rows_ledger_account, row);
    return rc == 0 ? 1 : rc == DB_ERR_UNIQUE ? 0 : -1;
}
