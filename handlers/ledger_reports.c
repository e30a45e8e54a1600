/* The ledger API's reports: the trial balance (GET /ledger/trial-balance, JSON or CSV) and the
 * journal listing as CSV (ledger_journals_csv, for GET /ledger/journals with Accept:
 * text/csv). Writes no table: it reads the chart of accounts, the balance checkpoints, the
 * drafts and the periods (handlers/ledger.h says who writes them).
 *
 * The trial balance as of a day reads one checkpoint per account (ledger_balance_days: the
 * row with the latest day <= as_of holds the account's cumulative posted sums), so its cost
 * grows with the accounts, not with the lines ever posted; posted_and_pending adds the lines
 * of the drafts dated <= as_of, which are few (a draft is work in progress). */
#include <stdlib.h>
#include <string.h>

#include "generated/ledger_api.h"
#include "generated/rows_ledger.h"
#include "generated/schemas.h"
#include "handlers/ledger.h"
#include "runtime/arena.h"
#include "runtime/csv.h"
#include "runtime/format.h"
#include "runtime/json.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "runtime/verr.h"

/* ---- the trial balance ------------------------------------------------------------------ */

/* Each account of the workspace (of one currency when ?3 is not NULL) in code order, with its
 * posted sums at the end of day ?2: the checkpoint of its latest day <= ?2 (both lookups by
 * the checkpoints' primary key (ledger_account_id, day)), zero when it has none yet. Archived
 * accounts are listed too: what they held before they were emptied still counts in the
 * figures of the days it was there. */
static const char ACCOUNTS_SQL[] =
    "SELECT a.id, a.code, a.name, a.classification, a.normal_balance, a.currency, "
    "COALESCE(d.posted_debits, 0), COALESCE(d.posted_credits, 0) "
    "FROM ledger_accounts a "
    "LEFT JOIN ledger_balance_days d ON d.ledger_account_id = a.id AND d.day = "
    "(SELECT MAX(x.day) FROM ledger_balance_days x "
    "WHERE x.ledger_account_id = a.id AND x.day <= ?2) "
    "WHERE a.workspace_id = ?1 AND (CAST(?3 AS TEXT) IS NULL OR a.currency = ?3) "
    "ORDER BY a.code, a.id";

/* The lines of the workspace's drafts dated <= ?2 (journal_entries_drafts_idx). */
static const char DRAFTS_SQL[] = "SELECT id, lines FROM journal_entries "
                                 "WHERE workspace_id = ?1 AND status = 'draft' "
                                 "AND effective_date <= ?2";

struct tb {
    struct trial_balance_row *rows;
    size_t n, cap;
    struct trial_balance_row **by_id; /* rows sorted by ledger_account_id, for the drafts */
};

static int read_accounts(struct req *r, const char *as_of, const char *currency, struct tb *tb)
{
    struct db_stmt *st = storage_prepare(ACCOUNTS_SQL);
    if (!st || db_bind_text(st, 1, r->principal.workspace_id) != 0 ||
        db_bind_text(st, 2, as_of) != 0 || db_bind_text(st, 3, currency) != 0)
        return -1;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if (tb->n == tb->cap) {
            size_t cap = tb->cap ? tb->cap * 2 : 64;
            struct trial_balance_row *rows = arena_alloc(&r->arena, cap * sizeof *rows);
            if (tb->n)
                memcpy(rows, tb->rows, tb->n * sizeof *rows);
            tb->rows = rows;
            tb->cap = cap;
        }
        struct trial_balance_row *row = &tb->rows[tb->n];
        memset(row, 0, sizeof *row);
        row->ledger_account_id = db_column_dup(&r->arena, st, 0);
        row->code = db_column_dup(&r->arena, st, 1);
        row->name = db_column_dup(&r->arena, st, 2);
        row->classification = ledger_classification_parse(db_column_text(st, 3));
        row->normal_balance = ledger_direction_parse(db_column_text(st, 4));
        row->currency = db_column_dup(&r->arena, st, 5);
        row->debit_total = db_column_int64(st, 6);
        row->credit_total = db_column_int64(st, 7);
        if (!row->classification || !row->normal_balance) {
            resource_unknown(row->classification ? "ledger_accounts.normal_balance"
                                                 : "ledger_accounts.classification",
                             st, row->classification ? 4 : 3);
            db_reset(st);
            return -1;
        }
        tb->n++;
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("trial balance: reading the accounts: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

static int by_id_cmp(const void *a, const void *b)
{
    const struct trial_balance_row *x = *(const struct trial_balance_row *const *)a;
    const struct trial_balance_row *y = *(const struct trial_balance_row *const *)b;
    return strcmp(x->ledger_account_id, y->ledger_account_id);
}

static struct trial_balance_row *row_of(struct tb *tb, const char *id)
{
    struct trial_balance_row key = {.ledger_account_id = id}, *k = &key;
    struct trial_balance_row **hit = bsearch(&k, tb->by_id, tb->n, sizeof *tb->by_id, by_id_cmp);
    return hit ? *hit : NULL;
}

static bool add(int64_t *sum, int64_t v)
{
    return !__builtin_add_overflow(*sum, v, sum);
}

/* Adds the lines of the drafts dated <= as_of to the rows of their accounts, each only when
 * it names an account of the list (so of the workspace, and of the currency asked for) in the
 * account's currency: what ledger_account_drafts counts in the pending balances. */
static int add_drafts(struct req *r, const char *as_of, struct tb *tb)
{
    tb->by_id = arena_alloc(&r->arena, (tb->n + 1) * sizeof *tb->by_id);
    for (size_t i = 0; i < tb->n; i++)
        tb->by_id[i] = &tb->rows[i];
    qsort(tb->by_id, tb->n, sizeof *tb->by_id, by_id_cmp);
    struct db_stmt *st = storage_prepare(DRAFTS_SQL);
    if (!st || db_bind_text(st, 1, r->principal.workspace_id) != 0 ||
        db_bind_text(st, 2, as_of) != 0)
        return -1;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        /* the column as the generated row reader takes it: parsed, checked against the
         * schema of an entry's lines, decoded */
        const char *t = db_column_text(st, 1);
        struct json_value *v = NULL;
        struct json_error e;
        struct verr_list l;
        verr_init(&l, &r->arena);
        if (t && json_parse(&r->arena, t, strlen(t), &v, &e) == 0)
            validate_journal_entry_lines(v, "", VALIDATE_RESPONSE, &l);
        if (!t || !v || l.count > 0 || v->type != JSON_ARRAY) {
            log_error("trial balance: draft %s has unreadable lines", db_column_text(st, 0));
            db_reset(st);
            return -1;
        }
        for (size_t j = 0; j < v->count; j++) {
            struct journal_line line;
            if (decode_journal_line(&r->arena, v->items[j], &line) != 0) {
                db_reset(st);
                return -1;
            }
            struct trial_balance_row *row = row_of(tb, line.ledger_account_id);
            if (!row || strcmp(row->currency, line.currency) != 0)
                continue;
            if (!add(line.direction == LEDGER_DIRECTION_DEBIT ? &row->debit_total
                                                              : &row->credit_total,
                     line.amount)) {
                log_error("trial balance: the drafts on %s overflow", row->ledger_account_id);
                db_reset(st);
                return -1;
            }
        }
    }
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("trial balance: reading the drafts: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

static int total_cmp(const void *a, const void *b)
{
    return strcmp(((const struct trial_balance_total *)a)->currency,
                  ((const struct trial_balance_total *)b)->currency);
}

/* The rows kept (without include_zero, those that moved), their balances, the totals per
 * currency (in currency order) and whether every currency balances, into out. */
static int finish(struct req *r, struct tb *tb, bool include_zero, struct trial_balance *out)
{
    size_t kept = 0, nt = 0;
    struct trial_balance_total *totals = arena_alloc(&r->arena, (tb->n + 1) * sizeof *totals);
    for (size_t i = 0; i < tb->n; i++) {
        struct trial_balance_row *row = &tb->rows[i];
        if (!include_zero && row->debit_total == 0 && row->credit_total == 0)
            continue;
        /* each sum is a column's (posted, or posted and drafts checked above), and both are
         * below 2^63: their difference fits */
        row->balance = ledger_signed(row->normal_balance, row->debit_total, row->credit_total);
        size_t k = 0;
        while (k < nt && strcmp(totals[k].currency, row->currency) != 0)
            k++;
        if (k == nt)
            totals[nt++] = (struct trial_balance_total){.currency = row->currency};
        if (!add(&totals[k].debits, row->debit_total) ||
            !add(&totals[k].credits, row->credit_total)) {
            log_error("trial balance: the %s totals overflow", row->currency);
            return -1;
        }
        tb->rows[kept++] = *row;
    }
    qsort(totals, nt, sizeof *totals, total_cmp);
    out->balanced = true;
    for (size_t k = 0; k < nt; k++) {
        totals[k].balanced = totals[k].debits == totals[k].credits;
        out->balanced = out->balanced && totals[k].balanced;
    }
    out->rows = tb->rows;
    out->rows_count = kept;
    out->totals_by_currency = totals;
    out->totals_by_currency_count = nt;
    return 0;
}

/* The rows as CSV: the columns of the spec, amounts in minor units. */
static void tb_csv(struct req *r, const struct trial_balance *tb, const char **text, size_t *len)
{
    static const char *const head[] = {
        "ledger_account_id", "code",        "name",         "classification", "currency",
        "normal_balance",    "debit_total", "credit_total", "balance",
    };
    struct csv c;
    csv_init(&c, &r->arena);
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        csv_cell(&c, head[i]);
    csv_row_end(&c);
    for (size_t i = 0; i < tb->rows_count; i++) {
        const struct trial_balance_row *row = &tb->rows[i];
        csv_cell(&c, row->ledger_account_id);
        csv_cell(&c, row->code);
        csv_cell(&c, row->name);
        csv_cell(&c, ledger_classification_str(row->classification));
        csv_cell(&c, row->currency);
        csv_cell(&c, ledger_direction_str(row->normal_balance));
        csv_int(&c, row->debit_total);
        csv_int(&c, row->credit_total);
        csv_int(&c, row->balance);
        csv_row_end(&c);
    }
    *text = csv_text(&c, len);
}

int ledger_get_trial_balance(struct req *r, const struct ledger_get_trial_balance_request *in,
                             struct ledger_get_trial_balance_response *out)
{
    if (in->has_as_of && in->has_period_id) {
        req_problem(r, 400, "invalid_request",
                    "Give as_of or period_id, not both: a period's figures are those of its "
                    "end_date.");
        return 0;
    }
    struct trial_balance *tb = arena_alloc(&r->arena, sizeof *tb);
    memset(tb, 0, sizeof *tb);
    char now[40];
    format_now_rfc3339(now, sizeof now);
    tb->object = "trial_balance";
    tb->workspace_id = r->principal.workspace_id;
    tb->generated_at = arena_strdup(&r->arena, now);
    tb->status = in->has_status ? in->status : TRIAL_BALANCE_STATUS_POSTED;
    if (in->has_period_id) {
        struct ledger_period p;
        int found = resource_load(r, &rows_ledger_period, in->period_id, &p);
        if (found == RESOURCE_FAILED)
            return -1;
        if (found == RESOURCE_MISSING) {
            req_problem(r, 404, "not_found", "No ledger_period %s in this workspace.",
                        in->period_id);
            return 0;
        }
        tb->as_of = p.end_date;
        tb->period_id = p.id;
        tb->has_period_id = true;
    } else {
        /* today: the UTC date of the time the clock says (tests move it) */
        tb->as_of = in->has_as_of ? in->as_of : arena_strndup(&r->arena, now, 10);
    }
    if (in->has_currency) {
        tb->currency = in->currency;
        tb->has_currency = true;
    }
    struct tb rows = {0};
    if (read_accounts(r, tb->as_of, tb->has_currency ? tb->currency : NULL, &rows) != 0)
        return -1;
    if (tb->status == TRIAL_BALANCE_STATUS_POSTED_AND_PENDING &&
        add_drafts(r, tb->as_of, &rows) != 0)
        return -1;
    if (finish(r, &rows, in->has_include_zero && in->include_zero, tb) != 0)
        return -1;
    out->status = 200;
    if (in->accept == MEDIA_CSV)
        tb_csv(r, tb, &out->raw_200, &out->raw_200_len);
    else
        out->body_200 = tb;
    return 0;
}

/* ---- the journal listing as CSV --------------------------------------------------------- */

/* The code of each account a page's lines name (the ids sorted, without repeats), NULL for
 * an id that is not an account of the workspace (a draft may name anything). */
struct codes {
    struct arena *a;
    const char *workspace_id;
    const char **ids;
    const char **codes;
};

static int code_row(void *ctx, struct db_stmt *st, size_t i)
{
    struct codes *c = ctx;
    const char *ws = db_column_text(st, 2);
    if (ws && strcmp(ws, c->workspace_id) == 0)
        c->codes[i] = db_column_dup(c->a, st, 1);
    return 0;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int ledger_journals_csv(struct req *r, const struct journal_entry_page *page, const char **text,
                        size_t *len)
{
    static const char *const head[] = {
        "journal_entry_id",    "effective_date", "status", "source",
        "external_id",         "description",    "line",   "ledger_account_id",
        "ledger_account_code", "direction",      "amount", "currency",
    };
    /* the accounts named, once each */
    size_t n = 0;
    for (size_t i = 0; i < page->data_count; i++)
        n += page->data[i].lines_count;
    const char **ids = arena_alloc(&r->arena, (n + 1) * sizeof *ids);
    n = 0;
    for (size_t i = 0; i < page->data_count; i++)
        for (size_t j = 0; j < page->data[i].lines_count; j++)
            ids[n++] = page->data[i].lines[j].ledger_account_id;
    qsort(ids, n, sizeof *ids, str_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(ids[u - 1], ids[i]) != 0)
            ids[u++] = ids[i];
    struct codes c = {.a = &r->arena, .workspace_id = r->principal.workspace_id, .ids = ids};
    c.codes = arena_alloc(&r->arena, (u + 1) * sizeof *c.codes);
    memset(c.codes, 0, (u + 1) * sizeof *c.codes);
    for (size_t at = 0; at < u; at += DB_IN_LIST_MAX) {
        size_t k = u - at < DB_IN_LIST_MAX ? u - at : DB_IN_LIST_MAX;
        struct codes part = {c.a, c.workspace_id, ids + at, c.codes + at};
        if (storage_rows_by_id("SELECT id, code, workspace_id FROM ledger_accounts "
                               "WHERE id IN " DB_IN_LIST,
                               ids + at, k, 0, code_row, &part, "journal CSV account codes") < 0)
            return -1;
    }

    struct csv out;
    csv_init(&out, &r->arena);
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        csv_cell(&out, head[i]);
    csv_row_end(&out);
    for (size_t i = 0; i < page->data_count; i++) {
        const struct journal_entry *e = &page->data[i];
        for (size_t j = 0; j < e->lines_count; j++) {
            const struct journal_line *l = &e->lines[j];
            const char **hit = bsearch(&l->ledger_account_id, ids, u, sizeof *ids, str_cmp);
            csv_cell(&out, e->id);
            csv_cell(&out, e->effective_date);
            csv_cell(&out, journal_entry_status_str(e->status));
            csv_cell(&out, journal_source_str(e->source));
            csv_cell(&out, e->has_external_id ? e->external_id : NULL);
            csv_cell(&out, e->description);
            csv_int(&out, (int64_t)j);
            csv_cell(&out, l->ledger_account_id);
            csv_cell(&out, hit ? c.codes[hit - ids] : NULL);
            csv_cell(&out, ledger_direction_str(l->direction));
            csv_int(&out, l->amount);
            csv_cell(&out, l->currency);
            csv_row_end(&out);
        }
    }
    *text = csv_text(&out, len);
    return 0;
}
